"""The risk view's sub-plans side by side on local processes (planner.pipeline.sub_plans).

Oracle: the same view with every sub-plan solved one by one in the plan's process. Each sub-plan is the same
inputs and the same solver calls either way, so the figures are equal to the last digit, not merely close."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner import make_plan
from planner.core.errors import SolverError
from planner.core.executors import LocalExecutor
from planner.pipeline import sub_plans
from planner.results.risk import SubPlan, sub_problems
from test_decompose import _case

FIELDS = ("expected_cost_usd", "worst_case_usd", "worst_scenario", "eev_usd", "ws_usd", "vss_usd", "evpi_usd",
          "mean_plan_purchases", "first_stage_usd", "value_of_waiting_usd")


def _method(inp, method):
    return replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method=method)))


@pytest.mark.parametrize("method", ["benders", "monolithic"])
def test_the_sub_plans_on_two_processes_give_the_view_of_one_by_one(tmp_path, monkeypatch, method):
    inp = _method(_case(tmp_path, 23, scenarios=True, days=200), method)
    assert inp.reserved_member is not None  # a tree: the first-stage plan is one of the sub-plans
    assert [t.kind for t in sub_problems(inp)] == ["mean", "first", "ws", "ws"]
    one = make_plan(inp, mip_gap=1e-9, executor=LocalExecutor(2))  # sub-plans below SUB_PLAN_CELLS: one by one
    mapped = []
    original = LocalExecutor.map

    def spy(self, fn, tasks, **kw):
        mapped.append((fn.__name__, list(tasks), self.workers))
        return original(self, fn, tasks, **kw)

    monkeypatch.setattr(LocalExecutor, "map", spy)
    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    two = make_plan(inp, mip_gap=1e-9, executor=LocalExecutor(2))
    assert mapped == [("_solve", sub_problems(inp), 2)]  # the four sub-plans, on two processes, once
    assert ("benders" in two.stats) == (method == "benders")
    assert one.risk is not None and one.risk.evpi_usd > 0 and one.risk.value_of_waiting_usd is not None
    for name in FIELDS:
        assert getattr(two.risk, name) == getattr(one.risk, name), name


def test_one_job_or_no_executor_or_a_small_sub_plan_stays_in_this_process(tmp_path):
    inp = _case(tmp_path, 23, scenarios=True, days=60)
    settings = {"decision": True}
    assert sub_plans.many_solver(None, inp, settings) is None
    assert sub_plans.many_solver(LocalExecutor(1), inp, settings) is None
    assert inp.T * inp.K <= sub_plans.SUB_PLAN_CELLS
    assert sub_plans.many_solver(LocalExecutor(2), inp, settings) is None


def test_a_sub_plan_that_fails_on_its_worker_says_which(tmp_path, monkeypatch):
    inp = _case(tmp_path, 23, scenarios=True, days=60)
    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    many = sub_plans.many_solver(LocalExecutor(2), inp, {"decision": True, "risk": False})
    with pytest.raises(SolverError, match="the bogus plan.*unknown sub-plan kind 'bogus'"):
        many(inp, [SubPlan("mean"), SubPlan("bogus")])


def test_no_more_sub_plans_side_by_side_than_the_memory_holds(tmp_path, monkeypatch):
    """A three-year sub-plan (26,280 h x 20 classes) is counted at 2.6 GB where it is priced (2.1 GB measured): two
    fit in 6 GB, one in 4 GB (then one by one, in this process), and none is refused where the memory cannot be
    read."""
    cells = 26_280 * 20
    assert sub_plans.fits(cells, available=6 * 2 ** 30) == 2
    assert sub_plans.fits(cells, available=4 * 2 ** 30) == 1
    inp = _case(tmp_path, 23, scenarios=True, days=60)
    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    monkeypatch.setattr(sub_plans, "_available_bytes", lambda: inp.T * inp.K * sub_plans.SUB_PLAN_BYTES_PER_CELL)
    assert sub_plans.many_solver(LocalExecutor(2), inp, {}) is None  # room for one: in this process
    monkeypatch.setattr(sub_plans, "_available_bytes", lambda: None)
    assert sub_plans.many_solver(LocalExecutor(2), inp, {}) is not None
