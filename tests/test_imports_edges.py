"""The importers at their edges (issue 32): dates and quantities out of range, currencies, formula-like text,
malformed JSON, outputs that are folders or inputs, outputs published together, dropped rows counted."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from conftest import ROOT
from planner.cli import cli

IMP = ROOT / "tests" / "fixtures" / "imports"
HIST = ROOT / "tests" / "fixtures" / "history"


def prices_import(fmt, *files, out, args=()):
    return CliRunner().invoke(cli, ["prices", "import", "--from", fmt, *map(str, files), "--out", str(out),
                                    *map(str, args)])


def history_import(*args):
    return CliRunner().invoke(cli, ["history", "import", *map(str, args)])


def refused(res, *texts):
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "Internal error" not in res.output
    for t in texts:
        assert t in res.stderr, res.stderr


def bill(tmp_path, name="b.csv", **cells):
    """The fixture bill with cells changed: ``cells`` maps (column) -> {row index: value}."""
    b = pd.read_csv(HIST / "bill.csv", dtype=str, keep_default_na=False)
    for col, edits in cells.items():
        for i, v in edits.items():
            b.loc[i, col] = v
    path = tmp_path / name
    b.to_csv(path, index=False)
    return path


def focus(tmp_path, src, *more):
    out = tmp_path / "h.csv"
    return history_import("--focus", src, "--prices", HIST / "prices.csv", "--out", out, *more), out


def prom(tmp_path, result, name="p.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
    return path


def prometheus(tmp_path, src, label="namespace"):
    out = tmp_path / "h.csv"
    return history_import("--prometheus", src, "--label", label, "--out", out), out


def gcp_doc(unit=None, sku_extra=None):
    unit = unit or {"currencyCode": "USD", "units": "2", "nanos": 500000000}
    sku = {"skuId": "AAAA-BBBB", "description": "Nvidia Tesla A100 GPU running in Americas",
           "category": {"resourceGroup": "GPU", "usageType": "OnDemand"}, "serviceRegions": ["us-central1"],
           "pricingInfo": [{"pricingExpression": {"usageUnit": "h", "tieredRates": [{"unitPrice": unit}]}}]}
    sku.update(sku_extra or {})
    return {"skus": [sku]}


def azure_page(tmp_path, *items, name="az.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"Items": list(items), "NextPageLink": None}))
    return path


def azure_item(**over):
    item = {"currencyCode": "USD", "retailPrice": 27.2, "unitPrice": 27.2, "armRegionName": "eastus",
            "productName": "Virtual Machines NDasrA100v4 Series", "skuName": "ND96asr v4",
            "serviceName": "Virtual Machines", "unitOfMeasure": "1 Hour", "type": "Consumption",
            "armSkuName": "Standard_ND96asr_v4"}
    item.update(over)
    return item


# ---- item 2: dates outside pandas' nanosecond range ---------------------------------------------------------
@pytest.mark.parametrize("col,value", [("ChargePeriodStart", "1500-09-01 00:00:00"),
                                       ("ChargePeriodStart", "0001-01-01 00:00:00"),
                                       ("ChargePeriodEnd", "9999-09-01 00:00:00"),
                                       ("ChargePeriodEnd", "2300-01-01 00:00:00")])
def test_focus_dates_outside_the_range_exit_2_naming_the_row(tmp_path, col, value):
    res, out = focus(tmp_path, bill(tmp_path, **{col: {0: value}}))
    refused(res, f"b.csv, row 2, column '{col}'", value, "1970-01-01")
    assert not out.exists()


# ---- items 3 and 6: currencies --------------------------------------------------------------------------------
def test_gcp_price_in_yen_needs_a_rate_and_is_converted_at_it(tmp_path):
    src = tmp_path / "g.json"
    src.write_text(json.dumps(gcp_doc({"currencyCode": "JPY", "units": "400", "nanos": 0})))
    out = tmp_path / "p.csv"
    res = prices_import("gcp-skus", src, out=out)
    refused(res, "g.json, row 1", "currencyCode", "'JPY'", "--fx JPY=")
    assert not out.exists()
    res = prices_import("gcp-skus", src, out=out, args=["--fx", "JPY=0.0067"])
    assert res.exit_code == 0, res.output
    sheet = pd.read_csv(out)
    assert sheet.loc[sheet.option.eq("on_demand"), "hourly_usd"].item() == pytest.approx(400 * 0.0067)
    note = (tmp_path / "p.csv.notes.md").read_text()
    assert "--fx JPY=0.0067" in note and "converted to USD" in note


def test_azure_page_in_euro_needs_a_rate_and_is_converted_at_it(tmp_path):
    src = azure_page(tmp_path, azure_item(currencyCode="EUR", retailPrice=20.0, unitPrice=20.0,
                                          savingsPlan=[{"retailPrice": 10.0, "term": "1 Year"}]))
    out = tmp_path / "p.csv"
    refused(prices_import("azure-retail", src, out=out), "az.json, row 1", "Items[0].currencyCode", "'EUR'",
            "--fx EUR=")
    assert not out.exists()
    res = prices_import("azure-retail", src, out=out, args=["--fx", "EUR=1.1"])
    assert res.exit_code == 0, res.output
    s = pd.read_csv(out).set_index("option")["hourly_usd"]
    assert s["on_demand"] == pytest.approx(20.0 * 1.1 / 8)
    assert s["savings_plan_1y"] == pytest.approx(10.0 * 1.1 / 8)
    assert "--fx EUR=1.1" in (tmp_path / "p.csv.notes.md").read_text()


@pytest.mark.parametrize("fx", ["JPY", "JPY=abc", "JPY=0", "JPY=inf", "USD=2"])
def test_malformed_fx_exits_2(tmp_path, fx):
    refused(prices_import("gcp-skus", IMP / "gcp_skus.json", out=tmp_path / "p.csv", args=["--fx", fx]), "--fx",
            "its rate is 1" if fx.startswith("USD") else "CUR=RATE")


# ---- items 4 and 5: formula-like text through planner/csvsafe ------------------------------------------------
def test_price_sheet_text_cells_are_inert(tmp_path):
    rows = (IMP / "skypilot_aws_zones.csv").read_text().splitlines()
    src = tmp_path / "s.csv"
    src.write_text("\n".join([rows[0]] + [r.replace(",us-east-1,", ",=HYPERLINK(1),") for r in rows[1:]]) + "\n")
    out = tmp_path / "p.csv"
    res = prices_import("skypilot", src, out=out)
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert "'=HYPERLINK(1)" in text and ",=HYPERLINK" not in text


def test_history_class_names_are_inert(tmp_path):
    src = bill(tmp_path, Tags={0: '{"team": "=cmd|x"}', 1: '{"team": "@sum"}'})
    res, out = focus(tmp_path, src, "--class-by", "tag:team")
    assert res.exit_code == 0, res.output
    classes = set(pd.read_csv(out)["workload_class"])
    assert classes == {"'=cmd|x", "'@sum", "llm"}
    res, out = prometheus(tmp_path, prom(tmp_path, [{"metric": {"namespace": "+1"}, "values": [[1725148800, "2"]]}]))
    assert res.exit_code == 0, res.output
    assert set(pd.read_csv(out)["workload_class"]) == {"'+1"}


# ---- item 7: malformed JSON -> exit 2 ---------------------------------------------------------------------------
def test_gcp_malformed_shapes_exit_2_naming_where(tmp_path):
    src = tmp_path / "g.json"
    doc = gcp_doc()
    doc["skus"].append("not a sku")
    src.write_text(json.dumps(doc))
    refused(prices_import("gcp-skus", src, out=tmp_path / "p.csv"), "g.json, row 2", "skus[1]", "not an object")
    src.write_text(json.dumps(gcp_doc({"currencyCode": "USD", "units": int("9" * 400), "nanos": 0})))
    refused(prices_import("gcp-skus", src, out=tmp_path / "p.csv"), "g.json, row 1", "unitPrice.units")
    src.write_text(json.dumps(gcp_doc(sku_extra={"pricingInfo": "free"})))
    refused(prices_import("gcp-skus", src, out=tmp_path / "p.csv"), "g.json, row 1", "skus[0].pricingInfo")
    src.write_text('{"skus": ' + "[" * 50000 + "]" * 50000 + "}")
    refused(prices_import("gcp-skus", src, out=tmp_path / "p.csv"), "g.json", "nested too deeply")
    assert not (tmp_path / "p.csv").exists()


def test_prometheus_malformed_json_exits_2(tmp_path):
    src = tmp_path / "p.json"
    src.write_text('{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [['
                   + "1" * 400 + ', "3"]]}]}}')
    refused(prometheus(tmp_path, src)[0], "p.json", "data.result[0].values[0][0]")
    src.write_text("[" * 50000 + "]" * 50000)
    refused(prometheus(tmp_path, src)[0], "p.json", "nested too deeply")
    src.write_text("[" + "1" * 5000 + "]")  # past Python's 4,300-digit limit
    refused(prometheus(tmp_path, src)[0], "p.json", "not valid JSON")
    refused(prometheus(tmp_path, prom(tmp_path, [{"metric": {"namespace": {"a": 1}}, "values": [[1725148800, "1"]]}]))[0],
            "data.result[0].metric.namespace", "not text")


# ---- item 8: an output that is a folder -------------------------------------------------------------------------
def test_outputs_that_are_folders_exit_2_naming_them(tmp_path):
    folder = tmp_path / "sheet.csv"
    folder.mkdir()
    refused(prices_import("skypilot", IMP / "skypilot_aws_zones.csv", out=folder), "--out", "is a folder", str(folder))
    res = history_import("--prometheus", HIST / "prom.json", "--label", "namespace", "--out", folder)
    refused(res, "--out", "is a folder")
    inv = tmp_path / "inv.csv"
    inv.mkdir()
    res, out = focus(tmp_path, HIST / "bill.csv", "--inventory", inv)
    refused(res, "--inventory", "is a folder")
    assert not out.exists()


# ---- item 9: outputs published together or not at all ---------------------------------------------------------
def test_unwritable_inventory_publishes_no_history(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("a file where a folder should be")
    res, out = focus(tmp_path, HIST / "bill.csv", "--inventory", blocker / "inv.csv")
    assert res.exit_code != 0 and "Internal error" not in res.output
    assert not out.exists()


def test_a_failed_second_rename_leaves_the_previous_outputs(tmp_path, monkeypatch):
    import os

    from planner.imports import guards

    out, inv = tmp_path / "h.csv", tmp_path / "inv.csv"
    out.write_text("old history\n")
    real = os.replace

    def failing(src, dst):
        if str(dst) == str(inv):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(guards.os, "replace", failing)
    res = history_import("--focus", HIST / "bill.csv", "--prices", HIST / "prices.csv", "--out", out,
                         "--inventory", inv)
    assert res.exit_code == 1 and "No space left" in res.output
    assert out.read_text() == "old history\n" and not inv.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.csv"]  # no temporary file or backup left


def test_prices_sheet_and_note_are_published_together(tmp_path, monkeypatch):
    import os

    from planner.imports import guards

    out = tmp_path / "p.csv"
    real = os.replace
    monkeypatch.setattr(guards.os, "replace",
                        lambda s, d: (_ for _ in ()).throw(OSError(5, "I/O error")) if str(d).endswith(".notes.md")
                        else real(s, d))
    res = prices_import("skypilot", IMP / "skypilot_aws_zones.csv", out=out)
    assert res.exit_code == 1
    assert list(tmp_path.iterdir()) == []


# ---- item 11: a NUL byte in a SkyPilot catalog ------------------------------------------------------------------
def test_nul_byte_in_skypilot_names_the_input_row_and_column(tmp_path):
    rows = (IMP / "skypilot_aws_zones.csv").read_text().splitlines()
    src = tmp_path / "s.csv"
    src.write_text(rows[0] + "\n" + rows[1] + "\n" + rows[2].replace("us-east-1,", "us-e\x00ast-1,", 1) + "\n")
    res = prices_import("skypilot", src, out=tmp_path / "p.csv")
    refused(res, f"{src}, row 3, column 'Region'", "NUL")
    assert ".tmp" not in res.stderr


# ---- items 12 and 13: quantities ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["inf", "1e300", "-Infinity"])
def test_focus_infinite_or_huge_quantities_exit_2(tmp_path, value):
    res, out = focus(tmp_path, bill(tmp_path, ConsumedQuantity={1: value}))
    refused(res, "b.csv, row 3, column 'ConsumedQuantity'", value)
    assert not out.exists()


def test_prometheus_huge_values_and_overflowing_sums_exit_2(tmp_path):
    res, out = prometheus(tmp_path, prom(tmp_path, [{"metric": {"namespace": "a"}, "values": [[1725148800, "1e300"]]}]))
    refused(res, "data.result[0].values[0][1]", "1e300")
    series = [{"metric": {"namespace": "a", "pod": str(k)}, "values": [[1725148800, "1e308"]]} for k in range(2)]
    refused(prometheus(tmp_path, prom(tmp_path, series))[0], "p.json")
    series = [{"metric": {"namespace": "a", "pod": str(k)}, "values": [[1725148800, "6e8"]]} for k in range(2)]
    refused(prometheus(tmp_path, prom(tmp_path, series))[0], "'a'", "add up")
    assert not out.exists()


def test_null_quantities_are_counted_with_their_rows(tmp_path):
    src = bill(tmp_path, ConsumedQuantity={0: "NULL"})
    res, out = focus(tmp_path, src)
    assert res.exit_code == 0, res.output
    assert "1 usage rows of GPU instances have no quantity (NULL or blank ConsumedQuantity)" in res.output
    assert "rows 2)" in res.output


# ---- item 14 and 21: Azure prices named by the input's item -----------------------------------------------------
@pytest.mark.parametrize("entry,field", [({"retailPrice": "abc", "term": "1 Year"}, "retailPrice"),
                                         ({"retailPrice": 0, "term": "1 Year"}, "retailPrice"),
                                         ({"retailPrice": 10.0, "term": "2 Years"}, "term"),
                                         ("cheap", "not an object")])
def test_azure_bad_savings_plan_entry_exits_2(tmp_path, entry, field):
    src = azure_page(tmp_path, azure_item(), azure_item(savingsPlan=[{"retailPrice": 9.0, "term": "3 Years"}, entry],
                                                       armRegionName="westus"))
    res = prices_import("azure-retail", src, out=tmp_path / "p.csv")
    refused(res, "az.json, row 2", "Items[1].savingsPlan[1]", field)


def test_azure_zero_price_names_the_input_item(tmp_path):
    src = azure_page(tmp_path, azure_item(), azure_item(retailPrice=0, unitPrice=0, armRegionName="westus"))
    res = prices_import("azure-retail", src, out=tmp_path / "p.csv")
    refused(res, "az.json, row 2, column 'Items[1].retailPrice'", "price of zero")
    assert "p.csv" not in res.stderr


# ---- items 16 and 17: class names ---------------------------------------------------------------------------------
@pytest.mark.parametrize("tag", ['{"team": "a\\nb"}', '{"team": "a\\u0000b"}', '{"team": "{\\"x\\": 1}"}'])
def test_focus_class_names_the_planner_refuses_exit_2_naming_the_row(tmp_path, tag):
    res, out = focus(tmp_path, bill(tmp_path, Tags={1: tag}), "--class-by", "tag:team")
    refused(res, "b.csv, row 3, column 'Tags'")
    assert not out.exists()


def test_prometheus_label_with_a_newline_exits_2(tmp_path):
    res, out = prometheus(tmp_path, prom(tmp_path, [{"metric": {"namespace": "a\nb"}, "values": [[1725148800, "1"]]}]))
    refused(res, "data.result[0].metric.namespace", "control character")


def test_prometheus_label_named_unlabelled_stays_apart(tmp_path):
    series = [{"metric": {"namespace": "unlabelled"}, "values": [[1725148800, "5"]]},
              {"metric": {}, "values": [[1725148800, "3"]]},
              {"metric": {"pod": "x"}, "values": [[1725148800, "NaN"]]}]
    res, out = prometheus(tmp_path, prom(tmp_path, series))
    assert res.exit_code == 0, res.output
    h = pd.read_csv(out).set_index("workload_class")["gpus"]
    assert h.to_dict() == {"unlabelled": 5.0, "unlabelled-2": 3.0}
    assert "2 series have no label 'namespace': class `unlabelled-2`" in res.output


# ---- item 18: Prometheus years past the range ----------------------------------------------------------------------
def test_prometheus_years_past_2262_exit_2(tmp_path):
    res, out = prometheus(tmp_path, prom(tmp_path, [{"metric": {"namespace": "a"}, "values": [[9_300_000_000, "1"]]}]))
    refused(res, "data.result[0].values[0][0]", "2200-01-01")
    assert not out.exists()


# ---- item 19: the note beside the sheet -----------------------------------------------------------------------------
def test_note_replacement_is_said_and_a_foreign_note_is_refused(tmp_path):
    out = tmp_path / "p.csv"
    assert prices_import("skypilot", IMP / "skypilot_aws_zones.csv", out=out).exit_code == 0
    res = prices_import("skypilot", IMP / "skypilot_aws_zones.csv", out=out)
    assert res.exit_code == 0 and "replaced the previous note" in res.stderr
    mine = tmp_path / "q.csv.notes.md"
    mine.write_text("my own notes\n")
    res = prices_import("skypilot", IMP / "skypilot_aws_zones.csv", out=tmp_path / "q.csv")
    refused(res, "--out's note", "not replaced")
    assert mine.read_text() == "my own notes\n" and not (tmp_path / "q.csv").exists()


# ---- outputs that would overwrite an input ----------------------------------------------------------------------------
def test_history_output_through_a_link_to_an_input_exits_2(tmp_path):
    src = tmp_path / "p.json"
    src.write_bytes((HIST / "prom.json").read_bytes())
    link = tmp_path / "link.csv"
    link.symlink_to(src)
    before = src.read_bytes()
    res = history_import("--prometheus", src, "--label", "namespace", "--out", link)
    refused(res, "same file as the input")
    assert src.read_bytes() == before


def test_gcp_skus_left_out_are_counted_by_reason(tmp_path):
    doc = gcp_doc()
    doc["skus"].append({**gcp_doc()["skus"][0], "skuId": "CCCC", "category": {"resourceGroup": "GPU",
                                                                            "usageType": "Commit5Yr"}})
    doc["skus"].append({**gcp_doc()["skus"][0], "skuId": "DDDD", "serviceRegions": []})
    src = tmp_path / "g.json"
    src.write_text(json.dumps(doc))
    res = prices_import("gcp-skus", src, out=tmp_path / "p.csv")
    assert res.exit_code == 0, res.output
    assert "1 GPU SKUs of a usageType other than OnDemand" in res.stderr and "Commit5Yr 1" in res.stderr
    assert "1 GPU SKUs name no serviceRegions" in res.stderr and "sku 3 (DDDD)" in res.stderr


def test_commitment_term_dates_outside_the_range_exit_2(tmp_path):
    src = bill(tmp_path, x_CommitmentDiscountEnd={2: "2400-01-01T00:00:00Z"})
    res, out = focus(tmp_path, src, "--inventory", tmp_path / "inv.csv")
    refused(res, "b.csv, row 4, column 'x_CommitmentDiscountEnd'", "2400-01-01")
    assert not out.exists() and not (tmp_path / "inv.csv").exists()


@pytest.mark.parametrize("value", ["2024-13-01", "1e20", "soon"])
def test_a_commitment_term_date_that_is_no_date_exits_2_never_the_bills_hours(tmp_path, value):
    src = bill(tmp_path, x_CommitmentDiscountEnd={2: value})
    res, out = focus(tmp_path, src, "--inventory", tmp_path / "inv.csv")
    refused(res, "b.csv, row 4, column 'x_CommitmentDiscountEnd'", value, "not a date and time")
    assert not out.exists() and not (tmp_path / "inv.csv").exists()


@pytest.mark.parametrize("cells", [
    {"x_CommitmentDiscountEnd": {2: "2024-09-01T00:30:00Z"}},  # before the bill's first hour of it (the start)
    {"x_CommitmentDiscountStart": {2: "2027-01-01T00:00:00+00:00"},
     "x_CommitmentDiscountEnd": {2: "2027-01-01T03:00:00+05:00"}},  # 22:00 UTC the day before: the offset
    {"x_CommitmentDiscountStart": {2: "2027-01-01T00:00:00Z"}, "x_CommitmentDiscountEnd": {2: "2027-01-01T00:00:00Z"}},
    {"x_CommitmentDiscountEnd": {2: "2024-09-01T01:00:00.5+00:00"}},  # after the start, but the same written minute
])
def test_a_commitment_term_that_ends_before_it_starts_exits_2(tmp_path, cells):
    src = bill(tmp_path, **cells)
    res, out = focus(tmp_path, src, "--inventory", tmp_path / "inv.csv")
    refused(res, "b.csv, row 4, column 'x_CommitmentDiscountEnd'", "ends at or before it starts",
            list(cells["x_CommitmentDiscountEnd"].values())[0])
    assert not out.exists() and not (tmp_path / "inv.csv").exists()


def test_a_commitment_term_given_forwards_is_written_as_given(tmp_path):
    src = bill(tmp_path, x_CommitmentDiscountStart={2: "2024-09-01T00:00:00+05:00"},
               x_CommitmentDiscountEnd={2: "2027-09-01T00:00:00+05:00"})
    res, out = focus(tmp_path, src, "--inventory", tmp_path / "inv.csv")
    assert res.exit_code == 0, res.output
    inv = pd.read_csv(tmp_path / "inv.csv")
    assert inv["start"].tolist() == ["2024-08-31T19:00"] and inv["end"].tolist() == ["2027-08-31T19:00"]


def test_azure_items_left_out_are_counted_by_reason(tmp_path):
    src = azure_page(tmp_path, azure_item(), azure_item(productName="Virtual Machines ND Series Windows"),
                     azure_item(type="DevTestConsumption"), azure_item(unitOfMeasure="1 GB/Month", armRegionName="x"),
                     azure_item(skuName="ND96asr v4 Low Priority"))
    res = prices_import("azure-retail", src, out=tmp_path / "p.csv")
    assert res.exit_code == 0, res.output
    assert ("Items left out, by reason: not per '1 Hour' 1, Windows 1, Low Priority 1, type not Consumption or "
            "Reservation (DevTest...) 1.") in res.stderr
