"""Hand-solvable tiny cases, one per constraint family, solved for real on every installed solver.

Each expected value is worked out in the comment beside it.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import price, solve_case, write_case


def used(plan, option, **where):
    a = plan.allocation
    a = a[a["option"] == option]
    for k, v in where.items():
        a = a[a[k] == v]
    return float(a["gpus"].sum())


def test_headroom(tmp_path, backend):
    # d = 10 with 20 % headroom, on-demand only at 2 $/h: 12 GPUs, 24 $.
    m = write_case(tmp_path, {"c": [10]}, [price(hourly=2.0)], {"c": {"headroom": 0.2}})
    plan = solve_case(m, backend)
    assert plan.status.value == "optimal"
    assert used(plan, "on_demand") == pytest.approx(12)
    assert plan.cost["total"] == pytest.approx(24)


def test_spot_share(tmp_path, backend):
    # spot 1 $/h with goodput 1, on-demand 3 $/h, at most half on spot: 5 spot + 5 on-demand = 20 $.
    m = write_case(tmp_path, {"c": [10]},
                   [price(hourly=3.0), price(option="spot", hourly=1.0, interruptions_per_hour=0.1)],
                   {"c": {"spot": True, "max_spot_share": 0.5, "spot_goodput": 1.0}})
    plan = solve_case(m, backend)
    assert used(plan, "spot") == pytest.approx(5)
    assert used(plan, "on_demand") == pytest.approx(5)
    assert plan.cost["total"] == pytest.approx(20)


def test_spot_goodput_buys_more_gpus(tmp_path, backend):
    # goodput 0.8: 10 useful GPUs need 12.5 spot GPUs at 1 $/h = 12.5 $ (< 10 x 3 $ on-demand).
    m = write_case(tmp_path, {"c": [10]},
                   [price(hourly=3.0), price(option="spot", hourly=1.0, interruptions_per_hour=0.1)],
                   {"c": {"spot": True, "spot_goodput": 0.8}})
    plan = solve_case(m, backend)
    assert used(plan, "spot") == pytest.approx(12.5)
    assert plan.cost["spot"] == pytest.approx(12.5)


def test_spot_not_allowed(tmp_path, backend):
    # spot = false: cheap spot is ignored, 10 on-demand at 3 $/h.
    m = write_case(tmp_path, {"c": [10]},
                   [price(hourly=3.0), price(option="spot", hourly=0.5, interruptions_per_hour=0.0)],
                   {"c": {"spot": False}})
    plan = solve_case(m, backend)
    assert used(plan, "spot") == 0
    assert plan.cost["total"] == pytest.approx(30)


def test_speeds(tmp_path, backend):
    # type B is twice as fast at 5 $/h: 2.5 $ per reference GPU-hour beats A's 3 $: 5 B GPUs = 25 $.
    m = write_case(tmp_path, {"c": [10]}, [price("A", hourly=3.0), price("B", hourly=5.0)],
                   {"c": {"gpu_types": {"A": 1.0, "B": 2.0}}})
    plan = solve_case(m, backend)
    assert used(plan, "on_demand", gpu_type="B") == pytest.approx(5)
    assert plan.cost["total"] == pytest.approx(25)


def test_regions(tmp_path, backend):
    # r2 is cheaper but not allowed: 10 GPUs in r1 at 3 $/h.
    m = write_case(tmp_path, {"c": [10]}, [price(region="r1", hourly=3.0), price(region="r2", hourly=1.0)],
                   {"c": {"regions": ["r1"]}})
    plan = solve_case(m, backend)
    assert used(plan, "on_demand", region="r2") == 0
    assert plan.cost["total"] == pytest.approx(30)


def test_on_demand_cap(tmp_path, backend):
    # cheap pool capped at 4 GPUs: 4 x 1 + 6 x 2 = 16 $.
    m = write_case(tmp_path, {"c": [10]}, [price("A", hourly=1.0, max_gpus=4), price("B", hourly=2.0)], {"c": {}})
    plan = solve_case(m, backend)
    assert used(plan, "on_demand", gpu_type="A") == pytest.approx(4)
    assert plan.cost["total"] == pytest.approx(16)


def test_spot_cap(tmp_path, backend):
    # spot capped at 3: 3 x 1 + 7 x 2 = 17 $.
    m = write_case(tmp_path, {"c": [10]},
                   [price(hourly=2.0), price(option="spot", hourly=1.0, max_gpus=3, interruptions_per_hour=0.0)],
                   {"c": {"spot": True}})
    plan = solve_case(m, backend)
    assert used(plan, "spot") == pytest.approx(3)
    assert plan.cost["total"] == pytest.approx(17)


def test_reserved_cap(tmp_path, backend):
    # reserved 0.5 $/h capped at 4 GPUs over 2 periods: 4 x 0.5 x 2 + 6 x 2 x 2 = 28 $.
    m = write_case(tmp_path, {"c": [10, 10]},
                   [price(hourly=2.0), price(option="reserved_1y", hourly=0.5, max_gpus=4)], {"c": {}})
    plan = solve_case(m, backend)
    assert int(plan.purchases["instances"].sum()) == 4
    assert plan.cost["total"] == pytest.approx(28)


def test_inventory_is_used_and_not_charged(tmp_path, backend):
    # 6 GPUs already owned: 4 on-demand at 2 $/h per period, 2 periods = 16 $; nothing bought.
    m = write_case(tmp_path, {"c": [10, 10]},
                   [price(hourly=2.0), price(option="reserved_1y", hourly=2.5)], {"c": {}},
                   inventory=[{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 6,
                               "start": "2026-01-01T00:00", "end": "2028-01-01T00:00"}])
    plan = solve_case(m, backend)
    assert int(plan.purchases["instances"].sum()) == 0
    assert used(plan, "reserved") == pytest.approx(12)  # 6 in each of 2 periods
    assert plan.cost["total"] == pytest.approx(16)


def test_inventory_partial_period_and_expiry(tmp_path, backend):
    # 8 GPUs owned until 01:30 of a 3-period horizon: 8, then 4 (half the period), then 0 available.
    m = write_case(tmp_path, {"c": [10, 10, 10]}, [price(hourly=1.0)], {"c": {}},
                   inventory=[{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 8,
                               "start": "2026-01-01T00:00", "end": "2027-01-04T01:30"}])
    plan = solve_case(m, backend)
    assert plan.cost["on_demand"] == pytest.approx(2 + 6 + 10)


def test_cheaper_of_two_terms(tmp_path, backend):
    # 1y at 1.0 $/h vs 3y at 0.5 $/h + 8760 $ upfront (= 0.5 + 8760/26280 = 0.8333 $/h): the 3y wins.
    m = write_case(tmp_path, {"c": [10] * 4},
                   [price(hourly=2.0), price(option="reserved_1y", hourly=1.0),
                    price(option="reserved_3y", hourly=0.5, upfront_usd=8760)], {"c": {}})
    plan = solve_case(m, backend)
    bought = plan.purchases.set_index("option")["instances"]
    assert bought["reserved_3y"] == 10 and bought["reserved_1y"] == 0
    assert plan.cost["reserved"] == pytest.approx(10 * (0.5 + 8760 / 26280) * 4)
    commitment = plan.purchases.set_index("option").loc["reserved_3y", "commitment_usd"]
    assert commitment == pytest.approx(10 * (0.5 * 36 * 730 + 8760))


@pytest.mark.parametrize("demand,instances,cost", [(13, 2, 16.0), (10, 1, 12.0)])
def test_instance_granularity(tmp_path, backend, demand, instances, cost):
    # 8-GPU instances at 1 $/GPU-h vs on-demand 2 $/GPU-h, per period:
    # d=13: one instance 8 + 5x2 = 18, two instances 16 -> 2; d=10: one 8 + 2x2 = 12, two 16 -> 1.
    m = write_case(tmp_path, {"c": [demand] * 3},
                   [price(hourly=2.0, gpus_per_instance=8),
                    price(option="reserved_1y", hourly=1.0, gpus_per_instance=8)], {"c": {}})
    plan = solve_case(m, backend)
    assert int(plan.purchases["instances"].sum()) == instances
    assert plan.cost["total"] == pytest.approx(cost * 3)


def test_reserved_shared_across_classes(tmp_path, backend):
    # two classes peak at different times: 10 reserved GPUs serve both (r=1 vs od=3 each hour).
    m = write_case(tmp_path, {"a": [10, 0], "b": [0, 10]},
                   [price(hourly=3.0), price(option="reserved_1y", hourly=1.0)], {"a": {}, "b": {}})
    plan = solve_case(m, backend)
    assert int(plan.purchases["instances"].sum()) == 10
    assert plan.cost["total"] == pytest.approx(20)


def test_shortfall_reported_with_its_cause(tmp_path, backend):
    # the only option is capped at 5: 5 GPUs of demand unmet in each of 2 periods.
    m = write_case(tmp_path, {"c": [10, 10]}, [price(hourly=1.0, max_gpus=5)], {"c": {}})
    plan = solve_case(m, backend)
    assert plan.status.value == "optimal"
    assert plan.shortfall_gpu_hours == pytest.approx(10)
    assert not plan.demand_met
    assert len(plan.shortfall) == 2
    assert "on-demand cap 5 of A/r1 reached" in plan.shortfall["cause"].iloc[0]
    assert plan.objective == pytest.approx(plan.cost["total"] + plan.inputs.penalty * 10)
    assert plan.inputs.penalty == pytest.approx(10.0)  # 10 x the highest on-demand price


def test_hours_column_weights_periods(tmp_path, backend):
    # a 2-hour period costs twice: d=[4 (1 h), 4 (2 h)] on-demand 1 $/h -> 12 $.
    m = write_case(tmp_path, {"c": [4, 4]}, [price(hourly=1.0)], {"c": {}})
    demand = (tmp_path / "demand.csv").read_text().splitlines()
    rows = [demand[0] + ",hours", demand[1] + ",1", demand[2] + ",2"]
    (tmp_path / "demand.csv").write_text("\n".join(rows) + "\n")
    plan = solve_case(m, backend)
    assert plan.inputs.horizon_hours == 3
    assert plan.cost["total"] == pytest.approx(12)


def test_merging_identical_periods_is_exact(tmp_path):
    rng = np.random.default_rng(7)
    d = rng.choice([0.0, 3.0, 7.5, 12.0], size=40).tolist()
    prices = [price(hourly=2.0), price(option="reserved_1y", hourly=0.9),
              price(option="spot", hourly=0.7, interruptions_per_hour=0.05)]
    m1 = write_case(tmp_path / "a", {"c": d, "e": d[::-1]}, prices,
                    {"c": {"spot": True, "max_spot_share": 0.5}, "e": {"headroom": 0.1}})
    m2 = write_case(tmp_path / "b", {"c": d, "e": d[::-1]}, prices,
                    {"c": {"spot": True, "max_spot_share": 0.5}, "e": {"headroom": 0.1}},
                    solver={"merge_periods": False})
    p1, p2 = solve_case(m1), solve_case(m2)
    assert p1.stats["blocks"] < p2.stats["blocks"] == 40
    assert p1.cost["total"] == pytest.approx(p2.cost["total"], rel=1e-9)


def test_reserved_cap_counts_inventory_owned_at_once_not_in_total(tmp_path, backend):
    # two back-to-back commitments of 10 GPUs (never 20 at once) under a reserved cap of 15:
    # valid; 2 more reserved GPUs at 1 $/h cover demand 12 for 4 hours: 8 $.
    m = write_case(tmp_path, {"c": [12] * 4},
                   [price(hourly=10.0), price(option="reserved_1y", hourly=1.0, max_gpus=15)], {"c": {}},
                   inventory=[{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 10,
                               "start": "2027-01-04T00:00", "end": "2027-01-04T02:00"},
                              {"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 10,
                               "start": "2027-01-04T02:00", "end": "2027-01-04T04:00"}])
    plan = solve_case(m, backend)
    assert int(plan.purchases["instances"].sum()) == 2
    assert plan.cost["total"] == pytest.approx(8)
