"""The FOCUS export: unit price x quantity = cost to the cent on every row (issue 25, item 8), and the FOCUS
1.1+ capacity-reservation columns and 1.3 provider columns filled as the spec's nullability rules say."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import price, solve_case, write_case
from planner.export.focus import write_focus


def check_rows(path):
    """Every row: ListUnitPrice x PricingQuantity = ListCost and ContractedUnitPrice x PricingQuantity =
    ContractedCost to the cent, as the CSV reads back; the capacity-reservation and 1.3 columns consistent."""
    f = pd.read_csv(path)
    checked = 0
    for unit, cost in (("ListUnitPrice", "ListCost"), ("ContractedUnitPrice", "ContractedCost")):
        m = f[unit].notna()
        err = (f.loc[m, unit] * f.loc[m, "PricingQuantity"] - f.loc[m, cost]).abs()
        bad = f.loc[m][err >= 0.005]
        assert bad.empty, bad[["ChargeDescription", unit, "PricingQuantity", cost]].head().to_string()
        checked += int(m.sum())
    cr = f["CapacityReservationId"].notna()
    usage = f["ChargeCategory"].eq("Usage")
    assert f.loc[cr & usage, "CapacityReservationStatus"].isin(["Used", "Unused"]).all()
    assert f.loc[~cr, "CapacityReservationStatus"].isna().all()
    assert (f["x_ServiceProviderName"] == f["ProviderName"]).all() and f["x_HostProviderName"].notna().all()
    return f, checked


def ladder_case(tmp_path):
    hours = 24 * 75
    demand = {"a": [40.0 + 16.0 * ((t // 240) % 2) for t in range(hours)]}
    rows = [price("H", "r", hourly=9.0, gpus_per_instance=8),
            price("H", "r", option="reserved_3y", hourly=0.0, upfront_usd=1234.5678, term_months=36,
                  gpus_per_instance=8),
            price("H", "r", option="reserved_1y", hourly=4.4444, upfront_usd=77.77, term_months=12,
                  gpus_per_instance=8),
            price("H", "r", option="capacity_block", hourly=3.3333, gpus_per_instance=8, block_start="2027-02-01T00:00",
                  block_days=14, max_gpus=64)]
    m = write_case(tmp_path / "m", demand, rows, {"a": {}}, start="2027-01-04T00:00",
                   extra_top='[commitments]\npurchase_every = "month"')
    pd.DataFrame(rows).to_csv(m.parent / "prices.csv", index=False)  # write_case drops the block columns
    return m


def test_every_row_of_a_ladder_with_blocks_prices_to_the_cent(tmp_path):
    from planner.pipeline.run import write_outputs

    paths = write_outputs(solve_case(ladder_case(tmp_path)), tmp_path / "out")
    for g in ("month", "period"):
        out, n = write_focus(paths["json"], tmp_path / f"{g}.csv", granularity=g)
        f, checked = check_rows(out)
        assert checked > 0 and len(f) == n
        upfront = f[f["ChargeFrequency"].eq("One-Time") & f["ChargeCategory"].eq("Purchase")]
        assert len(upfront) and upfront["CapacityReservationId"].notna().all()
    month, period = pd.read_csv(tmp_path / "month.csv"), pd.read_csv(tmp_path / "period.csv")
    for col in ("EffectiveCost", "BilledCost"):  # per period or per month, the same money
        assert period[col].sum() == pytest.approx(month[col].sum(), rel=1e-9)


def test_the_issue_25_upfront_row_is_exact():
    from planner.export.focus import decimal_text

    q, upfront = 57_465_600.0, 49_200_000.0
    unit = float(decimal_text(upfront / q))
    assert abs(unit * q - upfront) < 0.005  # 0.856164 (6 decimals) gives 49,199,977.96
    assert "e" not in decimal_text(1e-9) and decimal_text(2.5) == "2.5"


@pytest.mark.slow
def test_every_row_of_the_examples_export_prices_to_the_cent(example_plan, tmp_path):
    _, paths = example_plan
    for g in ("month", "period"):
        out, _ = write_focus(paths["json"], tmp_path / f"{g}.csv", granularity=g)
        check_rows(out)
