"""A tree's first-stage plan (every purchase common to all scenarios) decided on the tree's own batches
(``make_plan(..., common=True, decision=True)``: its first-stage inputs priced through
:class:`planner.solve.tied.TiedPricer`), started from an earlier solve's cuts (``warm["prior"]``, mapped by
:func:`planner.solve.tied.first_stage_log`).

Oracles: the first-stage inputs' plan (:func:`planner.inputs.arrays.first_stage`, every purchase one row common to
all scenarios) solved whole by HiGHS's branch and bound, and by Benders on batches of its own; and the same solve
without the cuts. Every copy of a row bought alike is the same problem (a scenario's recourse sees one copy of each
row), so the optimum is the same to the gap; the tree's cuts bound the same recourse, so they change where the loop
starts, never what it proves."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from planner import make_plan
from planner.inputs.arrays import first_stage
from planner.solve import decompose
from test_decompose import _case


def _method(inp, method):
    return replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method=method)))


_TREES: dict = {}  # per grouping: the tree and the plans of it that several tests read (never change)


@pytest.fixture(params=["block", "week"])
def tree(request, tmp_path_factory, monkeypatch):
    """A two-scenario tree with quarterly purchases, its groups per block or (MAX_GROUPS 0) per week (one inputs
    object per grouping, shared by the tests: see :func:`_shared`)."""
    if request.param == "week":
        monkeypatch.setattr(decompose, "MAX_GROUPS", 0)
    if request.param not in _TREES:
        inp = _method(_case(tmp_path_factory.mktemp(request.param), 23, scenarios=True, days=200), "benders")
        _TREES[request.param] = {"inp": inp}
    inp = _TREES[request.param]["inp"]
    assert inp.reserved_member is not None and (inp.reserved_member.sum(axis=1) < 2).any()  # rows split by node
    return inp


def _shared(tree, name: str, made=None):
    """The tree's own plan with its cuts kept (``"own"``), or its first-stage plan made cold (``"cold"``): each made
    once per tree (the same call every test made; ``made``: a test's own such call, kept), then read by every test
    that needs it."""
    kept = next(v for v in _TREES.values() if v["inp"] is tree)
    if made is not None:
        kept.setdefault(name, made)
    if name not in kept:
        kw = dict(keep_cuts=True) if name == "own" else dict(common=True)
        kept[name] = make_plan(tree, mip_gap=1e-9, risk=False, decision=True, **kw)
    return kept[name]


def _spy(monkeypatch) -> list:
    from planner.solve.tied import TiedPricer

    """Each solve_benders call's (priced on the tree's batches, the prior's cuts in its master: a few per group,
    result)."""
    calls = []
    original = decompose.solve_benders

    def spy(inp, **kw):
        bd = original(inp, **kw)
        given = ((kw.get("warm") or {}).get("prior") or {}).get("entries", [])
        kept = min(len(given), decompose.PRIOR_PER_GROUP)
        calls.append({"tie": isinstance(kw.get("pricer"), TiedPricer), "prior": bd.seeded_cuts >= kept * bd.chunks > 0,
                      "bd": bd})
        return bd

    monkeypatch.setattr(decompose, "solve_benders", spy)
    return calls


def test_the_first_stage_plan_on_the_trees_batches_is_the_first_stage_inputs_plan(tree, monkeypatch):
    from planner.solve.tied import first_stage_view

    fs, origin = first_stage_view(tree)
    assert len(fs.commitments) == origin.max() + 1 < len(tree.commitments)  # the copies, and their rows
    whole = make_plan(_method(fs, "monolithic"), mip_gap=1e-9, risk=False)
    own = make_plan(fs, mip_gap=1e-9, risk=False, decision=True)  # Benders on batches of its own
    calls = _spy(monkeypatch)
    tied = _shared(tree, "cold", make_plan(tree, mip_gap=1e-9, risk=False, decision=True, common=True))
    assert [c["tie"] for c in calls] == [True]  # priced on the tree's batches
    assert "benders" in tied.stats and "benders" in own.stats and "benders" not in whole.stats
    assert tied.objective == pytest.approx(whole.objective, rel=1e-7)
    assert tied.objective == pytest.approx(own.objective, rel=1e-7)
    sc = tied.scenario_costs.set_index("scenario")["total"]
    assert np.allclose(sc.to_numpy(float), own.scenario_costs.set_index("scenario")["total"].reindex(sc.index), rtol=1e-7)
    assert len(tied.purchases) == len(fs.commitments)  # one row per first-stage row
    # its purchases cost, priced whole, what it says
    priced = make_plan(_method(fs, "monolithic"), fixed_reserved=tied.purchases["units"].to_numpy(float), risk=False)
    assert priced.objective == pytest.approx(tied.objective, rel=1e-7)
    # the tree may wait: it costs no more
    assert _shared(tree, "own").objective <= tied.objective + 1e-6


def test_the_trees_cuts_start_the_tied_master_and_change_only_the_iterations(tree, monkeypatch):
    own = _shared(tree, "own")  # make_plan(tree, mip_gap=1e-9, risk=False, decision=True, keep_cuts=True)
    prior = own.recourse["prior"]
    assert prior["inputs"] is tree and 0 < len(prior["entries"]) <= own.stats["benders"]["iterations"]  # a pricing each
    calls = _spy(monkeypatch)
    cold = make_plan(tree, mip_gap=1e-9, risk=False, decision=True, common=True)
    warm = make_plan(tree, mip_gap=1e-9, risk=False, decision=True, common=True, warm={"prior": prior})
    assert [(c["tie"], c["prior"]) for c in calls] == [(True, False), (True, True)]
    assert warm.objective == pytest.approx(cold.objective, rel=1e-9)
    kept = min(len(prior["entries"]), decompose.PRIOR_PER_GROUP)  # the few per group tightest at the tree's plan
    assert calls[1]["bd"].seeded_cuts >= kept * calls[1]["bd"].chunks  # (and those pooled, added where violated)
    # each earlier cut counted once, however often it left the master and came back: no more than there are
    assert calls[1]["bd"].seeded_cuts <= len(prior["entries"]) * calls[1]["bd"].chunks
    assert warm.stats["benders"]["iterations"] < cold.stats["benders"]["iterations"]


def test_cuts_of_other_inputs_are_never_used(tree, monkeypatch, tmp_path):
    """The prior's cuts are used for the very same inputs object only: an equal-looking copy (which may have been
    edited) and a tree of other demand start cold."""
    prior = _shared(tree, "own").recourse["prior"]
    calls = _spy(monkeypatch)
    copy = replace(tree)
    (tmp_path / "other").mkdir()
    other = _method(_case(tmp_path / "other", 24, scenarios=True, days=200), "benders")
    a = make_plan(copy, mip_gap=1e-9, risk=False, decision=True, common=True, warm={"prior": prior})
    make_plan(other, mip_gap=1e-9, risk=False, decision=True, common=True, warm={"prior": prior})
    assert [c["prior"] for c in calls] == [False, False]
    assert all(c["bd"].seeded_cuts == 0 for c in calls)
    assert a.objective == pytest.approx(_shared(tree, "cold").objective, rel=1e-9)


def test_common_on_a_whole_model_solves_the_first_stage_inputs(tmp_path):
    inp = _method(_case(tmp_path, 23, scenarios=True, days=200), "monolithic")
    a = make_plan(inp, mip_gap=1e-9, risk=False, common=True)
    b = make_plan(first_stage(inp), mip_gap=1e-9, risk=False)
    assert "benders" not in a.stats and a.objective == pytest.approx(b.objective, rel=1e-9)
    assert len(a.purchases) == len(first_stage(inp).commitments) < len(inp.commitments)


def _random_cuts(rng, G: int, R: int, E: int) -> tuple:
    """``E`` random pricings' cuts (one per group, 0-3 columns each) as (g, c, d, rhs), and each as a dict per group
    of (rhs, {column: coefficient}) for brute force."""
    cuts, full = [], []
    for _ in range(E):
        rows = {j: np.sort(rng.choice(R, size=rng.integers(0, 4), replace=False)) for j in range(G)}
        g = np.concatenate([np.full(len(rows[j]), j) for j in range(G)]).astype(np.int64)
        c = np.concatenate([rows[j] for j in range(G)]).astype(np.int64)
        d, rhs = rng.normal(size=len(g)), rng.normal(size=G)
        cuts.append((g, c, d, rhs))
        full.append({j: (rhs[j], dict(zip(c[g == j].tolist(), d[g == j].tolist()))) for j in range(G)})
    return cuts, full


def test_the_prior_cuts_kept_are_the_highest_at_the_point_per_group():
    """Brute force on random cuts: per group, the k cuts kept are those of the k highest values at the point, each
    read back whole (its right-hand side and every coefficient of its group)."""
    from planner.solve.decompose import _logged, _select, _unlogged

    rng = np.random.default_rng(5)
    G, R, E, k = 7, 11, 6, 3
    cuts, full = _random_cuts(rng, G, R, E)
    entries = [_logged(*cut, G, R) for cut in cuts]
    x = rng.uniform(0, 3, R)
    value = np.array([[f[j][0] + sum(v * x[col] for col, v in f[j][1].items()) for j in range(G)] for f in full])
    kept = _select(entries, x, G, R, k)
    assert len(kept) == k
    for rank, entry in enumerate(kept):
        g, c, d, rhs = _unlogged(entry)
        assert np.all(np.diff(g) >= 0)
        for j in range(G):
            want = np.argsort(-value[:, j], kind="stable")[rank]
            assert rhs[j] == full[want][j][0]
            assert dict(zip(c[g == j].tolist(), d[g == j].tolist())) == full[want][j][1]
    assert _select(entries[:2], x, G, R, k) == entries[:2]  # no more than k: all of them


def test_a_pooled_cut_is_added_where_the_masters_point_violates_it_the_most():
    """Brute force on random cuts: the groups whose highest pooled cut at the point is above their theta, each with
    that cut (right-hand side and coefficients), numbered in group order; none where theta already holds it."""
    from planner.solve.decompose import _violated

    rng = np.random.default_rng(8)
    G, R, E = 9, 6, 4
    pool, full = _random_cuts(rng, G, R, E)
    x = rng.uniform(0, 2, R)
    value = np.array([[f[j][0] + sum(v * x[col] for col, v in f[j][1].items()) for j in range(G)] for f in full])
    theta = value.max(axis=0) + rng.choice([-0.5, 0.5], size=G)  # half the groups under their best cut
    groups, cuts = _violated(pool, x, theta, G)
    assert list(groups) == [j for j in range(G) if value[:, j].max() > theta[j]] and len(groups) > 0
    g, c, d, rhs = cuts
    assert np.all(np.diff(g) >= 0)
    for local, j in enumerate(groups):
        best = int(np.argmax(value[:, j]))
        assert rhs[local] == full[best][j][0]
        assert dict(zip(c[g == local].tolist(), d[g == local].tolist())) == full[best][j][1]
    assert _violated(pool, x, value.max(axis=0) + 1.0, G)[1] is None  # every theta above: nothing to add


def test_where_the_first_stage_rows_are_not_the_trees_it_is_solved_on_batches_of_its_own(tree, monkeypatch):
    """A first-stage table whose rows differ from the tree's rows before the split (a column not equal at a row's
    first copy) is not priced on the tree's batches: the first-stage inputs are solved as they are, the same plan."""
    from planner.solve import tied

    calls = _spy(monkeypatch)
    a = make_plan(tree, mip_gap=1e-9, risk=False, decision=True, common=True)
    original = tied.first_stage

    def edited(inp):
        fs = original(inp)
        table = fs.commitments.copy()
        table["term_months"] = table["term_months"] + 1  # no longer the tree's rows
        return replace(fs, commitments=table)

    monkeypatch.setattr(tied, "first_stage", edited)
    assert tied.first_stage_view(tree) is None
    monkeypatch.setattr(tied, "first_stage", original)
    monkeypatch.setattr(tied, "first_stage_view", lambda inp: None)
    b = make_plan(tree, mip_gap=1e-9, risk=False, decision=True, common=True)
    assert [c["tie"] for c in calls] == [True, False]
    assert b.objective == pytest.approx(a.objective, rel=1e-7) and len(b.purchases) == len(a.purchases)


def test_plan_json_says_how_far_each_risk_figure_is_unproven(tmp_path):
    """A figure within its solves' gaps of zero is reported as 0: plan.json says by how much, so a 0 beside a
    bound can be told from a proven 0. Solved exactly, every bound is 0 and the figures stand."""
    import json

    from planner.report import plan_json
    from planner.results.risk import unproven

    inp = _method(_case(tmp_path, 23, scenarios=True, days=200), "monolithic")
    exact = make_plan(inp, mip_gap=0.0)
    doc = json.loads(plan_json(exact))
    assert doc["risk_view_unproven_usd"] == {"vss_usd": 0.0, "evpi_usd": 0.0, "value_of_waiting_usd": 0.0}
    assert doc["evpi_usd"] == exact.risk.evpi_usd > 0
    loose = make_plan(inp, mip_gap=0.05)
    bound = loose.risk.unproven_usd
    assert bound["vss_usd"] == pytest.approx(unproven(loose.objective, loose.solve))
    assert bound["evpi_usd"] >= bound["vss_usd"] and bound["value_of_waiting_usd"] >= bound["vss_usd"]
    for name in ("evpi_usd", "value_of_waiting_usd"):
        value = getattr(loose.risk, name)
        assert value == 0.0 or abs(value) > bound[name]  # never a figure inside its own bound


def test_an_unusable_prior_changes_nothing_and_common_refuses_fixed_purchases(tree):
    """A prior of the same inputs but other batches (or none of its cuts) is not used, and the loop starts where a
    cold one does (the aggregate start: the same iterations, the same bounds), never from buying nothing."""
    from planner.solve.decompose import chunk_index, solve_benders

    cold = solve_benders(tree, chunk="week", mip_gap=1e-9, keep_log=True)
    log = cold.cut_log
    assert log["cut_by"] == cold.cut_by and len(log["entries"]) > 0
    for bad in ({**log, "chunks": chunk_index(tree, "month")}, {**log, "entries": []},
                {**log, "cut_by": "week" if log["cut_by"] != "week" else "day"}):
        again = solve_benders(tree, chunk="week", mip_gap=1e-9, warm={"prior": bad})
        assert again.seeded_cuts == 0 and again.iterations == cold.iterations
        assert [h[1:3] for h in again.history] == [h[1:3] for h in cold.history]
    with pytest.raises(ValueError, match="common=True.*fixed_reserved"):
        make_plan(tree, common=True, fixed_reserved=np.zeros(len(tree.commitments)))
