"""A decision read from the batches' costs alone equals the plan read from the whole model's columns.

``make_plan(..., decision=True)`` on the decomposed path (the whole-term decision and the horizon-only comparison)
never builds the whole model: each batch returns its costs per scenario at the purchases
(:func:`planner.solve.recourse.scenario_costs`) and :func:`planner.results.decomposed.decision_from_batches` sums
them. The oracle is the full extraction of the same solve (:func:`planner.results.plan.extract_plan` on the
assembled columns): purchases, every cost, the objective, the per-scenario costs and the shortfall must agree.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from planner import load_inputs
from planner.pipeline.run import make_plan
from planner.pipeline.whole_term import basis_for
from planner.inputs import whole_term
from test_decompose import _case as ladder_case
from test_every_family_decomposes import _case as family_case


def _benders(inp, **finance):
    config = replace(inp.config, solver=replace(inp.config.solver, method="benders"))
    if finance:
        config = replace(config, finance=replace(config.finance, **finance))
    return replace(inp, config=config)


def _same(inp):
    full = make_plan(inp, mip_gap=1e-7, risk=False, shadow=False, decision=False)
    read = make_plan(inp, mip_gap=1e-7, risk=False, shadow=False, decision=True)
    assert "benders" in full.stats and "benders" in read.stats
    assert read.allocation_positions.empty and full.solve.values.size and not read.solve.values.size  # no model read
    np.testing.assert_array_equal(read.purchases["units"].to_numpy(), full.purchases["units"].to_numpy())
    assert set(full.purchases.columns) - set(read.purchases.columns) <= {"npv_usd"}  # from the cash schedule
    pd.testing.assert_frame_equal(read.purchases, full.purchases[read.purchases.columns])
    assert set(read.cost) == set(full.cost)
    for k in full.cost:
        assert read.cost[k] == pytest.approx(full.cost[k], rel=1e-9, abs=1e-6), k
    assert read.objective == pytest.approx(full.objective, rel=1e-9, abs=1e-6)
    assert read.shortfall_gpu_hours == pytest.approx(full.shortfall_gpu_hours, rel=1e-9, abs=1e-6)
    assert read.commitments == {k: full.commitments[k] for k in read.commitments}  # (no exit value: its extra solve)
    assert set(full.commitments) - set(read.commitments) <= {"exit_value_usd", "cost_without_exits_usd"}
    assert list(read.scenario_costs.columns) == list(full.scenario_costs.columns)
    pd.testing.assert_frame_equal(read.scenario_costs, full.scenario_costs, rtol=1e-9, atol=1e-6)
    assert read.status == full.status and read.solve.mip_gap == full.solve.mip_gap
    return full


def test_every_family_read_from_the_batches(tmp_path):
    """Spot, flex-start, a savings plan (on-demand it pays), a resold term at a capped site, a gang's spares."""
    full = _same(_benders(load_inputs(family_case(tmp_path))))
    assert full.cost["flex_start"] > 0 and full.cost["spot"] > 0 and full.commitments["reserved_amortised_usd"] > 0


def test_a_savings_plan_bought_read_from_the_batches(tmp_path):
    """The on-demand a savings plan pays is not billed at on-demand (the family case with a cheaper plan)."""
    model = family_case(tmp_path)
    prices = pd.read_csv(tmp_path / "prices.csv")
    prices.loc[(prices["option"] == "reserved_1y") & (prices["gpu_type"] == "A"), "hourly_usd"] = 3.9
    prices.loc[prices["option"] == "savings_plan_1y", "hourly_usd"] = 2.0
    prices.to_csv(tmp_path / "prices.csv", index=False)
    full = _same(_benders(load_inputs(model)))
    assert full.fleet["on_demand_covered"].sum() > 0


@pytest.mark.parametrize("seed", [3, 4])
def test_a_scenario_tree_read_from_the_batches(tmp_path, seed):
    """Two scenarios, quarterly purchases split by node: each scenario's own reserved cost and recourse."""
    inp = _benders(ladder_case(tmp_path, seed, scenarios=True, days=200))
    assert inp.reserved_member is not None
    full = _same(inp)
    assert full.scenario_costs["total"].nunique() == 2


def test_the_whole_term_tree_read_from_the_batches(tmp_path):
    """The decision planner plan makes: the horizon and a tree of branches past it, branch prices and all."""
    inp = ladder_case(tmp_path, 5, days=150)
    ext = _benders(replace(whole_term.extend(inp, basis_for(inp)), reserved_source=None))
    assert len(ext.scenarios) > 1 and ext.T > inp.T
    _same(ext)


def test_npv_and_shortfall_read_from_the_batches(tmp_path):
    """Under [finance] objective = "npv" the objective is the loop's discounted value; demand is
    short, at its penalty (set below the on-demand price)."""
    inp = _benders(ladder_case(tmp_path, 6, days=150), objective="npv", discount_rate=0.12)
    inp = replace(inp, penalty=2.0)  # a GPU-hour short costs less than on demand: some demand goes unserved
    full = _same(inp)
    assert full.shortfall_gpu_hours > 0 and full.objective != pytest.approx(full.cost["total"], rel=1e-6)


def test_a_plan_read_from_a_kept_column_layout_is_the_plan_read_from_a_new_model(tmp_path):
    """The memo reads each point through one column layout of its inputs (:func:`column_layout`, purchases fixed
    per read): the same tables, bit for bit, as a model laid out for each read, after another point was read through
    the same layout (nothing a read writes stays in it)."""
    from planner.results.decomposed import column_layout, plan_from_priced
    from planner.solve.decompose import chunk_index, cut_groups
    from planner.solve.workers import LocalPricer

    inp = _benders(load_inputs(family_case(tmp_path)))
    plan = make_plan(inp, mip_gap=1e-7, risk=False, shadow=False)
    n = plan.purchases["units"].to_numpy(float)
    chunks, cut_by = chunk_index(inp, "week"), cut_groups(inp)
    pricer = LocalPricer(inp, chunks, cut_by)
    layout = column_layout(inp)

    reuse: dict = {}  # the column map kept with the layout (planner.solve.recourse.assemble)

    def read(units, kept):
        priced = pricer.price(units, [None] * len(chunks), solution=True)
        return plan_from_priced(inp, units, priced, pricer, chunks, cut_by, 0.0, allocation=False,
                                keep_bases=False, layout=layout if kept else None, reuse=reuse if kept else None)

    half = read(np.floor(n / 2), True)  # another point first, through the same layout and column map
    assert "map" in reuse
    new, kept = read(n, False), read(n, True)
    assert n.sum() > 0
    pd.testing.assert_frame_equal(kept.fleet, new.fleet, check_exact=True)
    pd.testing.assert_frame_equal(kept.scenario_costs, new.scenario_costs, check_exact=True)
    pd.testing.assert_frame_equal(kept.purchases, new.purchases, check_exact=True)
    assert kept.cost == new.cost and kept.objective == new.objective
    np.testing.assert_array_equal(kept.solve.values, new.solve.values)
    assert half.cost["total"] != pytest.approx(kept.cost["total"], rel=1e-6)  # the map read each point's own values


def _fixed_same(inp, n):
    """``make_plan(fixed_reserved=n, decision=True)`` (the risk view's EEV: costs only) against the plan of the same
    purchases read from the whole model's columns."""
    full = make_plan(inp, fixed_reserved=n, risk=False, shadow=False)
    read = make_plan(inp, fixed_reserved=n, risk=False, shadow=False, decision=True)
    assert read.allocation_positions.empty and read.fleet.empty and not read.solve.values.size
    assert full.solve.values.size and len(full.fleet)
    np.testing.assert_array_equal(read.purchases["units"].to_numpy(), np.asarray(n, float))
    for k in full.cost:
        assert read.cost[k] == pytest.approx(full.cost[k], rel=1e-7, abs=1e-4), k
    assert read.objective == pytest.approx(full.objective, rel=1e-7, abs=1e-4)
    assert read.shortfall_gpu_hours == pytest.approx(full.shortfall_gpu_hours, rel=1e-7, abs=1e-6)
    pd.testing.assert_frame_equal(read.scenario_costs, full.scenario_costs, rtol=1e-7, atol=1e-4)
    assert read.status == full.status
    return full, read


def test_fixed_purchases_costed_from_the_batches(tmp_path):
    """Other purchases than the plan's (half of them: more on demand), every family, read from each batch's costs."""
    inp = _benders(load_inputs(family_case(tmp_path)))
    n = np.floor(make_plan(inp, mip_gap=1e-7, risk=False, shadow=False, decision=True)
                 .purchases["units"].to_numpy(float) / 2)
    full, _ = _fixed_same(inp, n)
    assert full.cost["on_demand"] > 0


def test_fixed_purchases_on_a_tree_and_under_npv_costed_from_the_batches(tmp_path):
    """Per scenario on a tree; under NPV the objective is the discounted value of the purchases and the recourse."""
    inp = _benders(ladder_case(tmp_path, 6, scenarios=True, days=150), objective="npv", discount_rate=0.12)
    n = make_plan(inp, mip_gap=1e-7, risk=False, shadow=False, decision=True).purchases["units"].to_numpy(float)
    full, read = _fixed_same(inp, np.floor(n * 0.7))
    assert full.scenario_costs["total"].nunique() == 2
    assert read.objective != pytest.approx(read.cost["total"], rel=1e-6)  # the NPV, not the cost


def test_fixed_purchases_costed_keep_the_risk_view_cuts_and_written_model_of_a_full_read(tmp_path):
    """``decision=True`` changes how the costs are read, nothing else a caller asked for: the risk view, the cuts
    kept for a later solve, the bases, and the LP written (the purchases fixed in it)."""
    inp = _benders(ladder_case(tmp_path, 6, scenarios=True, days=150))
    n = np.floor(make_plan(inp, mip_gap=1e-7, risk=False, shadow=False, decision=True)
                 .purchases["units"].to_numpy(float) * 0.7)
    kw = dict(fixed_reserved=n, risk=True, shadow=False, keep_cuts=True, mip_gap=1e-7)
    full = make_plan(inp, write_model=tmp_path / "full.lp", **kw)
    read = make_plan(inp, write_model=tmp_path / "read.lp", decision=True, **kw)
    assert read.fleet.empty and full.risk is not None and read.risk is not None
    for name in ("eev_usd", "ws_usd", "vss_usd", "evpi_usd", "first_stage_usd", "value_of_waiting_usd"):
        assert getattr(read.risk, name) == pytest.approx(getattr(full.risk, name), rel=1e-7, abs=1e-4), name
    assert set(read.recourse) == set(full.recourse) >= {"bases", "cuts", "chunks", "units"}
    assert len(read.recourse["bases"]) == len(full.recourse["bases"]) and all(b is not None for b in read.recourse["bases"])
    assert len(read.recourse["cuts"]) == len(full.recourse["cuts"])
    assert (tmp_path / "read.lp").read_text() == (tmp_path / "full.lp").read_text()  # the fixed LP, not the MILP


def test_the_risk_views_eev_is_the_mean_plans_purchases_costed(tmp_path, monkeypatch):
    """EEV (the mean plan's purchases in every scenario) priced as a fixed plan of the whole model's columns; read
    from the batches' costs (costs_plan), once."""
    from planner.pipeline import benders

    costed = []
    original = benders.costs_plan

    def spy(*args, **kwargs):
        costed.append(args[1])
        return original(*args, **kwargs)

    monkeypatch.setattr(benders, "costs_plan", spy)
    inp = _benders(ladder_case(tmp_path, 3, scenarios=True, days=150))
    plan = make_plan(inp, mip_gap=1e-7, risk=True, shadow=False)
    rv = plan.risk
    assert rv is not None and inp.reserved_member is not None  # a tree: the mean plan's rows in every node
    n_mean = np.asarray(rv.mean_plan_purchases, float)[inp.commitments["origin"].to_numpy(int)]
    assert n_mean.sum() > 0
    full = make_plan(inp, fixed_reserved=n_mean, risk=False, shadow=False)
    assert rv.eev_usd == pytest.approx(full.objective, rel=1e-7, abs=1e-4)
    assert len(costed) == 1 and np.array_equal(costed[0], n_mean)
    assert rv.eev_usd >= plan.objective - 1e-6 * abs(plan.objective)


def test_a_decisions_costs_come_from_the_loops_own_pricing_of_its_purchases(tmp_path):
    """A decision (``final="costs"``) prices each integer plan with its costs: the last pass is not run again where
    the loop priced the plan it keeps (one pricing per iteration, none after), and its costs are those a last pass
    at the same purchases reads (the same LP and settings)."""
    from planner.solve.decompose import chunk_index, cut_groups, solve_benders
    from planner.solve.workers import LocalPricer

    inp = ladder_case(tmp_path, 3, scenarios=True, days=200)
    chunks = chunk_index(inp, "week")
    calls = []

    class Counting(LocalPricer):
        def price(self, n, bases, solution=False, **kw):
            calls.append(solution)
            return super().price(n, bases, solution=solution, **kw)

    bd = solve_benders(inp, chunk="week", mip_gap=1e-7, final="costs", pricer=Counting(inp, chunks, cut_groups(inp)))
    assert bd.status == "optimal" and bd.phases["plan_pricing"] < 0.05 and "costs" in calls
    loop = len(calls)
    calls.clear()
    full = solve_benders(inp, chunk="week", mip_gap=1e-7, final=True, pricer=Counting(inp, chunks, cut_groups(inp)))
    assert len(calls) == loop + 1 and calls[-1] is True  # a plan's last pass; a decision's none: the loop's own
    np.testing.assert_array_equal(full.n, bd.n)
    again = LocalPricer(inp, chunks, cut_groups(inp)).price(bd.n, [None] * len(chunks), solution="costs")
    for ours, theirs in zip(bd.priced, again):
        for key in ("rented", "covered", "short"):
            assert np.allclose(ours.costs[key], theirs.costs[key], rtol=1e-9, atol=1e-6), key
    assert sum(float(r.costs["rented"].sum()) for r in bd.priced) > 1000
