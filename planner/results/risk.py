"""Risk view of a two-stage (scenario) plan: per-scenario cost, worst case, VSS and EVPI.

The plan picks one reserved purchase for all scenarios (first stage) and
on-demand / spot per scenario (recourse). With RP the stochastic plan's expected
objective:

- EEV: plan on the probability-weighted mean forecast, then fix its purchases and
  take the cheapest recourse in every scenario; VSS = EEV - RP >= 0 is what
  planning against scenarios saves over planning against one point forecast.
- WS: plan each scenario alone, knowing it will happen; EVPI = RP - WS >= 0 is
  what a perfect forecast would be worth.
- With a scenario tree (purchases on later dates wait for what is known then, planner.inputs.tree): FS is the
  same plan with every purchase common to all scenarios; value of waiting = FS - RP >= 0 (negative
  possible under whole-term judgement, as VSS: RP is then the horizon cost of purchases judged over the term).

Objectives include the shortfall penalty, as in the formulation. A value within what its solves' achieved gaps
leave unknown of zero is reported as 0 (a MIP solved to a gap g is only known to within g of its optimum): EVPI
within RP's and the WS plans' gaps, the value of waiting within FS's and RP's; a VSS only when negative within
RP's (EEV is exact at the mean plan's purchases: a positive VSS is proven).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.inputs.arrays import PlanInputs, first_stage, with_demand
from planner.results.plan import Plan


@dataclass(frozen=True)
class RiskView:
    """What a plan over scenarios risks: EVPI, VSS, the worst case and the cost spread."""
    expected_cost_usd: float
    worst_case_usd: float
    worst_scenario: str
    eev_usd: float  # expected objective of the mean-forecast plan's purchases
    ws_usd: float  # expected objective with perfect information
    vss_usd: float
    evpi_usd: float
    mean_plan_purchases: list[int]
    first_stage_usd: float | None = None  # expected objective with every purchase common to all scenarios
    value_of_waiting_usd: float | None = None  # first_stage_usd - the tree's: what waiting for information saves
    # per figure, how far its solves' achieved gaps leave it unknown (USD): a figure within that of zero is reported
    # as 0, so a 0 here is "not proven non-zero", not "proven zero" (plan.json ``risk_view_unproven_usd``)
    unproven_usd: dict | None = None


def _clamp(value: float, err: float, proven_above: bool = False) -> float:
    """``value`` (a difference of objectives, ``err`` the most their solves' gaps leave it unknown by, USD), or 0
    when it is within that of zero: its sign is not proven there. ``proven_above``: a positive value is a proven
    lower bound (VSS = EEV - RP: EEV is exact at the mean plan's purchases and RP at most the plan's cost above
    the optimum), so only a negative one within ``err`` is zeroed."""
    if proven_above and value > 0:
        return value
    return 0.0 if abs(value) <= err + 1e-6 else value


def unproven(objective: float, solve) -> float:
    """How far above its optimum a solve's ``objective`` may be (USD): its achieved relative gap of it (0 for an LP or
    a plan of fixed purchases: exact). Not its bound's distance: a decomposed solve's bound is the master's, which
    can leave out costs the plan reports (the inventory's own, fixed whatever is bought)."""
    gap = getattr(solve, "mip_gap", None)
    status = getattr(getattr(solve, "status", None), "value", getattr(solve, "status", None))
    if status not in (None, "optimal") and (gap is None or not np.isfinite(gap)):
        return float("inf")  # stopped short (a time limit) with no gap known: nothing about it is proven
    gap = gap if gap is not None and np.isfinite(gap) else 0.0  # (an LP, or fixed purchases: exact)
    return abs(float(objective)) * float(gap)


@dataclass(frozen=True)
class SubPlan:
    """One of the risk view's extra problems: ``kind`` "mean" (the probability-weighted mean forecast), "ws" (scenario
    ``scenario`` alone, known to happen) or "first" (a tree's plan with every purchase common to all scenarios)."""
    kind: str
    scenario: int | None = None


def sub_problems(inp: PlanInputs) -> list[SubPlan]:
    """The independent problems of ``inp``'s risk view, in the order they are read: the mean plan, the first-stage
    plan (a tree only), then each scenario alone. EEV (the mean plan's purchases fixed) comes after them."""
    return ([SubPlan("mean")] + ([SubPlan("first")] if inp.reserved_member is not None else [])
            + [SubPlan("ws", s) for s in range(len(inp.scenarios))])


def sub_inputs(inp: PlanInputs, task: SubPlan) -> PlanInputs:
    """The inputs of ``task`` (:class:`SubPlan`), made from the plan's own ``inp``."""
    if task.kind == "mean":
        mean = np.einsum("s,skt->kt", inp.probability, inp.demand)[None]
        return with_demand(inp, mean, ["mean"], np.array([1.0]))
    if task.kind == "first":
        return first_stage(inp)
    if task.kind == "ws":
        s = int(task.scenario)
        return with_demand(inp, inp.demand[s:s + 1], [inp.scenarios[s]], np.array([1.0]))
    raise ValueError(f"unknown sub-plan kind {task.kind!r}")


def solve_sub(make_plan, inp: PlanInputs, task: SubPlan) -> tuple[float, np.ndarray, float]:
    """``task`` solved by ``make_plan``: its objective, its purchases (units per commitments row) and how far above
    its optimum the objective may be (:func:`unproven`, USD)."""
    return solve_sub_ended(make_plan, inp, task)[0]


def solve_sub_ended(make_plan, inp: PlanInputs, task: SubPlan) -> tuple[tuple[float, np.ndarray, float], str]:
    """:func:`solve_sub`'s answer and how its solve ended (``"optimal"``, or e.g. ``"feasible"``: stopped by its time
    limit with a plan in hand)."""
    sub = make_plan(sub_inputs(inp, task))
    value = float(sub.objective), sub.purchases["units"].to_numpy(), unproven(sub.objective, sub.solve)
    return value, str(getattr(sub.status, "value", sub.status))


def eev_purchases(inp: PlanInputs, n_mean: np.ndarray) -> np.ndarray:
    """EEV's purchases: the mean plan's ``n_mean`` in every node of the tree (the same at each date whatever happened
    before), per row of ``inp.commitments``."""
    n_mean = np.asarray(n_mean)
    origin = inp.commitments["origin"].to_numpy(int) if "origin" in inp.commitments else np.arange(len(n_mean))
    return n_mean[origin]


def risk_view(plan: Plan, make_plan, solve_many=None) -> RiskView | None:
    """Solve the extra problems behind VSS and EVPI; None for a single-scenario plan.

    ``make_plan(inputs, fixed_reserved=None)`` solves one problem (passed in, so this
    module stays below the pipeline). ``solve_many(inp, tasks)``, when given, solves the independent
    problems (:func:`sub_problems`) at once, e.g. on worker processes, and returns ``(objective, units)`` per
    task in task order, as :func:`solve_sub` would one by one; EEV is then solved here by ``make_plan``.
    """
    inp: PlanInputs = plan.inputs
    if len(inp.scenarios) < 2:
        return None
    rp = plan.objective
    rp_err = unproven(rp, plan.solve)  # each figure is zeroed within what the solves' own gaps leave unknown
    tasks = sub_problems(inp)
    solved = (solve_many(inp, tasks) if solve_many is not None else
              [solve_sub(make_plan, inp, t) for t in tasks])
    by = dict(zip(tasks, solved))
    n_mean = by[SubPlan("mean")][1]
    eev = make_plan(inp, fixed_reserved=eev_purchases(inp, n_mean)).objective
    first, waiting, fs_err = None, None, None
    if inp.reserved_member is not None:  # a tree: the same plan made without waiting for information
        first = by[SubPlan("first")][0]
        fs_err = by[SubPlan("first")][2] + rp_err
        waiting = _clamp(first - rp, fs_err)
    ws, ws_err = 0.0, 0.0
    for s in range(len(inp.scenarios)):
        ws += inp.probability[s] * by[SubPlan("ws", s)][0]
        ws_err += inp.probability[s] * by[SubPlan("ws", s)][2]
    totals = plan.scenario_costs.set_index("scenario")["total"]
    return RiskView(expected_cost_usd=plan.cost["total"], worst_case_usd=float(totals.max()),
                    worst_scenario=str(totals.idxmax()), eev_usd=eev, ws_usd=ws,
                    vss_usd=_clamp(eev - rp, rp_err, proven_above=True), evpi_usd=_clamp(rp - ws, rp_err + ws_err),
                    mean_plan_purchases=[int(x) for x in n_mean], first_stage_usd=first, value_of_waiting_usd=waiting,
                    unproven_usd={"vss_usd": rp_err, "evpi_usd": rp_err + ws_err, "value_of_waiting_usd": fs_err})
