"""Validated tables + model file -> :class:`PlanInputs`, the arrays the model is built from.

Symbols follow ``spec/formulation.md``: K classes, P pools, T periods, S
scenarios; ``demand[s, k, t]`` is d, ``speed[k, p]`` is s, ``goodput[k, p]`` is g,
``inventory[p, t]`` is E. Nothing here knows about PuLP.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from planner.inputs import commitments
from planner.inputs.activity import Spans, take_periods
from planner.sizing import economics
from planner.sizing import queueing
from planner.sizing.backfill import backfill_table
from planner.inputs.config import ModelConfig
from planner.inputs import ladder
from planner.inputs.validate import QUANTILE, Tables, availability_caps, owned_gpus
from planner.inputs import rented, supply
from planner.inputs.price_paths import commitment_rows, paths_for


@dataclass(frozen=True)
class PlanInputs:
    """Everything the model needs, as arrays over classes k, pools p, periods t and scenarios s.

    ``demand`` (S, K, T) in reference GPUs, ``hours`` (T,), ``probability`` (S,), ``speed`` s[k,p],
    ``goodput`` g[k,p] (spot), ``reliability``, ``headroom`` eta_k, ``spot_share`` phi_k, ``pools`` (one row per
    GPU type and region: prices and caps), ``reserved`` (one row per reserved option: pool, term, effective rate
    ``r``, GPUs per instance ``m``), ``inventory`` (P, T) owned GPUs; ``tables`` keeps the validated tables.
    """
    config: ModelConfig
    tables: Tables
    classes: list[str]  # K
    pools: pd.DataFrame  # P rows: gpu_type, region, m, od, sp, ip, cap_od, cap_sp, cap_res, has_*
    commitments: pd.DataFrame  # one row per (commitment option, purchase date): pool, option, kind, prices, r, m, dates
    periods: pd.DatetimeIndex  # T
    hours: np.ndarray  # (T,) h_t
    scenarios: list[str]  # S
    probability: np.ndarray  # (S,)
    demand: np.ndarray  # (S, K, T) d
    speed: np.ndarray  # (K, P) s (0 = not allowed)
    goodput: np.ndarray  # (K, P) g on spot (0 where spot is not usable)
    reliability: np.ndarray  # (K, P) share of a non-spot GPU-hour that is useful (1 without failure rates)
    headroom: np.ndarray  # (K,) eta
    spot_share: np.ndarray  # (K,) phi
    inventory: np.ndarray  # (P, T) E
    penalty: float  # M, USD per reference GPU-hour of shortfall
    spot: pd.DataFrame  # per (class, spot pool): the economics behind g
    reserved_useful: np.ndarray | None = None  # (K, P) useful share of a reserved GPU-hour (None = reliability)
    backfill: pd.DataFrame | None = None  # per (backfill class, pool): reclaim rate and goodput
    requests: np.ndarray | None = None  # (S, K, T) requests per second of SLO-sized classes (NaN elsewhere)
    slo: pd.DataFrame | None = None  # per (SLO class, GPU type): service time, GPUs per replica, speed
    options: pd.DataFrame | None = None  # the price sheet's reserved rows (one per option and valid_from)
    reserved_active: np.ndarray | None = None  # (R, T): share of period t purchase row c is active (None = all)
    discount_origin: pd.Period | None = None  # month 0 of the cost of capital (the first period's month)
    availability: np.ndarray | None = None  # (2, P, T) GPUs obtainable per period, on-demand and spot (NaN: no row)
    reserved_member: np.ndarray | None = None  # (R, S) the scenarios each purchase row serves (None: all; planner.inputs.tree)
    reserved_source: tuple | None = None  # (table, activity) before the tree split it (re-split when demand changes)
    owned_dated: pd.DataFrame | None = None  # purchases made earlier, counted in ``inventory`` as dated rows (a backtest)
    price_names: tuple | None = None  # the price-sheet scenario each scenario takes its prices from (None: its own name)

    def __post_init__(self):
        object.__setattr__(self, "commitments", commitments.complete(self.commitments))  # typed, every column present

    @property
    def price_paths(self):
        """The price sheet's dated rented prices and per-scenario prices (:mod:`planner.inputs.price_paths`) for
        these pools and scenarios, or None when every price is one number per pool and option."""
        from planner.inputs import price_paths

        names = self.price_names if self.price_names is not None else tuple(self.scenarios)
        if len(names) != len(self.scenarios):
            names = tuple(self.scenarios)
        return price_paths.paths_for(self.tables.prices, self.pools, names)

    @property
    def rented_price_path(self) -> np.ndarray | None:
        """(S, J, P, T) USD per GPU-hour of each rented kind per scenario and period when a forward curve or a
        scenario's price path changes it (NaN: not sold); None when :attr:`rented_price` holds throughout."""
        paths = self.price_paths  # read from the price sheet each time (milliseconds): never stale after a replace
        return paths.rented_price(self.periods) if paths is not None and paths.rented else None

    @property
    def reserved(self) -> pd.DataFrame:
        """The commitments table under its former name (read-only; use ``commitments``)."""
        return self.commitments

    @property
    def member(self) -> np.ndarray:
        """(R, S) the scenarios each commitments-table row serves (every scenario without a tree)."""
        from planner.inputs.tree import member_of

        return member_of(self)

    @property
    def reserved_weight(self) -> np.ndarray:
        """(R,) each commitments-table row's probability: 1 for a purchase common to every scenario, its node's
        probability for a purchase that waits for information (planner.inputs.tree)."""
        from planner.inputs.tree import weight_of

        return weight_of(self)

    @property
    def spend_rates(self) -> pd.DataFrame:
        """Per savings-plan commitment row ``c`` of ``reserved`` and eligible pool: its discounted ``rate``."""
        return commitments.spend_rates(self.commitments, self.options)

    @property
    def discount(self) -> np.ndarray:
        """(T,) each period's discount factor at ``[finance] discount_rate`` (all 1 at a rate of 0)."""
        from planner.inputs.finance import period_factor

        rate = self.config.finance.discount_rate
        if rate == 0 or not self.T:
            return np.ones(self.T)
        return period_factor(self.periods, self.discount_origin or self.periods[0].to_period("M"), rate)

    @property
    def active(self) -> "np.ndarray | Spans":
        """(R, T) share of each period every purchase row is active (all 1 when not given): spans
        (:class:`planner.inputs.activity.Spans`) where every row is one, else an array."""
        if self.reserved_active is None:
            return Spans.full(len(self.commitments), self.T)
        return self.reserved_active

    def cap_series(self, option: str) -> np.ndarray:
        """(P, T) cap on GPUs held at once per period for rented kind ``option`` (on_demand, spot, flex_start):
        the lower of the price sheet's max_gpus and the availability file's row for the period (NaN: no cap)."""
        sheet = np.broadcast_to(rented.cap(self.pools)[rented.index(option)][:, None], (self.P, self.T))
        i = supply.get(option).availability_index
        if self.availability is None or i < 0:
            return np.array(sheet)
        return np.fmin(sheet, self.availability[i])

    @property
    def rented_price(self) -> np.ndarray:
        """(J, P) USD per GPU-hour of each rented kind (:data:`planner.inputs.rented.KINDS`; NaN: not sold)."""
        return rented.price(self.pools)

    @property
    def rented_useful(self) -> np.ndarray:
        """(J, K, P) useful reference GPUs per paid GPU of each rented kind (:mod:`planner.inputs.rented`)."""
        return np.stack([rented.useful(kind, self.speed, self.reliability, self.goodput, self.pools, self.config,
                                       self.classes) for kind in rented.KINDS])

    @property
    def rented_in_time(self) -> np.ndarray:
        """(J, K, P) the share of a class's demand each rented kind may serve (queued kinds: the share granted
        within the class's start delay; 1 elsewhere)."""
        out = np.ones((len(rented.KINDS), self.K, self.P))
        for j, kind in enumerate(rented.KINDS):
            got = rented.in_time(kind, self.pools, self.config, self.classes)
            if got is not None:
                out[j] = got
        return out

    @property
    def rented_caps(self) -> np.ndarray | None:
        """(J * P, T) every rented kind's per-period cap, stacked in kind order, when an availability file makes
        caps vary by period (None: the price sheet's caps hold in every period)."""
        if self.availability is None:
            return None
        return np.concatenate([self.cap_series(kind) for kind in rented.KINDS])

    @property
    def penalty_by_class(self) -> np.ndarray:
        """(K,) USD per reference GPU-hour of each class's shortfall: its ``shortfall_penalty``, else M."""
        given = [self.config.classes[c].shortfall_penalty for c in self.classes]
        return np.array([self.penalty if v is None else v for v in given], dtype=float)

    @property
    def q_reserved(self) -> np.ndarray:
        """(K, P) useful reference GPUs per reserved GPU: speed x reliability, or x backfill goodput."""
        useful = self.reliability if self.reserved_useful is None else self.reserved_useful
        return self.speed * useful

    @property
    def horizon_hours(self) -> float:
        """Hours in the horizon (sum of the period lengths)."""
        return float(self.hours.sum())

    @property
    def K(self) -> int:
        """Number of workload classes."""
        return len(self.classes)

    @property
    def P(self) -> int:
        """Number of pools (GPU type x region)."""
        return len(self.pools)

    @property
    def T(self) -> int:
        """Number of periods."""
        return len(self.periods)


def quantile_weights(names: list[str]) -> tuple[list[str], np.ndarray]:
    """Scenarios from quantile forecasts: each quantile stands for the probability mass nearest to it.

    Sorted levels q_1 < ... < q_n get the weight between the midpoints of their neighbours (0 and 1 at
    the ends): p10, p50, p90 -> 0.3, 0.4, 0.3 (Swanson's rule); p50 alone -> 1.
    """
    order = sorted(names, key=lambda s: int(s[1:]))
    q = np.array([int(s[1:]) / 100.0 for s in order])
    edges = np.concatenate([[0.0], (q[1:] + q[:-1]) / 2, [1.0]])
    return order, np.diff(edges)


def _pools(prices: pd.DataFrame) -> pd.DataFrame:
    from planner.inputs.price_paths import base_rows

    prices = base_rows(prices)  # today's price per pool and option: dated and scenario rows are price paths
    keys = prices[["gpu_type", "region"]].drop_duplicates().sort_values(["gpu_type", "region"])
    pools = keys.reset_index(drop=True)
    idx = pd.MultiIndex.from_frame(pools)

    def pick(option: str, col: str) -> np.ndarray:
        rows = prices[prices["option"] == option].set_index(["gpu_type", "region"])[col]
        return rows.reindex(idx).to_numpy(dtype=float)

    sized = prices[~commitments.kind_of(prices["option"]).isin(supply.names(unit="usd_per_hour"))]  # a savings plan row has no instance
    pools["m"] = sized.groupby(["gpu_type", "region"])["gpus_per_instance"].first().reindex(idx).to_numpy()
    pools["od"] = pick("on_demand", "hourly_usd")
    pools["sp"] = pick("spot", "hourly_usd")
    pools["ip"] = pick("spot", "interruptions_per_hour")
    pools["cap_od"] = pick("on_demand", "max_gpus")
    pools["cap_sp"] = pick("spot", "max_gpus")
    for kind in supply.names(useful_share="queued"):  # queued capacity: price, cap, queue time, run length
        s = supply.get(kind)
        pools[s.pool_price] = pick(kind, "hourly_usd")
        pools[s.pool_cap] = pick(kind, "max_gpus")
        for col, src in (("p50", "queue_hours_p50"), ("p90", "queue_hours_p90"), ("run_hours", "max_run_hours")):
            pools[f"{s.pool_price}_{col}"] = pick(kind, src) if src in prices else np.nan
    res = prices[commitments.is_term(prices["option"])]  # capacity blocks cap each offer, not the pool
    pools["cap_res"] = res.groupby(["gpu_type", "region"])["max_gpus"].min().reindex(idx).to_numpy()
    pools["has_od"] = ~np.isnan(pools["od"].to_numpy())
    pools["has_sp"] = ~np.isnan(pools["sp"].to_numpy())
    held = prices[commitments.adds_capacity(prices["option"])]
    pools["has_res"] = pd.Series(idx.isin(pd.MultiIndex.from_frame(held[["gpu_type", "region"]]))).to_numpy()
    pools["name"] = pools["gpu_type"] + "/" + pools["region"]
    return pools


def reserved_purchases(config: ModelConfig, options: pd.DataFrame, periods: pd.DatetimeIndex,
                       hours: np.ndarray, strict: bool = True) -> tuple[pd.DataFrame, np.ndarray]:
    """The commitments table (one row per commitment option and purchase date) and its activity (R, T)."""
    c = config.commitments
    dates = ladder.purchase_periods(periods, c.purchase_every, c.purchase_until)
    return commitments.purchase_table(options, periods, hours, dates, _prices_name(config), strict=strict)


def split_by_node(config: ModelConfig, reserved: pd.DataFrame, active: np.ndarray, periods: pd.DatetimeIndex,
                  demand: np.ndarray, scenarios: list[str], probability: np.ndarray, paths=None):
    """The commitments table split by the scenario tree the demand (and the scenarios' prices, ``paths``: a
    :class:`planner.inputs.price_paths.PricePaths`) implies (:func:`planner.inputs.tree.expand`), unless
    ``[commitments] non_anticipativity = "first_stage"``: (table, activity, member or None). Where prices differ
    by scenario, each row is then priced at the mean over the scenarios it serves (its expected cost)."""
    from planner.inputs.tree import expand

    if config.commitments.non_anticipativity != "tree":
        table, act, member = reserved, active, None
    else:
        sig = paths.signature(periods) if paths is not None else None
        table, act, member = expand(reserved, active, periods, demand, scenarios, probability, signature=sig)
    if paths is not None and paths.reserved:
        table = paths.price_commitments(table, member, probability)
    return table, act, member


def retree(inp: "PlanInputs") -> "PlanInputs":
    """``inp`` with its commitments table split again for its (changed) demand and scenarios."""
    if inp.reserved_source is None and inp.reserved_member is None:
        return inp
    table, active = inp.reserved_source if inp.reserved_source is not None else (inp.commitments, inp.active)
    reserved, act, member = split_by_node(inp.config, table, active, inp.periods, inp.demand, inp.scenarios,
                                          inp.probability, inp.price_paths)
    return replace(inp, commitments=reserved, reserved_active=act, reserved_member=member,
                   reserved_source=inp.reserved_source if member is not None else None)


def first_stage(inp: "PlanInputs") -> "PlanInputs":
    """``inp`` with every purchase common to all scenarios (``non_anticipativity = "first_stage"``): the plan
    that cannot wait for information, against which the tree's value of waiting is measured."""
    config = replace(inp.config, commitments=replace(inp.config.commitments, non_anticipativity="first_stage"))
    return retree(replace(inp, config=config))


def _prices_name(config: ModelConfig) -> str:
    return config.prices.name if config.prices is not None else "price sheet"


def build_inputs(config: ModelConfig, tables: Tables) -> PlanInputs:
    """The arrays of :class:`PlanInputs` from a model and its validated tables (SLO classes sized here)."""
    classes = list(config.classes)
    pools = _pools(tables.prices)
    options = commitments.option_rows(commitment_rows(tables.prices), pools)
    dem = tables.demand
    scen = list(pd.unique(dem["scenario"]))  # in order of first appearance
    if config.scenarios:
        scen = [s for s in config.scenarios]
        prob = np.array([config.scenarios[s] for s in scen])
    elif len(scen) > 1 and all(QUANTILE.fullmatch(s) for s in scen):
        scen, prob = quantile_weights(scen)
    else:
        prob = np.full(len(scen), 1.0 / len(scen))
    periods = pd.DatetimeIndex(np.sort(dem["period"].unique()))
    hours = dem.drop_duplicates("period").set_index("period")["hours"].reindex(periods).to_numpy(float)
    cube = dem.set_index(["scenario", "workload_class", "period"])["gpus"]
    full = pd.MultiIndex.from_product([scen, classes, periods])
    demand = cube.reindex(full).to_numpy(float).reshape(len(scen), len(classes), len(periods))

    _check_purchase_until(config, periods)
    _check_budget_months(config, periods)
    reserved, active = reserved_purchases(config, options, periods, hours)
    source = (reserved, active)
    paths = paths_for(tables.prices, pools, scen)
    reserved, active, member = split_by_node(config, reserved, active, periods, demand, scen, prob, paths)
    K, P = len(classes), len(pools)
    requests, demand, slo_speed, slo = size_slo_classes(config, classes, demand)
    speed = np.zeros((K, P))
    for k, name in enumerate(classes):
        pol = config.classes[name]
        type_speed = pools["gpu_type"].map(pol.gpu_types or {}).fillna(0.0) if pol.gpu_types is not None \
            else pd.Series(1.0, index=pools.index)
        region_ok = pools["region"].isin(pol.regions) if pol.regions is not None else True
        if name in slo_speed:
            type_speed = pools["gpu_type"].map(slo_speed[name]).fillna(0.0)
        speed[k] = np.where(region_ok, type_speed.to_numpy(float), 0.0)
    headroom = np.array([config.classes[c].headroom for c in classes])
    phi = np.array([config.classes[c].phi for c in classes])

    goodput, reliability, spot = _goodput(config, classes, pools, speed, todays_terms(options, periods[0]))
    useful, backfill = backfill_table(classes, config.classes, pools, speed, reliability, demand, prob,
                                      headroom, hours, config.failure_rate_per_gpu_hour)
    penalty = config.solver.shortfall_penalty_usd_per_gpu_hour or 10.0 * float(np.nanmax(pools["od"]))
    return PlanInputs(config=config, tables=tables, classes=classes, pools=pools, commitments=reserved,
                      options=options, reserved_active=active,
                      periods=periods, hours=hours, scenarios=scen, probability=prob, demand=demand,
                      speed=speed, goodput=goodput, reliability=reliability, headroom=headroom,
                      spot_share=phi, inventory=owned_gpus(tables.inventory, list(zip(pools.gpu_type, pools.region)),
                                                 periods, hours),
                      reserved_member=member,
                      reserved_source=source if member is not None or paths is not None else None,
                      availability=availability_caps(tables.availability,
                                                     list(zip(pools["gpu_type"], pools["region"])), periods, hours),
                      penalty=float(penalty), spot=spot, reserved_useful=useful, backfill=backfill,
                      requests=requests, slo=slo,
                      discount_origin=periods[0].to_period("M") if len(periods) else None)


def _check_purchase_until(config: ModelConfig, periods: pd.DatetimeIndex) -> None:
    """``purchase_until`` must fall after the first period and no later than the horizon's end."""
    until = config.commitments.purchase_until
    if until is None or not len(periods):
        return
    from planner.core.errors import ConfigError, Problem

    when = pd.Timestamp(until)
    if not periods[0] < when <= periods[-1] + pd.Timedelta(days=1):
        raise ConfigError(Problem(str(config.path or "<model>"), "'commitments.purchase_until' outside the horizon",
                                  value=until, expected=f"a date after {periods[0].date()} and no later than "
                                  f"{(periods[-1] + pd.Timedelta(days=1)).date()} (the demand's horizon)",
                                  hint="remove the key to allow purchases on every date of the horizon"))


def _check_budget_months(config: ModelConfig, periods: pd.DatetimeIndex) -> None:
    """Every month named in ``[budget] months`` must be a month of the horizon (a typo'd year is exit 2)."""
    months = config.budget.months
    if not months or not len(periods):
        return
    from planner.core.errors import ConfigError, Problem

    have = set(periods.strftime("%Y-%m"))
    bad = [m for m in months if m not in have]
    if bad:
        raise ConfigError(Problem(str(config.path or "<model>"), "'budget.months' names a month outside the horizon",
                                  value=", ".join(bad), expected=f"months from {min(have)} to {max(have)}"))


def size_slo_classes(config: ModelConfig, classes: list[str], demand: np.ndarray):
    """Requests per second -> reference GPUs for every SLO-sized class (M/M/c, :mod:`planner.sizing.queueing`).

    The first GPU type of a class's ``replicas`` table is its reference (speed 1): its demand in period t
    is ``gpus_per_replica * replicas(lam_t)``. Another type's speed is the smallest ratio, over the periods
    with load, of the reference GPUs to the GPUs that type needs alone: a plan that serves the class on
    any one type then meets the SLO in every period.
    Returns (requests or None, demand in reference GPUs, {class: {type: speed}}, sizing table or None).
    """
    slo_classes = [k for k, c in enumerate(classes) if config.classes[c].slo is not None]
    if not slo_classes:
        return None, demand, {}, None
    requests = np.full(demand.shape, np.nan)
    demand = demand.copy()
    speeds, rows = {}, []
    for k in slo_classes:
        spec = config.classes[classes[k]].slo
        lam = demand[:, k, :]
        requests[:, k, :] = lam
        need = {}
        for rep in spec.replicas:
            top = float(np.nanmax(lam)) if lam.size else 0.0
            if top * rep.service_ms / 1000.0 > queueing.MAX_REPLICAS / 2:
                from planner.core.errors import InputError, Problem

                raise InputError(Problem(str(config.demand), f"class '{classes[k]}' has a load beyond what the "
                                         f"planner sizes on {rep.gpu_type}", column="gpus",
                                         value=f"{top:g} requests/s",
                                         expected=f"at most {queueing.MAX_REPLICAS // 2:,} Erlangs "
                                                  "(requests per second x service seconds)",
                                         hint="is the column GPUs rather than requests per second?"))
            c = queueing.replicas_for_slo(lam, rep.service_ms / 1000.0, spec.latency_slo_ms / 1000.0,
                                          spec.percentile, spec.service_cv)
            need[rep.gpu_type] = c * rep.gpus_per_replica
        ref = spec.replicas[0]
        demand[:, k, :] = need[ref.gpu_type]
        busy = need[ref.gpu_type] > 0
        speeds[classes[k]] = {}
        for rep in spec.replicas:
            other = need[rep.gpu_type]
            ratio = float(np.min(need[ref.gpu_type][busy] / other[busy])) if busy.any() else \
                ref.service_ms * ref.gpus_per_replica / (rep.service_ms * rep.gpus_per_replica)
            speeds[classes[k]][rep.gpu_type] = 1.0 if rep is ref else ratio
            rows.append({"workload_class": classes[k], "gpu_type": rep.gpu_type, "reference": rep is ref,
                         "service_ms": rep.service_ms, "gpus_per_replica": rep.gpus_per_replica,
                         "latency_slo_ms": spec.latency_slo_ms, "slo_percentile": spec.percentile,
                         "service_cv": spec.service_cv, "speed": speeds[classes[k]][rep.gpu_type],
                         "peak_requests_per_s": float(np.nanmax(lam)) if lam.size else 0.0,
                         "peak_replicas": float(np.max(other) / rep.gpus_per_replica) if other.size else 0.0})
    return requests, demand, speeds, pd.DataFrame(rows)


def todays_terms(options: pd.DataFrame | None, start) -> pd.DataFrame:
    """The price sheet's rows that hold GPUs (terms, capacity blocks: not a resale, whose rate is what a sale saves
    on negative GPUs, nor a savings plan) at today's price: per pool and option the row in force at ``start`` (the
    latest ``valid_from`` on or before it; undated rows always), never a scenario's row (``options`` are the sheet's
    own). An option offered from a later date only is not offered today."""
    if options is None or not len(options):
        return pd.DataFrame(columns=["pool", "option", "r"])
    held = options[np.asarray(commitments.holds_gpus(options), bool)]
    vf = pd.to_datetime(held["valid_from"])
    held = held[(vf.isna() | (vf <= pd.Timestamp(start))).to_numpy()]
    held = held.assign(_from=pd.to_datetime(held["valid_from"]).fillna(pd.Timestamp.min)).sort_values("_from")
    return held.groupby(["pool", "option", "block_start"], dropna=False).tail(1).drop(columns="_from")


_GOODPUT_COLUMNS = ("m", "has_sp", "sp", "od", "ip")  # the pool columns the spot economics read (and its names)
_GOODPUT_LAST: list = [None]  # (what it was computed from, what it gave): the last call of _goodput


def _goodput(config: ModelConfig, classes: list[str], pools: pd.DataFrame, speed: np.ndarray,
             today: pd.DataFrame):
    """g[k, p] on spot, the non-spot reliability, and the per-(class, spot pool) economics table (``today``: the
    terms at today's price, :func:`todays_terms`).

    The same arguments as the last call (equal class policies and failure rate, classes, pools' names, prices,
    rates and sizes, speeds and reserved rates) give the last answer again, copied: the memo's downside scales the
    demand alone, and recomputing took 0.1-0.15 s a level on real744. Anything else is computed."""
    P = speed.shape[1]
    best_res = today.groupby("pool")["r"].min().reindex(range(P)).to_numpy(float)
    key = (repr([config.classes[c] for c in classes]) + repr(config.failure_rate_per_gpu_hour),  # (repr: a policy
           # replaced in the classes' dict, or a dict inside one changed in place, is another key)
           tuple(classes), tuple(pools["gpu_type"]), tuple(pools["region"]),
           tuple(np.array(pools[c], dtype=float) for c in _GOODPUT_COLUMNS), np.array(speed, dtype=float), best_res)
    # (copies: arrays a caller changes in place later are not the ones this answer was computed from)
    last = _GOODPUT_LAST[0]
    if last is not None and _same_goodput_key(last[0], key):
        goodput, reliability, spot = last[1]
        return goodput.copy(), reliability.copy(), spot.copy()
    out = _goodput_computed(config, classes, pools, speed, best_res)
    _GOODPUT_LAST[0] = (key, out)
    return out[0].copy(), out[1].copy(), out[2].copy()


def _same_goodput_key(a: tuple, b: tuple) -> bool:
    """Two :func:`_goodput` keys alike: equal policies and names, equal arrays (NaN equal to NaN)."""
    same = lambda x, y: x.shape == y.shape and np.array_equal(x, y, equal_nan=True)  # noqa: E731
    return (a[0] == b[0] and a[1:4] == b[1:4] and len(a[4]) == len(b[4])
            and all(same(x, y) for x, y in zip(a[4], b[4])) and same(a[5], b[5]) and same(a[6], b[6]))


def _goodput_computed(config: ModelConfig, classes: list[str], pools: pd.DataFrame, speed: np.ndarray,
                      best_res: np.ndarray):
    """:func:`_goodput` computed (``best_res``: each pool's cheapest reserved rate today, NaN where none)."""
    K, P = speed.shape
    goodput = np.zeros((K, P))
    reliability = np.ones((K, P))
    pairs = []  # (class, spot pool) pairs to assess: collected, then assessed in two vectorised calls
    for k, name in enumerate(classes):
        pol = config.classes[name]
        fail = pol.failure_rate_per_gpu_hour
        fail = config.failure_rate_per_gpu_hour if fail is None else fail
        C, R = pol.checkpoint_minutes / 60.0, pol.restart_minutes / 60.0
        tau = None if pol.checkpoint_interval_minutes is None else pol.checkpoint_interval_minutes / 60.0
        for p in range(P):
            if speed[k, p] <= 0:
                continue
            m = float(pools["m"].iat[p])
            job = pol.job_gpus if pol.job_gpus is not None else m
            if fail > 0:  # hardware failures interrupt every purchase option, not only spot
                lam_f = float(economics.job_interruption_rate(0.0, job, m, fail))
                t_f = economics.optimal_interval(lam_f, C) if tau is None else tau
                reliability[k, p] = float(economics.goodput(lam_f, t_f, C, R))
            if not (pol.phi > 0 and pools["has_sp"].iat[p]):
                continue
            pairs.append(dict(k=k, p=p, name=name, pol=pol, C=C, R=R, tau=tau, fail=fail, m=m, job=job))
    assessed = {}
    for fixed in (False, True):  # optimal intervals, then fixed ones: one array call each
        group = [x for x in pairs if (x["tau"] is not None) == fixed]
        if not group:
            continue
        col = lambda key: np.array([float(x[key]) for x in group])  # noqa: E731
        sp = np.array([float(pools["sp"].iat[x["p"]]) for x in group])
        od = np.array([float(pools["od"].iat[x["p"]]) / reliability[x["k"], x["p"]] for x in group])
        ip = np.array([float(pools["ip"].iat[x["p"]]) for x in group])
        override = np.array([np.nan if x["pol"].spot_goodput is None else float(x["pol"].spot_goodput)
                             for x in group])
        # on-demand per useful GPU-hour: failures (if any) hit it too, so spot is compared like for like
        a = economics.assess(spot_price=sp, on_demand_price=od, interruptions_per_instance_hour=ip,
                             checkpoint_h=col("C"), restart_h=col("R"), job_gpus=col("job"),
                             gpus_per_instance=col("m"), interval_h=col("tau") if fixed else None,
                             failure_rate_per_gpu_hour=col("fail"), goodput_override=override)
        for i, x in enumerate(group):
            assessed[(x["k"], x["p"])] = {f: float(np.atleast_1d(getattr(a, f))[i]) for f in (
                "job_interruptions_per_hour", "interval_hours", "young_interval_hours", "goodput",
                "effective_usd_per_useful_gpu_hour", "break_even_interruptions_per_hour", "expected_lost_hours")}
    rows = []
    for x in pairs:
        k, p, name, pol, job, m = x["k"], x["p"], x["name"], x["pol"], x["job"], x["m"]
        a = assessed[(k, p)]
        goodput[k, p] = a["goodput"]
        eff_res = best_res[p] / reliability[k, p] if not np.isnan(best_res[p]) else np.nan
        rows.append({
            "workload_class": name, "gpu_type": pools["gpu_type"].iat[p], "region": pools["region"].iat[p],
            "pool": p, "class_index": k, "speed": speed[k, p], "job_gpus": job,
            "instances_per_job": float(economics.instances_spanned(job, m)),
            "interruptions_per_instance_hour": float(pools["ip"].iat[p]),
            "job_interruptions_per_hour": a["job_interruptions_per_hour"],
            "checkpoint_minutes": pol.checkpoint_minutes, "restart_minutes": pol.restart_minutes,
            "interval_minutes": a["interval_hours"] * 60.0, "young_interval_minutes": a["young_interval_hours"] * 60.0,
            "goodput": a["goodput"], "goodput_source": "spot_goodput" if pol.spot_goodput is not None else "model",
            "spot_usd_per_gpu_hour": float(pools["sp"].iat[p]),
            "effective_usd_per_useful_gpu_hour": a["effective_usd_per_useful_gpu_hour"],
            "on_demand_usd_per_gpu_hour": float(pools["od"].iat[p]),
            "on_demand_usd_per_useful_gpu_hour": float(pools["od"].iat[p]) / reliability[k, p],
            "best_reserved_usd_per_gpu_hour": best_res[p],
            "best_reserved_usd_per_useful_gpu_hour": eff_res,
            "spot_pays": bool(a["effective_usd_per_useful_gpu_hour"] < float(pools["od"].iat[p]) / reliability[k, p]),
            "spot_beats_reserved": bool(np.isnan(eff_res) or a["effective_usd_per_useful_gpu_hour"] < eff_res),
            "break_even_interruptions_per_hour": a["break_even_interruptions_per_hour"],
            "expected_lost_minutes_per_interruption": a["expected_lost_hours"] * 60.0,
        })
    spot = pd.DataFrame(rows)
    return goodput, reliability, spot


FACTORS = ("spot_price", "on_demand_price", "reserved_price", "interruptions", "demand_level",
           "demand_growth", "headroom")


def scale_inputs(inp: PlanInputs, spot_price: float = 1.0, on_demand_price: float = 1.0,
                 reserved_price: float = 1.0, interruptions: float = 1.0, demand_level: float = 1.0,
                 demand_growth: float = 1.0, headroom: float = 1.0) -> PlanInputs:
    """A what-if copy of ``inp`` with multiplicative factors applied; nothing is re-read or re-validated.

    ``demand_growth`` scales demand linearly over the horizon: 1 at the first period, the factor at the
    last one (1.2 = demand ends 20 % above the forecast). The other factors multiply their parameter
    everywhere (queued capacity, e.g. flex-start, moves with ``on_demand_price``). Goodput and the spot economics are recomputed from the scaled rates and prices; the
    penalty M stays that of the original sheet.
    """
    pools = inp.pools.copy()
    pools["od"] = pools["od"] * on_demand_price
    pools["sp"] = pools["sp"] * spot_price
    for kind in supply.names(useful_share="queued"):  # queued capacity is priced off on-demand: it scales with it
        if supply.get(kind).pool_price in pools:
            pools[supply.get(kind).pool_price] = pools[supply.get(kind).pool_price] * on_demand_price
    pools["ip"] = pools["ip"] * interruptions
    reserved = inp.commitments.copy()
    options = None if inp.options is None else inp.options.copy()
    source = None if inp.reserved_source is None else (inp.reserved_source[0].copy(), inp.reserved_source[1])
    for table in (reserved, options, None if source is None else source[0]):
        if table is not None:
            # a savings plan's unit (1 USD/h) is not a price: its rates per GPU-hour (option rows) scale instead
            unit = commitments.is_spend(table)
            rate_row = unit & (table["pool"].to_numpy() >= 0)
            for col in ("hourly_usd", "upfront_usd", "residual_usd", "r"):
                factor = np.where(unit, np.where(rate_row & (col == "hourly_usd"), reserved_price, 1.0), reserved_price)
                table[col] = table[col] * factor
    ramp = np.ones(inp.T)
    if inp.T > 1 and demand_growth != 1.0:
        elapsed = np.concatenate([[0.0], np.cumsum(inp.hours[:-1])])
        ramp = 1.0 + (demand_growth - 1.0) * elapsed / elapsed[-1]
    demand = inp.demand * demand_level * ramp[None, None, :]
    speed, requests = inp.speed, inp.requests
    if inp.requests is not None and (demand_level != 1.0 or demand_growth != 1.0):
        # SLO classes: scale their requests and size them again (replicas are not proportional to load)
        raw = np.where(np.isnan(inp.requests), demand, inp.requests * demand_level * ramp[None, None, :])
        requests, demand, slo_speed, _ = size_slo_classes(inp.config, inp.classes, raw)
        speed = apply_slo_speeds(inp.speed, inp.classes, inp.pools, slo_speed)
    prices = inp.tables.prices.copy()
    kinds = commitments.kind_of(prices["option"])
    factor = np.select([kinds.isin(supply.names(rented=True, preemptible=False)),
                        kinds.isin(supply.names(rented=True, preemptible=True)), kinds.isin(commitments.COMMITMENT_KINDS)],
                       [on_demand_price, spot_price, reserved_price], 1.0)
    prices["hourly_usd"] = prices["hourly_usd"] * factor
    # a savings plan's upfront is per USD/h committed (its unit, not a price), as in the commitments table above
    per_unit = kinds.isin(supply.names(unit="usd_per_hour"))
    prices["upfront_usd"] = prices["upfront_usd"] * np.where(kinds.isin(commitments.COMMITMENT_KINDS) & ~per_unit,
                                                             reserved_price, 1.0)
    prices["interruptions_per_hour"] = prices["interruptions_per_hour"] * interruptions
    tables = replace(inp.tables, prices=prices)
    goodput, reliability, spot = _goodput(inp.config, inp.classes, pools, speed, todays_terms(options, inp.periods[0]))
    return _refresh_backfill(replace(inp, pools=pools, commitments=reserved, options=options, demand=demand,
                                     reserved_source=source,
                                     speed=speed,
                                     requests=requests,
                                     headroom=inp.headroom * headroom, goodput=goodput,
                                     reliability=reliability, spot=spot, tables=tables))


def apply_slo_speeds(speed: np.ndarray, classes: list[str], pools: pd.DataFrame, slo_speed: dict) -> np.ndarray:
    """``speed`` with the SLO classes' rows set from their sizing (allowed pools keep being allowed)."""
    out = speed.copy()
    for name, by_type in slo_speed.items():
        k = classes.index(name)
        out[k] = np.where(speed[k] > 0, pools["gpu_type"].map(by_type).fillna(0.0).to_numpy(float), 0.0)
    return out


def _refresh_backfill(inp: PlanInputs) -> PlanInputs:
    """Recompute the backfill goodput after the demand, rates or headroom changed."""
    useful, backfill = backfill_table(inp.classes, inp.config.classes, inp.pools, inp.speed, inp.reliability,
                                      inp.demand, inp.probability, inp.headroom, inp.hours,
                                      inp.config.failure_rate_per_gpu_hour)
    return replace(inp, reserved_useful=useful, backfill=backfill)


def with_demand(inp: PlanInputs, demand: np.ndarray, scenarios: list[str],
                probability: np.ndarray) -> PlanInputs:
    """``inp`` with another demand cube (S, K, T) and scenario weights (same classes and periods).

    The cube is in reference GPUs for every class (SLO classes already sized); their requests per second
    are not known for it, so plans of these inputs report no latency table.
    """
    return _refresh_backfill(retree(replace(inp, demand=np.asarray(demand, float), scenarios=list(scenarios),
                                            probability=np.asarray(probability, float), requests=None,
                                            price_names=_names_for(inp, scenarios))))


def _names_for(inp: PlanInputs, scenarios) -> tuple | None:
    """The price scenarios of a new scenario list: kept when the names are the same, else each its own name
    (a forecast's scenarios take the sheet's rows of the same name, or the blank rows)."""
    return inp.price_names if list(scenarios) == list(inp.scenarios) else None


def slice_periods(inp: PlanInputs, index: np.ndarray, purchase_dates: np.ndarray | None = None) -> PlanInputs:
    """``inp`` restricted to the periods at positions ``index`` (a window of a longer history).

    Purchases are dated as the model file's ``[commitments]`` says, within the window, or at the positions
    ``purchase_dates`` of the window when given (a backtest's cut-offs).
    """
    index = np.asarray(index)
    periods, hours = inp.periods[index], inp.hours[index]
    reserved = inp.commitments
    active = None if inp.reserved_active is None else take_periods(inp.reserved_active, index)
    if inp.options is not None and purchase_dates is not None:
        reserved, active = commitments.purchase_table(inp.options, periods, hours, np.asarray(purchase_dates, int),
                                                      strict=False)
    elif inp.options is not None:  # purchases dated in the window, active from their own dates
        reserved, active = reserved_purchases(replace(inp.config, commitments=replace(
            inp.config.commitments, purchase_until=None)), inp.options, periods, hours, strict=False)
    if inp.reserved_source is not None and inp.options is None:  # the tree's rows, sliced: split again
        reserved, active = inp.reserved_source[0], take_periods(inp.reserved_source[1], index)
    return _refresh_backfill(retree(replace(
        inp, periods=periods, hours=hours, demand=inp.demand[:, :, index], commitments=reserved,
        reserved_active=active, reserved_member=None, reserved_source=(reserved, active),
        inventory=inp.inventory[:, index],
        availability=None if inp.availability is None else inp.availability[:, :, index],
        requests=None if inp.requests is None else inp.requests[:, :, index])))


def future_inputs(inp: PlanInputs, start: pd.Timestamp, horizon: int, period_hours: float, demand: np.ndarray,
                  scenarios: list[str], probability: np.ndarray, owned: pd.DataFrame | None = None,
                  dates: np.ndarray | None = None) -> PlanInputs:
    """Inputs of a plan made at ``start`` for the next ``horizon`` periods of ``period_hours`` (a forecast).

    ``demand`` (S, K, horizon) is the forecast; purchases may be dated at ``start`` only, or at the period
    positions ``dates`` (0 first; later ones wait for information when the scenarios branch before them:
    planner.inputs.tree); the commitments owned are the inventory file's plus ``owned`` (rows ``gpu_type, region, gpus, start, end``: purchases
    made earlier, each counted over its own dates). Nothing of ``inp``'s demand is used.
    """
    periods = pd.date_range(pd.Timestamp(start), periods=horizon, freq=pd.Timedelta(hours=period_hours))
    hours = np.full(horizon, float(period_hours))
    pools = list(zip(inp.pools["gpu_type"], inp.pools["region"]))
    inventory = owned_gpus(inp.tables.inventory, pools, periods, hours)
    if owned is not None and len(owned):
        inventory = inventory + owned_gpus(owned, pools, periods, hours)
    at = np.array([0]) if dates is None else np.asarray(dates, int)
    if inp.options is not None:
        reserved, active = commitments.purchase_table(inp.options, periods, hours, at, strict=False)
    else:
        reserved, active = inp.commitments, None
    if len(at) > 1 and inp.options is not None:  # dated purchases over scenarios: the tree the demand implies
        config = replace(inp.config, commitments=replace(inp.config.commitments, non_anticipativity="tree"))
        split, act, member = split_by_node(config, reserved, active, periods, np.asarray(demand, float),
                                           list(scenarios), np.asarray(probability, float),
                                           paths_for(inp.tables.prices, inp.pools, list(scenarios)))
        if member is not None:
            return _refresh_backfill(replace(
                inp, periods=periods, hours=hours, demand=np.asarray(demand, float), scenarios=list(scenarios),
                probability=np.asarray(probability, float), commitments=split, reserved_active=act,
                inventory=inventory, requests=None, discount_origin=periods[0].to_period("M"), availability=None,
                reserved_member=member, reserved_source=(reserved, active), config=config, owned_dated=owned,
                price_names=None))
    paths = paths_for(inp.tables.prices, inp.pools, list(scenarios))
    if paths is not None and paths.reserved and inp.options is not None:
        reserved = paths.price_commitments(reserved, None, np.asarray(probability, float))
    return _refresh_backfill(replace(
        inp, periods=periods, hours=hours, demand=np.asarray(demand, float), scenarios=list(scenarios),
        probability=np.asarray(probability, float), commitments=reserved, reserved_active=active,
        inventory=inventory, requests=None, discount_origin=periods[0].to_period("M"),
        availability=None,  # the future's availability is not known at the cut-off: the sheet's caps
        reserved_member=None, reserved_source=None, owned_dated=owned,  # one purchase date: nothing waits
        price_names=None))


def select_classes(inp: PlanInputs, names: list[str], backfill: bool = True,
                   inventory: bool = True) -> PlanInputs:
    """``inp`` restricted to the classes ``names`` (a pool of its own for them).

    ``backfill = False`` plans the classes' reserved use at full goodput (a fleet of their own: nobody
    reclaims it); ``inventory = False`` leaves the commitments already owned to the other pool.
    """
    ks = np.array([inp.classes.index(n) for n in names], dtype=int)
    remap = {int(k): i for i, k in enumerate(ks)}

    def keep(table):
        if table is None or not len(table):
            return table
        out = table[table["class_index"].isin(ks)].copy()
        out["class_index"] = out["class_index"].map(remap)
        return out.reset_index(drop=True)

    sub = replace(inp, classes=list(names), demand=inp.demand[:, ks], speed=inp.speed[ks],
                  goodput=inp.goodput[ks], reliability=inp.reliability[ks], headroom=inp.headroom[ks],
                  spot_share=inp.spot_share[ks], spot=keep(inp.spot),
                  requests=None if inp.requests is None else inp.requests[:, ks],
                  inventory=inp.inventory if inventory else np.zeros_like(inp.inventory),
                  reserved_useful=None, backfill=None)
    sub = retree(sub)  # scenarios may coincide on these classes where they differed on others
    if not backfill:
        return sub
    return _refresh_backfill(sub)
