"""What the plan's commitments cost if things go otherwise: re-solves with the purchases fixed (LPs).

- :func:`downside`: demand ``shock`` below the forecast (every scenario, SLO classes' requests per second
  too, re-sized), the plan's purchases fixed, the recourse re-solved by the model.
- :func:`commitment_curve`: the plan's purchases scaled by factors (whole instances), each re-solved: the
  cost and NPV against the commitment level; the plan's own point is its minimum when the plan is optimal.
- :func:`savings`: against all on-demand and against the best plan with no new commitments.

Each re-solve is an LP in the recourse (the purchase columns fixed): priced in the plan's weekly batches
wherever the decomposition applies (:func:`batches_of`; in this process up to ``BATCH_PROCESS_CELLS``, on
worker processes above), else ``make_plan(inputs, fixed_reserved=units)`` over :mod:`planner.core.executors`. ``make_plan`` is
passed in by the caller (the pipeline's :func:`planner.pipeline.run.make_plan`): the memo never imports the
pipeline above it.
Figures per point: ``total_cost_usd`` (the plan's accounting, horizon), ``full_term_cost_usd`` (the new
commitments' whole liability + the recourse), ``on_demand_usd``, ``spot_usd``, ``reserved_utilisation``,
``stranded_usd`` (the new commitments' GPU-hours left unused x their effective rate, plus the savings
plans' unused dollars), ``stranded_owned_usd`` (the inventory's, at its rate), ``liability_past_horizon_usd``,
``shortfall_gpu_hours``, ``objective_usd``, ``npv_usd`` (the plan's cash schedule at ``[finance]
discount_rate``), ``fell_back`` (:func:`fell_back`: the weeks whose plan LP was re-solved at HiGHS's defaults: said in the
plan's notes, :func:`planner.memo.build.fallback_note`; not in plan.json's tables).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.core.options import PlanOptions
from planner.inputs import rented, supply

DEFAULT_SHOCKS = (0.2, 0.3)
DEFAULT_FACTORS = (0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2)

_WORKER: dict = {}  # the shared inputs and solve settings of this worker process (set by _init_worker)


def plan_figures(p) -> dict:
    """The figures of one (re-solved) plan that the memo tables report (see the module docstring)."""
    from planner.memo.tranches import owned_idle, stack, tranche_utilisation

    st = stack(p)  # (read once: both figures stack the same use on the same tranches)
    tr = tranche_utilisation(p, st)
    stranded = float(((tr["capacity_gpu_hours"] - tr["used_gpu_hours"]) * tr["effective_usd_per_gpu_hour"]).sum()) \
        if len(tr) else 0.0
    if len(p.spend):
        left = (p.spend["committed_usd"] - p.spend["covered_at_rates_usd"]).clip(lower=0)
        stranded += float((left * (p.spend["probability"] if "probability" in p.spend else 1.0)).sum())  # expected
    c = p.commitments
    recourse = p.cost["total"] - p.cost["reserved"]
    return {"status": p.status.value, "total_cost_usd": float(p.cost["total"]),
            "full_term_cost_usd": float(c.get("reserved_full_term_usd", 0.0) + recourse),
            "reserved_usd": float(p.cost["reserved"]), "reserved_full_term_usd": float(c.get("reserved_full_term_usd", 0.0)),
            "on_demand_usd": float(p.cost["on_demand"]), "spot_usd": float(p.cost["spot"]),
            **{f"{k}_usd": float(p.cost[k]) for k in rented.reported(p.inputs.pools) if k not in rented.ALWAYS},
            "reserved_utilisation": float(p.reserved_utilisation), "stranded_usd": stranded,
            "stranded_owned_usd": owned_idle(p, st)["usd"],
            "liability_past_horizon_usd": float(c.get("liability_past_horizon_usd", 0.0)),
            "shortfall_gpu_hours": float(p.shortfall_gpu_hours), "objective_usd": float(p.objective),
            "npv_usd": float(p.finance.get("npv_usd", 0.0)),
            "baseline_all_on_demand_usd": float(p.baseline_all_on_demand),
            "fell_back": fell_back(p)}  # (said in a note: planner.memo.build.fallback_note)


def fell_back(p) -> str:
    """What of plan ``p``'s reading was not held to one answer: "" (none), "N week(s)" whose plan LP was re-solved at
    HiGHS's defaults (a decomposed plan), or "its whole-model LP" (a plan solved whole read from its MIP)."""
    weeks = int(getattr(p, "weeks_fell_back", 0))
    if weeks:
        return f"{weeks} week{'s' if weeks != 1 else ''}"
    return "its whole-model LP" if getattr(p, "read_fell_back", False) else ""


def _init_worker(inp, solve: dict, warm: dict | None = None, make_plan=None) -> None:
    """Keep the inputs, solve settings, warm start (the plan's batches' bases) and the ``make_plan`` every task
    of this worker shares."""
    _WORKER["inp"], _WORKER["solve"], _WORKER["warm"], _WORKER["make_plan"] = inp, dict(solve), warm, make_plan


def _solve_point(task: dict) -> dict:
    """One re-solve: the shared inputs at ``demand_level``, purchases fixed at ``units``; its figures."""
    from planner.inputs.arrays import scale_inputs

    inp, make_plan = _WORKER["inp"], _WORKER["make_plan"]
    level = float(task.get("demand_level", 1.0))
    if level != 1.0:
        inp = scale_inputs(inp, demand_level=level)
    p = make_plan(inp, PlanOptions(fixed_reserved=np.asarray(task["units"], float), risk=False, shadow=False,
                                   warm=_WORKER.get("warm"), **_WORKER["solve"]))
    if not p.status.has_plan:  # e.g. purchases scaled past a [budget]: that point has no plan, the others go on
        return {"status": p.status.value}
    return plan_figures(p)


IN_PROCESS_CELLS = 20_000  # periods x classes x scenarios up to which the memo's re-solves run in this process


def _run(inp, tasks: list[dict], executor, solve: dict, warm: dict | None = None, make_plan=None) -> list[dict]:
    """Map :func:`_solve_point` over ``tasks`` on ``executor`` (default: local processes); raise on a failure.

    A decomposed plan's re-solves (``warm``: its batches and their bases) are priced batch by batch instead:
    :func:`_run_batched`."""
    from planner.core.executors import LocalExecutor

    if warm is not None and warm.get("chunks") and _linear_in_demand(inp):
        return _run_batched(inp, tasks, executor, warm)
    if executor is None:  # small models re-solve here: a process pool costs more than their LPs
        small = inp.T * inp.K * len(inp.scenarios) <= IN_PROCESS_CELLS
        executor = LocalExecutor(jobs=1) if small else LocalExecutor()
    outcomes = executor.map(_solve_point, tasks, initializer=_init_worker, initargs=(inp, solve, warm, _needed(make_plan)),
                            progress=False)
    bad = [o for o in outcomes if not o.ok]
    if bad:
        from planner.core.errors import SolverError

        raise SolverError("memo re-solve failed: " + "; ".join(o.error.splitlines()[-1] for o in bad if o.error))
    return [dict(o.value, seconds=o.seconds) for o in outcomes]


def batches_of(plan, backend: str | None = None, inp=None) -> dict | None:
    """The weekly batches the re-solves of ``inp`` (default: ``plan``'s own inputs) are priced in: a decomposed
    plan's own (with its bases) when ``inp`` is its inputs, else, for any model the decomposition applies to (no
    backfill, no discount-only commitment, no ``[budget]``: nothing links the periods once the purchases are
    fixed), new ones, cold; None where the whole model must be re-solved (or the demand is not linear in the
    rows: SLO-sized classes; or CBC was asked). The same LP either way: the recourse separates by period
    (measured on the bundled example: the memo 3.6 s against 6.3 s)."""
    own = inp is None or inp is plan.inputs
    inp = plan.inputs if inp is None else inp
    if inp is None or not _linear_in_demand(inp) or (backend or inp.config.solver.backend) != "highs":
        return None
    if own and plan.recourse is not None and plan.recourse.get("chunks"):
        return plan.recourse
    from planner.solve.decompose import applicable, chunk_index, cut_groups

    if not applicable(inp) or plan.stats.get("extensions"):  # a linking family (a budget among them): whole
        return None
    chunks = chunk_index(inp, "week")
    return {"chunks": chunks, "cut_by": cut_groups(inp), "units": plan.purchases["units"].to_numpy(float),
            "bases": [None] * len(chunks)}


def _linear_in_demand(inp) -> bool:
    """True when scaling the demand scales only the demand and spot-share rows (no class sized by an SLO, none
    asking for spares: a gang's spares are a Poisson quantile of its size, re-sized by the whole model)."""
    if any(inp.config.classes[c].spares is not None for c in inp.classes):
        return False
    return inp.requests is None or bool(np.isnan(inp.requests).all())


_SHARED: dict = {}  # id(inputs) -> the batches' pricer the memo's re-solves share (see shared_batches)


class shared_batches:
    """``with shared_batches(plan, executor):`` every batched re-solve of ``plan``'s inputs inside uses one
    pricer (its batches built, its workers started, once): the memo's downside and curve alike."""

    def __init__(self, plan, executor=None, backend: str | None = None):
        self.plan, self.executor, self.key, self.backend = plan, executor, id(plan.inputs), backend

    def __enter__(self):
        warm = batches_of(self.plan, self.backend)
        if warm is not None:
            _SHARED[self.key] = _open_pricer(self.plan.inputs, warm, self.executor)
        return self

    def __exit__(self, *exc):
        pricer = _SHARED.pop(self.key, None)
        if pricer is not None:
            pricer.close()


BATCH_PROCESS_CELLS = 30_000  # periods x classes x scenarios above which the re-solves' batches go to processes


def _open_pricer(inp, warm: dict, executor):
    from planner.core.executors import LocalExecutor
    from planner.solve.workers import make_pricer

    if executor is None:  # a process pool pays for itself on large models only (above BATCH_PROCESS_CELLS); below,
        # this process's threads (None: every core's, planner.solve.workers.LocalPricer)
        cells = inp.T * inp.K * len(inp.scenarios)
        executor = LocalExecutor() if cells > BATCH_PROCESS_CELLS else None
    return make_pricer(inp, warm["chunks"], warm.get("cut_by", "block"), executor)


def _run_batched(inp, tasks: list[dict], executor, warm: dict) -> list[dict]:
    """The re-solves of a decomposed plan: its weekly batches built once (here, or on ``executor``'s workers:
    every core by default above the in-process size), each task one pricing pass warm from the plan's own
    bases, the demand scaled in the batches' rows (:func:`planner.solve.recourse.price`), then the plan read from it."""
    import time

    from planner.inputs.arrays import scale_inputs
    from planner.results.decomposed import column_layout, plan_from_priced
    from planner.solve.workers import warm_bases

    chunks = warm["chunks"]
    cut_by = warm.get("cut_by", "block")
    shared = _SHARED.get(id(inp))
    pricer = shared if shared is not None else _open_pricer(inp, warm, executor)
    rows: list = [None] * len(tasks)
    try:
        # each task starts from the bases of the nearest point already priced (the plan's own first): the curve's
        # points are priced outwards from the plan, a few pivots each (the order is fixed: the same answer)
        done = [(float(warm.get("level", 1.0)), np.asarray(warm.get("units", np.zeros(0)), float),
                 warm_bases(warm, chunks, pricer))]
        order = _nearest_first(tasks, done[0])
        starts = _starts(tasks, order, done[0])
        # a point whose purchases break a first-stage row (a site's power, a pool's reserved cap: scaled purchases
        # can) has no recourse to price: its row says infeasible, as a whole model's re-solve does
        from planner.model.stages import first_stage_rows
        from planner.solve.master import first_stage_feasible

        own = first_stage_rows(inp)
        for i in order:
            if not first_stage_feasible(own, np.asarray(tasks[i]["units"], float)):
                rows[i] = {"status": "infeasible", "seconds": 0.0}
        keep = [m for m, i in enumerate(order) if rows[i] is None]
        order, starts = [order[m] for m in keep], _starts(tasks, [order[m] for m in keep], done[0])
        # a result's bases stay on the workers when only the next call starts from them (a worker keeps each
        # batch's last basis); read out as arrays when a later call does (the same basis either way)
        later = {s for m, s in enumerate(starts) if s < m}

        layouts: dict = {}  # the last demand level read: its inputs and their columns' layout (one held at a time:
        # the curve's points share the plan's level; each of the downside's levels has one point, and three layouts
        # held at once took 3Y's peak memory over 4 GB)

        def read(i: int, level: float, units: np.ndarray, priced: list, t0: float, seconds: float) -> None:
            """Task ``i``'s figures from its pricing (``seconds``: the pricing's own; ``t0``: when it began)."""
            if level not in layouts:
                layouts.clear()
                scaled = inp if level == 1.0 else scale_inputs(inp, demand_level=level)
                layouts[level] = (scaled, column_layout(scaled), {})  # its inputs, columns, column map
            scaled, layout, reuse = layouts[level]
            # the figures read the fleet, purchases and costs only: no allocation, no detail tables
            p = plan_from_priced(scaled, units, priced, pricer, chunks, cut_by, seconds, allocation=False,
                                 keep_bases=False, layout=layout, reuse=reuse, detail=False)
            rows[i] = dict(plan_figures(p), seconds=time.perf_counter() - t0)

        # each task's figures are read while the workers price the next task (the read is this process's work,
        # the pricing the workers'): the last one after the loop
        pending = None
        for m, i in enumerate(order):
            task = tasks[i]
            t0 = time.perf_counter()
            level = float(task.get("demand_level", 1.0))
            units = np.asarray(task["units"], float)
            behind = pending
            priced = pricer.price(units, done[starts[m]][2], solution=True, scale=level, portable=m + 1 in later,
                                  meanwhile=None if behind is None else (lambda: read(*behind)))
            done.append((level, units, [r.basis for r in priced]))
            pending = (i, level, units, priced, t0, time.perf_counter() - t0)
        if pending is not None:
            read(*pending)
    finally:
        if shared is None:
            pricer.close()
    return rows


def _point(task: dict) -> tuple:
    """A re-solve's (demand level, units)."""
    return float(task.get("demand_level", 1.0)), np.asarray(task["units"], float)


def _distance(a: tuple, b: tuple) -> tuple:
    """How far point ``a`` is from ``b`` (each a demand level and units): by level, then by units (summed)."""
    far = float(np.abs(a[1] - b[1]).sum()) if len(a[1]) == len(b[1]) else np.inf
    return abs(a[0] - b[0]), far


def _starts(tasks: list[dict], order: list[int], origin: tuple) -> list[int]:
    """Per call (tasks in ``order``): the point it starts from, 0 the plan's own (``origin``: level, units), m + 1
    the m-th call's result: the nearest (:func:`_distance`; the first of equals)."""
    points = [(float(origin[0]), np.asarray(origin[1], float))]
    out = []
    for i in order:
        p = _point(tasks[i])
        out.append(min(range(len(points)), key=lambda j: _distance(points[j], p)))
        points.append(p)
    return out


def _nearest_first(tasks: list[dict], origin: tuple) -> list[int]:
    """Task positions ordered by their distance (:func:`_distance`) from ``origin`` (level, units)."""
    o = (float(origin[0]), np.asarray(origin[1], float))
    return sorted(range(len(tasks)), key=lambda i: (*_distance(_point(tasks[i]), o), i))


def _needed(make_plan):
    """``make_plan`` (the pipeline's, passed down by the caller), or a TypeError saying so."""
    if make_plan is None:
        raise TypeError("the memo's re-solves need make_plan=... (planner.pipeline.run.make_plan, or your own "
                        "function of the same signature)")
    return make_plan


def _solve_kwargs(solve: dict) -> dict:
    keep = ("backend", "time_limit_s", "mip_gap")
    extra = set(solve) - set(keep)
    if extra:
        raise TypeError(f"unexpected solve settings {sorted(extra)}; expected some of {list(keep)}")
    return {k: v for k, v in solve.items() if v is not None}


def downside(plan, inp, shocks=DEFAULT_SHOCKS, executor=None, *, make_plan=None, **solve) -> pd.DataFrame:
    """The plan's purchases fixed, demand ``shock`` below the forecast, re-solved (one LP per shock).

    Every scenario's demand, and the requests per second of SLO classes (re-sized by their queue), are
    multiplied by ``1 - shock`` (``inputs.scale_inputs(demand_level=...)``). One row per shock, the
    plan itself first at ``shock = 0`` (its own figures, not re-solved): ``shock``, ``demand_level``,
    ``total_cost_usd`` ... ``npv_usd`` (the module docstring), and ``full_term_increase_usd`` /
    ``stranded_increase_usd`` against shock 0. ``solve``: ``backend``, ``time_limit_s``, ``mip_gap``;
    ``make_plan``: the pipeline's (re-solves of a plan solved whole).
    """
    units = plan.purchases["units"].to_numpy(float)
    shocks = [float(s) for s in shocks if float(s) != 0.0]
    if any(not 0 < s < 1 for s in shocks):
        raise ValueError(f"shocks must lie in (0, 1), got {shocks}")
    tasks = [{"demand_level": 1.0 - s, "units": units} for s in shocks]
    warm = batches_of(plan, solve.get("backend"), inp) if tasks else None
    again = _reprice_own(plan, warm)
    solved = _run(inp, ([{"demand_level": 1.0, "units": units}] if again else []) + tasks, executor,
                  _solve_kwargs(solve), warm, make_plan) if tasks else []
    rows = ([] if again else [dict(plan_figures(plan), seconds=0.0)]) + solved
    out = pd.DataFrame(rows)
    out.insert(0, "demand_level", [1.0] + [1.0 - s for s in shocks])
    out.insert(0, "shock", [0.0] + shocks)
    out["full_term_increase_usd"] = out["full_term_cost_usd"] - out["full_term_cost_usd"].iat[0]
    out["stranded_increase_usd"] = out["stranded_usd"] - out["stranded_usd"].iat[0]
    return out


def _reprice_own(plan, warm: dict | None) -> bool:
    """True when the plan's own point must be priced again in the re-solves' batches: re-solves batched in other
    batches than the plan's own (a plan solved whole, or other inputs than the plan's). Costs are the same either way (one LP optimum), but where several equal-cost answers
    exist (owned and bought GPUs idle in different pools) the figures read from the answer (utilisation,
    stranded) follow the solve: a table's rows, and their differences to its first row, come from one solve
    path (docs/workbook.md, "The memo's figures")."""
    return warm is not None and warm is not plan.recourse  # not the plan's own batches (and bases)


def scaled_units(plan, inp, factor: float) -> np.ndarray:
    """The plan's purchases (``purchases["units"]``) scaled by ``factor``: whole instances (half up) where the
    decision is integer, at most each row's ``max_units``, each pool's reserved cap kept (a pool over its cap
    moves back towards the plan above factor 1, towards nothing below: :func:`_within_pool_caps`), resales no
    more than their parent; factor 1 is the plan exactly."""
    units = plan.purchases["units"].to_numpy(float)
    if factor == 1:
        return units.copy()
    res = inp.commitments
    x = units * float(factor)
    whole = res["integer"].to_numpy(bool)
    x = np.where(whole, np.floor(x + 0.5), x)
    x = np.minimum(x, res["max_units"].to_numpy(float))
    x = _within_pool_caps(inp, x, whole, units if factor > 1 else np.zeros_like(units))
    kind = res["kind"].to_numpy()
    if supply.mask(kind, dated_by="resale").any():  # resales of a term: cumulatively at most its instances
        ex = np.flatnonzero(supply.mask(kind, dated_by="resale"))
        par = res["parent"].to_numpy(int)[ex]
        frame = pd.DataFrame({"ex": ex, "par": par, "x": x[ex]})
        before = frame.groupby("par")["x"].cumsum() - frame["x"]
        x[ex] = np.clip(np.minimum(frame["x"], x[par] - before), 0.0, None).to_numpy()
    return x


def _within_pool_caps(inp, x: np.ndarray, whole: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``x`` with each capped pool brought within its reserved cap: where, on some set of active rows, the GPUs
    held at once exceed the cap less the most inventory held on that set (the model's own cap rows,
    :func:`planner.model.constraints.reserved_cap_sets`: a resale frees its term's GPUs from its date), the pool's
    rows move back from ``x`` towards ``base`` (purchases that keep the cap: the plan's own above factor 1, none
    below) by the largest share that keeps every set; whole instances then rounded towards fewer GPUs held
    (purchases down, resales up). A point above the plan so never holds less than the plan."""
    from planner.inputs import commitments
    from planner.model.constraints import reserved_cap_sets

    res = inp.commitments
    keys, members, coefs, rhs = reserved_cap_sets(inp)
    pool = res["pool"].to_numpy(int)
    sold = np.asarray(commitments.is_exit(res), bool)
    counted = np.asarray(commitments.is_term_row(res), bool) | sold  # what the cap rows count
    out = x.copy()
    keys = np.asarray(keys, dtype=np.int64)
    for p in np.unique(keys):  # a loop over the few capped pools (each set's GPUs held: one product)
        sets = np.flatnonzero(keys == p)
        held = np.array([float(np.asarray(coefs[j], float) @ out[members[j]]) for j in sets])
        held0 = np.array([float(np.asarray(coefs[j], float) @ base[members[j]]) for j in sets])
        room = np.array([rhs[j] for j in sets], dtype=float)
        over = held > room + 1e-9
        if not over.any():
            continue
        with np.errstate(divide="ignore", invalid="ignore"):  # held is linear along base -> x: the share that fits
            share = np.where(over, np.clip(room - held0, 0.0, None) / (held - held0), 1.0)
        rows = np.flatnonzero(counted & (pool == p))
        moved = base[rows] + float(np.clip(share.min(), 0.0, 1.0)) * (out[rows] - base[rows])
        out[rows] = np.where(whole[rows], np.where(sold[rows], np.ceil(moved - 1e-9), np.floor(moved + 1e-9)), moved)
    return out


def commitment_curve(plan, inp, factors=DEFAULT_FACTORS, executor=None, *, make_plan=None,
                     **solve) -> pd.DataFrame:
    """Cost, savings and NPV against the commitment level: the plan's purchases x each factor, re-solved.

    Purchases are scaled by :func:`scaled_units` (whole instances, caps kept; factor 1 is the plan) and the
    recourse re-solved with them fixed, one LP per factor (in weekly batches where the decomposition applies,
    else on ``executor``: see the module docstring). One row per factor, sorted: ``factor``, ``committed_gpus``
    (GPUs of the new instance commitments bought, at their peak: summed over purchase rows),
    ``committed_usd_per_hour`` (savings plans), ``committed_usd`` (their whole-term liability),
    ``total_cost_usd`` (the plan's accounting), ``full_term_cost_usd``, ``on_demand_usd``, ``spot_usd``,
    ``savings_usd`` (all on-demand less total), ``npv_usd`` (at the plan's discount rate),
    ``reserved_utilisation``, ``stranded_usd``, ``objective_usd``, ``shortfall_gpu_hours``, ``optimum``
    (True on the plan's own row, factor 1) and ``cheapest`` (the lowest objective on the curve).
    """
    factors = sorted({float(f) for f in factors} | {1.0})
    if any(f < 0 for f in factors):
        raise ValueError(f"factors must be >= 0, got {factors}")
    res = inp.commitments
    kind = res["kind"].to_numpy()
    m = res["m"].to_numpy(float)
    holds = (res["pool"].to_numpy(int) >= 0) & supply.mask(kind, adds_capacity=True)
    units = [scaled_units(plan, inp, f) for f in factors]
    todo = [i for i, f in enumerate(factors) if f != 1.0]  # factor 1 is the plan itself: its own figures
    warm = batches_of(plan, solve.get("backend"), inp) if todo else None
    if _reprice_own(plan, warm):  # ... or priced in the same batches as the other points (see _reprice_own)
        todo = list(range(len(factors)))
    solved = _run(inp, [{"demand_level": 1.0, "units": units[i]} for i in todo], executor, _solve_kwargs(solve),
                  warm, make_plan) if todo else []
    rows = [dict(plan_figures(plan), seconds=0.0)] * len(factors)
    for i, r in zip(todo, solved):
        rows[i] = r
    out = pd.DataFrame(rows)
    if "baseline_all_on_demand_usd" in out:
        out["baseline_all_on_demand_usd"] = out["baseline_all_on_demand_usd"].fillna(float(plan.baseline_all_on_demand))
    out.insert(0, "committed_usd", out["reserved_full_term_usd"])
    out.insert(0, "committed_usd_per_hour", [float((u * inp.reserved_weight)[supply.mask(kind, unit="usd_per_hour")].sum()) for u in units])
    w = inp.reserved_weight  # a scenario tree's branch purchases: expected
    out.insert(0, "committed_gpus", [float((u * m * w)[holds].sum()) for u in units])
    out.insert(0, "factor", factors)
    out["savings_usd"] = out["baseline_all_on_demand_usd"] - out["total_cost_usd"]
    out["optimum"] = out["factor"] == 1.0
    out["cheapest"] = out["objective_usd"] <= out["objective_usd"].min() + 1e-9 * max(1.0, abs(out["objective_usd"].min()))
    return out


def savings(plan, inp, next_best=None, *, make_plan=None, **solve) -> dict:
    """What the plan saves against all on-demand and against the next-best plan (no new commitments).

    The next-best plan is the model re-solved with every purchase fixed at 0: the best mix of on-demand and
    spot (and the inventory already owned). Each saving is given on the horizon cost under the plan's
    accounting (``*_usd``) and on the full bill, the new commitments' whole-term liability counted
    (``*_full_term_usd``). ``already_committed_usd`` (the inventory, priced for the horizon; the same in
    every alternative but all on-demand, which ignores it) is reported beside, not netted.
    ``next_best_shortfall_gpu_hours``: what the next-best plan leaves unmet (the spares a class asks for, which
    only commitments hold: the next-best plan holds none of them).
    """
    from planner.results.bill import bill

    kw = _solve_kwargs(solve)
    if next_best is None:  # ``next_best``: the figures of the plan with no new commitments, when already solved
        zero = np.zeros(len(plan.purchases))
        next_best = plan_figures(_needed(make_plan)(inp, PlanOptions(fixed_reserved=zero, risk=False, shadow=False, **kw)))
    me, other = plan_figures(plan), next_best
    base = float(plan.baseline_all_on_demand)
    out = {"all_on_demand_usd": base, "plan_cost_usd": me["total_cost_usd"],
           "plan_full_term_usd": me["full_term_cost_usd"], "next_best_cost_usd": other["total_cost_usd"],
           "next_best_full_term_usd": other["full_term_cost_usd"], "next_best_status": other["status"],
           "next_best_shortfall_gpu_hours": float(other.get("shortfall_gpu_hours", 0.0)),
           "savings_vs_on_demand_usd": base - me["total_cost_usd"],
           "savings_vs_on_demand_full_term_usd": base - me["full_term_cost_usd"],
           "savings_vs_next_best_usd": other["total_cost_usd"] - me["total_cost_usd"],
           "savings_vs_next_best_full_term_usd": other["full_term_cost_usd"] - me["full_term_cost_usd"],
           "already_committed_usd": float(bill(plan)["already_committed_usd"])}
    for key in ("savings_vs_on_demand", "savings_vs_next_best"):
        ref = base if key.endswith("demand") else other["total_cost_usd"]
        out[key + "_share"] = out[key + "_usd"] / ref if ref > 0 else float("nan")
    return out
