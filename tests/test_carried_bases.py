"""The whole-term decision's last bases start the horizon plan's pricing (planner.solve.recourse.carried_bases,
planner.pipeline.whole_term._horizon_start): the whole-term inputs' first periods are the horizon's, so each of the
horizon's weekly batches is the decision's batch of the same week but for the tail's purchase columns (fixed, first).

Oracles: a cold solve of the same LP (the same values), the simplex's own iteration count (0 from a fitting optimal
basis), and the plan made without the carried bases (the same costs and purchases)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from planner import load_inputs, make_plan
from planner.inputs import whole_term
from planner.pipeline import whole_term as wt
from planner.solve.chunks import chunk_index
from planner.solve.decompose import cut_groups
from planner.solve.recourse import build_batch, carried_bases, price
from conftest import price as price_row, write_case

DAYS = 30  # four weeks and two days from a Monday (2027-01-04): the horizon ends mid-week, two purchase dates


def _inputs(tmp_path):
    rng = np.random.default_rng(7)
    hours = DAYS * 24
    train = (60 + 25 * np.sin(np.arange(hours) / 9.0) + rng.uniform(0, 10, hours)).round(1).tolist()
    serve = (30 + 15 * np.cos(np.arange(hours) / 5.0)).round(1).tolist()
    prices = [price_row(hourly=2.0), price_row(option="spot", hourly=0.8, interruptions_per_hour=0.1),
              price_row(option="reserved_1y", hourly=1.3, term_months=12),
              price_row(gpu_type="B", hourly=1.6),
              price_row(gpu_type="B", option="reserved_1y", hourly=1.0, term_months=12)]
    classes = {"train": {"spot": True, "max_spot_share": 0.5, "gpu_types": {"A": 1.0, "B": 0.5}},
               "serve": {"gpu_types": {"A": 1.0, "B": 0.6}}}
    path = write_case(tmp_path, {"train": train, "serve": serve}, prices, classes,
                      extra_top='[commitments]\npurchase_every = "month"\n', solver={"method": "benders"})
    return load_inputs(path)


def _extended(inp):
    return replace(whole_term.extend(inp, wt.basis_for(inp)), reserved_source=None)


def test_the_decisions_basis_fits_the_horizons_batch_and_is_optimal_there(tmp_path):
    inp = _inputs(tmp_path)
    ext = _extended(inp)
    ch, ce = chunk_index(inp, "week"), chunk_index(ext, "week")
    assert len(ce) > len(ch)  # the tail's periods are batches of their own
    rng = np.random.default_rng(0)
    n_ext = rng.integers(0, 40, len(ext.commitments)).astype(float)
    n_h = whole_term.horizon_units(inp, ext, n_ext)
    assert n_h.sum() > 0
    same = [np.array_equal(a, b) for a, b in zip(ch, ce)]
    assert same[:-1] == [True] * (len(ch) - 1) and not same[-1]  # the mid-week end: its last batch differs
    for w in range(len(ch) - 1):
        b_ext, b_h = build_batch(ext, ce[w], cut_groups(ext)), build_batch(inp, ch[w], cut_groups(inp))
        assert np.array_equal(b_ext.ncols, np.arange(len(ext.commitments)))  # the purchases come first
        assert np.array_equal(b_h.ncols, np.arange(len(inp.commitments)))
        at_ext = price(b_ext, n_ext)
        (basis,) = carried_bases([at_ext.basis], len(ext.commitments), len(inp.commitments))
        assert basis is not None and (len(basis[0]), len(basis[1])) == b_h.shape
        cold, warm = price(b_h, n_h), price(b_h, n_h, basis)
        assert cold.iterations > 0 and warm.iterations == 0  # the same LP, started at its optimum
        assert warm.values.sum() == pytest.approx(cold.values.sum(), rel=1e-9)
        assert warm.values.sum() == pytest.approx(at_ext.values.sum(), rel=1e-9)


def test_a_basis_with_a_basic_purchase_column_or_none_has_no_fit():
    col, row = np.array([0, 1, 0, 1, 1], np.int8), np.array([0, 1], np.int8)
    ok = (np.array([0, 0, 1, 1, 0], np.int8), row)
    out = carried_bases([(col, row), None, ok], 2, 3)
    assert out[0] is None and out[1] is None  # a fixed purchase column left basic: no fit, cold
    assert out[2][0].tolist() == [0, 0, 0, 1, 1, 0] and out[2][1] is row  # 2 purchase columns -> 3, nonbasic


def test_the_plan_is_the_same_with_the_carried_bases_as_without(tmp_path, monkeypatch):
    inp = _inputs(tmp_path)
    carried = wt.plan_over_term(inp, make_plan, risk=False)
    assert carried.term["judge"] == "term" and "benders" in carried.stats
    ext = _extended(inp)
    decide = make_plan(ext, risk=False, shadow=False, decision=True)
    start = wt._horizon_start(inp, decide)
    assert start is not None
    assert [b is not None for b in start["bases"]] == [True] * (len(start["chunks"]) - 1) + [False]
    monkeypatch.setattr(wt, "_horizon_start", lambda inp, decide: None)
    cold = wt.plan_over_term(inp, make_plan, risk=False)
    assert carried.purchases["units"].tolist() == cold.purchases["units"].tolist()
    for k in cold.cost:
        assert carried.cost[k] == pytest.approx(cold.cost[k], rel=1e-9, abs=1e-6)
    assert carried.objective == pytest.approx(cold.objective, rel=1e-9)
