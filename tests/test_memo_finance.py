"""Issue 35: a memo finance can edit and still sign. Each tranche's own figures on Purchases against a hand
stack, payment options placed on their own row (savings plans present) and their break-even rate, sign-now
lines carrying the whole commitment."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from openpyxl import load_workbook

from planner import load_inputs, make_plan
from planner.pipeline.run import write_outputs

from test_memo import H, two_tranches  # noqa: F401
from conftest import book
from test_workbook import needs_lo, recalc_many


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory):
    folder = tmp_path_factory.mktemp("memo_finance")
    plan = make_plan(load_inputs(two_tranches(folder)), mip_gap=0.0)
    return plan, write_outputs(plan, folder / "out")


def sheet(path, name: str) -> pd.DataFrame:
    ws = book(path, data_only=True)[name]
    rows = list(ws.iter_rows(values_only=True))
    return pd.DataFrame(rows[1:], columns=rows[0]).dropna(how="all")


def test_purchases_show_each_tranches_own_use_against_a_hand_stack(tiny_book):
    # stacked by hand (tests/test_memo.py): 4 owned GPUs first, then tranche 1 (Jan 25), then tranche 2 (Feb 1):
    # tranche 1 uses 100 of 112 GPU-days (lowest day 50 %), tranche 2 44 of 56 (lowest 50 %, highest 100 %);
    # the pool's own figure, 144 / 168 for both, is what the sheet showed before
    plan, paths = tiny_book
    p = sheet(paths["xlsx"], "Purchases")
    p = p[p["instances"] > 0].reset_index(drop=True)
    assert len(p) == 2
    assert list(p["avg_utilisation"]) == pytest.approx([100 / 112, 44 / 56])
    assert list(p["min_utilisation"]) == pytest.approx([0.5, 0.5])
    assert list(p["max_utilisation"]) == pytest.approx([1.0, 1.0])
    od, eff, gpus = 10.0, 2.0, 8
    assert list(p["monthly_savings_usd"]) == pytest.approx([(u * od - eff) * gpus * 730 for u in (100 / 112, 44 / 56)])
    assert list(p["break_even_utilisation"]) == pytest.approx([0.2, 0.2])
    # no spot in this pool: buying nothing rents on demand, so its break-even is the on-demand one
    assert list(p["break_even_vs_nothing"]) == pytest.approx([0.2, 0.2])
    assert p["break_even_vs_spot"].isna().all()


def payment_case(folder, rate: float = 0.05):
    """Pool A: on-demand 2.00/h, a 1-year term at 1.00/h with no upfront or 8,000 all upfront (the hand case of
    tests/test_payment_options.py); pool B: a savings plan (listed first, so the plan's savings-plan row comes
    before the reserved ones and the Purchases sheet, which leaves it out, is shifted against plan.purchases)."""
    from conftest import price, write_case

    prices = [dict(gpu_type="B", region="r1", option="savings_plan_1y", hourly_usd=0.8),
              price("A", "r1", "on_demand", 2.0), price("B", "r1", "on_demand", 1.0),
              price("A", "r1", "reserved_1y_no_upfront", 1.0, term_months=12),
              price("A", "r1", "reserved_1y_all_upfront", 0.0, upfront_usd=8000.0, term_months=12)]
    m = write_case(folder, {"a": [10.0] * 24, "b": [5.0] * 24}, prices,
                   {"a": {"gpu_types": {"A": 1.0}}, "b": {"gpu_types": {"B": 1.0}}},
                   extra_top=f"[finance]\ndiscount_rate = {rate}\n")
    pd.DataFrame(prices).to_csv(folder / "prices.csv", index=False)
    return m


@pytest.fixture(scope="module")
def payment_book(tmp_path_factory):
    folder = tmp_path_factory.mktemp("payment")
    plan = make_plan(load_inputs(payment_case(folder)), mip_gap=0.0)
    return plan, write_outputs(plan, folder / "out")


def test_the_payment_options_sit_on_their_purchase_row_with_a_savings_plan_before_it(payment_book):
    plan, paths = payment_book
    kinds = list(plan.purchases["kind"])
    assert kinds.index("spend") < kinds.index("instance")  # the shift that put the comparison a row low
    p = sheet(paths["xlsx"], "Purchases")
    texted = p[p["payment_options"].notna()]
    assert len(texted) == 1
    row = texted.iloc[0]
    assert row["instances"] == 10 and row["option"] == "reserved_1y_all_upfront"
    assert "*reserved_1y_all_upfront" in row["payment_options"] and "reserved_1y_no_upfront" in row["payment_options"]


def test_the_break_even_rate_of_the_payment_options_is_the_hand_irr(payment_book, tmp_path):
    from test_payment_options import implied_rate

    from planner.inputs.finance import payment_break_even

    plan, paths = payment_book
    be = payment_break_even(plan.inputs, plan.payment_options)
    assert len(be) == 1
    hand = implied_rate()  # bisection on the month-by-month hand NPV of 1.00/h against 8,000 now
    assert be["break_even_rate"].iat[0] == pytest.approx(hand, abs=1e-9)
    assert be["upfront_option"].iat[0] == "reserved_1y_all_upfront" and be["cheaper"].iat[0] == be["upfront_option"].iat[0]
    s = sheet(paths["xlsx"], "Summary").set_index("item")
    label = "Payment options: A r1 reserved_1y_all_upfront or reserved_1y_no_upfront (as solved)"
    assert s.loc[label, "value"] == pytest.approx(hand, abs=1e-9)
    assert "As solved at 5.0%" in s.loc[label, "note"]
    chosen = plan.purchases.loc[plan.purchases["instances"] > 0, "option"].iat[0]
    assert f"the plan signs {chosen}" in s.loc[label, "note"]  # what it signs beside what the NPVs say
    # the terminal prints it too
    from planner.report.summary import summary_text

    assert f"cost the same at {100 * hand:.2f} %" in summary_text(plan)


def test_sign_now_lines_carry_the_whole_commitment(payment_book):
    plan, paths = payment_book
    s = sheet(paths["xlsx"], "Summary").set_index("item")
    sign = [i for i in s.index if str(i).startswith("Sign now:")]
    assert len(sign) == 1
    assert s.loc[sign[0], "value"] == pytest.approx(10 * 8000.0)  # all upfront: the whole commitment
    assert "upfront $80,000" in s.loc[sign[0], "note"] and "term end" in s.loc[sign[0], "note"]
    commit = [i for i in s.index if str(i).startswith("Commit now:")]
    assert len(commit) == 1
    sp = plan.spend[plan.spend["usd_per_hour"] > 0].iloc[0]
    hours = 12 * 730.0  # a 1-year savings plan: 8,760 h
    assert s.loc[commit[0], "value"] == pytest.approx(sp["usd_per_hour"] * hours)


def test_cash_charts_category_axis_is_a_date_axis_formatted_as_months(tiny_book):
    import re
    import zipfile

    _plan, paths = tiny_book
    with zipfile.ZipFile(paths["xlsx"]) as z:
        charts = [z.read(n).decode() for n in z.namelist() if n.startswith("xl/charts/chart")]
    cash = [c for c in charts if "'Cash flow'" in c]
    assert len(cash) >= 1
    for c in cash:  # LibreOffice showed serials (46388...) on a text category axis
        date_ax = re.search(r"<c:dateAx>.*?</c:dateAx>", c, re.S)
        assert date_ax and 'formatCode="mmm yyyy"' in date_ax.group(0) and "<c:catAx>" not in c


def test_coverage_states_both_figures_spot_counted_or_not(tiny_book):
    plan, paths = tiny_book
    from planner.memo.build import coverage

    cov = coverage(plan)
    assert cov["eligible_spot_gpu_hours"] == 0 and cov["coverage_with_spot"] == pytest.approx(cov["coverage"])
    s = sheet(paths["xlsx"], "Summary")
    items = [str(i) for i in s["item"]]
    assert any(i.startswith("Coverage, spot not counted") for i in items)
    assert any(i.startswith("Coverage, spot counted") for i in items)


def test_focus_list_prices_savings_plan_usage_and_names_every_resource(payment_book, tmp_path):
    from planner.export.focus import MANDATORY, OTHER, write_focus

    plan, paths = payment_book
    out, _ = write_focus(paths["json"], tmp_path / "focus.csv")
    f = pd.read_csv(out)
    sp = plan.spend[plan.spend["usd_per_hour"] > 0].iloc[0]
    assert sp["savings_usd"] > 0
    usage = f[(f["CommitmentDiscountCategory"] == "Spend") & (f["ChargeCategory"] == "Usage")]
    used = usage[usage["CommitmentDiscountStatus"] == "Used"]
    # FinOps tools read savings as ListCost - EffectiveCost: +what the plan saved, not -the commitment (ListCost 0)
    assert (used["ListCost"] > 0).all()
    assert used["ListCost"].sum() == pytest.approx(sp["covered_at_on_demand_usd"], rel=1e-9)
    assert (usage["ListCost"] - usage["EffectiveCost"]).sum() == pytest.approx(sp["savings_usd"], rel=1e-9, abs=1e-6)
    # B's on-demand is 1.00 and the plan's rate 0.80: each dollar drawn lists at 1.25
    assert used["ListUnitPrice"].to_numpy() == pytest.approx(1.0 / 0.8)
    focus12 = set(MANDATORY) | set(OTHER)
    assert all(c in focus12 or c.startswith("x_") for c in f.columns)
    assert {"x_ChargeType", "x_ServiceProviderName", "x_ResourceID"} <= set(f.columns)
    assert f["ResourceId"].notna().all()
    a_usage = f[(f["x_GpuType"] == "A") & f["CommitmentDiscountId"].isna()]
    assert set(a_usage["ResourceId"]) <= {"pool/A/r1"}
    bought = f[f["x_Option"] == "reserved_1y_all_upfront"]
    assert bought["ResourceId"].nunique() == 1 and bought["ResourceId"].iat[0] == bought["CommitmentDiscountId"].iat[0]
    old, _ = write_focus(paths["json"], tmp_path / "focus10.csv", focus10_names=True)
    assert {"ChargeType", "ResourceID", "ServiceProviderName"} <= set(pd.read_csv(old).columns)


def _summary_rows(path) -> dict:
    ws = book(path, data_only=True)["Summary"]
    return {r[0].value: (r[1].value, r[2].value) for r in ws.iter_rows(min_row=2) if isinstance(r[0].value, str)}


def _edited(paths, out, change) -> Path:
    """The workbook of ``paths`` with ``change(workbook)`` made to it by openpyxl, saved as ``out``."""
    wb = load_workbook(paths["xlsx"])
    change(wb)
    wb.save(out)
    return out


def _price_and_rate(wb) -> None:
    """All upfront at 9,000 a GPU (was 8,000) and the discount rate at 9 % (was 5 %)."""
    prices = wb["Prices"]
    head = [c.value for c in prices[1]]
    for row in prices.iter_rows(min_row=2):
        if row[head.index("option")].value == "reserved_1y_all_upfront":
            row[head.index("upfront_usd")].value = 9000.0  # was 8,000
    (_, cell), = list(wb.defined_names["discount_rate"].destinations)
    wb["Summary"][cell.replace("$", "")].value = 0.09


def _prices_edit(change):
    def edit(wb) -> None:
        prices = wb["Prices"]
        change(prices, [c.value for c in prices[1]])
    edit.__name__ = change.__name__
    return edit


def overwrite_effective(ws, head):
    ws.cell(2, head.index("effective_usd_per_gpu_hour") + 1).value = 2.0


def tiny(ws, head):
    c = ws.cell(2, head.index("hourly_usd") + 1)
    c.value = float(c.value) + 0.0002


def cancelling(ws, head):
    col = head.index("hourly_usd") + 1
    a, b = ws.cell(2, col), ws.cell(3, col)
    a.value, b.value = float(a.value) + 0.01, float(b.value) - 0.01


def new_row(ws, head):
    r = ws.max_row + 1
    for name, v in (("gpu_type", "A"), ("region", "r1"), ("option", "on_demand"), ("hourly_usd", 1.0)):
        ws.cell(r, head.index(name) + 1).value = v


CHECK_CHANGES = (overwrite_effective, tiny, cancelling, new_row)  # edits a checksum of Prices missed


@pytest.fixture(scope="module")
def payment_recomputed(payment_book, tmp_path_factory):
    """The payment case's workbook recomputed by LibreOffice as written ("as written"), after the price and rate edit
    (``_price_and_rate``: "price and rate") and after each of ``CHECK_CHANGES`` (by name): all in one LibreOffice
    start (each start is 2-4 s). Shared: never edit what it returns."""
    _plan, paths = payment_book
    folder = tmp_path_factory.mktemp("memo-finance-lo")
    books = [paths["xlsx"], _edited(paths, folder / "edited.xlsx", _price_and_rate)]
    books += [_edited(paths, folder / f"edit{k}.xlsx", _prices_edit(change)) for k, change in enumerate(CHECK_CHANGES, 1)]
    names = ["as written", "price and rate"] + [change.__name__ for change in CHECK_CHANGES]
    return dict(zip(names, recalc_many(books, folder / "lo")))


@needs_lo
def test_after_a_price_and_rate_edit_every_memo_figure_moves_by_hand_or_is_flagged(payment_book, payment_recomputed):
    from planner.report.workbook.memo import CHECK_EDITED, CHECK_OK

    plan, paths = payment_book
    before = _summary_rows(payment_recomputed["as written"])
    check = "Check: prices and discount rate as solved"
    assert before[check][0] == CHECK_OK  # LibreOffice's checksum is the one stored
    after = _summary_rows(payment_recomputed["price and rate"])  # all upfront 9,000 (was 8,000), the rate 9 %
    assert after[check][0] == CHECK_EDITED
    sign = next(k for k in after if k.startswith("Sign now:"))
    assert after[sign][0] == pytest.approx(10 * 9000.0)  # the whole commitment, by hand
    # the note's NPV is the solve's, so it quotes the rate it was solved at, and the row turns red (below)
    assert "at 5.0% as solved" in after[sign][1] and "at 5.0% as solved" in before[sign][1]
    # live: the amortised reserved cost rises by 10 GPUs x 1,000 / 8,760 h x 24 h, the baseline is unchanged
    moved = after["Saving against all on-demand"][0] - before["Saving against all on-demand"][0]
    assert moved == pytest.approx(-10 * 1000.0 / 8760.0 * 24, rel=1e-9)
    # every other figure is a formula (it follows the edit) or a figure of the solve marked (as solved), whose
    # item and value turn red with the check cell
    rules = book(paths["xlsx"])["Summary"].conditional_formatting
    flagged = {str(cf.sqref) for cf in rules if any(CHECK_EDITED in (r.formula[0] if r.formula else "")
                                                     for r in cf.rules)}
    assert "B2" in flagged
    ws = book(paths["xlsx"])["Summary"]
    sign_row = next(r[0].row for r in ws.iter_rows(min_row=3) if str(r[0].value).startswith("Sign now:"))
    assert f"A{sign_row}:B{sign_row}" in flagged  # a live value beside a note as solved: red once edited
    checked = 0
    for row in ws.iter_rows(min_row=3):
        label, value = row[0].value, row[1].value
        if label == "Solver status":
            break  # the solver's and the inputs' facts follow
        if not isinstance(value, (int, float)) or label.startswith("Discount rate"):
            continue  # formulas (str "=...") are live; the rate is the input itself
        assert "(as solved)" in label and f"A{row[0].row}:B{row[0].row}" in flagged, label
        checked += 1
    assert checked >= 5


def test_focus_savings_add_up_with_a_savings_plan_and_reserved_instances(tmp_path):
    """Review of issue 35: with a savings plan beside reserved instances, the usage rows' ListCost - EffectiveCost
    is the plan's saving against all on-demand (the hours a savings plan paid listed once, on its rows; reserved
    usage listed at the on-demand rate, not at a rate diluted by the hours the plan paid); price x quantity = cost."""
    import json

    import pandas as pd

    from conftest import price, solve_case, write_case
    from planner.export.focus import focus_frame
    from planner.pipeline.run import write_outputs

    n = 48
    prices = [price(gpu_type="A", region="r", hourly=2.0), price(gpu_type="B", region="r", hourly=1.0),
              price(gpu_type="A", region="r", option="reserved_1y", hourly=0.9, upfront_usd=0.0, term_months=12),
              dict(gpu_type="A", region="r", option="savings_plan_1y", hourly_usd=1.2),
              dict(gpu_type="B", region="r", option="savings_plan_1y", hourly_usd=0.8)]
    folder = tmp_path / "c"
    model = write_case(folder, {"a": [10.0 + (i % 5) for i in range(n)], "b": [4.0 + (i % 3) for i in range(n)]},
                       prices, {"a": {"gpu_types": {"A": 1.0}}, "b": {"gpu_types": {"B": 1.0}}})
    pd.DataFrame(prices).to_csv(folder / "prices.csv", index=False)
    plan = solve_case(model)
    assert len(plan.spend) and (plan.purchases["instances"] > 0).any()  # both kinds are bought
    doc = json.loads(write_outputs(plan, tmp_path / "o")["json"].read_text())
    f = focus_frame(doc)
    usage = f[f["ChargeCategory"].eq("Usage")]
    assert (usage["ListCost"] - usage["EffectiveCost"]).sum() == pytest.approx(
        doc["baselines_usd"]["all_on_demand"] - doc["cost_usd"]["total"], rel=1e-9)
    assert (f["ListUnitPrice"] * f["PricingQuantity"] - f["ListCost"]).abs().max() < 1e-6
    reserved_used = usage[usage["CommitmentDiscountType"].eq("Reserved capacity") & usage["CommitmentDiscountStatus"].eq("Used")]
    assert len(reserved_used) and (reserved_used["ListUnitPrice"] - 2.0).abs().max() < 1e-9  # on-demand rate


def test_the_whole_term_downside_of_a_hand_stack(tmp_path):
    """Issue 35 item 5, by hand: one pool, flat demand of 100 GPUs for a week; a 1-year reservation at 1.00/h
    against on-demand at 2.00/h buys 100 GPUs (one tranche). Held flat over its 8,760-hour term, at demand -20 %
    it is 80 % used: 20 % of its 876,000 USD liability unused (175,200), it saves 0.8 x 100 x 8,760 x 2 - 876,000
    = 525,600 against buying nothing, and it stops paying below half the plan's demand (1.00 / 2.00)."""
    from planner import load_inputs, make_plan
    from planner.memo.term_downside import whole_term_downside
    from conftest import price, write_case

    m = write_case(tmp_path, {"c": [100.0] * 168},
                   [price(hourly=2.0), price(option="reserved_1y", hourly=1.0, term_months=12)],
                   {"c": {"spot": False}}, extra_top='[commitments]\naccounting = "amortised"\n')
    plan = make_plan(load_inputs(m), mip_gap=0.0, risk=False)
    assert plan.purchases["gpus"].sum() == 100
    d = whole_term_downside(plan, (0.0, 0.2, 0.3)).set_index("shock")
    assert d.loc[0.0, "used_share"] == pytest.approx(1.0)
    assert d.loc[0.2, "used_share"] == pytest.approx(0.8)
    assert d.loc[0.2, "full_term_usd"] == pytest.approx(100 * 8760 * 1.0)
    assert d.loc[0.2, "unused_usd"] == pytest.approx(0.2 * 876_000)
    assert d.loc[0.3, "unused_usd"] == pytest.approx(0.3 * 876_000)
    assert d.loc[0.2, "saving_vs_nothing_usd"] == pytest.approx(0.8 * 100 * 8760 * 2.0 - 876_000)
    assert d.loc[0.2, "break_even_demand_level"] == pytest.approx(0.5, abs=1e-6)
    assert "held flat" in d["demand_basis"].iat[0]


@needs_lo
def test_the_check_cell_sees_every_edit_that_moves_money(payment_book, payment_recomputed):
    """The check cell compares every Prices cell with the hidden copy solved with: a finance review's edits that
    a checksum missed (the effective rate typed over, a 0.0002 change, two edits that cancelled in the sum, a
    row typed below the table) each turn it red; the workbook as written reads "as solved"."""
    from planner.report.workbook.memo import CHECK_EDITED, CHECK_OK, SOLVED_SHEET

    plan, paths = payment_book
    check = "Check: prices and discount rate as solved"
    assert _summary_rows(payment_recomputed["as written"])[check][0] == CHECK_OK
    assert book(paths["xlsx"])[SOLVED_SHEET].sheet_state == "hidden"
    for change in CHECK_CHANGES:  # (recomputed in one LibreOffice start, with the rest of this file's)
        assert _summary_rows(payment_recomputed[change.__name__])[check][0] == CHECK_EDITED, change.__name__


def test_one_verdict_says_when_spot_beats_the_purchase():
    """The sign-now verdict (terminal, Summary, HTML): below the on-demand break-even it does not pay; above it but
    below the break-even against spot (over 100 %: no use pays there) it pays against on-demand only."""
    from planner.memo.tranches import verdict

    assert verdict(False, 0.30, 0.60) == "DOES NOT PAY"
    assert verdict(True, 0.98, 1.01) == "pays against on-demand, not against spot"
    assert verdict(True, 0.50, 0.63) == "pays against on-demand, not against spot"
    assert verdict(True, 0.88, 0.63) == "pays"
    assert verdict(True, 0.88, float("nan")) == "pays"  # no spot in the pool
    assert verdict(True, 0.88, float("inf")) == "pays"
