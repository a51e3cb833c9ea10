"""`planner spot` and the spot economics inside every plan."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from openpyxl import load_workbook

from planner.sizing import economics as eco
from planner.cli import cli
from conftest import price, solve_case, write_case


def spot_json(*args):
    result = CliRunner().invoke(cli, ["spot", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_spot_command_reproduces_daly():
    for mtbi, expected in ((24, 116.7), (6, 56.7), (0.25, 9.2)):
        out = spot_json("--mtbi-hours", str(mtbi), "--checkpoint-minutes", "5", "--restart-minutes", "10")
        assert out["optimal_interval_minutes"] == pytest.approx(expected, abs=0.1)
        assert out["young_interval_minutes"] == pytest.approx(np.sqrt(2 * 5 * mtbi * 60), rel=1e-9)


def test_spot_command_break_even_is_where_prices_meet():
    args = ["--interruptions-per-hour", "0.1", "--job-gpus", "16", "--gpus-per-instance", "8",
            "--checkpoint-minutes", "2", "--restart-minutes", "5", "--spot-price", "4.5", "--on-demand-price", "11"]
    out = spot_json(*args)
    assert out["spot_pays"] is True
    be = out["break_even_interruptions_per_hour"]
    at = spot_json(*(["--interruptions-per-hour", repr(be)] + args[2:]))
    assert at["effective_usd_per_useful_gpu_hour"] == pytest.approx(11.0, rel=1e-6)
    beyond = spot_json(*(["--interruptions-per-hour", repr(be * 1.01)] + args[2:]))
    assert beyond["spot_pays"] is False


def test_spot_command_job_mtbi_for_a_large_training_run():
    out = spot_json("--job-mtbi-hours", "3", "--job-gpus", "16384", "--gpus-per-instance", "8",
                    "--checkpoint-minutes", "5", "--restart-minutes", "20")
    assert out["job_interruptions_per_hour"] == pytest.approx(1 / 3)
    tau = eco.optimal_interval(1 / 3, 5 / 60)
    assert out["optimal_interval_minutes"] == pytest.approx(float(tau) * 60)
    assert out["goodput"] == pytest.approx(float(eco.goodput(1 / 3, tau, 5 / 60, 20 / 60)))


def test_spot_command_needs_a_rate():
    result = CliRunner().invoke(cli, ["spot", "--checkpoint-minutes", "5"])
    assert result.exit_code == 2
    assert "no interruption rate given" in result.output


@pytest.mark.slow
def test_spot_sweep_writes_a_workbook_with_a_chart(tmp_path):
    path = tmp_path / "sweep.xlsx"
    result = CliRunner().invoke(cli, ["spot", "--interruptions-per-hour", "0.05", "--gpus-per-instance", "8",
                                      "--sweep", "job-gpus", "--spot-price", "6", "--on-demand-price", "11",
                                      "--xlsx", str(path)])
    assert result.exit_code == 0, result.output
    ws = load_workbook(path)["Sweep"]
    goodputs = [ws.cell(row=r, column=4).value for r in range(2, ws.max_row + 1)]
    assert all(a > b for a, b in zip(goodputs, goodputs[1:]))  # falls as the gang grows
    assert len(ws._charts) == 2


def test_plan_uses_the_goodput_model(tmp_path):
    # one spot pool: 8-GPU instances, 0.05 preemptions per instance-hour, a 64-GPU job (8 instances).
    m = write_case(tmp_path, {"t": [64, 64]},
                   [price(hourly=11.0, gpus_per_instance=8),
                    price(option="spot", hourly=3.0, interruptions_per_hour=0.05, gpus_per_instance=8)],
                   {"t": {"spot": True, "job_gpus": 64, "checkpoint_minutes": 6, "restart_minutes": 15}})
    plan = solve_case(m)
    lam = 8 * 0.05
    g = float(eco.optimal_goodput(lam, 0.1, 0.25))
    row = plan.spot.iloc[0]
    assert row["goodput"] == pytest.approx(g)
    assert row["job_interruptions_per_hour"] == pytest.approx(lam)
    assert plan.cost["spot"] == pytest.approx(2 * 64 / g * 3.0)


def test_spot_goodput_override_is_used_exactly(tmp_path):
    m = write_case(tmp_path, {"t": [10]},
                   [price(hourly=11.0), price(option="spot", hourly=3.0, interruptions_per_hour=5.0)],
                   {"t": {"spot": True, "spot_goodput": 0.9}})
    plan = solve_case(m)
    assert plan.spot.iloc[0]["goodput"] == 0.9
    assert plan.cost["spot"] == pytest.approx(10 / 0.9 * 3.0)


def test_spot_that_does_not_pay_is_not_bought_and_says_why(tmp_path):
    # a 512-GPU gang at 0.05 per instance-hour: goodput ~0.18, so 6.33/0.18 > 11.06 on-demand.
    m = write_case(tmp_path, {"t": [512, 512]},
                   [price(hourly=11.06, gpus_per_instance=8),
                    price(option="spot", hourly=6.33, interruptions_per_hour=0.05, gpus_per_instance=8)],
                   {"t": {"spot": True, "job_gpus": 512, "checkpoint_minutes": 6, "restart_minutes": 15}})
    plan = solve_case(m)
    row = plan.spot.iloc[0]
    assert not row["spot_pays"]
    assert row["spot_gpu_hours"] == 0
    assert "not below on-demand" in row["why"]


@pytest.mark.slow
def test_example_spot_decisions_agree_with_the_sheet(example_plan):
    plan, paths = example_plan
    spot = plan.spot
    inp = plan.inputs
    fleet = plan.fleet
    for r in spot.itertuples():
        if r.spot_pays or r.spot_gpu_hours == 0:
            continue
        # spot bought although it does not pay: only allowed when on-demand in that pool is capped out
        cap = inp.pools.set_index("name").loc[f"{r.gpu_type}/{r.region}", "cap_od"]
        assert not np.isnan(cap)
        od = fleet[(fleet.gpu_type == r.gpu_type) & (fleet.region == r.region)]["on_demand"].max()
        assert od >= cap - 1e-6
    data = json.loads(paths["json"].read_text())
    keys = {"workload_class", "gpu_type", "region", "goodput", "interval_minutes",
            "effective_usd_per_useful_gpu_hour", "spot_pays"}
    assert data["spot_economics"] and keys <= set(data["spot_economics"][0])
    assert len(data["spot_economics"]) == len(spot)
