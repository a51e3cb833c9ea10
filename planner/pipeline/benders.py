"""The decomposed path of the pipeline: when ``auto`` decomposes, the Benders loop's plan (its risk view's
sub-plans through the ``make_plan`` passed in), and long horizons priced batch by batch with the purchases fixed."""

from __future__ import annotations

import time

import numpy as np

from planner.inputs.arrays import PlanInputs
from planner.results.decomposed import (costs_plan, decision_from_batches, finite, infeasible_plan, plan_from_batches,
                                       plan_from_priced)
from planner.results.plan import Plan
from planner.results.risk import risk_view
from planner.solve.workers import warm_bases


BENDERS_AUTO_CELLS = 15_000  # periods x classes x scenarios above which "auto" decomposes (measured end to end on an
# idle machine: M, 17,472 cells, 9.2 s against 12.0 s monolithic; L, 43,680, 2x faster; benchmarks/README.md)


def use_benders(inp: PlanInputs, backend: str) -> bool:
    """Benders when asked, or with "auto" above ``BENDERS_AUTO_CELLS`` (HiGHS, no backfill, no budget).

    The per-period multi-cut decomposition is faster than the monolithic model on long horizons with one
    purchase date or several; below the threshold the monolithic model (HiGHS's own branch and bound) is.
    """
    from planner.solve.decompose import applicable

    method = inp.config.solver.method
    if method == "monolithic" or not applicable(inp):
        return False  # a linking family (a budget, backfill, discount-only commitments) ties the periods
    if method == "benders":
        return backend == "highs"  # the decomposition keeps its chunk LPs in HiGHS; --solver cbc solves monolithic
    return backend == "highs" and inp.T * inp.K * len(inp.scenarios) > BENDERS_AUTO_CELLS


def monolithic_note(inp: PlanInputs, backend: str, free: bool) -> str | None:
    """Why a model file that asks for ``method = "benders"`` is solved as one model (None otherwise);
    ``free`` is False when an extension is added (the decomposition cannot see its rows)."""
    from planner.model.stages import linking

    if inp.config.solver.method != "benders":
        return None
    links = dict(linking(inp))  # the linking families present, and why each stops the decomposition
    if not free:
        why = "the model is extended (extend=), and the decomposition cannot see the added rows"
    elif backend != "highs":
        why = f"--solver {backend}: the decomposition runs on HiGHS only"
    elif "budget" in links:
        why = links["budget"]
    elif not len(inp.commitments):
        why = ("there is nothing to buy ahead (no reserved, capacity-block or savings-plan rows in the price sheet): "
               "the model is one LP, solved whole")
    elif links:
        why = "the decomposition does not apply to this model: " + next(iter(links.values()))
    else:
        return None
    return f'method = "benders" was asked, but the model was solved whole (monolithic): {why}'


def benders_plan(inp: PlanInputs, make_plan, *, backend, time_limit_s, mip_gap, timings, risk, write_model,
                 progress: bool = False, executor=None, allocation: bool = True, decision: bool = False,
                 warm: dict | None = None, common: bool = False, keep_cuts: bool = False) -> Plan:
    """Purchases by Benders decomposition (proven gap); the plan read from the batches' last pricing (``make_plan``:
    the pipeline's, for the risk view's sub-plans); ``decision``: the purchases and their costs only, read from
    each batch's costs without building the whole model (:func:`~planner.results.decomposed.decision_from_batches`);
    ``warm``: a plan's ``recourse`` on the same batches, whose bases start the first pricing (and its ``"prior"``
    cuts, the master); ``common`` (with ``decision``): on a tree, every purchase common to all scenarios, decided
    on its first-stage inputs priced on the tree's own batches (:mod:`planner.solve.tied`); ``keep_cuts``: every
    pricing's cuts kept in ``plan.recourse["prior"]``."""
    from planner.solve.decompose import solve_benders
    from planner.core.progress import BendersProgress

    s = inp.config.solver
    gap = s.mip_gap if mip_gap is None else mip_gap
    limit = s.time_limit_s if time_limit_s is None else time_limit_s
    t0 = time.perf_counter()
    bar = BendersProgress(enabled=progress)
    tree = inp.reserved_member is not None
    view = None
    if common and tree:
        from planner.inputs.arrays import first_stage
        from planner.solve.tied import first_stage_view

        view = first_stage_view(inp)
        if view is None:  # its rows are not the tree's before the split: on batches of its own
            inp = first_stage(inp)
    try:
        if view is not None:
            bd, inp = _first_stage_on_tree(inp, view, warm, executor, gap, limit, s.threads, bar), view[0]
        else:
            bd = solve_benders(inp, chunk="week", mip_gap=gap, time_limit_s=limit, threads=s.threads, progress=bar,
                               executor=executor, final="costs" if decision else True, warm=warm,
                               keep_log=keep_cuts)
    finally:
        bar.close()
    timings["benders"] = time.perf_counter() - t0
    plan = (decision_from_batches(inp, bd, gap, limit, timings, write_model) if decision else
            plan_from_batches(inp, bd, gap, limit, timings, write_model, allocation))
    plan.stats["benders"] = {"chunks": bd.chunks, "thetas": bd.chunks, "cut_by": bd.cut_by, "batches": bd.batches,
                             "integer_master_solves": bd.integer_master, "cuts": bd.cuts,
                             "cuts_dropped": dict(bd.cuts_dropped),
                             "workers": bd.workers, "pricer": bd.pricer, "threads": bd.threads,
                             "worker_restarts": bd.restarts,
                             "bases_lost": bd.bases_lost,
                             "phases_s": {k: v for k, v in bd.phases.items() if k != "rounding_gap"},
                             "iterations": bd.iterations, "lower_usd": finite(bd.lower),
                             "upper_usd": finite(bd.upper), "gap": finite(bd.gap),
                             "log": [{"iteration": i, "bound_usd": finite(lo), "incumbent_usd": finite(up),
                                      "seconds": round(sec, 3)} for i, lo, up, sec in bd.history]}
    if bd.bases_lost:
        plan.notes.append(f"a pricing worker died and was replaced during the decomposition: {bd.bases_lost} "
                          "batch pricings started cold (their worker kept their bases); the plan is optimal within "
                          "the same gap, but its last digits may differ from an undisturbed run's")
    if keep_cuts and bd.cut_log is not None:
        plan.recourse = dict(plan.recourse or {}, prior=bd.cut_log)
    if risk and len(inp.scenarios) > 1 and plan.status.has_plan:
        t1 = time.perf_counter()
        plan.risk = risk_of(plan, make_plan, executor, time_limit_s, mip_gap)
        plan.timings["risk"] = time.perf_counter() - t1
    return plan


def _first_stage_on_tree(tree: PlanInputs, view: tuple, warm: dict | None, executor, gap, limit, threads, bar):
    """The first-stage plan's decision (every purchase common) on its first-stage inputs ``view[0]``, priced on the
    tree's own batches (lent where they are kept), its master started from the tree's ``warm["prior"]`` cuts."""
    from planner.solve.decompose import chunk_index, cut_groups, solve_benders
    from planner.solve.tied import TiedPricer, first_stage_log
    from planner.solve.workers import make_pricer

    fs, origin = view
    chunks = chunk_index(tree, "week")
    pricer = make_pricer(tree, chunks, cut_groups(tree), executor)
    try:
        start = {k: v for k, v in (warm or {}).items() if k in ("chunks", "bases")}  # the tree's bases
        prior = first_stage_log((warm or {}).get("prior"), tree, fs, origin)
        if prior is not None:
            start["prior"] = prior
        return solve_benders(fs, chunk="week", mip_gap=gap, time_limit_s=limit, threads=threads, progress=bar,
                             pricer=TiedPricer(pricer, origin, len(fs.commitments)), final="costs", warm=start)
    finally:
        pricer.close()


def risk_settings(executor, time_limit_s, mip_gap) -> dict:
    """How a decomposed plan's risk view solves its sub-plans (each a decision: :func:`risk_of`)."""
    return dict(backend="highs", time_limit_s=time_limit_s, mip_gap=mip_gap, risk=False, shadow=False,
                executor=_sub_executor(executor))


def early_eev(plan: Plan, make_plan, executor, time_limit_s, mip_gap, early):
    """The risk view's EEV (the mean plan's purchases in every scenario) priced now, on the plan's own batches from
    its bases, where the sub-plans begun early (:func:`planner.pipeline.sub_plans.start_early`) have the mean plan in
    hand: ``(purchases, plan)`` for :func:`risk_of`, else None. Priced while the plan's batches are kept, it is
    priced on them as the view would price it after building them again (the same batches, the same bases)."""
    from planner.results.risk import SubPlan, eev_purchases

    settings = risk_settings(executor, time_limit_s, mip_gap)
    if early is None or not early.serves(plan.inputs, settings | {"decision": True}):
        return None
    mean = early.done().get(SubPlan("mean"))
    if mean is None or not mean.ok:
        return None
    n = eev_purchases(plan.inputs, mean.value[1])
    return n, make_plan(plan.inputs, fixed_reserved=n, warm=plan.recourse, decision=True, **settings)


def risk_of(plan: Plan, make_plan, executor, time_limit_s, mip_gap, early=None, eev=None):
    """The risk view of a decomposed plan: its sub-plans are decisions (the view reads their objective and purchases
    only), solved side by side on local processes where that pays (:mod:`planner.pipeline.sub_plans`), else here,
    pricing where :func:`_sub_executor` says. ``early``: those of them begun before the plan was made
    (:func:`planner.pipeline.sub_plans.start_early`); ``eev``: EEV priced already (:func:`early_eev`)."""
    from planner.pipeline.sub_plans import many_solver, on_processes
    from planner.solve.workers import release_kept

    settings = risk_settings(executor, time_limit_s, mip_gap)

    released = on_processes(executor, plan.inputs)  # the sub-plans' processes hold GBs of batches of their own:
    if released:  # the horizon's kept batches are freed meanwhile (built again for EEV: at three hourly years x 5
        release_kept(plan.inputs)  # scenarios 45 s, where their 8 GB beside the sub-plans took 23 of 24 GB)

    def sub(i, fixed_reserved=None):
        if fixed_reserved is not None and eev is not None and i is plan.inputs and \
                np.array_equal(np.asarray(fixed_reserved), eev[0]):
            return eev[1]  # (priced already, on the plan's own batches)
        if fixed_reserved is not None:  # EEV: the plan's own batches at other purchases, from the plan's bases
            # (built again where they were released, on the plan's processes, and kept); its cost only (read from
            # each batch's costs: no tie-break LP, no whole model laid out)
            return make_plan(i, fixed_reserved=fixed_reserved, warm=plan.recourse if i is plan.inputs else None,
                             decision=True, **(settings | ({"executor": executor} if released else {})))
        return make_plan(i, decision=True, **settings)

    return risk_view(plan, sub, many_solver(executor, plan.inputs, settings | {"decision": True}, make_plan,
                                            early=early))


def _sub_executor(executor):
    """Where the risk view's sub-plans price their batches: the same Dask cluster (its workers stay up), but in
    this process rather than a new pool of local processes for every sub-plan (their start-up cost more)."""
    from planner.core.executors import DaskExecutor

    return executor if isinstance(executor, DaskExecutor) else None


def fixed_plan(inp: PlanInputs, make_plan, n: np.ndarray, timings: dict, risk: bool, write_model, executor,
               time_limit_s, mip_gap, warm: dict | None = None, keep_cuts: bool = False,
               decision: bool = False) -> Plan:
    """The plan of the purchases ``n`` on a long horizon: every batch priced once at ``n`` (here, on worker
    processes or on Dask) and read into the whole model's columns; the same LP as the whole model's, solved
    apart (the recourse separates by period). ``keep_cuts``: that pricing kept in ``plan.recourse["cuts"]`` as
    the Benders cuts at ``n`` (:func:`~planner.solve.decompose.point_cuts`). ``decision``: what the purchases cost
    only (the risk view's EEV: the mean plan's purchases in every scenario), read from each batch's costs
    (:func:`~planner.results.decomposed.costs_plan`): no owned-GPU tie-break, no whole model laid out, empty
    per-period tables; its cuts (``keep_cuts``), risk view and written model (the LP with the purchases fixed) as
    a full read's."""
    from planner.solve.decompose import chunk_index, cut_groups, point_cuts
    from planner.solve.workers import make_pricer

    from planner.model.stages import violations

    t0 = time.perf_counter()
    broken = violations(inp, n)  # purchases over a pool's cap or a site's power: nothing to price
    if broken:
        return infeasible_plan(inp, n, broken, time.perf_counter() - t0, timings, time_limit_s)
    chunks = chunk_index(inp, "week")
    cut_by = cut_groups(inp)
    pricer = make_pricer(inp, chunks, cut_by, executor)
    try:
        priced = pricer.price(n, warm_bases(warm, chunks, pricer),
                              solution="costs" if decision else "plan+cuts" if keep_cuts else True)
    finally:
        pricer.close()
    read = costs_plan if decision else plan_from_priced
    plan = read(inp, n, priced, pricer, chunks, cut_by, time.perf_counter() - t0, timings, write_model, time_limit_s)
    if keep_cuts and plan.recourse is not None:
        plan.recourse["cuts"] = point_cuts(inp, n, priced, pricer.groups)
    if risk and len(inp.scenarios) > 1 and plan.status.has_plan:
        t1 = time.perf_counter()
        plan.risk = risk_of(plan, make_plan, executor, time_limit_s, mip_gap)
        plan.timings["risk"] = time.perf_counter() - t1
    return plan
