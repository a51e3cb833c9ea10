"""The plan of a decomposed solve: the whole model's columns read from every batch's pricing at the purchases
(:mod:`planner.solve.recourse`), the bound and gap the Benders loop proved, the batches' summed duals and last
bases (a warm start for the re-solves)."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pandas as pd

from planner.inputs.arrays import PlanInputs
from planner.model import build_model
from planner.results.plan import Plan, extract_plan


def column_layout(inp: PlanInputs):
    """The whole model's columns and objective for ``inp`` (no rows, no purchases fixed): what reading several
    plans of the same inputs shares (``layout`` of :func:`plan_from_priced`; the memo's points). At XL, 0.65 s a
    read saved."""
    return build_model(inp, rows=False)


def _with_purchases(layout, n: np.ndarray):
    """``layout`` (:func:`column_layout`) with the purchases fixed at ``n``: the model ``build_model(inp,
    fixed_reserved=n, rows=False)`` lays out (the same arrays), its own bounds, start and row counts."""
    cols = layout.families["n"]["col"].to_numpy()
    lower, upper, start = layout.lower.copy(), layout.upper.copy(), layout.start.copy()
    lower[cols] = upper[cols] = start[cols] = np.asarray(n, float)
    return replace(layout, lower=lower, upper=upper, start=start, rows={}, seconds=0.0)


def plan_from_priced(inp: PlanInputs, n: np.ndarray, priced: list, pricer, chunks: list, cut_by: str,
                     seconds: float, timings: dict | None = None, write_model=None, time_limit_s=None,
                     allocation: bool = True, keep_bases: bool = True, layout=None, reuse: dict | None = None,
                     detail: bool = True) -> Plan:
    """The plan of the purchases ``n`` from every batch's pricing at them (``pricer``'s batches of ``chunks``);
    ``allocation=False``: without the per-class allocation table, ``detail=False``: without the tables the memo's
    figures never read (:func:`planner.results.plan.extract_plan`);
    ``keep_bases=False``: ``plan.recourse`` keeps no bases (a pricing that left them on its workers); ``layout``:
    ``inp``'s :func:`column_layout` when the caller keeps one (else built here); ``reuse``: a dict kept with it
    across reads (:func:`planner.solve.recourse.assemble`)."""
    from types import SimpleNamespace

    from planner.solve.decompose import row_counts

    upper = float(sum(r.values.sum() for r in priced))
    bd = SimpleNamespace(n=n, fixed=True, status="optimal", gap=0.0, lower=upper, seconds=seconds,
                         chunks=sum(pricer.groups),
                         cut_by=cut_by, iterations=1, workers=pricer.workers, pricer=pricer.name,
                         chunk_periods=chunks, keys=pricer.keys(), priced=priced, row_counts=row_counts(pricer))
    plan = plan_from_batches(inp, bd, 0.0, time_limit_s, dict(timings or {}), write_model, allocation, keep_bases,
                             layout, reuse, detail)
    plan.solve = replace(plan.solve, message=f"purchases fixed; the recourse priced in {len(chunks)} weekly batches, "
                                             f"short weeks joined ({pricer.workers} worker(s), {pricer.name})")
    return plan


def costs_plan(inp: PlanInputs, n: np.ndarray, priced: list, pricer, chunks: list, cut_by: str, seconds: float,
               timings: dict | None = None, write_model=None, time_limit_s=None) -> Plan:
    """What the purchases ``n`` cost, from every batch's costs at them (``price(..., solution="costs")``): the
    :func:`decision_from_batches` of a pricing with the purchases fixed (the risk view's EEV needs its objective
    only). Its purchases, costs, objective and per-scenario costs are :func:`plan_from_priced`'s; its per-period
    tables are empty; ``recourse`` holds the batches' bases; ``write_model``: the whole model with ``n`` fixed."""
    from types import SimpleNamespace

    from planner.model.objective import first_stage_cost
    from planner.solve.decompose import row_counts
    from planner.solve.recourse import portable_basis

    # the objective at n as the loop prices it (purchases' cost, or NPV, + every batch's recourse)
    upper = float(first_stage_cost(inp) @ np.asarray(n, float)) + float(sum(r.values.sum() for r in priced))
    bd = SimpleNamespace(n=n, status="optimal", gap=0.0, lower=upper, upper=upper, seconds=seconds,
                         chunks=sum(pricer.groups), cut_by=cut_by, iterations=1, workers=pricer.workers,
                         pricer=pricer.name, priced=priced, row_counts=row_counts(pricer))
    if write_model is not None:  # the LP priced: the whole model with the purchases fixed
        build_model(inp, fixed_reserved=np.asarray(n, float)).write(write_model)
    plan = decision_from_batches(inp, bd, 0.0, time_limit_s, dict(timings or {}))
    plan.solve = replace(plan.solve, message=f"purchases fixed; the recourse's costs priced in {len(chunks)} weekly "
                                             f"batches ({pricer.workers} worker(s), {pricer.name})")
    plan.recourse = {"chunks": chunks, "cut_by": cut_by, "units": np.asarray(n, float),
                     "bases": [portable_basis(r.basis) for r in priced]}  # (a later pricing's warm start)
    return plan


def infeasible_plan(inp: PlanInputs, n: np.ndarray, broken: list[str], seconds: float, timings: dict | None = None,
                    time_limit_s=None) -> Plan:
    """The plan of purchases ``n`` that break first-stage rows (``broken``: :func:`planner.model.stages.violations`):
    no plan, status infeasible, as the whole model with ``n`` fixed ends; its notes say which rows and by how
    much (a batch's recourse cannot be priced at them, and a solver's "infeasible" would not say why)."""
    from planner.model.stages import why_infeasible
    from planner.solve.monolithic import SolveResult, Status

    model = build_model(inp, fixed_reserved=n, rows=False)
    why = why_infeasible(broken)
    result = SolveResult(status=Status.infeasible, values=np.zeros(model.n_variables), objective=float("nan"),
                         mip_gap=None, best_bound=None, seconds=seconds, backend="highs", message=why,
                         time_limit_s=time_limit_s)
    timings = dict(timings or {})
    timings["build"] = model.seconds
    plan = extract_plan(inp, model, result, timings)
    plan.notes.append(why)
    return plan


def finite(x):
    """``x``, or None where it is not a finite number (a bound not yet known: JSON has no infinity)."""
    return float(x) if x is not None and np.isfinite(x) else None


def _weeks_named(inp: PlanInputs, chunks: list, most: int = 8) -> str:
    """The weeks (batches of period positions) named by their first period's date, the first ``most`` of them."""
    starts = sorted({pd.Timestamp(inp.periods[int(np.min(c))]).strftime("%Y-%m-%d") for c in chunks if len(c)})
    named = ", ".join(starts[:most]) + (f" and {len(starts) - most} more" if len(starts) > most else "")
    return f"the week{'s' if len(starts) != 1 else ''} starting {named}"


def plan_from_batches(inp: PlanInputs, bd, gap: float, limit, timings: dict, write_model=None,
                       allocation: bool = True, keep_bases: bool = True, layout=None, reuse: dict | None = None,
                       detail: bool = True) -> Plan:
    """The plan of the purchases ``bd.n`` from every batch's pricing at them (:mod:`planner.solve.recourse`): the
    whole model is built with the purchases fixed (its columns, for the plan's tables; from ``layout``, the
    inputs' :func:`column_layout`, when given), never solved. ``allocation``, ``detail``: as
    :func:`planner.results.plan.extract_plan`."""
    from planner.solve.recourse import assemble

    t0 = time.perf_counter()
    if write_model is not None:  # the MILP the decomposition solved (purchases free), or the LP of fixed ones
        build_model(inp, fixed_reserved=bd.n if getattr(bd, "fixed", False) else None).write(write_model)
    model = build_model(inp, fixed_reserved=bd.n, rows=False) if layout is None else \
        _with_purchases(layout, bd.n)  # its columns: the plan's tables are read from them
    model.rows = dict(bd.row_counts or {})  # the rows the batches solved, for the plan's statistics
    values = assemble(inp, model, bd.chunk_periods, [(k, b, r.solution) for (k, b), r in zip(bd.keys, bd.priced)],
                      bd.n, reuse)
    tie = model.tie_at(values)  # (tie-breaks: not costs)
    held = tie  # what the loop's bound holds of them: a decision's pricing leaves the owned-GPU tie-break out
    if not getattr(bd, "fixed", False) and len(model.owned[0]):
        held -= float(model.owned[1] @ values[model.owned[0]])
    result = _result(bd, gap, limit, values, float(model.cost @ values) - tie, held)
    timings["build"] = model.seconds
    timings["solve"] = bd.seconds
    plan = extract_plan(inp, model, result, timings, allocation=allocation, detail=detail)
    plan.timings["extract"] = time.perf_counter() - t0
    plan.dual_sums = summed_duals(bd.priced)
    fell = sum(bool(getattr(r, "fell_back", False)) for r in bd.priced)
    plan.weeks_fell_back = int(fell)  # (read by the memo's figures: its re-solves' own count, in a note of theirs)
    if fell:  # (costs are the same; the tie-broken reading of those weeks is not held to one answer)
        plan.notes.append(f"{fell} of {len(bd.priced)} weeks were re-solved at HiGHS's default settings because the "
                          "plan's tighter ones did not finish: the costs are unaffected, but in those weeks which idle "
                          "reserved GPUs are shown running the work (tranche use, stranded dollars, allocation, "
                          "chargeback) is one of several equal-cost answers and may differ between runs ("
                          + _weeks_named(inp, [c for c, r in zip(bd.chunk_periods, bd.priced) if getattr(r, "fell_back", False)])
                          + "; this counts the plan's own weeks, not the purchase memo's re-solves)")
    from planner.solve.recourse import portable_basis

    plan.recourse = {"chunks": bd.chunk_periods, "cut_by": bd.cut_by, "units": np.asarray(bd.n, float),
                     "bases": [portable_basis(r.basis) if keep_bases else None for r in bd.priced]}
    return plan


def summed_duals(priced: list) -> dict:
    """The shadow-price sums over every batch (sums over disjoint periods add up)."""
    out: dict = {"budget": {}}
    for r in priced:
        for name, arr in (r.dual_sums or {}).items():
            out[name] = out[name] + arr if name in out else arr.copy()
    return out


def decision_from_batches(inp: PlanInputs, bd, gap: float, limit, timings: dict, write_model=None) -> Plan:
    """The purchases ``bd.n`` of a decomposed solve and what they cost, read from each batch's costs at them
    (``solve_benders(final="costs")``) without building the whole model: a whole-term decision's (its model at
    three hourly years x 5 scenarios is 27 M columns).

    Its purchases, ``cost``, ``objective``, ``scenario_costs``, ``commitments``, ``shortfall_gpu_hours`` and solve
    status are those :func:`plan_from_batches` reads (a test compares them); its per-period tables (allocation,
    fleet, shortfall, cash, coverage) are empty and ``reserved_utilisation`` is NaN: a decision reports its
    purchases and their costs only."""
    import pandas as pd

    from planner.inputs import rented
    from planner.results.plan import (purchases_table, reserved_by_scenario, baseline_all_on_demand,
                                      commitment_costs, whole_units)

    t0 = time.perf_counter()
    if write_model is not None:  # the MILP the decomposition solved (purchases free)
        build_model(inp).write(write_model)
    n = whole_units(inp, bd.n)
    S, K = len(inp.scenarios), inp.K
    rent = np.zeros((S, len(rented.KINDS)))
    covered = np.zeros(S)
    short = np.zeros((S, K))
    for r in bd.priced:
        rent += r.costs["rented"]
        covered += r.costs["covered"]
        short += r.costs["short"]
    rent[:, rented.index("on_demand")] -= covered  # what savings plans paid is not billed at on-demand
    kinds = rented.reported(inp.pools)
    p = np.asarray(inp.probability, float)
    commitments = commitment_costs(inp, n)
    reserved_cost = commitments.pop("reserved_usd")
    cost = {"reserved": reserved_cost, **{kd: float(p @ rent[:, rented.index(kd)]) for kd in kinds}}
    cost["total"] = reserved_cost + sum(cost[kd] for kd in kinds)
    expected_short = p @ short  # (K,) GPU-hours
    tie = float(sum(r.costs.get("tie", 0.0) for r in bd.priced))  # the objective's tie-breaks at n: not costs
    objective = cost["total"] + float(inp.penalty_by_class @ expected_short)
    if inp.config.finance.npv:  # the objective the solver minimised: the NPV (the loop's priced value at n)
        objective = float(bd.upper) - tie
    own = np.asarray(reserved_by_scenario(inp, n, reserved_cost), float) * np.ones(S)
    scenario_costs = pd.DataFrame([{"scenario": scen, "probability": float(p[s]), "reserved": float(own[s]),
                                    **{kd: float(rent[s, rented.index(kd)]) for kd in kinds},
                                    "total": float(own[s] + sum(rent[s, rented.index(kd)] for kd in kinds)),
                                    "shortfall_gpu_hours": float(short[s].sum())}
                                   for s, scen in enumerate(inp.scenarios)])
    result = _result(bd, gap, limit, np.zeros(0), objective, tie)
    timings["solve"] = bd.seconds
    empty = pd.DataFrame()
    plan = Plan(name=inp.config.name, status=result.status, solve=result, inputs=inp, purchases=purchases_table(inp, n),
                allocation_positions=empty, fleet=empty, shortfall=empty, spot=empty, scenario_costs=scenario_costs,
                cost=cost, objective=objective, shortfall_gpu_hours=float(expected_short.sum()),
                baseline_all_on_demand=baseline_all_on_demand(inp), reserved_utilisation=float("nan"),
                timings=timings, commitments=commitments,
                stats={"periods": inp.T, "scenarios": S, "classes": K, "pools": inp.P,
                       "integer_variables": int(len(n)), "rows_per_family": dict(bd.row_counts or {})})
    plan.timings["extract"] = time.perf_counter() - t0
    return plan


def _result(bd, gap: float, limit, values: np.ndarray, objective: float, tie: float = 0.0):
    """How a decomposed solve ended, as a SolveResult: status, proven bound and gap, and what was done. ``tie``:
    what the objective's tie-breaks add at the plan (the loop's bound holds them: it is reported without)."""
    from planner.solve.monolithic import SolveResult, Status

    status = Status.optimal if bd.status == "optimal" else Status.feasible
    what = "proven" if status is Status.optimal else "not proven (time limit)"
    bound = finite(bd.lower - tie) if bd.lower is not None else None
    return SolveResult(status=status, values=values, objective=objective, mip_gap=finite(bd.gap), best_bound=bound,
                       seconds=bd.seconds, backend="highs", time_limit_s=limit, mip_gap_limit=gap,
                       message=f"Benders decomposition, {bd.chunks} cuts per iteration (one per {bd.cut_by}), "
                               f"{bd.iterations} iterations, {bd.workers} pricing worker(s) ({bd.pricer}): every "
                               f"purchase plan priced on the full hourly model, "
                               + (f"bound {bound:,.2f} USD, gap {what}" if bound is not None else
                                  "no bound yet (the time limit came before the first master solve): not proven"))
