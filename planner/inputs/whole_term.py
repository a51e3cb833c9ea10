"""Whole-term demand: the plan's inputs carried past the horizon to the end of the longest term it may buy.

A commitment is an expected-value bet over its whole term (``[term] judge = "term"``, the default): a 3-year
term bought on a one-quarter forecast is judged on three years of demand, with their uncertainty. The
horizon's periods stay as given; after the horizon's end ``E`` comes the *tail*, to the last purchase date
in the horizon plus the longest term:

- **Profile.** The horizon's last quarter (2,190 hours; all of it when shorter), per scenario, are sorted by total demand
  and cut into :data:`BLOCKS` blocks of equal hours (a load-duration curve); a block's demand is its
  hour-weighted mean per class. Every tail step (a calendar month, or quarter with ``tree = "quarter"``) is
  these blocks, each ``share x the step's hours`` long. A purchase is active for whole steps, so only the
  order of hours inside a step is lost, and a commitment's use in a step is the duration curve's.
- **Level.** The tree branches once, at ``E``, into B branches (``[term] branches``, the B-point
  Gauss-Hermite rule, nodes scaled so the outer ones are +-1: B=3 gives -1, 0, +1 with weights 1/6, 2/3,
  1/6). Branch b's level ``y`` years after ``E`` is ``exp(g_k D(y)) * max(0, 1 + u_b * band * y)``, per class
  ``k``, ``D(y) = (1 - 0.5^y) / ln 2`` the damped years of growth (the trend halves every year): ``g`` the growth a year and ``band`` the drift band a year (with no history: ``g = 0`` and
  ``band = [term] drift_per_year``; from a history: :mod:`planner.forecasting.drift`). The level is read at
  each step's middle.
- **Purchases.** The commitments table is rebuilt over horizon and tail: the horizon's purchase dates as
  ``[commitments]`` says, then every calendar quarter of the tail (continuous: later tranches are the
  recourse, so that what is bought now is not bought for demand a later tranche would cover); it is split
  by the tree (:mod:`planner.inputs.tree`): a purchase in the horizon is common to every branch (buy now what
  every branch still uses), a later one is per branch.

Scenarios given in the demand file each branch the same way (S x B scenarios, probabilities multiplied).
Availability caps are held at the horizon's last period; the inventory file (and the purchases a backtest carries
as dated inventory) are counted over the tail, each to its own end.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from planner.inputs import arrays
from planner.inputs.price_paths import paths_for
from planner.inputs.validate import owned_gpus

BLOCKS = 6  # blocks of the load-duration curve per tail step
PROFILE_HOURS = 2190.0  # the horizon's last quarter (3 x 730 h) is the level held past it
HOURS_PER_MONTH = 730.0
TREND_HALF = 0.5  # the growth's trend keeps this share of itself a year later (damped)
BRANCH_NAMES = {2: ("low", "high"), 3: ("low", "mid", "high"), 4: ("low", "mid-low", "mid-high", "high"),
                5: ("low", "mid-low", "mid", "mid-high", "high")}


@dataclass(frozen=True)
class TermBasis:
    """How demand past the horizon is made: ``source`` "history" or "drift", ``growth`` (K,) log-growth a
    year per class, ``band`` the drift band a year, ``branches``, ``step`` ("month" or "quarter") and
    ``note`` (how the growth and band were found, for a reader)."""

    source: str
    growth: np.ndarray
    band: float
    branches: int
    step: str
    note: str


def longest_term_hours(inp) -> float:
    """The longest term (hours) of the purchases the plan may make (0 without any)."""
    res = inp.commitments
    if not len(res):
        return 0.0
    return float(res["term_months"].max()) * HOURS_PER_MONTH


def tail_end(inp) -> pd.Timestamp:
    """Where whole-term demand must reach: the last purchase date in the horizon plus the longest term, or the last
    term's end where a lead time puts it later (a term bought with a month's lead ends a month after its term)."""
    res = inp.commitments
    last = pd.Timestamp(pd.DatetimeIndex(res["purchase_date"]).max()) if len(res) else inp.periods[0]
    end = last + pd.Timedelta(hours=longest_term_hours(inp))
    if len(res) and "end_date" in res:
        end = max(end, pd.Timestamp(pd.DatetimeIndex(res["end_date"]).max()))
    return end


def horizon_end(inp) -> pd.Timestamp:
    """The end of the horizon: the last period's start plus its hours."""
    return inp.periods[-1] + pd.Timedelta(hours=float(inp.hours[-1]))


def branch_levels(branches: int) -> tuple[np.ndarray, np.ndarray]:
    """(u, w): the B-point Gauss-Hermite nodes scaled to -1..+1 (outer branches at the band) and weights."""
    x, w = np.polynomial.hermite_e.hermegauss(int(branches))
    x, w = (x - x[::-1]) / 2, (w + w[::-1]) / 2
    return x / np.abs(x).max(), w / w.sum()


def level_paths(years: np.ndarray, growth: np.ndarray, band, branches: int) -> tuple[np.ndarray, np.ndarray]:
    """(levels (B, K, N), weights (B,)): each branch's multiple of the horizon's level ``years`` after its end."""
    u, w = branch_levels(branches)
    y = np.asarray(years, float)[None, None, :]
    g = np.asarray(growth, float)[None, :, None]
    b = np.broadcast_to(np.asarray(band, float), g.shape[1:2])[None, :, None]  # one band, or one per class
    return np.exp(g * damped_years(y)) * np.maximum(0.0, 1.0 + u[:, None, None] * b * y), w


def damped_years(years):
    """Years of growth ``y`` years on, the trend halving every year (Gardner's damped trend): at most 1/ln 2 =
    1.44 years of it, however long the term (a trend seen over weeks or months is not carried whole to year 3)."""
    return (1.0 - np.power(TREND_HALF, years)) / -np.log(TREND_HALF)


def profile_blocks(periods: pd.DatetimeIndex, hours: np.ndarray, demand: np.ndarray,
                   blocks: int = BLOCKS) -> tuple[np.ndarray, np.ndarray]:
    """(means (S, K, B'), shares (B',)): the horizon's last :data:`PROFILE_HOURS` as a load-duration curve of
    B' <= ``blocks`` equal-hour blocks per scenario (hour-weighted mean demand per class in each block)."""
    hours = np.asarray(hours, float)
    end = np.cumsum(hours[::-1])[::-1]  # hours from each period's start to the horizon's end
    keep = np.flatnonzero(end - hours < PROFILE_HOURS)
    h = hours[keep]
    d = np.asarray(demand, float)[:, :, keep]
    n = max(1, min(int(blocks), len(keep)))
    S, K, _ = d.shape
    means = np.zeros((S, K, n))
    shares = np.zeros(n)
    for s in range(S):
        order = np.argsort(d[s].sum(axis=0), kind="stable")
        hs = h[order]
        mid = (np.cumsum(hs) - hs / 2) / hs.sum()
        which = np.minimum((mid * n).astype(int), n - 1)
        w = np.bincount(which, weights=hs, minlength=n)
        for k in range(K):
            means[s, k] = np.bincount(which, weights=hs * d[s, k, order], minlength=n) / np.where(w > 0, w, 1)
        shares = w / w.sum()  # the same cut for every scenario (equal hours; periods of one length)
    live = shares > 0
    return means[:, :, live], shares[live]


def tail_grid(start: pd.Timestamp, end: pd.Timestamp, step: str, shares: np.ndarray):
    """(periods, hours, step_of_period, step_middle_years): the tail's periods from ``start`` to ``end``, each
    calendar month (or quarter) cut into the blocks ``shares``; the middle of each step in years from start."""
    freq = "QS" if step == "quarter" else "MS"
    start, end = pd.Timestamp(start).as_unit("ns"), pd.Timestamp(end).as_unit("ns")  # .asi8 below is in ns
    edges = pd.DatetimeIndex([start]).append(pd.date_range(start, end, freq=freq)).append(pd.DatetimeIndex([end]))
    edges = edges[(edges >= start) & (edges <= end)].unique().sort_values().as_unit("ns")
    span = np.diff(edges.asi8) / 3.6e12  # hours per step
    keep = span > 0
    starts, span = edges[:-1][keep], span[keep]
    cum = np.concatenate([[0.0], np.cumsum(shares)[:-1]])
    offs = span[:, None] * cum[None, :]  # (N, B) hours into the step
    periods = pd.DatetimeIndex((starts.asi8[:, None] + np.round(offs * 3.6e12).astype(np.int64)).reshape(-1)).as_unit("ns")
    hours = (span[:, None] * shares[None, :]).reshape(-1)
    middle = ((starts.asi8 - start.value) / 3.6e12 + span / 2) / (24 * 365.25)
    return periods, hours, np.repeat(np.arange(len(span)), len(shares)), middle


def extend(inp, basis: TermBasis):
    """``inp`` carried to the end of its longest term (module docstring): a new PlanInputs whose scenarios are
    the given ones times the tree's branches, with its commitments table rebuilt and split by the tree."""
    E = horizon_end(inp)
    end = tail_end(inp)
    means, shares = profile_blocks(inp.periods, inp.hours, inp.demand)
    t_periods, t_hours, step_of, middle = tail_grid(E, end, basis.step, shares)
    levels, weights = level_paths(middle, basis.growth, basis.band, basis.branches)  # (B, K, N)
    S, K, B = len(inp.scenarios), inp.K, basis.branches
    nb = len(shares)
    block_of = np.tile(np.arange(nb), len(middle))
    tail = means[:, None, :, block_of] * levels[None, :, :, step_of]  # (S, B, K, Tt)
    head = np.broadcast_to(inp.demand[:, None], (S, B, K, inp.T))
    demand = np.concatenate([head, tail], axis=3).reshape(S * B, K, inp.T + len(t_periods))
    names = BRANCH_NAMES[B]
    scenarios = [n if S == 1 else f"{s}+{n}" for s in inp.scenarios for n in names]
    probability = (np.asarray(inp.probability, float)[:, None] * weights[None, :]).reshape(-1)
    periods = pd.DatetimeIndex(inp.periods).as_unit("ns").append(t_periods)
    if len(t_periods) and not (periods[inp.T] >= periods[inp.T - 1] and periods.is_monotonic_increasing):
        raise ValueError(f"the whole term's periods are out of order after {periods[inp.T - 1]}")  # a bug, never input
    hours = np.concatenate([inp.hours, t_hours])
    inventory = _inventory(inp, periods, hours)
    availability = None
    if inp.availability is not None:
        availability = np.concatenate([inp.availability, np.repeat(inp.availability[:, :, -1:], len(t_periods),
                                                                   axis=2)], axis=2)
    config = replace(inp.config, term=replace(inp.config.term, judge="horizon"))  # the extended plan is not extended again
    reserved, active = purchases(config, inp, periods, hours)
    source = (reserved, active)
    own = inp.price_names if inp.price_names is not None and len(inp.price_names) == S else tuple(inp.scenarios)
    price_names = tuple(own[i] for i in range(S) for _ in names)  # a branch prices as the scenario it branches from
    reserved, active, member = arrays.split_by_node(config, reserved, active, periods, demand, scenarios,
                                                    probability, paths_for(inp.tables.prices, inp.pools, price_names))
    out = replace(inp, config=config, periods=periods, hours=hours, demand=demand, scenarios=scenarios,
                  price_names=price_names,
                  probability=probability, commitments=reserved, reserved_active=active, reserved_member=member,
                  reserved_source=source if member is not None else None, inventory=inventory,
                  availability=availability, requests=None)
    return arrays._refresh_backfill(out)


def _inventory(inp, periods: pd.DatetimeIndex, hours: np.ndarray) -> np.ndarray:
    """(P, T') GPUs already owned over horizon and tail: the inventory file's rows and the purchases made earlier
    (``inp.owned_dated``, a backtest's), each over its own dates. Where a caller changed ``inp.inventory`` (a
    pool of its own without the owned GPUs), the horizon is as given and its last period is held over the tail."""
    pools = list(zip(inp.pools["gpu_type"], inp.pools["region"]))
    out = owned_gpus(inp.tables.inventory, pools, periods, hours)
    if inp.owned_dated is not None and len(inp.owned_dated):
        out = out + owned_gpus(inp.owned_dated, pools, periods, hours)
    if not np.allclose(out[:, :inp.T], inp.inventory, rtol=1e-9, atol=1e-9):
        out = np.concatenate([inp.inventory, np.repeat(inp.inventory[:, -1:], len(periods) - inp.T, axis=1)], axis=1)
    return out


def purchases(config, inp, periods: pd.DatetimeIndex, hours: np.ndarray):
    """The commitments table over horizon and tail, and its activity: the horizon's purchase dates as the model
    file dates them, then the first period of every calendar quarter of the tail (what may be bought later, per
    branch: the recourse that keeps the purchases made now from covering demand a later tranche would).
    Purchases dated in the tail are continuous (whole instances matter for what is signed now, not for a
    later tranche's estimate)."""
    from planner.inputs import commitments, ladder

    c = config.commitments
    head = ladder.purchase_periods(periods[:inp.T], c.purchase_every, c.purchase_until)
    group = periods[inp.T:].to_period("Q").asi8
    later = inp.T + np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if len(group) else np.zeros(0, int)
    if c.purchase_until is not None:
        later = later[:0]  # the model file stops purchases at a date: none later either
    dates = np.concatenate([head, later]).astype(int)
    rows, active = commitments.purchase_table(inp.options, periods, hours, dates, strict=False)
    if len(rows):
        tail = pd.DatetimeIndex(rows["purchase_date"]) >= periods[inp.T]
        rows["integer"] = rows["integer"].to_numpy(bool) & ~np.asarray(tail)
    return rows, active


def horizon_units(inp, ext, units: np.ndarray) -> np.ndarray:
    """Instances per row of ``inp.commitments`` from a whole-term plan's ``units`` per row of ``ext.commitments``:
    a row of ``inp`` takes the units of the extended row of its option, pool and purchase date (the same for
    every branch of the tail: the tree splits only after the horizon) that serves its scenarios."""
    res, big = inp.commitments, ext.commitments
    B = len(ext.scenarios) // max(len(inp.scenarios), 1)
    member_small = inp.member  # (R, S)
    member_big = ext.member  # (R', S*B)
    key = ["row", "kind", "pool", "option", "purchase_date", "block_start", "parent_date"]
    big_keys = {}
    for i, row in enumerate(_keyed(big)[key].itertuples(index=False)):
        big_keys.setdefault(tuple(_k(v) for v in row), []).append(i)
    out = np.zeros(len(res))
    for r, row in enumerate(_keyed(res)[key].itertuples(index=False)):
        wanted = np.repeat(member_small[r], B)  # the extended scenarios of this row's scenarios
        found = big_keys.get(tuple(_k(v) for v in row), [])
        exact = [i for i in found if np.array_equal(member_big[i], wanted)]
        wider = [i for i in found if member_big[i][wanted].all()]  # a node of the whole term holding them
        if exact or wider:
            out[r] = units[(exact or wider)[0]]
    return out


def _keyed(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with what tells its rows apart across horizon and whole term: ``row`` (the price sheet's row: two
    offers of one option and pool, e.g. capacity blocks of 7 and 14 days from one date), ``kind`` (a term, or the
    resale of one, on the same date) and ``parent_date`` (a resale's term's purchase date; NaT for a purchase)."""
    out = pd.DataFrame({c: table[c] if c in table else None for c in ("row", "pool", "option", "purchase_date",
                                                                       "block_start")})
    out["kind"] = table["kind"].to_numpy() if "kind" in table else "instance"
    parent = table["parent"].to_numpy(int) if "parent" in table else np.full(len(table), -1)
    dates = pd.DatetimeIndex(table["purchase_date"]).as_unit("ns").asi8
    out["parent_date"] = pd.DatetimeIndex(np.where(parent >= 0, dates[np.clip(parent, 0, None)], pd.NaT.value))
    return out


def _k(v):
    if isinstance(v, (pd.Timestamp, np.datetime64)):
        return pd.Timestamp(v).value if pd.notna(v) else None
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    return v
