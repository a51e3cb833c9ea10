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


def test_on_a_tree_each_branchs_savings_plan_carries_its_branch_and_probability(tmp_path):
    """Daily 2027, one class: 10 GPUs to June, then 20 (p 0.3) or 4 (p 0.7); a savings plan each month. A branch's
    commitment is one entry per branch: ``branch`` and ``probability`` make the identity computable from plan.json
    alone (the months' money plus each fee times its probability is the bill); without them the fee of every branch
    counted whole."""
    import pandas as pd

    from planner.report import plan_json

    days = pd.date_range("2027-01-01", periods=365, freq="D")
    rows = [{"period": d.strftime("%Y-%m-%dT%H:%M"), "workload_class": "c", "scenario": s,
             "gpus": 10.0 if i < 181 else g} for s, g in (("up", 20.0), ("down", 4.0)) for i, d in enumerate(days)]
    m = write_case(tmp_path, {"c": [0.0]}, [price(hourly=4.0), price(option="savings_plan_1y", hourly=1.0)], {"c": {}},
                   extra_top='[commitments]\npurchase_every = "month"\n[term]\njudge = "horizon"\n'
                             '[scenarios]\nup = 0.3\ndown = 0.7')
    pd.DataFrame(rows).to_csv(tmp_path / "demand.csv", index=False)
    d = json.loads(plan_json(solve_case(m)))
    sp = d["spend_commitments"]
    branched = [r for r in sp if r["branch"] != "all"]
    assert branched and {r["probability"] for r in branched} <= {0.3, 0.7}
    assert all(r["probability"] == 1.0 for r in sp if r["branch"] == "all")
    fees = sum(r["committed_usd"] * r["probability"] for r in sp)
    money = sum(v for r in d["monthly_usage"] for k, v in r.items() if k.endswith("_usd"))
    assert money + fees == pytest.approx(d["bill_usd"]["total_usd"], rel=1e-9)
    assert money + sum(r["committed_usd"] for r in sp) > d["bill_usd"]["total_usd"] + 1.0
