"""``planner plan``'s default: every commitment judged on demand over its whole term (``[term] judge = "term"``).

When a term the plan may buy outlives the demand given, the purchases are decided on the whole-term inputs
(:mod:`planner.inputs.whole_term`: the horizon, then a tree of demand to the end of the longest term, from the
model's ``history`` or held flat under ``[term] drift_per_year``), and the plan reported is the horizon's with
those purchases fixed: every table, sheet and cost of the outputs is the horizon's, as before, and
``plan.term`` says how the purchases were judged, what they are expected to cost over the term per branch,
and what judging them on the horizon alone would have bought.

``judge = "horizon"``, no term past the horizon, or a ``[budget] max_total_usd`` (a cap on the horizon's
spend, which a whole-term model cannot hold) keep today's horizon judgement, named as such.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from planner.core.options import PlanOptions
from planner.pipeline.benders import early_eev, risk_of
from planner.inputs import whole_term
from planner.inputs.term import term_judgement

MAX_SCENARIOS = 243  # scenarios given x branches: beyond this the whole-term tree is not built


def basis_for(inp, history=None) -> whole_term.TermBasis:
    """How demand past the horizon is made: from ``history`` (a path, the model file's ``history``, or a tuple
    ``(periods, hours, values (K, T))`` of demand seen) when there is one, else held flat under
    ``[term] drift_per_year``."""
    t = inp.config.term
    path = history if history is not None else inp.config.history
    if path is None:
        return whole_term.TermBasis(source="drift", growth=np.zeros(inp.K), band=t.drift_per_year,
                                    branches=t.branches, step=t.tree,
                                    note=f"held at the horizon's level +-{100 * t.drift_per_year:.0f} %/year "
                                         f"({'[term] drift_per_year' if t.drift_given else 'the default band; set [term] drift_per_year'}): "
                                         "no history given")
    from planner.forecasting.drift import growth_and_band

    if isinstance(path, tuple):  # (periods, hours, values (K, T) in the inputs' class order): a backtest's trace
        fit = growth_and_band(*path)
    else:
        from planner.forecasting.history import read_history

        h = read_history(path, inp.classes)
        order = [h.classes.index(c) for c in inp.classes]
        fit = growth_and_band(h.periods, np.full(len(h.periods), h.step_hours), h.values[order])
    weight = np.maximum(inp.demand.mean(axis=(0, 2)), 0.0)
    weight = weight / weight.sum() if weight.sum() > 0 else np.full(inp.K, 1.0 / inp.K)
    g, b = float(weight @ fit["growth"]), float(weight @ fit["band"])
    span = f"{fit['days'] / 7:.0f} weeks" if fit["days"] >= 14 else f"{fit['days']} days"
    note = (f"from {span} of history ({fit['points']} {fit['unit']}ly means): growth {100 * g:+.0f} %/year, "
            f"band +-{100 * b:.0f} %/year (demand-weighted over the classes; plan.json term: per class)"
            + ("; " + ", ".join(np.asarray(inp.classes, dtype=object)[fit["clipped"]]) + " clipped at +-100 %/year "
               "(the history cannot sign for more)" if fit["clipped"].any() else ""))
    return whole_term.TermBasis(source="history", growth=fit["growth"], band=fit["band"], branches=t.branches,
                                step=t.tree, note=note)


def why_horizon(inp) -> str | None:
    """Why the purchases are judged on the horizon only (None when the whole term applies)."""
    if inp.config.term.judge == "horizon":
        return '[term] judge = "horizon" asks for it'
    if term_judgement(inp) is None:
        return "no term outlives the horizon"
    if inp.config.budget.max_total_usd is not None:
        return "[budget] max_total_usd caps the horizon's spend, which a whole-term model cannot hold"
    if len(inp.scenarios) * inp.config.term.branches > MAX_SCENARIOS:
        return (f"{len(inp.scenarios)} scenarios x {inp.config.term.branches} branches is over {MAX_SCENARIOS}: "
                "lower [term] branches")
    return None


def plan_over_term(inp, make_plan, options: PlanOptions | None = None, /, history=None, **overrides):
    """The plan ``planner plan`` makes: purchases judged on the whole term where a term outlives the horizon
    (module docstring), else ``make_plan(inp, options)``; ``plan.term`` says which."""
    o = PlanOptions.of(options, **overrides)
    why = None if o.fixed_reserved is not None or o.extend is not None else why_horizon(inp)
    if o.fixed_reserved is not None or o.extend is not None or why is not None:
        plan = make_plan(inp, o)
        plan.term = _horizon_term(inp, why)
        return plan
    t0 = time.perf_counter()
    # the risk view's sub-plans that need only the inputs, begun on a core the decision leaves idle (read by the plan's
    # view; stopped however this ends)
    early = _risk_early(inp, o, make_plan)
    try:
        return _over_term(inp, make_plan, o, history, t0, early)
    finally:
        if early is not None:
            early.close()


def _risk_early(inp, o: PlanOptions, make_plan):
    """The risk view's mean plan and each scenario alone begun now (:func:`planner.pipeline.sub_plans.start_early`)
    where the plan will take a decomposed risk view on local processes; else None. ``make_plan`` is sent to the
    early process by name (the pipeline's; a lambda or a closure of the caller's own is not: no early start)."""
    if not o.risk or len(inp.scenarios) < 2:
        return None
    import pickle

    from planner.pipeline.benders import risk_settings, use_benders
    from planner.pipeline.sub_plans import start_early

    try:
        pickle.dumps(make_plan)
    except Exception:  # (pickle's errors vary by what it was given)
        return None
    if not use_benders(inp, o.backend or inp.config.solver.backend):
        return None
    settings = risk_settings(o.executor, o.time_limit_s, o.mip_gap) | {"decision": True}
    return start_early(o.executor, inp, settings, make_plan)


def _risk_later(inp, o: PlanOptions) -> bool:
    """Whether the plan's risk view is taken after the comparison (:func:`_over_term`): a plan over scenarios whose
    purchases, fixed, are priced batch by batch (:func:`planner.pipeline.benders.fixed_plan`: the view of a plan of
    the whole model is its own)."""
    from planner.pipeline.benders import use_benders

    return bool(o.risk) and len(inp.scenarios) > 1 and use_benders(inp, o.backend or inp.config.solver.backend)


def _over_term(inp, make_plan, o: PlanOptions, history, t0: float, early):
    basis = basis_for(inp, history)
    # the tree's rows before the split (their table and activity) are for re-splitting
    # when the demand changes; the decision never changes it
    ext = replace(whole_term.extend(inp, basis), reserved_source=None)
    decide = make_plan(ext, PlanOptions.of(o, risk=False, shadow=False, timings={}, progress=o.progress,
                                           decision=True))
    if not decide.status.has_plan:
        decide.term = _term_doc(inp, ext, basis, decide, None)
        return decide
    units = whole_term.horizon_units(inp, ext, decide.purchases["units"].to_numpy(float))
    timings = dict(o.timings or {})
    timings["whole_term"] = time.perf_counter() - t0  # the tree built and the purchases decided on it (wall)
    from planner.solve.workers import keep_pricers

    # a decomposed plan's risk view comes after the comparison: the sub-plans begun early go on meanwhile, and EEV
    # is priced on the plan's kept batches before the view frees them for its own processes
    later = _risk_later(inp, o)
    with keep_pricers(inp):  # the horizon's weekly batches, built once for the plan and its comparison
        plan = make_plan(inp, PlanOptions.of(o, fixed_reserved=units, timings=timings, write_model=None,
                                             keep_cuts=True, risk=o.risk and not later))
        if not plan.status.has_plan:
            return plan
        t_eev = time.perf_counter()
        eev = early_eev(plan, make_plan, o.executor, o.time_limit_s, o.mip_gap, early) if later else None
        t_eev = time.perf_counter() - t_eev
        t1 = time.perf_counter()
        # its first pricing starts from the plan's bases (the same batches, priced at the whole-term purchases),
        # and its master from the plan's pricing as cuts, the whole-term purchases its first incumbent
        horizon_only = make_plan(inp, PlanOptions.of(o, risk=False, shadow=False, timings={}, write_model=None,
                                                     progress=False, decision=True, warm=plan.recourse))
        plan.timings["horizon_only"] = time.perf_counter() - t1  # the comparison: the horizon's own optimum
        if plan.recourse is not None:
            plan.recourse.pop("cuts", None)  # (held by the plan no longer: tens of MB at three years)
        if later:  # (before the plan takes the decision's status and gap: RP is the plan of these purchases, exact)
            t2 = time.perf_counter()
            plan.risk = risk_of(plan, make_plan, o.executor, o.time_limit_s, o.mip_gap, early, eev)
            plan.timings["risk"] = time.perf_counter() - t2 + t_eev
    # the purchases are the whole-term solve's: its status, gap and limits are the plan's (its recourse in the
    # horizon is one LP with them fixed, solved to optimality)
    plan.status = decide.status
    plan.solve = replace(plan.solve, status=decide.solve.status, mip_gap=decide.solve.mip_gap,
                         best_bound=None, seconds=decide.solve.seconds + plan.solve.seconds,
                         message=decide.solve.message or plan.solve.message,
                         time_limit_s=decide.solve.time_limit_s, mip_gap_limit=decide.solve.mip_gap_limit)
    # how the whole-term solve ended, without its column values and duals (the whole-term model's: hundreds of MB
    # at three years, held through the memo's re-solves otherwise)
    plan.solve_term = replace(decide.solve, values=np.zeros(0), row_duals=None)
    if "benders" in decide.stats and "benders" not in plan.stats:  # how the purchases were decided (plan.json
        # model_size.benders: iterations, cuts dropped, integer masters), said to be the whole-term solve's
        plan.stats["benders"] = {**decide.stats["benders"], "solve": "whole term (the purchases' decision)"}
    plan.notes[:0] = [n for n in decide.notes if n not in plan.notes]
    plan.term = _term_doc(inp, ext, basis, decide, horizon_only)
    plan.notes.append(plan.term["note"])
    return plan


def _horizon_term(inp, why) -> dict | None:
    t = term_judgement(inp)
    if t is None:
        return None
    t = dict(t)
    t["judge"] = "horizon"
    if why:
        t["note"] += f" ({why})"
    return t


def _term_doc(inp, ext, basis, decide, horizon_only) -> dict:
    """plan.json ``term``: how the purchases were judged and what they are expected to cost over the term."""
    months = float(inp.commitments["term_months"].max())
    span = f"{months / 12:g}-year" if months % 12 == 0 else f"{months:g}-month"
    tail_h = float(ext.hours[inp.T:].sum())
    tail_months = tail_h / whole_term.HOURS_PER_MONTH
    doc = {"source": basis.source, "judge": "term", "months": months, "branches": basis.branches,
           "horizon_hours": float(inp.horizon_hours), "tail_months": round(tail_months, 2),
           "tree_step": basis.step, "scenarios": len(ext.scenarios),
           "growth_per_year": [float(x) for x in np.broadcast_to(basis.growth, (inp.K,))],
           "band_per_year": [float(x) for x in np.broadcast_to(basis.band, (inp.K,))],
           "classes": list(inp.classes)}
    tail = f"{tail_months:.0f}" if tail_months >= 1 else f"{tail_months:.2g}"  # (never "a 0-month tree")
    how = (f"{span} terms judged on a {tail}-month tree past the horizon ({basis.branches} branches, "
           f"{basis.step}ly) {basis.note}")
    doc["note"] = how
    if decide.status.has_plan:
        sc = decide.scenario_costs
        doc["expected_cost_over_term_usd"] = float(decide.cost["total"])
        doc["objective_over_term"] = float(decide.objective)
        doc["mip_gap"] = decide.solve.mip_gap
        doc["status"] = decide.status.value
        doc["branch_costs"] = [{"scenario": str(r.scenario), "probability": float(r.probability),
                                "total_usd": float(r.total)} for r in sc.itertuples()]
        doc["gpus_bought_in_horizon"] = _expected_gpus(decide, _in_horizon(inp, decide))
    if horizon_only is not None and horizon_only.status.has_plan:
        g = _expected_gpus(horizon_only)
        doc["horizon_judged_gpus"] = g
        doc["horizon_judged_cost_usd"] = float(horizon_only.cost["total"])
        doc["horizon_judged_status"] = horizon_only.status.value  # "feasible": the comparison's time limit came
        doc["horizon_judged_mip_gap"] = horizon_only.solve.mip_gap  # first, its optimum not proven
        proven = "" if horizon_only.status.value == "optimal" else " (not proven: the time limit came first)"
        doc["note"] += (f"; buys {doc.get('gpus_bought_in_horizon', 0):,.0f} GPUs in the horizon where judging on the "
                        f"horizon alone would buy {g:,.0f}{proven}")
    return doc


def _expected_gpus(plan, rows=None) -> float:
    """The GPUs ``plan`` buys (of ``rows``, a mask of its purchases; default all): a branch's purchase at its
    probability, resales (negative GPUs: sales, not purchases) left out."""
    from planner.inputs.commitments import is_exit

    pur = plan.purchases
    if not len(pur):
        return 0.0
    keep = ~np.asarray(is_exit(plan.inputs.commitments), bool)
    if rows is not None:
        keep &= np.asarray(rows, bool)
    return float((pur["gpus"].to_numpy(float) * np.asarray(plan.inputs.reserved_weight, float))[keep].sum())


def _in_horizon(inp, plan) -> np.ndarray:
    """Rows of a whole-term plan's purchases dated inside the horizon."""
    import pandas as pd

    end = whole_term.horizon_end(inp)
    dates = pd.DatetimeIndex(plan.inputs.commitments["purchase_date"])
    return np.asarray(dates < end)
