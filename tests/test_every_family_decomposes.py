"""Every constraint family that is not linking, on one small case forced to decompose: the Benders plan (weekly
batches) equals the monolithic model's (relative 1e-6), and every one of those families has rows in it.

The case: two pools, a ladder of monthly purchase dates over nine weeks of hours, on-demand, spot and flex-start
caps, a capped reservation that may be resold and draws power at a capped site, a savings plan, and a gang class
that holds spares. The linking families (budget, backfill, discount-only commitments, CVaR) stop the
decomposition by design (``planner.model.stages.linking``): one test shows the plan then says so and solves whole.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner import load_inputs, make_plan
from planner.model import build_model, stages
from conftest import write_case

HOURS = 24 * 63
NON_LINKING = [name for name, stage in stages.STAGE.items() if stage != stages.LINKING and name != "backfill_dedicated"]


def _case(folder, method=None, extra=""):
    t = np.arange(HOURS)
    day = np.sin((t % 24) / 24 * 2 * np.pi)
    train = 120 + 60 * day - 50 * (t > 24 * 40)  # less training after day 40: resale pays
    demand = {"train": list(np.round(train, 3)), "serve": [80.0] * HOURS, "gang": [64.0] * HOURS}
    rows = [dict(gpu_type="A", region="r1", option="on_demand", hourly_usd=4.0, max_gpus=150, gpus_per_instance=8),
            dict(gpu_type="A", region="r1", option="spot", hourly_usd=1.6, interruptions_per_hour=0.05, max_gpus=30,
                 gpus_per_instance=8),
            dict(gpu_type="A", region="r1", option="flex_start", hourly_usd=2.2, queue_hours_p50=2, queue_hours_p90=6,
                 max_gpus=25, gpus_per_instance=8),
            dict(gpu_type="A", region="r1", option="reserved_1y", hourly_usd=2.0, term_months=12, max_gpus=160,
                 resale_haircut=0.1, site="s1", kw_per_gpu=1.0, gpus_per_instance=8),
            dict(gpu_type="A", region="r1", option="savings_plan_1y", hourly_usd=2.9),
            dict(gpu_type="B", region="r2", option="on_demand", hourly_usd=3.0, gpus_per_instance=8),
            dict(gpu_type="B", region="r2", option="reserved_1y", hourly_usd=1.7, term_months=12, gpus_per_instance=8)]
    classes = {"train": {"gpu_types": {"A": 1.0}, "regions": ["r1"], "spot": True, "max_spot_share": 0.3,
                         "max_start_delay_hours": 12.0, "restart_minutes": 10.0},
               "serve": {"gpu_types": {"A": 1.0, "B": 0.9}},
               "gang": {"gpu_types": {"B": 1.0}, "regions": ["r2"], "spares_target": 0.99, "gpus_per_instance": 8,
                        "gpu_mtbf_hours": 5000.0, "repair_hours": 48.0}}
    top = ('[commitments]\npurchase_every = "month"\naccounting = "amortised"\n'
           '[sites.s1]\nmax_mw = 0.12\n' + extra)
    m = write_case(folder, demand, rows, classes, solver={"method": method} if method else None, extra_top=top)
    pd.DataFrame(rows).to_csv(folder / "prices.csv", index=False)  # every column
    return m


@pytest.mark.slow
def test_every_non_linking_family_has_rows_and_the_decomposed_plan_is_the_monolithic_one(tmp_path):
    mono_inp = load_inputs(_case(tmp_path / "m"))
    rows = build_model(mono_inp).rows
    empty = [name for name in NON_LINKING if rows.get(name, 0) == 0]
    assert not empty, f"families without rows in the case: {empty}"
    assert stages.linking(mono_inp) == []
    mono = make_plan(mono_inp, mip_gap=0.0, risk=False)
    dec = make_plan(load_inputs(_case(tmp_path / "b", method="benders")), mip_gap=0.0, risk=False)
    assert "benders" in dec.stats and "benders" not in mono.stats
    assert dec.objective == pytest.approx(mono.objective, rel=1e-6)
    for kind in ("reserved", "on_demand", "spot", "flex_start"):
        assert dec.cost[kind] == pytest.approx(mono.cost[kind], rel=1e-5, abs=1e-3)
    # the GPUs held, per pool and period, are the same; the rows bought may differ where they tie: a resale of a
    # term without upfront stops exactly the fee of an identical term bought that day (a pool's cap counts GPUs held
    # at once, so selling 112 and buying 72 back costs what selling 40 does)
    held = ["period", "gpu_type", "region", "reserved_owned"]
    np.testing.assert_allclose(dec.fleet[held[-1]].to_numpy(float), mono.fleet[held[-1]].to_numpy(float),
                               rtol=1e-6, atol=1e-6)
    assert dec.fleet[held[:-1]].equals(mono.fleet[held[:-1]])
    # each family binds or matters somewhere: the case exercises them, not only builds them
    assert (mono.purchases["quantity"] < 0).any()  # a term resold (the exit link's rows at work)
    assert mono.cost["spot"] > 0 and mono.cost["flex_start"] > 0 and mono.spares_gpu_hours > 0


def test_a_linking_family_keeps_the_plan_whole_and_says_why(tmp_path):
    """A [budget] links the periods: asked to decompose, the planner solves the whole model and says so."""
    inp = load_inputs(_case(tmp_path, method="benders", extra="[budget]\nmax_total_usd = 1e9\n"))
    assert [name for name, _why in stages.linking(inp)] == ["budget"]
    plan = make_plan(inp, mip_gap=1e-6, risk=False)
    assert "benders" not in plan.stats
    assert any("budget" in n for n in plan.notes + [plan.solve.message or ""])
