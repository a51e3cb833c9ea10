"""fleet.csv read back beside its plan.json (planner.results.fleet_file): ``planner export focus --granularity
period`` refuses a damaged or foreign cell with exit 2 naming it (read silently, a region cut at a NUL byte was a
pool of its own, priced at nothing, and its reserved rows were dropped); ``planner report --html`` refuses a
damaged cell and falls back to monthly means, saying why, for a fleet that is not this plan's."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from click.testing import CliRunner

from conftest import price, solve_case, write_case
from planner.cli import cli


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """A week of daily periods, one class over two pools, reserved bought in one: the outputs written."""
    from planner.pipeline.run import write_outputs

    tmp = tmp_path_factory.mktemp("fleet")
    rows = [price("H", "us-east-1", hourly=10.0), price("H", "us-east-1", option="reserved_1y", hourly=4.0),
            price("H", "eu-west-1", hourly=11.0)]
    m = write_case(tmp / "m", {"a": [40.0, 48.0, 44.0, 40.0, 52.0, 46.0, 42.0]}, rows, {"a": {}},
                   start="2027-01-04T00:00", hours=24.0, extra_top='[term]\njudge = "horizon"')
    return write_outputs(solve_case(m), tmp / "out")["json"].parent


def edited(planned, tmp_path, row: int, column: str, value: str):
    """A copy of the plan's folder with fleet.csv's cell (data row ``row``, 0-based) set to ``value``."""
    out = tmp_path / "plan"
    shutil.copytree(planned, out)
    f = pd.read_csv(out / "fleet.csv", dtype=str, keep_default_na=False)
    f.loc[row, column] = value
    f.to_csv(out / "fleet.csv", index=False)
    return out


def export(folder):
    return CliRunner().invoke(cli, ["export", "focus", str(folder / "plan.json"), "--granularity", "period",
                                    "--out", str(folder / "focus.csv")])


def test_the_plans_own_fleet_exports_per_period_with_the_monthly_money(planned, tmp_path):
    res = export(edited(planned, tmp_path, 0, "region", pd.read_csv(planned / "fleet.csv")["region"].iat[0]))
    assert res.exit_code == 0, res.output
    period = pd.read_csv(tmp_path / "plan" / "focus.csv")
    assert CliRunner().invoke(cli, ["export", "focus", str(tmp_path / "plan" / "plan.json"),
                                    "--out", str(tmp_path / "m.csv")]).exit_code == 0
    month = pd.read_csv(tmp_path / "m.csv")
    assert period["EffectiveCost"].sum() == pytest.approx(month["EffectiveCost"].sum(), rel=1e-9)
    assert (period["ConsumedQuantity"].fillna(0) >= 0).all()


@pytest.mark.parametrize("column, value, what", [
    ("region", "us-e\x00ast-1", "a NUL byte in the cell"),  # pandas 2 read 'us-e', pandas 3 kept it: both exit 0
    ("on_demand", "1\x002", "a NUL byte in the cell"),  # pandas 2 read 1
    ("hours", "2\x004", "a NUL byte in the cell"),  # pandas 2 read a 2-hour period
    ("region", "us-east-9", "a pool this plan.json does not have"),
    ("gpu_type", "H200", "a pool this plan.json does not have"),
    ("on_demand", "-3", "not a number of GPUs (or hours) >= 0"),
    ("spot", "lots", "not a number of GPUs (or hours) >= 0"),
    ("period", "2027-13-01T00:00", "not a date and time"),
    ("scenario", "other", "a scenario this plan.json does not have"),
])
def test_a_damaged_or_foreign_cell_exits_2_naming_it_and_writes_nothing(planned, tmp_path, column, value, what):
    folder = edited(planned, tmp_path, 3, column, value)
    res = export(folder)
    assert res.exit_code == 2, res.output
    assert "fleet.csv, row 5, column" in res.output and what in res.output, res.output
    assert "Traceback" not in res.output and not (folder / "focus.csv").exists()


def test_the_html_report_refuses_a_damaged_cell_and_falls_back_for_another_plans_pool(planned, tmp_path):
    folder = edited(planned, tmp_path, 3, "on_demand", "1\x002")
    res = CliRunner().invoke(cli, ["report", str(folder / "plan.json"), "--html", str(folder / "r.html")])
    assert res.exit_code == 2 and "fleet.csv, row 5, column 'on_demand'" in res.output, res.output
    assert not (folder / "r.html").exists()
    other = tmp_path / "other"
    other.mkdir()
    folder = edited(planned, other, 3, "region", "us-east-9")
    res = CliRunner().invoke(cli, ["report", str(folder / "plan.json"), "--html", str(folder / "r.html")])
    assert res.exit_code == 0, res.output
    page = (folder / "r.html").read_text(encoding="utf-8")
    assert "does not match this plan.json (row 5: a pool this plan.json does not have" in page


def test_a_row_given_twice_a_moved_period_or_a_period_of_other_hours_exit_2(planned, tmp_path):
    folder = tmp_path / "twice"
    shutil.copytree(planned, folder)
    f = pd.read_csv(folder / "fleet.csv", dtype=str, keep_default_na=False)
    pd.concat([f, f.iloc[[3]]]).to_csv(folder / "fleet.csv", index=False)  # read as it was: its GPU-hours counted twice
    res = export(folder)
    assert res.exit_code == 2 and "a period and pool given twice" in res.output, res.output
    for name, column, value, what in (("moved", "period", "2026-12-01T00:00", "before the plan's start"),
                                      ("long", "hours", "240", "hours differ between its rows"),
                                      ("zoned", "period", "2027-01-05T00:00+05:00", "of the plan's clock")):
        folder = edited(planned, tmp_path / name, 3, column, value)
        res = export(folder)
        assert res.exit_code == 2 and what in res.output and "Traceback" not in res.output, (name, res.output)
        assert not (folder / "focus.csv").exists()


def test_a_fleet_of_other_periods_is_not_this_plans(planned, tmp_path):
    folder = tmp_path / "short"
    shutil.copytree(planned, folder)
    f = pd.read_csv(folder / "fleet.csv", dtype=str, keep_default_na=False)
    f[f["period"] != f["period"].iat[-1]].to_csv(folder / "fleet.csv", index=False)  # the last day dropped
    res = export(folder)
    assert res.exit_code == 2 and "not this plan's horizon" in res.output, res.output


def test_nul_scan_of_a_cell_past_the_csv_modules_limit_exits_2(tmp_path):
    from planner.core.csvscan import refuse_nul_text
    from planner.core.errors import InputError
    import io

    with pytest.raises(InputError) as err:
        refuse_nul_text(io.StringIO("a,b\nx\x00,\"" + "y" * 200_000 + "\"\n"), "f.csv")
    assert any("NUL" in p.message or "not a readable CSV" in p.message for p in err.value.problems)


def test_a_period_moved_past_the_end_or_a_row_deleted_disagrees_with_the_plans_months(planned, tmp_path):
    f = pd.read_csv(planned / "fleet.csv", dtype=str, keep_default_na=False)
    last = f["period"].iat[-1]
    for name, edit, what in (
            ("moved", lambda g: g.assign(period=g["period"].where(g["period"] != last, "2027-02-15T00:00")),
             "monthly_usage says"),  # read as it was: that day's GPU-hours and money left the export, exit 0
            ("deleted", lambda g: g.drop(index=g.index[(g["on_demand"].astype(float) > 0).to_numpy()][:1]),
             "monthly_usage says"),
            ("empty", lambda g: g.iloc[:0], "no rows")):
        folder = tmp_path / name
        shutil.copytree(planned, folder)
        edit(f).to_csv(folder / "fleet.csv", index=False)
        res = export(folder)
        assert res.exit_code == 2 and what in res.output and "Traceback" not in res.output, (name, res.output)
        assert "plan.json:" not in res.output.split("fleet.csv")[0]  # the fleet is named, not the plan
