"""What finance signs off: the bill with owned commitments, traceability, the solver settings used."""

from __future__ import annotations

import json

import pytest
from openpyxl import load_workbook

from planner.pipeline import write_outputs
from conftest import price, solve_case, write_case
from test_workbook import named_values, needs_lo, recalc


def bill_case(tmp_path):
    """10 one-hour periods of 4 GPUs; 10 GPUs owned at 0.5 $/h + 876 $ upfront (1 year): 0.6 $/GPU-hour.

    The commitment ends 5 hours into the horizon: 10 x 0.6 x 5 = 30 USD already committed in the horizon.
    """
    inventory = [{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 10,
                  "start": "2026-01-04T05:00", "end": "2027-01-04T05:00"}]
    return write_case(tmp_path, {"c": [4.0] * 10},
                      [price(hourly=2.0), price(option="reserved_1y", hourly=0.5, upfront_usd=876.0, term_months=12)],
                      {"c": {}}, inventory=inventory, start="2027-01-04T00:00")


def test_the_bill_prices_commitments_already_owned(tmp_path):
    plan = solve_case(bill_case(tmp_path))
    # hours 0-4 served by the inventory, hours 5-9 on demand (4 GPUs x 2 $ x 5 h = 40; a 1-year purchase for
    # 5 hours of use costs 0.6 x 10 h x 4 = 24 amortised over the horizon: buying is cheaper)
    paths = write_outputs(plan, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    inv = data["inventory"]
    assert len(inv) == 1
    assert inv[0]["hours_in_horizon"] == pytest.approx(5)
    assert inv[0]["effective_usd_per_gpu_hour"] == pytest.approx(0.6)
    assert inv[0]["horizon_cost_usd"] == pytest.approx(30)
    assert inv[0]["expires_in_horizon"] is True
    assert data["bill_usd"]["already_committed_usd"] == pytest.approx(30)
    assert data["bill_usd"]["new_decisions_usd"] == pytest.approx(data["cost_usd"]["total"])
    assert data["bill_usd"]["total_usd"] == pytest.approx(data["cost_usd"]["total"] + 30)
    wb = load_workbook(paths["xlsx"])
    assert "Inventory" in wb.sheetnames
    ws = wb["Inventory"]
    assert ws["A2"].value == "A" and str(ws["J2"].value).startswith("=")


def test_solver_settings_actually_used_and_traceability(tmp_path):
    m = bill_case(tmp_path)
    plan = solve_case(m, time_limit_s=42)  # mip_gap 0 (solve_case), 42 s: not the model file's 60 s
    paths = write_outputs(plan, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    assert data["solver"]["time_limit_s"] == 42 and data["solver"]["mip_gap_limit"] == 0
    assert data["solver"]["model_file"]["time_limit_s"] == 60
    assert "model.toml" in " ".join(data["inputs"]["sha256"])
    assert all(not p.startswith("/") for p in data["inputs"]["sha256"])
    assert data["created_utc"].endswith("+00:00")
    wb = load_workbook(paths["xlsx"])
    summary = {r[0].value: r[1].value for r in wb["Summary"].iter_rows(min_row=2) if r[0].value}
    assert summary["Solver used"].startswith("highs, time limit 42 s")
    assert summary["Written (UTC)"] == data["created_utc"]
    assert all(not str(v).startswith("/") for k, v in summary.items() if str(k).startswith("Input:"))
    notes = " ".join(str(r[0].value) for r in wb["Assumptions"].iter_rows() if r[0].value)
    assert "Solver used: highs, time limit 42 s" in notes


@needs_lo
def test_libreoffice_recomputes_the_bill(tmp_path):
    plan = solve_case(bill_case(tmp_path))
    paths = write_outputs(plan, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    got = named_values(recalc(paths["xlsx"], tmp_path))
    assert got["already_committed_usd"] == pytest.approx(30, abs=0.005)
    assert got["bill_usd"] == pytest.approx(data["bill_usd"]["total_usd"], abs=0.005)


def test_focus_export_has_every_mandatory_column_and_ties_out(tmp_path):
    import pandas as pd
    from click.testing import CliRunner

    from planner.cli import cli
    from planner.export.focus import MANDATORY

    plan = solve_case(bill_case(tmp_path))
    paths = write_outputs(plan, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    out = tmp_path / "focus.csv"
    result = CliRunner().invoke(cli, ["export", "focus", str(paths["json"]), "--out", str(out),
                                      "--provider", "Example Cloud"])
    assert result.exit_code == 0, result.output
    f = pd.read_csv(out)
    assert len(MANDATORY) == 21
    assert set(MANDATORY) | {"ChargeFrequency"} <= set(f.columns)
    for col in ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost", "PricingQuantity"):
        assert pd.api.types.is_float_dtype(f[col]), col
    for col in ("ChargePeriodStart", "ChargePeriodEnd", "BillingPeriodStart", "BillingPeriodEnd"):
        parsed = pd.to_datetime(f[col], format="%Y-%m-%dT%H:%M:%SZ")  # ISO 8601 UTC, every row
        assert parsed.notna().all()
    assert (pd.to_datetime(f["ChargePeriodEnd"]) > pd.to_datetime(f["ChargePeriodStart"])).all()
    assert set(f["ChargeCategory"]) <= {"Purchase", "Usage"}
    assert (f["BillingCurrency"] == "USD").all() and (f["ProviderName"] == "Example Cloud").all()
    # amortised: the effective cost of every row adds up to the bill; billed = cash in the horizon
    assert f["EffectiveCost"].sum() == pytest.approx(data["bill_usd"]["total_usd"], rel=1e-9)
    purchased = sum(p["gpus"] * (p["monthly_recurring_usd"] / p["gpus"] / 730.0) * 10
                    + p["upfront_usd"] for p in data["reserved_purchases"] if p["instances"])  # 10 h horizon
    cash = purchased + 10 * 0.5 * 5 + data["cost_usd"]["on_demand"] + data["cost_usd"]["spot"]
    assert f["BilledCost"].sum() == pytest.approx(cash, rel=1e-9)
    owned = f[f["x_Source"] == "already committed"]
    assert owned["BilledCost"].sum() == pytest.approx(10 * 0.5 * 5)  # the inventory's hourly fee, 5 hours
    bad = CliRunner().invoke(cli, ["export", "focus", str(tmp_path / "missing.json"), "--out", str(out)])
    assert bad.exit_code == 2 and "plan file not found" in bad.output
