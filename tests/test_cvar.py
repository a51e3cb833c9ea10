"""Mean-CVaR (planner/model/cvar.py) against brute-force enumeration of a two-scenario case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner import load_inputs, make_plan
from planner.model.cvar import add_cvar, cvar
from conftest import price, write_case

H, OD, R, LOW, HIGH, P_LOW = 10, 1.0, 0.45, 2, 10, 0.9


def two_scenario_case(tmp_path):
    m = write_case(tmp_path, {"c": [0] * H}, [price(hourly=OD), price(option="reserved_1y", hourly=R)], {"c": {}})
    d = pd.read_csv(tmp_path / "demand.csv")
    pd.concat([d.assign(gpus=LOW, scenario="low"), d.assign(gpus=HIGH, scenario="high")]).to_csv(
        tmp_path / "demand.csv", index=False)
    m.write_text(m.read_text() + f"[scenarios]\nlow = {P_LOW}\nhigh = {1 - P_LOW}\n")
    return m


def brute_force(alpha, lam):
    """Every whole number of reserved GPUs, each scenario's cost by hand, the mean-CVaR objective: the best."""
    prob = np.array([P_LOW, 1 - P_LOW])
    best = None
    for n in range(0, HIGH + 3):
        costs = np.array([H * (R * n + OD * max(0, d - n)) for d in (LOW, HIGH)])
        value = (1 - lam) * prob @ costs + lam * cvar(costs, prob, alpha)
        if best is None or value < best[0] - 1e-9:
            best = (value, n, costs)
    return best


@pytest.mark.parametrize("alpha,lam", [(0.95, 0.0), (0.95, 0.3), (0.95, 1.0), (0.8, 0.5), (0.5, 0.9)])
def test_cvar_matches_brute_force(tmp_path, alpha, lam):
    inp = load_inputs(two_scenario_case(tmp_path))
    plan = make_plan(inp, mip_gap=0, risk=False, shadow=False,
                     extend=lambda model: add_cvar(model, inp, alpha, lam))
    value, n, costs = brute_force(alpha, lam)
    assert int(plan.purchases["instances"].sum()) == n
    got = plan.scenario_costs.set_index("scenario")["total"]
    assert [got["low"], got["high"]] == pytest.approx(list(costs))


def test_risk_aversion_buys_more_here(tmp_path):
    # risk neutral: a unit above LOW is used with p = 0.1 (saves 1 x 0.1 < 0.45): buy LOW. CVaR at 95 % looks
    # only at the high scenario (p = 0.1 > 5 %), where every unit saves 1 - 0.45: buy HIGH.
    assert brute_force(0.95, 0.0)[1] == LOW
    assert brute_force(0.95, 1.0)[1] == HIGH


def test_cvar_of_a_discrete_distribution():
    # alpha 0.5 over (1 w.p. 0.5, 3 w.p. 0.5): the worst half, 3; alpha 0.75: still 3; alpha 0.25: mean of
    # the worst 75 %: (0.25 x 1 + 0.5 x 3) / 0.75
    assert cvar([1, 3], [0.5, 0.5], 0.5) == pytest.approx(3)
    assert cvar([1, 3], [0.5, 0.5], 0.25) == pytest.approx((0.25 + 1.5) / 0.75)


def test_model_file_keys_plan_and_report(tmp_path):
    """[finance] cvar_alpha / cvar_weight: the mean-CVaR plan, with the risk-neutral plan beside it in plan.json."""
    import json

    from planner.model.stages import linking
    from planner.pipeline.run import write_outputs

    m = two_scenario_case(tmp_path)
    m.write_text(m.read_text() + "[finance]\ncvar_alpha = 0.95\ncvar_weight = 1.0\n")
    inp = load_inputs(m)
    assert "cvar" in dict(linking(inp))  # declared a linking family: the decomposition is not exact with it
    plan = make_plan(inp, mip_gap=0)  # with the risk view (EVPI, VSS) too, as `planner plan` makes it
    assert int(plan.purchases["instances"].sum()) == HIGH
    assert plan.risk is not None and plan.risk.worst_case_usd == pytest.approx(H * R * HIGH)
    neutral = brute_force(0.95, 0.0)
    assert plan.cvar["risk_neutral_cost_usd"] == pytest.approx(P_LOW * neutral[2][0] + (1 - P_LOW) * neutral[2][1])
    assert plan.cvar["cvar_usd"] == pytest.approx(H * R * HIGH)  # the high scenario, all reserved
    assert plan.cvar["risk_neutral_cvar_usd"] == pytest.approx(neutral[2][1])
    assert plan.cvar["cost_of_less_risk_usd"] > 0
    # the plan's costs are what it pays: the same in both scenarios (all reserved), not the CVaR objective
    assert plan.cost["total"] == pytest.approx(H * R * HIGH) == plan.cvar["expected_cost_usd"]
    assert "extension" not in plan.cost
    assert any("less term risk costs" in n for n in plan.notes)
    risk = json.loads(write_outputs(plan, tmp_path / "out")["json"].read_text())["risk"]
    assert risk["cvar_alpha"] == 0.95 and risk["cvar_usd"] == pytest.approx(H * R * HIGH)


@pytest.mark.parametrize("key,value", [("cvar_alpha", 0.3), ("cvar_weight", 1.5)])
def test_out_of_range_keys_are_bad_input(tmp_path, key, value):
    from planner.core.errors import InputError

    m = two_scenario_case(tmp_path)
    m.write_text(m.read_text() + f"[finance]\n{key} = {value}\n")
    with pytest.raises(InputError, match=key):
        load_inputs(m)


def test_each_scenarios_cost_on_a_tree_is_what_the_plan_reports(tmp_path):
    """The CVaR rows' cost_s (scenario_cost_matrix) on a tree with branch purchases and spot: at the plan's
    solution, each scenario's cost equals the plan's own per-scenario totals; and lam = 0 is the risk-neutral plan."""
    from planner.model.cvar import scenario_costs
    from test_tree import _tree_case

    inp = _tree_case(tmp_path, levels={"low": 6.0, "mid": 13.0, "high": 27.0}, probs={"low": 0.2, "mid": 0.5,
                                                                                        "high": 0.3},
                     split_day=72, spot=True)
    seen = {}

    def keep(model):
        seen["model"] = model
        add_cvar(model, inp, 0.9, 0.0)

    neutral = make_plan(inp, risk=False, shadow=False)
    plan = make_plan(inp, risk=False, shadow=False, extend=keep)
    assert plan.cost["total"] - plan.cost.get("extension", 0.0) == pytest.approx(neutral.cost["total"], rel=1e-7)
    from planner.solve.monolithic import solve

    model = seen["model"]
    n_orig = len(model.cost) - 1 - len(inp.scenarios)
    result = solve(model, "highs", 60, 0.0)
    x = np.asarray(result.values, float)[:n_orig]
    got = scenario_costs(model, inp, x)
    want = plan.scenario_costs.set_index("scenario").loc[inp.scenarios]
    # on-demand, spot and reserved paid; shortfall none here
    assert want["shortfall_gpu_hours"].sum() == pytest.approx(0, abs=1e-6)
    assert got == pytest.approx(want["total"].to_numpy(), rel=1e-6)
