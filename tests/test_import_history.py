"""`planner history import`: FOCUS bills and Prometheus range queries -> the long-form demand history."""

from __future__ import annotations

import gzip
import json
import shutil

import pandas as pd
import pytest
from click.testing import CliRunner

from conftest import ROOT, SHARED, price, solve_case, write_case
from planner.cli import cli

FIX = ROOT / "tests" / "fixtures" / "history"
REAL = SHARED / "data" / "real" / "focus" / "focus_1.0_sample_1000.csv"


def run(*args):
    return CliRunner().invoke(cli, ["history", "import", *map(str, args)])


def table(path):
    return pd.read_csv(path).set_index(["period", "workload_class"])["gpus"]


# ---- FOCUS ---------------------------------------------------------------------------------------------------
def test_real_focus_sample_reads_and_says_no_row_is_gpu_usage(tmp_path):
    if not REAL.is_file():
        pytest.skip("../shared/data/real/focus not present")
    out = tmp_path / "h.csv"
    r = run("--focus", REAL, "--prices", ROOT / "data" / "example" / "prices.csv", "--out", out,
            "--inventory", tmp_path / "inv.csv")
    assert r.exit_code == 0, r.output
    assert "rows read: 1,000" in r.output and "compute usage rows: 440" in r.output
    assert "GPU usage rows: 0" in r.output and "none of them GPU usage" in r.output
    assert "g5.4xlarge 8, g3.4xlarge 2" in r.output  # GPU instances the example's sheet cannot size, said so
    assert "spend-based commitments" in r.output and not (tmp_path / "inv.csv").exists()
    assert out.read_text() == "period,workload_class,gpus\n"


def test_real_focus_sample_with_its_instance_types_sized_counts_them(tmp_path):
    if not REAL.is_file():
        pytest.skip("../shared/data/real/focus not present")
    sheet = tmp_path / "p.csv"
    sheet.write_text("gpu_type,region,option,hourly_usd,gpus_per_instance,instance_type\n"
                     "A10G,us-east-1,on_demand,1.624,1,g5.4xlarge\nM60,us-east-1,on_demand,1.14,1,g3.4xlarge\n")
    r = run("--focus", REAL, "--prices", sheet, "--out", tmp_path / "h.csv")
    assert r.exit_code == 0, r.output
    assert "GPU usage rows: 10" in r.output
    h = pd.read_csv(tmp_path / "h.csv")
    raw = pd.read_csv(REAL, dtype=str, keep_default_na=False)
    rows = raw[raw["ChargeDescription"].str.contains(r"g5\.4xlarge|g3\.4xlarge")]
    assert len(rows) == 10  # one GPU each: their instance-hours are GPU-hours
    assert h["gpus"].sum() == pytest.approx(pd.to_numeric(rows["ConsumedQuantity"]).sum(), abs=1e-5)


def test_bill_to_hourly_pools_and_inventory(tmp_path):
    out, inv = tmp_path / "h.csv", tmp_path / "inv.csv"
    r = run("--focus", FIX / "bill.csv", "--prices", FIX / "prices.csv", "--out", out, "--inventory", inv)
    assert r.exit_code == 0, r.output
    assert "rows read: 6, usage rows: 6, compute usage rows: 5, GPU usage rows: 3" in r.output
    h = table(out)
    assert h[("2024-09-01T00:00", "H100-80GB@us-east-1")] == pytest.approx(8.0)  # 2 instance-hours over 2 h
    assert h[("2024-09-01T01:00", "H100-80GB@us-east-1")] == pytest.approx(16.0)  # + the reserved hour used
    assert h[("2024-09-01T00:00", "A10G@us-east-1")] == pytest.approx(1.0)
    assert h[("2024-09-01T01:00", "A10G@us-east-1")] == 0.0  # the grid is complete
    i = pd.read_csv(inv)
    assert i.to_dict("records") == [{"gpu_type": "H100-80GB", "region": "us-east-1", "option": "reserved_from_bill",
                                     "gpus": 16, "start": "2024-09-01T01:00", "end": "2024-09-01T02:00"}]
    assert "no term dates" in r.output


def test_class_by_tag_and_compressed_and_parquet_bills(tmp_path):
    gz = tmp_path / "bill.csv.gz"
    with open(FIX / "bill.csv", "rb") as f, gzip.open(gz, "wb") as g:
        shutil.copyfileobj(f, g)
    pq = tmp_path / "bill.parquet"
    pd.read_csv(FIX / "bill.csv", dtype=str, keep_default_na=False).to_parquet(pq)
    for src in (gz, pq):
        out = tmp_path / f"{src.suffix}.csv"
        r = run("--focus", src, "--prices", FIX / "prices.csv", "--out", out, "--class-by", "tag:team")
        assert r.exit_code == 0, r.output
        h = table(out)
        assert h[("2024-09-01T01:00", "llm")] == pytest.approx(16.0)
        assert h[("2024-09-01T00:00", "vision")] == pytest.approx(1.0)


def test_bad_focus_files_exit_2_naming_file_row_and_column(tmp_path):
    bill = pd.read_csv(FIX / "bill.csv", dtype=str, keep_default_na=False)
    bill.drop(columns=["ChargePeriodStart"]).to_csv(tmp_path / "a.csv", index=False)
    r = run("--focus", tmp_path / "a.csv", "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv")
    assert r.exit_code == 2 and "a.csv, row 1, column 'ChargePeriodStart': missing column" in r.output
    bill.loc[2, "ConsumedQuantity"] = "lots"
    bill.to_csv(tmp_path / "b.csv", index=False)
    r = run("--focus", tmp_path / "b.csv", "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv")
    assert r.exit_code == 2 and "b.csv, row 4, column 'ConsumedQuantity': not a number (got 'lots')" in r.output
    r = run("--focus", FIX / "bill.csv", "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv", "--class-by", "x")
    assert r.exit_code == 2 and "--class-by" in r.output
    assert not (tmp_path / "h.csv").exists()


# ---- the planner's own export imports back to the plan's usage -------------------------------------------------
def _small_plan(tmp_path):
    from planner.pipeline.run import write_outputs

    hours = 24 * 40  # crosses a month end
    a = [10.0 + 6.0 * ((t // 7) % 3) for t in range(hours)]
    b = [3.0 + (t % 5) for t in range(hours)]
    m = write_case(tmp_path / "m", {"a": a, "b": b},
                   [price("A", "r1", hourly=4.0, gpus_per_instance=2),
                    price("A", "r1", option="reserved_1y", hourly=2.0, term_months=12, gpus_per_instance=2),
                    price("A", "r1", option="spot", hourly=1.0, interruptions_per_hour=0.01, max_gpus=4, gpus_per_instance=2),
                    price("B", "r2", hourly=3.0)],
                   {"a": {}, "b": {"spot": False}}, start="2027-01-15T00:00",
                   inventory=[{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 4,
                               "start": "2026-06-01T00:00", "end": "2027-02-01T00:00"}])
    return write_outputs(solve_case(m), tmp_path / "out"), m.parent / "prices.csv"


def test_focus_export_round_trips_to_the_plans_hourly_usage_and_inventory(tmp_path):
    paths, prices = _small_plan(tmp_path)
    out, csv = tmp_path / "f.csv", tmp_path / "h.csv"
    r = CliRunner().invoke(cli, ["export", "focus", str(paths["json"]), "--out", str(out)])
    assert r.exit_code == 0, r.output
    from planner.export.focus import write_focus

    write_focus(paths["json"], out, granularity="period")
    r = run("--focus", out, "--prices", prices, "--out", csv, "--inventory", tmp_path / "inv.csv")
    assert r.exit_code == 0, r.output
    fleet = pd.read_csv(paths["json"].parent / "fleet.csv")
    fleet["workload_class"] = fleet["gpu_type"] + "@" + fleet["region"]
    want = (fleet["reserved_used"] + fleet["on_demand"] + fleet["spot"]).groupby(
        [fleet["period"], fleet["workload_class"]]).sum()
    got = table(csv).reindex(want.index, fill_value=0.0)
    assert want.sum() > 0 and (got - want).abs().max() < 1e-5
    inv = pd.read_csv(tmp_path / "inv.csv")
    owned = inv[inv["start"] == "2026-06-01T00:00"].iloc[0]
    assert (owned["gpu_type"], owned["gpus"], owned["end"]) == ("A", 4, "2027-02-01T00:00")


def test_monthly_focus_export_keeps_each_months_gpu_hours(tmp_path):
    paths, prices = _small_plan(tmp_path)
    from planner.export.focus import write_focus

    out, csv = tmp_path / "f.csv", tmp_path / "h.csv"
    write_focus(paths["json"], out)
    assert run("--focus", out, "--prices", prices, "--out", csv).exit_code == 0
    h = pd.read_csv(csv)
    got = h.groupby([h["period"].str[:7], h["workload_class"]])["gpus"].sum()
    mu = pd.DataFrame(json.loads(paths["json"].read_text())["monthly_usage"])
    mu["c"] = mu["gpu_type"] + "@" + mu["region"]
    want = (mu["reserved_used_gpu_hours"] + mu["on_demand_gpu_hours"] + mu["spot_gpu_hours"]).groupby(
        [mu["month"], mu["c"]]).sum()
    want = want[want > 0]
    assert (got.reindex(want.index) - want).abs().max() < 1e-3  # hourly values are written to 6 decimals


# ---- Prometheus ----------------------------------------------------------------------------------------------
def test_prometheus_range_query_to_hourly_means(tmp_path):
    out = tmp_path / "h.csv"
    r = run("--prometheus", FIX / "prom.json", "--label", "namespace", "--out", out)
    assert r.exit_code == 0, r.output
    h = table(out)
    assert h[("2024-09-01T00:00", "llm")] == pytest.approx(16.0)  # (8+4 + 16+4) / 2 samples
    assert h[("2024-09-01T01:00", "llm")] == pytest.approx(8.0)
    assert h[("2024-09-01T00:00", "vision")] == pytest.approx(2.0)  # the NaN sample skipped
    assert "mean" in r.output


@pytest.mark.parametrize("doc, where", [
    ({"status": "error", "errorType": "bad_data", "error": "parse error"}, "column 'status'"),
    ({"status": "success", "data": {"resultType": "vector", "result": []}}, "column 'data.resultType'"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"namespace": "x"}, "values": [[1725148800, "1"], [1725152400, "eight"]]}]}},
     "row 2, column 'data.result[0].values[1][1]': sample value is not a number (got 'eight')"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"namespace": "x"}, "values": [[1725148800, "1"], [1725148860, "+Inf"]]}]}},
     "row 2, column 'data.result[0].values[1][1]': sample value is not finite (got '+Inf')"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"namespace": "x"}, "values": [[1725148800, "-Inf"]]}]}},
     "column 'data.result[0].values[0][1]': sample value is not finite"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"namespace": "x"}, "values": [[1725148800000, "1"]]}]}},
     "column 'data.result[0].values[0][0]': sample timestamp out of range: seconds since the epoch expected"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"namespace": "x"}, "values": [[86400, "1"]]}]}},
     "seconds since the epoch expected"),
    ({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"namespace": "x"}, "values": [[1725148800, "2"], [1725148860, "-3"]]}]}},
     "row 2, column 'data.result[0].values[1][1]': sample value is negative (got '-3')"),
])
def test_bad_prometheus_files_exit_2(tmp_path, doc, where):
    src = tmp_path / "p.json"
    src.write_text(json.dumps(doc))
    r = run("--prometheus", src, "--label", "namespace", "--out", tmp_path / "h.csv")
    assert r.exit_code == 2 and "p.json" in r.output and where in r.output, r.output
    assert not (tmp_path / "h.csv").exists()


# ---- review 26: every defect its regression test -------------------------------------------------------------
def _bill(tmp_path, edit, name="b.csv"):
    bill = pd.read_csv(FIX / "bill.csv", dtype=str, keep_default_na=False)
    edit(bill)
    path = tmp_path / name
    bill.to_csv(path, index=False)
    return path


def test_outputs_that_are_inputs_exit_2_before_anything_is_written(tmp_path):
    bill = tmp_path / "bill.csv"
    bill.write_bytes((FIX / "bill.csv").read_bytes())
    before = bill.read_bytes()
    r = run("--focus", bill, "--prices", FIX / "prices.csv", "--out", bill)
    assert r.exit_code == 2 and "--out" in r.output and "same file as the input --focus" in r.output
    r = run("--focus", bill, "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv", "--inventory", bill)
    assert r.exit_code == 2 and "--inventory" in r.output and "same file as the input --focus" in r.output
    r = run("--focus", bill, "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv",
            "--inventory", tmp_path / "." / "h.csv")
    assert r.exit_code == 2 and "same file as --inventory" in r.output
    prom = tmp_path / "p.json"
    prom.write_bytes((FIX / "prom.json").read_bytes())
    link = tmp_path / "h2.csv"
    link.symlink_to(prom)
    r = run("--prometheus", prom, "--label", "namespace", "--out", link)
    assert r.exit_code == 2 and "same file as the input --prometheus" in r.output
    assert bill.read_bytes() == before and not (tmp_path / "h.csv").exists()
    assert prom.read_bytes() == (FIX / "prom.json").read_bytes()


def test_charge_period_ending_before_it_starts_exits_2_naming_the_row(tmp_path):
    def edit(b):
        b.loc[1, "ChargePeriodEnd"] = "2024-08-31 23:00:00"
    r = run("--focus", _bill(tmp_path, edit), "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv")
    assert r.exit_code == 2 and "b.csv, row 3, column 'ChargePeriodEnd': ChargePeriodEnd is before" in r.output
    assert not (tmp_path / "h.csv").exists()


def test_negative_quantities_are_netted_and_counted(tmp_path):
    def edit(b):
        extra = b.iloc[[0]].copy()
        extra["ConsumedQuantity"] = "-1.0"
        b.loc[len(b)] = extra.iloc[0]
    r = run("--focus", _bill(tmp_path, edit), "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv")
    assert r.exit_code == 0, r.output
    assert "1 GPU usage rows have a negative quantity" in r.output and "8 GPU-hours" in r.output
    assert "row 8" in r.output
    h = table(tmp_path / "h.csv")
    assert h[("2024-09-01T00:00", "H100-80GB@us-east-1")] == pytest.approx(4.0)  # 8 - 8 / 2 h


@pytest.mark.parametrize("column", ["ChargeCategory", "RegionId"])
def test_a_bill_without_the_columns_that_find_usage_exits_2(tmp_path, column):
    # without ChargeCategory every row was dropped (exit 0, an empty history); without RegionId: an internal error
    path = _bill(tmp_path, lambda b: b.pop(column))
    r = run("--focus", path, "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv")
    assert r.exit_code == 2, r.output
    assert f"b.csv, row 1, column '{column}': missing column '{column}'" in r.output
    assert not (tmp_path / "h.csv").exists()


def test_the_history_spans_the_bills_charge_periods_hours_without_gpu_usage_zero(tmp_path):
    # the storage row runs to 06:00: the bill covers six hours, the GPUs were used in the first two only. The
    # history ended at the last GPU hour, so the hours the bill shows idle were lost (a mean over them overstated)
    def edit(b):
        b.loc[4, "ChargePeriodEnd"] = "2024-09-01 06:00:00"
    r = run("--focus", _bill(tmp_path, edit), "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv")
    assert r.exit_code == 0, r.output
    h = table(tmp_path / "h.csv")
    hours = sorted(h.index.get_level_values("period").unique())
    assert hours == [f"2024-09-01T{k:02d}:00" for k in range(6)]
    assert h[("2024-09-01T05:00", "H100-80GB@us-east-1")] == 0.0
    assert h.xs("H100-80GB@us-east-1", level="workload_class").sum() == pytest.approx(24.0)  # 8 + 16: unchanged
    assert "the history spans the bill's usage, 2024-09-01 00:00 to 2024-09-01 05:00 UTC" in r.output
    # a purchase row whose period spans a year does not stretch the history to a year of zeros
    def fee(b):
        edit(b)
        b.loc[len(b)] = b.iloc[4]
        b.loc[len(b) - 1, ["ChargeCategory", "ChargePeriodEnd"]] = ["Purchase", "2025-09-01 00:00:00"]
    r = run("--focus", _bill(tmp_path, fee, name="fee.csv"), "--prices", FIX / "prices.csv", "--out", tmp_path / "f.csv")
    assert r.exit_code == 0, r.output
    assert sorted(table(tmp_path / "f.csv").index.get_level_values("period").unique()) == hours


def test_a_line_exported_twice_is_one_charge_with_a_note(tmp_path):
    def edit(b):
        b.loc[len(b)] = b.iloc[0]  # the H100 line again, every column alike (row 8)
    r = run("--focus", _bill(tmp_path, edit), "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv")
    assert r.exit_code == 0, r.output
    assert "1 rows repeat an earlier row in every column: read once (rows 8)" in r.output
    assert table(tmp_path / "h.csv")[("2024-09-01T00:00", "H100-80GB@us-east-1")] == pytest.approx(8.0)  # not 16


@pytest.mark.parametrize("tags", ['{"team": "vis', '["team", "vision"]'])
def test_tags_not_a_json_object_are_untagged_with_a_note(tmp_path, tags):
    def edit(b):
        b.loc[1, "Tags"] = tags
    r = run("--focus", _bill(tmp_path, edit), "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv",
            "--class-by", "tag:team")
    assert r.exit_code == 0, r.output
    assert "1 GPU usage rows have a Tags cell that is not a JSON object" in r.output and "row 3, column Tags" in r.output
    assert table(tmp_path / "h.csv")[("2024-09-01T00:00", "untagged")] == pytest.approx(1.0)


def test_documented_flow_sizes_instance_types_the_sheet_did_not_keep(tmp_path):
    catalog = tmp_path / "cat.csv"
    catalog.write_text("InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"
                       "p5.48xlarge,H100,8,55.04,,us-east-1\ng5.4xlarge,A10G,1,1.624,,us-east-1\n"
                       "g5.48xlarge,A10G,8,16.288,,us-east-1\n")
    sheet = tmp_path / "prices.csv"
    r = CliRunner().invoke(cli, ["prices", "import", "--from", "skypilot", str(catalog), "--out", str(sheet)])
    assert r.exit_code == 0, r.output
    assert pd.read_csv(sheet).query("gpu_type == 'A10G'")["gpus_per_instance"].tolist() == [8]  # g5.48xlarge kept
    r = run("--focus", FIX / "bill.csv", "--prices", sheet, "--out", tmp_path / "h.csv")
    assert r.exit_code == 0, r.output
    assert "GPU usage rows: 3" in r.output
    assert table(tmp_path / "h.csv")[("2024-09-01T00:00", "A10G@us-east-1")] == pytest.approx(1.0)  # g5.4xlarge: 1


def test_unsized_rows_note_says_how_to_size_them(tmp_path):
    sheet = tmp_path / "p.csv"
    sheet.write_text("gpu_type,region,option,hourly_usd,gpus_per_instance\nH100-80GB,us-east-1,on_demand,6.88,8\n")
    r = run("--focus", FIX / "bill.csv", "--prices", sheet, "--out", tmp_path / "h.csv")
    assert r.exit_code == 0, r.output
    assert "--instance-types g5.4xlarge,p5.48xlarge" in r.output or "--instance-types p5.48xlarge,g5.4xlarge" in r.output


def test_history_import_bars_and_quiet(tmp_path, monkeypatch):
    import planner.core.progress as progress

    made = []
    real = progress.bar

    def spy(total, desc, *, enabled=True, unit="task"):
        made.append((desc, enabled))
        return real(total, desc, enabled=False, unit=unit)

    monkeypatch.setattr(progress, "bar", spy)
    r = run("--focus", FIX / "bill.csv", "--prices", FIX / "prices.csv", "--out", tmp_path / "h.csv")
    assert r.exit_code == 0, r.output
    descs = {d for d, on in made if on}
    assert "spreading hours" in descs and "reading bill.csv" in descs
    made.clear()
    r = run("--focus", FIX / "bill.csv", "--prices", FIX / "prices.csv", "--out", tmp_path / "h2.csv", "-q")
    assert r.exit_code == 0 and r.output == "" and (tmp_path / "h2.csv").exists()
    assert made and not any(on for _, on in made)
    r = run("--prometheus", FIX / "prom.json", "--label", "namespace", "--out", tmp_path / "h3.csv", "--quiet")
    assert r.exit_code == 0 and r.output == ""


def test_progress_bar_has_a_width_when_the_terminal_reports_0_columns(monkeypatch):
    import os
    import shutil

    import planner.core.progress as progress

    monkeypatch.setattr(progress, "shown", lambda enabled=True: bool(enabled))
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=(80, 24): os.terminal_size((0, 0)))
    b = progress.bar(10, "x")
    try:
        assert b.ncols == progress.DEFAULT_COLUMNS and not b.dynamic_ncols
    finally:
        b.close()
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=(80, 24): os.terminal_size((120, 40)))
    b = progress.bar(10, "x")
    try:
        assert b.dynamic_ncols
    finally:
        b.close()
