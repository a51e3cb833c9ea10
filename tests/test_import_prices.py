"""planner prices import: each catalog format -> a price sheet the planner's validation accepts, with provenance."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from conftest import ROOT, SHARED
from planner.cli import cli
from planner.core.errors import Collector
from planner.inputs.io import read_table
from planner.inputs.validate import validate_prices

FIX = ROOT / "tests" / "fixtures" / "imports"
REAL = SHARED / "data" / "real"


def run(tmp_path, fmt, *files, args=()):
    out = tmp_path / "prices.csv"
    res = CliRunner().invoke(cli, ["prices", "import", "--from", fmt, *map(str, files), "--out", str(out), *args])
    return res, out


def valid_sheet(path) -> pd.DataFrame:
    """The planner's own price-sheet validation passes on ``path``; its rows, keyed by pool and option."""
    bad = Collector()
    validated = validate_prices(read_table(path, "price sheet"), bad)
    assert not bad, "\n".join(map(str, bad.problems))
    assert validated is not None
    return validated.set_index(["gpu_type", "region", "option"])


def test_skypilot_zones_collapse_to_median_spot_and_largest_instance(tmp_path):
    res, out = run(tmp_path, "skypilot", FIX / "skypilot_aws_zones.csv")
    assert res.exit_code == 0, res.output
    p = valid_sheet(out)
    assert p.loc[("A100-40GB", "us-east-1", "on_demand"), "hourly_usd"] == pytest.approx(32.7726 / 8)
    assert p.loc[("A100-40GB", "us-east-1", "spot"), "hourly_usd"] == pytest.approx(11.0 / 8)  # median of 3 zones
    assert p.loc[("A10G", "us-east-1", "on_demand"), "gpus_per_instance"] == 8  # g5.48xlarge, --pick largest
    assert p.loc[("A10G", "us-east-1", "on_demand"), "hourly_usd"] == pytest.approx(16.288 / 8)
    notes = (tmp_path / "prices.csv.notes.md").read_text()
    assert "median over the zones" in notes and "g5.48xlarge" in notes
    assert "median over the zones" in res.stderr


def test_skypilot_pick_cheapest_and_zone_min(tmp_path):
    res, out = run(tmp_path, "skypilot", FIX / "skypilot_aws_zones.csv", args=["--pick", "cheapest", "--zones", "min"])
    assert res.exit_code == 0, res.output
    p = valid_sheet(out)
    assert p.loc[("A10G", "us-east-1", "on_demand"), "gpus_per_instance"] == 1  # g5.xlarge: 1.006 < 16.288 / 8
    assert p.loc[("A100-40GB", "us-east-1", "spot"), "hourly_usd"] == pytest.approx(9.8 / 8)


def test_skypilot_bad_rows_exit_2_naming_row_and_column(tmp_path):
    res, out = run(tmp_path, "skypilot", FIX / "bad_skypilot_no_count.csv")
    assert res.exit_code == 2
    assert "row 3, column 'AcceleratorCount'" in res.stderr
    assert "row 4, column 'Price'" in res.stderr and "'abc'" in res.stderr
    assert not out.exists()


def test_aws_pricelist_reserved_payment_options_and_savings_plans(tmp_path):
    res, out = run(tmp_path, "aws-pricelist", FIX / "aws_pricelist_ec2.csv", FIX / "aws_savings_plans.csv",
                   FIX / "aws_savings_plans.json")
    assert res.exit_code == 0, res.output
    p = valid_sheet(out)
    pool = ("A100-40GB", "us-east-1")
    assert p.loc[pool + ("on_demand",), "hourly_usd"] == pytest.approx(32.7726 / 8)  # Windows, Dedicated left out
    assert p.loc[pool + ("reserved_1y_all_upfront",), "upfront_usd"] == pytest.approx(165000 / 8)
    assert p.loc[pool + ("reserved_1y_all_upfront",), "hourly_usd"] == 0
    assert p.loc[pool + ("reserved_1y_partial_upfront",), "upfront_usd"] == pytest.approx(84096 / 8)
    assert p.loc[pool + ("reserved_1y_partial_upfront",), "hourly_usd"] == pytest.approx(9.6 / 8)
    assert p.loc[pool + ("reserved_1y_no_upfront",), "term_months"] == 12
    assert p.loc[pool + ("reserved_3y_no_upfront",), "term_months"] == 36
    assert not any("convertible" in o for o in p.index.get_level_values("option"))  # --ri-class standard
    assert p.loc[pool + ("savings_plan_1y_compute_no_upfront",), "hourly_usd"] == pytest.approx(22.152 / 8)
    assert p.loc[pool + ("savings_plan_1y_instance_all_upfront",), "upfront_usd"] == pytest.approx(8760)
    assert p.loc[pool + ("savings_plan_1y_instance_all_upfront",), "plan_family"] == "p4d-us-east-1"
    assert p.loc[pool + ("savings_plan_3y_compute_partial_upfront",), "upfront_usd"] == pytest.approx(3 * 8760 / 2)
    assert p.loc[("L4", "us-west-2", "savings_plan_3y_compute_partial_upfront"), "hourly_usd"] == pytest.approx(0.49)
    sheet = pd.read_csv(out)
    assert set(sheet["gpu_type"]) == {"A100-40GB", "L4"}  # c5.large (no GPU) left out


def test_aws_pricelist_convertible_and_payment_filter(tmp_path):
    res, out = run(tmp_path, "aws-pricelist", FIX / "aws_pricelist_ec2.csv",
                   args=["--ri-class", "all", "--payment", "no_upfront"])
    assert res.exit_code == 0, res.output
    options = set(valid_sheet(out).index.get_level_values("option"))
    assert options == {"on_demand", "reserved_1y_no_upfront", "reserved_3y_no_upfront",
                       "reserved_1y_convertible_no_upfront"}


def test_azure_retail_reservation_total_over_term_hours(tmp_path):
    res, out = run(tmp_path, "azure-retail", FIX / "azure_retail_page1.json", FIX / "azure_retail_page2.json")
    assert res.exit_code == 0, res.output
    p = valid_sheet(out)
    pool = ("A100-40GB", "eastus")  # Standard_ND96asr_v4: 8 GPUs from the built-in table
    assert p.loc[pool + ("on_demand",), "hourly_usd"] == pytest.approx(27.197 / 8)  # not Windows, not Low Priority
    assert p.loc[pool + ("spot",), "hourly_usd"] == pytest.approx(2.99167 / 8)
    assert p.loc[pool + ("reserved_1y_no_upfront",), "hourly_usd"] == pytest.approx(157680 / 8760 / 8)
    assert p.loc[pool + ("reserved_1y_all_upfront",), "upfront_usd"] == pytest.approx(157680 / 8)
    assert p.loc[pool + ("reserved_3y_no_upfront",), "hourly_usd"] == pytest.approx(340600 / (3 * 8760) / 8)
    assert p.loc[pool + ("savings_plan_3y",), "hourly_usd"] == pytest.approx(13.0546 / 8)
    assert ("T4", "eastus", "on_demand") in p.index
    assert "built-in table" in res.stderr


def test_azure_page_without_items_exits_2(tmp_path):
    res, out = run(tmp_path, "azure-retail", FIX / "bad_azure_no_items.json")
    assert res.exit_code == 2
    assert "bad_azure_no_items.json" in res.stderr and "'Items'" in res.stderr
    assert not out.exists()


def test_gcp_skus_gpu_alone_and_commitments(tmp_path):
    res, out = run(tmp_path, "gcp-skus", FIX / "gcp_skus.json")
    assert res.exit_code == 0, res.output
    p = valid_sheet(out)
    assert p.loc[("A100-40GB", "us-central1", "on_demand"), "hourly_usd"] == pytest.approx(2.933908)
    assert p.loc[("A100-40GB", "us-east1", "spot"), "hourly_usd"] == pytest.approx(0.88)
    assert p.loc[("A100-40GB", "us-central1", "reserved_1y"), "hourly_usd"] == pytest.approx(1.85)
    assert not p.loc[("A100-40GB", "us-central1", "reserved_3y"), "guarantees_capacity"]
    assert "NOT included" in res.stderr
    res, out = run(tmp_path, "gcp-skus", FIX / "gcp_skus.json", args=["--vm-hourly-usd-per-gpu", "0.5"])
    assert valid_sheet(out).loc[("L4", "us-central1", "on_demand"), "hourly_usd"] == pytest.approx(1.06)


def test_gcp_sku_without_pricing_info_exits_2(tmp_path):
    res, out = run(tmp_path, "gcp-skus", FIX / "bad_gcp_no_pricinginfo.json")
    assert res.exit_code == 2
    assert "row 2, column 'pricingInfo'" in res.stderr
    assert not out.exists()


def test_filters_name_what_is_missing(tmp_path):
    res, _ = run(tmp_path, "skypilot", FIX / "skypilot_aws_zones.csv", args=["--regions", "mars-1"])
    assert res.exit_code == 2 and "mars-1" in res.stderr


@pytest.mark.skipif(not (REAL / "prices_aws.csv").exists(), reason="../shared/data/real not present")
@pytest.mark.parametrize("provider", ["aws", "azure", "gcp"])
def test_real_wide_sheets_import_and_validate(tmp_path, provider):
    res, out = run(tmp_path, "wide", REAL / f"prices_{provider}.csv")
    assert res.exit_code == 0, res.output
    p = valid_sheet(out)
    src = pd.read_csv(REAL / f"prices_{provider}.csv")
    prov = (tmp_path / "prices.csv.notes.md").read_text()
    row = src[src["instance_type"].eq("p4d.24xlarge") & src["region"].eq("us-east-1")] if provider == "aws" else None
    if provider == "aws":
        r = row.iloc[0]
        assert p.loc[("A100-40GB", "us-east-1", "on_demand"), "hourly_usd"] == pytest.approx(r.on_demand_hourly_usd / 8)
        assert p.loc[("A100-40GB", "us-east-1", "reserved_1y"), "hourly_usd"] == pytest.approx(
            r.reserved_1y_hourly_usd / 8)
        mid = {"<5%": 2.5, "5-10%": 7.5, "10-15%": 12.5, "15-20%": 17.5, ">20%": 30.0}[r.interruption_bucket]
        assert p.loc[("A100-40GB", "us-east-1", "spot"), "interruptions_per_hour"] == pytest.approx(mid / 100 / 730)
        assert "Inferentia" not in set(p.index.get_level_values("gpu_type"))
    if provider == "gcp":
        assert not p.xs("reserved_1y", level="option")["guarantees_capacity"].any()
    assert "## Rows" in prov


@pytest.mark.skipif(not (REAL / "raw" / "skypilot_catalog_v6_azure_vms_gpu_rows.csv").exists(),
                    reason="../shared/data/real not present")
def test_real_skypilot_azure_extract(tmp_path):
    res, out = run(tmp_path, "skypilot", REAL / "raw" / "skypilot_catalog_v6_azure_vms_gpu_rows.csv")
    assert res.exit_code == 0, res.output
    p = valid_sheet(out)
    h100 = p.loc[("H100-80GB", "eastus", "on_demand")]
    assert h100["gpus_per_instance"] == 8 and h100["hourly_usd"] == pytest.approx(98.32 / 8)
    assert ("H100-80GB", "eastus", "spot") not in p.index  # SpotPrice == Price: no spot
    assert p.loc[("Radeon-MI25", "eastus", "on_demand"), "gpus_per_instance"] == 1  # NV32as_v4, largest
    assert "12 -> 8" in res.stderr


# ---- review 26: every defect its regression test -------------------------------------------------------------
WIDE_HEADER = ("provider,region,location_type,gpu_type,gpus_per_instance,instance_type,on_demand_hourly_usd,"
               "spot_hourly_usd,reserved_1y_hourly_usd,reserved_3y_hourly_usd,accelerator_kind,interruption_bucket\n")


def wide(tmp_path, *rows, name="w.csv"):
    path = tmp_path / name
    path.write_text(WIDE_HEADER + "".join(r + "\n" for r in rows))
    return path


def assert_refused(res, out, *texts):
    assert res.exit_code == 2, res.output
    for t in texts:
        assert t in res.stderr, res.stderr
    assert not out.exists() and not (out.parent / (out.name + ".notes.md")).exists()


def test_out_that_is_an_input_exits_2_before_writing(tmp_path):
    src = tmp_path / "cat.csv"
    src.write_bytes((FIX / "skypilot_aws_zones.csv").read_bytes())
    before = src.read_bytes()
    res = CliRunner().invoke(cli, ["prices", "import", "--from", "skypilot", str(src), "--out", str(src)])
    assert res.exit_code == 2 and "--out" in res.stderr and "same file as the input" in res.stderr
    link = tmp_path / "link.csv"
    link.symlink_to(src)
    res = CliRunner().invoke(cli, ["prices", "import", "--from", "skypilot", str(link),
                                   "--out", str(tmp_path / "." / "cat.csv")])
    assert res.exit_code == 2 and "same file as the input" in res.stderr
    assert src.read_bytes() == before and not (tmp_path / "cat.csv.notes.md").exists()


def test_gcp_units_or_nanos_as_text_exit_2_naming_sku_and_field(tmp_path):
    import json

    doc = json.loads((FIX / "gcp_skus.json").read_text())
    sku = next(i for i, s in enumerate(doc["skus"]) if s["category"]["resourceGroup"] == "GPU")
    doc["skus"][sku]["pricingInfo"][-1]["pricingExpression"]["tieredRates"][0]["unitPrice"]["nanos"] = "lots"
    src = tmp_path / "g.json"
    src.write_text(json.dumps(doc))
    res, out = run(tmp_path, "gcp-skus", src)
    assert_refused(res, out, f"g.json, row {sku + 1}", f"SKU {sku + 1} ({doc['skus'][sku]['skuId']})",
                   "unitPrice.nanos", "'lots'")


def test_gz_that_is_not_gzip_exits_2_and_aws_offer_file_reads_gzipped(tmp_path):
    import gzip

    plain = tmp_path / "plain.csv.gz"
    plain.write_bytes((FIX / "skypilot_aws_zones.csv").read_bytes())
    res, out = run(tmp_path, "skypilot", plain)
    assert_refused(res, out, "plain.csv.gz", "not a gzip file")
    assert "cannot write" not in res.stderr
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 20)
    res, out = run(tmp_path, "gcp-skus", broken)
    assert_refused(res, out, "broken.json.gz", "not a gzip file")
    gz = tmp_path / "offer.csv.gz"
    gz.write_bytes(gzip.compress((FIX / "aws_pricelist_ec2.csv").read_bytes()))
    res, out = run(tmp_path / "b", "aws-pricelist", gz)
    assert res.exit_code == 0, res.output
    assert ("A100-40GB", "us-east-1", "on_demand") in valid_sheet(out).index


def test_sheet_note_lists_the_gpus_of_every_instance_type_read(tmp_path):
    res, out = run(tmp_path, "skypilot", FIX / "skypilot_aws_zones.csv")
    assert res.exit_code == 0, res.output
    note = (tmp_path / "prices.csv.notes.md").read_text()
    assert "## GPUs of every instance type read" in note
    assert "| g5.xlarge | A10G | 1 | no |" in note and "| g5.48xlarge | A10G | 8 | yes |" in note


def test_wide_sheets_of_several_providers_exit_2_naming_the_source_row(tmp_path):
    a = wide(tmp_path, "aws,us-east-1,region,A100-40GB,8,p4d.24xlarge,32,,,,gpu,", name="aws.csv")
    g = wide(tmp_path, "gcp,us-east1,region,A100-40GB,1,a2-highgpu-1g,3,,,,gpu,", name="gcp.csv")
    res, out = run(tmp_path, "wide", a, g)
    assert_refused(res, out, "gcp.csv, row 2, column 'provider'", "one cloud per `--from wide` run")
    assert "prices.csv" not in res.stderr.split("expected")[0]


def test_wide_unknown_interruption_bucket_exits_2(tmp_path):
    src = wide(tmp_path, "aws,us-east-1,region,A100-40GB,8,p4d.24xlarge,32,10,,,gpu,<5%",
               "aws,us-west-2,region,A100-40GB,8,p4d.24xlarge,32,10,,,gpu,30-40%")
    res, out = run(tmp_path, "wide", src)
    assert_refused(res, out, "w.csv, row 3, column 'interruption_bucket'", "'30-40%'", "<5%, 5-10%")


def test_conflicting_repeated_rows_exit_2_naming_both_and_exact_repeats_are_noted(tmp_path):
    row = "aws,us-east-1,region,A100-40GB,8,p4d.24xlarge,32,10,,,gpu,<5%"
    res, out = run(tmp_path, "wide", wide(tmp_path, row, row.replace(",32,", ",99,")))
    assert_refused(res, out, "w.csv, row 3, column 'on_demand_hourly_usd'", "row 2")
    res, out = run(tmp_path / "b", "wide", wide(tmp_path, row, row))
    assert res.exit_code == 0 and "1 rows repeat another row exactly" in res.stderr
    sky = tmp_path / "s.csv"
    sky.write_text("InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"
                   "Standard_NC6s_v3,V100,1,3.0,0.3,eastus\nStandard_NC6s_v3,V100,1,5.0,0.3,eastus\n")
    res, out = run(tmp_path / "c", "skypilot", sky)
    assert_refused(res, out, "s.csv, row 3, column 'Price'", "of row 2")
    sky.write_text("InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"
                   "Standard_NC6s_v3,V100,1,3.0,0.3,eastus\nStandard_NC6s_v3,V100,1,3.0,0.3,eastus\n")
    res, out = run(tmp_path / "d", "skypilot", sky)
    assert res.exit_code == 0 and "1 rows repeat another row exactly" in res.stderr


def test_every_dropped_row_is_counted_by_reason(tmp_path):
    src = wide(tmp_path, "aws,us-east-1,region,A10G,8,g5.48xlarge,16,5,,,gpu,<5%",
               "aws,us-east-1,region,A10G,1,g5.xlarge,1,0.4,0.7,,gpu,<5%",
               "aws,us-west-2,region,A10G,8,g5.48xlarge,,,,,gpu,",
               "aws,eu-west-1,region,A10G,8,g5.48xlarge,,5,,,gpu,<5%")
    res, out = run(tmp_path, "wide", src)
    assert res.exit_code == 0, res.output
    assert "1 rows have no price at all" in res.stderr and "rows 4." in res.stderr
    assert "1 rows have a spot or reserved price but no on-demand price" in res.stderr and "rows 5." in res.stderr
    assert "3 offer rows of instance types not kept in their pool were dropped" in res.stderr  # g5.xlarge
    sky = tmp_path / "s.csv"
    sky.write_text("InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"
                   "Standard_NC6s_v3,V100,1,3.0,0.3,eastus\nStandard_NC6s_v3,V100,1,,0.3,westus\n")
    res, out = run(tmp_path / "b", "skypilot", sky)  # as wide: dropped with a note, not refused
    assert res.exit_code == 0 and "1 rows have a SpotPrice but no Price and were skipped" in res.stderr


def test_fractional_l4_upstream_label_is_renamed_and_flagged(tmp_path):
    src = wide(tmp_path, "aws,us-east-1,region,L40 (upstream label; fractional GPU),0.125,g6f.large,0.9,,,,gpu,",
               "aws,us-east-1,region,Mystery (upstream label; verify),1,x9.large,2,,,,gpu,")
    res, out = run(tmp_path, "wide", src)
    assert res.exit_code == 0, res.output
    gpus = set(valid_sheet(out).index.get_level_values("gpu_type"))
    assert "L4-fractional" in gpus and not any(g.startswith("L40") for g in gpus)
    assert "fractions of an NVIDIA L4" in res.stderr and "WARNING" in res.stderr


def test_prices_import_quiet_prints_nothing_but_errors(tmp_path):
    res, out = run(tmp_path, "skypilot", FIX / "skypilot_aws_zones.csv", args=["-q"])
    assert res.exit_code == 0 and res.stdout == "" and res.stderr == "" and out.exists()
    res, out = run(tmp_path / "b", "skypilot", FIX / "bad_skypilot_no_count.csv", args=["--quiet"])
    assert res.exit_code == 2 and "AcceleratorCount" in res.stderr


def test_azure_errors_name_the_file_and_aws_offer_without_metadata_is_one_clear_error(tmp_path):
    import json

    doc = json.loads((FIX / "azure_retail_page1.json").read_text())
    doc["Items"][0]["retailPrice"] = "cheap"
    page = tmp_path / "page.json"
    page.write_text(json.dumps(doc))
    res, out = run(tmp_path, "azure-retail", page)
    assert_refused(res, out, "page.json, row 1, column 'retailPrice'")
    assert "Azure pages" not in res.stderr
    lines = (FIX / "aws_pricelist_ec2.csv").read_text().splitlines(keepends=True)
    bare = tmp_path / "bare.csv"
    bare.write_text("".join(lines[5:]))
    res, out = run(tmp_path / "b", "aws-pricelist", bare)
    assert_refused(res, out, "bare.csv, row 1: the 5 metadata lines of an AWS offer file are missing (header "
                             "expected on row 6)")
    assert res.stderr.count(" - ") == 1


def test_a_wide_row_without_a_region_is_counted_not_dropped_silently(tmp_path):
    src = wide(tmp_path, "aws,us-east-1,region,A100-40GB,8,p4d.24xlarge,32,10,,,gpu,<5%",
               "aws,,region,A100-40GB,8,p4d.24xlarge,30,9,,,gpu,<5%")
    res, out = run(tmp_path, "wide", src)
    assert res.exit_code == 0, res.output
    assert "2 priced rows of GPU instances name no region: left out (p4d.24xlarge)." in res.stderr
    assert pd.read_csv(out)["region"].tolist() == ["us-east-1"] * 2  # on-demand and spot of the one region


def test_one_azure_meter_at_two_prices_exits_2_naming_both_items(tmp_path):
    import json

    item = json.loads((FIX / "azure_retail_page1.json").read_text())["Items"][0]
    page = tmp_path / "az.json"
    page.write_text(json.dumps({"Items": [dict(item, retailPrice=99.0, unitPrice=99.0), item], "NextPageLink": None}))
    res, out = run(tmp_path, "azure-retail", page)
    assert_refused(res, out, "az.json, row 2, column 'retailPrice'", "where Items entry 1 of",
                   "the same meter at 99")
    page.write_text(json.dumps({"Items": [item, item], "NextPageLink": None}))  # the same price again: read once
    res, out = run(tmp_path, "azure-retail", page)
    assert res.exit_code == 0 and "1 items repeated across pages were read once" in res.stderr


@pytest.mark.parametrize("upper_first", [True, False])
def test_an_azure_meters_higher_usage_tier_is_left_out_whatever_its_place(tmp_path, upper_first):
    import json

    item = json.loads((FIX / "azure_retail_page1.json").read_text())["Items"][0]
    tiers = [dict(item, tierMinimumUnits=100, retailPrice=20.0, unitPrice=20.0), dict(item, tierMinimumUnits=0)]
    page = tmp_path / "az.json"
    page.write_text(json.dumps({"Items": tiers if upper_first else tiers[::-1], "NextPageLink": None}))
    res, out = run(tmp_path, "azure-retail", page)
    assert res.exit_code == 0, res.output
    assert "1 items of a meter's higher usage tiers (tierMinimumUnits > 0) were left out" in res.stderr
    od = pd.read_csv(out).set_index("option")["hourly_usd"]["on_demand"]
    assert od == pytest.approx(float(item["retailPrice"]) / 8)
