"""The Python API: in-memory inputs, the Plan object, and model extensions every backend solves."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pulp
import pytest

import planner
from planner.model import build_model
from planner.solve.monolithic import solve

from conftest import ROOT, price, write_case

DEMAND = {"chat": [10.0, 10.0, 30.0, 10.0], "train": [64.0, 64.0, 0.0, 64.0]}
PRICES = [price("H100", "us", "on_demand", 4.0),
          price("H100", "us", "spot", 1.5, interruptions_per_hour=0.05),
          price("H100", "us", "reserved_1y", 2.0, term_months=12)]
CLASSES = {"chat": {"spot": False, "headroom": 0.1}, "train": {"spot": True, "checkpoint_minutes": 5}}


def _frames():
    periods = pd.date_range("2027-01-04", periods=4, freq="h")
    demand = pd.DataFrame({"period": periods, **DEMAND})
    return demand, pd.DataFrame(PRICES)


def test_frames_give_the_same_plan_as_the_same_files(tmp_path, backend):
    demand, prices = _frames()
    inp = planner.inputs_from_frames(demand, prices, CLASSES, solver={"backend": backend, "mip_gap": 0.0})
    from_frames = planner.plan(inp)
    from_files = planner.plan(write_case(tmp_path, DEMAND, PRICES, CLASSES), backend=backend)
    assert from_frames.status.value == from_files.status.value == "optimal"
    assert from_frames.cost["total"] == pytest.approx(from_files.cost["total"], rel=1e-9)
    assert from_frames.purchases["instances"].tolist() == from_files.purchases["instances"].tolist()


def test_a_bad_frame_value_names_the_frame_row_and_column():
    demand, prices = _frames()
    demand["chat"] = demand["chat"].astype(object)
    demand.loc[2, "chat"] = "lots"
    with pytest.raises(planner.InputError) as err:
        planner.inputs_from_frames(demand, prices, CLASSES)
    text = str(err.value)
    assert "<demand DataFrame>" in text and "row 4" in text and "'chat'" in text and "'lots'" in text


def test_plan_object_is_short_tidy_and_writes_what_the_cli_writes(tmp_path):
    demand, prices = _frames()
    p = planner.plan(planner.inputs_from_frames(demand, prices, CLASSES))
    assert isinstance(p, planner.Plan) and p.status is planner.Status.optimal
    text = repr(p)
    assert len(text) < 400 and "optimal" in text and f"${p.cost['total']:,.0f}" in text
    assert not [c for c in p.allocation.columns if c.startswith("_")]
    assert p.allocation["gpu_hours"].sum() == pytest.approx(p.allocation_positions["gpu_hours"].sum())
    assert "total cost" in p.summary()
    doc = p.to_dict()
    assert doc["cost_usd"]["total"] == pytest.approx(p.cost["total"])
    written = json.loads(p.to_json(tmp_path / "plan.json") and (tmp_path / "plan.json").read_text())
    assert written["cost_usd"] == doc["cost_usd"]
    path = p.to_excel(tmp_path / "plan.xlsx")
    from openpyxl import load_workbook

    assert "Summary" in load_workbook(path, read_only=True).sheetnames


def _capped_case(tmp_path):
    """One class of 10 GPUs for 4 hours; reserved 2 $/h (term 1 month), on-demand 4 $/h."""
    return planner.load_inputs(write_case(
        tmp_path, {"a": [10.0] * 4}, [price("A", "r", "on_demand", 4.0),
                                      price("A", "r", "reserved_1m", 2.0, term_months=1)],
        {"a": {"spot": False}}))


def test_an_extension_row_is_solved_by_both_backends(tmp_path):
    """Capping reserved instances at 3 (a row added through the arrays): 3 reserved + 7 on-demand GPUs."""
    inp = _capped_case(tmp_path)
    H = inp.horizon_hours
    expected_free = 10 * 2.0 * H
    expected_capped = 3 * 2.0 * H + 7 * 4.0 * 4

    def cap(model):
        n = model.columns("n")
        assert list(n.columns[:3]) == ["gpu_type", "region", "option"]
        model.add_constraint("cap_reserved", dict(zip(n["col"], np.ones(len(n)))), "<=", 3)

    results = {}
    for backend in planner.solve.monolithic.available_backends():
        free = planner.plan(inp, backend=backend, mip_gap=0.0)
        capped = planner.plan(inp, backend=backend, mip_gap=0.0, extend=cap)
        assert free.cost["total"] == pytest.approx(expected_free)
        assert capped.cost["total"] == pytest.approx(expected_capped)
        assert capped.purchases["instances"].sum() == 3
        results[backend] = capped.solve.objective
    assert len(set(np.round(list(results.values()), 6))) == 1


def test_extension_columns_carry_cost_and_the_derived_pulp_problem_is_a_copy(tmp_path):
    """Up to 5 GPUs of an outside pool at 1 $/GPU-period, entered into every demand row: they replace
    5 reserved GPUs (2 $/h x 4 h each): 5 x 2 x 4 + 4 x 5 x 1 = 60 instead of 80."""
    inp = _capped_case(tmp_path)
    model = build_model(inp, merge_periods=False, dominance=False)
    prob, _ = model.to_pulp()
    prob += pulp.lpSum(prob.variables()) <= -1  # edits to the derived problem are never solved
    backends = planner.solve.monolithic.available_backends()
    for b in backends:
        assert solve(model, b, mip_gap=0.0).objective == pytest.approx(80.0)
    cols = model.add_columns("outside", n=4, cost=1.0, upper=5.0)
    rows = model.row_frame("demand")
    assert rows["workload_class"].tolist() == ["a"] * 4 and rows["period"].is_monotonic_increasing
    model.add_terms("demand", rows["row"].to_numpy(), cols, np.ones(4))
    for b in backends:
        r = solve(model, b, mip_gap=0.0)
        assert r.objective == pytest.approx(60.0)
        assert r.values[cols] == pytest.approx([5.0] * 4)
    # no outside GPUs in the first hour: a unit there is on-demand (4) plus outside later (3 x 1) = 7 < 8
    model.add_rows("no_outside_first", [0], [cols[0]], [1.0], "==", [0.0])
    for b in backends:
        assert solve(model, b, mip_gap=0.0).objective == pytest.approx(5 * 8.0 + 5 * 4.0 + 3 * 5 * 1.0)
    with pytest.raises(ValueError, match="taken"):
        model.add_columns("outside")
    with pytest.raises(ValueError, match="taken"):
        model.add_rows("demand", [0], [0], [1.0], "<=", [1])
    with pytest.raises(ValueError, match="sense"):
        model.add_rows("other", [0], [0], [1.0], "<", [1])


def test_written_mps_solves_back_to_the_same_optimum(tmp_path):
    inp = _capped_case(tmp_path)
    path = tmp_path / "model.mps"
    p = planner.plan(inp, backend="highs", mip_gap=0.0, write_model=path,
                     extend=lambda m: m.add_constraint("cap", {0: 1.0}, "<=", 3))
    _, prob = pulp.LpProblem.fromMPS(str(path))
    prob.solve(pulp.COIN_CMD(path=planner.solve.monolithic.cbc_path(), msg=False))
    from planner.model import build_model

    tie = build_model(inp, rows=False).tie_at(p.solve.values)  # the file's objective holds the tie-breaks; a
    assert 0 < tie < 1e-3 and pulp.value(prob.objective) == pytest.approx(p.solve.objective + tie, rel=1e-9)  # plan's not
    lp = tmp_path / "model.lp"
    planner.plan(inp, write_model=lp, extend=lambda m: m.add_constraint("cap", {0: 1.0}, "<=", 3))
    text = lp.read_text()
    assert "cap:" in text and "demand_0_0" in text


@pytest.mark.slow
def test_import_is_lazy_and_exports_the_public_names():
    code = ("import sys, planner; heavy = [m for m in ('pandas', 'pulp', 'highspy', 'numpy') if m in sys.modules];"
            "print(heavy); from planner import Plan, Status, InputError, SolverError, PlannerError, plan, "
            "inputs_from_frames")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert issubclass(planner.InputError, planner.PlannerError)
    with pytest.raises(AttributeError):
        planner.no_such_name  # noqa: B018


@pytest.mark.slow
def test_example_notebook_plan_uses_highs_by_default(tmp_path):
    """The bundled example's model file planned as a notebook plans it (no backend= given): solved by HiGHS, to
    optimality. Its first week of demand (``demand=``): the backend is chosen the same way for any demand, and
    the whole quarter is planned by docs/api.md's walkthrough (tests/test_docs_api.py)."""
    demand = pd.read_csv(ROOT / "data" / "example" / "demand.csv")
    week = demand[demand["period"].isin(sorted(demand["period"].unique())[:168])]
    assert week["workload_class"].nunique() == 6 and len(week) == 168 * 6
    week.to_csv(tmp_path / "demand.csv", index=False)
    p = planner.plan(ROOT / "models" / "example.toml", demand=tmp_path / "demand.csv", risk=False)
    assert p.solve.backend == "highs" and p.status.value == "optimal"
    assert p.inputs.T == 168 and p.purchases["instances"].sum() > 0  # the example's model, a week of its demand


def test_extension_inputs_are_checked_and_duplicates_are_summed(tmp_path):
    inp = _capped_case(tmp_path)
    model = build_model(inp, merge_periods=False, dominance=False)
    n = int(model.columns("n")["col"].iloc[0])
    for bad, kwargs in ((lambda: model.add_columns("mine_0")), {}), ((lambda: model.add_columns("v", lower=5, upper=1)), {}), \
            ((lambda: model.add_columns("w", cost=float("nan"))), {}), \
            ((lambda: model.add_rows("r1", [0], [1.7], [1.0], "<=", [1])), {}), \
            ((lambda: model.add_rows("r2", [0], [n], [float("nan")], "<=", [1])), {}):
        with pytest.raises(ValueError):
            bad()
    # 2 n <= 1 written as two triples on the same column: summed, so no instance can be bought
    model.add_rows("dup", [0, 0], [n, n], [1.0, 1.0], "<=", [1])
    for b in planner.solve.monolithic.available_backends():
        r = solve(model, b, mip_gap=0.0)
        assert r.values[n] == 0 and r.objective == pytest.approx(10 * 4.0 * 4)


def test_extension_cost_is_in_the_plan_total_and_a_failed_plan_raises(tmp_path):
    inp = _capped_case(tmp_path)

    def cheap_cover(m):
        d = m.row_frame("demand")
        cols = m.add_columns("cheap", len(d), cost=0.5)
        m.add_terms("demand", d["row"].to_numpy(), cols, np.ones(len(d)))

    p = planner.plan(inp, extend=cheap_cover)
    assert p.cost["extension"] == pytest.approx(4 * 10 * 0.5)
    assert p.cost["total"] == pytest.approx(p.solve.objective) and p.objective == pytest.approx(p.solve.objective)
    with pytest.raises(planner.SolverError, match="infeasible"):
        planner.plan(inp, extend=lambda m: m.add_constraint("neg", dict.fromkeys(m.columns("n")["col"], 1.0), "<=", -1))
    with pytest.raises(planner.ConfigError, match="mip_gap"):
        planner.plan(inp, mip_gap=2)
    with pytest.raises(planner.ConfigError, match="format"):
        planner.plan(inp, write_model=tmp_path / "model.txt")


def test_frames_with_nullable_dtypes_and_numpy_scalars_are_read_like_files():
    demand, prices = _frames()
    prices = prices.convert_dtypes()  # pandas NA in the blank cells, Int64 / Float64 columns
    classes = {"chat": {"spot": np.False_, "headroom": np.float64(0.1)},
               "train": {"spot": np.True_, "checkpoint_minutes": np.int64(5)}}
    p = planner.plan(planner.inputs_from_frames(demand, prices, classes))
    assert p.status.value == "optimal" and p.cost["total"] > 0
