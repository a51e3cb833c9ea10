"""What a scenario-tree plan reports (review of issue 22): every total expected, each branch's figures given its
branch, nothing double counted; and the tree read right (float noise, a purchase inside a period)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from planner import load_inputs, make_plan
from planner.cli import cli
from planner.pipeline.run import write_outputs
from planner.inputs.tree import expand
from test_tree import _tree_case


def _with_rows(folder, rows):
    prices = pd.read_csv(folder / "prices.csv")
    pd.concat([prices, pd.DataFrame(rows)], ignore_index=True).to_csv(folder / "prices.csv", index=False)
    return load_inputs(folder / "model.toml")


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    """The hand tree with a savings plan and a 1-year term paid all upfront: both may be bought per branch."""
    folder = tmp_path_factory.mktemp("rich")
    _tree_case(folder)
    inp = _with_rows(folder, [dict(gpu_type="A", region="r1", option="savings_plan_1y", hourly_usd=0.7),
                              dict(gpu_type="A", region="r1", option="reserved_1y_all_upfront", hourly_usd=0.0,
                                   upfront_usd=0.55 * 8760, term_months=12)])
    plan = make_plan(inp, risk=False)
    return plan, write_outputs(plan, folder / "out")


def test_every_total_is_expected_and_adds_up(rich):
    plan, paths = rich
    doc = json.loads(paths["json"].read_text())
    sc = plan.scenario_costs
    assert float((sc["probability"] * sc["total"]).sum()) == pytest.approx(plan.cost["total"], rel=1e-9)
    bought = plan.purchases[plan.purchases["units"] > 0]
    assert (bought["probability"] < 1).any()  # the plan does buy per branch (else this test tests nothing)
    # cash: the schedule's reserved cash over the whole terms is the expected full-term cost
    cash = plan.cash_schedule
    assert float(cash["upfront_usd"].sum() + cash["reserved_recurring_usd"].sum()) == pytest.approx(
        plan.commitments["reserved_full_term_usd"], rel=1e-9)
    # the workbook's Summary total (cached values) is plan.json's
    from openpyxl import load_workbook

    ws = load_workbook(paths["xlsx"], data_only=True)["Summary"]
    values = {r[0].value: r[1].value for r in ws.iter_rows() if r[0].value}
    total = next(v for k, v in values.items() if str(k).lower().startswith("total expected cost")
                 or str(k).lower().startswith("total cost"))
    assert float(total) == pytest.approx(doc["cost_usd"]["total"], rel=1e-9)


def test_focus_bills_the_expected_cash(rich, tmp_path):
    plan, paths = rich
    out = tmp_path / "focus.csv"
    r = CliRunner().invoke(cli, ["export", "focus", str(paths["json"]), "--out", str(out)])
    assert r.exit_code == 0, r.output
    f = pd.read_csv(out)
    cash = plan.cash_schedule
    horizon = cash["month"] <= plan.inputs.periods[-1].strftime("%Y-%m")
    want = float(cash.loc[horizon, "total_usd"].sum())
    assert float(f["BilledCost"].sum()) == pytest.approx(want, rel=1e-6)


def test_a_branch_savings_plan_is_judged_in_its_branch(rich):
    plan, _ = rich
    sp = plan.spend[plan.spend["usd_per_hour"] > 0]
    for r in sp.itertuples():  # used in its own branch: never more than committed, never diluted by the others
        assert 0 <= r.utilisation <= 1 + 1e-9
    tr = plan.memo.tranches if plan.memo is not None else None
    from planner.memo.tranches import tranche_utilisation

    tr = tranche_utilisation(plan)
    branch = tr[tr["probability"] < 1]
    for r in branch.itertuples():  # value and cost on the same footing: given its branch
        assert r.net_savings_usd == pytest.approx(r.on_demand_value_usd - r.horizon_cost_usd)
        assert r.avg_utilisation <= 1 + 1e-9


def test_float_noise_is_not_information(tmp_path):
    inp = _tree_case(tmp_path)
    demand = inp.demand.copy()
    demand[0, 0, 10] += 3e-9 * max(1.0, demand[0, 0, 10])  # a CSV's last digit
    res, act, member = expand(inp.reserved_source[0], inp.reserved_source[1], inp.periods, demand, inp.scenarios,
                              inp.probability)
    assert np.array_equal(member, inp.reserved_member) and len(res) == len(inp.commitments)


def test_a_purchase_inside_a_period_knows_nothing_of_that_period(tmp_path):
    inp = _tree_case(tmp_path, split_day=12)  # the scenarios differ from January 13 on
    src = inp.reserved_source[0].iloc[:1].copy()
    src["purchase_date"] = pd.Timestamp("2027-01-13T11:30")  # a capacity block bought at 11:30 on January 13
    _res, _act, member = expand(src, inp.reserved_source[1][:1], inp.periods, inp.demand, inp.scenarios,
                                inp.probability)
    assert member is None  # nothing of January 13 is known at 11:30: one node, shared
    src["purchase_date"] = pd.Timestamp("2027-01-14T00:00")  # the next day: January 13 is known
    _res, _act, member = expand(src, inp.reserved_source[1][:1], inp.periods, inp.demand, inp.scenarios,
                                inp.probability)
    assert member is not None and member.shape == (2, 2)


def test_a_scenario_of_probability_zero_is_refused(tmp_path):
    _tree_case(tmp_path)
    m = tmp_path / "model.toml"
    m.write_text(m.read_text().replace("up = 0.5", "up = 0.0").replace("down = 0.5", "down = 1.0"))
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2 and "scenarios.up" in r.output and "remove it" in r.output


def test_cbc_and_lp_files_name_the_savings_plan_columns(tmp_path):
    _tree_case(tmp_path, mode="first_stage")
    _with_rows(tmp_path, [dict(gpu_type="A", region="r1", option="savings_plan_1y", hourly_usd=0.7)])
    lp = tmp_path / "m.lp"
    r = CliRunner().invoke(cli, ["plan", str(tmp_path / "model.toml"), "--out", str(tmp_path / "o"), "--no-memo",
                                 "--write-lp", str(lp), "-q"])
    assert r.exit_code == 0, r.output
    assert "v_" in lp.read_text()


def test_evaluate_scenario_on_a_plan_without_a_tree_is_refused(tmp_path):
    _tree_case(tmp_path, mode="first_stage")
    out = tmp_path / "o"
    assert CliRunner().invoke(cli, ["plan", str(tmp_path / "model.toml"), "--out", str(out), "--no-memo",
                                    "-q"]).exit_code == 0
    d = pd.read_csv(tmp_path / "demand.csv")
    d[d["scenario"] == "up"].drop(columns="scenario").to_csv(tmp_path / "actual.csv", index=False)
    r = CliRunner().invoke(cli, ["evaluate", str(tmp_path / "model.toml"), "--plan", str(out / "plan.json"),
                                 "--demand", str(tmp_path / "actual.csv"), "--scenario", "up",
                                 "--out", str(tmp_path / "ev")])
    assert r.exit_code == 2 and "no scenario tree" in r.output
