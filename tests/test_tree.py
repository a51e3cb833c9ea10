"""Purchases that wait for information (issue 22, item 2): the scenario tree the demand implies.

Hand oracle: one pool, on-demand 1 $/GPU-h, reserved_1y 0.6 and reserved_3y 0.5 $/GPU-h effective
(amortised), monthly purchases over 2027 (daily periods). Demand is 10 GPUs January to June in both
scenarios; from July 1 it is 20 ("up") or 4 ("down"), p = 0.5 each. On July 1 nothing of July is known yet
(the scenarios coincide in every period before it): July's purchase is common; August's may differ.

- The tree: buy 10 of the 3-year term on January 1 (10 x 0.5 x 8,760 h = 43,800 $); "up" runs July on
  demand (10 x 744 h, with probability 0.5: 3,720 $) and on August 1 buys 10 more (10 x 0.5 x 3,672 h =
  18,360 $, with probability 0.5: 9,180 $); "down" buys nothing. Expected cost 56,700 $.
- Without waiting (every purchase common): the same 10 in January; a common purchase from July on costs
  0.5 $ a GPU-hour in both scenarios and saves 1 $ with probability 0.5: a tie, so the "up" months are
  worth 10 x 4,416 h x 0.5 = 22,080 $ of on-demand (or as much in common terms). Expected cost 65,880 $.
- Value of waiting: 65,880 - 56,700 = 9,180 $ = p_up x (od - r_3y) x 10 GPUs x 3,672 h (August to December).

An independent formulation (scenario-indexed purchases with explicit non-anticipativity equalities, built
with PuLP here) must give the planner's optimum on this case and on a random three-branch tree.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pulp
import pytest

from conftest import price
from planner import load_inputs, make_plan
from planner.inputs.arrays import first_stage

AUGUST_ON_HOURS = 153 * 24  # August 1 to December 31


def _tree_case(folder, levels=None, probs=None, split_day=181, mode=None, same=False, spot=False):
    """Daily 2027, one class; scenarios equal before ``split_day`` then at ``levels`` (one per scenario)."""
    folder.mkdir(parents=True, exist_ok=True)
    levels = levels or {"up": 20.0, "down": 4.0}
    probs = probs or {s: 1.0 / len(levels) for s in levels}
    days = pd.date_range("2027-01-01", periods=365, freq="D")
    rows = []
    for s, after in levels.items():
        for i, d in enumerate(days):
            g = 10.0 if (i < split_day or same) else after
            rows.append({"period": d.strftime("%Y-%m-%dT%H:%M"), "workload_class": "c", "gpus": g, "scenario": s})
    pd.DataFrame(rows).to_csv(folder / "demand.csv", index=False)
    prices = [price("A", "r1", "on_demand", 1.0), price("A", "r1", "reserved_1y", 0.6, term_months=12),
              price("A", "r1", "reserved_3y", 0.5, term_months=36)]
    if spot:
        prices.append(price("A", "r1", "spot", 0.4, interruptions_per_hour=0.0, max_gpus=3.0))
    pd.DataFrame(prices).to_csv(folder / "prices.csv", index=False)
    text = ['name = "tree"', 'demand = "demand.csv"', 'prices = "prices.csv"',
            "[solver]", 'backend = "highs"', "mip_gap = 0.0", 'method = "monolithic"',
            "[commitments]", 'purchase_every = "month"'] + \
        ([f'non_anticipativity = "{mode}"'] if mode else []) + \
        ["[scenarios]"] + [f"{s} = {p!r}" for s, p in probs.items()] + \
        ["[classes.c]", f"spot = {'true' if spot else 'false'}"] + (["spot_goodput = 1.0"] if spot else [])
    (folder / "model.toml").write_text("\n".join(text) + "\n")
    return load_inputs(folder / "model.toml")


def test_hand_oracle_buys_at_the_branch_and_values_waiting(tmp_path):
    inp = _tree_case(tmp_path)
    assert inp.reserved_member is not None
    plan = make_plan(inp)
    assert plan.status.value == "optimal"
    assert plan.objective == pytest.approx(56_700.0, abs=1e-4)
    p = plan.purchases[plan.purchases["units"] > 0]
    jan = p[p["purchase_date"] == pd.Timestamp("2027-01-01")]
    aug = p[p["purchase_date"] == pd.Timestamp("2027-08-01")]
    assert jan["gpus"].sum() == 10 and set(jan["branch"]) == {"all"} and jan["firm"].all()
    assert aug["gpus"].sum() == 10 and list(aug["branch"]) == ["up"] and aug["probability"].iat[0] == 0.5
    assert set(p["purchase_date"]) == {pd.Timestamp("2027-01-01"), pd.Timestamp("2027-08-01")}
    fs = make_plan(first_stage(inp), risk=False)
    assert fs.objective == pytest.approx(65_880.0, abs=1e-4)
    assert plan.risk.first_stage_usd == pytest.approx(65_880.0, abs=1e-4)
    assert plan.risk.value_of_waiting_usd == pytest.approx(9_180.0, abs=1e-4)
    assert plan.risk.value_of_waiting_usd == pytest.approx(0.5 * (1.0 - 0.5) * 10 * AUGUST_ON_HOURS)
    # what the plan reports: expected reserved cost (the up branch's purchase at its probability), and each
    # scenario's own fleet: down never holds the up branch's GPUs
    assert plan.cost["reserved"] == pytest.approx(43_800 + 0.5 * 18_360, abs=1e-6)
    held = plan.fleet[plan.fleet["period"] >= pd.Timestamp("2027-08-01")].groupby("scenario")["reserved_owned"]
    assert held.max().to_dict() == {"down": 10.0, "up": 20.0}


def test_first_stage_mode_is_the_two_stage_plan(tmp_path):
    inp = _tree_case(tmp_path, mode="first_stage")
    assert inp.reserved_member is None
    assert make_plan(inp, risk=False).objective == pytest.approx(65_880.0, abs=1e-4)


def test_a_tree_that_never_branches_is_the_two_stage_plan_exactly(tmp_path):
    inp = _tree_case(tmp_path / "same", same=True)
    assert inp.reserved_member is None  # the scenarios never differ: no purchase can wait for anything
    two = _tree_case(tmp_path / "fs", same=True, mode="first_stage")
    a, b = make_plan(inp, risk=False), make_plan(two, risk=False)
    assert a.objective == b.objective
    assert np.array_equal(a.purchases["units"].to_numpy(), b.purchases["units"].to_numpy())


def _independent(inp) -> float:
    """The tree as scenario-indexed purchases with explicit non-anticipativity (PuLP, written from the inputs'
    arrays by hand: no planner model code): n[c, s] = n[c, s'] when s and s' share demand before c's date."""
    res = inp.commitments
    S, T = len(inp.scenarios), inp.T
    base = res["origin"].to_numpy() if "origin" in res else np.arange(len(res))
    rows = res.drop_duplicates("origin") if "origin" in res else res
    R = len(rows)
    act = inp.active[np.unique(base, return_index=True)[1]] if "origin" in res else inp.active
    prob = inp.probability
    od = float(inp.pools["od"].iat[0])
    prob_ = pulp.LpProblem("tree", pulp.LpMinimize)
    n = {(c, s): prob_.add_variable(f"n_{c}_{s}", lowBound=0, cat="Integer") for c in range(R) for s in range(S)}
    y = {(s, t): prob_.add_variable(f"y_{s}_{t}", lowBound=0) for s in range(S) for t in range(T)}
    z = {(s, t): prob_.add_variable(f"z_{s}_{t}", lowBound=0) for s in range(S) for t in range(T)}
    sp = float(inp.pools["sp"].iat[0]) if inp.pools["has_sp"].iat[0] else None
    r = rows["r"].to_numpy(float)
    hours_active = act @ inp.hours
    obj = []
    for s in range(S):
        obj += [prob[s] * r[c] * hours_active[c] * n[c, s] for c in range(R)]
        obj += [prob[s] * od * inp.hours[t] * y[s, t] for t in range(T)]
        if sp is not None:
            obj += [prob[s] * sp * inp.hours[t] * z[s, t] for t in range(T)]
    prob_ += pulp.lpSum(obj)
    for s in range(S):
        for t in range(T):
            cap = pulp.lpSum(act[c, t] * n[c, s] for c in range(R) if act[c, t] > 0)
            prob_ += cap + y[s, t] + (z[s, t] if sp is not None else 0) >= inp.demand[s, 0, t]
            if sp is not None:
                prob_ += z[s, t] <= float(inp.pools["cap_sp"].iat[0])
    dates = pd.DatetimeIndex(rows["purchase_date"])
    for c in range(R):
        t = int(np.searchsorted(inp.periods, dates[c]))
        for s in range(S):
            for s2 in range(s + 1, S):
                if np.array_equal(inp.demand[s, :, :t], inp.demand[s2, :, :t]):
                    prob_ += n[c, s] == n[c, s2]
    prob_.solve(pulp.HiGHS(msg=False) if pulp.HiGHS(msg=False).available() else pulp.PULP_CBC_CMD(msg=False))
    assert pulp.LpStatus[prob_.status] == "Optimal"
    return float(pulp.value(prob_.objective))


def test_an_independent_formulation_equals_the_planner_on_the_hand_case(tmp_path):
    inp = _tree_case(tmp_path)
    assert make_plan(inp, risk=False).objective == pytest.approx(_independent(inp), rel=1e-9, abs=1e-6)


def test_an_independent_formulation_equals_the_planner_on_a_three_branch_tree(tmp_path):
    # three branches split on March 14 (a mid-month: information arrives between purchase dates and is used at
    # the next one), unequal probabilities, capped spot
    inp = _tree_case(tmp_path, levels={"low": 6.0, "mid": 13.0, "high": 27.0}, probs={"low": 0.2, "mid": 0.5,
                                                                                        "high": 0.3},
                     split_day=72, spot=True)
    plan = make_plan(inp, risk=False)
    assert plan.objective == pytest.approx(_independent(inp), rel=1e-9, abs=1e-6)
    later = plan.purchases[(plan.purchases["units"] > 0) & ~plan.purchases["firm"]]
    assert later["purchase_date"].min() >= pd.Timestamp("2027-04-01")  # nothing waits on what is not yet known
    assert {"high", "mid"} <= set(later["branch"])


def test_the_decomposition_solves_the_tree(tmp_path):
    inp = _tree_case(tmp_path)
    bend = make_plan(replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method="benders"))),
                     risk=False, mip_gap=1e-7)
    assert "benders" in bend.stats
    assert bend.objective == pytest.approx(56_700.0, abs=1e-3)


def test_a_tree_with_resales_solves_alike_whole_and_decomposed(tmp_path):
    inp = _tree_case(tmp_path)
    prices = pd.read_csv(tmp_path / "prices.csv")
    prices["resale_haircut"] = np.where(prices["option"].eq("reserved_1y"), 0.2, np.nan)
    prices.to_csv(tmp_path / "prices.csv", index=False)
    inp = load_inputs(tmp_path / "model.toml")
    assert inp.reserved_member is not None and inp.commitments["kind"].eq("exit").any()
    mono = make_plan(inp)  # the risk view and the option's value re-solve without resales
    bend = make_plan(replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method="benders"))),
                     risk=False, mip_gap=1e-7)
    assert mono.status.value == "optimal" and "exit_value_usd" in mono.commitments
    assert bend.objective == pytest.approx(mono.objective, rel=1e-6)


def test_the_workbook_counts_a_branch_purchase_at_its_probability(tmp_path):
    from openpyxl import load_workbook

    from planner.pipeline.run import write_outputs

    plan = make_plan(_tree_case(tmp_path), risk=False)
    paths = write_outputs(plan, tmp_path / "out")
    wb = load_workbook(paths["xlsx"], data_only=False)
    ws = wb["Cash flow"]
    header = [c.value for c in ws[1]]
    rec = header.index("reserved_recurring_usd")
    august = next(r for r in ws.iter_rows(min_row=2) if str(r[0].value).startswith("2027-08"))
    import re

    from openpyxl.utils import column_index_from_string

    heads = [c.value for c in wb["Purchases"][1]]
    cols = {heads[column_index_from_string(c) - 1] for c in re.findall(r"Purchases!\$([A-Z]+)\$", august[rec].value)}
    assert "probability" in cols  # the up branch's fee, weighted by its probability
    cached = load_workbook(paths["xlsx"], data_only=True)["Cash flow"]
    month = {str(r[0].value)[:7]: r[rec].value for r in cached.iter_rows(min_row=2)}
    want = plan.cash_schedule.set_index("month")["reserved_recurring_usd"]
    assert month["2027-08"] == pytest.approx(float(want["2027-08"]))
    # 10 GPUs for the year (0.5 x 744 h) + the up branch's 10 at probability 0.5
    assert float(want["2027-08"]) == pytest.approx(10 * 0.5 * 744 + 0.5 * 10 * 0.5 * 744)
