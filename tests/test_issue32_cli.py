"""Issue 32, CLI edges: an output never overwrites an input; a folder where an output file goes, or a
malformed plan.json, is bad input (exit 2, nothing written)."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from planner.cli import cli
from planner.cli import forecast_cmd, report_cmd  # noqa: F401  (register the commands)

from conftest import price, write_case
from test_forecasting import model_for, synth, to_long


def _tiny(tmp_path):
    return write_case(tmp_path / "m", {"c": [1.0, 2.0, 1.0]}, [price()], {"c": {}})


def test_forecast_refuses_out_holding_its_history(tmp_path):
    m = model_for(tmp_path, ["c0"])
    work = tmp_path / "w"
    work.mkdir()
    to_long(synth(K=1, T=400)).to_csv(work / "forecast.csv", index=False)
    before = (work / "forecast.csv").read_bytes()
    r = CliRunner().invoke(cli, ["forecast", str(m), "--history", str(work / "forecast.csv"), "--horizon-months",
                                 "1", "--method", "latest", "--out", str(work)])
    assert r.exit_code == 2, r.output
    assert "would overwrite the input --history" in r.output and "forecast.csv" in r.output
    assert (work / "forecast.csv").read_bytes() == before
    assert sorted(p.name for p in work.iterdir()) == ["forecast.csv"]


def test_forecast_refuses_out_through_a_link(tmp_path):
    m = model_for(tmp_path, ["c0"])
    to_long(synth(K=1, T=400)).to_csv(tmp_path / "forecast.csv", index=False)
    os.symlink(tmp_path, tmp_path / "link")
    r = CliRunner().invoke(cli, ["forecast", str(m), "--history", str(tmp_path / "forecast.csv"),
                                 "--horizon-months", "1", "--method", "latest", "--out", str(tmp_path / "link")])
    assert r.exit_code == 2 and "would overwrite the input --history" in r.output, r.output


def test_plan_refuses_out_whose_plan_json_is_a_folder(tmp_path):
    m = _tiny(tmp_path)
    out = tmp_path / "out"
    (out / "plan.json").mkdir(parents=True)
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(out), "-q"])
    assert r.exit_code == 2, r.output
    assert "plan.json" in r.output and "folder" in r.output
    assert sorted(p.name for p in out.iterdir()) == ["plan.json"] and not any((out / "plan.json").iterdir())


def test_plan_refuses_out_holding_its_own_demand(tmp_path):
    folder = tmp_path / "m"
    m = write_case(folder, {"c": [1.0, 2.0]}, [price()], {"c": {}})
    (folder / "demand.csv").rename(folder / "fleet.csv")
    m.write_text(m.read_text().replace('"demand.csv"', '"fleet.csv"'))
    before = (folder / "fleet.csv").read_bytes()
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(folder), "-q"])
    assert r.exit_code == 2, r.output
    assert "would overwrite the input demand" in r.output
    assert (folder / "fleet.csv").read_bytes() == before and not (folder / "plan.json").exists()


def _plan(tmp_path):
    m = _tiny(tmp_path)
    out = tmp_path / "plan"
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    return out


def test_report_html_refuses_the_plans_own_files(tmp_path):
    out = _plan(tmp_path)
    for name in ("plan.xlsx", "allocation.csv", "plan.json", "fleet.csv"):
        before = (out / name).read_bytes()
        r = CliRunner().invoke(cli, ["report", str(out / "plan.json"), "--html", str(out / name)])
        assert r.exit_code == 2, (name, r.output)
        assert "would overwrite the input" in r.output and name in r.output
        assert (out / name).read_bytes() == before


def test_report_deeply_nested_or_non_object_json_exits_2(tmp_path):
    deep = tmp_path / "plan.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    r = CliRunner().invoke(cli, ["report", str(deep), "--html", str(tmp_path / "r.html")])
    assert r.exit_code == 2 and "nested too deeply" in r.output and str(deep) in r.output, r.output
    deep.write_text('"just a string"')
    r = CliRunner().invoke(cli, ["report", str(deep), "--html", str(tmp_path / "r.html")])
    assert r.exit_code == 2 and "not an object" in r.output, r.output  # (held before issue 32 too)
    assert not (tmp_path / "r.html").exists()


def test_spot_accepts_a_job_level_preemption_rate_as_the_per_instance_one():
    args = ["--job-gpus", "64", "--gpus-per-instance", "8", "--checkpoint-minutes", "3", "--restart-minutes", "10",
            "--spot-price", "3.2", "--on-demand-price", "9.8", "--json"]
    import json

    job = CliRunner().invoke(cli, ["spot", "--job-mtbi-hours", "4", *args])
    assert job.exit_code == 0, job.output + job.stderr
    assert "4 x 8 = 32 h" in job.stderr and "--mtbi-hours 32" in job.stderr
    inst = CliRunner().invoke(cli, ["spot", "--mtbi-hours", "32", *args])
    a, b = json.loads(job.stdout), json.loads(inst.stdout)
    assert a == b
    assert abs(a["job_interruptions_per_hour"] - 0.25) < 1e-12  # 8 instances x 1/32 h = the measured 1/4 h


def test_term_end_is_the_exclusive_instant_365_days_on(tmp_path):
    """A 12-month term bought 2028-01-01 (a leap year) is 8,760 h = AWS's 31,536,000 s: it expires
    2028-12-31T00:00; terminal and plan.json say that instant (docs/formulation.md, hours and calendar terms)."""
    import json

    import pandas as pd

    m = write_case(tmp_path / "m", {"c": [4.0] * 3},
                   [price(hourly=2.0), price(option="reserved_1y", hourly=1.0, term_months=12)], {"c": {}},
                   start="2028-01-01T00:00")
    out = tmp_path / "o"
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "ends 2028-12-31 00:00:" in r.output, r.output
    rp = json.loads((out / "plan.json").read_text())["reserved_purchases"]
    assert rp and pd.Timestamp(rp[0]["end_date"]) == pd.Timestamp("2028-12-31T00:00")
    assert (pd.Timestamp(rp[0]["end_date"]) - pd.Timestamp(rp[0]["purchase_date"])).total_seconds() == 31_536_000


def test_quota_overflow_lands_on_one_flavor_as_docs_quotas_md_says():
    import numpy as np

    from planner.quotas.build import split_demand

    d = split_demand(np.array([[200.0, 200.0]]), np.array([[1.0, 1.0]]), np.array([100.0, 50.0]))
    assert np.allclose(d[0, :, 0], [150.0, 50.0], atol=1e-4)  # the 50 over lands on the larger flavor only
    doc = (Path(__file__).resolve().parent.parent / "docs" / "quotas.md").read_text()
    assert "`H100=100,A100=50`" in doc and "150 H100 and 50 A100" in doc


def test_inputs_md_unknown_column_example_lists_what_the_tool_lists(tmp_path):
    import re
    import shutil

    root = Path(__file__).resolve().parent.parent
    shutil.copytree(root / "data" / "example", tmp_path / "col")
    p = tmp_path / "col" / "prices.csv"
    lines = p.read_text().split("\n", 1)
    p.write_text(lines[0].replace("max_gpus", "max_gpu") + "\n" + lines[1])
    r = CliRunner().invoke(cli, ["validate", str(root / "models" / "example.toml"), "--prices", str(p)])
    pat = r"column 'max_gpu': unknown column in the price sheet; expected one of ([^.]*)\."
    tool = re.search(pat, r.output).group(1)
    doc = re.search(pat, (root / "docs" / "inputs.md").read_text()).group(1)
    assert doc == tool


def test_export_focus_refuses_to_overwrite_its_plan(tmp_path):
    out = _plan(tmp_path)
    for name in ("plan.json", "fleet.csv"):
        before = (out / name).read_bytes()
        r = CliRunner().invoke(cli, ["export", "focus", str(out / "plan.json"), "--out", str(out / name)])
        assert r.exit_code == 2 and "would overwrite the input" in r.output, r.output
        assert (out / name).read_bytes() == before


def test_sweep_refuses_an_out_whose_sweep_csv_is_its_demand(tmp_path):
    from planner.cli import whatif  # noqa: F401

    folder = tmp_path / "m"
    m = write_case(folder, {"c": [1.0, 2.0]}, [price()], {"c": {}})
    (folder / "demand.csv").rename(folder / "sweep.csv")
    m.write_text(m.read_text().replace('"demand.csv"', '"sweep.csv"'))
    before = (folder / "sweep.csv").read_bytes()
    r = CliRunner().invoke(cli, ["sweep", str(m), "--demand-level", "1,1.1", "--out", str(folder), "-q"])
    assert r.exit_code == 2 and "would overwrite the input demand" in r.output, r.output
    assert (folder / "sweep.csv").read_bytes() == before
