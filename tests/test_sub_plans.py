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
    one = make_plan(inp, mip_gap=1e-9)  # no executor: every sub-plan (and every batch) solved in this process
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
    assert sub_plans.many_solver(None, inp, settings, make_plan) is None
    assert sub_plans.many_solver(LocalExecutor(1), inp, settings, make_plan) is None
    assert inp.T * inp.K <= sub_plans.SUB_PLAN_CELLS
    assert sub_plans.many_solver(LocalExecutor(2), inp, settings, make_plan) is None


def test_a_sub_plan_that_fails_on_its_worker_says_which(tmp_path, monkeypatch):
    inp = _case(tmp_path, 23, scenarios=True, days=60)
    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    many = sub_plans.many_solver(LocalExecutor(2), inp, {"decision": True, "risk": False}, make_plan)
    with pytest.raises(SolverError, match="the bogus plan.*unknown sub-plan kind 'bogus'"):
        many(inp, [SubPlan("mean"), SubPlan("bogus")])


def test_no_more_sub_plans_side_by_side_than_the_memory_holds(tmp_path, monkeypatch):
    """At three years x 5 scenarios (26,280 h x 20 classes) a scenario's sub-plan is counted at 2.2 GB (2.1 GB
    measured) and the first-stage plan of all five at 6.8 GB: the two largest together need 9 GB, so two run side by
    side in 10 GB, one in 8 GB (then one by one, in this process); none is refused where the memory cannot be read."""
    from types import SimpleNamespace

    big = SimpleNamespace(T=26_280, K=20, scenarios=list("abcde"))
    needs = [sub_plans.need(big, t) for t in [SubPlan("mean"), SubPlan("first")] + [SubPlan("ws", s) for s in range(5)]]
    assert needs[1] == 2 ** 30 + 5 * 525_600 * 2_200 and needs[0] == needs[2] == 2 ** 30 + 525_600 * 2_200
    assert sub_plans.fits(needs, available=10 * 2 ** 30) == 2
    assert sub_plans.fits(needs, available=8 * 2 ** 30) == 1
    assert sub_plans.fits(needs, available=40 * 2 ** 30) == 7
    # priced on two processes of its own beside one other sub-plan, the first-stage plan is counted at 10.4 GB
    # (10.2 GB measured: 3.0 GB in its process, 3.5-3.6 GB in each pricing process): 12.7 GB for two side by side,
    # where the count of one process (9 GB) let two start in 11 GiB and the machine ran out
    assert sub_plans.need(big, SubPlan("first"), first_jobs=2) == 3 * 2 ** 30 + int(5 * 525_600 * 2_200 * 1.25)
    assert sub_plans.need(big, SubPlan("mean"), first_jobs=2) == needs[0]
    tree = SimpleNamespace(T=26_280, K=20, scenarios=list("abcde"), reserved_member=True)
    assert [t.kind for t in sub_problems(tree)].count("first") == 1
    assert sub_plans.side_by_side(tree, 2, available=14 * 2 ** 30) == 2
    assert sub_plans.side_by_side(tree, 2, available=11 * 2 ** 30) == 1
    assert sub_plans.side_by_side(tree, 4, available=40 * 2 ** 30) == 4  # never more than the workers
    flat = SimpleNamespace(T=26_280, K=20, scenarios=list("abcde"), reserved_member=None)
    assert sub_plans.side_by_side(flat, 2, available=5 * 2 ** 30) == 2  # no tree, no first-stage plan: 2 x 2.2 GB
    inp = _case(tmp_path, 23, scenarios=True, days=60)
    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    small = [sub_plans.need(inp, t) for t in sub_problems(inp)]
    monkeypatch.setattr(sub_plans, "_available_bytes", lambda: max(small) + 1)
    assert sub_plans.many_solver(LocalExecutor(2), inp, {}, make_plan) is None  # room for one: in this process
    monkeypatch.setattr(sub_plans, "_available_bytes", lambda: None)
    assert sub_plans.many_solver(LocalExecutor(2), inp, {}, make_plan) is not None


def test_a_script_without_a_main_guard_solves_its_sub_plans_here_and_finishes(tmp_path, monkeypatch):
    """A spawned worker imports the caller's script again: one without ``if __name__ == "__main__"`` would run its
    plan again in every worker (the parent then waited for ever, helper-34). Such a script's sub-plans stay in its
    own process; a guarded one's, ``-m`` and ``-c`` go to the workers."""
    import subprocess
    import sys
    from pathlib import Path

    inp_dir = tmp_path / "case"
    inp_dir.mkdir()
    _case(inp_dir, 23, scenarios=True, days=60)
    root = Path(sub_plans.__file__).resolve().parents[2]
    body = ("import sys; sys.path[:0] = [%r, %r]\n"
            "from planner import make_plan\nfrom planner.pipeline import sub_plans\n"
            "from planner.core.executors import LocalExecutor\nfrom test_decompose import load_inputs\n"
            "sub_plans.SUB_PLAN_CELLS = 0\nprint('safe', sub_plans.main_is_safe())\n"
            "p = make_plan(load_inputs(%r), executor=LocalExecutor(2))\nprint('evpi', p.risk.evpi_usd)\n"
            % (str(root), str(Path(__file__).parent), str(inp_dir / "model.toml")))
    script = tmp_path / "unguarded.py"
    script.write_text(body)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "safe False" in out.stdout and "evpi" in out.stdout and out.stdout.count("safe") == 1
    guarded = tmp_path / "guarded.py"
    guarded.write_text('if __name__ == "__main__":\n' + "".join("    " + line + "\n" for line in body.splitlines()))
    out = subprocess.run([sys.executable, str(guarded)], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "safe True" in out.stdout and "evpi" in out.stdout


def test_the_kept_batches_are_freed_beside_the_sub_plans_and_built_again_for_eev(tmp_path, monkeypatch):
    """planner plan keeps the horizon's batches on their workers (keep_pricers: GBs at three years); while the
    sub-plans run on processes of their own, they are closed, then built again on the plan's processes for EEV and
    kept for what follows. The risk view is the one a run that never kept them gives, to the last digit."""
    from planner.solve import workers

    inp = _method(_case(tmp_path, 23, scenarios=True, days=200), "benders")
    plain = make_plan(_method(inp, "monolithic"), mip_gap=1e-9, risk=False)  # (its purchases only)
    n = plain.purchases["units"].to_numpy(float)
    assert n.sum() > 0
    ref = make_plan(inp, fixed_reserved=n)  # never kept: no executor, every sub-plan solved one by one here
    monkeypatch.setattr(sub_plans, "SUB_PLAN_CELLS", 0)
    with workers.keep_pricers(inp):
        make_plan(inp, fixed_reserved=n, executor=LocalExecutor(2), risk=False)  # builds and keeps the batches
        first = list(workers._KEPT[id(inp)]["pricers"])
        assert len(first) == 1 and isinstance(first[0], workers.ProcessPricer)
        kept = make_plan(inp, fixed_reserved=n, executor=LocalExecutor(2))
        again = workers._KEPT[id(inp)]["pricers"]
        assert len(again) == 1 and again[0] is not first[0]  # closed for the sub-plans, built again for EEV
        assert isinstance(again[0], workers.ProcessPricer) and again[0].workers == 2
        assert all(p.poll() is not None for p in first[0].procs)  # its workers are gone
    assert ref.risk is not None and ref.risk.vss_usd is not None
    for name in FIELDS:
        assert getattr(kept.risk, name) == getattr(ref.risk, name), name
    assert kept.objective == ref.objective
