"""The risk view's sub-plans begun before the plan is made (planner.pipeline.sub_plans.start_early).

Oracle: the same whole-term plan's risk view with every sub-plan solved when the view comes (no early start). Each
sub-plan is the same inputs and the same solver calls wherever it runs, so the figures are equal to the last digit.
Which sub-plans the early process did is observed, not assumed: its results are recorded as they are read."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from planner.core.background import Background
from planner.core.executors import LocalExecutor
from planner.pipeline import sub_plans, whole_term
from planner.pipeline.run import make_plan
from planner.results.risk import SubPlan, sub_problems
from test_decompose import _case
from test_sub_plans import FIELDS

pytestmark = pytest.mark.slow  # (whole-term plans with their risk views, several times over)


def _benders(inp):
    return replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method="benders")))


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    inp = _benders(_case(tmp_path_factory.mktemp("early"), 23, scenarios=True, days=200))
    assert inp.reserved_member is not None and len(inp.scenarios) == 2
    return inp


@pytest.fixture(scope="module")
def without(case):
    """The oracle: no early start, every sub-plan solved when the view comes (on two processes)."""
    mp = pytest.MonkeyPatch()
    mp.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    mp.setattr(whole_term, "_risk_early", lambda *a: None)
    try:
        plan = whole_term.plan_over_term(case, make_plan, mip_gap=1e-9, executor=LocalExecutor(2))
    finally:
        mp.undo()
    assert plan.term["judge"] == "term" and plan.risk is not None and plan.risk.evpi_usd > 0
    return plan


def _spy(monkeypatch):
    """Record what the early process answered and every Background started."""
    seen = {"results": [], "started": []}
    original_results, original_init = sub_plans.Early.results, Background.__init__

    def results(self):
        got = original_results(self)
        seen["results"].append(got)
        return got

    def init(self, *a, **kw):
        original_init(self, *a, **kw)
        seen["started"].append(self)

    monkeypatch.setattr(sub_plans.Early, "results", results)
    monkeypatch.setattr(Background, "__init__", init)
    return seen


def test_the_early_sub_plans_give_the_view_of_the_sub_plans_solved_when_it_comes(case, without, monkeypatch):
    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    seen = _spy(monkeypatch)
    plan = whole_term.plan_over_term(case, make_plan, mip_gap=1e-9, executor=LocalExecutor(2))
    assert len(seen["started"]) == 1 and [t.kind for t in seen["started"][0].tasks] == ["mean", "ws", "ws"]
    (got,) = seen["results"]
    assert SubPlan("mean") in got and all(o.ok for o in got.values())  # the decision leaves it time for some
    assert not seen["started"][0].process.is_alive()
    for name in FIELDS:
        assert getattr(plan.risk, name) == getattr(without.risk, name), name
    assert plan.objective == without.objective and plan.purchases.equals(without.purchases)


def _die_on_second_scenario(task):
    if task.kind == "ws" and task.scenario == 1:
        os._exit(9)  # (as the kernel's out-of-memory killer would end it)
    return sub_plans._solve_early(task)


def _fail_on_mean(task):
    if task.kind == "mean":
        raise MemoryError("no room for the mean plan")
    return sub_plans._solve_early(task)


def _mean_stopped_by_its_limit(task):
    """The mean plan as a wall-clock time limit leaves it on a core the run left it little of (helper-84: a plan
    that bought nothing, read as the mean plan, gave a VSS of $768 k for $6.9 k)."""
    value, ended = sub_plans._solve_early(task)
    if task.kind == "mean":
        return (value[0] * 3, value[1] * 0, float("inf")), "feasible"
    return value, ended


@pytest.mark.parametrize("fn", [_die_on_second_scenario, _fail_on_mean, _mean_stopped_by_its_limit])
def test_a_sub_plan_the_early_process_could_not_finish_is_solved_when_the_view_comes(case, without, monkeypatch, fn):
    """Its process killed in the middle of a sub-plan, or a sub-plan that failed there: the view solves it itself,
    and the figures are the oracle's."""
    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    original = Background.__init__

    def init(self, _fn, tasks, **kw):  # the early process runs fn instead of the sub-plans' own
        original(self, fn, tasks, **kw)

    monkeypatch.setattr(Background, "__init__", init)
    solved_here = []
    original_on = sub_plans._on_processes

    def on(executor, inp, settings, mp, tasks):
        solved_here.extend(tasks)
        return original_on(executor, inp, settings, mp, tasks)

    monkeypatch.setattr(sub_plans, "_on_processes", on)
    plan = whole_term.plan_over_term(case, make_plan, mip_gap=1e-9, executor=LocalExecutor(2))
    lost = SubPlan("ws", 1) if fn is _die_on_second_scenario else SubPlan("mean")
    assert lost in solved_here and SubPlan("first") in solved_here
    assert sorted(solved_here, key=repr) == sorted(set(solved_here), key=repr)  # each solved here once at most
    for name in FIELDS:
        assert getattr(plan.risk, name) == getattr(without.risk, name), name


def test_an_interrupted_decision_leaves_no_early_process(case, monkeypatch):
    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    seen = _spy(monkeypatch)

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(whole_term, "basis_for", interrupted)
    with pytest.raises(KeyboardInterrupt):
        whole_term.plan_over_term(case, make_plan, mip_gap=1e-9, executor=LocalExecutor(2))
    (bg,) = seen["started"]
    assert not bg.process.is_alive() and bg.process.exitcode is not None


def test_no_early_start_where_the_view_would_not_run_on_processes_or_take_it(case, monkeypatch):
    seen = _spy(monkeypatch)
    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    settings = {"decision": True}
    assert sub_plans.start_early(None, case, settings, make_plan) is None  # no executor
    assert sub_plans.start_early(LocalExecutor(1), case, settings, make_plan) is None  # one job
    # 3Y x 5 scenarios without a tree (the counts only): two scenarios' sub-plans fit side by side in 10 GiB (2 x
    # 2.2 GB), but the run's own processes (all five scenarios' batches on two processes, 10.4 GB) and one of them
    # do not: no early start
    from types import SimpleNamespace

    big = SimpleNamespace(T=26_280, K=20, scenarios=list("abcde"), reserved_member=None)
    monkeypatch.setattr(sub_plans, "_available_bytes", lambda: 10 * 2 ** 30)
    assert sub_plans.side_by_side(big, 2) == 2
    assert sub_plans.start_early(LocalExecutor(2), big, settings, make_plan) is None
    assert seen["started"] == []
    import planner.core.background as background

    made = []
    monkeypatch.setattr(background, "Background", lambda fn, tasks, **kw: made.append(tasks) or "started")
    monkeypatch.setattr(sub_plans, "_available_bytes", lambda: 13 * 2 ** 30)  # 10.4 + 2.2 GB fit in 13 GiB
    started = sub_plans.start_early(LocalExecutor(2), big, settings, make_plan)
    assert started is not None and started.background == "started"
    assert made == [[SubPlan("mean")] + [SubPlan("ws", s) for s in range(5)]]  # (no tree: no first-stage plan)
    # the plan's own options: no risk view, one scenario, or the caller's own make_plan
    from planner.core.options import PlanOptions

    o = PlanOptions(executor=LocalExecutor(2))
    assert whole_term._risk_early(case, PlanOptions.of(o, risk=False), make_plan) is None
    assert whole_term._risk_early(case, o, lambda *a, **k: None) is None
    one = replace(case, scenarios=case.scenarios[:1])
    assert whole_term._risk_early(one, o, make_plan) is None
    assert seen["started"] == []


def test_an_early_start_for_other_inputs_or_settings_is_closed_not_read(case, monkeypatch):
    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    settings = {"decision": True, "risk": False}
    early = sub_plans.start_early(LocalExecutor(2), case, settings, make_plan)
    assert early is not None and early.serves(case, dict(settings))
    assert not early.serves(case, settings | {"mip_gap": 0.5}) and not early.serves(replace(case), settings)
    many = sub_plans.many_solver(LocalExecutor(2), case, settings | {"mip_gap": 0.5}, make_plan, early=early)
    assert many is not None and not early.background.process.is_alive()
    assert [t.kind for t in sub_problems(case)] == ["mean", "first", "ws", "ws"]


def test_eev_priced_on_the_plans_own_batches_before_the_view_is_the_views_eev(case, without, monkeypatch):
    """With the mean plan in hand when the plan is made, EEV is priced on the plan's kept batches from its bases, before
    the comparison; the view built again for it would give the same figure to the last digit."""
    import time

    from planner.pipeline import benders

    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    priced = []

    def eev_when_the_mean_is_in(plan, mp, executor, limit, gap, early):
        for _ in range(1200):  # (the early process runs at the lowest priority: wait for its mean plan)
            if SubPlan("mean") in early.done():
                break
            time.sleep(0.05)
        out = benders.early_eev(plan, mp, executor, limit, gap, early)
        priced.append(out)
        return out

    monkeypatch.setattr(whole_term, "early_eev", eev_when_the_mean_is_in)
    plan = whole_term.plan_over_term(case, make_plan, mip_gap=1e-9, executor=LocalExecutor(2))
    (eev,) = priced
    assert eev is not None and eev[1].objective == without.risk.eev_usd
    assert plan.risk.eev_usd == without.risk.eev_usd and plan.risk.vss_usd == without.risk.vss_usd
    for name in FIELDS:
        assert getattr(plan.risk, name) == getattr(without.risk, name), name
    assert "risk" in plan.timings and plan.timings["risk"] > 0
