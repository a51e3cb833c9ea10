"""`planner sweep`: points, break-evens against the spot economics, failures, parallel runs, outputs."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from planner.pipeline.whole_term import plan_over_term
from click.testing import CliRunner
from openpyxl import load_workbook

from planner import load_inputs, make_plan
from planner.cli import cli
from planner.core.errors import ConfigError
from planner.inputs.arrays import scale_inputs
from planner.whatif.sweep import SweepSpec, parse_values, run_sweep
from conftest import ROOT, price, write_case

# one class, one pool: on-demand at 2.0, spot at 0.8 with 0.1 preemptions per hour
SPOT = {"spot": True, "max_spot_share": 0.6, "job_gpus": 1, "checkpoint_minutes": 2, "restart_minutes": 5}
OD, SP, RATE = 2.0, 0.8, 0.1


@pytest.fixture
def spot_case(tmp_path):
    return write_case(tmp_path / "m", {"c": [5, 6, 3, 8, 7, 2]},
                      [price(hourly=OD), price(option="spot", hourly=SP, interruptions_per_hour=RATE)],
                      {"c": SPOT})


@pytest.fixture
def reserved_case(tmp_path):
    return write_case(tmp_path / "r", {"c": [5, 6, 3, 8, 7, 2], "d": [1, 4, 4, 0, 2, 2]},
                      [price(hourly=OD), price(option="spot", hourly=SP, interruptions_per_hour=RATE),
                       price(option="reserved_1y", hourly=1.0, term_months=12)],
                      {"c": SPOT, "d": {"headroom": 0.2}})


def _spot_cli(*args):
    result = CliRunner().invoke(cli, ["spot", "--json", *map(str, args)])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_parse_values():
    assert parse_values("spot_price", "0.5:2:4") == [0.5, 1.0, 1.5, 2.0]
    assert parse_values("headroom", "0.5, 1,2,4") == [0.5, 1.0, 2.0, 4.0]
    for bad, why in (("2:1:3", "lo < hi"), ("0.5:2", "three parts"), ("0.5:2:1", "at least 2"),
                     ("1,x", "numbers"), ("-1,1", ">= 0"), ("nan", "finite")):
        with pytest.raises(ConfigError, match=why):
            parse_values("spot_price", bad)
    spec = SweepSpec({"spot_price": [0.5, 1.0, 2.0], "interruptions": [2.0]})
    pts = spec.points()
    assert [p["varied"] for p in pts] == ["base", "spot_price", "spot_price", "interruptions"]  # 1.0 is the base
    grid = SweepSpec({"spot_price": [0.5, 2.0], "interruptions": [1.0, 2.0]}, grid=True).points()
    assert sorted((p["factors"]["spot_price"], p["factors"]["interruptions"]) for p in grid) == \
        [(0.5, 1.0), (0.5, 2.0), (2.0, 1.0), (2.0, 2.0)]


@pytest.mark.slow
def test_spot_use_stops_at_the_break_even_planner_spot_computes(spot_case):
    # the break-even `planner spot` gives for this class and pool: spot pays while price < on-demand x goodput
    eco = _spot_cli("--interruptions-per-hour", RATE, "--checkpoint-minutes", 2, "--restart-minutes", 5,
                    "--job-gpus", 1, "--spot-price", SP, "--on-demand-price", OD)
    factor = OD * eco["goodput"] / SP
    assert 1.5 < factor < 3.0
    assert _spot_cli("--interruptions-per-hour", RATE, "--checkpoint-minutes", 2, "--restart-minutes", 5,
                     "--spot-price", SP * factor * 1.01, "--on-demand-price", OD)["spot_pays"] is False

    values = [float(v) for v in np.linspace(0.5, 3.0, 11)]
    step = values[1] - values[0]
    res = run_sweep(load_inputs(spot_case), SweepSpec({"spot_price": values}), jobs=1, progress=False)
    along = sorted((p for p in res.points if p["ok"]), key=lambda p: p["factors"]["spot_price"])
    assert len(along) == 11  # 1.0 is among the values: it is the base point, solved once
    for p in along:
        used = p["spot_gpu_hours"]["c"] > 0
        assert used == (p["factors"]["spot_price"] < factor), p["factors"]
    stop = [b for b in res.break_evens if b["what"] == "spot c"]
    assert len(stop) == 1 and stop[0]["change"] == "stops"
    assert stop[0]["from"] < factor <= stop[0]["to"]
    assert stop[0]["to"] - stop[0]["from"] <= step + 1e-12
    check = next(c for c in res.spot_checks if c["factor"] == "spot_price")
    assert check["break_even"] == pytest.approx(factor, rel=1e-9)
    assert check["agrees"] and check["consistent"] and check["steps_off"] == 0.0


def test_a_failed_point_is_reported_and_the_rest_go_on(spot_case, tmp_path):
    out = tmp_path / "out"
    model = write_case(tmp_path / "h", {"c": [5, 6, 3]}, [price(hourly=OD)], {"c": {"headroom": 0.2}})
    result = CliRunner().invoke(cli, ["sweep", str(model), "--headroom", "0.5,100,2", "--out", str(out),
                                      "--jobs", "2"])
    assert result.exit_code == 3, result.output
    data = json.loads((out / "sweep.json").read_text())
    by_h = {p["factors"]["headroom"]: p for p in data["points"]}
    assert set(by_h) == {1.0, 0.5, 100.0, 2.0}
    assert not by_h[100.0]["ok"] and by_h[100.0]["status"] == "failed"
    assert "class 'c' headroom becomes 20" in by_h[100.0]["error"]
    for h in (0.5, 1.0, 2.0):
        assert by_h[h]["ok"]
        assert by_h[h]["total_usd"] == pytest.approx(OD * (5 + 6 + 3) * (1 + 0.2 * h))
    assert data["run"]["failed"] == 1
    assert "point 3 (headroom=100) failed" in result.output
    assert "1 point(s) failed" in result.output


@pytest.mark.slow
def test_two_processes_give_the_same_points_as_one(reserved_case):
    inp = load_inputs(reserved_case)
    spec = SweepSpec({"spot_price": [0.5, 2.5], "demand_level": [0.5, 1.5], "interruptions": [4.0]})
    one = run_sweep(inp, spec, jobs=1, progress=False)
    two = run_sweep(inp, spec, jobs=2, progress=False)
    assert two.jobs == 2 and len(one.points) == len(two.points) == 6
    for a, b in zip(one.points, two.points):
        assert a["factors"] == b["factors"]
        assert a["total_usd"] == pytest.approx(b["total_usd"], rel=1e-9)
        assert a["reserved_gpus"] == b["reserved_gpus"]
        assert a["spot_gpu_hours"] == pytest.approx(b["spot_gpu_hours"], rel=1e-9)
    assert len({round(p["total_usd"], 6) for p in one.points}) == 6  # every point is a different plan
    cbc = run_sweep(inp, spec, backend="cbc", jobs=2, progress=False)  # CBC on worker processes: the same points
    for a, b in zip(one.points, cbc.points):
        assert b["ok"] and b["total_usd"] == pytest.approx(a["total_usd"], rel=1e-6)


@pytest.mark.slow
def test_each_point_equals_a_separate_plan_of_the_scaled_inputs(reserved_case):
    inp = load_inputs(reserved_case)
    spec = SweepSpec({"spot_price": [0.4, 3.0], "on_demand_price": [0.6], "reserved_price": [0.5, 2.5],
                      "demand_growth": [1.5]})
    res = run_sweep(inp, spec, jobs=1, progress=False)
    assert len(res.points) == 7
    for p in res.points:
        alone = plan_over_term(scale_inputs(inp, **p["factors"]), make_plan)  # as `planner plan` plans
        assert p["total_usd"] == pytest.approx(alone.cost["total"], rel=1e-9)
        assert p["spot_usd"] == pytest.approx(alone.cost["spot"], rel=1e-9, abs=1e-9)
        assert p["reserved_gpus"]["A/r1/reserved_1y"] == float(alone.purchases["gpus"].sum())
    # the reserved purchase flips inside the sweep: a break-even is found on reserved_price
    flips = [b for b in res.break_evens if b["factor"] == "reserved_price" and b["what"] == "reserved A/r1/reserved_1y"]
    assert [(b["from"], b["to"], b["change"]) for b in flips] == [(1.0, 2.5, "stops")]


@pytest.mark.slow
def test_sweep_writes_table_csv_workbook_with_tornado(reserved_case, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["sweep", str(reserved_case), "--spot-price", "0.5:2.5:3",
                                      "--reserved-price", "0.5,2.5", "--out", str(out), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert "points per minute" in result.output and "wall time" in result.output
    data = json.loads((out / "sweep.json").read_text())
    n = len(data["points"])
    assert n == 6  # the base, spot 0.5, 1.5, 2.5 and reserved 0.5, 2.5
    with open(out / "sweep.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == n
    assert float(rows[0]["total_usd"]) == pytest.approx(data["points"][0]["total_usd"])
    wb = load_workbook(out / "sweep.xlsx")
    assert wb.sheetnames == ["Points", "Break-evens", "Spot check", "Tornado", "Series", "Run"]
    assert wb["Points"].max_row == n + 1
    tornado = wb["Tornado"]
    assert len(tornado._charts) == 1 and tornado._charts[0].type == "bar"
    top = {r[0]: r for r in tornado.iter_rows(min_row=2, values_only=True) if r[0]}
    assert set(top) == {"spot_price", "reserved_price"}
    for t in data["tornado"]:
        assert top[t["factor"]][9] == pytest.approx(t["range"])
        assert t["range"] > 0
    assert len(wb["Series"]._charts) == 2


def test_sweep_needs_a_factor_and_writes_nothing(spot_case, tmp_path):
    result = CliRunner().invoke(cli, ["sweep", str(spot_case), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "no factor to sweep" in result.output
    result = CliRunner().invoke(cli, ["sweep", str(spot_case), "--spot-price", "1:0.5:3", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "needs lo < hi" in result.output
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_bundled_example_spot_stops_at_the_break_even_planner_spot_computes(example_plan):
    """Pretraining buys spot on H100/us-east4 when spot is cheap enough; past the break-even `planner spot`
    gives for that class and pool (on-demand x goodput / spot, about 0.76 x today's spot price) it must not."""
    plan, _paths = example_plan
    inp = load_inputs(ROOT / "models" / "example.toml")
    row = plan.spot[(plan.spot.workload_class == "pretraining") & (plan.spot.gpu_type == "H100")
                    & (plan.spot.region == "us-east4")].iloc[0]
    factor = row.on_demand_usd_per_useful_gpu_hour * row.goodput / row.spot_usd_per_gpu_hour
    assert 0.6 < factor < 0.9 and row.spot_gpu_hours == 0  # too dear today
    job = ["--interruptions-per-hour", row.interruptions_per_instance_hour, "--job-gpus", 512,
           "--gpus-per-instance", 8, "--checkpoint-minutes", 6, "--restart-minutes", 15,
           "--on-demand-price", row.on_demand_usd_per_gpu_hour]
    eco = _spot_cli(*job, "--spot-price", row.spot_usd_per_gpu_hour)
    assert eco["goodput"] == pytest.approx(row.goodput, rel=1e-9)
    assert _spot_cli(*job, "--spot-price", row.spot_usd_per_gpu_hour * factor * 0.999)["spot_pays"] is True
    assert _spot_cli(*job, "--spot-price", row.spot_usd_per_gpu_hour * factor * 1.001)["spot_pays"] is False
    lo, hi = round(factor - 0.02, 3), round(factor + 0.02, 3)
    # a one-factor grid has no base point: two solves, side by side on two processes
    res = run_sweep(inp, SweepSpec({"spot_price": [lo, hi]}, grid=True), backend="highs", jobs=2, progress=False)
    assert [p["ok"] for p in res.points] == [True, True] and res.jobs == 2
    cheap, dear = res.points[0]["total_usd"], res.points[1]["total_usd"]
    gap = 1e-4  # the model file's mip_gap
    assert cheap <= dear * (1 + gap) and dear <= plan.cost["total"] * (1 + gap)  # cheaper spot never costs more
    use = {p["factors"]["spot_price"]: p["spot_gpu_hours_by_pool"]["pretraining @ H100/us-east4"] for p in res.points}
    assert use[lo] > 1000 and use[hi] == 0
    check = next(c for c in res.spot_checks if c["factor"] == "spot_price" and c["workload_class"] == "pretraining"
                 and c["pool"] == "H100/us-east4")
    assert check["break_even"] == pytest.approx(factor, rel=1e-9)
    assert check["agrees"] and check["consistent"] and check["steps_off"] == 0.0
