"""Per-period availability caps (an availability file) and per-class shortfall penalties: hand oracles,
bad inputs, and the decomposition's agreement with the whole model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from conftest import price, solve_case, write_case
from planner.cli import cli as main
from planner.pipeline.run import load_inputs, make_plan


def _availability(folder, rows):
    pd.DataFrame(rows).to_csv(folder / "availability.csv", index=False)
    return 'availability = "availability.csv"'


SPOT = price(option="spot", hourly=1.0, interruptions_per_hour=0.0)


def test_spot_caps_per_hour_by_hand(tmp_path, backend):
    # d = 10 every hour; spot 1 $/h (goodput 1), on-demand 4 $/h.
    # hour 1: two rows (4 and 6) -> the lower, 4: 4 spot + 6 on-demand = 4 + 24 = 28
    # hour 3: spot 0 and on-demand 3 -> 3 on demand (12 $), 7 GPU-h short at the class's penalty 20 = 140
    # a row a year later is outside the horizon: ignored. Other hours 10 spot = 10 $ each (4 hours).
    rows = [dict(period="2027-01-04T01:30", gpu_type="A", region="r1", option="spot", max_gpus=4),
            dict(period="2027-01-04T01:10", gpu_type="A", region="r1", option="spot", max_gpus=6),
            dict(period="2027-01-04T03:00", gpu_type="A", region="r1", option="spot", max_gpus=0),
            dict(period="2027-01-04T03:59", gpu_type="A", region="r1", option="on_demand", max_gpus=3),
            dict(period="2028-01-04T03:00", gpu_type="A", region="r1", option="on_demand", max_gpus=0)]
    top = _availability(tmp_path, rows)
    m = write_case(tmp_path, {"c": [10] * 6}, [price(hourly=4.0), SPOT],
                   {"c": {"spot": True, "spot_goodput": 1.0, "shortfall_penalty": 20.0}}, extra_top=top)
    plan = solve_case(m, backend)
    assert plan.cost["spot"] == pytest.approx(4 + 4 * 10)
    assert plan.cost["on_demand"] == pytest.approx(24 + 12)
    assert plan.objective == pytest.approx(4 + 40 + 24 + 12 + 140)
    short = plan.shortfall
    assert short["unmet_gpu_hours"].sum() == pytest.approx(7)
    cause = short["cause"].iat[0]
    assert "spot cap 0" in cause and "on-demand cap 3" in cause


def test_sheet_cap_and_file_cap_lower_holds(tmp_path):
    # the sheet caps spot at 5 everywhere; the file raises it to 8 in hour 0 (the sheet's 5 holds) and lowers it
    # to 2 in hour 1. Spot 5 + 2, on-demand 5 + 8 at 4 $/h.
    top = _availability(tmp_path, [dict(period="2027-01-04T00:00", gpu_type="A", region="r1", option="spot",
                                        max_gpus=8),
                                   dict(period="2027-01-04T01:00", gpu_type="A", region="r1", option="spot",
                                        max_gpus=2)])
    spot = dict(SPOT, max_gpus=5)
    m = write_case(tmp_path, {"c": [10, 10]}, [price(hourly=4.0), spot], {"c": {"spot": True, "spot_goodput": 1.0}},
                   extra_top=top)
    plan = solve_case(m)
    assert plan.cost["spot"] == pytest.approx(7)
    assert plan.cost["on_demand"] == pytest.approx(4 * 13)


def test_equal_hours_with_different_caps_are_not_merged(tmp_path):
    # identical demand every hour: without the file the hours merge into one block; with a cap in one hour they
    # must not, or the cap would bind every hour. Merged and unmerged models agree.
    top = _availability(tmp_path, [dict(period="2027-01-04T02:00", gpu_type="A", region="r1", option="spot",
                                        max_gpus=1)])
    m = write_case(tmp_path, {"c": [3] * 4}, [price(hourly=2.0), SPOT], {"c": {"spot": True, "spot_goodput": 1.0}},
                   extra_top=top)
    inp = load_inputs(m)
    merged = make_plan(inp, risk=False)
    from planner.model import build_model

    assert build_model(inp).blocks.B == 2
    unmerged = make_plan(inp.__class__(**{**inp.__dict__, "config": inp.config.__class__(
        **{**inp.config.__dict__, "solver": inp.config.solver.__class__(
            **{**inp.config.solver.__dict__, "merge_periods": False})})}), risk=False)
    # 3 hours of 3 spot (3 $ each) + 1 spot and 2 on-demand (1 + 4)
    assert merged.cost["total"] == pytest.approx(9 + 5)
    assert unmerged.cost["total"] == pytest.approx(merged.cost["total"])


def test_class_penalty_decides_who_is_served_in_either_order(tmp_path):
    # one pool capped at 5 on demand; chat (penalty 100) and batch (penalty 20) each want 5: chat is served
    # in full whatever the order of the classes in the model file. Objective: 5 x 2 + 5 x 20 = 110.
    cap = price(hourly=2.0, max_gpus=5)
    for order in (("chat", "batch"), ("batch", "chat")):
        pen = {"chat": 100.0, "batch": 20.0}
        folder = tmp_path / "-".join(order)
        m = write_case(folder, {k: [5] for k in order}, [cap], {k: {"shortfall_penalty": pen[k]} for k in order})
        plan = solve_case(m)
        short = plan.shortfall.groupby("workload_class")["unmet_gpu_hours"].sum()
        assert set(short.index) == {"batch"} and short["batch"] == pytest.approx(5)
        assert plan.objective == pytest.approx(110)


def test_default_penalty_is_the_solvers(tmp_path):
    m = write_case(tmp_path, {"a": [1], "b": [1]}, [price(hourly=2.0)], {"a": {"shortfall_penalty": 7.5}, "b": {}},
                   solver={"shortfall_penalty_usd_per_gpu_hour": 33.0})
    inp = load_inputs(m)
    assert inp.penalty_by_class.tolist() == [7.5, 33.0]


def test_benders_equals_whole_model_with_availability(tmp_path):
    rng = np.random.default_rng(3)
    hours = 24 * 14
    demand = {"c": list(np.round(20 + 10 * rng.random(hours), 2))}
    rows = [dict(period=t.strftime("%Y-%m-%dT%H:%M"), gpu_type="A", region="r1", option="spot",
                 max_gpus=float(rng.integers(0, 15)))
            for t in pd.date_range("2027-01-04", periods=hours, freq="h")[::3]]
    top = _availability(tmp_path, rows)
    prices = [price(hourly=4.0), SPOT, price(option="reserved_1y", hourly=2.2)]
    m = write_case(tmp_path, demand, prices, {"c": {"spot": True, "max_spot_share": 0.6, "spot_goodput": 0.9}},
                   extra_top=top, solver={"mip_gap": 1e-7})
    inp = load_inputs(m)
    from dataclasses import replace

    mono = make_plan(replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method="monolithic"))),
                     risk=False, mip_gap=1e-7)
    bend = make_plan(replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method="benders"))),
                     risk=False, mip_gap=1e-7)
    assert "benders" in bend.stats
    assert bend.objective == pytest.approx(mono.objective, rel=1e-6)


@pytest.mark.parametrize("rows, column, words", [
    ([dict(period="2027-01-04T00:00", gpu_type="A", region="r1", option="reserved_1y", max_gpus=3)], "option",
     "not on_demand or spot"),
    ([dict(period="2027-01-04T00:00", gpu_type="Z", region="r1", option="spot", max_gpus=3)], "gpu_type",
     "not in the price sheet"),
    ([dict(period="2027-01-04T00:00", gpu_type="A", region="r1", option="spot", max_gpus=-1)], "max_gpus", "-1"),
    ([dict(period="yesterday", gpu_type="A", region="r1", option="spot", max_gpus=1)], "period", "yesterday"),
])
def test_bad_availability_exits_2_naming_file_row_and_column(tmp_path, rows, column, words):
    top = _availability(tmp_path, rows)
    m = write_case(tmp_path, {"c": [1, 1]}, [price(hourly=2.0), SPOT], {"c": {"spot": True}}, extra_top=top)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["plan", str(m), "--out", str(out), "--no-memo"])
    assert r.exit_code == 2, r.output
    assert "availability.csv" in r.output and column in r.output and words in r.output
    assert "row 2" in r.output
    assert not out.exists()


def test_availability_for_an_option_the_pool_does_not_price(tmp_path):
    top = _availability(tmp_path, [dict(period="2027-01-04T00:00", gpu_type="A", region="r1", option="spot",
                                        max_gpus=1)])
    m = write_case(tmp_path, {"c": [1]}, [price(hourly=2.0)], {"c": {}}, extra_top=top)
    r = CliRunner().invoke(main, ["validate", str(m)])
    assert r.exit_code == 2 and "no such option" in r.output


@pytest.mark.parametrize("opts, words", [
    ({"shortfall_penalty": 0.0}, "out of range"),
    ({"shortfall_penalty": 5.0, "shortfall_penalty_usd_per_gpu_hour": 5.0}, "sets both"),
])
def test_bad_class_penalty(tmp_path, opts, words):
    m = write_case(tmp_path, {"c": [1]}, [price(hourly=2.0)], {"c": opts})
    r = CliRunner().invoke(main, ["validate", str(m)])
    assert r.exit_code == 2 and words in r.output and "classes.c" in r.output
