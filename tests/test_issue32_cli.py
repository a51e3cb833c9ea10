"""Issue 32, CLI edges: an output never overwrites an input; a folder where an output file goes, or a
malformed plan.json, is bad input (exit 2, nothing written)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from planner.cli import cli
from planner.cli import forecast_cmd, report_cmd  # noqa: F401  (register the commands)

from conftest import price, write_case


def _tiny(tmp_path):
    return write_case(tmp_path / "m", {"c": [1.0, 2.0, 1.0]}, [price()], {"c": {}})


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
    assert "is the same file as the input demand" in r.output
    assert (folder / "fleet.csv").read_bytes() == before and not (folder / "plan.json").exists()


def _plan(tmp_path):
    m = _tiny(tmp_path)
    out = tmp_path / "plan"
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    return out


def test_report_deeply_nested_or_non_object_json_exits_2(tmp_path):
    deep = tmp_path / "plan.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    r = CliRunner().invoke(cli, ["report", str(deep), "--html", str(tmp_path / "r.html")])
    assert r.exit_code == 2 and "nested too deeply" in r.output and str(deep) in r.output, r.output
    deep.write_text('"just a string"')
    r = CliRunner().invoke(cli, ["report", str(deep), "--html", str(tmp_path / "r.html")])
    assert r.exit_code == 2 and "not an object" in r.output, r.output  # (held before issue 32 too)
    assert not (tmp_path / "r.html").exists()


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
        assert r.exit_code == 2 and "is the same file as the input" in r.output, r.output
        assert (out / name).read_bytes() == before


def test_sweep_refuses_an_out_whose_sweep_csv_is_its_demand(tmp_path):
    from planner.cli import whatif  # noqa: F401

    folder = tmp_path / "m"
    m = write_case(folder, {"c": [1.0, 2.0]}, [price()], {"c": {}})
    (folder / "demand.csv").rename(folder / "sweep.csv")
    m.write_text(m.read_text().replace('"demand.csv"', '"sweep.csv"'))
    before = (folder / "sweep.csv").read_bytes()
    r = CliRunner().invoke(cli, ["sweep", str(m), "--demand-level", "1,1.1", "--out", str(folder), "-q"])
    assert r.exit_code == 2 and "is the same file as the input demand" in r.output, r.output
    assert (folder / "sweep.csv").read_bytes() == before
