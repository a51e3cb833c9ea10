"""planner prices import: each catalog format -> a price sheet the planner's validation accepts, with provenance."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from conftest import ROOT, SHARED
from planner.cli import cli
from planner.errors import Collector
from planner.io import read_table
from planner.validate import validate_prices

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
