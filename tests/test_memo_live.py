"""Issue 35: a memo finance can edit and still sign. After a price or rate edit, recomputed in LibreOffice,
every Summary figure either moves by the hand figure (live) or is marked (as solved) and turns red with the
check cell; sign-now lines carry the whole commitment; payment options and their break-even rate."""

from __future__ import annotations

import pytest
from openpyxl import load_workbook

from conftest import price, soffice, solve_case, write_case
from planner.finance import break_even_rate, npv_of_payments, payment_break_evens
from planner.pipeline import write_outputs
from test_workbook import recalc

lo = pytest.mark.skipif(soffice() is None, reason="LibreOffice (soffice) not installed")


def summary(path):
    ws = load_workbook(path, data_only=True)["Summary"]
    return {r[0]: r[1] for r in ws.iter_rows(min_row=2, max_col=2, values_only=True) if r[0]}


def test_break_even_rate_by_hand():
    # 100,000 now against 9,000 at the start of each of 12 months: equal where sum 9,000 (1+r)^(-m/12) = 100,000
    r = break_even_rate((100_000.0, 0.0), (0.0, 9_000.0), 12)
    assert npv_of_payments(0.0, 9_000.0, 12, r) == pytest.approx(100_000.0, rel=1e-10)
    assert npv_of_payments(0.0, 9_000.0, 12, r + 0.01) < 100_000 < npv_of_payments(0.0, 9_000.0, 12, r - 0.01)
    assert 0.15 < r < 0.25  # 108,000 paid over the year for 100,000 now: about 17 % a year
    assert break_even_rate((100_000.0, 0.0), (0.0, 5_000.0), 12) is None  # monthly is cheaper at every rate


def _case(tmp_path):
    """One pool; a 1-year reservation sold all upfront and no upfront (the same money at 0 %)."""
    prices = [price(hourly=4.0), price(option="reserved_1y_all_upfront", hourly=0.0, upfront_usd=2.0 * 8760,
                                       term_months=12),
              price(option="reserved_1y_no_upfront", hourly=2.1, upfront_usd=0.0, term_months=12)]
    return write_case(tmp_path / "case", {"a": [10.0] * 24 * 7}, prices, {"a": {"spot": False}},
                      extra_top="[finance]\ndiscount_rate = 0.08\n")


def test_payment_options_on_the_summary_with_their_break_even_rate(tmp_path):
    plan = solve_case(_case(tmp_path))
    be = payment_break_evens(plan.payment_options, plan.purchases)
    assert len(be) == 1
    row = be.iloc[0]
    assert row["upfront_option"] == "reserved_1y_all_upfront" and row["monthly_option"] == "reserved_1y_no_upfront"
    gpus = float(plan.purchases.loc[plan.purchases["instances"] > 0, "gpus"].sum())
    r = row["break_even_rate"]
    assert npv_of_payments(gpus * 2.0 * 8760, 0.0, 12, r) == pytest.approx(
        npv_of_payments(0.0, gpus * 2.1 * 730, 12, r), rel=1e-9)
    paths = write_outputs(plan, tmp_path / "out")
    got = summary(paths["xlsx"])
    key = next(k for k in got if k.startswith("Pay reserved_1y_all_upfront or reserved_1y_no_upfront"))
    assert got[key] == pytest.approx(r, rel=1e-9)
    sign = next(k for k in got if k.startswith("Sign now:"))
    assert got[sign] == pytest.approx(float(plan.purchases["commitment_usd"][plan.purchases["instances"] > 0].sum()))


@lo
@pytest.mark.slow
@pytest.mark.libreoffice
def test_after_a_price_and_rate_edit_every_summary_figure_moves_or_is_flagged(example_plan, tmp_path):
    plan, paths = example_plan
    before = summary(recalc(paths["xlsx"], tmp_path))
    assert before["Inputs since the solve"] == "as solved"  # an unedited workbook is never flagged
    wb = load_workbook(paths["xlsx"])
    prices, summ = wb["Prices"], wb["Summary"]
    a = plan.allocation[plan.allocation.option == "on_demand"]
    hours = a.assign(gh=a.gpus * a.hours).groupby(["gpu_type", "region"])["gh"].sum()
    (gt, rg), gpu_hours = hours.idxmax(), hours.max()
    for row in prices.iter_rows(min_row=2):
        if (row[0].value, row[1].value, row[2].value) == (gt, rg, "on_demand"):
            old = row[3].value
            row[3].value = 2 * old
    rate_row = next(r[0].row for r in summ.iter_rows(min_row=2) if r[0].value == "Discount rate (a year)")
    summ.cell(rate_row, 2).value = 0.05
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    after = summary(recalc(edited, tmp_path))
    assert after["Inputs since the solve"] == "EDITED"
    delta = gpu_hours * old
    assert after["Total expected cost"] - before["Total expected cost"] == pytest.approx(delta, rel=1e-9)
    # the memo's saving is the layout's saving: one figure, moved by the baseline's change less the cost's
    assert after["Saving against all on-demand"] == pytest.approx(after["Savings against all on-demand"], rel=1e-12)
    assert before["Saving against all on-demand"] == pytest.approx(before["Savings against all on-demand"], rel=1e-12)
    # figures that need a re-solve are labelled so (and turn red with the check cell)
    solved = [k for k in after if "(as solved)" in k]
    assert solved and all(after[k] == before[k] for k in solved)


def test_the_terminal_gives_break_evens_where_a_reader_looks_first(tmp_path):
    from click.testing import CliRunner

    from planner.cli import cli

    model = _case(tmp_path)
    r = CliRunner().invoke(cli, ["plan", str(model), "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    plan = solve_case(model)
    rate = payment_break_evens(plan.payment_options, plan.purchases)["break_even_rate"].iat[0]
    assert f"cost the same at a cost of capital of {100 * rate:.2f} %" in r.output
    line = next(x for x in r.output.splitlines() if x.strip().startswith("sign now"))
    assert "it pays above 50 % against on-demand" in line  # all upfront chosen: effective 2.0 / on-demand 4.0


def test_focus_list_prices_what_a_savings_plan_paid(tmp_path):
    """Issue 35 item 7: the savings plan's Used rows carry the on-demand value of the GPU-hours it paid, so
    ListCost - EffectiveCost of its rows is what it saved (plan.spend), and the usage rows' savings add up to the
    plan's saving against all on-demand; columns outside FOCUS 1.2 are x_; ResourceId is filled, one per pool or
    purchase."""
    import json

    from planner.export.focus import COLUMNS, focus_frame
    from test_savings_plans import sp_case

    plan = solve_case(sp_case(tmp_path / "c"))
    doc = json.loads((write_outputs(plan, tmp_path / "o")["json"]).read_text())
    for fleet in (None, "period"):
        f = focus_frame(doc, fleet=None if fleet is None else __import__("pandas").read_csv(tmp_path / "o" / "fleet.csv"))
        sp = f[f["CommitmentDiscountType"].eq("Savings Plan") & f["CommitmentDiscountStatus"].eq("Used")]
        sp_row = plan.spend.iloc[0]
        assert sp["ListCost"].sum() == pytest.approx(sp_row["covered_at_on_demand_usd"], rel=1e-9)
        assert (sp["ListCost"] - sp["EffectiveCost"]).sum() == pytest.approx(
            sp_row["covered_at_on_demand_usd"] - sp_row["covered_at_rates_usd"], rel=1e-9)
        usage = f[f["ChargeCategory"].eq("Usage")]
        assert (usage["ListCost"] - usage["EffectiveCost"]).sum() == pytest.approx(
            doc["baselines_usd"]["all_on_demand"] - doc["cost_usd"]["total"], rel=1e-9)
        assert (usage["ListUnitPrice"] * usage["PricingQuantity"] - usage["ListCost"]).abs().max() < 1e-6
        assert f["ResourceId"].notna().all()
        assert set(f.loc[f["ChargeCategory"].eq("Usage") & f["CommitmentDiscountId"].isna(), "ResourceId"]) == \
            {"pool/A/r", "pool/B/r"}
    assert not {"ChargeType", "InvoiceIssuer", "Provider", "Publisher", "ResourceID", "ServiceProviderName",
                "HostProviderName"} & set(COLUMNS)
