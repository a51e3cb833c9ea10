"""plan.json ``monthly_usage``: its money against the bill, under both accountings (docs/workbook.md)."""

from __future__ import annotations

import json

import pytest

from conftest import price, solve_case, write_case


@pytest.mark.parametrize("accounting", ["amortised", "full_term"])
def test_monthly_usage_adds_up_to_the_bill_less_the_liability_past_the_horizon(tmp_path, accounting):
    from planner.report import plan_json

    hours = 24 * 40  # crosses a month end; a 12-month term runs far past the horizon
    a = [10.0 + 6.0 * ((t // 7) % 3) for t in range(hours)]
    m = write_case(tmp_path / "m", {"a": a, "b": [3.0 + (t % 5) for t in range(hours)]},
                   [price("A", "r1", hourly=4.0, gpus_per_instance=2),
                    price("A", "r1", option="reserved_1y", hourly=0.05, upfront_usd=100.0, term_months=12,
                          gpus_per_instance=2),
                    price("A", "r1", option="spot", hourly=1.0, interruptions_per_hour=0.01, max_gpus=4,
                          gpus_per_instance=2),
                    price("B", "r2", hourly=3.0)],
                   {"a": {}, "b": {"spot": False}}, start="2027-01-15T00:00",
                   inventory=[{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 4,
                               "start": "2026-06-01T00:00", "end": "2027-02-01T00:00"}],
                   extra_top=f'[commitments]\naccounting = "{accounting}"\n[term]\njudge = "horizon"')
    d = json.loads(plan_json(solve_case(m)))
    assert d["commitments"]["accounting"] == accounting
    money = sum(v for r in d["monthly_usage"] for k, v in r.items() if k.endswith("_usd"))
    liability = d["commitments"]["liability_past_horizon_usd"]
    assert liability > 1000.0  # a year's term, cheap enough to buy for 40 days: most of it owed after them
    past = liability if accounting == "full_term" else 0.0  # the bill counts the whole liability under full_term
    assert money + past == pytest.approx(d["bill_usd"]["total_usd"], rel=1e-9)


def test_monthly_usage_leaves_the_savings_plans_commitment_to_spend_commitments(tmp_path):
    """A savings plan is a dollar commitment, not a pool's: its fee is in the bill and in plan.json
    spend_commitments, not in a pool's month (the months add up to the bill less it)."""
    from planner.report import plan_json

    m = write_case(tmp_path / "m", {"a": [10.0] * 48, "b": [10.0] * 48},
                   [price("A", "r1", hourly=4.0), price("A", "r1", option="savings_plan_1y", hourly=1.0),
                    price("B", "r1", hourly=3.0), price("B", "r1", option="savings_plan_1y", hourly=1.0)],
                   {"a": {"gpu_types": {"A": 1.0}}, "b": {"gpu_types": {"B": 1.0}}},
                   extra_top='[term]\njudge = "horizon"')
    d = json.loads(plan_json(solve_case(m)))
    fees = sum(r["committed_usd"] for r in d["spend_commitments"])
    assert fees > 0  # a savings plan was bought
    money = sum(v for r in d["monthly_usage"] for k, v in r.items() if k.endswith("_usd"))
    assert money + fees == pytest.approx(d["bill_usd"]["total_usd"], rel=1e-9)
