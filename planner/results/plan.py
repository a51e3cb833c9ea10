"""Solver values -> :class:`Plan`: tidy tables of what to buy and how it is used, and its costs.

Costs are recomputed here from the plan's quantities and the price sheet (the
formulation's costs), not taken from the solver (tests check that the two agree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from planner.inputs.arrays import PlanInputs
from planner.model import PlanModel
from planner.model.blocks import block_prices
from planner.solve.monolithic import SolveResult, Status
from planner.model.objective import reserved_cost_per_instance
from planner.core.units import EPS, HOURS_PER_MONTH, commitment_usd
from planner.inputs import commitments
from planner.inputs import rented, supply
from planner.inputs.activity import matvec

OPTIONS = supply.BUCKETS  # the cost buckets: ("reserved", "on_demand", "spot", "flex_start")


POSITIONS = ["_k", "_p", "_t"]  # class, pool and period positions kept beside the allocation for vector maths


@dataclass(repr=False)
class Plan:
    """One solved plan: what to buy, how it is used each period, what it costs, and how it was solved.

    Tables are pandas DataFrames with readable labels (``purchases``, ``allocation``, ``fleet``,
    ``shortfall``, ``spot``, ``scenario_costs``, ``latency``, ``backfill``); ``cost`` is the expected
    cost by option (USD over the horizon, the formulation's costs recomputed from the quantities);
    ``status`` says whether it is proven optimal within ``solve.mip_gap``. ``summary()`` is the text
    the CLI prints, ``to_dict()``/``to_json()`` the plan.json contract, ``to_excel(path)`` the workbook.
    """

    name: str
    status: Status
    solve: SolveResult
    inputs: PlanInputs
    purchases: pd.DataFrame  # one row per reserved option (pool x term), bought or not
    allocation_positions: pd.DataFrame  # the allocation with the _k, _p, _t positions (for vector maths)
    fleet: pd.DataFrame  # per scenario, period, pool: reserved owned/used, on-demand, spot
    shortfall: pd.DataFrame  # per scenario, period, class with unmet demand, with its cause
    spot: pd.DataFrame  # spot economics per (class, spot pool) and the spot GPU-hours bought
    scenario_costs: pd.DataFrame  # per scenario: probability and cost by option
    cost: dict  # expected cost by option: reserved, on_demand, spot (any other rented kind sold: flex_start), total
    objective: float  # the formulation's objective, shortfall penalty included
    shortfall_gpu_hours: float
    baseline_all_on_demand: float
    reserved_utilisation: float  # of the working fleet: reserved GPU-hours used / held, the spares held left out
    timings: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    risk: object = None  # planner.results.risk.RiskView for plans over several scenarios
    cvar: dict | None = None  # mean-CVaR plans ([finance] cvar_weight > 0): CVaR and the risk-neutral plan beside
    latency: pd.DataFrame = field(default_factory=pd.DataFrame)  # SLO classes: per scenario, period
    backfill: pd.DataFrame = field(default_factory=pd.DataFrame)  # backfill economics and GPU-hours
    run_id: str = ""  # set when written: the same in plan.json and plan.xlsx
    created_utc: str = ""  # when the files were written (ISO 8601, UTC), with the run id
    shadow_prices: pd.DataFrame | None = None  # planner.solve.duals.shadow_prices, when computed
    budget: pd.DataFrame | None = None  # per [budget] row: name, cap_usd, spend_usd, binding
    commitments: dict = field(default_factory=dict)  # accounting, amortised and full-term cost, liability past H
    cash_schedule: pd.DataFrame = field(default_factory=pd.DataFrame)  # per calendar month to the last term's end
    notes: list = field(default_factory=list)  # sentences the user should read (e.g. how the model was solved)
    finance: dict = field(default_factory=dict)  # discount_rate, objective, npv_usd (the NPV of the cash schedule)
    payment_options: pd.DataFrame = field(default_factory=pd.DataFrame)  # per purchase bought: every payment option
    spend: pd.DataFrame = field(default_factory=pd.DataFrame)  # per savings-plan commitment: USD/h, coverage, use
    coverage: pd.DataFrame = field(default_factory=pd.DataFrame)  # per savings plan, scenario, period, pool: GPUs it paid
    dual_sums: dict | None = None  # shadow-price sums of the row duals of the solve that made the plan (planner.solve.duals)
    recourse: dict | None = None  # a decomposed plan's batches (period positions) and their last bases: warm starts
    memo: object = None  # planner.memo.build.Memo: tranches, downside, commitment curve, cash by year (when computed)
    spares_gpu_hours: float = 0.0  # expected reserved GPU-hours held idle as spares (classes' spares_target)
    term: dict | None = None  # how commitments outliving the horizon were judged (planner.pipeline.whole_term)
    solve_term: object = None  # the whole-term solve that decided the purchases, when they were judged on the term
    spares_peak_gpus: float = 0.0  # the most reserved GPUs held as spares in any period
    weeks_fell_back: int = 0  # a decomposed plan: weekly batches whose plan LP was re-solved at HiGHS's defaults (its
    # tighter settings did not finish; planner.results.decomposed): their tie-broken reading is not held to one answer
    read_fell_back: bool = False  # a plan solved whole whose plan LP did not end optimal (planner.solve.reading): read
    # from the MIP's own solution, its tie-broken reading not held to one answer

    @property
    def allocation(self) -> pd.DataFrame:
        """Long table: scenario, period, hours, workload_class, gpu_type, region, option, gpus, gpu_hours."""
        return self.allocation_positions.drop(columns=POSITIONS)

    @property
    def ok(self) -> bool:
        """True when the solver returned a plan (optimal, or feasible at a limit)."""
        return self.status in (Status.optimal, Status.feasible)

    @property
    def demand_met(self) -> bool:
        """True when there is a plan and it leaves no demand unmet in any scenario and period."""
        return self.ok and self.shortfall_gpu_hours <= 1e-6

    def _require_plan(self) -> None:
        if not self.ok:
            from planner.core.errors import SolverError

            raise SolverError(f"no plan to write: the solver ended {self.status.value}"
                              + (f" ({self.solve.message})" if self.solve.message else ""))
        if not self.run_id:  # one id for every file written from this plan
            import uuid

            self.run_id = uuid.uuid4().hex
            self.created_utc = now_utc()

    @property
    def slo_misses(self) -> pd.DataFrame:
        """Per (scenario, SLO class) whose reported latency misses its SLO: periods missed, of how many, the
        worst latency, and the GPU types it is served on then (empty when every SLO is met)."""
        lat = self.latency
        cols = ["scenario", "workload_class", "periods_missed", "periods", "worst_latency_ms", "latency_slo_ms",
                "slo_percentile", "serving_gpu_types"]
        if not len(lat):
            return pd.DataFrame(columns=cols)
        miss = lat[~lat["slo_met"].astype(bool)]
        if not len(miss):
            return pd.DataFrame(columns=cols)
        g = miss.groupby(["scenario", "workload_class"], sort=False)
        out = g.agg(periods_missed=("slo_met", "size"), worst_latency_ms=("latency_at_percentile_ms", "max"),
                    latency_slo_ms=("latency_slo_ms", "first"), slo_percentile=("slo_percentile", "first"),
                    serving_gpu_types=("serving_gpu_types", lambda x: ", ".join(sorted(set(x))))).reset_index()
        out["periods"] = out["workload_class"].map(lat.groupby("workload_class")["period"].nunique())
        return out[cols]

    @property
    def savings(self) -> float:
        """All-on-demand baseline minus the plan's expected cost (USD)."""
        return self.baseline_all_on_demand - self.cost["total"]

    def __repr__(self) -> str:
        gap = f", gap {self.solve.mip_gap:.1e}" if self.solve.mip_gap is not None else ""
        bought = self.purchases[self.purchases["instances"] > 0]
        return (f"<Plan '{self.name}': {self.status.value}{gap}, total ${self.cost['total']:,.0f} "
                f"(reserved ${self.cost['reserved']:,.0f}, on-demand ${self.cost['on_demand']:,.0f}, "
                f"spot ${self.cost['spot']:,.0f}"
                + "".join(f", {k.replace('_', '-')} ${self.cost[k]:,.0f}" for k in rented.reported(self.inputs.pools)
                          if k not in rented.ALWAYS)
                + f"), {len(bought)} reserved option(s) bought, "
                f"shortfall {self.shortfall_gpu_hours:,.1f} GPU-h; {self.inputs.T} periods x {self.inputs.K} "
                f"classes x {self.inputs.P} pools, {self.solve.backend} {self.solve.seconds:.1f} s>")

    def _repr_html_(self) -> str:  # notebooks: the same line, not a 20,000-character dump
        import html

        return f"<pre>{html.escape(repr(self))}</pre>"

    def summary(self) -> str:
        """The terminal summary the CLI prints (costs, purchases, savings, spot, shortfall)."""
        return _writer("summary")(self)

    def to_dict(self) -> dict:
        """The plan.json contract as a dict (see docs/workbook.md)."""
        import json

        return json.loads(self.to_json())

    def to_json(self, path: str | Path | None = None) -> str:
        """plan.json as text; also written (whole or not at all) to ``path`` when given."""
        from planner.core.atomic import atomic_path

        self._require_plan()
        text = _writer("json")(self)
        if path is not None:
            with atomic_path(Path(path)) as tmp:
                tmp.write_text(text, encoding="utf-8")
        return text

    def to_excel(self, path: str | Path) -> Path:
        """Write the workbook (plan.xlsx: live formulas over the Prices sheet) to ``path``, whole or not at all."""
        from planner.core.atomic import atomic_path

        self._require_plan()
        path = Path(path)
        with atomic_path(path) as tmp:
            _writer("workbook")(self, tmp)
        return path


# The writers a Plan's methods use (summary text, plan.json text, the workbook), registered by planner.pipeline.run
# when it is imported: results holds data and knows no report module (data flows one way, to the reports).
WRITERS: dict = {}


def register_writers(**writers) -> None:
    """Register the functions ``Plan.summary()``, ``to_json()`` and ``to_excel()`` call (pipeline does)."""
    WRITERS.update(writers)


def _writer(name: str):
    if name not in WRITERS:  # a Plan made without the report layer loaded (unpickled, built by hand): load it
        import importlib  # the one way up, by name: a plugin hook the report layer registers (report/__init__.py)

        importlib.import_module("planner.report")
    return WRITERS[name]


def now_utc() -> str:
    """Now, ISO 8601 in UTC to the second (the run timestamp of plan.json and the workbook)."""
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


def _periods(arr: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``arr[..., idx]``: per period from per block; ``arr`` itself (no copy) where every period is its own block."""
    if len(idx) == arr.shape[-1] and np.array_equal(idx, np.arange(len(idx))):
        return arr
    return arr[..., idx]


def _dense(frame: pd.DataFrame, values: np.ndarray, shape: tuple, keys: tuple[str, ...]) -> np.ndarray:
    """The family's column values laid out by its keys (``shape``), values below ``EPS`` read as 0 (the solver's
    noise: set to 0 on the family's columns, not on the whole array)."""
    out = np.zeros(shape)
    if len(frame):
        got = values[frame["col"].to_numpy()]
        got[got < EPS] = 0.0
        out[tuple(frame[k].to_numpy() for k in keys)] = got
    return out


def spares_gpu_hours(inp: PlanInputs) -> np.ndarray:
    """(K,) expected reference GPU-hours of the spares each class asks for (``spares_target``; 0 without)."""
    from planner.model.constraints import spares_of

    got = spares_of(inp, np.moveaxis(inp.demand, 1, 0))  # (K, S, T)
    if got is None:
        return np.zeros(inp.K)
    return np.einsum("s,kst,t->k", inp.probability, got[0], inp.hours)


def need_gpu_hours(inp: PlanInputs) -> np.ndarray:
    """(K,) the expected reference GPU-hours each class needs served: its demand with headroom, and its spares
    (held whole however the demand is served: the all-on-demand baseline rents them too)."""
    return (np.einsum("s,skt,t->k", inp.probability, inp.demand, inp.hours) * (1 + inp.headroom)
            + spares_gpu_hours(inp))


def _path_need_and_price(inp: PlanInputs) -> tuple[np.ndarray, np.ndarray]:
    """(need, cheapest) per (scenario, class, period) under a price path: the need (demand with headroom, and
    spares) and the cheapest allowed on-demand USD per reference GPU-hour in that period (inf: no pool)."""
    from planner.model.constraints import spares_of

    od_t = inp.rented_price_path[:, rented.index("on_demand")]  # (S, P, T)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where((inp.speed > 0)[None, :, :, None],
                       od_t[:, None, :, :] / (inp.speed * inp.reliability)[None, :, :, None], np.inf)
    per = np.where(np.isnan(per), np.inf, per).min(axis=2)  # (S, K, T)
    need = inp.demand * (1 + inp.headroom)[None, :, None]
    got = spares_of(inp, np.moveaxis(inp.demand, 1, 0))
    if got is not None:
        need = need + np.moveaxis(got[0], 0, 1)
    return need, per


def baseline_by_class(inp: PlanInputs) -> np.ndarray:
    """(K,) each class's all-on-demand baseline when on-demand prices change over time or by scenario (a price
    path): its need in each scenario and period at that period's cheapest allowed on-demand price."""
    need, per = _path_need_and_price(inp)
    return np.einsum("s,skt,t->k", inp.probability, np.where(need > 0, need * np.where(np.isinf(per), 0.0, per), 0.0),
                     inp.hours)


def baseline_all_on_demand(inp: PlanInputs) -> float:
    """Cost of serving the same need (demand with headroom, and the spares a class asks for) all on-demand at each
    class's cheapest allowed pool."""
    ref_hours = need_gpu_hours(inp)
    if inp.rented_price_path is not None:  # on-demand prices change over time or by scenario: the cheapest pool
        need, per = _path_need_and_price(inp)  # in each period
        if np.any(np.isinf(per) & (need > 0)):
            return float("nan")
        return float(baseline_by_class(inp).sum())
    od = inp.pools["od"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_ref = np.where(inp.speed > 0, od[None, :] / (inp.speed * inp.reliability), np.inf)
    per_ref = np.where(np.isnan(per_ref), np.inf, per_ref)
    cheapest = per_ref.min(axis=1)  # (K,)
    if np.any(np.isinf(cheapest) & (ref_hours > 0)):
        return float("nan")
    return float(np.sum(np.where(ref_hours > 0, ref_hours * cheapest, 0.0)))


def whole_units(inp: PlanInputs, n: np.ndarray) -> np.ndarray:
    """Purchases as solved, read as bought: instances whole; a savings plan's USD per hour as is (below 1e-9: 0)."""
    n = np.asarray(n, float)
    if not len(n):
        return n
    whole = inp.commitments["integer"].to_numpy(bool)
    return np.where(whole, np.rint(n), np.where(np.abs(n) < 1e-9, 0.0, n))


def gap_hours(inp: PlanInputs) -> np.ndarray:
    """Per commitments row: the hours of its term that fall in the horizon's gaps (from one period's end to the next
    period's start, where the demand skips time). They are before the horizon's end, yet not in its active hours."""
    res = inp.commitments
    out = np.zeros(len(res))
    if not len(res) or inp.T < 2 or "active_from" not in res:
        return out
    periods = pd.DatetimeIndex(inp.periods)
    ends = (periods[:-1] + pd.to_timedelta(np.asarray(inp.hours[:-1], float), unit="h")).asi8
    starts = periods[1:].asi8
    gap = starts > ends
    if not gap.any():
        return out
    a = pd.DatetimeIndex(res["active_from"]).asi8[:, None]
    e = pd.DatetimeIndex(res["end_date"]).asi8[:, None]
    ns = np.clip(np.minimum(e, starts[gap][None, :]) - np.maximum(a, ends[gap][None, :]), 0, None)
    return ns.sum(axis=1) / 3.6e12


def commitment_costs(inp: PlanInputs, n: np.ndarray) -> dict:
    """What purchases ``n`` cost: ``plan.commitments`` (accounting, amortised and full-term USD, the liability past
    the horizon) and ``reserved_usd``, the one of the two the plan's accounting counts. The liability past the
    horizon is the full term less the horizon's active hours (so amortised + past = full term); of it,
    ``liability_in_gaps_usd`` is owed in the horizon's gaps (:func:`gap_hours`: before the horizon ends, though the
    plan has no period there), 0 where the periods leave no gap."""
    res = inp.commitments
    amortised = float(np.sum(n * reserved_cost_per_instance(inp, "amortised"))) if len(res) else 0.0
    full_term = float(np.sum(n * reserved_cost_per_instance(inp, "full_term"))) if len(res) else 0.0
    in_gaps = float(np.sum(n * inp.reserved_weight * res["m"].to_numpy(float) * res["r"].to_numpy(float)
                           * gap_hours(inp))) if len(res) else 0.0
    accounting = inp.config.commitments.accounting
    return {"accounting": accounting, "reserved_amortised_usd": amortised, "reserved_full_term_usd": full_term,
            "liability_past_horizon_usd": full_term - amortised, "liability_in_gaps_usd": in_gaps,
            "reserved_usd": full_term if accounting == "full_term" else amortised}


def extract_plan(inp: PlanInputs, model: PlanModel, result: SolveResult, timings: dict | None = None,
                 allocation: bool = True, detail: bool = True) -> Plan:
    """The :class:`Plan` of a solved model: quantities in tidy tables, costs recomputed from the price sheet.

    ``allocation=False`` leaves the per-class allocation table empty (the figures of a re-solve need the fleet and
    the costs only: the memo's; a tenth of the memory on a year of hours). ``detail=False`` also leaves out what
    those figures (:func:`planner.memo.resolve.plan_figures`) never read: every payment option of each purchase,
    the spot table's reasons, the latency and savings-plan coverage tables (empty tables instead)."""
    K, P, T, S = inp.K, inp.P, inp.T, len(inp.scenarios)
    fam, v, blocks = model.families, result.values, model.blocks
    have = result.status in (Status.optimal, Status.feasible)
    if not have:
        v = np.zeros(model.n_variables)
    B = blocks.B
    n = whole_units(inp, v[fam["n"]["col"].to_numpy()] if len(fam["n"]) else np.zeros(0))
    Xb = _dense(fam["x"], v, (K, P, B), ("k", "p", "b"))
    kinds = rented.reported(inp.pools)  # on-demand, spot, and any other rented kind a pool sells
    J = max([rented.index(kd) + 1 for kd in kinds] + [int(fam["r"]["j"].max()) + 1 if len(fam["r"]) else 0])
    Rb = _dense(fam["r"], v, (J, K, P, B), ("j", "k", "p", "b"))  # the rented kinds up to the last a pool sells
    # (views below: on-demand, spot; a kind no pool sells, e.g. flex-start, takes no (K, P, B) array)
    Yb, Zb = Rb[rented.index("on_demand")], Rb[rented.index("spot")]
    Ub = _dense(fam["u"], v, (K, B), ("k", "b"))
    has_xd = "xd" in fam and len(fam["xd"]) > 0  # backfill classes' GPUs of their own
    Xd = _dense(fam["xd"], v, (K, P, B), ("k", "p", "b")) if has_xd else None
    _trim_free_surplus(inp, blocks, Xb, Rb, Ub, Xd)
    Xrisk = Xb  # backfilled (at risk) reserved use; Xb becomes all reserved use (a new array, with Xd)
    if has_xd:
        Xb = Xb + Xd

    res = inp.commitments
    m_res = np.where(res["pool"].to_numpy(int) >= 0, res["m"].to_numpy(float), 0.0)  # a savings plan holds no GPU
    # reserved GPUs bought and active in each period (dated purchases: each from its date, for its term)
    active_t = inp.active  # (R, T)
    owned_bought = _by_pool(res["pool"].to_numpy(int), m_res * n, active_t, P)
    owned_block = np.zeros((P, B))
    if len(res) and blocks.active is not None:
        owned_block = _by_pool(res["pool"].to_numpy(int), m_res * n, blocks.active, P)
    w = blocks.weight
    held = _spares_held(inp, blocks, Xb, owned_block)  # (P, B) reserved GPUs idle as spares
    commitments = commitment_costs(inp, n)
    reserved_cost = commitments.pop("reserved_usd")
    Vb = _covered(inp, fam, v, (P, B))  # on-demand GPUs paid by savings plans
    price_b = block_prices(inp, blocks)  # (J, P, B)
    rent_cost = {kind: float(np.einsum("kpb,b,pb->", Rb[rented.index(kind)], w, price_b[rented.index(kind)]))
                 for kind in kinds}
    rent_cost["on_demand"] -= float(np.einsum("pb,b,pb->", Vb, w, price_b[rented.index("on_demand")]))  # savings plans pay
    short_hours = float(Ub.sum(axis=0) @ w)
    short_usd = float(inp.penalty_by_class @ (Ub @ w))  # each class's shortfall at its own penalty
    total = reserved_cost
    for usd in rent_cost.values():
        total += usd
    cost = {"reserved": reserved_cost, **rent_cost, "total": total}
    if model.user_columns:  # columns added through the extension hook: their cost is part of the plan's
        ext = np.concatenate(list(model.user_columns.values()))
        cost["extension"] = float(model.cost[ext] @ v[ext]) if have else 0.0
        cost["total"] += cost["extension"]
    objective = cost["total"] + short_usd
    if inp.config.finance.npv and have:  # the objective the solver minimised: the NPV, shortfall discounted too
        objective = float(model.untied_cost() @ v)

    purchases = purchases_table(inp, n)

    # expand blocks to (scenario, period)
    of = blocks.of  # (S, T)
    hours = inp.hours
    frames, fleet_rows = [], []
    for s, scen in enumerate(inp.scenarios):
        idx = of[s]
        for option, arr in ((("reserved", Xb),) + tuple((kd, Rb[rented.index(kd)]) for kd in kinds)
                            if allocation else ()):
            sub = _periods(arr, idx)  # (K, P, T)
            k, p, t = np.nonzero(sub)
            if not len(k):
                continue
            frames.append(pd.DataFrame({
                "scenario": scen, "period": inp.periods[t], "hours": hours[t],
                "workload_class": np.asarray(inp.classes, dtype=object)[k],
                "gpu_type": inp.pools["gpu_type"].to_numpy()[p], "region": inp.pools["region"].to_numpy()[p],
                "option": option, "gpus": sub[k, p, t], "_k": k, "_p": p, "_t": t}))
        owned = inp.inventory + (owned_bought if inp.reserved_member is None else  # a tree: this scenario's rows
                                 _owned(inp, m_res * n * inp.reserved_member[:, s], active_t))  # (P, T)
        fleet_rows.append(pd.DataFrame({
            "scenario": scen,
            "period": np.tile(inp.periods, P), "hours": np.tile(hours, P),
            "gpu_type": np.repeat(inp.pools["gpu_type"].to_numpy(), T),
            "region": np.repeat(inp.pools["region"].to_numpy(), T),
            "reserved_owned": owned.reshape(-1),
            "reserved_used": _periods(Xb.sum(axis=0), idx).reshape(-1),
            "on_demand": _periods(Yb.sum(axis=0), idx).reshape(-1),
            "spot": _periods(Zb.sum(axis=0), idx).reshape(-1),
            **{kd: _periods(Rb[rented.index(kd)].sum(axis=0), idx).reshape(-1) for kd in kinds
               if kd not in rented.ALWAYS},            "on_demand_covered": _periods(Vb, idx).reshape(-1),  # of the on-demand GPUs, those savings plans pay
            "reserved_spares": _periods(held, idx).reshape(-1)}))  # of the idle reserved GPUs, those held as spares
    cols = ["scenario", "period", "hours", "workload_class", "gpu_type", "region", "option", "gpus"]
    allocation = (pd.concat(frames, ignore_index=True) if frames  # nothing served: an empty table, typed
                  else pd.DataFrame({c: pd.Series(dtype="datetime64[ns]" if c == "period" else
                                                  (float if c in ("hours", "gpus") else
                                                   (int if c in POSITIONS else object)))
                                     for c in cols + POSITIONS}))
    allocation["gpu_hours"] = allocation["gpus"] * allocation["hours"]
    allocation = allocation.sort_values(["scenario", "period", "workload_class", "gpu_type", "region", "option"],
                                        kind="stable").reset_index(drop=True)
    fleet = pd.concat(fleet_rows, ignore_index=True)

    used = (Xb * w).sum() if B else 0.0  # (summed as the fleet's capacity below: full use reads exactly 1)
    spares_hours = float((held * w[None, :]).sum())
    # the working fleet's utilisation: spares are held idle on purpose, not waste
    avail = float((owned_block * w[None, :]).sum() + (blocks.inventory * w[None, :]).sum()) - spares_hours
    utilisation = float(used / avail) if avail > 0 else float("nan")

    scenario_costs = _scenario_costs(inp, blocks, Rb, kinds, Ub, reserved_by_scenario(inp, n, reserved_cost), Vb)
    from planner.model.budget import budget_activity

    budget = budget_activity(model, v) if have else budget_activity(model, np.zeros(model.n_variables))
    shortfall = _shortfall(inp, blocks, Xb, Yb, Zb, Ub, owned_block,
                           set(budget.loc[budget["binding"].astype(bool), "name"]))
    cash = _cash(inp, blocks, Rb, kinds, purchases, Vb)
    spend = _spend_table(inp, fam, v, blocks, purchases)
    coverage = _coverage(inp, fam, v, blocks) if detail else pd.DataFrame()
    finance, payments = _finance(inp, purchases, cash, detail)
    spot = inp.spot.copy()
    if len(spot):
        zh = np.einsum("kpb,b->kp", Zb, w)
        spot["spot_gpu_hours"] = zh[spot["class_index"].to_numpy(), spot["pool"].to_numpy()]
        spot["why"] = [_spot_reason(inp, row) for row in spot.itertuples()] if detail else ""
    latency = _latency(inp, blocks, Xb, Yb) if detail else pd.DataFrame()
    backfill = inp.backfill.copy() if inp.backfill is not None and len(inp.backfill) else pd.DataFrame()
    if len(backfill):
        xh = np.einsum("kpb,b->kp", Xrisk, w)
        dh = np.einsum("kpb,b->kp", Xd, w) if has_xd else np.zeros((K, P))
        kk, pp = backfill["class_index"].to_numpy(), backfill["pool"].to_numpy()
        backfill["backfilled_gpu_hours"] = xh[kk, pp]
        backfill["own_reserved_gpu_hours"] = dh[kk, pp]
        backfill["useful_gpu_hours"] = backfill["backfilled_gpu_hours"] * backfill["goodput"]
    stats = {"variables": model.n_variables, "constraints": model.n_constraints, "blocks": B,
             "periods": T, "scenarios": S, "classes": K, "pools": P,
             "integer_variables": int(len(fam["n"])), "rows_per_family": dict(model.rows)}
    if model.user_columns:
        stats["extensions"] = sorted(model.user_columns)
    return Plan(name=inp.config.name, status=result.status, solve=result, inputs=inp, purchases=purchases,
                allocation_positions=allocation[cols + ["gpu_hours"] + POSITIONS], fleet=fleet, shortfall=shortfall,
                spot=spot, scenario_costs=scenario_costs, cost=cost, objective=objective,
                shortfall_gpu_hours=short_hours, baseline_all_on_demand=baseline_all_on_demand(inp),
                reserved_utilisation=utilisation, timings=dict(timings or {}), stats=stats,
                latency=latency, backfill=backfill, commitments=commitments, cash_schedule=cash, budget=budget,
                finance=finance, payment_options=payments, spend=spend, coverage=coverage,
                spares_gpu_hours=spares_hours, spares_peak_gpus=float(held.sum(axis=0).max()) if held.size else 0.0)


def _spares_held(inp: PlanInputs, blocks, X: np.ndarray, owned_block: np.ndarray) -> np.ndarray:
    """(P, B) reserved GPUs held idle as the classes' spares: each pool's spares (``spares_target``, in its own
    GPUs) up to its reserved GPUs left idle by the work (``X``: the reserved use, trimmed to the demand)."""
    from planner.model.constraints import spares_of

    out = np.zeros((inp.P, blocks.B))
    got = spares_of(inp, blocks.demand)
    if got is None:
        return out
    _ref, physical, pool = got
    on = pool >= 0
    np.add.at(out, pool[on], physical[on])
    idle = np.clip(owned_block + blocks.inventory - X.sum(axis=0), 0.0, None)
    return np.minimum(out, idle)


def _finance(inp: PlanInputs, purchases: pd.DataFrame, cash: pd.DataFrame,
             options: bool = True) -> tuple[dict, pd.DataFrame]:
    """The plan's NPV at ``[finance] discount_rate`` (its whole cash schedule, to the last term's end), each
    purchase's NPV (a column of ``purchases``) and every payment option of each purchase bought (``options=False``:
    an empty table)."""
    from planner.inputs.finance import cash_npv, payment_options, purchase_npv_per_gpu

    f = inp.config.finance
    origin = inp.discount_origin or (inp.periods[0].to_period("M") if inp.T else None)
    purchases["npv_usd"] = purchases["quantity"].to_numpy(float) * purchase_npv_per_gpu(inp.commitments, origin,
                                                                                     f.discount_rate) \
        if len(purchases) else 0.0
    doc = {"discount_rate": f.discount_rate, "objective": f.objective,
           "npv_usd": cash_npv(cash, origin, f.discount_rate) if origin is not None else 0.0}
    return doc, payment_options(inp, purchases) if options else pd.DataFrame()


def _owned(inp: PlanInputs, gpus: np.ndarray, active_t: np.ndarray) -> np.ndarray:
    """(P, T) reserved GPUs of the purchase rows (``gpus`` each) active in each pool and period."""
    return _by_pool(inp.commitments["pool"].to_numpy(int), gpus, active_t, inp.P)


def _by_pool(pool: np.ndarray, gpus: np.ndarray, active: np.ndarray, P: int) -> np.ndarray:
    """(P, columns of ``active``): per pool, the sum over its purchase rows of ``gpus`` x ``active`` (R, columns);
    rows that hold nothing (none bought, or a savings plan: pool -1) are skipped, so a three-year plan's
    (R, T) activity is never copied or multiplied whole."""
    keep = np.flatnonzero((np.asarray(gpus) != 0) & (pool >= 0))
    weights = np.zeros((P, len(keep)))
    weights[pool[keep], np.arange(len(keep))] = np.asarray(gpus, float)[keep]
    if not len(keep):
        return np.zeros((P, active.shape[1]))
    if isinstance(active, np.ndarray):
        return weights @ np.asarray(active[keep], float)
    out = np.empty((P, active.shape[1]))  # a block activity held as its factors: read in slices of blocks
    step = max(1, (1 << 22) // len(keep))
    for a0 in range(0, active.shape[1], step):
        out[:, a0:a0 + step] = weights @ active[keep[:, None], np.arange(a0, min(a0 + step, active.shape[1]))[None, :]]
    return out


def purchases_table(inp: PlanInputs, n: np.ndarray) -> pd.DataFrame:
    """One row per purchase row of the inputs (reserved option x purchase date), bought or not.

    Per GPU: ``hourly_usd``, ``upfront_usd``, ``residual_usd``, ``effective_usd_per_gpu_hour``. For the GPUs
    bought: ``horizon_cost_usd`` (amortised: effective rate x active horizon hours), ``commitment_usd``
    (the whole term's liability), ``liability_past_horizon_usd`` (the difference), ``upfront_total_usd``
    (paid on the purchase date), ``residual_total_usd`` (back at the end of the term) and
    ``monthly_recurring_usd`` (hourly x 730).
    """
    res = inp.commitments
    cols = ["gpu_type", "region", "option", "kind", "term_months", "hourly_usd", "upfront_usd", "r", "m",
            "purchase_date", "active_from", "end_date", "firm", "lead_time_months", "residual_usd",
            "hours_active", "valid_from", "cash_date", "block_start", "block_days", "provider", "plan_family", "parent"]
    purchases = res[[c for c in cols if c in res]].copy()
    purchases = purchases.rename(columns={"r": "effective_usd_per_gpu_hour", "m": "gpus_per_instance"})
    spend = commitments.is_spend(purchases)
    purchases["branch"] = res["branch"].to_numpy() if "branch" in res else "all"  # the scenarios it is bought in
    purchases["probability"] = inp.reserved_weight  # theirs: 1 for a purchase made whatever happens
    purchases["units"] = n  # the first-stage decision: instances, or USD per hour for a savings plan
    purchases["quantity"] = n * res["m"].to_numpy(float)  # GPUs, or USD per hour: what the per-unit prices multiply
    purchases["instances"] = np.where(spend, 0, n).astype(int)
    purchases["gpus"] = np.where(spend, 0.0, n * res["m"].to_numpy(float))
    gpus = purchases["quantity"]  # the costs below are per GPU, or per USD/h for a savings plan
    hours = purchases["hours_active"] if "hours_active" in purchases else inp.horizon_hours
    purchases["horizon_cost_usd"] = gpus * purchases["effective_usd_per_gpu_hour"] * hours
    residual = purchases["residual_usd"] if "residual_usd" in purchases else 0.0
    purchases["commitment_usd"] = gpus * (commitment_usd(purchases["hourly_usd"], purchases["upfront_usd"],
                                                         purchases["term_months"]) - residual)
    purchases["liability_past_horizon_usd"] = purchases["commitment_usd"] - purchases["horizon_cost_usd"]
    purchases["upfront_total_usd"] = gpus * purchases["upfront_usd"]  # paid on the purchase date
    purchases["residual_total_usd"] = gpus * residual  # comes back when the term ends
    purchases["monthly_recurring_usd"] = gpus * purchases["hourly_usd"] * HOURS_PER_MONTH
    return purchases


def _covered(inp: PlanInputs, fam, v: np.ndarray, shape: tuple) -> np.ndarray:
    """(P, B) on-demand GPUs covered by the savings plans (summed over the commitments)."""
    out = np.zeros(shape)
    f = fam.get("v")
    if f is not None and len(f):
        np.add.at(out, (f["p"].to_numpy(int), f["b"].to_numpy(int)), np.clip(v[f["col"].to_numpy()], 0.0, None))
    return out


def _coverage(inp: PlanInputs, fam, v: np.ndarray, blocks) -> pd.DataFrame:
    """Per savings-plan row ``c``, scenario, period and pool: the on-demand GPUs it paid, at its ``rate``."""
    cols = ["c", "scenario", "period", "hours", "gpu_type", "region", "_p", "gpus", "rate"]
    f = fam.get("v")
    if f is None or not len(f):
        return pd.DataFrame(columns=cols)
    x = np.clip(v[f["col"].to_numpy()], 0.0, None)
    keep = x > 1e-9
    cv = pd.DataFrame({"c": f["c"].to_numpy()[keep], "_p": f["p"].to_numpy()[keep], "b": f["b"].to_numpy()[keep],
                       "gpus": x[keep], "rate": f["rate"].to_numpy(float)[keep]})
    frames = []
    for s, scen in enumerate(inp.scenarios):
        bt = pd.DataFrame({"b": blocks.of[s], "t": np.arange(inp.T)})
        m = cv.merge(bt, on="b")
        frames.append(pd.DataFrame({"c": m["c"].to_numpy(), "scenario": scen, "period": inp.periods[m["t"].to_numpy()],
                                    "hours": inp.hours[m["t"].to_numpy()],
                                    "gpu_type": inp.pools["gpu_type"].to_numpy()[m["_p"].to_numpy()],
                                    "region": inp.pools["region"].to_numpy()[m["_p"].to_numpy()],
                                    "_p": m["_p"].to_numpy(), "gpus": m["gpus"].to_numpy(),
                                    "rate": m["rate"].to_numpy()}))
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)


def _spend_table(inp: PlanInputs, fam, v: np.ndarray, blocks, purchases: pd.DataFrame) -> pd.DataFrame:
    """One row per savings-plan commitment row: USD per hour committed, its cost, the usage it covered (GPU-hours,
    and USD at its rates and at on-demand) and its utilisation (covered USD at its rates / USD committed)."""
    cols = ["row", "option", "plan_family", "purchase_date", "end_date", "firm", "usd_per_hour", "hours_active",
            "committed_usd", "covered_gpu_hours", "covered_at_rates_usd", "covered_at_on_demand_usd",
            "utilisation", "savings_usd", "branch", "probability"]
    res = inp.commitments
    if not commitments.is_spend(res).any():
        return pd.DataFrame(columns=cols)
    rows = np.flatnonzero(commitments.is_spend(res))
    f = fam["v"]
    x = np.clip(v[f["col"].to_numpy()], 0.0, None) if len(f) else np.zeros(0)
    c, p, b = (f[k].to_numpy(int) for k in ("c", "p", "b")) if len(f) else (np.zeros(0, int),) * 3
    od = block_prices(inp, blocks)[rented.index("on_demand")]  # (P, B): a dated or scenario price where one applies
    gh = np.bincount(c, weights=x * blocks.weight[b], minlength=len(res))
    at_rates = np.bincount(c, weights=x * blocks.weight[b] * f["rate"].to_numpy(float), minlength=len(res)) \
        if len(f) else np.zeros(len(res))
    at_od = np.bincount(c, weights=x * blocks.weight[b] * od[p, b], minlength=len(res)) if len(f) else np.zeros(len(res))
    C = purchases["units"].to_numpy(float)
    hours = matvec(inp.active, inp.hours)
    committed = C * hours
    # a branch's savings plan (the scenario tree): its usage given its branch, like its commitment
    w = np.maximum(inp.reserved_weight, 1e-12)
    gh, at_rates, at_od = gh / w, at_rates / w, at_od / w
    out = pd.DataFrame({"row": rows, "option": res["option"].to_numpy()[rows],
                        "plan_family": res["plan_family"].to_numpy()[rows],
                        "purchase_date": res["purchase_date"].to_numpy()[rows],
                        "end_date": res["end_date"].to_numpy()[rows], "firm": res["firm"].to_numpy()[rows],
                        "usd_per_hour": C[rows], "hours_active": hours[rows], "committed_usd": committed[rows],
                        "covered_gpu_hours": gh[rows], "covered_at_rates_usd": at_rates[rows],
                        "covered_at_on_demand_usd": at_od[rows]})
    out["utilisation"] = np.divide(out["covered_at_rates_usd"], out["committed_usd"],
                                   out=np.zeros(len(out)), where=out["committed_usd"].to_numpy() > 0)
    out["savings_usd"] = out["covered_at_on_demand_usd"] - out["committed_usd"]
    out["branch"] = res["branch"].to_numpy()[rows] if "branch" in res else "all"
    out["probability"] = inp.reserved_weight[rows]
    return out[cols]


def _cash(inp: PlanInputs, blocks, Rb, kinds, purchases: pd.DataFrame, Vb: np.ndarray | None = None) -> pd.DataFrame:
    """The plan's cash per calendar month (ladder.cash_schedule): expected on-demand (net of what savings plans
    cover), spot and any other rented kind over scenarios; every commitment's upfront and recurring cash."""
    from planner.inputs.ladder import cash_schedule

    month = inp.periods.strftime("%Y-%m")
    price = block_prices(inp, blocks)  # (J, P, B)
    by_kind = {}
    for kd in kinds:
        per_block = np.einsum("kpb,pb->b", Rb[rented.index(kd)], price[rented.index(kd)])
        if supply.is_(kd, covered_by_spend=True) and Vb is not None:  # savings plans pay for part of the on-demand use
            per_block = per_block - (Vb * price[rented.index(kd)]).sum(axis=0)
        t = (inp.probability[:, None] * per_block[blocks.of]).sum(axis=0) * inp.hours  # (T,)
        by_kind[kd] = pd.Series(t, index=month).groupby(level=0).sum()
    bought = purchases[purchases["quantity"].abs() > 0]  # a resale: negative GPUs, money back
    if "probability" in bought and (bought["probability"] < 1).any():  # a tree: each branch's cash, expected
        bought = bought.assign(quantity=bought["quantity"] * bought["probability"])
    return cash_schedule(bought, inp.periods, by_kind.pop("on_demand"), by_kind.pop("spot"), by_kind)


def _latency(inp: PlanInputs, blocks, Xb, Yb) -> pd.DataFrame:
    """Per SLO class, scenario and period: load, replicas provisioned and the latency they give.

    Each GPU type of the class's ``replicas`` table is queued with its own service time: its replicas are
    the reserved and on-demand GPUs of that type the plan gives the class, divided by that type's GPUs per
    replica (rounded down). Served on one type, the latency is that type's M/M/c (Erlang C) exactly; served
    on several, requests are split between the types in proportion to their capacity (replicas / service
    time) and P(latency > x) is the load-weighted mixture of the types' tails (separate queues: an upper
    bound on one shared queue's latency). ``gpus`` stays in reference-type GPUs (the units of demand).
    """
    if inp.requests is None:
        return pd.DataFrame()
    types = inp.pools["gpu_type"].to_numpy()
    frames = []
    for k, name in enumerate(inp.classes):
        spec = inp.config.classes[name].slo
        if spec is None:
            continue
        prov = np.einsum("p,pb->b", inp.speed[k], Xb[k] + Yb[k])  # (B,) reference GPUs
        reps = np.stack([np.floor((Xb[k] + Yb[k])[types == r.gpu_type].sum(axis=0) / r.gpus_per_replica + 1e-6)
                         for r in spec.replicas])  # (J, B) replicas of each type
        service = np.array([r.service_ms / 1000.0 for r in spec.replicas])
        for s, scen in enumerate(inp.scenarios):
            lam = inp.requests[s, k]
            c = reps[:, blocks.of[s]].astype(np.int64)  # (J, T)
            pct, above = _mixed_latency(lam, c, service, spec)
            used = c > 0
            label = np.array(["+".join(r.gpu_type for r, u in zip(spec.replicas, col) if u) or "-"
                              for col in used.T]) if len(spec.replicas) > 1 else np.full(inp.T, spec.replicas[0].gpu_type)
            frames.append(pd.DataFrame({
                "scenario": scen, "period": inp.periods, "hours": inp.hours, "workload_class": name,
                "requests_per_s": lam, "replicas": c.sum(axis=0), "serving_gpu_types": label,
                "gpus": prov[blocks.of[s]],
                "latency_slo_ms": spec.latency_slo_ms, "slo_percentile": spec.percentile,
                "latency_at_percentile_ms": pct * 1000.0, "p_latency_above_slo": above,
                "slo_met": pct * 1000.0 <= spec.latency_slo_ms * (1 + 1e-9)}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _mixed_latency(lam: np.ndarray, c: np.ndarray, service: np.ndarray, spec) -> tuple[np.ndarray, np.ndarray]:
    """(latency at the percentile in s, P(latency > SLO)) per period for ``c[j, t]`` replicas of type j.

    One type serving: that type's M/M/c exactly. Several: capacity-proportional split, mixture of tails;
    the percentile of the mixture by bisection between the smallest and largest of the types' own.
    """
    from planner.sizing import queueing

    J, T = c.shape
    cap = c / service[:, None]  # requests per second each type can serve
    total = cap.sum(axis=0)
    share = np.divide(cap, total, out=np.zeros_like(cap), where=total > 0)  # (J, T)
    share[0, total <= 0] = 1.0  # no replicas at all: the reference type's (unstable, inf) figures
    slo = spec.latency_slo_ms / 1000.0
    own = np.stack([queueing.latency_percentile(spec.percentile, lam * share[j], service[j], c[j], spec.service_cv)
                    for j in range(J)])  # (J, T)
    tails = lambda x: sum(share[j] * np.where(share[j] > 0, queueing.p_latency_above(  # noqa: E731
        x, lam * share[j], service[j], c[j], spec.service_cv), 0.0) for j in range(J))
    above = np.where(lam > 0, tails(np.full(T, slo)), 0.0)
    served = share > 0
    n = served.sum(axis=0)
    single = np.where(served, own, 0.0).sum(axis=0)
    if (n <= 1).all():
        return single, above
    lo = np.where(served, own, np.inf).min(axis=0)
    hi = np.where(served, own, -np.inf).max(axis=0)  # the mixture's percentile lies between the types' own
    mixed = (n > 1) & np.isfinite(hi) & (lam > 0)
    target = 1.0 - spec.percentile / 100.0
    a, b = np.where(mixed, lo, 0.0), np.where(mixed, hi, 0.0)
    for _ in range(60):
        mid = 0.5 * (a + b)
        up = tails(mid) > target
        a, b = np.where(up, mid, a), np.where(up, b, mid)
    # no load on several types: the slower type's service percentile; unstable: inf (the types' own)
    return np.where(n <= 1, single, np.where(mixed, b, hi)), above


def _trim_free_surplus(inp: PlanInputs, blocks, Xb, Rb, Ub, Xd=None) -> None:
    """Reserved GPUs cost nothing to use, so a solver may assign more than a class needs.

    Cut each class's reserved use down to its demand with headroom (the cost is
    unchanged: reserved use is free) so that allocation and utilisation mean what
    they say. Works on all (class, block) pairs at once, one pool at a time.
    """
    q = inp.q_reserved  # (K, P)
    qd = inp.speed * inp.reliability
    cover = (np.einsum("kp,kpb->kb", q, Xb) + np.einsum("jkp,jkpb->kb", inp.rented_useful[:len(Rb)], Rb)
             + (np.einsum("kp,kpb->kb", qd, Xd) if Xd is not None else 0.0) + Ub)
    surplus = cover - (1 + inp.headroom)[:, None] * blocks.demand
    surplus[surplus < 1e-9] = 0.0
    for X, qq in ((Xb, q), (Xd, qd)):  # at-risk backfill first, then GPUs of their own
        if X is None:
            continue
        for p in np.argsort(-qq.max(axis=0) if qq.size else []):  # pools one by one, vectorised over (k, b)
            rate = qq[:, p][:, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                cut = np.where(rate > 0, np.minimum(X[:, p, :], surplus / np.where(rate > 0, rate, 1.0)), 0.0)
            X[:, p, :] -= cut
            surplus -= cut * rate
        X[X < EPS] = 0.0


def fleet_prices(inp: PlanInputs, fleet: pd.DataFrame, kind: str) -> np.ndarray:
    """Per row of a fleet-shaped table (scenario, period, gpu_type, region): USD per GPU-hour of rented ``kind``
    there: its scenario's and period's price where a forward curve or price paths date it, else the sheet's
    (0 where the pool does not sell it)."""
    p = pd.MultiIndex.from_frame(inp.pools[["gpu_type", "region"]]).get_indexer(
        pd.MultiIndex.from_arrays([fleet["gpu_type"], fleet["region"]]))
    j = rented.index(kind)
    out = np.zeros(len(fleet))
    path = inp.rented_price_path
    if path is None:
        ok = p >= 0
        out[ok] = np.nan_to_num(inp.rented_price[j])[p[ok]]
        return out
    s = pd.Index(inp.scenarios).get_indexer(fleet["scenario"])
    t = pd.DatetimeIndex(inp.periods).get_indexer(pd.DatetimeIndex(fleet["period"]))
    ok = (p >= 0) & (s >= 0) & (t >= 0)
    out[ok] = np.nan_to_num(path[s[ok], j, p[ok], t[ok]])
    return out


def reserved_by_scenario(inp: PlanInputs, n: np.ndarray, expected: float) -> np.ndarray:
    """(S,) each scenario's own reserved cost: the expected one for all, or with a scenario tree the purchases
    of its own branches (their cost in the objective is weighted by the branch's probability: undone here)."""
    from planner.model.objective import cost_by_scenario

    S = len(inp.scenarios)
    own = cost_by_scenario(inp, reserved_cost_per_instance) if len(n) else None  # commitment prices by scenario
    if own is not None:
        return (np.asarray(n, float)[:, None] * own * inp.member).sum(axis=0)
    if inp.reserved_member is None or not len(n):
        return np.full(S, expected)
    per_row = np.asarray(n, float) * reserved_cost_per_instance(inp) / np.where(inp.reserved_weight > 0,
                                                                                  inp.reserved_weight, 1.0)
    return per_row @ inp.reserved_member.astype(float)


def _scenario_costs(inp, blocks, Rb, kinds, Ub, reserved_cost, Vb=None) -> pd.DataFrame:
    price = block_prices(inp, blocks)  # (J, P, B)
    per_block = {kd: np.einsum("kpb,pb->b", Rb[rented.index(kd)], price[rented.index(kd)]) for kd in kinds}
    if Vb is not None:  # what savings plans paid is not billed at on-demand
        per_block["on_demand"] = per_block["on_demand"] - (Vb * price[rented.index("on_demand")]).sum(axis=0)
    rows = []
    for s, scen in enumerate(inp.scenarios):
        idx = blocks.of[s]
        h = inp.hours
        by_kind = {kd: float(per_block[kd][idx] @ h) for kd in kinds}
        sh = float(_periods(Ub.sum(axis=0), idx) @ h)
        res_s = float(np.asarray(reserved_cost)[s]) if np.ndim(reserved_cost) else float(reserved_cost)
        rows.append({"scenario": scen, "probability": float(inp.probability[s]), "reserved": res_s,
                     **by_kind, "total": res_s + sum(by_kind.values()),
                     "shortfall_gpu_hours": sh})
    return pd.DataFrame(rows)


def _spot_reason(inp: PlanInputs, row) -> str:
    if row.spot_gpu_hours > EPS:
        return "spot bought"
    if not row.spot_pays:
        return (f"effective spot price {row.effective_usd_per_useful_gpu_hour:.3f} USD is not below "
                f"on-demand {row.on_demand_usd_per_useful_gpu_hour:.3f} USD per useful GPU-hour")
    if not row.spot_beats_reserved:
        return (f"reserved at {row.best_reserved_usd_per_useful_gpu_hour:.3f} USD per useful GPU-hour "
                f"is cheaper than spot at {row.effective_usd_per_useful_gpu_hour:.3f}")
    return "a cheaper pool or option covers this class's spot share"


def _cheapest_per_useful_hour(inp: PlanInputs, on_demand_only: bool = False) -> np.ndarray:
    """(K,) the cheapest USD per useful reference GPU-hour among each class's on-demand, spot and reserved
    (effective rate) options (inf where none): a shortfall penalty below it leaves demand unmet on purpose."""
    od, sp = inp.pools["od"].to_numpy(float), inp.pools["sp"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        costs = [np.where(inp.speed * inp.reliability > 0, od[None, :] / (inp.speed * inp.reliability), np.inf)]
        if not on_demand_only:
            costs.append(np.where(inp.speed * inp.goodput > 0, sp[None, :] / (inp.speed * inp.goodput), np.inf))
        res = inp.commitments
        if len(res) and not on_demand_only:
            terms = res[commitments.holds_gpus(res)]
            if len(terms):
                r = np.full(inp.P, np.inf)
                np.minimum.at(r, terms["pool"].to_numpy(int), terms["r"].to_numpy(float))
                costs.append(np.where(inp.q_reserved > 0, r[None, :] / inp.q_reserved, np.inf))
    best = np.nanmin(np.where(np.isnan(np.stack(costs)), np.inf, np.stack(costs)), axis=(0, 2))
    return best


def _shortfall(inp, blocks, Xb, Yb, Zb, Ub, owned_block, budgets: set | None = None) -> pd.DataFrame:
    """Unmet demand per scenario, period and class, with the constraints that stand in the way
    (``budgets``: the names of the budget rows that bind)."""
    cols = ["scenario", "period", "hours", "workload_class", "unmet_gpus", "unmet_gpu_hours", "cause"]
    kb = np.argwhere(Ub > 1e-6)
    if not len(kb):
        return pd.DataFrame({c: [] for c in cols})
    pools = inp.pools
    cause_of = {}
    block_month = np.full(blocks.B, None, dtype=object)  # the month of each block's first period
    if budgets:
        flat = blocks.of.reshape(-1)
        _, first = np.unique(flat, return_index=True)
        block_month[flat[first]] = inp.periods[first % blocks.of.shape[1]].strftime("%Y-%m")
    from planner.model.constraints import block_caps

    od_caps, sp_caps = block_caps(inp, blocks, "on_demand"), block_caps(inp, blocks, "spot")
    cheapest = _cheapest_per_useful_hour(inp)
    cheapest_od = _cheapest_per_useful_hour(inp, on_demand_only=True)
    for k, b in kb:  # only the (class, block) pairs with a shortfall
        reasons = []
        allowed = np.flatnonzero(inp.speed[k] > 0)
        for p in allowed:
            name = pools["name"].iat[p]
            if pools["has_od"].iat[p]:
                cap = od_caps[p, b]
                if not np.isnan(cap) and Yb[:, p, b].sum() >= cap - 1e-6:
                    reasons.append(f"on-demand cap {cap:g} of {name} reached")
            if pools["has_res"].iat[p]:
                cap = pools["cap_res"].iat[p]
                if not np.isnan(cap) and owned_block[p, b] + blocks.inventory[p, b] >= cap - 1e-6:
                    reasons.append(f"reserved cap {cap:g} of {name} reached")
            if inp.goodput[k, p] > 0:
                cap = sp_caps[p, b]
                if not np.isnan(cap) and Zb[:, p, b].sum() >= cap - 1e-6:
                    reasons.append(f"spot cap {cap:g} of {name} reached")
        if inp.spot_share[k] > 0:
            spot_eff = float(np.sum(inp.speed[k] * inp.goodput[k] * Zb[k, :, b]))
            if spot_eff >= inp.spot_share[k] * blocks.demand[k, b] - 1e-6:
                reasons.append(f"spot share limit {inp.spot_share[k]:g} reached")
        if budgets:
            if "budget_total" in budgets:
                reasons.append(f"total budget {inp.config.budget.max_total_usd:,.0f} USD reached")
            month = block_month[b]
            if month is not None:
                if f"budget_month_{month.replace('-', '_')}" in budgets:
                    reasons.append(f"budget of {month} ({inp.config.budget.month_cap(month):,.0f} USD) reached")
        pen = inp.penalty_by_class[k]
        if cheapest[k] <= pen < cheapest_od[k]:  # cheaper options ran out (the causes above); on-demand is dearer
            reasons.append(f"on-demand ({cheapest_od[k]:.4g} USD per useful GPU-hour at the cheapest) costs more "
                           f"than the class's shortfall penalty {pen:g}")
        if pen < cheapest[k] or not reasons:
            reasons.append(f"every allowed option costs more than the shortfall penalty {inp.penalty_by_class[k]:g} "
                           "USD per GPU-hour" + (f" (the cheapest, {cheapest[k]:.4g})" if np.isfinite(cheapest[k])
                                                 else ""))
        cause_of[(k, b)] = "; ".join(dict.fromkeys(reasons))
    rows = []
    for s, scen in enumerate(inp.scenarios):
        for k, b in kb:
            ts = np.flatnonzero(blocks.of[s] == b)
            for t in ts:
                rows.append((scen, inp.periods[t], inp.hours[t], inp.classes[k], Ub[k, b],
                             Ub[k, b] * inp.hours[t], cause_of[(k, b)]))
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["scenario", "period", "workload_class"]).reset_index(drop=True)
