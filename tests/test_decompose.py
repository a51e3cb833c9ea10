"""Benders decomposition equals the monolithic model (the oracle) on random small ladder cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner import load_inputs, make_plan
from planner.decompose import chunk_index, solve_benders
from conftest import price, write_case


def _case(tmp_path, seed: int, scenarios: bool = False):
    rng = np.random.default_rng(seed)
    days = 400
    t = np.arange(days)
    a = 10 + 8 * (t > rng.integers(60, 200)) + rng.uniform(0, 6, days)
    b = np.clip(20 - 0.02 * t + rng.normal(0, 3, days), 0, None)
    prices = [price("A", "r1", "on_demand", 4.0), price("A", "r1", "spot", 1.6, interruptions_per_hour=0.02,
                                                           max_gpus=float(rng.integers(3, 9))),
              price("A", "r1", "reserved_1y", 2.4, term_months=12, max_gpus=40.0),
              price("A", "r1", "reserved_3y", 1.0, upfront_usd=8000.0, term_months=36),
              price("B", "r1", "on_demand", 2.5, gpus_per_instance=4),
              price("B", "r1", "reserved_1y", 1.5, term_months=12, gpus_per_instance=4)]
    inventory = [{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 6,
                  "start": "2026-06-01T00:00", "end": "2027-05-01T00:00"}]
    classes = {"a": {"spot": False, "headroom": 0.1, "gpu_types": {"A": 1.0, "B": 0.5}},
               "b": {"spot": True, "max_spot_share": 0.5, "gpu_types": {"A": 1.0}}}
    extra = '[commitments]\npurchase_every = "quarter"\n'
    demand = {"a": list(a.round(2)), "b": list(b.round(2))}
    m = write_case(tmp_path, demand, prices, classes, inventory=inventory, hours=24.0, start="2027-01-01",
                   extra_top=extra)
    if scenarios:  # two scenarios: the base and 20 % more of class a
        d = pd.read_csv(tmp_path / "demand.csv")
        hi = d.copy()
        hi.loc[hi["workload_class"] == "a", "gpus"] *= 1.2
        pd.concat([d.assign(scenario="base"), hi.assign(scenario="high")]).to_csv(tmp_path / "demand.csv", index=False)
        m.write_text(m.read_text().replace("[commitments]", "[scenarios]\nbase = 0.6\nhigh = 0.4\n\n[commitments]"))
    return load_inputs(m)


@pytest.mark.parametrize("seed,scenarios", [(1, False), (2, False), (3, True)])
def test_benders_equals_the_monolithic_model(tmp_path, seed, scenarios):
    inp = _case(tmp_path, seed, scenarios)
    mono = make_plan(inp, mip_gap=0.0, risk=False)
    assert mono.status.value == "optimal"
    bd = solve_benders(inp, mip_gap=1e-7)
    assert bd.status == "optimal" and bd.chunks == len(chunk_index(inp))
    assert bd.upper == pytest.approx(mono.objective, rel=1e-6)
    assert bd.lower <= bd.upper + 1e-6 and bd.gap <= 1e-6


def test_the_benders_plan_is_the_planner_plan_with_its_gap_and_bound(tmp_path):
    inp = _case(tmp_path, 4)
    mono = make_plan(inp, mip_gap=0.0, risk=False)
    from dataclasses import replace

    bend = make_plan(replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method="benders"))),
                     mip_gap=1e-7, risk=False)
    assert bend.status.value == "optimal" and bend.stats["benders"]["chunks"] == 14
    assert bend.objective == pytest.approx(mono.objective, rel=1e-6)
    assert bend.solve.mip_gap <= 1e-6 and bend.solve.best_bound <= bend.objective + 1e-6
    assert "Benders" in bend.solve.message
