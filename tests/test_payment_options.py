"""Payment options and the cost of capital (issue 24): [finance] discount_rate and objective = "npv".

Oracles are written here independently of planner.inputs.finance: a calendar walk of the month-by-month cash
of a 1-year term, its discounting by (1 + r) ** (-m / 12), and the rate at which all upfront stops
paying found by bisection.
"""

from __future__ import annotations

import calendar
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner import load_inputs, make_plan
from planner.cli import cli
from planner.pipeline.run import write_outputs
from conftest import price, solve_case, write_case
from test_workbook import named_values, needs_lo, recalc_many

UPFRONT = 8000.0  # all upfront, per GPU for a year, against 1.00/h x 8,760 h = 8,760 with no upfront
PRICES = [price(hourly=2.0), price(option="reserved_1y_no_upfront", hourly=1.0, term_months=12),
          price(option="reserved_1y_all_upfront", hourly=0.0, upfront_usd=UPFRONT, term_months=12),
          price(option="reserved_1y_partial", hourly=0.5, upfront_usd=4200.0, term_months=12)]


def case(folder: Path, rate: float, objective: str = "npv", accounting: str = "amortised") -> Path:
    return write_case(folder, {"c": [10.0] * 24}, PRICES, {"c": {}},
                      extra_top=f'[finance]\ndiscount_rate = {rate}\nobjective = "{objective}"\n'
                                f'[commitments]\naccounting = "{accounting}"')


def no_upfront_npv_by_hand(rate: float, hourly: float = 1.0) -> float:
    """One GPU bought 2027-01-04T00:00 for 8,760 h: each calendar month's hours of the term, discounted."""
    hours_left, total, m = 8760.0, 0.0, 0
    year, month, day = 2027, 1, 4
    while hours_left > 0:
        days = calendar.monthrange(year, month)[1] - (day - 1)
        h = min(days * 24.0, hours_left)
        total += hourly * h * (1 + rate) ** (-m / 12)
        hours_left -= h
        m, day = m + 1, 1
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return total


def chosen(plan) -> str:
    b = plan.purchases[plan.purchases["gpus"] > 0]
    assert len(b) == 1 and b["gpus"].iat[0] == 10
    return b["option"].iat[0]


def test_at_zero_all_upfront_wins_because_it_is_cheaper_in_sum(tmp_path):
    plan = solve_case(case(tmp_path, 0.0))
    assert chosen(plan) == "reserved_1y_all_upfront"
    po = plan.payment_options.set_index("option")
    assert po.loc["reserved_1y_no_upfront", "npv_usd"] == pytest.approx(10 * 8760.0)
    assert po.loc["reserved_1y_partial", "npv_usd"] == pytest.approx(10 * (4200 + 0.5 * 8760))
    assert po.loc["reserved_1y_all_upfront", "chosen"]


def test_npv_at_zero_is_the_cost_objective(tmp_path):
    for accounting in ("amortised", "full_term"):
        a = solve_case(case(tmp_path / f"npv-{accounting}", 0.0, "npv", accounting))
        b = solve_case(case(tmp_path / f"cost-{accounting}", 0.0, "cost", accounting))
        assert a.cost == pytest.approx(b.cost)
        assert list(a.purchases["instances"]) == list(b.purchases["instances"])


def implied_rate() -> float:
    """The annual rate at which paying 8,000 now equals 1.00/h over the year (bisection on the hand NPV)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if no_upfront_npv_by_hand(mid) > UPFRONT else (lo, mid)
    return (lo + hi) / 2


def test_above_the_implied_interest_of_the_upfront_discount_no_upfront_wins(tmp_path):
    r = implied_rate()
    assert 0.18 < r < 0.22  # 8,000 against 8,760 a year: about 20 %
    below = solve_case(case(tmp_path / "below", round(r - 0.01, 4)))
    above = solve_case(case(tmp_path / "above", round(r + 0.01, 4)))
    assert chosen(below) == "reserved_1y_all_upfront"
    assert chosen(above) == "reserved_1y_no_upfront"
    po = above.payment_options.set_index("option")
    assert po.loc["reserved_1y_no_upfront", "npv_usd"] == pytest.approx(10 * no_upfront_npv_by_hand(round(r + 0.01, 4)),
                                                                       rel=1e-12)
    assert po.loc["reserved_1y_all_upfront", "npv_usd"] == pytest.approx(10 * UPFRONT)


@pytest.mark.parametrize("rate", [0.05, 0.10])
def test_plan_npv_is_the_discounted_cash_schedule(tmp_path, rate):
    plan = solve_case(case(tmp_path, rate, objective="cost"))
    cash = plan.cash_schedule
    m = range(len(cash))
    assert plan.finance["npv_usd"] == pytest.approx(sum(float(t) * (1 + rate) ** (-i / 12)
                                                        for i, t in zip(m, cash["total_usd"])))
    paths = write_outputs(plan, tmp_path / "out")
    doc = json.loads(paths["json"].read_text())
    assert doc["npv_usd"] == pytest.approx(plan.finance["npv_usd"])
    assert doc["finance"] == {"discount_rate": rate, "objective": "cost", "npv_usd": pytest.approx(doc["npv_usd"])}
    assert {p["option"] for p in doc["payment_options"]} == {"reserved_1y_no_upfront", "reserved_1y_all_upfront",
                                                             "reserved_1y_partial"}
    r = CliRunner().invoke(cli, ["plan", str(tmp_path / "model.toml"), "--out", str(tmp_path / "o2")])
    assert "payment options for A/r1 2027-01-04, NPV at" in r.output and "NPV of the cash" in r.output


def test_npv_objective_through_benders_equals_the_monolithic_model(tmp_path):
    demand = [10.0] * (24 * 45) + [20.0] * (24 * 45)
    top = ('[finance]\ndiscount_rate = 0.3\nobjective = "npv"\n[commitments]\npurchase_every = "month"\n')
    plans = {}
    for method in ("monolithic", "benders"):
        m = write_case(tmp_path / method, {"c": demand}, PRICES, {"c": {}}, extra_top=top,
                       solver={"method": method})
        plans[method] = make_plan(load_inputs(m), mip_gap=1e-9)
    assert "benders" in plans["benders"].stats
    a, b = plans["monolithic"], plans["benders"]
    assert b.finance["npv_usd"] == pytest.approx(a.finance["npv_usd"], rel=1e-6)
    assert b.cost["total"] == pytest.approx(a.cost["total"], rel=1e-6)


@pytest.mark.parametrize("text,message", [
    ("discount_rate = 0.8", "'finance.discount_rate' out of range (got 0.8)"),
    ('objective = "profit"', "unknown 'finance.objective' (got 'profit')"),
    ('discount_rate = "8%"', "finance.discount_rate"),
    ("discount = 0.08", "unknown key 'finance.discount'"),
])
def test_bad_finance_keys_exit_2(tmp_path, text, message):
    m = write_case(tmp_path, {"c": [1.0]}, [price(hourly=1.0)], {"c": {}}, extra_top=f"[finance]\n{text}")
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2 and message in r.output, r.output


@pytest.mark.parametrize("rate, reserved", [(0.08, 1.02), (0.5, 1.10), (0.2, 1.001)])
def test_a_commitment_dearer_than_on_demand_every_hour_is_never_bought_under_amortised_npv(tmp_path, rate,
                                                                                           reserved):
    m = write_case(tmp_path, {"c": [10.0] * 2160}, [price(hourly=1.0), price(option="reserved_1y", hourly=reserved,
                                                                             term_months=12)],
                   {"c": {}}, extra_top=f'[finance]\ndiscount_rate = {rate}\nobjective = "npv"')
    plan = solve_case(m)
    assert plan.purchases["instances"].sum() == 0
    assert plan.cost["total"] == pytest.approx(10 * 2160 * 1.0)


def test_amortised_npv_charges_the_level_rate_of_the_whole_term_by_hand(tmp_path):
    # all upfront 8,000 a GPU for the year: its level rate at r is 8,000 / (discounted hours of the year); the
    # plan's objective is that rate x the horizon's discounted hours, below no upfront's 1.00/h at 25 %?
    rate = 0.25
    plan = solve_case(case(tmp_path, rate))
    level_all = UPFRONT / no_upfront_npv_by_hand(rate)  # discounted hours of the year = NPV of 1.00/h
    assert level_all > 1.0  # at 25 % paying 8,000 now is dearer than 1.00 an hour
    assert chosen(plan) == "reserved_1y_no_upfront"
    low = solve_case(case(tmp_path / "low", 0.05))
    assert UPFRONT / no_upfront_npv_by_hand(0.05) < 1.0 and chosen(low) == "reserved_1y_all_upfront"


@needs_lo
def test_the_workbook_rebuilds_the_npv_and_an_edited_rate_moves_it_by_hand(tmp_path):
    from openpyxl import load_workbook

    plan = solve_case(case(tmp_path, 0.30))  # at 30 % a year paying by the month wins: cash in every month of the
    # term, so the NPV moves with the rate (all upfront, the cheapest in sum, pays in month 0 only)
    assert chosen(plan) == "reserved_1y_no_upfront"
    paths = write_outputs(plan, tmp_path / "out")
    wb = load_workbook(paths["xlsx"])
    (_, cell), = list(wb.defined_names["discount_rate"].destinations)
    wb["Summary"][cell.replace("$", "")].value = 0.12
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    as_written, rate_edited = recalc_many([paths["xlsx"], edited], tmp_path)  # (both in one LibreOffice start)
    got = named_values(as_written)
    assert got["npv_usd"] == pytest.approx(plan.finance["npv_usd"], rel=1e-9)
    assert got["discount_rate"] == pytest.approx(0.30)
    again = named_values(rate_edited)
    cash = plan.cash_schedule["total_usd"].to_numpy(float)
    assert (cash[1:] > 0).sum() >= 11  # a year of monthly cash
    assert again["npv_usd"] == pytest.approx(sum(c * 1.12 ** (-i / 12) for i, c in enumerate(cash)), rel=1e-9)
    assert again["npv_usd"] > got["npv_usd"] * 1.05  # the edit moved it (less discounting: a larger NPV)
