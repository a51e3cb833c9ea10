"""Spend commitments (savings plans, kind "spend"): C USD per hour for a term, covering eligible on-demand
usage at discounted rates (issue 24).

Oracles, written here independently of the model: the recourse of a fixed C is a fractional knapsack per hour
(cover the usage with the highest on-demand-to-rate ratio first: AWS's order, highest discount first), so
the plan's cost as a function of C is computed by hand and minimised by brute force over a fine grid.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from planner import load_inputs, make_plan
from planner.cli import cli
from planner.pipeline.run import write_outputs
from conftest import price, solve_case, write_case
from test_workbook import needs_lo, recalc

OD = {"A": 2.0, "B": 1.0}
RATE = {"A": 1.2, "B": 0.8}  # a 40 % and a 20 % discount
A = [10.0, 4.0, 6.0, 8.0]
B = [5.0, 5.0, 5.0, 5.0]


def sp_case(folder: Path, a=A, b=B, rows=None, extra_top="", classes=None, more_prices=()) -> Path:
    prices = [price("A", "r", "on_demand", OD["A"]), price("B", "r", "on_demand", OD["B"]), *more_prices]
    prices += rows if rows is not None else [dict(gpu_type=g, region="r", option="savings_plan_1y", hourly_usd=RATE[g])
                                              for g in ("A", "B")]
    m = write_case(folder, {"a": list(a), "b": list(b)}, prices,
                   classes or {"a": {"gpu_types": {"A": 1.0}}, "b": {"gpu_types": {"B": 1.0}}}, extra_top=extra_top)
    pd.DataFrame(prices).to_csv(folder / "prices.csv", index=False)  # write_case keeps only the older columns
    return m


def hand_cost(C: float, a=A, b=B, rates=RATE, eligible=("A", "B"), hours=1.0) -> float:
    """C x hours + what is left on demand, each hour covering the usage with the highest od / rate first."""
    total = 0.0
    for ua, ub in zip(a, b):
        left, bill = C, 0.0
        for g, use in sorted((("A", ua), ("B", ub)), key=lambda x: -OD[x[0]] / rates.get(x[0], np.inf)):
            if g in eligible:
                cover = min(use, left / rates[g])
                left -= cover * rates[g]
                use -= cover
            bill += use * OD[g]
        total += (C + bill) * hours
    return total


def test_the_commitment_is_the_brute_force_optimum_and_covers_the_deepest_discount_first(tmp_path):
    plan = solve_case(sp_case(tmp_path))
    grid = np.linspace(0, 20, 20001)
    costs = np.array([hand_cost(c) for c in grid])
    assert plan.cost["total"] == pytest.approx(costs.min(), abs=1e-6)
    C = float(plan.spend["usd_per_hour"].iat[0])
    assert C == pytest.approx(grid[costs.argmin()], abs=2e-3)  # 11.2 by the marginal rule in the module doc
    assert C == pytest.approx(11.2)
    # in the first hour C buys 11.2 / 1.2 = 9.33 GPUs of A (40 % off) and none of B (20 % off)
    f = plan.fleet
    first = f[f["period"] == f["period"].min()].set_index("gpu_type")["on_demand_covered"]
    assert first["A"] == pytest.approx(11.2 / 1.2) and first["B"] == pytest.approx(0.0)
    assert plan.cost["on_demand"] == pytest.approx(hand_cost(C) - 4 * C)


def test_an_instance_family_restricts_the_pools(tmp_path):
    rows = [dict(gpu_type="B", region="r", option="savings_plan_1y", hourly_usd=RATE["B"], plan_family="b-family")]
    plan = solve_case(sp_case(tmp_path, rows=rows))
    grid = np.linspace(0, 10, 10001)
    costs = np.array([hand_cost(c, eligible=("B",)) for c in grid])
    assert plan.cost["total"] == pytest.approx(costs.min(), abs=1e-6)
    assert float(plan.spend["usd_per_hour"].iat[0]) == pytest.approx(4.0)  # all of B, every hour
    assert set(plan.spend["plan_family"]) == {"b-family"}


def _one_pool_cost(C: float, use, od: float, rate: float) -> float:
    """A commitment covering one pool only: C an hour plus the on-demand hours it does not cover."""
    return sum(C + (u - min(u, C / rate)) * od for u in use)


def test_two_families_are_two_commitments(tmp_path):
    rows = [dict(gpu_type="A", region="r", option="savings_plan_1y", hourly_usd=1.5, plan_family="fa"),
            dict(gpu_type="B", region="r", option="savings_plan_1y", hourly_usd=0.8, plan_family="fb")]
    plan = solve_case(sp_case(tmp_path, rows=rows))
    grid = np.linspace(0, 20, 20001)
    best = min(_one_pool_cost(c, A, 2.0, 1.5) for c in grid) + min(_one_pool_cost(c, B, 1.0, 0.8) for c in grid)
    assert plan.cost["total"] == pytest.approx(best, abs=1e-6)
    c = plan.spend.set_index("plan_family")["usd_per_hour"]
    assert c["fb"] == pytest.approx(4.0)  # B's steady 5 GPUs at 0.8
    assert 6.0 - 1e-6 <= c["fa"] <= 9.0 + 1e-6  # A: any C in [6, 9] ties (3 of 4 hours x 2/1.5 = the cost, 4)


def test_reserved_instances_apply_before_the_savings_plan(tmp_path):
    # a 1-year RI at 0.9 on A: the RI's GPUs serve first (reserved use), the plan covers on-demand usage only;
    # by hand: the best number of RIs and commitment together, by brute force
    more = [price("A", "r", "reserved_1y", 0.9, term_months=12)]
    plan = solve_case(sp_case(tmp_path, more_prices=more))
    grid = np.linspace(0, 20, 4001)
    best = min(4 * 0.9 * n + min(hand_cost(c, a=[max(x - n, 0.0) for x in A]) for c in grid) for n in range(11))
    assert plan.cost["total"] == pytest.approx(best, abs=1e-3)
    n = plan.purchases.set_index("option").loc["reserved_1y", "instances"]
    C = float(plan.spend["usd_per_hour"].iat[0])
    assert plan.cost["total"] == pytest.approx(4 * 0.9 * n + hand_cost(C, a=[max(x - n, 0.0) for x in A]), abs=1e-6)


def test_cash_plan_json_showback_focus_and_workbook_add_up(tmp_path):
    plan = solve_case(sp_case(tmp_path, extra_top='[finance]\ndiscount_rate = 0.1'))
    paths = write_outputs(plan, tmp_path / "out")
    doc = json.loads(paths["json"].read_text())
    sp = doc["spend_commitments"][0]
    assert sp["usd_per_hour"] == pytest.approx(11.2) and sp["family"] == "savings_plan_1y"
    assert 0 < sp["utilisation"] <= 1 and sp["covered_gpu_hours"] > 0
    cash = plan.cash_schedule
    assert (cash["upfront_usd"] + cash["reserved_recurring_usd"]).sum() == pytest.approx(11.2 * 8760)
    assert doc["commitments"]["reserved_full_term_usd"] == pytest.approx(11.2 * 8760)
    assert sum(doc["cost_by_class_usd"].values()) == pytest.approx(plan.cost["total"])
    assert doc["cost_by_class_usd"]["a"] > doc["cost_by_class_usd"]["b"]  # a used most of the coverage
    assert sum(r["total_usd"] for r in doc["showback_by_month"]) == pytest.approx(plan.cost["total"])
    out = tmp_path / "f.csv"
    assert CliRunner().invoke(cli, ["export", "focus", str(paths["json"]), "--out", str(out)]).exit_code == 0
    f = pd.read_csv(out)
    assert f["EffectiveCost"].sum() == pytest.approx(plan.cost["total"])
    assert f["BilledCost"].sum() == pytest.approx(plan.cost["total"])  # no upfront: the horizon's cash is its cost
    r = CliRunner().invoke(cli, ["plan", str(tmp_path / "model.toml"), "--out", str(tmp_path / "o2")])
    assert "savings plan: commit now 2027-01-04 to savings_plan_1y" in r.output


@needs_lo
def test_the_workbook_recomputes_to_plan_json_with_a_savings_plan(tmp_path):
    from openpyxl import load_workbook

    plan = solve_case(sp_case(tmp_path))
    paths = write_outputs(plan, tmp_path / "out")
    again = load_workbook(recalc(paths["xlsx"], tmp_path), data_only=True)
    summary = {r[0].value: r[1].value for r in again["Summary"].iter_rows() if r[0].value}
    assert summary["Total expected cost"] == pytest.approx(plan.cost["total"])
    assert summary["On-demand"] == pytest.approx(plan.cost["on_demand"])
    flow = sum(r[5].value for r in again["Cash flow"].iter_rows(min_row=2) if r[0].value)
    assert flow == pytest.approx(plan.cash_schedule["total_usd"].sum())
    show = sum(r[9].value for r in again["Showback"].iter_rows(min_row=2, max_col=10)
               if r[1].value and isinstance(r[9].value, (int, float)))
    assert show == pytest.approx(plan.cost["total"])


def test_evaluate_fixes_the_plans_commitment(tmp_path):
    m = sp_case(tmp_path)
    m.write_text(m.read_text() + '\n[term]\njudge = "horizon"\n')  # hindsight on the horizon: the horizon's plan
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["plan", str(m), "--out", str(out), "-q"]).exit_code == 0
    r = CliRunner().invoke(cli, ["evaluate", str(m), "--out", str(tmp_path / "ev1"), "--plan", str(out / "plan.json"), "--demand",
                                 str(tmp_path / "demand.csv"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["regret_usd"] == pytest.approx(0.0, abs=1e-6)
    # on a quieter month the same commitment costs what the hand recourse says
    periods = pd.read_csv(tmp_path / "demand.csv")["period"].unique()
    pd.DataFrame({"period": periods, "a": 2.0, "b": 1.0}).to_csv(tmp_path / "quiet.csv", index=False)
    r = CliRunner().invoke(cli, ["evaluate", str(m), "--out", str(tmp_path / "ev2"), "--plan", str(out / "plan.json"), "--demand",
                                 str(tmp_path / "quiet.csv"), "--json"])
    assert json.loads(r.output)["cost_usd"]["total"] == pytest.approx(hand_cost(11.2, a=[2.0] * 4, b=[1.0] * 4))


def both_methods(tmp_path, days: int, seed: int, top: str) -> dict:
    """A diurnal two-class savings-plan case of ``days`` written twice, solved whole and decomposed: their model
    paths by method."""
    rng = np.random.default_rng(seed)
    n = 24 * days
    a = (8 + 4 * np.sin(np.arange(n) / 24 * 2 * np.pi) + rng.normal(0, 1, n)).clip(0).round(2)
    b = (5 + rng.normal(0, 1, n)).clip(0).round(2)
    out = {}
    for method in ("monolithic", "benders"):
        m = sp_case(tmp_path / method, a=a, b=b, extra_top=top)
        m.write_text(m.read_text().replace('[solver]', f'[solver]\nmethod = "{method}"'))
        out[method] = m
    return out


def test_benders_equals_the_monolithic_model_with_savings_plans(tmp_path):
    models = both_methods(tmp_path, 70, 7, '[commitments]\npurchase_every = "month"\n')
    plans = {method: make_plan(load_inputs(m), mip_gap=1e-9) for method, m in models.items()}
    assert "benders" in plans["benders"].stats
    assert plans["benders"].cost["total"] == pytest.approx(plans["monolithic"].cost["total"], rel=1e-6)
    # the bound reported holds no tie-break (1e-4 USD per covered GPU-hour): never above the plan's own objective
    assert plans["benders"].solve.best_bound is not None
    for plan in plans.values():
        if plan.solve.best_bound is not None:
            assert plan.solve.best_bound <= plan.objective + 1e-6
            assert plan.solve.best_bound == pytest.approx(plan.objective, rel=1e-8)
        assert plan.solve.objective == pytest.approx(plan.objective, rel=1e-12)


def test_a_decomposed_npv_decision_reports_no_tie_break(tmp_path):
    # a whole-term decision decomposed reads its NPV objective from the loop's priced value, which held the
    # tie-breaks: it said 672,362.11 where the whole model (and the same purchases) say 672,333.00
    from planner.pipeline.whole_term import plan_over_term

    models = both_methods(tmp_path, 56, 3, '[finance]\nobjective = "npv"\ndiscount_rate = 0.08\n')
    plans = {method: plan_over_term(load_inputs(m), make_plan, mip_gap=1e-9, risk=False)
             for method, m in models.items()}
    assert plans["benders"].term["judge"] == "term"
    assert plans["benders"].term["objective_over_term"] == pytest.approx(
        plans["monolithic"].term["objective_over_term"], rel=1e-7)


@pytest.mark.parametrize("row,message", [
    ({"hourly_usd": 2.5}, "savings plan rate not below the pool's on-demand price (got '2.5')"),
    ({"max_gpus": 10}, "max_gpus on a savings plan row"),
    ({"upfront_usd": 9000}, "savings plan upfront above the whole term's commitment (got '9000"),
    ({"option": "savings_plan"}, "savings plan row without a term (option 'savings_plan')"),
    ({"plan_family": "x", "option": "on_demand", "gpu_type": "C", "hourly_usd": 3.0},
     "plan_family on a row that is not a savings plan"),
])
def test_bad_savings_plan_rows_exit_2(tmp_path, row, message):
    base = dict(gpu_type="A", region="r", option="savings_plan_1y", hourly_usd=1.2)
    m = sp_case(tmp_path, rows=[base | row])
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2 and message in r.output, r.output


def test_rows_of_one_commitment_must_agree_on_the_term(tmp_path):
    rows = [dict(gpu_type="A", region="r", option="savings_plan_1y", hourly_usd=1.2),
            dict(gpu_type="B", region="r", option="savings_plan_1y", hourly_usd=0.8, term_months=24)]
    r = CliRunner().invoke(cli, ["validate", str(sp_case(tmp_path, rows=rows))])
    assert r.exit_code == 2 and "disagree on term_months" in r.output, r.output


def test_a_backtest_with_savings_plans_exits_2(tmp_path):
    m = sp_case(tmp_path, a=[5.0] * 96, b=[3.0] * 96)
    r = CliRunner().invoke(cli, ["backtest", str(m), "--demand", str(tmp_path / "demand.csv"), "--train-hours", "48",
                                 "--test-hours", "24", "--jobs", "1", "--out", str(tmp_path / "bt")])
    assert r.exit_code == 2 and "do not carry savings plans yet" in r.output, r.output


def test_a_budget_caps_the_net_cost_with_a_savings_plan(tmp_path):
    free = solve_case(sp_case(tmp_path / "free"))
    capped = solve_case(sp_case(tmp_path / "cap", extra_top="[budget]\nmax_total_usd = 60"))
    assert capped.cost["total"] == pytest.approx(free.cost["total"]) and capped.shortfall_gpu_hours == 0
    assert float(capped.budget["spend_usd"].iat[0]) == pytest.approx(free.cost["total"])
    tight = solve_case(sp_case(tmp_path / "tight", extra_top="[budget]\nmax_total_usd = 50"))
    assert tight.cost["total"] <= 50 + 1e-6 and tight.shortfall_gpu_hours > 0


def test_scenario_costs_are_net_of_the_coverage(tmp_path):
    folder = tmp_path / "s"
    m = sp_case(folder)
    d = pd.read_csv(folder / "demand.csv")
    d = pd.concat([d.assign(scenario="low", gpus=d["gpus"] * 0.5), d.assign(scenario="high", gpus=d["gpus"] * 1.5)])
    d.to_csv(folder / "demand.csv", index=False)
    m.write_text(m.read_text().replace("[solver]", '[scenarios]\nlow = 0.3\nhigh = 0.7\n[solver]'))
    plan = solve_case(m, risk=False)
    sc = plan.scenario_costs.set_index("scenario")
    assert (sc["total"] * sc["probability"]).sum() == pytest.approx(plan.cost["total"])
    C = float(plan.spend["usd_per_hour"].iat[0])
    for name, f in (("low", 0.5), ("high", 1.5)):
        assert sc.loc[name, "total"] == pytest.approx(hand_cost(C, a=[x * f for x in A], b=[x * f for x in B]))


def test_a_savings_plan_for_a_pool_without_on_demand_exits_2(tmp_path):
    rows = [dict(gpu_type="C", region="r", option="savings_plan_1y", hourly_usd=0.5)]
    r = CliRunner().invoke(cli, ["validate", str(sp_case(tmp_path, rows=rows))])
    assert r.exit_code == 2 and "savings plan row for a pool without an on_demand row" in r.output, r.output


def test_each_commitment_is_charged_to_the_classes_it_covered_at_its_rates(tmp_path):
    from planner.report.showback import by_class

    plan = solve_case(sp_case(tmp_path))
    b = by_class(plan).set_index("workload_class")
    # by hand at C = 11.2: the plan pays A's 9.33 + 0 + 5 + 6.67 (first hour 11.2/1.2; hours 2-4 all of A,
    # then B with what is left) ... the shares at its own rates: a 32.80, b 9.60 of the 42.40 drawn
    cov = plan.coverage.assign(usd=lambda d: d["gpus"] * d["hours"] * d["rate"])
    by_pool = cov.groupby("gpu_type")["usd"].sum()
    assert by_pool["A"] == pytest.approx(32.8) and by_pool["B"] == pytest.approx(9.6)
    assert b.loc["a", "savings_plan_usd"] == pytest.approx(44.8 * 32.8 / 42.4)
    assert b.loc["b", "savings_plan_usd"] == pytest.approx(44.8 * 9.6 / 42.4)
    assert b["total_usd"].sum() == pytest.approx(plan.cost["total"])


def test_two_families_are_charged_to_their_own_classes(tmp_path):
    from planner.report.showback import by_class

    rows = [dict(gpu_type="A", region="r", option="savings_plan_1y", hourly_usd=1.5, plan_family="fa"),
            dict(gpu_type="B", region="r", option="savings_plan_1y", hourly_usd=0.8, plan_family="fb")]
    plan = solve_case(sp_case(tmp_path, rows=rows))
    b = by_class(plan).set_index("workload_class")
    sp = plan.spend.set_index("plan_family")
    assert b.loc["b", "savings_plan_usd"] == pytest.approx(sp.loc["fb", "committed_usd"])
    assert b.loc["a", "savings_plan_usd"] == pytest.approx(sp.loc["fa", "committed_usd"])


def test_focus_names_a_savings_plan_as_a_spend_commitment(tmp_path):
    plan = solve_case(sp_case(tmp_path))
    paths = write_outputs(plan, tmp_path / "out")
    out = tmp_path / "f.csv"
    assert CliRunner().invoke(cli, ["export", "focus", str(paths["json"]), "--out", str(out)]).exit_code == 0
    f = pd.read_csv(out)
    sp = f[f["x_Option"] == "savings_plan_1y"]
    assert set(sp["CommitmentDiscountCategory"]) == {"Spend"} and set(sp["CommitmentDiscountType"]) == {"Savings Plan"}
    assert set(sp["PricingUnit"]) == {"USD"}
    od = f[f["x_Option"] == "on_demand"].set_index("x_GpuType")
    # the on-demand GPU-hours no savings plan paid at list on the pool's rows; those it paid on its Used rows
    sp_used = sp[sp["CommitmentDiscountStatus"] == "Used"]
    assert od["ListCost"].sum() + sp_used["ListCost"].sum() == pytest.approx(sum(A) * OD["A"] + sum(B) * OD["B"])
    assert od["ConsumedQuantity"].sum() == pytest.approx(sum(A) + sum(B))  # every on-demand GPU-hour consumed
    assert od["BilledCost"].sum() == pytest.approx(plan.cost["on_demand"])
    # FOCUS: ContractedCost = ContractedUnitPrice x PricingQuantity on every row (a savings plan's Used rows
    # carried a unit price of 0 beside their cost), and no cost is float noise below zero
    priced = f[f["PricingQuantity"].notna()]
    assert np.allclose(priced["ContractedCost"], priced["ContractedUnitPrice"] * priced["PricingQuantity"],
                       rtol=1e-9, atol=1e-6)
    assert (sp_used["ContractedUnitPrice"] > 0).all()
    assert not ((f["BilledCost"] < 0) & (f["BilledCost"] > -1e-6)).any()


def test_payment_options_of_a_savings_plan_compare_the_same_dollars_an_hour(tmp_path):
    # AWS prices an all-upfront savings plan by lower rates (each dollar covers more); upfront_usd = the term's
    # hours prepays the commitment whole. At 0 % the deeper rates win; at 50 % a year paying now does not.
    rows = []
    for g in ("A", "B"):
        rows.append(dict(gpu_type=g, region="r", option="savings_plan_1y_no_upfront", hourly_usd=RATE[g]))
        rows.append(dict(gpu_type=g, region="r", option="savings_plan_1y_all_upfront", hourly_usd=RATE[g] * 0.96,
                         upfront_usd=8760))
    year = pd.date_range("2027-01-04", periods=8760, freq="h").strftime("%Y-%m-%dT%H:%M")
    chosen = {}
    for rate in (0.0, 0.5):
        folder = tmp_path / f"r{rate}"
        m = sp_case(folder, rows=rows, extra_top=f'[finance]\ndiscount_rate = {rate}\nobjective = "npv"\n'
                                                 '[commitments]\naccounting = "full_term"')
        pd.DataFrame({"period": year, "a": 8.0, "b": 5.0}).to_csv(folder / "demand.csv", index=False)
        plan = solve_case(m)
        bought = plan.spend[plan.spend["usd_per_hour"] > 1e-6]
        assert len(bought) == 1
        chosen[rate] = bought["option"].iat[0]
        C = float(bought["usd_per_hour"].iat[0])
        po = plan.payment_options.set_index("option")
        assert set(po.index) == {"savings_plan_1y_no_upfront", "savings_plan_1y_all_upfront"}
        assert po["full_term_usd"].to_numpy() == pytest.approx([C * 8760] * 2)
        assert po.loc[chosen[rate], "chosen"]
    assert chosen == {0.0: "savings_plan_1y_all_upfront", 0.5: "savings_plan_1y_no_upfront"}


def test_a_reserved_price_factor_leaves_a_savings_plans_upfront_per_dollar_alone_everywhere(tmp_path):
    """scale_inputs(reserved_price=f) scales a savings plan's discounted rates, not its upfront per USD/h committed
    (its unit); the price table (the workbook's Prices sheet) scaled it too (review of issue 33)."""
    from planner import load_inputs
    from planner.inputs.arrays import scale_inputs
    from planner.inputs import commitments

    rows = [dict(gpu_type=g, region="r", option="savings_plan_1y_all_upfront", hourly_usd=RATE[g], upfront_usd=8760)
            for g in ("A", "B")]
    inp = load_inputs(sp_case(tmp_path, rows=rows))
    scaled = scale_inputs(inp, reserved_price=1.5)
    sheet = scaled.tables.prices[commitments.kind_of(scaled.tables.prices["option"]).eq("spend")]
    assert list(sheet["upfront_usd"]) == [8760.0, 8760.0]
    assert list(sheet["hourly_usd"]) == pytest.approx([RATE["A"] * 1.5, RATE["B"] * 1.5])
    unit = scaled.commitments[commitments.is_spend(scaled.commitments)]
    assert list(unit["upfront_usd"]) == list(inp.commitments[commitments.is_spend(inp.commitments)]["upfront_usd"])


def test_the_commit_now_line_of_a_savings_plan_gives_its_npv_and_break_even(tmp_path):
    """Issue 35 review: the savings plan's sign-now line had neither. One eligible pool (A: 1.20/h at the plan's
    rate against 2.00 on demand): each dollar drawn pays for 2.00 / 1.20 of on-demand, break-even 60 %."""
    from openpyxl import load_workbook

    rows = [dict(gpu_type="A", region="r", option="savings_plan_1y", hourly_usd=RATE["A"])]
    plan = solve_case(sp_case(tmp_path, rows=rows))
    paths = write_outputs(plan, tmp_path / "out")
    line = next(r for r in load_workbook(paths["xlsx"])["Summary"].iter_rows(values_only=True)
                if str(r[0]).startswith("Commit now: savings_plan_1y"))
    assert "NPV $" in line[2] and "break-even 60.0 % (each dollar drawn pays for 1.67 dollars of on-demand)" in line[2]
    used = float(plan.spend["utilisation"].iat[0])
    assert ("pays" if used >= 0.6 else "DOES NOT PAY") in line[2]
    # the terminal says the same: whole commitment, NPV, break-even and verdict (it printed none of them)
    from planner.report.summary import summary_text

    term = next(x for x in summary_text(plan).splitlines() if "commit now savings_plan_1y" in x)
    total = float(plan.purchases[plan.purchases["option"] == "savings_plan_1y"]["commitment_usd"].sum())
    assert f"whole commitment ${total:,.0f}" in term and "NPV $" in term and "break-even 60.0 %" in term
    assert term.endswith("pays" if used >= 0.6 else "DOES NOT PAY")


def test_a_savings_plans_unused_dollars_never_run_gpus_beyond_demand(tmp_path):
    # An on-demand GPU-hour that a savings plan's unused dollars cover costs nothing net, so a solve could run GPUs
    # past demand there: coverage and utilisation overstated, stranded dollars understated (a review's case, this
    # one: 2,685 GPU-hours over demand, utilisation 98.46 % where it is 97.61 %). Two pools share one plan for a
    # year: east runs 32 GPUs to August plus a daily swing all year, west 32 from August
    periods = pd.date_range("2027-02-01", periods=8760, freq="h")
    h = np.arange(len(periods))
    east = np.where(periods < "2027-08-01", 32.0, 0.0) + 8 + 8 * np.sin(2 * np.pi * h / 24)
    west = np.where(periods < "2027-08-01", 0.0, 32.0)
    prices = [price("A100", g, "on_demand", 2.7447, gpus_per_instance=8) for g in ("e", "w")]
    prices += [dict(gpu_type="A100", region=g, option=o, hourly_usd=r, upfront_usd=u, gpus_per_instance=8)
               for g in ("e", "w") for o, r, u in (("savings_plan_1y_no_upfront", 1.8445, 0.0),
                                                   ("savings_plan_1y_partial_upfront", 1.80, 4380.0))]
    m = write_case(tmp_path, {"east": east.round(6).tolist(), "west": west.tolist()}, prices,
                   {"east": {"gpu_types": {"A100": 1.0}, "regions": ["e"]},
                    "west": {"gpu_types": {"A100": 1.0}, "regions": ["w"]}}, start="2027-02-01T00:00",
                   extra_top='[term]\njudge = "horizon"\n[commitments]\naccounting = "full_term"')
    pd.DataFrame(prices).to_csv(tmp_path / "prices.csv", index=False)
    plan = solve_case(m)
    served = plan.allocation.groupby(["workload_class", "period"])["gpus"].sum().unstack(0).reindex(
        plan.inputs.periods).fillna(0.0)
    assert served["east"].to_numpy() == pytest.approx(east.round(6), abs=1e-6)
    assert served["west"].to_numpy() == pytest.approx(west, abs=1e-6)
    # the coverage by hand: each hour min(demand, C / rate), C the plan's dollars an hour at its rate
    sp = plan.spend[plan.spend["usd_per_hour"] > 1e-9]
    assert len(sp) == 1
    C, rate = float(sp["usd_per_hour"].iat[0]), 1.80 if "partial" in sp["option"].iat[0] else 1.8445
    covered = np.minimum(east.round(6) + west, C / rate).sum()
    assert float(sp["covered_gpu_hours"].iat[0]) == pytest.approx(covered, rel=1e-7)
