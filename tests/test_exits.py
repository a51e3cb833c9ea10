"""Exits before the term ends (issue 24): a term with a resale_haircut may be resold at a later purchase date,
at least 30 days into its term (AWS RI Marketplace): its fees stop, the upfront left comes back less the
haircut. Hand oracles; the value of the option reported; Benders equal to the monolithic model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from planner import load_inputs, make_plan
from planner.cli import cli
from conftest import price, solve_case, write_case

UP, HOURLY, OD, L = 4380.0, 0.5, 3.0, 8760.0


def case(folder: Path, haircut=0.12, accounting="full_term", months=3, method=None) -> Path:
    days = pd.date_range("2027-01-01", periods=365, freq="D")
    end = pd.Timestamp("2027-01-01") + pd.DateOffset(months=months)
    demand = [20.0 if d < end else 0.0 for d in days]
    res = price(option="reserved_1y", hourly=HOURLY, upfront_usd=UP, term_months=12)
    if haircut is not None:
        res["resale_haircut"] = haircut
    rows = [price(hourly=OD), res]
    m = write_case(folder, {"c": demand}, rows, {"c": {}}, hours=24, start="2027-01-01T00:00",
                   solver={"method": method} if method else None,
                   extra_top=f'[commitments]\npurchase_every = "month"\naccounting = "{accounting}"')
    pd.DataFrame(rows).to_csv(folder / "prices.csv", index=False)
    return m


def sold_saving(rem_hours: float, haircut: float) -> float:
    """Per GPU: the fees no longer paid and the upfront left that comes back, less the haircut."""
    return HOURLY * rem_hours + (1 - haircut) * UP * rem_hours / L


@pytest.mark.parametrize("accounting", ["full_term", "amortised"])
def test_a_term_bought_for_a_three_month_burst_is_resold_by_hand(tmp_path, accounting):
    plan = solve_case(case(tmp_path, accounting=accounting))
    rem = L - 90 * 24  # sold 2027-04-01, 90 days into the year
    assert plan.cost["total"] == pytest.approx(20 * (HOURLY * L + UP - sold_saving(rem, 0.12)))
    p = plan.purchases[plan.purchases["instances"] > 0].set_index("kind")
    assert p.loc["instance", "instances"] == 20 and p.loc["exit", "instances"] == 20
    assert pd.Timestamp(p.loc["exit", "purchase_date"]) == pd.Timestamp("2027-04-01")
    # without the option the burst rents: 20 x 3.00 x 2,160 h; the option is worth the difference
    assert plan.commitments["cost_without_exits_usd"] == pytest.approx(20 * OD * 2160)
    assert plan.commitments["exit_value_usd"] == pytest.approx(20 * OD * 2160 - plan.cost["total"])
    assert plan.cash_schedule["total_usd"].sum() == pytest.approx(plan.cost["total"])  # money back in April


def test_a_haircut_that_eats_the_saving_keeps_renting(tmp_path):
    plan = solve_case(case(tmp_path, haircut=1.0, months=1))  # a month's burst, nothing back on the upfront
    # buy-and-sell: 8,760 + 4,380 ... fees for Jan (744 h x 0.5) + the whole upfront 4,380 > 744 h x 3.00
    assert plan.purchases["instances"].sum() == 0 and plan.cost["total"] == pytest.approx(20 * OD * 744)


def test_resales_start_30_days_into_the_term_and_end_with_it(tmp_path):
    inp = load_inputs(case(tmp_path))
    res = inp.commitments
    ex = res[res["kind"].eq("exit")]
    parents = res.iloc[ex["parent"].to_numpy(int)]
    assert len(ex) > 0
    assert (ex["purchase_date"].to_numpy() >= (parents["active_from"] + pd.Timedelta(days=30)).to_numpy()).all()
    assert (ex["purchase_date"].to_numpy() < parents["end_date"].to_numpy()).all()
    assert (ex["m"] < 0).all()


def test_evaluate_and_benders_carry_the_resale(tmp_path):
    m = case(tmp_path / "m", method="monolithic")
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["plan", str(m), "--out", str(out), "--no-memo", "-q"]).exit_code == 0
    doc = json.loads((out / "plan.json").read_text())
    sale = [r for r in doc["reserved_purchases"] if r["kind"] == "exit" and r["instances"]]
    assert sale and sale[0]["resale_of"]["purchase_date"] == "2027-01-01"
    r = CliRunner().invoke(cli, ["evaluate", str(m), "--out", str(tmp_path / "ev1"), "--plan", str(out / "plan.json"), "--demand",
                                 str(tmp_path / "m" / "demand.csv"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["regret_usd"] == pytest.approx(0.0, abs=1e-6)
    bend = make_plan(load_inputs(case(tmp_path / "b", method="benders")), mip_gap=1e-9)
    assert "benders" in bend.stats and bend.cost["total"] == pytest.approx(doc["cost_usd"]["total"], rel=1e-6)


def price_path_case(folder: Path, method: str) -> Path:
    """The three-month burst of :func:`case` on two equally likely price paths: ``sheet`` keeps the sheet's term
    (0.50 an hour), ``cheap`` has its own at 0.20 (a scenario row: every purchase of that scenario pays it)."""
    m = case(folder, method=method)
    rows = pd.read_csv(folder / "prices.csv")
    cheap = rows.iloc[[1]].assign(hourly_usd=0.2, scenario="cheap", resale_haircut=np.nan)  # the sheet's haircut
    pd.concat([rows.assign(scenario=""), cheap]).to_csv(folder / "prices.csv", index=False)
    m.write_text(m.read_text().replace("[commitments]", "[scenarios]\nsheet = 0.5\ncheap = 0.5\n\n[commitments]"))
    return m


@pytest.mark.parametrize("method", ["monolithic", "benders"])
def test_a_resale_stops_the_fee_its_scenario_pays_by_hand(tmp_path, method):
    """A resale on a price path stops the fee the term pays in that scenario, not the sheet's: the January
    purchase is shared (its expected price 0.35), the April sale is each scenario's own (0.50 and 0.20 stop).
    Built from the sheet's row, both sales stopped 0.50: a credit worth more than the cheap path's term cost, and
    with monthly purchases a master that sold terms it never bought (a recourse LP infeasible)."""
    inp = load_inputs(price_path_case(tmp_path, method))
    res = inp.commitments
    ex = np.flatnonzero(res["kind"].eq("exit").to_numpy())
    par = res["parent"].to_numpy(int)[ex]
    one = np.flatnonzero(inp.reserved_member[ex].sum(axis=1) == 1)  # the sales made in one scenario
    assert len(one)
    for e, p in zip(ex[one], par[one]):
        s = inp.scenarios[int(np.flatnonzero(inp.reserved_member[e])[0])]
        fee = {"sheet": HOURLY, "cheap": 0.2}[s]
        if inp.reserved_member[p].sum() == 1:  # a parent of that scenario alone pays the scenario's fee
            assert res["hourly_usd"].iloc[p] == pytest.approx(fee)
        assert res["hourly_usd"].iloc[e] == pytest.approx(fee)
    plan = make_plan(inp, mip_gap=1e-9, risk=False)  # (no risk view: its sub-plans are not what is checked)
    rem = L - 90 * 24
    fee = (HOURLY + 0.2) / 2
    assert plan.cost["total"] == pytest.approx(20 * (fee * L + UP - fee * rem - (1 - 0.12) * UP * rem / L), rel=1e-9)
    sold = plan.purchases[(plan.purchases["kind"] == "exit") & (plan.purchases["instances"] > 0)]
    assert sold["instances"].sum() == pytest.approx(40)  # 20 sold in each scenario
    assert ("benders" in plan.stats) == (method == "benders")
    # the memo's tranche: the January term, each branch's sale netted at its probability (1/2 given the term's
    # branch, the root): its whole liability is the plan's cost (nothing rented); before, both sales counted whole
    from planner.memo.tranches import tranche_utilisation

    tr = tranche_utilisation(plan)
    assert len(tr) == 1 and tr["capacity_gpu_hours"].iat[0] == pytest.approx(20 * 90 * 24)
    assert tr["full_term_usd"].iat[0] == pytest.approx(plan.cost["total"], rel=1e-9)
    # plan.json term's GPUs bought: the terms (expected over the tree), not the sales (was 20 - 2 x 20 = -20)
    from planner.pipeline.whole_term import _expected_gpus

    assert _expected_gpus(plan) == pytest.approx(20.0)


@pytest.mark.parametrize("change,message", [
    ({"resale_haircut": 1.5}, "column 'resale_haircut': absurdly large value (got '1.5')"),
    ({"resale_haircut": 0.1, "residual_usd": 100}, "resale_haircut on a row with a residual value"),
])
def test_bad_resale_inputs_exit_2(tmp_path, change, message):
    m = case(tmp_path)
    df = pd.read_csv(tmp_path / "prices.csv")
    for k, v in change.items():
        df.loc[1, k] = v
    df.to_csv(tmp_path / "prices.csv", index=False)
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2 and message in r.output, r.output


def test_a_haircut_on_an_on_demand_row_exits_2(tmp_path):
    m = case(tmp_path)
    df = pd.read_csv(tmp_path / "prices.csv")
    df.loc[0, "resale_haircut"] = 0.1
    df.to_csv(tmp_path / "prices.csv", index=False)
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2 and "resale_haircut on a row that is not reserved" in r.output, r.output


def test_a_backtest_offers_no_resale_and_does_not_crash(tmp_path):
    days = pd.date_range("2027-01-01", periods=365, freq="D")
    demand = [0.0 if d < pd.Timestamp("2027-05-15") else 20.0 for d in days]
    res = price(option="reserved_1y", hourly=HOURLY, upfront_usd=UP, term_months=12, resale_haircut=0.12)
    rows = [price(hourly=OD), res]
    m = write_case(tmp_path, {"c": demand}, rows, {"c": {}}, hours=24, start="2027-01-01T00:00",
                   extra_top='[commitments]\npurchase_every = "month"')
    pd.DataFrame(rows).to_csv(tmp_path / "prices.csv", index=False)
    r = CliRunner().invoke(cli, ["backtest", str(m), "--demand", str(tmp_path / "demand.csv"), "--train-hours",
                                 "1440", "--test-hours", "1440", "--strategies", "point", "--forecaster", "latest",
                                 "--jobs", "1", "--out", str(tmp_path / "bt"), "--json"])
    assert r.exit_code in (0, 3), r.output
    doc = json.loads(r.output)
    assert all(p.get("instances", 0) >= 0 for w in doc["windows"] for p in w["purchases"])


def test_benders_with_a_discount_only_commitment_solves_whole_and_says_so(tmp_path):
    from test_discount_only import case as cud_case

    m = cud_case(tmp_path, "false")
    m.write_text(m.read_text().replace("[solver]", '[solver]\nmethod = "benders"'))
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(tmp_path / "out")])
    assert r.exit_code == 3, r.output  # 2 GPUs short under the cap, as the monolithic model says
    assert "solved whole (monolithic): the decomposition does not apply" in r.output


@pytest.mark.parametrize("how", ["weekly", "monthly", "monolithic"])
def test_a_resale_worth_more_than_its_term_stops_the_solve_with_a_reason(tmp_path, how):
    """A resale credited more than its term costs is a purchase that pays for itself without bound: the Benders
    master (daily or weekly cuts; the monthly scheme) and the whole model are unbounded, and say so (before, the
    master's unbounded point sold terms never bought and a recourse LP came back infeasible; the whole model wrote
    a plan called feasible)."""
    from dataclasses import replace

    from planner.core.errors import SolverError
    from planner.solve.decompose import solve_benders

    inp = load_inputs(case(tmp_path, method="benders", accounting="amortised"))
    res = inp.commitments.copy()
    ex = res["kind"].eq("exit").to_numpy()
    res.loc[ex, "r"] = 100.0  # each hour after the sale credits 100 (amortised): far more than the term costs
    pumped = replace(inp, commitments=res)
    if how == "monolithic":
        with pytest.raises(SolverError, match="the model is unbounded"):
            make_plan(replace(pumped, config=replace(pumped.config, solver=replace(pumped.config.solver,
                                                                                  method="monolithic"))), risk=False)
        return
    with pytest.raises(SolverError, match="Benders master .* is (Unbounded|Infeasible|Primal infeasible or unbounded)"):
        solve_benders(pumped, chunk="week" if how == "weekly" else "month", mip_gap=1e-6, multicut=how == "weekly")


@pytest.mark.parametrize("accounting", ["amortised", "full_term"])
def test_an_unbounded_whole_model_on_the_default_path_says_unbounded_not_infeasible(tmp_path, monkeypatch, accounting):
    """``planner plan`` on the default (whole-term) path, solved whole: HiGHS's presolve calls the model "unbounded
    or infeasible"; the message says which (it said "The model is infeasible" where a sale paid more than its
    term). Exit 1, nothing written."""
    import planner.inputs.commitments as commitments

    made = commitments.exit_rows

    def pumped(*args, **kwargs):  # a resale credited far more than its term costs (the validator refuses such
        rows, act = made(*args, **kwargs)  # inputs: made here, past it)
        return (rows.assign(r=100.0, upfront_usd=1e6, hourly_usd=100.0) if len(rows) else rows), act

    monkeypatch.setattr(commitments, "exit_rows", pumped)
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["plan", str(case(tmp_path, method="monolithic", accounting=accounting)),
                                 "--out", str(out), "--jobs", "1", "-q"])
    assert r.exit_code == 1, r.output
    assert "the model is unbounded" in r.output and "infeasible" not in r.output.replace("(a resale", "")
    assert not out.exists()


def test_a_residual_on_a_scenarios_row_of_a_resold_term_exits_2(tmp_path):
    """A resold term gives up its residual: a scenario's row with one, where the sheet's row may be resold, is
    refused (before, the cheap path bought terms at 0.2 x 8,760 + 2,000 - 1,900 and sold them for more: the
    whole model unbounded, the Benders master too)."""
    m = price_path_case(tmp_path, "monolithic")
    rows = pd.read_csv(tmp_path / "prices.csv")
    rows.loc[rows["scenario"].eq("cheap"), ["upfront_usd", "residual_usd"]] = [2000.0, 1900.0]
    rows.to_csv(tmp_path / "prices.csv", index=False)
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2, r.output
    assert "row 4, column 'residual_usd': residual value on a scenario's row of a term that may be resold" in r.output


def test_a_haircut_in_a_scenarios_price_file_exits_2(tmp_path):
    """The haircut is the sheet's: one given in a scenario's price file (where it was silently ignored) is refused,
    as in the sheet's scenario column."""
    m = case(tmp_path)
    pd.DataFrame([{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "hourly_usd": 0.2, "upfront_usd": UP,
                   "term_months": 12, "resale_haircut": 0.9}]).to_csv(tmp_path / "late.csv", index=False)
    m.write_text(m.read_text().replace(
        "[commitments]", '[scenarios.sheet]\nprobability = 0.5\n\n[scenarios.late]\nprobability = 0.5\n'
                         'prices = "late.csv"\n\n[commitments]'))
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2, r.output
    assert "late.csv, row 2, column 'resale_haircut': resale_haircut in scenario late's price file" in r.output


def test_the_summary_says_which_branch_sells(tmp_path):
    """Each branch's planned sale on the Summary names its branch and probability (two lines alike before)."""
    import openpyxl

    from planner.pipeline.run import write_outputs

    plan = make_plan(load_inputs(price_path_case(tmp_path, "monolithic")), mip_gap=1e-9)
    write_outputs(plan, tmp_path / "out")
    ws = openpyxl.load_workbook(tmp_path / "out" / "plan.xlsx")["Summary"]
    notes = sorted(str(r[2]) for r in ws.iter_rows(values_only=True) if r[0] == "Sell later (planned)")
    assert len(notes) == 2 and ", if cheap (50%)" in notes[0] and ", if sheet (50%)" in notes[1], notes


@pytest.mark.parametrize("where", ["column", "file"])
def test_a_scenarios_row_with_another_term_exits_2(tmp_path, where):
    """A scenario's price for a 1-year term given as 24 months would be amortised over the sheet's 12 unseen."""
    m = case(tmp_path)
    row = {"gpu_type": "A", "region": "r1", "option": "reserved_1y", "hourly_usd": 0.2, "upfront_usd": UP,
           "term_months": 24}
    if where == "column":
        rows = pd.read_csv(tmp_path / "prices.csv").assign(scenario="")
        pd.concat([rows, pd.DataFrame([row | {"scenario": "late"}])]).to_csv(tmp_path / "prices.csv", index=False)
        top = "[scenarios]\nsheet = 0.5\nlate = 0.5\n\n[commitments]"
    else:
        pd.DataFrame([row]).to_csv(tmp_path / "late.csv", index=False)
        top = '[scenarios.sheet]\nprobability = 0.5\n\n[scenarios.late]\nprobability = 0.5\nprices = "late.csv"\n\n[commitments]'
    m.write_text(m.read_text().replace("[commitments]", top))
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2, r.output
    assert "column 'term_months': term_months on a scenario's row differs from the price sheet's row" in r.output


@pytest.mark.parametrize("sheet_terms, scenario_term, ok", [((12, 24), 24, True), ((12, 24), 12, False),
                                                            ((24, 12), 12, True), ((24, 12), 24, False)])
def test_a_scenarios_dated_row_keeps_the_term_of_the_sheets_row_in_force_where_it_prices(tmp_path, sheet_terms,
                                                                                         scenario_term, ok):
    """The sheet's option is dated: one term from the start, another from April. A scenario's April row re-prices
    the April-on purchases, whose term is the April row's: it must say that term (the rule read the option's first
    row only: (12, 24) with 12 was accepted and the scenario's 12-month price amortised over 24 months; (24, 12)
    with 12 was refused)."""
    m = case(tmp_path, haircut=None)
    term = dict(gpu_type="A", region="r1", option="reserved_x", hourly_usd=0.5, upfront_usd=UP)
    rows = [dict(gpu_type="A", region="r1", option="on_demand", hourly_usd=OD, scenario="", valid_from=""),
            term | dict(term_months=sheet_terms[0], scenario="", valid_from=""),
            term | dict(term_months=sheet_terms[1], scenario="", valid_from="2027-04-01"),
            term | dict(hourly_usd=0.2, term_months=scenario_term, scenario="cheap", valid_from="2027-04-01")]
    pd.DataFrame(rows).to_csv(tmp_path / "prices.csv", index=False)
    m.write_text(m.read_text().replace("[commitments]", "[scenarios]\nsheet = 0.5\ncheap = 0.5\n\n[commitments]"))
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == (0 if ok else 2), r.output
    if not ok:
        assert "row 5, column 'term_months'" in r.output and f"({sheet_terms[1]})" in r.output


@pytest.mark.parametrize("method", ["monolithic", "benders"])
def test_a_resold_term_frees_its_gpus_under_the_pools_reserved_cap_by_hand(tmp_path, method):
    """max_gpus caps the reserved GPUs held at once. 5 GPUs all quarter; a 1-year term at 2.00 (no upfront, 10 %
    haircut), at 1.00 from February; cap 8. By hand: 5 bought in January (5 x 744 h x 2.00 = 7,440), sold on
    Feb 1 (the fee stops), 5 bought at 1.00 (5 x 1,416 h = 7,080): 14,520. Before, the sold 5 still counted
    against the cap, so only 3 could be swapped (17,352)."""
    days = pd.date_range("2027-01-01", "2027-03-31", freq="D")
    rows = [price(hourly=4.0),
            price(option="reserved_1y", hourly=2.0, term_months=12, max_gpus=8.0, resale_haircut=0.1),
            price(option="reserved_1y", hourly=1.0, term_months=12, max_gpus=8.0, resale_haircut=0.1,
                  valid_from="2027-02-01")]
    m = write_case(tmp_path, {"work": [5.0] * len(days)}, rows, {"work": {}}, hours=24, start="2027-01-01T00:00",
                   solver={"method": method},
                   extra_top='[term]\njudge = "horizon"\n[commitments]\npurchase_every = "month"')
    pd.DataFrame(rows).to_csv(tmp_path / "prices.csv", index=False)
    plan = make_plan(load_inputs(m), mip_gap=1e-9)
    assert plan.cost["total"] == pytest.approx(5 * 744 * 2.0 + 5 * 1416 * 1.0)
    sold = plan.purchases[(plan.purchases["kind"] == "exit") & (plan.purchases["instances"] > 0)]
    assert sold["gpus"].sum() == pytest.approx(-5.0)
    # the memo's commitment curve scales the purchases and the resale together, the cap counting GPUs held at once
    # as the model does: x1.25 is 6 bought, 6 sold, 6 bought back (6 held <= 8): 6 x 744 x 2 + 6 x 1,416 = 17,424;
    # x2 is 10 held in January, over the cap: scaled to 8 / 8 / 8, 23,232 (the curve fell back to 4 / 4 / 4, 20,256,
    # below the plan's own 5, when the memo counted the sold GPUs as held)
    from planner.memo.resolve import commitment_curve

    curve = commitment_curve(plan, plan.inputs, factors=(0.8, 1.25, 2.0)).set_index("factor")
    assert curve.loc[1.25, "total_cost_usd"] == pytest.approx(6 * 744 * 2.0 + 6 * 1416 * 1.0)
    assert curve.loc[2.0, "total_cost_usd"] == pytest.approx(8 * 744 * 2.0 + 8 * 1416 * 1.0)
    assert curve.loc[0.8, "total_cost_usd"] == pytest.approx(4 * 744 * 2.0 + 4 * 1416 * 1.0 + 744 * 4.0 + 1416 * 4.0)


def test_the_spot_economics_best_reserved_rate_is_a_term_not_a_resale(tmp_path):
    """A resale's rate is what a sale saves on negative GPUs: never a pool's best reserved rate (plan.json
    spot_economics showed -26.48 USD per GPU-hour on the example with resales)."""
    m = case(tmp_path)
    rows = pd.read_csv(tmp_path / "prices.csv")
    rows = pd.concat([rows, pd.DataFrame([price(option="spot", hourly=1.5, interruptions_per_hour=0.05)])])
    rows.to_csv(tmp_path / "prices.csv", index=False)
    m.write_text(m.read_text().replace("[classes.\"c\"]", "[classes.\"c\"]\nspot = true"))
    inp = load_inputs(m)
    assert inp.commitments["kind"].eq("exit").any() and len(inp.spot)
    assert (inp.spot["best_reserved_usd_per_gpu_hour"] > 0).all()
    terms = inp.commitments[inp.commitments["kind"].eq("instance")]
    assert inp.spot["best_reserved_usd_per_gpu_hour"].iat[0] == pytest.approx(terms["r"].min())


def test_a_curve_point_above_the_plan_never_holds_fewer_gpus_than_the_plan_under_a_cap(tmp_path):
    """One pool of 4-GPU instances, cap 22 GPUs, 4 owned until April; demand 10, 20 from March, 26 from May. The
    plan buys 1, 3 and 1 instances (Jan, Mar, Apr: 20 GPUs). x1.25 rounds to 1, 4, 1 (24 GPUs held in May, over
    the cap): it is brought back towards the plan, not scaled down with every row (one ratio, then floored, gave
    0, 3, 0: 12 GPUs, 30 % dearer than the plan, below the x0.5 point)."""
    from planner.memo.resolve import scaled_units

    days = pd.date_range("2027-01-01", "2027-06-30", freq="D")
    d = np.where(days < "2027-03-01", 10.0, np.where(days < "2027-05-01", 20.0, 26.0))
    rows = [price(hourly=4.0, gpus_per_instance=4),
            price(option="reserved_1y", hourly=2.0, term_months=12, max_gpus=22.0, gpus_per_instance=4)]
    inv = [dict(gpu_type="A", region="r1", option="reserved_1y", gpus=4, start="2026-06-01T00:00",
                end="2027-04-01T00:00")]
    m = write_case(tmp_path, {"work": list(d)}, rows, {"work": {}}, hours=24, start="2027-01-01T00:00", inventory=inv,
                   extra_top='[term]\njudge = "horizon"\n[commitments]\npurchase_every = "month"')
    inp = load_inputs(m)
    plan = make_plan(inp, mip_gap=1e-9)
    units = plan.purchases["units"].to_numpy(float)
    gpus = lambda u: float(u @ inp.commitments["m"].to_numpy(float))  # noqa: E731
    assert gpus(units) == 20.0
    for factor in (1.25, 1.5, 2.0):
        up = scaled_units(plan, inp, factor)
        assert gpus(up) >= gpus(units) and (up >= units).all(), factor
        fixed = make_plan(inp, fixed_reserved=up, mip_gap=1e-9, risk=False, shadow=False)
        assert fixed.status.has_plan  # within the cap


@pytest.mark.parametrize("scenario_term, ok", [(12, True), (24, False)])
def test_an_undated_scenario_row_is_checked_from_the_horizons_first_period(tmp_path, scenario_term, ok):
    """The sheet's option: 24 months undated, 12 from the demand's first period. Purchases are dated from that
    period, so the 24-month row prices none of them: an undated scenario row of 12 months re-prices the 12-month
    purchases (it was refused, checked against the superseded row too; dated at the start it was accepted), and
    one of 24 is still refused, naming the term in force (12)."""
    m = case(tmp_path, haircut=None)
    first = pd.to_datetime(pd.read_csv(tmp_path / "demand.csv")["period"]).min()
    term = dict(gpu_type="A", region="r1", option="reserved_x", hourly_usd=0.5, upfront_usd=UP)
    rows = [dict(gpu_type="A", region="r1", option="on_demand", hourly_usd=OD, scenario="", valid_from=""),
            term | dict(term_months=24, scenario="", valid_from=""),
            term | dict(term_months=12, scenario="", valid_from=first.strftime("%Y-%m-%d")),
            term | dict(hourly_usd=0.2, term_months=scenario_term, scenario="cheap", valid_from="")]
    pd.DataFrame(rows).to_csv(tmp_path / "prices.csv", index=False)
    m.write_text(m.read_text().replace("[commitments]", "[scenarios]\nsheet = 0.5\ncheap = 0.5\n\n[commitments]"))
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == (0 if ok else 2), r.output
    if not ok:
        assert "row 5, column 'term_months'" in r.output and "(12)" in r.output and "(24 or 12)" not in r.output


def test_purchases_that_resell_more_than_they_bought_are_named_by_option_pool_and_date(tmp_path):
    """A resale above what its term bought breaks the exit link (a first-stage row): the refusal names the term as
    the plan lists it (option, pool, purchase date), not the commitments table's internal row number."""
    from planner.model.stages import violations, why_infeasible

    inp = load_inputs(case(tmp_path))
    res = inp.commitments
    term = np.flatnonzero((res["option"] == "reserved_1y").to_numpy() & ~np.asarray(res["kind"] == "exit"))[0]
    sale = np.flatnonzero((res["kind"] == "exit").to_numpy() & (res["parent"].to_numpy(int) == term))[0]
    units = np.zeros(len(res))
    units[term], units[sale] = 2.0, 5.0  # 5 sold of 2 bought
    broken = violations(inp, units)
    assert len(broken) == 1, broken
    assert broken[0].startswith("reserved_1y of A/r1 bought 2027-01-01:"), broken  # a midnight: the date alone
    assert "sell 5 units of the 2 bought" in broken[0] and "row" not in broken[0]
    assert "break first-stage rows: reserved_1y of " in why_infeasible(broken)
    units[sale] = 2.0  # all it bought: nothing broken
    assert violations(inp, units) == []


def test_on_a_tree_an_oversold_term_is_named_with_the_branch_that_buys_it(tmp_path):
    """Two scenarios (low, high) split the month's purchases into nodes: the same option, pool and date bought in
    each branch. Overselling both names each with its branch and probability, as the summary does, so the two
    lines differ (they read alike before)."""
    from planner.model.constraints import exit_links
    from planner.model.stages import violations

    m = case(tmp_path, months=3)
    d = pd.read_csv(tmp_path / "demand.csv")
    pd.concat([d.assign(scenario="low"), d.assign(scenario="high", gpus=d["gpus"] * 1.5)]).to_csv(
        tmp_path / "demand.csv", index=False)
    m.write_text(m.read_text().replace("[commitments]", "[scenarios]\nlow = 0.5\nhigh = 0.5\n\n[commitments]"))
    inp = load_inputs(m)
    res = inp.commitments
    links = exit_links(inp)
    by_date: dict = {}
    for parent, sales in links:
        if res["branch"].iat[parent] != "all":
            by_date.setdefault(res["purchase_date"].iat[parent], []).append((parent, sales))
    pair = next(v for v in by_date.values() if len({res["branch"].iat[p] for p, _ in v}) == 2)
    units = np.zeros(len(res))
    for parent, sales in pair[:2]:
        units[parent], units[sales[0]] = 2.0, 5.0
    broken = violations(inp, units)
    assert len(broken) == 2 and broken[0] != broken[1], broken
    assert {b.split(":")[0].rsplit(" if ", 1)[1] for b in broken} == {"low (50%)", "high (50%)"}, broken
