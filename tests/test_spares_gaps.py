"""Issue 36 item 1, the gaps of a plan whose class asks for spares (spares_target), each hand-solved:

one class, demand 16 GPUs every hour of 4, instances of 8 GPUs, MTBF 800 h, repair 50 h, target 0.99:
2 instances, m = 16 x 50 / 800 = 1, Poisson(1): cdf(3) = 0.981 < 0.99 <= cdf(4) = 0.996: 4 spare instances = 32 GPUs.
On-demand 10 $/h, reserved 4 $/h (one GPU per reserved instance): the plan holds 16 + 32 = 48 reserved GPUs.
"""

from __future__ import annotations

import pytest

from planner.pipeline.run import with_memo
from planner.quotas.build import from_plan
from planner.quotas.run import analyse
from planner.report.quotas_report import quotas_dict
from conftest import price, solve_case, write_case

SPARES = {"spares_target": 0.99, "gpus_per_instance": 8, "gpu_mtbf_hours": 800, "repair_hours": 50}
PRICES = [price(hourly=10.0), price(option="reserved_1y", hourly=4.0)]


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    m = write_case(tmp_path_factory.mktemp("spares"), {"train": [16, 16, 16, 16]}, PRICES, {"train": dict(SPARES)})
    return solve_case(m)


def test_the_baseline_rents_the_spares_too(plan):
    # all on-demand: (16 + 32) GPUs x 4 h x 10 $ = 1,920 $ (was 640 $: the spares left out, savings -128 $)
    assert plan.cost["total"] == pytest.approx(48 * 4 * 4)
    assert plan.baseline_all_on_demand == pytest.approx(1920)
    assert plan.savings == pytest.approx(1920 - 768)


def test_utilisation_is_the_working_fleets_and_the_spares_are_reported(plan):
    # 16 GPUs of work on 48 reserved: 100 % of the working fleet (was 33.3 %: the spares counted as idle)
    assert plan.reserved_utilisation == pytest.approx(1.0)
    assert plan.spares_gpu_hours == pytest.approx(32 * 4)
    assert plan.spares_peak_gpus == pytest.approx(32)
    assert plan.fleet["reserved_spares"].tolist() == [32.0] * 4


def test_the_memo_re_solves_with_spares(tmp_path):
    """Was: 'a batch's recourse LP did not solve: Infeasible' (purchases fixed below the spares)."""
    m = write_case(tmp_path, {"train": [16, 16, 16, 16]}, PRICES, {"train": dict(SPARES)})
    p = with_memo(solve_case(m))
    assert not any("not computed" in n for n in p.notes), p.notes
    curve = p.memo.curve.set_index("factor")
    assert (curve["status"] == "optimal").all()
    # factor 0.5: 24 reserved hold 24 of the 32 spares (8 GPUs short every hour: 32 GPU-hours), the work on demand
    half = curve.loc[0.5]
    assert half["shortfall_gpu_hours"] == pytest.approx(32)
    assert half["reserved_usd"] == pytest.approx(24 * 4 * 4)
    assert half["on_demand_usd"] == pytest.approx(16 * 4 * 10)
    assert curve.loc[1.0, "cheapest"]  # the plan's own point: the shortfall's penalty makes the others dearer
    # demand 50 % lower (the downside's shock re-sized): 8 GPUs = 1 instance, m = 0.5, Poisson(0.5): cdf(2) = 0.986
    # < 0.99 <= cdf(3): 3 spare instances = 24 GPUs; the working fleet is 48 - 24 = 24 GPUs, 8 of them used
    from planner.memo.resolve import downside
    from planner.pipeline.run import make_plan

    d = downside(p, p.inputs, shocks=(0.5,), make_plan=make_plan).set_index("shock")
    assert d.loc[0.5, "reserved_utilisation"] == pytest.approx(8 / 24)
    assert d.loc[0.5, "shortfall_gpu_hours"] == pytest.approx(0)
    # the next-best plan (nothing new bought) holds no spares: it says so
    assert p.memo.savings["next_best_shortfall_gpu_hours"] == pytest.approx(32 * 4)


def test_spares_are_no_teams_quota(tmp_path):
    """The reserved flavor shares the working fleet (16 + 8 GPUs); the 32 spares are a standby line."""
    m = write_case(tmp_path, {"train": [16, 16, 16, 16], "infer": [8, 4, 8, 4]}, PRICES,
                   {"train": dict(SPARES, team="research"), "infer": {"team": "product"}})
    data = from_plan(solve_case(m))
    reserved = data.flavors.set_index("option").loc["reserved", "capacity_gpus"]
    assert reserved == 24  # was 56: the spares lent out as quota
    doc = quotas_dict(analyse(data))
    assert doc["standby"] == [{"gpu_type": "A", "region": "r1", "gpus": 32, "classes": ["train"]}]
