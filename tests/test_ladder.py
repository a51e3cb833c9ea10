"""Dated commitments (the ladder): hand-solved ladders, both accountings, the cash schedule, dated prices.

Daily periods (hours = 24) keep multi-year horizons small; a 12-month term is 8,760 h = 365 days.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from planner import load_inputs, make_plan
from planner.cli import cli
from conftest import price, write_case

DAY = 24.0


def _days(start: str, end: str) -> int:
    return (pd.Timestamp(end) - pd.Timestamp(start)).days


def _ladder_case(tmp_path, demand: list[float], prices: list[dict], every="month", accounting="amortised",
                 until=None, start="2027-01-01", inventory=None):
    extra = f'[commitments]\npurchase_every = "{every}"\naccounting = "{accounting}"\n' + \
        (f'purchase_until = "{until}"\n' if until else "")
    return write_case(tmp_path, {"a": demand}, prices, {"a": {"spot": False}}, hours=DAY, start=start,
                      extra_top=extra, inventory=inventory)


OD, R12, R36 = 4.0, 2.0, 1.0
PRICES = [price("A", "r", "on_demand", OD), price("A", "r", "reserved_1y", R12, term_months=12),
          price("A", "r", "reserved_3y", R36, term_months=36)]


def _bought(plan):
    b = plan.purchases[plan.purchases["instances"] > 0]
    return sorted((r.option, r.purchase_date.strftime("%Y-%m-%d"), int(r.instances)) for r in b.itertuples())


def test_demand_stepping_up_in_month_7_buys_a_3y_tranche_then_another(tmp_path):
    """D1 = 10 for January-June 2027, D2 = 25 from July to the end of 2029 (3 x 365 days), monthly purchases.

    r36 < r12 < od: 10 of the 3-year term on 2027-01-01 and 15 more on 2027-07-01; amortised, each pays
    r36 for its hours inside the horizon."""
    n = 3 * 365
    step = _days("2027-01-01", "2027-07-01")
    demand = [10.0] * step + [25.0] * (n - step)
    plan = make_plan(load_inputs(_ladder_case(tmp_path, demand, PRICES)), mip_gap=0.0)
    assert plan.status.value == "optimal" and plan.demand_met
    assert _bought(plan) == [("reserved_3y", "2027-01-01", 10), ("reserved_3y", "2027-07-01", 15)]
    H = n * DAY
    expected = 10 * R36 * H + 15 * R36 * (n - step) * DAY
    assert plan.cost["total"] == pytest.approx(expected, rel=1e-9)
    c = plan.commitments
    assert c["reserved_amortised_usd"] == pytest.approx(expected)
    assert c["reserved_full_term_usd"] == pytest.approx(25 * R36 * 36 * 730)
    assert c["liability_past_horizon_usd"] == pytest.approx(25 * R36 * 36 * 730 - expected)
    firm = plan.purchases.set_index(["option", "purchase_date"])["firm"]
    assert firm[("reserved_3y", pd.Timestamp("2027-01-01"))] and not firm[("reserved_3y", pd.Timestamp("2027-07-01"))]


def test_declining_demand_buys_one_year_terms_for_the_first_year(tmp_path):
    """25 GPUs in the first year, then 10: 10 of the 3-year term and 15 of the 1-year term, both now
    (15 x r12 x 8760 = 262,800 < 15 x r36 x 3 years = 394,200)."""
    n = 3 * 365
    demand = [25.0] * 365 + [10.0] * (n - 365)
    plan = make_plan(load_inputs(_ladder_case(tmp_path, demand, PRICES)), mip_gap=0.0)
    assert _bought(plan) == [("reserved_1y", "2027-01-01", 15), ("reserved_3y", "2027-01-01", 10)]
    assert plan.cost["total"] == pytest.approx(15 * R12 * 365 * DAY + 10 * R36 * n * DAY)


@pytest.mark.parametrize("accounting,option,cost", [("amortised", "reserved_3y", 10 * R36 * 8760),
                                                     ("full_term", "reserved_1y", 10 * R12 * 8760)])
def test_a_12_month_horizon_under_full_term_buys_the_1_year_term(tmp_path, accounting, option, cost):
    """Full term charges the 3-year option three years against one year of use: 1-year wins as r12 < 3 r36."""
    plan = make_plan(load_inputs(_ladder_case(tmp_path, [10.0] * 365, PRICES, every="once",
                                              accounting=accounting)), mip_gap=0.0)
    assert _bought(plan) == [(option, "2027-01-01", 10)]
    assert plan.cost["reserved"] == pytest.approx(cost)
    assert plan.commitments["accounting"] == accounting
    # both figures are reported whichever was optimised
    full = 10 * (R12 * 12 if option == "reserved_1y" else R36 * 36) * 730
    assert plan.commitments["reserved_full_term_usd"] == pytest.approx(full)


def test_a_term_shorter_than_the_horizon_expires_on_its_date(tmp_path):
    """Once, two years of demand 10, only a 1-year term: it covers the first year; the second is on-demand."""
    prices = [price("A", "r", "on_demand", OD), price("A", "r", "reserved_1y", R12, term_months=12)]
    plan = make_plan(load_inputs(_ladder_case(tmp_path, [10.0] * 730, prices, every="once")), mip_gap=0.0)
    assert _bought(plan) == [("reserved_1y", "2027-01-01", 10)]
    assert plan.cost["reserved"] == pytest.approx(10 * R12 * 8760)
    assert plan.cost["on_demand"] == pytest.approx(10 * OD * 365 * DAY)
    fleet = plan.fleet.set_index("period")["reserved_owned"]
    assert fleet[pd.Timestamp("2027-12-31")] == 10 and fleet[pd.Timestamp("2028-01-01")] == 0


def test_within_one_term_once_keeps_the_screening_curve_optimum_and_monthly_is_the_brute_force_ladder(tmp_path):
    """90 days, shorter than every term. Bought once: the screening curve's optimum (reserve k GPUs of the
    cheapest term, the rest on-demand), found by enumerating k. Bought monthly: k0 on Jan 1, k1 more on
    Feb 1, k2 more on Mar 1, each paying r36 for its hours in the horizon; enumerated over 31^3 ladders."""
    rng = np.random.default_rng(3)
    demand = np.round(rng.uniform(5, 30, 90), 1)
    once = make_plan(load_inputs(_ladder_case(tmp_path / "once", list(demand), PRICES, every="once")), mip_gap=0.0)
    costs = [k * R36 * 90 * DAY + OD * DAY * np.clip(demand - k, 0, None).sum() for k in range(0, 31)]
    assert once.cost["total"] == pytest.approx(min(costs), rel=1e-9)
    monthly = make_plan(load_inputs(_ladder_case(tmp_path / "m", list(demand), PRICES, every="month")), mip_gap=0.0)
    month = pd.date_range("2027-01-01", periods=90, freq="D").month.to_numpy() - 1  # 0, 1, 2
    k = np.arange(31)
    k0, k1, k2 = np.meshgrid(k, k, k, indexing="ij")
    owned = np.stack([k0, k0 + k1, k0 + k1 + k2])  # (3, 31, 31, 31) GPUs in each month
    total = np.zeros(k0.shape)
    for t, d in enumerate(demand):
        n = owned[month[t]]
        total += DAY * (R36 * n + OD * np.clip(d - n, 0, None))
    assert monthly.cost["total"] == pytest.approx(total.min(), rel=1e-9)
    assert monthly.cost["total"] <= once.cost["total"] + 1e-6


def test_cash_schedule_adds_up_to_the_full_term_liability_by_calendar_month(tmp_path):
    n = 3 * 365
    step = _days("2027-01-01", "2027-07-01")
    prices = [price("A", "r", "on_demand", OD),
              price("A", "r", "reserved_3y", 0.5, upfront_usd=0.5 * 36 * 730, term_months=36)]
    plan = make_plan(load_inputs(_ladder_case(tmp_path, [10.0] * step + [25.0] * (n - step), prices)),
                     mip_gap=0.0)
    cash = plan.cash_schedule
    assert cash["month"].iloc[0] == "2027-01" and cash["month"].iloc[-1] == "2030-06"  # the July tranche ends mid-2030
    assert (cash["upfront_usd"] + cash["reserved_recurring_usd"]).sum() == pytest.approx(
        plan.commitments["reserved_full_term_usd"])
    up = cash.set_index("month")["upfront_usd"]
    assert up["2027-01"] == pytest.approx(10 * 0.5 * 36 * 730) and up["2027-07"] == pytest.approx(15 * 0.5 * 36 * 730)
    rec = cash.set_index("month")["reserved_recurring_usd"]
    assert rec["2027-02"] == pytest.approx(10 * 0.5 * 28 * 24)  # real hours of February
    assert rec["2027-08"] == pytest.approx(25 * 0.5 * 31 * 24)


def test_a_price_valid_from_a_date_applies_to_purchases_from_that_date(tmp_path):
    """The 3-year price falls from 1.0 to 0.6 on 2027-07-01: the July tranche is at 0.6, January's keeps 1.0."""
    n = 3 * 365
    step = _days("2027-01-01", "2027-07-01")
    prices = PRICES + [price("A", "r", "reserved_3y", 0.6, term_months=36, valid_from="2027-07-01")]
    plan = make_plan(load_inputs(_ladder_case(tmp_path, [10.0] * step + [25.0] * (n - step), prices)),
                     mip_gap=0.0)
    b = plan.purchases[plan.purchases["instances"] > 0].set_index("purchase_date")
    assert b.loc[pd.Timestamp("2027-01-01"), "hourly_usd"] == 1.0
    assert b.loc[pd.Timestamp("2027-07-01"), "hourly_usd"] == 0.6


def test_lead_time_delays_use_and_residual_lowers_the_cost(tmp_path):
    """Owned hardware: bought now, usable after 3 months, 36-month life, capex 20,000 with 2,000 left at the end."""
    prices = [price("A", "r", "on_demand", OD),
              price("A", "r", "reserved_own", 0.3, upfront_usd=20000.0, term_months=36, lead_time_months=3,
                    residual_usd=2000.0)]
    plan = make_plan(load_inputs(_ladder_case(tmp_path, [10.0] * (3 * 365), prices, every="once")), mip_gap=0.0)
    row = plan.purchases.iloc[0]
    assert row["active_from"] == pd.Timestamp("2027-01-01") + pd.Timedelta(hours=3 * 730)
    assert row["effective_usd_per_gpu_hour"] == pytest.approx(0.3 + 18000.0 / (36 * 730))
    fleet = plan.fleet.set_index("period")["reserved_owned"]
    assert fleet.iloc[0] == 0 and fleet.iloc[-1] == row["gpus"] > 0
    assert row["commitment_usd"] == pytest.approx(row["gpus"] * (0.3 * 36 * 730 + 18000.0))


def test_plan_json_carries_dates_commitments_and_cash(tmp_path):
    n = 2 * 365
    m = _ladder_case(tmp_path, [10.0] * 200 + [20.0] * (n - 200), PRICES, every="quarter")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "plan.json").read_text())
    bought = [p for p in doc["reserved_purchases"] if p["instances"] > 0]
    assert {p["purchase_date"] for p in bought} <= {"2027-01-01", "2027-04-01", "2027-07-01", "2027-10-01",
                                                    "2028-01-01", "2028-04-01", "2028-07-01", "2028-10-01"}
    assert all({"end_date", "firm", "upfront_usd", "monthly_recurring_usd", "term_months"} <= set(p) for p in bought)
    assert set(doc["commitments"]) >= {"accounting", "reserved_amortised_usd", "reserved_full_term_usd",
                                       "liability_past_horizon_usd"}
    cash = doc["cash_schedule"]
    assert sum(c["upfront_usd"] + c["reserved_recurring_usd"] for c in cash) == pytest.approx(
        doc["commitments"]["reserved_full_term_usd"])
    assert "expect to buy" in r.output or all(p["firm"] for p in bought)


@pytest.mark.parametrize("table,needle", [
    ('[commitments]\npurchase_every = "weekly"\n', "unknown 'commitments.purchase_every'"),
    ('[commitments]\naccounting = "cash"\n', "unknown 'commitments.accounting'"),
    ('[commitments]\npurchase_every = "month"\npurchase_until = "2031-01-01"\n', "outside the horizon"),
    ('[commitments]\npurchase_until = "not a date"\n', "is not a date"),
])
def test_bad_commitments_exit_2_naming_the_key(tmp_path, table, needle):
    m = write_case(tmp_path, {"a": [1.0] * 30}, PRICES, {"a": {}}, hours=DAY, start="2027-01-01", extra_top=table)
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2, r.output
    assert needle in r.output and "model.toml" in r.output
    assert not (tmp_path / "out").exists()


def test_overlapping_valid_from_exits_2_naming_the_row(tmp_path):
    prices = PRICES + [price("A", "r", "reserved_3y", 0.6, term_months=36, valid_from="2027-03-01"),
                       price("A", "r", "reserved_3y", 0.5, term_months=36, valid_from="2027-03-01")]
    m = write_case(tmp_path, {"a": [1.0] * 30}, prices, {"a": {}}, hours=DAY, start="2027-01-01")
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2
    assert "valid_from overlaps" in r.output and "row 6" in r.output and "'valid_from'" in r.output


@pytest.fixture(scope="module")
def ladder_books(tmp_path_factory):
    """The quarterly ladder of the test below planned by `planner plan` in both accountings, and both workbooks
    recomputed by LibreOffice in one start (each start is 2-4 s): {accounting: (output folder, recomputed copy)}.
    Planned with --no-memo: the memo (its downside re-solves, 6 of each plan's 11 s) feeds neither the Cash flow
    sheet nor the totals the test checks. Shared: never edit what it returns."""
    from conftest import soffice
    from test_workbook import recalc_many

    if soffice() is None:
        pytest.skip("LibreOffice (soffice) not installed")
    n = 2 * 365
    prices = PRICES + [price("A", "r", "reserved_3y", 0.7, term_months=36, valid_from="2027-04-01"),
                       price("A", "r", "reserved_own", 0.2, upfront_usd=15000.0, term_months=36,
                             lead_time_months=2, residual_usd=1500.0),
                       price("A", "r", "spot", 1.2, interruptions_per_hour=0.01)]
    demand = [8.0] * 100 + [20.0] * 200 + [30.0] * (n - 300)
    outs, books = {}, []
    for accounting in ("amortised", "full_term"):
        folder = tmp_path_factory.mktemp(f"ladder-{accounting}")
        m = write_case(folder, {"a": demand, "b": [4.0] * n}, prices, {"a": {"spot": False}, "b": {"spot": True}},
                       hours=DAY, start="2027-01-01",
                       extra_top=f'[commitments]\npurchase_every = "quarter"\naccounting = "{accounting}"\n')
        out = folder / "out"
        r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(out), "--no-memo"])
        assert r.exit_code == 0, r.output
        outs[accounting] = out
        books.append(folder / f"{accounting}.xlsx")  # (a name of its own: books recomputed together need distinct names)
        books[-1].write_bytes((out / "plan.xlsx").read_bytes())
    return {a: (out, again) for (a, out), again in zip(outs.items(), recalc_many(books, tmp_path_factory.mktemp("lo")))}


@pytest.mark.slow
@pytest.mark.libreoffice
@pytest.mark.parametrize("accounting", ["amortised", "full_term"])
def test_workbook_recomputed_by_libreoffice_equals_plan_json_cash_and_totals(ladder_books, accounting):
    """A quarterly ladder with a dated price and owned hardware (lead time, residual), both accountings:
    LibreOffice recomputes the Cash flow sheet and the totals from Prices; they equal plan.json."""
    from openpyxl import load_workbook

    from test_workbook import named_values

    out, again = ladder_books[accounting]  # (both accountings planned, and recomputed in one LibreOffice start)
    doc = json.loads((out / "plan.json").read_text())
    assert doc["commitments"]["accounting"] == accounting
    assert len({p["purchase_date"] for p in doc["reserved_purchases"] if p["instances"] > 0}) >= 2
    got = named_values(again)
    assert got["total_cost_usd"] == pytest.approx(doc["cost_usd"]["total"], abs=0.01)
    assert got["reserved_cost_usd"] == pytest.approx(doc["cost_usd"]["reserved"], abs=0.01)
    wb = load_workbook(again, data_only=True, read_only=True)  # (read-only: one sheet of it)
    rows = [[c.value for c in row[:6]] for row in wb["Cash flow"].iter_rows(min_row=2)]
    wb.close()
    cash = doc["cash_schedule"]
    assert [f"{r[0]:%Y-%m}" for r in rows] == [c["month"] for c in cash]  # real dates, shown as months
    for got_row, want in zip(rows, cash):
        for j, key in enumerate(("upfront_usd", "reserved_recurring_usd", "on_demand_usd", "spot_usd", "total_usd")):
            assert got_row[j + 1] == pytest.approx(want[key], abs=0.01), (want["month"], key)


def test_a_term_ending_inside_a_long_period_counts_only_its_share(tmp_path):
    """Daily periods, a 6-month term (182.5 days): it holds its GPUs for half of day 183, so the amortised cost
    never exceeds the full-term liability and the liability past the horizon is never negative."""
    prices = [price("A", "r", "on_demand", OD), price("A", "r", "reserved_6m", R12, term_months=6)]
    plan = make_plan(load_inputs(_ladder_case(tmp_path, [10.0] * 365, prices, every="once")), mip_gap=0.0)
    row = plan.purchases.iloc[0]
    assert row["instances"] == 10 and row["hours_active"] == pytest.approx(6 * 730)
    assert plan.commitments["reserved_amortised_usd"] == pytest.approx(plan.commitments["reserved_full_term_usd"])
    assert plan.commitments["liability_past_horizon_usd"] == pytest.approx(0.0, abs=1e-6)
    # day 183 (index 182): half a day of reserved GPUs, the other half on demand
    assert plan.cost["on_demand"] == pytest.approx(10 * OD * (365 * DAY - 6 * 730), rel=1e-9)


def test_the_residual_value_comes_back_when_the_term_ends(tmp_path):
    prices = [price("A", "r", "on_demand", OD),
              price("A", "r", "reserved_own", 0.3, upfront_usd=20000.0, term_months=12, residual_usd=5000.0)]
    plan = make_plan(load_inputs(_ladder_case(tmp_path, [10.0] * 365, prices, every="once")), mip_gap=0.0)
    gpus = plan.purchases.iloc[0]["gpus"]
    up = plan.cash_schedule.set_index("month")["upfront_usd"]
    assert up["2027-01"] == pytest.approx(gpus * 20000.0)  # the whole capex on the purchase date
    assert up["2027-12"] == pytest.approx(-gpus * 5000.0)  # term ends 2027-12-27: the resale value back
    cash = plan.cash_schedule
    assert (cash["upfront_usd"] + cash["reserved_recurring_usd"]).sum() == pytest.approx(
        plan.commitments["reserved_full_term_usd"])


def test_benders_at_a_zero_gap_proves_optimality(tmp_path):
    from dataclasses import replace

    n = 2 * 365
    inp = load_inputs(_ladder_case(tmp_path, [10.0] * 200 + [20.0] * (n - 200), PRICES, every="quarter"))
    mono = make_plan(inp, mip_gap=0.0)
    bend = make_plan(replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method="benders"))),
                     mip_gap=0.0, time_limit_s=60)
    assert bend.status.value == "optimal" and "Benders" in bend.solve.message
    assert bend.objective == pytest.approx(mono.objective, rel=1e-9)


def test_a_terms_hours_in_the_horizons_gaps_are_not_after_its_end(tmp_path):
    # 2 GPUs in four 1-hour periods with a gap from 02:00 to 10:00 (8 hours without a period). A 1-year term at 4 USD/h
    # (on-demand 10) is bought: 2 x 4 x 4 = 32 USD in the horizon's hours, 2 x 4 x 8 = 64 USD in its gap (before the
    # horizon ends: not "after the forecast ends"), the rest of 2 x 4 x 12 x 730 = 70,080 USD after it
    import pandas as pd

    from planner.pipeline.run import load_inputs, make_plan

    m = write_case(tmp_path, {"a": [2, 2, 2, 2]}, [price(hourly=10.0), price(option="reserved_1y", hourly=4.0,
                                                                              term_months=12)],
                   {"a": {}}, extra_top='[term]\njudge = "horizon"')
    pd.DataFrame({"period": ["2027-01-04T00:00", "2027-01-04T01:00", "2027-01-04T10:00", "2027-01-04T11:00"],
                  "workload_class": "a", "gpus": 2.0, "hours": 1.0}).to_csv(tmp_path / "demand.csv", index=False)
    plan = make_plan(load_inputs(m), risk=False)
    c = plan.commitments
    assert float(plan.purchases["gpus"].sum()) == pytest.approx(2.0)
    assert c["reserved_amortised_usd"] == pytest.approx(32.0)
    assert c["liability_in_gaps_usd"] == pytest.approx(64.0)
    assert c["liability_past_horizon_usd"] == pytest.approx(70_080.0 - 32.0)  # full term less amortised, as before
    text = plan.summary()
    assert "of which $69,984 falls after the horizon ends and $64 in the horizon's gaps" in text
    assert "($69,984 of $70,080) is owed after the forecast ends" in text
