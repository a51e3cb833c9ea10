"""The recipe: model file -> validated inputs -> model -> solve -> plan -> outputs.

Each step is a call into its own module; nothing here models or formats.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from planner.core.options import PlanOptions
from planner.inputs import io
from planner.inputs import validate
from planner.inputs.config import ModelConfig, load_model
from planner.inputs.arrays import PlanInputs, build_inputs
from planner.model import build_model
from planner.results.plan import Plan, extract_plan
from planner.results.risk import risk_view
from planner.pipeline.sub_plans import many_solver
from planner.solve.monolithic import solve
from planner.pipeline.benders import BENDERS_AUTO_CELLS, benders_plan, fixed_plan, monolithic_note, use_benders  # noqa: F401


import planner.report  # noqa: E402,F401  (registers the writers a Plan's summary(), to_json() and to_excel() call)


def load_inputs(model: str | Path | ModelConfig, *, demand: str | Path | None = None,
                prices: str | Path | None = None) -> PlanInputs:
    """Read and validate everything a plan needs; raises InputError listing every problem."""
    config = model if isinstance(model, ModelConfig) else load_model(model)
    if demand is not None or prices is not None:
        config = config.with_overrides(demand=Path(demand) if demand else None,
                                       prices=Path(prices) if prices else None)
    tables = validate.validate(
        config,
        io.read_table(config.demand, "demand"),
        io.read_table(config.prices, "price sheet"),
        io.read_table(config.inventory, "inventory") if config.inventory else None,
        io.read_table(config.availability, "availability") if config.availability else None,
        {name: io.read_table(path, f"price sheet of scenario {name}") for name, path in config.scenario_prices.items()},
    )
    return build_inputs(config, tables)


def make_plan(inp: PlanInputs, options: PlanOptions | None = None, /, **overrides) -> Plan:
    """Build, solve and extract one plan, made as ``options`` says (:class:`~planner.core.options.PlanOptions`;
    keyword ``overrides`` of its fields are applied on top, e.g. ``make_plan(inp, mip_gap=0.0)``).

    ``backend``, ``time_limit_s`` and ``mip_gap`` override the model file's ``[solver]`` settings;
    ``fixed_reserved`` (instances per row of ``inp.commitments``) fixes the purchases. ``extend(model)`` is
    called on the built :class:`~planner.model.PlanModel` before solving: add rows and columns there (both
    backends solve them); with it, the exact reductions (merged periods, dominated options) are off, so
    every (class, pool, period) column exists for your rows. ``write_model`` writes the model solved
    (``.lp`` or ``.mps``). ``risk`` (scenario inputs only) also solves the 2 + S extra MILPs of the
    risk view (EVPI, VSS, worst case); pass ``risk=False`` to skip them. ``shadow`` (default: when the
    model file sets a ``[budget]``) adds the shadow prices (:mod:`planner.solve.duals`, one more LP solve).
    ``progress`` draws a bar of the Benders iterations (bound, incumbent, gap) on stderr when it is a terminal.
    ``executor`` (:mod:`planner.core.executors`): where the decomposition prices its batches (worker processes or
    a Dask cluster; default here). Long horizons with the purchases fixed are priced batch by batch too;
    ``warm`` (a decomposed plan's ``recourse``: its batches' last bases) starts the first pricing of either from
    those bases when the batches are the same (where the loop starts, never what it proves).
    """
    o = PlanOptions.of(options, **overrides)
    backend, time_limit_s, mip_gap, timings = o.backend, o.time_limit_s, o.mip_gap, o.timings
    fixed_reserved, risk, extend, write_model, shadow = o.fixed_reserved, o.risk, o.extend, o.write_model, o.shadow
    progress, executor, warm = o.progress, o.executor, o.warm
    allocation = not o.decision
    s = inp.config.solver
    if o.common and fixed_reserved is not None:
        raise ValueError("common=True (every purchase common to all scenarios) decides the purchases; it cannot be "
                         "given fixed_reserved too (fix the first-stage inputs' purchases instead: "
                         "planner.inputs.arrays.first_stage)")
    benders = fixed_reserved is None and extend is None and use_benders(inp, backend or s.backend)
    if o.common and fixed_reserved is None and inp.reserved_member is not None and \
            (not benders or not o.decision or inp.config.finance.cvar_weight > 0):
        from planner.inputs.arrays import first_stage

        inp = first_stage(inp)  # every purchase common: the first-stage inputs (a decomposed decision prices them
        # on the tree's own batches instead: pipeline.benders)
    f = inp.config.finance
    if f.cvar_weight > 0 and len(inp.scenarios) > 1 and fixed_reserved is None and extend is None:
        return _cvar_plan(inp, backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap, timings=timings,
                          risk=risk, write_model=write_model, shadow=shadow)
    timings = dict(timings or {})
    b = inp.config.budget
    if shadow is None:
        shadow = b.max_total_usd is not None or b.monthly
    if benders:
        plan = benders_plan(inp, make_plan, backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap, timings=timings,
                            risk=risk, write_model=write_model, progress=progress, executor=executor,
                            allocation=allocation, decision=o.decision, warm=warm, common=o.common,
                            keep_cuts=o.keep_cuts)
        if not o.decision:
            plan = _with_exit_value(plan, inp, backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap,
                                    executor=executor)
        return _with_shadow(plan, shadow)
    if fixed_reserved is not None and extend is None and use_benders(inp, backend or s.backend):
        return _with_shadow(fixed_plan(inp, make_plan, np.asarray(fixed_reserved, float), timings, risk, write_model,
                                       executor, time_limit_s, mip_gap, warm, o.keep_cuts, o.decision), shadow)
    if fixed_reserved is not None:  # purchases no plan may hold (an offer's max_units, a cap): never priced
        from planner.model.stages import violations
        from planner.results.decomposed import infeasible_plan

        broken = violations(inp, np.asarray(fixed_reserved, float))
        if broken:
            return infeasible_plan(inp, np.asarray(fixed_reserved, float), broken, 0.0, timings, time_limit_s)
    reduce = None if extend is None else False
    model = build_model(inp, fixed_reserved=fixed_reserved, merge_periods=reduce,
                        dominance=extend is None)
    if extend is not None:
        extend(model)
    timings["build"] = model.seconds
    note = None if fixed_reserved is not None else monolithic_note(inp, backend or s.backend, extend is None)
    if write_model is not None:
        model.write(write_model)
    tied = None
    if (backend or s.backend) == "highs" and extend is None and allocation:  # a plan (not a decision's costs) read
        # as a decomposed plan is: its recourse at the purchases, each block over its probability (solve.reading)
        from planner.model.blocks import scenario_hours
        from planner.solve.reading import tied_lp

        tied = tied_lp(model, scenario_hours(model.blocks, inp.hours), inp.probability)
    result = solve(model, backend or s.backend, time_limit_s if time_limit_s is not None else s.time_limit_s,
                   s.mip_gap if mip_gap is None else mip_gap, s.threads, tied=tied)
    timings["solve"] = result.seconds
    t0 = time.perf_counter()
    plan = extract_plan(inp, model, result, timings, allocation=allocation)
    plan.timings["extract"] = time.perf_counter() - t0
    if result.read_fell_back:  # (solve.reading: the MIP's own values stand)
        plan.read_fell_back = True
        plan.notes.append("the plan's LP with the purchases fixed did not end optimal (at its tighter settings, in the "
                          "time the plan's limit left), so the plan is read from the MIP's own solution: the costs are "
                          "unaffected, but which idle reserved GPUs are shown running the work (tranche use, stranded "
                          "dollars, allocation, chargeback) is one of several equal-cost answers and may differ from a "
                          "decomposed plan's and between runs")
    if result.row_duals is not None and extend is None:  # the LP that made the plan left its duals
        from planner.solve.duals import family_sums

        plan.dual_sums = family_sums(model, inp, result.row_duals)
    if note:
        plan.notes.append(note)
    if risk and len(inp.scenarios) > 1 and plan.status.has_plan:
        t0 = time.perf_counter()
        # the view reads each sub-plan's objective and purchases only: decisions (no per-period tables, no exit
        # value's extra solve)
        settings = dict(backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap, risk=False, shadow=False,
                        executor=executor, decision=True)
        sub = lambda i, fixed_reserved=None: make_plan(  # noqa: E731
            i, fixed_reserved=fixed_reserved, extend=extend, **settings)
        # side by side on local processes where that pays (never with the caller's own rows: extend)
        plan.risk = risk_view(plan, sub, many_solver(executor, inp, settings, make_plan) if extend is None else None)
        plan.timings["risk"] = time.perf_counter() - t0
    if fixed_reserved is None and extend is None and not o.decision:
        plan = _with_exit_value(plan, inp, backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap,
                                executor=executor)
    return _with_shadow(plan, shadow and extend is None)


def _cvar_plan(inp: PlanInputs, *, risk: bool, shadow, **solve) -> Plan:
    """The mean-CVaR plan (``[finance] cvar_weight`` > 0, :mod:`planner.model.cvar`) with the risk-neutral plan
    beside it: ``plan.cvar`` says what less term risk costs (expected cost up, CVaR down)."""
    from dataclasses import replace

    from planner.model.cvar import add_cvar, cvar

    f = inp.config.finance
    neutral_inp = replace(inp, config=replace(inp.config, finance=replace(f, cvar_weight=0.0)))
    neutral = make_plan(neutral_inp, risk=False, shadow=False, **solve)
    cols: dict = {}  # the CVaR columns (eta, the tail excess) of the model solved
    plan = make_plan(inp, extend=lambda model: cols.update(add_cvar(model, inp, f.cvar_alpha, f.cvar_weight)),
                     risk=False, shadow=False, **solve)
    if not plan.status.has_plan:
        return plan
    plan = _on_expected_cost(plan, inp, solve, cols)
    if risk:  # EVPI, VSS, worst case of these purchases, on expected cost (the sub-plans are single-scenario or fixed)
        t0 = time.perf_counter()
        sub = lambda i, fixed_reserved=None: make_plan(  # noqa: E731
            i, fixed_reserved=fixed_reserved, risk=False, shadow=False, decision=True,
            **{k: v for k, v in solve.items() if k not in ("timings", "write_model")})
        plan.risk = risk_view(plan, sub)
        plan.timings["risk"] = time.perf_counter() - t0

    def tail(p: Plan) -> float:  # the CVaR of each scenario's cost and shortfall penalty, as the solve weighs it
        sc = p.scenario_costs
        return cvar(sc["total"].to_numpy(float) + _penalty_by_scenario(p), sc["probability"].to_numpy(float),
                    f.cvar_alpha)

    def expected(p: Plan) -> float:  # expected cost and shortfall penalty
        sc = p.scenario_costs
        return float(sc["probability"].to_numpy(float) @ (sc["total"].to_numpy(float) + _penalty_by_scenario(p)))

    plan.cvar = {"cvar_alpha": f.cvar_alpha, "cvar_weight": f.cvar_weight, "cvar_usd": tail(plan),
                 "expected_cost_usd": float(plan.cost["total"])}
    if neutral.status.has_plan:
        plan.cvar |= {"risk_neutral_cost_usd": float(neutral.cost["total"]),
                      "risk_neutral_cvar_usd": tail(neutral),
                      "cost_of_less_risk_usd": expected(plan) - expected(neutral) + 0.0}
        plan.notes.append(
            f"risk preference: mean-CVaR (weight {f.cvar_weight:g}, alpha {f.cvar_alpha:g}): CVaR "
            f"{plan.cvar['cvar_usd']:,.0f} USD against the risk-neutral plan's {plan.cvar['risk_neutral_cvar_usd']:,.0f}; "
            f"expected cost {plan.cvar['expected_cost_usd']:,.0f} against {plan.cvar['risk_neutral_cost_usd']:,.0f} USD "
            f"(less term risk costs {_whole(plan.cvar['cost_of_less_risk_usd'])} USD"
            + (", shortfall penalty included" if plan.shortfall_gpu_hours > 0 or neutral.shortfall_gpu_hours > 0
               else "") + ")")
    b = inp.config.budget
    return _with_shadow(plan, (b.max_total_usd is not None or b.monthly) if shadow is None else shadow)


def _penalty_by_scenario(p: Plan) -> np.ndarray:
    """Each scenario's shortfall penalty (USD: its unmet GPU-hours at each class's penalty), in scenario order."""
    inp = p.inputs
    out = np.zeros(len(inp.scenarios))
    sf = p.shortfall
    if sf is None or not len(sf):
        return out
    pen = dict(zip(inp.classes, np.asarray(inp.penalty_by_class, float)))
    usd = sf["unmet_gpu_hours"].to_numpy(float) * sf["workload_class"].map(pen).to_numpy(float)
    at = {s: i for i, s in enumerate(inp.scenarios)}
    np.add.at(out, sf["scenario"].map(at).to_numpy(int), usd)
    return out


def _whole(usd: float) -> str:
    """Whole dollars with thousands separators, never "-0"."""
    return f"{round(float(usd)) + 0:,.0f}"


def _on_expected_cost(plan: Plan, inp: PlanInputs, solve: dict, cols: dict) -> Plan:
    """The mean-CVaR plan reported on its expected figures: its cost is what it pays, its objective the expected cost
    (or the expected NPV under ``objective = "npv"``), shortfall penalty included, the CVaR part (``eta`` and the
    tail excess, an extension column's cost) taken out of both, as the risk view's EEV and WS are.

    - ``cvar_weight`` < 1: every scenario's cost weighs in the objective, so each scenario's recourse is the cheapest
      of the purchases. Under npv the solver's objective is ``(1 - w) E[NPV] + w CVaR``: the expected NPV is
      ``(objective - CVaR part) / (1 - w)`` (it once stayed the mixed objective: a VSS of -4,118 USD where it is
      15,317).
    - ``cvar_weight`` = 1: CVaR alone leaves the scenarios outside the tail free (on-demand rented beside idle
      reserved GPUs, a branch's purchases not made) and the expected cost arbitrary. A second solve minimises the
      expected cost among the plans whose CVaR is at most the first's (lexicographic: ``add_cvar(cap=...)``); its
      plan is reported, with the worse status and the larger gap of the two solves. Where it finds no plan, the
      first solve's own, its objective the mixed one under npv. ``cols``: the first solve's CVaR columns (eta,
      excess): its CVaR is read from their values.

    The solve's best bound is of the mean-CVaR objective, not of the expected figure reported: dropped (None), as
    a whole-term plan's is. The purchases' decision is the one the solves made: never re-decided here."""
    from dataclasses import replace

    from planner.model.cvar import add_cvar
    from planner.solve.monolithic import Status

    f = inp.config.finance
    w = float(f.cvar_weight)
    first = plan
    if w >= 1.0:
        x = np.asarray(plan.solve.values, float)
        cap = float(x[cols["eta"]].sum() + inp.probability @ x[cols["excess"]] / (1.0 - f.cvar_alpha))
        # no slack: the first solve's point meets the cap exactly. A slack of 1e-6 USD was spent trading tail cost
        # for expected cost: 1.3e-6 GPU-hours short, a plan that meets demand reported as not (exit 3)
        lex = make_plan(inp, extend=lambda model: add_cvar(model, inp, f.cvar_alpha, w, cap=cap), risk=False,
                        shadow=False, **{k: v for k, v in solve.items() if k != "write_model"})
        if lex.status.has_plan:
            status = first.status if first.status is not Status.optimal else lex.status
            gaps = (first.solve.mip_gap, lex.solve.mip_gap)
            lex.status = status
            lex.solve = replace(lex.solve, status=status, mip_gap=None if None in gaps else max(gaps),
                                seconds=first.solve.seconds + lex.solve.seconds,
                                message=first.solve.message or lex.solve.message)
            lex.notes = first.notes + [n for n in lex.notes if n not in first.notes]
            lex.timings = {**first.timings, "cvar_second_solve": float(lex.timings.get("solve", 0.0))}
            plan, w = lex, 0.0  # its objective is the expected cost (the CVaR held by a row, not priced)
    ext = plan.cost.pop("extension", 0.0)  # eta and the tail excess: the objective's CVaR part, not a cost paid
    plan.cost["total"] -= ext
    if not f.npv:
        plan.objective -= ext
    elif w < 1.0:
        plan.objective = (plan.objective - ext) / (1.0 - w)
    plan.solve = replace(plan.solve, best_bound=None)
    return plan


def with_memo(plan: Plan, *, executor=None, backend: str | None = None, time_limit_s: float | None = None,
              mip_gap: float | None = None) -> Plan:
    """The plan with its purchase memo (:mod:`planner.memo.build`: each tranche's own utilisation, the downside
    with demand 20 % and 30 % lower, the commitment curve, the next-best plan, cash by year): a few LPs
    with the purchases fixed, mapped over ``executor`` (local processes by default)."""
    if not plan.status.has_plan:
        return plan
    from planner.memo.build import build_memo, fallback_note

    from planner.core.errors import PlannerError

    t0 = time.perf_counter()
    try:
        plan.memo = build_memo(plan, executor=executor, backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap,
                               make_plan=make_plan)
        note = fallback_note(plan.memo)
        if note:
            plan.notes.append(note)
    except PlannerError as exc:  # the plan stands without its memo's re-solves: say why, never lose the plan
        plan.notes.append(f"the purchase memo's re-solves were not computed ({exc}); the plan itself is unaffected")
    plan.timings["memo"] = time.perf_counter() - t0
    return plan


def _with_exit_value(plan: Plan, inp: PlanInputs, **solve) -> Plan:
    """Where terms may be resold: what that option is worth, the plan's objective without it less with it
    (``commitments["exit_value_usd"]``, one more solve)."""
    from planner.inputs.commitments import has_exits, without_exits

    if not has_exits(inp) or not plan.status.has_plan:
        return plan
    t0 = time.perf_counter()
    bare = make_plan(without_exits(inp), risk=False, shadow=False, **solve)
    if bare.status.has_plan:
        plan.commitments["exit_value_usd"] = float(bare.objective - plan.objective)
        plan.commitments["cost_without_exits_usd"] = float(bare.cost["total"])
    plan.timings["exit_value"] = time.perf_counter() - t0
    return plan


def _with_shadow(plan: Plan, shadow: bool) -> Plan:
    """The plan with its shadow prices (purchases fixed, LP duals) when asked and there is a plan."""
    if shadow and plan.status.has_plan:
        from planner.solve.duals import shadow_prices

        t0 = time.perf_counter()
        plan.shadow_prices = shadow_prices(plan)
        plan.timings["shadow_prices"] = time.perf_counter() - t0
    return plan


OUTPUTS = ("plan.xlsx", "plan.json", "allocation.csv", "fleet.csv")  # what ``planner plan`` writes


def write_outputs(plan: Plan, out_dir: str | Path) -> dict[str, Path]:
    """Write plan.json, plan.xlsx and the per-period tables (allocation.csv, fleet.csv) as one publication:
    all from this run, or the old ones stay.

    plan.json and the workbook carry the same ``run_id`` (plan.json key, workbook Assumptions note). The
    CSVs hold every period (the workbook sums long horizons to days, weeks or months).
    """
    import uuid

    from planner.core.atomic import publish_together
    from planner.report import plan_json, write_workbook

    from planner.results.plan import now_utc

    plan.run_id = uuid.uuid4().hex
    plan.created_utc = now_utc()
    t0 = time.perf_counter()

    def xlsx(path):
        write_workbook(plan, path)
        plan.timings["write_xlsx"] = time.perf_counter() - t0

    from planner.report.showback import kept

    with kept(plan):  # the showback tables both files read, computed once
        found = publish_together(out_dir, {"plan.xlsx": xlsx,
                                           "plan.json": lambda path: path.write_text(plan_json(plan), encoding="utf-8"),
                                           "allocation.csv": lambda path: period_csv(plan.allocation, path),
                                           "fleet.csv": lambda path: period_csv(plan.fleet, path)})
    return {"xlsx": found["plan.xlsx"], "json": found["plan.json"], "allocation": found["allocation.csv"],
            "fleet": found["fleet.csv"]}


def period_csv(frame, path: Path) -> None:
    """A per-period table as CSV: ISO periods, text made inert for spreadsheets (:mod:`planner.core.csvsafe`),
    floats to 10 significant digits (:mod:`planner.core.csvwrite`: pandas' text, several times faster)."""
    from planner.core.csvwrite import write_csv
    from planner.core.frames import time_text

    out = frame.copy(deep=False)
    out["period"] = time_text(out["period"], "%Y-%m-%dT%H:%M")
    write_csv(out, path, float_format="%.10g", inert=True)


def run(model: str | Path, out_dir: str | Path | None = None, **options) -> Plan:
    """Plan ``model`` end to end and write its outputs; returns the Plan."""
    t0 = time.perf_counter()
    inp = load_inputs(model, demand=options.pop("demand", None), prices=options.pop("prices", None))
    memo = options.pop("memo", True)
    from planner.pipeline.whole_term import plan_over_term
    from planner.solve.workers import keep_pricers

    with keep_pricers(inp):  # the horizon's batches built once for the plan, its comparison and the memo
        plan = plan_over_term(inp, make_plan, timings={"read_validate": time.perf_counter() - t0}, **options)
        if memo:
            plan = with_memo(plan, backend=options.get("backend"), time_limit_s=options.get("time_limit_s"),
                             mip_gap=options.get("mip_gap"))
    write_outputs(plan, out_dir or default_out_dir(inp.config))
    return plan


def default_out_dir(config: ModelConfig, suffix: str = "") -> Path:
    """outputs/<model name><suffix>, the name made safe for a folder (suffix e.g. "-sweep")."""
    import re

    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", config.name).strip("-.") or "plan"  # never "." or ".."
    return Path("outputs") / (slug + suffix)
