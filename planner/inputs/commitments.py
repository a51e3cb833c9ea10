"""Purchase options and their kinds: the one place that knows what a price-sheet ``option`` is.

Every option name of the price sheet belongs to one kind (``KINDS``):

- ``on_demand`` and ``spot``: rented by the GPU-hour, no commitment;
- ``instance`` (``reserved`` / ``reserved_<term>``): whole instances of one pool for a term, paid whether
  used or not, adding reserved capacity to the pool (reservations, owned hardware);
- ``window`` (``capacity_block``): whole instances of one pool for a calendar window
  ``[block_start, block_start + block_days)``, prepaid (AWS Capacity Blocks for ML, GCP DWS calendar mode);
- ``spend`` (``savings_plan_<term>``): a commitment of C USD per hour for a term, paid whether used or not,
  that covers eligible on-demand usage at discounted rates (AWS Compute / EC2 Instance Savings Plans, Azure
  savings plan for compute, GCP flexible CUDs); one price-sheet row per eligible pool, grouped into one
  commitment per option and ``plan_family``.

Code asks this module, never the option's spelling: ``kind_of(options)``, ``is_commitment``,
``adds_capacity``. A new kind is one more row of ``KINDS`` and its pattern.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.inputs import supply
from planner.inputs.activity import compact, take_rows
from planner.core.frames import concat_rows


# the kinds and what they do live in the supply registry (planner/inputs/supply.py); these names stay for callers
OptionKind = supply.Supply
KINDS: tuple[supply.Supply, ...] = tuple(s for s in supply.SUPPLIES if s.pattern)
COMMITMENT_KINDS = supply.names(stage="first")
CAPACITY_KINDS = supply.names(adds_capacity=True)
kind = supply.get
kind_of_name = supply.kind_of_name


def kind_of(options: pd.Series) -> pd.Series:
    """The kind of every option name in ``options`` (None where unknown), vectorised over the names."""
    names = pd.Series(pd.unique(options))
    lookup = dict(zip(names, names.map(kind_of_name)))
    return options.map(lookup)


def _has(options: pd.Series, **behaviour) -> pd.Series:
    return pd.Series(supply.option_mask(options, **behaviour), index=options.index)


def is_commitment(options: pd.Series) -> pd.Series:
    """True where the option is bought ahead and paid whether used or not (reserved, capacity blocks)."""
    return _has(options, stage="first")


def adds_capacity(options: pd.Series) -> pd.Series:
    """True where the option's whole instances hold reserved GPUs of their pool (instance and window kinds)."""
    return _has(options, adds_capacity=True)


def is_window(options: pd.Series) -> pd.Series:
    """True where the option is a calendar window (capacity block)."""
    return _has(options, dated_by="window")


def is_term(options: pd.Series) -> pd.Series:
    """True where the option is a term commitment of whole instances (``reserved_*``)."""
    return _has(options, dated_by="term", unit="instance")


def option_names_expected() -> str:
    """The spellings the price sheet accepts, for error messages."""
    return "on_demand, spot, reserved_<term> (e.g. reserved_1y), capacity_block or savings_plan_<term>"


# ---- the commitments table: one row per (commitment option, purchase date) ------------------------------
OPTION_COLUMNS = ["pool", "gpu_type", "region", "option", "kind", "hourly_usd", "upfront_usd", "term_months", "r",
                  "m", "lead_time_months", "residual_usd", "valid_from", "block_start", "block_days", "provider",
                  "max_gpus", "row", "plan_family", "guarantees_capacity", "resale_haircut", "site", "kw_per_gpu"]
AWS_BLOCK_AHEAD = pd.Timedelta(weeks=8)  # an AWS Capacity Block starts at most 8 weeks after it is bought


def option_rows(prices: pd.DataFrame, pools: pd.DataFrame) -> pd.DataFrame:
    """The price sheet's commitment rows (one per option, ``valid_from`` and block), with pool, kind, the
    effective rate ``r`` (USD per GPU-hour over the term or window) and ``m`` (GPUs per instance)."""
    from planner.core.units import effective_rate

    res = prices[is_commitment(prices["option"])].copy()
    pool_of = {(g, r): i for i, (g, r) in enumerate(zip(pools.gpu_type, pools.region))}
    res["pool"] = [pool_of[(g, r)] for g, r in zip(res.gpu_type, res.region)]
    for col, default in (("lead_time_months", 0.0), ("residual_usd", 0.0), ("valid_from", pd.NaT),
                         ("block_start", pd.NaT), ("block_days", np.nan), ("provider", ""), ("row", 0),
                         ("plan_family", ""), ("guarantees_capacity", True), ("resale_haircut", np.nan),
                         ("site", ""), ("kw_per_gpu", 0.0)):
        if col not in res:
            res[col] = default
    res["kind"] = kind_of(res["option"])
    res["r"] = effective_rate(res["hourly_usd"], res["upfront_usd"] - res["residual_usd"], res["term_months"])
    res["m"] = res["gpus_per_instance"]
    return res[OPTION_COLUMNS].sort_values(["pool", "option", "valid_from", "block_start"]).reset_index(drop=True)


def purchase_table(options: pd.DataFrame, periods: pd.DatetimeIndex, hours: np.ndarray, dates: np.ndarray,
                   prices_file: str = "price sheet", strict: bool = True) -> tuple[pd.DataFrame, np.ndarray]:
    """The commitments table and its activity (R, T): the share of each period every row is active.

    Term commitments (kind ``instance``) get one row per purchase date at the price valid then
    (:func:`planner.inputs.ladder.purchase_rows`). A capacity block (kind ``window``) is one row: active on its
    window only, bought on the first purchase date (AWS: no earlier than 8 weeks before it starts, when
    that is later: an "expect to buy" row), paid whole in the month its window starts (``cash_date``).
    Every row carries ``kind``, ``cash_date`` (when its upfront is paid), ``max_units`` (an upper bound
    on the instances bought: a block's ``max_gpus`` / m) and ``integer``. A block outside the horizon is
    an input error (``strict``) or left out (a window of a longer history: backtests, slices).
    """
    from planner.inputs import ladder

    win = supply.table_mask(options, dated_by="window")
    spend = supply.table_mask(options, unit="usd_per_hour")
    terms = concat_rows([options[~win & ~spend], spend_commitments(options[spend])], ignore_index=True)
    rows, active = ladder.purchase_rows(terms, periods, hours, dates)
    rows["cash_date"] = rows["purchase_date"]
    rows["max_units"] = np.inf
    rows["parent"] = -1
    exits, exit_active = exit_rows(rows, active, periods, hours, dates)
    if len(exits):
        rows = pd.concat([rows, exits], ignore_index=True)
        active = np.vstack([active, exit_active])
    blocks = options[win]
    if len(blocks) and len(periods):
        inside = _inside(blocks, periods, hours)
        if strict:
            _check_windows(blocks[~inside], periods, hours, prices_file)
        blocks = blocks[inside]
    if not len(blocks) or not len(periods):
        return _typed(rows), compact(active)
    first = periods[0]
    ahead = blocks["block_start"] - AWS_BLOCK_AHEAD
    bought = np.where(blocks["provider"].eq("aws") & (ahead > first), ahead, first)
    date_of = periods[dates]
    b = blocks.assign(purchase_date=pd.DatetimeIndex(bought),
                      date_index=np.searchsorted(date_of.to_numpy(), np.asarray(bought, dtype="datetime64[ns]"),
                                                 side="right") - 1)
    b["active_from"] = b["block_start"]
    b["end_date"] = b["block_start"] + pd.to_timedelta(b["block_days"] * 24.0, unit="h")
    share = ladder.overlap_hours(b["active_from"], b["end_date"], periods, hours) / np.asarray(hours, float)[None, :]
    share = np.where(share > 1 - 1e-12, 1.0, np.where(share < 1e-12, 0.0, share))
    b["hours_active"] = share @ np.asarray(hours, float)
    b["firm"] = b["purchase_date"] <= first
    b["cash_date"] = b["block_start"]
    b["max_units"] = np.floor(b["max_gpus"].to_numpy(float) / b["m"].to_numpy(float) + 1e-9)
    b["max_units"] = b["max_units"].fillna(np.inf)
    b["parent"] = -1
    table = pd.concat([rows, b], ignore_index=True)  # exits keep their parents' positions: blocks go after
    return _typed(table), compact(np.vstack([active, share]))


RESALE_AFTER = pd.Timedelta(days=30)  # AWS: a Standard RI may be listed on the Marketplace after 30 days


def exit_rows(rows: pd.DataFrame, active: np.ndarray, periods: pd.DatetimeIndex, hours: np.ndarray,
              dates: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
    """Resale rows (kind ``exit``): for each term row with a ``resale_haircut``, one per later purchase date at
    least 30 days into its term and before its end. Selling n of them at date d is buying n of a negative
    commitment for the rest of the term: ``m`` = -m (the GPUs leave the pool), the recurring fee stops
    (``hourly``), the remaining upfront comes back less the haircut (``upfront`` = (1 - h) u rem / L, a
    negative cash at d); amortised, each hour after d saves the effective rate, less the haircut's loss
    (h u rem / L) spread over those hours (``r``). ``parent`` is the row sold; n(exits) <= n(parent)."""
    from planner.inputs import ladder

    cols = list(rows.columns)
    if "resale_haircut" not in rows or not rows["resale_haircut"].notna().any() or len(dates) < 2:
        return pd.DataFrame(columns=cols), np.zeros((0, len(periods)))
    when = periods[np.asarray(dates)]
    out, acts = [], []
    hrs = np.asarray(hours, float)
    for c in np.flatnonzero(rows["resale_haircut"].notna().to_numpy() & supply.table_mask(rows, resellable=True)):
        r = rows.iloc[c]
        L = float(r["term_months"]) * 730.0
        for j, d in enumerate(when):
            if d < r["active_from"] + RESALE_AFTER or d >= r["end_date"]:
                continue
            rem = (r["end_date"] - d) / pd.Timedelta(hours=1)
            after = ladder.overlap_hours(pd.Series([d]), pd.Series([r["end_date"]]), periods, hrs)[0] / hrs
            a = np.minimum(active[c], np.where(after > 1 - 1e-12, 1.0, after))
            h_after = float(a @ hrs)
            if h_after <= 0:
                continue
            e = r.copy()
            e["kind"], e["parent"], e["m"] = supply.names(dated_by="resale")[0], int(c), -float(r["m"])
            e["purchase_date"], e["cash_date"], e["active_from"], e["date_index"] = d, d, d, j
            e["firm"] = False
            e["term_months"] = rem / 730.0
            e["hourly_usd"], e["upfront_usd"], e["r"] = (float(v) for v in resale_price(
                r["hourly_usd"], r["upfront_usd"], L, rem, r["resale_haircut"], h_after))
            e["residual_usd"] = 0.0
            e["hours_active"] = h_after
            e["max_units"] = np.inf
            out.append(e)
            acts.append(a)
    if not out:
        return pd.DataFrame(columns=cols), np.zeros((0, len(periods)))
    return pd.DataFrame(out, columns=cols).reset_index(drop=True), np.vstack(acts)


def resale_price(hourly, upfront, term_hours, left_hours, haircut, hours_after):
    """A resale's (hourly_usd, upfront_usd, r) from its term's price (numbers or arrays, broadcast): the fee it
    stops, the upfront that comes back less the haircut (negative cash at the sale), and the effective rate each
    hour after the sale saves, less the haircut's loss spread over those hours (``term_hours`` L, ``left_hours``
    rem at the sale, ``hours_after`` the active hours from the sale on). :func:`exit_rows` builds a resale with it;
    :mod:`planner.inputs.price_paths` prices a resale on a scenario's own term price with it."""
    hourly, u = np.asarray(hourly, float), np.asarray(upfront, float)
    L, rem, h = np.asarray(term_hours, float), np.asarray(left_hours, float), np.asarray(haircut, float)
    h_after = np.asarray(hours_after, float)
    spread = np.divide(h * u * rem, L * h_after, out=np.zeros(np.broadcast(h, u, rem, L, h_after).shape),
                       where=h_after > 0)
    return hourly, (1.0 - h) * u * rem / L, hourly + u / L - spread


#: The commitments table's columns every reader may rely on, with their defaults where a table built elsewhere (a
#: test, an old pickle, a hand-made PlanInputs) lacks them: :func:`complete` adds and types them once, so no reader
#: asks whether a column exists. The scenario tree's columns (``node``, ``branch``, ``origin``, ``probability``) are
#: present exactly when the table is split by a tree (``inp.reserved_member`` is not None).
DEFAULTS = {"kind": supply.DEFAULT, "max_units": np.inf, "parent": -1, "guarantees_capacity": True, "site": "",
            "kw_per_gpu": 0.0, "block_start": pd.NaT, "resale_haircut": np.nan}
DTYPES = {"kind": object, "max_units": float, "parent": int, "guarantees_capacity": bool, "site": object,
          "kw_per_gpu": float, "integer": bool}


def _is_complete(rows: pd.DataFrame) -> bool:
    """Every column present, no kind or integer flag blank (checked, not trusted from a flag pandas carries)."""
    if not all(k in rows for k in DEFAULTS) or "integer" not in rows:
        return False
    filled = [c for c, d in DEFAULTS.items() if not (d is pd.NaT or (isinstance(d, float) and np.isnan(d)))]
    return not rows[filled + ["integer"]].isna().to_numpy().any() and all(
        rows[c].dtype == t for c, t in DTYPES.items() if t is not object)


def complete(rows: pd.DataFrame) -> pd.DataFrame:
    """The commitments table with every column of :data:`DEFAULTS` present and typed (blank cells at their
    default), ``kind`` from the option's name where it is absent or blank (an unknown kind is a ValueError: never
    silently an instance), ``integer`` (where absent or blank) from the kind (instances are bought whole; a spend
    commitment is USD per hour) and ``cash_date`` the purchase date where none is given. Returns ``rows`` itself
    when it is already complete."""
    if _is_complete(rows) and set(rows["kind"].unique()) <= set(supply.names()):
        return rows
    rows = rows.copy()
    named = kind_of(rows["option"]) if "option" in rows else pd.Series(None, index=rows.index, dtype=object)
    kind = rows["kind"].astype(object) if "kind" in rows else pd.Series(None, index=rows.index, dtype=object)
    kind = kind.where(kind.notna(), named)
    kind = kind.where(kind.notna(), supply.DEFAULT if "option" not in rows else None)
    unknown = kind.isna() | ~kind.isin(list(supply.names()))
    if unknown.any():
        i = int(np.flatnonzero(unknown.to_numpy())[0])
        raise ValueError(f"commitments table row {i}: kind {kind.iloc[i]!r} (option "
                         f"{rows['option'].iloc[i] if 'option' in rows else None!r}) is not a supply kind; expected one "
                         f"of {', '.join(supply.names())}")
    rows["kind"] = kind
    for col, default in DEFAULTS.items():
        if col == "kind":
            continue
        if col not in rows:
            rows[col] = pd.Series(default, index=rows.index, dtype="datetime64[ns]" if default is pd.NaT else None)
        elif default is not pd.NaT:
            rows[col] = rows[col].where(rows[col].notna(), default)
    rows["site"] = rows["site"].astype(str)
    by_kind = supply.table_mask(rows, unit="instance")
    if "integer" not in rows:  # kept where a caller relaxed it (a backtest's later purchases)
        rows["integer"] = by_kind
    else:
        rows["integer"] = rows["integer"].where(rows["integer"].notna(), pd.Series(by_kind, index=rows.index))
    if "cash_date" not in rows and "purchase_date" in rows:
        rows["cash_date"] = rows["purchase_date"]
    for col, dtype in DTYPES.items():
        rows[col] = rows[col].astype(dtype)
    return rows


def _typed(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows.assign(kind=supply.kinds_of(rows))
    rows["integer"] = supply.table_mask(rows, unit="instance")  # a new table: whole instances by kind
    return complete(rows)


def spend_commitments(rates: pd.DataFrame) -> pd.DataFrame:
    """One commitment option per (savings-plan option, plan_family), from its per-pool rate rows.

    Its unit is one USD per hour committed: ``m`` 1, effective rate ``r`` 1 (a unit costs 1 USD an hour of its
    term, paid whether used or not), ``upfront_usd`` the part paid on the purchase date (per USD/h) and
    ``hourly_usd`` = 1 - upfront / (term hours) the part paid by the hour. ``pool`` is negative (no pool:
    it holds no capacity), one per commitment; ``gpu_type`` / ``region`` are blank.
    """
    cols = OPTION_COLUMNS
    if not len(rates):
        return pd.DataFrame(columns=cols)
    first = rates.groupby(["option", "plan_family"], sort=True).first().reset_index()
    L = first["term_months"].to_numpy(float) * 730.0
    out = pd.DataFrame({
        "pool": -(np.arange(len(first)) + 1), "gpu_type": "", "region": "", "option": first["option"],
        "kind": "spend", "hourly_usd": 1.0 - first["upfront_usd"].to_numpy(float) / L,
        "upfront_usd": first["upfront_usd"].to_numpy(float), "term_months": first["term_months"], "r": 1.0,
        "m": 1.0, "lead_time_months": 0.0, "residual_usd": 0.0, "valid_from": pd.NaT, "block_start": pd.NaT,
        "block_days": np.nan, "provider": "", "max_gpus": np.nan, "row": first["row"],
        "plan_family": first["plan_family"], "guarantees_capacity": True, "resale_haircut": np.nan,
        "site": "", "kw_per_gpu": 0.0})
    return out[cols]


def spend_rates(table: pd.DataFrame, options: pd.DataFrame | None) -> pd.DataFrame:
    """Per spend commitment row ``c`` of the commitments table and eligible pool: its discounted ``rate`` (USD
    per GPU-hour). Empty without savings plans."""
    cols = ["c", "pool", "rate"]
    if options is None or not len(table) or not is_spend(table).any():
        return pd.DataFrame(columns=cols)
    rows = options[is_spend(options)]
    c = table[is_spend(table)][["option", "plan_family"]].reset_index().rename(columns={"index": "c"})
    m = c.merge(rows[["option", "plan_family", "pool", "hourly_usd"]], on=["option", "plan_family"])
    return m.rename(columns={"hourly_usd": "rate"})[cols].sort_values(["c", "pool"]).reset_index(drop=True)


def _inside(blocks: pd.DataFrame, periods: pd.DatetimeIndex, hours: np.ndarray) -> np.ndarray:
    start, end = periods[0], periods[-1] + pd.Timedelta(hours=float(hours[-1]))
    stop = blocks["block_start"] + pd.to_timedelta(blocks["block_days"] * 24.0, unit="h")
    return ((blocks["block_start"] >= start) & (stop <= end)).to_numpy()


def _check_windows(blocks: pd.DataFrame, periods: pd.DatetimeIndex, hours: np.ndarray, file: str) -> None:
    """A block must lie inside the horizon: it is capacity for its window only, charged in full."""
    from planner.core.errors import InputError, Problem

    if not len(blocks):
        return
    start, end = periods[0], periods[-1] + pd.Timedelta(hours=float(hours[-1]))
    stop = blocks["block_start"] + pd.to_timedelta(blocks["block_days"] * 24.0, unit="h")
    problems = []
    for r, s, e in zip(blocks["row"], blocks["block_start"], stop):
        problems.append(Problem(file, "capacity block outside the horizon", row=int(r), column="block_start",
                                value=f"{s:%Y-%m-%dT%H:%M} for {(e - s) / pd.Timedelta(days=1):g} days",
                                expected=f"a window inside the demand's horizon, {start:%Y-%m-%dT%H:%M} to "
                                f"{end:%Y-%m-%dT%H:%M}",
                                hint="extend the demand to cover the block, or drop the offer"))
    raise InputError(problems)


def without_exits(inp):
    """``inp`` with no resale rows (the same plan without the option to sell: what the option is worth)."""
    from dataclasses import replace

    res = inp.commitments
    if not is_exit(res).any():
        return inp
    keep = ~is_exit(res)
    table = res[keep].reset_index(drop=True)
    source = inp.reserved_source
    if source is not None:  # a scenario tree: its rows before the split lose their resales too
        src_keep = ~is_exit(source[0])
        if "origin" in table:  # the split rows' positions in the source, renumbered without its resales
            renumber = np.cumsum(src_keep) - 1
            table["origin"] = renumber[table["origin"].to_numpy(int)]
        source = (source[0][src_keep].reset_index(drop=True), take_rows(source[1], src_keep))
    return replace(inp, commitments=table, reserved_source=source,
                   reserved_member=None if inp.reserved_member is None else inp.reserved_member[keep],
                   reserved_active=None if inp.reserved_active is None else take_rows(inp.reserved_active, keep))


def has_exits(inp) -> bool:
    """True when the commitments table offers resales."""
    res = inp.commitments
    return bool(is_exit(res).any())


# ---- accessors over a commitments table's rows (a table without ``kind`` holds term instances) ----------
def is_spend(table: pd.DataFrame) -> np.ndarray:
    """True on spend commitments (savings plans: USD per hour, no instance)."""
    return supply.table_mask(table, unit="usd_per_hour")


def is_exit(table: pd.DataFrame) -> np.ndarray:
    """True on resale rows (a sale of a term row)."""
    return supply.table_mask(table, dated_by="resale")


def is_window_row(table: pd.DataFrame) -> np.ndarray:
    """True on calendar windows (capacity blocks)."""
    return supply.table_mask(table, dated_by="window")


def is_term_row(table: pd.DataFrame) -> np.ndarray:
    """True on term commitments of whole instances (reserved rows; a table without ``kind`` holds only these)."""
    return supply.table_mask(table, dated_by="term", unit="instance")


def holds_gpus(table: pd.DataFrame) -> np.ndarray:
    """True on rows whose instances hold reserved GPUs of their pool (terms and windows, not spend nor exit)."""
    return supply.table_mask(table, adds_capacity=True)
