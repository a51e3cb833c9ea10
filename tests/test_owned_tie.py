"""Reserved GPUs cost the same used or idle, so where several pools hold idle reserved GPUs the work can run on
any of them at one cost: the objective's owned-GPU tie-break (planner.model.objective.OWNED_TIE_USD) makes the
answer one, so the figures read from which GPUs ran the work (tranche use, the fleet's reserved use, the
allocation, the term downside) are the same on every solve path. Oracles: hand-solved cases (the rule: the fewest
reserved GPU-hours, then pools in the sheet's order, then classes in the model's) and the whole model against the
weekly decomposition, each solved to gap 0."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from conftest import price, write_case
from planner import load_inputs, make_plan
from planner.model.objective import OWNED_TIE_USD, owned_order

INV = {"option": "reserved_1y", "start": "2026-06-01T00:00", "end": "2028-01-01T00:00"}


def two_regions(tmp_path, owned: dict, demand: dict):
    """One GPU type in regions east and west (on-demand at 4 USD), ``owned`` GPUs per region held all along,
    classes ``demand`` (name: GPUs per hour, 24 hours): the inputs, judged on their horizon."""
    prices = [price("A", "east", hourly=4.0), price("A", "west", hourly=4.0)]
    inv = [dict(INV, gpu_type="A", region=r, gpus=g) for r, g in owned.items()]
    m = write_case(tmp_path, {k: [v] * 24 for k, v in demand.items()}, prices, {k: {} for k in demand},
                   inventory=inv, extra_top='[term]\njudge = "horizon"')
    return load_inputs(m)


def used(plan) -> dict:
    f = plan.fleet
    return (f["reserved_used"] * f["hours"]).groupby([f["gpu_type"], f["region"]]).sum().round(6).to_dict()


def test_work_runs_on_the_fewest_reserved_gpu_hours_and_costs_stay_costs(tmp_path):
    # 10 idle H100 (2x the A100's speed) and 10 idle A100 owned; 8 reference GPUs of demand: any split is free.
    prices = [price("A100", "r1", hourly=4.0), price("H100", "r1", hourly=9.0)]
    inv = [dict(INV, gpu_type="A100", region="r1", gpus=10), dict(INV, gpu_type="H100", region="r1", gpus=10)]
    m = write_case(tmp_path, {"a": [8.0] * 48}, prices, {"a": {"gpu_types": {"A100": 1.0, "H100": 2.0}}},
                   inventory=inv, extra_top='[term]\njudge = "horizon"')
    plan = make_plan(load_inputs(m), mip_gap=0.0, risk=False)
    assert used(plan) == {("A100", "r1"): 0.0, ("H100", "r1"): 4.0 * 48}  # 4 H100 do it in half the GPU-hours
    assert plan.cost["on_demand"] == 0.0 and plan.cost["spot"] == 0.0
    assert plan.objective == pytest.approx(plan.cost["total"], abs=1e-9)  # the tie-break is not a cost
    assert plan.cost["total"] == pytest.approx(plan.cost["reserved"], abs=1e-9)


def test_between_equal_pools_the_sheets_order_then_the_models_class_order(tmp_path):
    # the same GPU in two regions, both with idle owned GPUs: the region listed first runs the work
    inp = two_regions(tmp_path, {"west": 10, "east": 10}, {"a": 6.0, "b": 3.0})
    plan = make_plan(inp, mip_gap=0.0, risk=False)
    first = tuple(inp.pools[["gpu_type", "region"]].iloc[0])
    assert used(plan)[first] == 9.0 * 24 and sum(used(plan).values()) == 9.0 * 24
    # four units of room left in the other pool: a and b both fit in the first; which class goes first is fixed
    assert owned_order(np.array([0]), np.array([0]), 2, 2)[0] < owned_order(np.array([1]), np.array([0]), 2, 2)[0]
    assert 1.0 <= owned_order(np.array([0]), np.array([0]), 50, 24)[0] < owned_order(np.array([49]), np.array([23]), 50, 24)[0] < 4.0
    assert OWNED_TIE_USD * 4 < 1e-4  # below the savings plans' tie-break (covered on-demand stays dearer)


def test_classes_trading_pools_is_no_longer_a_tie(tmp_path):
    # two classes, two regions of one GPU, exactly enough owned GPUs in each pool for one class: a on east and b on
    # west, or a on west and b on east, cost the same; the product order picks one, the same one every time
    inp = two_regions(tmp_path, {"east": 5, "west": 5}, {"a": 5.0, "b": 5.0})
    a = make_plan(inp, mip_gap=0.0, risk=False).allocation
    got = a.groupby(["workload_class", "region"])["gpu_hours"].sum().to_dict()
    # (k + 1)(p + 1) is smallest summed with a on the first pool and b on the second... or the other way: the rule
    # minimises sum owned_order(k, p) x GPUs, computed here independently
    east, west = list(inp.pools["region"]).index("east"), list(inp.pools["region"]).index("west")
    k = {c: i for i, c in enumerate(inp.classes)}
    cost = {(ca, cb): owned_order(np.array([k["a"], k["b"]]), np.array([ca, cb]), 2, 2).sum()
            for ca, cb in ((east, west), (west, east))}
    pa, pb = min(cost, key=cost.get)
    name = {east: "east", west: "west"}
    assert got == {("a", name[pa]): 5.0 * 24, ("b", name[pb]): 5.0 * 24}


@pytest.mark.parametrize("seed", [3, 11])
def test_the_whole_model_and_the_decomposition_read_the_same_fleet(tmp_path, seed):
    """Gap 0, the same purchases: the reserved use per pool and period, and the allocation per class, pool and
    option, are the same to 1e-6 GPU on both paths (before the tie-break they were different vertices)."""
    from test_decompose import _case

    inp = _case(tmp_path, seed, scenarios=seed == 11, days=120)
    mono = make_plan(inp, mip_gap=0.0, risk=False)
    bend = make_plan(replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method="benders"))),
                     mip_gap=0.0, risk=False)
    assert "Benders" in bend.solve.message
    assert np.allclose(mono.purchases["units"], bend.purchases["units"])
    keys = ["scenario", "period", "gpu_type", "region"]
    fm, fb = mono.fleet.set_index(keys).sort_index(), bend.fleet.set_index(keys).sort_index()
    assert np.allclose(fm["reserved_used"], fb["reserved_used"], atol=1e-6)
    alloc = [pl.allocation.groupby(["scenario", "workload_class", "gpu_type", "region", "option"])["gpu_hours"].sum()
             for pl in (mono, bend)]
    both = pd.concat(alloc, axis=1).fillna(0.0)
    assert np.allclose(both.iloc[:, 0], both.iloc[:, 1], atol=1e-5), both[(both.iloc[:, 0] - both.iloc[:, 1]).abs() > 1e-5]


def test_a_plans_lp_runs_without_highs_cost_perturbation_and_costs_the_same(tmp_path, monkeypatch):
    """A plan's pricing (the owned-GPU tie-break in) runs HiGHS without its cost perturbation (it is larger than the
    differences the tie-break draws; planner.solve.recourse.lp_options); a decision's pricing keeps HiGHS's default,
    also inside ``"plan+cuts"``. The LP is the same either way: each batch's cost, with rented GPUs in it, cold and
    warm at another demand level, agrees with a solve under HiGHS's default to 1e-9."""
    from test_decompose import _case

    from planner.solve import monolithic, recourse
    from planner.solve.decompose import chunk_index, cut_groups

    inp = _case(tmp_path, 11, scenarios=True, days=90)
    plan = make_plan(inp, mip_gap=0.0, risk=False)
    n = np.floor(0.5 * plan.purchases["units"].to_numpy(float))  # half the purchases: on-demand and spot in every week
    assert plan.purchases["units"].sum() > 0
    chunks = chunk_index(inp, "week")
    batches = [recourse.build_batch(inp, c, cut_groups(inp)) for c in chunks[::4]]
    assert all(len(b.owned[0]) for b in batches)
    made, new_highs = [], monolithic.new_highs
    monkeypatch.setattr(monolithic, "new_highs", lambda *a: made.append(new_highs(*a)) or made[-1])
    key = "dual_simplex_cost_perturbation_multiplier"

    def perturbation(*args, **kwargs) -> list:
        made.clear()
        recourse.price(*args, **kwargs)
        return [h.getOptionValue(key)[1] for h in made]

    b = batches[0]
    assert perturbation(b, n, solution=True) == [0.0]
    assert [(h.getOptionValue("dual_feasibility_tolerance")[1], h.getOptionValue("primal_feasibility_tolerance")[1])
            for h in made] == [(1e-9, 1e-9)]
    assert perturbation(b, n, solution="plan+cuts") == [0.0, 1.0]  # the plan's LP, then the cuts' (HiGHS's default)
    assert perturbation(b, n) == [1.0] and perturbation(b, n, solution="costs") == [1.0]

    def both_levels():
        out = []
        for b in batches:
            cold = recourse.price(b, n, solution=True)
            out.append((cold.values, recourse.price(b, n, cold.basis, solution=True, scale=0.8).values))
        return out

    ours = both_levels()
    monkeypatch.setattr(recourse, "PLAN_LP_OPTIONS", {})
    assert perturbation(b, n, solution=True) == [1.0]
    default = both_levels()
    assert sum(v.sum() for v, _ in ours) > 1_000  # rented GPUs priced, not the tie-break's cents
    for (a1, a8), (d1, d8) in zip(ours, default):
        assert np.allclose(a1, d1, rtol=1e-9, atol=1e-6) and np.allclose(a8, d8, rtol=1e-9, atol=1e-6)


def test_a_plans_lp_that_does_not_end_optimal_at_the_tighter_settings_is_run_again_at_highs_defaults(tmp_path,
                                                                                                   monkeypatch):
    """Where the plan's LP settings (recourse.PLAN_LP_OPTIONS) do not end optimal (here a time limit too short to
    start), the batch is priced again at HiGHS's defaults: the same answer as a pricing under the defaults, not an
    error; a refused option name is an error that names it."""
    from test_decompose import _case

    from planner.core.errors import SolverError
    from planner.solve import recourse
    from planner.solve.decompose import chunk_index, cut_groups

    inp = _case(tmp_path, 11, scenarios=True, days=30)
    n = np.zeros(len(inp.commitments))
    b = recourse.build_batch(inp, chunk_index(inp, "week")[1], cut_groups(inp))
    monkeypatch.setattr(recourse, "PLAN_LP_OPTIONS", {})
    default = recourse.price(b, n, solution=True)
    monkeypatch.setattr(recourse, "PLAN_LP_OPTIONS", {"time_limit": 1e-12, "simplex_iteration_limit": 0})
    start = recourse.price(b, n).basis  # the decision LP's basis: both runs start from it
    runs, run = [], recourse._run
    monkeypatch.setattr(recourse, "_run", lambda *a: runs.append(a[2]) or run(*a))
    again = recourse.price(b, n, start, solution=True)
    assert len(runs) == 2 and runs[0] is start and runs[1] is start
    assert again.values == pytest.approx(default.values, rel=1e-9, abs=1e-6)
    again = recourse.price(b, n, solution=True)
    assert again.iterations == default.iterations > 0
    assert np.array_equal(again.values, default.values) and np.array_equal(again.solution, default.solution)
    monkeypatch.setattr(recourse, "PLAN_LP_OPTIONS", {"no_such_option": 1.0})
    with pytest.raises(SolverError, match="no_such_option"):
        recourse.price(b, n, solution=True)


def test_a_plans_lp_gives_one_tie_broken_answer_warm_or_cold_where_the_ties_lie_below_highs_default(tmp_path):
    """Six pools of one GPU, twelve classes, six equally likely scenarios, one hourly day, more idle owned GPUs than
    work: two classes trading pools differ by 1e-5 / ((P+1)(K+1)) x 1/6 per GPU-hour (1.8e-8), below HiGHS's default
    dual feasibility tolerance (1e-7), above the plan LP's (1e-9). Priced warm from the decision LP's basis and cold,
    every owned column is the same (at HiGHS's defaults they differed by whole GPUs on a case like this: a review,
    benchmarks/README.md, nineteenth round)."""
    from planner.solve import recourse
    from planner.solve.decompose import chunk_index, cut_groups

    P, K, S = 6, 12, 6
    rng = np.random.default_rng(0)
    regions = [f"r{i}" for i in range(P)]
    prices = [price("A", r, hourly=4.0) for r in regions]
    inv = [dict(INV, gpu_type="A", region=r, gpus=int(K * 8 * 1.3 / P) + 1) for r in regions]
    demand = {f"c{k:02d}": list(np.round(5 + 3 * rng.random(24), 3)) for k in range(K)}
    m = write_case(tmp_path, demand, prices, {k: {} for k in demand}, inventory=inv,
                   extra_top='[term]\njudge = "horizon"')
    d = pd.read_csv(tmp_path / "demand.csv")
    pd.concat([d.assign(scenario=f"s{s}", gpus=d["gpus"] * (1 + 0.1 * s)) for s in range(S)]).to_csv(
        tmp_path / "demand.csv", index=False)
    m.write_text(m.read_text() + "\n[scenarios]\n" + "".join(f"s{s} = {1 / S!r}\n" for s in range(S)))
    inp = load_inputs(m)
    swap = OWNED_TIE_USD / ((P + 1) * (K + 1)) / S
    assert 1e-9 < swap < 1e-7
    b = recourse.build_batch(inp, chunk_index(inp, "week")[0], cut_groups(inp))
    n = np.zeros(len(inp.commitments))
    decision = recourse.price(b, n)  # the Benders loop's LP (no owned-GPU tie-break): its basis, as a plan starts
    warm = recourse.price(b, n, decision.basis, solution=True)
    cold = recourse.price(b, n, solution=True)
    owned = b.owned[0]
    assert cold.solution[owned].sum() > 1_000  # GPU-hours of owned GPUs run: the tie-break decides which
    assert np.abs(warm.solution[owned] - cold.solution[owned]).max() < 1e-6
    assert np.allclose(warm.values, cold.values, rtol=1e-12, atol=1e-9)


def _tree_day(tmp_path, P: int, K: int, S: int, owned_per_pool: int, hours: int = 24, seed: int = 0,
              probability=None, branch: int = 0):
    """P pools of one GPU (on-demand 4 USD), K classes over ``hours`` hours, S scenarios (equally likely, or
    ``probability``; scenario ``s`` at 1 + 0.1 s times the demand from hour ``branch``, the same before it: those
    hours' blocks are shared), ``owned_per_pool`` owned GPUs a pool: the inputs and their one batch."""
    from planner.solve import recourse
    from planner.solve.decompose import chunk_index, cut_groups

    rng = np.random.default_rng(seed)
    regions = [f"r{i}" for i in range(P)]
    prices = [price("A", r, hourly=4.0) for r in regions]
    inv = [dict(INV, gpu_type="A", region=r, gpus=owned_per_pool) for r in regions]
    demand = {f"c{k:02d}": list(np.round(5 + 3 * rng.random(hours), 3)) for k in range(K)}
    m = write_case(tmp_path, demand, prices, {k: {} for k in demand}, inventory=inv,
                   extra_top='[term]\njudge = "horizon"')
    d = pd.read_csv(tmp_path / "demand.csv")
    after = pd.to_datetime(d["period"]).rank(method="dense").to_numpy() > branch
    pd.concat([d.assign(scenario=f"s{s}", gpus=np.where(after, d["gpus"] * (1 + 0.1 * s), d["gpus"]))
               for s in range(S)]).to_csv(tmp_path / "demand.csv", index=False)
    probability = [1 / S] * S if probability is None else list(probability)
    m.write_text(m.read_text() + "\n[scenarios]\n" + "".join(f"s{s} = {float(q)!r}\n" for s, q in enumerate(probability)))
    inp = load_inputs(m)
    return inp, recourse.build_batch(inp, chunk_index(inp, "week")[0], cut_groups(inp))


GEOMETRIC = list(0.3 * 0.7 ** np.arange(20) / (1 - 0.7 ** 20))  # 0.30 down to 3.4e-4


@pytest.mark.parametrize("probability", [None, GEOMETRIC], ids=["equal", "geometric"])
def test_a_trees_plan_lp_gives_one_answer_where_the_probability_weighted_ties_lie_below_its_tolerance(
        tmp_path, probability):
    """Twelve pools, forty classes, twenty scenarios (equally likely, or geometric from 0.3 to 3.4e-4), six hours:
    two classes trading pools differ by 1e-5 / ((P+1)(K+1)) x probability per GPU-hour (9.4e-10 at 1/20), below the
    plan LP's tolerance (1e-9). The plan's LP prices each block over its probability
    (planner.solve.recourse.plan_scale: 1.9e-8 here), so warm and cold give one answer (unscaled, 27.9 % of the
    equal case's owned GPU-hours moved between them; scaled by the number of scenarios alone, not the
    probabilities, 17.6 % of the geometric case's: a review's mutant)."""
    from planner.solve import recourse

    P, K, S = 12, 40, 20
    inp, b = _tree_day(tmp_path, P, K, S, int(K * 8 * 1.3 / P) + 1, hours=6, probability=probability)
    q = np.full(S, 1 / S) if probability is None else np.asarray(probability)  # (unscaled, the least likely
    # scenario's swaps differ by 1e-5 / ((P+1)(K+1)) x q.min(): 9.4e-10 equal, 6.4e-12 geometric)
    assert b.plan_scale is not None and np.allclose(np.unique(b.plan_scale[0]), np.unique(1 / q.astype(np.float32)))
    n = np.zeros(len(inp.commitments))
    decision = recourse.price(b, n)
    warm = recourse.price(b, n, decision.basis, solution=True)
    cold = recourse.price(b, n, solution=True)
    owned = b.owned[0]
    assert cold.solution[owned].sum() > 10_000
    assert np.abs(warm.solution[owned] - cold.solution[owned]).max() < 1e-6
    assert np.allclose(warm.values, cold.values, rtol=1e-12, atol=1e-9)


def test_a_trees_plan_lp_scaled_by_block_has_the_same_costs_and_duals_as_the_lp_as_built(tmp_path):
    """plan_scale multiplies each block's objective by its hours over its probability-weighted hours (exact: the
    LP separates by block) and divides the row duals back. Scenarios of 0.7, 0.2 and 0.1 that share their first
    three hours (one block each hour: factor 3) and branch after (factors 1/0.7, 5, 10). Against the same LP
    unscaled, with fewer owned GPUs than work (on-demand at the margin in every hour: unique demand duals), every
    cut group's cost and every shadow-price sum agree to 1e-9 (a row's factor taken from another block, or a
    column's from one scenario of a shared block, moved them by hundreds of dollars: a review's mutants); a
    one-scenario batch is not scaled."""
    from planner.solve import recourse

    inp, b = _tree_day(tmp_path, 3, 4, 3, 4, hours=6, probability=[0.7, 0.2, 0.1], branch=3)
    assert b.plan_scale is not None
    for factors in b.plan_scale:
        assert np.allclose(np.unique(factors), np.unique(np.float32([1 / 0.7, 3.0, 5.0, 10.0]))), factors
    n = np.zeros(len(inp.commitments))
    ours = recourse.price(b, n, solution=True)
    built = recourse.price(replace(b, plan_scale=None), n, solution=True)
    assert ours.values.sum() > 100  # on-demand GPUs priced
    assert np.allclose(ours.values, built.values, rtol=1e-9, atol=1e-9)
    assert np.allclose(ours.solution, built.solution, atol=1e-7)
    assert ours.dual_sums.keys() == built.dual_sums.keys()
    for key in ours.dual_sums:
        assert np.allclose(ours.dual_sums[key], built.dual_sums[key], rtol=1e-9, atol=1e-9), key
    assert any(np.abs(np.asarray(v)).sum() > 1 for v in ours.dual_sums.values())
    one = tmp_path / "one"
    one.mkdir()
    assert _tree_day(one, 3, 4, 1, 4)[1].plan_scale is None


def test_plan_scale_leaves_an_lp_that_does_not_separate_by_block_unscaled_and_stays_finite():
    """Two blocks, each of both scenarios' cells (probabilities 0.25 / 0.75: factor 2), or one scenario's each (1
    and 1e-40): rows within one block are scaled; a row across the two blocks, or a column in no block (not a
    purchase) in some row, leaves the LP unscaled (None), as does every factor 1; a probability of 1e-40 gives a
    finite factor (at most PLAN_SCALE_MAX: float32 overflowed to inf, and the LP failed), as does one of 1e-310."""
    from planner.solve.recourse import PLAN_SCALE_MAX, plan_scale

    hours = np.array([[1.0, 1.0], [1.0, 1.0]])  # (S, B): each scenario's hours in each block
    colblock = np.array([-1, 0, 0, 1, 1])  # column 0: a purchase
    fixed = np.array([0])
    within = (np.array([0, 0, 1, 1]), np.array([0, 1, 3, 4]))  # row 0: the purchase and block 0; row 1: block 1
    cols, rows = plan_scale(hours, np.array([0.25, 0.75]), colblock, fixed, *within, 2)
    assert np.allclose(cols, [1.0, 2.0, 2.0, 2.0, 2.0]) and np.allclose(rows, [2.0, 2.0])
    across = (np.array([0, 0, 1]), np.array([1, 3, 4]))  # row 0 holds a column of each block
    assert plan_scale(hours, np.array([0.25, 0.75]), colblock, fixed, *across, 2) is None
    assert plan_scale(hours, np.array([0.25, 0.75]), colblock, np.zeros(0, int), *within, 2) is None  # column 0
    # in no block and, not fixed, no purchase
    one = np.array([[1.0, 0.0], [0.0, 1.0]])  # block 0: scenario 0 only, block 1: scenario 1 only
    cols, rows = plan_scale(one, np.array([1.0, 1e-40]), colblock, fixed, *within, 2)
    assert np.isfinite(cols).all() and np.isfinite(rows).all()
    assert np.allclose(cols, [1.0, 1.0, 1.0, PLAN_SCALE_MAX, PLAN_SCALE_MAX], rtol=1e-6)
    with np.errstate(all="raise"):  # a probability below 1e-308 (1 / p overflows): capped, no warning
        cols, _ = plan_scale(one, np.array([1.0, 1e-310]), colblock, fixed, *within, 2)
    assert cols.max() == np.float32(PLAN_SCALE_MAX)
    assert plan_scale(one, np.array([1.0, 1.0]), colblock, fixed, *within, 2) is None  # every factor 1


def test_a_decomposed_plan_whose_plan_lp_fell_back_to_highs_defaults_says_so_and_costs_the_same(tmp_path,
                                                                                                  monkeypatch):
    """Where a batch's plan LP does not end optimal at its tight settings it is priced at HiGHS's defaults
    (recourse._price); the plan then says in how many weekly batches (its tie-broken reading there is not held to
    one answer), and its costs are the plan's without the fallback. A plan without one has no such note."""
    from test_decompose import _case

    from planner.solve import recourse

    inp = _case(tmp_path, 11, scenarios=True, days=30)
    inp = replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method="benders")))
    from planner.pipeline.run import with_memo

    plain = with_memo(make_plan(inp, mip_gap=0.0, risk=False))
    assert "Benders" in plain.solve.message and not any("HiGHS's default" in n for n in plain.notes)
    assert plain.memo is not None and (plain.memo.curve["fell_back"] == "").all()
    monkeypatch.setattr(recourse, "PLAN_LP_OPTIONS", {"time_limit": 1e-12, "simplex_iteration_limit": 0})
    fell = with_memo(make_plan(inp, mip_gap=0.0, risk=False))
    # the memo's re-solves fall back too: a note of their own names each row (not the plan's own: shock 0, factor 1)
    memo_notes = [n for n in fell.notes if n.startswith("some of the purchase memo's re-solves")]
    curve, down = fell.memo.curve, fell.memo.downside
    assert (curve["fell_back"] != "").sum() >= 2 and len(memo_notes) == 1, fell.notes
    for f, w in zip(curve["factor"], curve["fell_back"]):  # (the plan's own row, x1, is the plan's note's)
        assert (f"the commitment curve at x{f:g}: {w}" in memo_notes[0]) == (f != 1 and w != ""), (f, w)
        assert w == "" or w.endswith(" week" if w.startswith("1 ") else " weeks")
    for s, w in zip(down["shock"], down["fell_back"]):
        assert (f"the downside at {s:.0%} less demand: {w}" in memo_notes[0]) == (s != 0 and w != "")
    assert curve["total_cost_usd"].to_numpy() == pytest.approx(plain.memo.curve["total_cost_usd"].to_numpy(), rel=1e-9)
    notes = [n for n in fell.notes if "re-solved at HiGHS's default settings" in n]
    weeks = len(fell.recourse["chunks"])
    said = [int(x) for x in notes[0].split(" weeks were")[0].split(" of ")] if notes else []
    assert len(said) == 2 and 0 < said[0] <= said[1] == weeks, fell.notes  # (a batch already optimal at its start
    # basis, or without owned GPUs in its weeks, does not fall back)
    import re

    starts = {pd.Timestamp(inp.periods[int(min(c))]).strftime("%Y-%m-%d") for c in fell.recourse["chunks"]}
    named = re.findall(r"\d{4}-\d{2}-\d{2}", notes[0].split("the week")[1])  # which weeks: by their first day
    assert len(named) == min(said[0], 8) and set(named) <= starts and named == sorted(named)
    assert fell.cost["total"] == pytest.approx(plain.cost["total"], rel=1e-9)
    assert np.allclose(fell.purchases["units"], plain.purchases["units"])
    # the finance reader sees it too: every note of the plan, under the Assumptions sheet's table, as plan.json has it
    import json

    from openpyxl import load_workbook

    from planner.pipeline.run import write_outputs

    paths = write_outputs(fell, tmp_path / "out")
    lines = [r[0] for r in load_workbook(paths["xlsx"], read_only=True)["Assumptions"].iter_rows(values_only=True)
             if r and isinstance(r[0], str)]
    head = [i for i, x in enumerate(lines) if x.startswith("This run's notes (")]
    written = json.loads(paths["json"].read_text())["notes"]
    assert len(head) == 1 and lines[head[0]] == f"This run's notes ({len(written)}; the same as plan.json's notes):"
    below = lines[head[0] + 1:]  # each note broken into lines of at most 110 characters (the sheet prints at its size)
    assert max(len(x) for x in below) <= 110 and sum(x.startswith("- ") for x in below) == len(written)
    assert " ".join(x[2:] for x in below) == " ".join(" ".join(n.split()) for n in written) and notes[0] in written
    plain_paths = write_outputs(plain, tmp_path / "plain")
    heads = [r[0] for r in load_workbook(plain_paths["xlsx"], read_only=True)["Assumptions"].iter_rows(
        values_only=True) if r and str(r[0]).startswith("This run's notes")]
    assert heads == ([f"This run's notes ({len(plain.notes)}; the same as plan.json's notes):"] if plain.notes else [])


def _tree_with_purchases(tmp_path, P: int, K: int, S: int, hours: int, seed: int = 0):
    """P pools (on-demand 4 USD up), three with a one-year reservation to buy, every pool with owned GPUs; K classes
    over ``hours`` hours; S scenarios of geometric probability (0.3 x 0.7^s, normalised) sharing their first two
    hours, scenario s at 1 + 0.15 s times the demand after."""
    rng = np.random.default_rng(seed)
    q = 0.3 * 0.7 ** np.arange(S)
    q = q / q.sum()
    regions = [f"r{i}" for i in range(P)]
    prices = [price("A", r, hourly=4.0 + 0.1 * i) for i, r in enumerate(regions)] + \
             [price("A", r, option="reserved_1y", hourly=2.0 + 0.05 * i, term_months=12) for i, r in enumerate(regions[:3])]
    inv = [dict(INV, gpu_type="A", region=r, gpus=int(K * 4 / P)) for r in regions]
    demand = {f"c{k:02d}": list(np.round(5 + 3 * rng.random(hours), 3)) for k in range(K)}
    m = write_case(tmp_path, demand, prices, {k: {} for k in demand}, inventory=inv, extra_top='[term]\njudge = "horizon"')
    d = pd.read_csv(tmp_path / "demand.csv")
    after = pd.to_datetime(d["period"]).rank(method="dense").to_numpy() > 2
    pd.concat([d.assign(scenario=f"s{s}", gpus=np.where(after, d["gpus"] * (1 + 0.15 * s), d["gpus"]))
               for s in range(S)]).to_csv(tmp_path / "demand.csv", index=False)
    m.write_text(m.read_text() + "\n[scenarios]\n" + "".join(f"s{s} = {float(x)!r}\n" for s, x in enumerate(q)))
    return load_inputs(m)


@pytest.mark.parametrize("how", ["branch and bound", "rounded", "fixed"])
def test_a_tree_solved_whole_reads_the_tie_broken_figures_the_decomposition_reads(tmp_path, how):
    """Eight pools, twenty classes, eight scenarios from 0.3 down to 0.026, twelve hours, purchases to decide: the
    model solved whole and the decomposition buy the same and cost the same; the whole model's plan is read from its
    recourse re-solved with the purchases fixed, each block over its probability, at the plan LP's tolerances
    (planner.solve.reading: cold after the branch and bound at gap 0, warm after the LP rounding at gap 1e-3, warm
    after the LP of purchases given), as a decomposed plan's is, so which owned GPUs run the work is the same too
    (read from the MIP's own solution, 6,207 to 6,574 of 18,201 GPU-hours were allocated differently)."""
    from planner.memo.tranches import owned_idle

    inp = _tree_with_purchases(tmp_path, 8, 20, 8, 12)

    def solved(method, **kw):
        i = replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method=method)))
        return make_plan(i, risk=False, **kw)

    kw = {"branch and bound": {"mip_gap": 0.0}, "rounded": {"mip_gap": 1e-3}}.get(how)
    if kw is None:
        kw = {"fixed_reserved": solved("benders", mip_gap=0.0).purchases["units"].to_numpy(float)}
    whole, parts = solved("monolithic", **kw), solved("benders", **kw)
    assert "Benders" not in whole.solve.message and ("Benders" in parts.solve.message or how == "fixed")
    assert ("LP relaxation rounded" in whole.solve.message) == (how != "branch and bound")
    assert np.array_equal(whole.purchases["units"], parts.purchases["units"]) and whole.purchases["units"].sum() > 0
    assert whole.cost["total"] == pytest.approx(parts.cost["total"], rel=1e-9)
    key = ["scenario", "period", "workload_class", "gpu_type", "region", "option"]
    both = pd.concat([whole.allocation.groupby(key)["gpu_hours"].sum(), parts.allocation.groupby(key)["gpu_hours"].sum()],
                     axis=1).fillna(0.0)
    assert both.iloc[:, 0].sum() > 15_000
    assert np.abs(both.iloc[:, 0] - both.iloc[:, 1]).max() < 1e-6
    assert owned_idle(whole)["usd"] == pytest.approx(owned_idle(parts)["usd"], rel=1e-9, abs=1e-6)
    assert whole.objective == pytest.approx(parts.objective, rel=1e-9)
    if how != "branch and bound":  # the LP that read the plan left its duals, divided back by the blocks' factors: the
        # shadow-price sums are the decomposition's (not divided back, the headroom rows' were thousands apart)
        assert whole.dual_sums is not None and parts.dual_sums is not None
        for family in ("headroom", "reserved_share"):
            assert np.abs(whole.dual_sums[family]).max() > 1.0
            assert np.allclose(whole.dual_sums[family], parts.dual_sums[family], rtol=1e-9, atol=1e-6)


def test_a_plan_solved_whole_whose_plan_lp_did_not_finish_says_so_and_so_do_its_memo_rows(tmp_path, monkeypatch):
    """Where the whole model's plan LP does not end optimal (planner.solve.monolithic._read_on gives None) the plan is
    read from the MIP's own solution, costs the same, and says so; its memo prices its own point again in weekly
    batches of its own (memo.resolve._reprice_own), so when those fall back too the memo's note names its own rows,
    shock 0 and x1, which no plan note covers here (a review found them unnamed)."""
    from planner.pipeline.run import with_memo
    from planner.solve import monolithic, recourse

    inp = _tree_with_purchases(tmp_path, 4, 6, 3, 8)
    inp = replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method="monolithic")))
    read = make_plan(inp, mip_gap=0.0, risk=False)
    assert "Benders" not in read.solve.message and not read.read_fell_back and read.purchases["units"].sum() > 0
    monkeypatch.setattr(monolithic, "_read_on", lambda *a, **k: None)
    mip = make_plan(inp, mip_gap=0.0, risk=False)
    assert mip.read_fell_back and sum("read from the MIP's own solution" in n for n in mip.notes) == 1
    assert mip.cost["total"] == pytest.approx(read.cost["total"], rel=1e-9)
    monkeypatch.undo()
    monkeypatch.setattr(recourse, "PLAN_LP_OPTIONS", {"time_limit": 1e-12, "simplex_iteration_limit": 0})
    plan = with_memo(make_plan(inp, mip_gap=0.0, risk=False))
    memo_notes = [n for n in plan.notes if n.startswith("some of the purchase memo's re-solves")]
    assert len(memo_notes) == 1, plan.notes
    own = plan.memo.curve.loc[plan.memo.curve["factor"] == 1.0, "fell_back"].iat[0]
    assert own.endswith("week") or own.endswith("weeks")
    assert f"the commitment curve at x1: {own}" in memo_notes[0]
    first = plan.memo.downside["fell_back"].iat[0]
    assert first and f"the downside at 0% less demand: {first}" in memo_notes[0]
