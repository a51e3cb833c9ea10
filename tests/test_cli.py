"""The command line: help, exit codes, outputs written or not."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner import cli as cli_mod
from conftest import price, write_case


@pytest.fixture
def runner():
    return CliRunner()


@pytest.mark.parametrize("command", list(cli_mod.cli.commands))
def test_every_command_has_help_with_an_example(runner, command):
    result = runner.invoke(cli_mod.cli, [command, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.output


def test_plan_exit_0_writes_both_files(runner, tmp_path):
    m = write_case(tmp_path, {"c": [5, 6]}, [price(hourly=1.0)], {"c": {}})
    out = tmp_path / "out"
    result = runner.invoke(cli_mod.cli, ["plan", str(m), "--out", str(out)])
    assert result.exit_code == 0, result.output
    plan = json.loads((out / "plan.json").read_text())
    assert plan["status"] == "optimal"
    assert plan["cost_usd"]["total"] == pytest.approx(11.0)
    assert (out / "plan.xlsx").stat().st_size > 0
    assert "total cost" in result.output


def test_plan_exit_3_on_shortfall_and_still_writes(runner, tmp_path):
    m = write_case(tmp_path, {"c": [5, 6]}, [price(hourly=1.0, max_gpus=4)], {"c": {}})
    out = tmp_path / "out"
    result = runner.invoke(cli_mod.cli, ["plan", str(m), "--out", str(out)])
    assert result.exit_code == 3
    plan = json.loads((out / "plan.json").read_text())
    assert plan["shortfall_gpu_hours"] == pytest.approx(3.0)
    assert plan["shortfall"][0]["workload_class"] == "c"
    assert "SHORTFALL" in result.output


def test_plan_exit_2_on_bad_input_writes_nothing(runner, tmp_path):
    m = write_case(tmp_path, {"c": [5, 6]}, [price(hourly=1.0)], {"c": {}})
    text = (tmp_path / "demand.csv").read_text().replace(",5.0\n", ",five\n").replace(",5\n", ",five\n")
    (tmp_path / "demand.csv").write_text(text)
    out = tmp_path / "out"
    result = runner.invoke(cli_mod.cli, ["plan", str(m), "--out", str(out)])
    assert result.exit_code == 2
    assert "demand.csv, row 2, column 'gpus': not a number (got 'five')" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_plan_exit_1_when_the_solver_is_missing(runner, tmp_path, monkeypatch):
    from planner.solve import monolithic as solve

    m = write_case(tmp_path, {"c": [5, 6]}, [price(hourly=1.0)], {"c": {}})
    monkeypatch.setattr(solve, "cbc_path", lambda: None)
    out = tmp_path / "out"
    result = runner.invoke(cli_mod.cli, ["plan", str(m), "--out", str(out), "--solver", "cbc"])
    assert result.exit_code == 1
    assert "CBC is not installed" in result.output
    assert not out.exists()


def test_validate_ok_and_bad(runner, tmp_path):
    m = write_case(tmp_path, {"c": [5, 6]}, [price(hourly=1.0)], {"c": {}})
    ok = runner.invoke(cli_mod.cli, ["validate", str(m)])
    assert ok.exit_code == 0 and "OK" in ok.output
    bad = runner.invoke(cli_mod.cli, ["validate", str(tmp_path / "nope.toml")])
    assert bad.exit_code == 2
    assert "model file not found" in bad.output


def test_overrides_prices_from_the_command_line(runner, tmp_path):
    m = write_case(tmp_path, {"c": [5, 6]}, [price(hourly=1.0)], {"c": {}})
    other = tmp_path / "dear.csv"
    other.write_text("gpu_type,region,option,hourly_usd\nA,r1,on_demand,3\n")
    out = tmp_path / "out"
    result = runner.invoke(cli_mod.cli, ["plan", str(m), "--out", str(out), "--prices", str(other)])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "plan.json").read_text())["cost_usd"]["total"] == pytest.approx(33.0)


@pytest.mark.slow
def test_example_plan_is_optimal_and_written(example_plan):
    plan, paths = example_plan
    data = json.loads(paths["json"].read_text())
    assert data["status"] == "optimal"
    assert data["shortfall_gpu_hours"] == 0
    assert data["cost_usd"]["total"] < data["baselines_usd"]["all_on_demand"]
    for key in ("status", "mip_gap", "objective_usd", "cost_usd", "shortfall_gpu_hours", "reserved_purchases",
                "baselines_usd", "inputs", "solver"):
        assert key in data
    assert set(data["inputs"]["sha256"]) == {data["inputs"]["demand"], data["inputs"]["prices"],
                                             data["inputs"]["inventory"], data["inputs"]["model"]}
