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


def _tree_cvar(tmp_path, weight, npv):
    from test_tree import _tree_case

    _tree_case(tmp_path, levels={"low": 6.0, "mid": 13.0, "high": 27.0}, probs={"low": 0.2, "mid": 0.5, "high": 0.3},
               split_day=72, spot=True)
    m = tmp_path / "model.toml"
    m.write_text(m.read_text() + f"[finance]\ncvar_alpha = 0.8\ncvar_weight = {weight}\n"
                 + ('discount_rate = 0.08\nobjective = "npv"\n' if npv else ""))
    return load_inputs(m)


@pytest.mark.parametrize("npv", [False, True])
def test_risk_view_of_a_cvar_plan_is_on_its_expected_objective(tmp_path, npv):
    """RP beside a mean-CVaR plan is the plan's expected objective (cost, or NPV under objective = "npv"): the solver's
    mean-CVaR objective minus its CVaR part, over 1 - weight (an independent formula, from the raw solve). Under npv
    the CVaR part was left in: VSS -4,118 USD where it is 15,317, EVPI 20,623 where it is 1,188."""
    inp = _tree_cvar(tmp_path, 0.5, npv)
    f = inp.config.finance
    raw = make_plan(inp, mip_gap=0, risk=False, shadow=False,
                    extend=lambda model: add_cvar(model, inp, f.cvar_alpha, f.cvar_weight))
    if npv:
        expected = (raw.solve.objective - raw.cost["extension"]) / (1 - f.cvar_weight)
    else:
        expected = raw.cost["total"] - raw.cost["extension"]  # shortfall none here: the expected cost paid
    plan = make_plan(inp, mip_gap=0)
    assert plan.objective == pytest.approx(expected, rel=1e-9)
    assert plan.purchases["units"].tolist() == raw.purchases["units"].tolist()
    r = plan.risk
    assert r.vss_usd == pytest.approx(r.eev_usd - expected, rel=1e-9) and r.vss_usd > 0
    assert r.evpi_usd == pytest.approx(expected - r.ws_usd, rel=1e-9) and r.evpi_usd < 0.1 * r.vss_usd


@pytest.mark.parametrize("npv", [False, True])
def test_cvar_alone_reports_the_cheapest_plan_of_its_cvar(tmp_path, npv):
    """At cvar_weight = 1 the objective sees the tail scenarios only: the others' recourse is free in it, and the raw
    solve paid 103,222 USD where its purchases need 97,315 (on-demand beside idle reserved GPUs). A second solve
    minimises the expected cost at that CVaR: each scenario's cost is its purchases' cheapest recourse (by hand),
    the CVaR is the first solve's, the expected cost is lower."""
    from planner.model.cvar import cvar

    inp = _tree_cvar(tmp_path, 1.0, npv)
    raw = make_plan(inp, mip_gap=0, risk=False, shadow=False,
                    extend=lambda model: add_cvar(model, inp, 0.8, 1.0))
    plan = make_plan(inp, mip_gap=0, risk=False)
    sc = plan.scenario_costs.set_index("scenario")
    got = sc["total"]
    for s, name in enumerate(inp.scenarios):  # by hand: each day reserved first, then spot (3 GPUs at 0.4), then
        # on-demand at 1.0, over the reserved GPUs this scenario owns (its branch's purchases)
        f = plan.fleet[plan.fleet["scenario"] == name].sort_values("period")
        excess = np.maximum(inp.demand[s, 0] - f["reserved_owned"].to_numpy(float), 0.0)
        rented = float(np.sum(inp.hours * (0.4 * np.minimum(excess, 3.0) + np.maximum(excess - 3.0, 0.0))))
        assert got[name] == pytest.approx(sc.at[name, "reserved"] + rented, rel=1e-7)
    raw_totals = raw.scenario_costs.set_index("scenario")["total"]
    assert float(plan.cost["total"]) < float(raw.cost["total"] - raw.cost["extension"]) - 1.0
    prob = plan.scenario_costs["probability"].to_numpy(float)
    assert plan.cvar["cvar_usd"] == pytest.approx(cvar(raw_totals.to_numpy(float), prob, 0.8), rel=1e-7)
    assert plan.status == raw.status and plan.solve.best_bound is None


def _two_pools_tree(folder, w):
    """Daily 2027, two pools A and B; 10 A-GPUs for 72 days, then high 30 A (p 0.3, the tail), mid 10 A (p 0.5),
    low 5 A + 8 B (p 0.2); on-demand 1.0, a 1-year term 0.6, monthly purchases."""
    folder.mkdir(parents=True, exist_ok=True)
    days = pd.date_range("2027-01-01", periods=365, freq="D")
    after = {"low": (5, 8), "mid": (10, 0), "high": (30, 0)}
    rows = [{"period": d.strftime("%Y-%m-%dT%H:%M"), "workload_class": c, "scenario": s,
             "gpus": (10.0 if c == "cA" else 0.0) if i < 72 else float(v)}
            for s, (a, b) in after.items() for i, d in enumerate(days) for c, v in (("cA", a), ("cB", b))]
    pd.DataFrame(rows).to_csv(folder / "demand.csv", index=False)
    prices = [price(g, "r1", o, h, term_months=12 if o != "on_demand" else None)
              for g in ("A", "B") for o, h in (("on_demand", 1.0), ("reserved_1y", 0.6))]
    pd.DataFrame(prices).to_csv(folder / "prices.csv", index=False)
    text = ['name = "tree2"', 'demand = "demand.csv"', 'prices = "prices.csv"', "[solver]", 'backend = "highs"',
            "mip_gap = 0.0", "[commitments]", 'purchase_every = "month"', "[scenarios]", "low = 0.2", "mid = 0.5",
            "high = 0.3", "[classes.cA]", "gpu_types = { A = 1.0 }", "[classes.cB]", "gpu_types = { B = 1.0 }",
            "[finance]", "cvar_alpha = 0.8", f"cvar_weight = {w}"]
    (folder / "model.toml").write_text("\n".join(text) + "\n")
    return load_inputs(folder / "model.toml")


def test_cvar_alone_makes_the_purchases_a_branch_outside_the_tail_needs(tmp_path):
    """The low branch (outside the tail) needs 8 B-GPUs: at weight 1 its purchases cost nothing in the objective, and
    the raw solve bought none (low paid B on-demand, 4,224 USD more in expectation at the same CVaR). The second
    solve buys them: the plan is the weight-0.999 plan's, whose expected cost weighs in (the oracle)."""
    one = make_plan(_two_pools_tree(tmp_path / "one", 1.0), mip_gap=0, risk=False)
    near = make_plan(_two_pools_tree(tmp_path / "near", 0.999), mip_gap=0, risk=False)
    bought = one.purchases[one.purchases["units"] > 0]
    assert ((bought["gpu_type"] == "B") & (bought["branch"] == "low")).any()
    assert one.cost["total"] == pytest.approx(near.cost["total"], rel=1e-7)
    assert one.cvar["cvar_usd"] == pytest.approx(near.cvar["cvar_usd"], rel=1e-7)
    assert one.cvar["cost_of_less_risk_usd"] == pytest.approx(72.0, abs=0.01)  # it said 4,296


def _penalty_case(tmp_path, w, budget=None, levels=(2.0, 9.0, 12.0), cap=100, penalty=3.0, high_od=1.5):
    """10 hours; demand ``levels`` GPUs in low / mid / high (p 0.5 / 0.3 / 0.2); a 1-year term at 0.45; on-demand 1.0
    capped at ``cap`` (``high_od`` in the high scenario); a shortfall penalty per GPU-hour; alpha 0.7."""
    m = write_case(tmp_path, {"c": [0] * H}, [price(hourly=OD, max_gpus=cap), price(option="reserved_1y", hourly=R)],
                   {"c": {}})
    d = pd.read_csv(tmp_path / "demand.csv")
    pd.concat([d.assign(gpus=v, scenario=s) for s, v in zip(("low", "mid", "high"), levels)]).to_csv(
        tmp_path / "demand.csv", index=False)
    pr = pd.read_csv(tmp_path / "prices.csv").assign(scenario="")
    high = pr[pr["option"] == "on_demand"].assign(hourly_usd=high_od, scenario="high")
    pd.concat([pr, high]).to_csv(tmp_path / "prices.csv", index=False)
    m.write_text(m.read_text().replace("[solver]", f"[solver]\nshortfall_penalty_usd_per_gpu_hour = {penalty}")
                 + "[scenarios]\nlow = 0.5\nmid = 0.3\nhigh = 0.2\n[finance]\ncvar_alpha = 0.7\n"
                 + f"cvar_weight = {w}\n" + ("" if budget is None else f"[budget]\nmax_total_usd = {budget}\n"))
    return load_inputs(m)


def test_a_budget_keeps_the_risk_averse_recourse(tmp_path):
    """A budget of 30 USD ties the scenarios' rented spend together: the plan is the mean-CVaR solve's own (shortfall
    0 / 30 / 50 GPU-hours, CVaR with its penalty 167). A risk-neutral re-solve of its recourse moved the shortfall
    into the tail (0 / 20 / 60, CVaR 170.3) and called the plan risk neutral (cost of less risk 0)."""
    from planner.model.cvar import cvar

    inp = _penalty_case(tmp_path, 0.5, budget=30)
    raw = make_plan(inp, mip_gap=0, risk=False, shadow=False, extend=lambda model: add_cvar(model, inp, 0.7, 0.5))
    plan = make_plan(inp, mip_gap=0, risk=False)
    short = plan.scenario_costs.set_index("scenario").loc[["low", "mid", "high"], "shortfall_gpu_hours"]
    assert short.tolist() == pytest.approx([0.0, 30.0, 50.0], abs=1e-6)
    assert short.tolist() == pytest.approx(
        raw.scenario_costs.set_index("scenario").loc[["low", "mid", "high"], "shortfall_gpu_hours"].tolist(), abs=1e-6)
    costs = np.array([27.0, 27.0 + 90.0, 42.0 + 150.0])  # by hand: cost paid plus 3 USD per unmet GPU-hour
    assert plan.cvar["cvar_usd"] == pytest.approx(cvar(costs, np.array([0.5, 0.3, 0.2]), 0.7)) == pytest.approx(167.0)


def test_the_cvar_figures_count_the_shortfall_penalty_the_solve_weighs(tmp_path):
    """On-demand capped at 4 GPUs, a penalty of 1.5 per unmet GPU-hour, demand 2 / 6 / 12, CVaR alone. By hand
    (n GPUs bought, each scenario 10 h x (0.45 n + on-demand + 1.5 x unmet)): the risk-averse plan buys 12 (54 in
    every scenario); the risk-neutral one buys 6: 27 / 27 / 67 paid, the high scenario 20 GPU-hours short (+30), so
    its CVaR with the penalty is 73.67 and its expected cost with it 41. The figures without the penalty said 54
    against 54 (the two plans' tails equal) and 19 for the cost of less risk, where it is 13."""
    from planner.model.cvar import cvar

    plan = make_plan(_penalty_case(tmp_path, 1.0, levels=(2.0, 6.0, 12.0), cap=4, penalty=1.5, high_od=1.0),
                     mip_gap=0, risk=False)
    prob = np.array([0.5, 0.3, 0.2])
    assert plan.purchases["units"].tolist() == [12.0]
    assert plan.cvar["cvar_usd"] == pytest.approx(54.0)
    neutral = np.array([27.0, 27.0, 67.0 + 30.0])
    assert plan.cvar["risk_neutral_cvar_usd"] == pytest.approx(cvar(neutral, prob, 0.7)) == pytest.approx(73.0 + 2 / 3)
    assert plan.cvar["cost_of_less_risk_usd"] == pytest.approx(54.0 - prob @ neutral) == pytest.approx(13.0)
    assert any("shortfall penalty included" in n for n in plan.notes)


def test_cbc_solves_a_cvar_plan_as_highs_does(tmp_path):
    """eta is free (lower bound -inf): PuLP refused it ("The lower bound of a variable must be finite"), exit 1 with
    --solver cbc. It is now a free variable, and CBC's plan is HiGHS's."""
    inp = load_inputs(two_scenario_case(tmp_path))
    f = inp.config.finance
    highs = make_plan(inp, mip_gap=0, risk=False, shadow=False, extend=lambda m: add_cvar(m, inp, 0.95, 0.5))
    cbc = make_plan(inp, mip_gap=0, risk=False, shadow=False, backend="cbc",
                    extend=lambda m: add_cvar(m, inp, 0.95, 0.5))
    assert f.cvar_weight == 0.0  # the case itself is risk neutral: the extension alone makes it mean-CVaR
    assert cbc.status.value == "optimal" and cbc.purchases["units"].tolist() == highs.purchases["units"].tolist()
    assert cbc.cost["total"] == pytest.approx(highs.cost["total"])
