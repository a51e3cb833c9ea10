"""Chargeback of the commitments already owned (issue 25, item 4): planner.report.showback with ``owned=True``."""

from __future__ import annotations

import pytest

from planner import load_inputs, make_plan
from planner.results.bill import bill
from planner.report.showback import UNUSED, by_class, by_month, by_team, owned_charges

from conftest import price, write_case


def owned_case(folder, demand_a, demand_b, owned_gpus=10, extra_prices=()):
    """One pool, 10 USD/h on demand, reserved_1y at 2 USD/h (the owned rows' rate), ``owned_gpus`` owned."""
    return write_case(folder, {"a": demand_a, "b": demand_b},
                      [price(hourly=10.0), price(option="reserved_1y", hourly=2.0, upfront_usd=0.0, term_months=12),
                       *extra_prices],
                      {"a": {}, "b": {}},
                      inventory=[{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": owned_gpus,
                                  "start": "2026-06-01T00:00", "end": "2028-01-01T00:00"}])


def test_owned_capacity_is_charged_pro_rata_and_the_rest_is_unused_by_hand(tmp_path):
    # 10 owned GPUs at 2 USD/h, two hours; a uses 3 and b 1: 40 USD owned, 4/10 in use -> a 12, b 4, unused 24
    plan = make_plan(load_inputs(owned_case(tmp_path, [3.0, 3.0], [1.0, 1.0])), mip_gap=0.0)
    assert plan.cost["total"] == pytest.approx(0.0)  # inventory covers it: no new decision
    c = by_class(plan, owned=True).set_index("workload_class")
    assert c.loc["a", "owned_commitments_usd"] == pytest.approx(12.0)
    assert c.loc["b", "owned_commitments_usd"] == pytest.approx(4.0)
    assert c.loc[UNUSED, "total_usd"] == pytest.approx(24.0)
    assert c["total_usd"].sum() == pytest.approx(bill(plan)["total_usd"]) == pytest.approx(40.0)
    oc = owned_charges(plan)
    assert oc["usd"].sum() == pytest.approx(bill(plan)["already_committed_usd"])


def test_owned_chargeback_adds_up_to_the_bill_with_purchases_and_on_demand(tmp_path):
    # demand above the inventory: purchases and on-demand on top; the owned GPUs are stacked first (all used)
    plan = make_plan(load_inputs(owned_case(tmp_path, [14.0, 6.0, 14.0], [4.0, 2.0, 6.0], owned_gpus=4)), mip_gap=0.0)
    full = bill(plan)["total_usd"]
    c = by_class(plan, owned=True)
    assert c["total_usd"].sum() == pytest.approx(full, rel=1e-12)
    assert c["owned_commitments_usd"].sum() == pytest.approx(bill(plan)["already_committed_usd"])
    assert UNUSED not in set(c["workload_class"])  # 4 owned GPUs, at least 8 GPUs used every hour
    t = by_team(plan, owned=True)
    assert t["total_usd"].sum() == pytest.approx(full, rel=1e-12)
    m = by_month(plan, owned=True)
    assert m["total_usd"].sum() == pytest.approx(full, rel=1e-12)
    # owned=False keeps today's showback: the new decisions only
    assert by_class(plan)["total_usd"].sum() == pytest.approx(plan.cost["total"], rel=1e-12)
    assert by_month(plan)["total_usd"].sum() == pytest.approx(plan.cost["total"], rel=1e-12)
    # pro rata per period: each hour the 4 owned GPUs (8 USD) go to the classes by their share of reserved use
    res = plan.allocation[plan.allocation["option"] == "reserved"]
    use = res.pivot_table(index="period", columns="workload_class", values="gpus", aggfunc="sum").fillna(0.0)
    assert use.iloc[0]["a"] / use.iloc[0].sum() == pytest.approx(14 / 18)
    oc = owned_charges(plan)
    assert oc[oc["_k"] == 0]["usd"].sum() == pytest.approx((8.0 * use["a"] / use.sum(axis=1)).sum())
    assert oc[oc["_k"] == 1]["usd"].sum() == pytest.approx((8.0 * use["b"] / use.sum(axis=1)).sum())


def test_the_example_chargeback_adds_up_to_the_bill(example_plan):
    plan, _ = example_plan
    b = bill(plan)
    c = by_class(plan, owned=True)
    assert c["total_usd"].sum() == pytest.approx(b["total_usd"], rel=1e-9)
    assert by_team(plan, owned=True)["total_usd"].sum() == pytest.approx(b["total_usd"], rel=1e-9)
    assert by_month(plan, owned=True)["total_usd"].sum() == pytest.approx(b["total_usd"], rel=1e-9)
    assert c.set_index("workload_class").loc[UNUSED, "total_usd"] > 0  # the A100 inventory idles some hours
