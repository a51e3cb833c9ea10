"""Second, independent computations of what the planner reports."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import BACKENDS, price, solve_case, write_case


def screening_optimum(d: np.ndarray, r: float, od: float) -> tuple[int, float]:
    """Brute force over the reserved count: n r |T| + od sum_t max(0, d_t - n)."""
    best = None
    for n in range(int(np.ceil(d.max())) + 2):
        cost = n * r * len(d) + od * np.maximum(0.0, d - n).sum()
        if best is None or cost < best[1] - 1e-9:
            best = (n, cost)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_screening_curve_optimum(tmp_path, seed):
    rng = np.random.default_rng(seed)
    T = int(rng.integers(12, 60))
    d = np.round(rng.gamma(2.0, 6.0, size=T), 2)
    r, od = float(rng.uniform(0.3, 0.9)), 1.0
    m = write_case(tmp_path, {"c": d.tolist()},
                   [price(hourly=od), price(option="reserved_1y", hourly=r)], {"c": {}})
    plan = solve_case(m, BACKENDS[seed % len(BACKENDS)])
    n_star, cost_star = screening_optimum(d, r, od)
    assert plan.cost["total"] == pytest.approx(cost_star, rel=1e-9, abs=1e-6)
    n = int(plan.purchases["instances"].sum())
    # ties are possible: any n with the optimal cost is right
    assert n * r * T + od * np.maximum(0, d - n).sum() == pytest.approx(cost_star, rel=1e-9)


def recompute_costs(plan) -> dict:
    """Costs from the plan's quantities and the validated price sheet alone."""
    prices = plan.inputs.tables.prices.set_index(["gpu_type", "region", "option"])
    a = plan.allocation
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    out = {}
    for option in ("on_demand", "spot"):
        sub = a[a["option"] == option]
        unit = prices.loc[list(zip(sub.gpu_type, sub.region, sub.option)), "hourly_usd"].to_numpy()
        out[option] = float((sub["gpus"] * sub["hours"] * sub["scenario"].map(prob) * unit).sum())
    p = plan.purchases
    eff = p["hourly_usd"] + p["upfront_usd"] / (p["term_months"] * 730)
    out["reserved"] = float((p["instances"] * p["gpus_per_instance"] * eff).sum() * plan.inputs.hours.sum())
    out["total"] = out["reserved"] + out["on_demand"] + out["spot"]
    return out


def random_case(tmp_path, seed: int):
    rng = np.random.default_rng(seed)
    T = 24
    hours = np.arange(T)
    demand = {
        "chat": (20 + 10 * np.sin(hours / 24 * 2 * np.pi) + rng.normal(0, 2, T)).clip(0).round(2).tolist(),
        "train": rng.choice([0, 64, 128], size=T).astype(float).tolist(),
        "batch": rng.gamma(2, 5, T).round(2).tolist(),
    }
    prices = []
    for gt, m, od in (("H100", 8, 11.0), ("L4", 1, 0.7)):
        for rg, f in (("east", 1.0), ("west", 1.1)):
            prices += [price(gt, rg, hourly=od * f, gpus_per_instance=m),
                       price(gt, rg, "spot", hourly=od * f * rng.uniform(0.3, 0.6), gpus_per_instance=m,
                             interruptions_per_hour=float(rng.uniform(0.005, 0.05)),
                             max_gpus=float(rng.choice([40, 200]))),
                       price(gt, rg, "reserved_1y", hourly=od * f * 0.65, gpus_per_instance=m),
                       price(gt, rg, "reserved_3y", hourly=od * f * 0.3, upfront_usd=od * f * 0.15 * 26280,
                             gpus_per_instance=m, max_gpus=96)]
    classes = {"chat": {"headroom": 0.15, "gpu_types": {"H100": 1.0, "L4": 0.2}},
               "train": {"spot": True, "max_spot_share": 0.6, "job_gpus": 64, "checkpoint_minutes": 4,
                         "restart_minutes": 8, "gpu_types": {"H100": 1.0}},
               "batch": {"spot": True, "gpu_types": {"L4": 1.0, "H100": 5.0}, "regions": ["east"]}}
    return write_case(tmp_path, demand, prices, classes)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_costs_recomputed_from_quantities(tmp_path, seed):
    plan = solve_case(random_case(tmp_path, seed))
    again = recompute_costs(plan)
    for k in ("reserved", "on_demand", "spot", "total"):
        assert plan.cost[k] == pytest.approx(again[k], rel=1e-9, abs=1e-6)
    assert plan.objective == pytest.approx(plan.solve.objective, rel=1e-7)


@pytest.mark.slow
@pytest.mark.skipif(len(BACKENDS) < 2, reason="needs both CBC and HiGHS")
@pytest.mark.parametrize("seed", [4, 5])
def test_cbc_and_highs_agree(tmp_path, seed):
    m = random_case(tmp_path, seed)
    a, b = solve_case(m, "cbc"), solve_case(m, "highs")
    assert a.status.value == b.status.value == "optimal"
    assert a.objective == pytest.approx(b.objective, rel=1e-7)


def test_plan_respects_every_constraint(tmp_path):
    """Check the solution against the formulation directly, from the allocation table."""
    plan = solve_case(random_case(tmp_path, 9))
    inp = plan.inputs
    a = plan.allocation
    pools = {(g, r): i for i, (g, r) in enumerate(zip(inp.pools.gpu_type, inp.pools.region))}
    a = a.assign(p=[pools[(g, r)] for g, r in zip(a.gpu_type, a.region)],
                 k=[inp.classes.index(c) for c in a.workload_class])
    eff = np.where(a.option == "spot", inp.goodput[a.k, a.p], inp.reliability[a.k, a.p]) * inp.speed[a.k, a.p]
    cover = (a.gpus * eff).groupby([a.workload_class, a.period]).sum()
    for t, per in enumerate(inp.periods):
        for k, cls in enumerate(inp.classes):
            need = (1 + inp.headroom[k]) * inp.demand[0, k, t]
            assert cover.get((cls, per), 0.0) >= need - 1e-6
    spot = a[a.option == "spot"]
    by_pool = spot.groupby(["gpu_type", "region", "period"])["gpus"].sum()
    for (g, r, per), v in by_pool.items():
        cap = inp.pools["cap_sp"].iat[pools[(g, r)]]
        assert np.isnan(cap) or v <= cap + 1e-6
    res = a[a.option == "reserved"].groupby(["gpu_type", "region", "period"])["gpus"].sum()
    bought = plan.purchases.groupby(["gpu_type", "region"])["gpus"].sum()
    for (g, r, per), v in res.items():
        assert v <= bought.get((g, r), 0) + 1e-6
    assert plan.cost["total"] <= plan.baseline_all_on_demand + 1e-6


@pytest.mark.parametrize("seed", [11, 12])
def test_every_speed_up_gives_the_plain_optimum(tmp_path, seed):
    """Dominance, period merging and the direct HiGHS path against the plain PuLP model (CBC)."""
    from planner import load_inputs
    from planner.model import build_model
    from planner.solve.monolithic import solve

    inp = load_inputs(random_case(tmp_path, seed))
    plain = build_model(inp, merge_periods=False, dominance=False)
    fast = build_model(inp)
    assert fast.n_variables < plain.n_variables
    ref = solve(plain, "cbc", 60, 0.0)
    for backend in BACKENDS:
        got = solve(fast, backend, 60, 0.0)
        assert got.objective == pytest.approx(ref.objective, rel=1e-7)
