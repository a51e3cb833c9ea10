"""Prices over the term (issue 34 item 1b; spec/contracts.md "Price paths"): dated on-demand and spot rows (a forward
curve) and scenarios with prices of their own (a ``scenario`` column, or ``[scenarios.<name>] prices``).

Oracles: hand-solved one-pool cases (buy now at 1.5 against renting at 2.0 until April and the April price
after), the expected value of waiting over two price paths by hand, and an independent recomputation of every
cost from the allocation and the price sheet's rows by date. The workbook recomputes in LibreOffice to its
cached values.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from planner import load_inputs, make_plan
from planner.cli import cli
from planner.core.errors import InputError
from planner.pipeline.whole_term import plan_over_term
from conftest import price, write_case

START, DAYS = pd.Timestamp("2027-01-04"), 181
APRIL = pd.Timestamp("2027-04-01")
H = DAYS * 24.0
H1 = (APRIL - START) / pd.Timedelta(hours=1)  # hours before April
H2 = H - H1


def _horizon(extra=""):
    return f'[term]\njudge = "horizon"\n[commitments]\npurchase_every = "quarter"\n{extra}'


def _bought(plan, when) -> float:
    pur = plan.purchases
    return float(pur.loc[pd.DatetimeIndex(pur["purchase_date"]) == when, "gpus"].sum())


@pytest.mark.parametrize("o2, buys", [(1.08, 100.0), (1.00, 0.0)])
def test_a_falling_on_demand_curve_decides_the_purchase_closed_form(tmp_path, o2, buys):
    """On-demand 2.0, then o2 from April; a 1-year term at 1.5 bought now only. Amortised on the horizon, buying
    costs 1.5 H, renting 2.0 H1 + o2 H2: buy iff o2 > p* = (1.5 H - 2 H1) / H2 = 1.037."""
    assert (1.5 * H - 2.0 * H1) / H2 == pytest.approx(1.037, abs=1e-3)
    prices = [price(hourly=2.0), price(hourly=o2, valid_from="2027-04-01"),
              price(option="reserved_1y", hourly=1.5, term_months=12)]
    path = write_case(tmp_path, {"train": [100.0] * DAYS}, prices, {"train": {}}, hours=24.0,
                      extra_top=_horizon('purchase_until = "2027-01-05"'))
    inp = load_inputs(path)
    assert inp.rented_price_path is not None and inp.rented_price_path[0, 0, 0, 0] == 2.0
    assert inp.rented_price_path[0, 0, 0, -1] == o2
    plan = plan_over_term(inp, make_plan)
    assert _bought(plan, START) == buys
    rent = 100.0 * (2.0 * H1 + o2 * H2)
    expected = 1.5 * H * 100.0 if buys else rent
    assert plan.cost["total"] == pytest.approx(expected, rel=1e-9)
    assert plan.baseline_all_on_demand == pytest.approx(rent, rel=1e-9)  # the all-on-demand baseline follows the curve


def _two_paths(tmp_path, p_slow, p_steep, prob_steep, form="column"):
    """One demand, two scenarios that differ in the reserved price from 2027-03-31 (known the day before the
    April purchase date): ``slow`` p_slow, ``steep`` p_steep."""
    prices = [price(hourly=2.0), price(option="reserved_1y", hourly=1.5, term_months=12)]
    top = _horizon(f'[scenarios]\nslow = {1 - prob_steep!r}\nsteep = {prob_steep!r}\n')
    if form == "column":
        prices += [price(option="reserved_1y", hourly=p_slow, term_months=12, valid_from="2027-03-31",
                         scenario="slow"),
                   price(option="reserved_1y", hourly=p_steep, term_months=12, valid_from="2027-03-31",
                         scenario="steep")]
    else:
        top = _horizon(f'[scenarios.slow]\nprobability = {1 - prob_steep!r}\nprices = "slow.csv"\n'
                       f'[scenarios.steep]\nprobability = {prob_steep!r}\nprices = "steep.csv"\n')
    path = write_case(tmp_path, {"train": [100.0] * DAYS}, prices, {"train": {}}, hours=24.0, extra_top=top)
    if form == "files":
        for name, p in (("slow", p_slow), ("steep", p_steep)):
            pd.DataFrame([{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "hourly_usd": p,
                           "term_months": 12, "valid_from": "2027-03-31"}]).to_csv(tmp_path / f"{name}.csv",
                                                                                  index=False)
    return path


def _wait_or_buy_by_hand(p_slow, p_steep, q):
    """Expected cost of buying 100 now, and of waiting for April (then the better of buying at the path's price
    and renting on), with probability q of the steep path."""
    now = 1.5 * H * 100
    later = lambda p: 100 * (2.0 * H1 + min(p, 2.0) * H2)  # noqa: E731
    return now, (1 - q) * later(p_slow) + q * later(p_steep)


@pytest.mark.parametrize("q, waits", [(0.5, True), (0.2, False)])
def test_two_price_paths_move_the_purchase_date_with_their_odds(tmp_path, q, waits):
    """Slow path 1.4 and steep 0.6 from April. 50/50: waiting expects 6,432 x 100 against 6,516 x 100 for buying
    now, so nothing is bought now and each path buys in April at its own price; at 20 % steep, buying now wins."""
    now, wait = _wait_or_buy_by_hand(1.4, 0.6, q)
    assert (wait < now) == waits
    plan = plan_over_term(load_inputs(_two_paths(tmp_path, 1.4, 0.6, q)), make_plan)
    assert plan.cost["total"] == pytest.approx(min(now, wait), rel=1e-9)
    if waits:
        assert _bought(plan, START) == 0.0
        april = plan.purchases[pd.DatetimeIndex(plan.purchases["purchase_date"]) == APRIL]
        got = {r.branch: (r.gpus, r.hourly_usd) for r in april.itertuples() if r.gpus > 0}
        assert got == {"slow": (100.0, 1.4), "steep": (100.0, 0.6)}  # each path buys at its own price
    else:
        assert _bought(plan, START) == 100.0


def test_a_scenarios_price_file_is_the_same_as_its_rows_in_the_sheet(tmp_path):
    a = plan_over_term(load_inputs(_two_paths(tmp_path / "col", 1.4, 0.6, 0.5)), make_plan)
    b = plan_over_term(load_inputs(_two_paths(tmp_path / "files", 1.4, 0.6, 0.5, form="files")), make_plan)
    assert b.cost["total"] == pytest.approx(a.cost["total"], rel=1e-12)
    assert b.purchases["gpus"].sum() == a.purchases["gpus"].sum()
    inp = load_inputs(_two_paths(tmp_path / "files2", 1.4, 0.6, 0.5, form="files"))
    assert "prices:slow" in inp.tables.sources and "prices:steep" in inp.tables.sources


def test_a_price_known_only_at_the_purchase_date_is_shared_at_its_mean(tmp_path):
    """The contract: a purchase on date s is shared by the scenarios whose demand and prices coincide in every
    period before s. Prices that differ from April 1 itself are not known to the April purchase: it is one
    purchase for both paths, charged their mean price (1.4 + 0.6) / 2 = 1.0."""
    prices = [price(hourly=2.0), price(option="reserved_1y", hourly=1.5, term_months=12),
              price(option="reserved_1y", hourly=1.4, term_months=12, valid_from="2027-04-01", scenario="slow"),
              price(option="reserved_1y", hourly=0.6, term_months=12, valid_from="2027-04-01", scenario="steep")]
    path = write_case(tmp_path, {"train": [100.0] * DAYS}, prices, {"train": {}}, hours=24.0,
                      extra_top=_horizon("[scenarios]\nslow = 0.5\nsteep = 0.5\n"))
    inp = load_inputs(path)
    april = inp.commitments[pd.DatetimeIndex(inp.commitments["purchase_date"]) == APRIL]
    assert len(april) == 1 and april["hourly_usd"].iat[0] == pytest.approx(1.0)
    plan = plan_over_term(inp, make_plan)
    assert _bought(plan, APRIL) == 100.0 and plan.cost["total"] == pytest.approx(100 * (2.0 * H1 + 1.0 * H2))


def test_costs_recompute_from_the_allocation_and_the_rows_by_date(tmp_path):
    """Spot and on-demand both dated, two scenarios with on-demand paths of their own, hourly blocks merged:
    every rented GPU-hour of the allocation times the price-sheet row in force for its scenario and period adds
    up to the plan's rented cost (an independent computation: no model array is read)."""
    days = 60
    prices = [price(hourly=3.0), price(hourly=2.4, valid_from="2027-02-01"),
              price(hourly=1.8, valid_from="2027-02-01", scenario="cheap"),
              price(option="spot", hourly=1.0, interruptions_per_hour=0.0),
              price(option="spot", hourly=1.6, interruptions_per_hour=0.0, valid_from="2027-01-20")]
    demand = {"serve": [50.0 + 10 * (d % 7 == 0) for d in range(days)]}
    path = write_case(tmp_path, demand, prices, {"serve": {"spot": True, "max_spot_share": 0.5}}, hours=24.0,
                      extra_top='[scenarios]\nbase = 0.7\ncheap = 0.3\n')
    plan = make_plan(load_inputs(path))
    a = plan.allocation
    sheet = pd.read_csv(tmp_path / "prices.csv")
    sheet["valid_from"] = pd.to_datetime(sheet["valid_from"]).fillna(pd.Timestamp("1900-01-01"))
    sheet["scenario"] = sheet["scenario"].fillna("")

    def price_at(option, scenario, when):
        rows = sheet[(sheet.option == option) & sheet.scenario.isin(["", scenario])]
        own = rows[rows.scenario == scenario]
        if len(own):
            first = own["valid_from"].min()
            rows = pd.concat([rows[(rows.scenario == "") & (rows["valid_from"] < first)], own])
        rows = rows[rows["valid_from"] <= when]
        return float(rows.sort_values("valid_from")["hourly_usd"].iloc[-1])

    prob = {"base": 0.7, "cheap": 0.3}
    total = sum(r.gpus * r.hours * prob[r.scenario] * price_at(r.option, r.scenario, r.period)
                for r in a.itertuples() if r.option in ("on_demand", "spot"))
    assert plan.cost["on_demand"] + plan.cost["spot"] == pytest.approx(total, rel=1e-9)
    from planner.report.json_export import monthly_usage

    usage = monthly_usage(plan)  # plan.json's usage per month and pool (what FOCUS and showback read)
    assert usage["on_demand_usd"].sum() + usage["spot_usd"].sum() == pytest.approx(total, rel=1e-9)
    assert price_at("on_demand", "cheap", pd.Timestamp("2027-03-01")) == 1.8
    assert price_at("on_demand", "base", pd.Timestamp("2027-03-01")) == 2.4
    # spot is the cheaper kind until it rises to 1.6 on 2027-01-20, and capped at half the demand
    jan = a[(a.option == "spot") & (a.period < pd.Timestamp("2027-01-20"))]
    assert (jan["gpus"] > 0).all()


@pytest.mark.parametrize("rows, message", [
    ([price(hourly=2.0, valid_from="2027-02-01")], "a dated or scenario price with no undated row"),
    ([price(hourly=2.0), price(hourly=1.0, scenario="nope")], "price row for a scenario the model does not have"),
    ([price(hourly=2.0), price(option="savings_plan_1y", hourly=1.5, valid_from="2027-02-01")],
     "valid_from on a capacity_block or savings plan row"),
    ([price(hourly=2.0), price(option="reserved_3y", hourly=1.0, scenario="base")],
     "a scenario price for an option the sheet does not sell"),
])
def test_bad_price_paths_exit_2_naming_the_row(tmp_path, rows, message):
    path = write_case(tmp_path, {"train": [10.0] * 3}, rows, {"train": {}}, hours=24.0)
    with pytest.raises(InputError) as e:
        load_inputs(path)
    assert message in str(e.value) and "prices.csv" in str(e.value)
    r = CliRunner().invoke(cli, ["plan", str(path), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2 and message in r.output and not (tmp_path / "out" / "plan.json").exists()


def test_the_whole_term_reads_the_curve_past_the_horizon(tmp_path):
    """Judged over the whole term, the tail's months are priced by date too: with on-demand falling to 0.5 from
    the horizon's end on, a 1-year term at 1.5 is not worth buying for a week of demand; with on-demand flat at
    2.0 it is (the plan buys most of the flat level)."""
    week = 7
    flat = [price(hourly=2.0), price(option="reserved_1y", hourly=1.5, term_months=12)]
    falling = flat + [price(hourly=0.5, valid_from="2027-01-11")]
    got = {}
    for name, prices in (("flat", flat), ("falling", falling)):
        path = write_case(tmp_path / name, {"train": [100.0] * week}, prices, {"train": {}}, hours=24.0)
        got[name] = _bought(plan_over_term(load_inputs(path), make_plan), START)
    assert got["flat"] > 50 and got["falling"] == 0.0


@pytest.fixture(scope="module")
def lo_books(tmp_path_factory):
    """The plans of this file's two LibreOffice tests, each written by `planner plan`, and their workbooks recomputed
    by LibreOffice in one start (each start is 2-4 s; the recomputations are kept for cached_matches_recomputed):
    {"price path": ..., "shared purchase": ...}, each (output folder, its workbook as written under a name of its
    own: books recomputed together need distinct names). Shared: never edit what it returns."""
    from conftest import soffice
    from test_workbook import recalc_many

    if not soffice():
        pytest.skip("LibreOffice not installed")
    folder = tmp_path_factory.mktemp("price-path")
    path = _two_paths(folder, 1.4, 0.6, 0.5)
    text = (folder / "prices.csv").read_text().splitlines()
    # on-demand falls from February in every scenario, and further in the steep one from March
    text.append("A,r1,on_demand,1.9,,,,,,2027-02-01,")
    text.append("A,r1,on_demand,1.7,,,,,,2027-03-01,steep")
    (folder / "prices.csv").write_text("\n".join(text) + "\n")
    shared = tmp_path_factory.mktemp("shared-purchase")
    books = {}
    for name, model, where in (("price path", path, folder), ("shared purchase", _shared_purchase_case(shared), shared)):
        out = where / "out"
        r = CliRunner().invoke(cli, ["plan", str(model), "--out", str(out)])
        assert r.exit_code == 0, r.output
        books[name] = (out, where / f"{name.replace(' ', '-')}.xlsx")
        books[name][1].write_bytes((out / "plan.xlsx").read_bytes())
    recalc_many([xlsx for _, xlsx in books.values()], tmp_path_factory.mktemp("lo"))
    return books


@pytest.mark.slow
def test_the_price_path_workbook_ties_out_in_libreoffice(lo_books, tmp_path):
    from conftest import book
    from test_workbook import cached_matches_recomputed

    out, xlsx = lo_books["price path"]  # (planned with its two dated on-demand rows below, recomputed in one start)
    # on-demand falls from February in every scenario, and further in the steep one from March
    assert "A,r1,on_demand,1.7,,,,,,2027-03-01,steep" in (out.parent / "prices.csv").read_text()
    n, recomputed = cached_matches_recomputed(xlsx, tmp_path / "lo", strict_blanks=True)
    assert n > 100
    errors = [f"{ws.title}!{c.coordinate}={c.value}" for ws in recomputed.worksheets for row in ws.iter_rows()
              for c in row if isinstance(c.value, str) and c.value.startswith("#")]
    assert not errors, errors[:5]
    doc = json.loads((out / "plan.json").read_text())
    costs = book(xlsx, data_only=True)["Costs"]  # (the cached values, loaded once by cached_matches_recomputed)
    head = [c.value for c in costs[1]]
    total = sum(row[head.index("cost_usd")] or 0.0 for row in costs.iter_rows(min_row=2, values_only=True)
                if row[0] in ("reserved", "on_demand", "spot"))
    assert total == pytest.approx(doc["cost_usd"]["total"], rel=1e-9)
    assert np.isfinite(total)


def _shared_purchase_case(tmp_path, extra=""):
    """A 1-year rate of 1.5 in scenario a and 1.0 in b from the start (both known only with the price path),
    on-demand ``od``: the purchase now is shared and charged the mean, 1.25."""
    prices = [price(hourly=2.0), price(option="reserved_1y", hourly=1.5, term_months=12),
              price(option="reserved_1y", hourly=1.0, term_months=12, scenario="b")]
    return write_case(tmp_path, {"train": [100.0] * 10}, prices, {"train": {}}, hours=24.0,
                      extra_top=f'[term]\njudge = "horizon"\n[scenarios]\na = 0.5\nb = 0.5\n{extra}')


def test_each_scenario_pays_its_own_price_for_a_shared_purchase(tmp_path):
    """The expected cost charges the shared purchase its mean rate (30,000 = 1.25 x 24,000 GPU-hours); each
    scenario's own cost, the worst case and CVaR take that scenario's rate: a 36,000, b 24,000."""
    plan = make_plan(load_inputs(_shared_purchase_case(tmp_path)))
    assert plan.cost["total"] == pytest.approx(30_000)
    by = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["total"]))
    assert by == {"a": pytest.approx(36_000), "b": pytest.approx(24_000)}


def test_cvar_sees_the_price_risk_of_a_shared_purchase(tmp_path):
    """On-demand 1.3: renting costs 31,200 in both scenarios; buying costs 36,000 in a and 24,000 in b (mean
    30,000). Risk neutral buys; CVaR alone at alpha 0.5 (the worse scenario) stays on demand: 31,200 < 36,000."""
    prices = [price(hourly=1.3), price(option="reserved_1y", hourly=1.5, term_months=12),
              price(option="reserved_1y", hourly=1.0, term_months=12, scenario="b")]
    top = '[term]\njudge = "horizon"\n[scenarios]\na = 0.5\nb = 0.5\n'
    neutral = make_plan(load_inputs(write_case(tmp_path / "n", {"train": [100.0] * 10}, prices, {"train": {}},
                                               hours=24.0, extra_top=top)))
    assert neutral.purchases["gpus"].sum() == 100 and neutral.cost["total"] == pytest.approx(30_000)
    averse = make_plan(load_inputs(write_case(tmp_path / "a", {"train": [100.0] * 10}, prices, {"train": {}},
                                              hours=24.0, extra_top=top + "[finance]\ncvar_weight = 1.0\n"
                                              "cvar_alpha = 0.5\n")))
    assert averse.purchases["gpus"].sum() == 0 and averse.cost["total"] == pytest.approx(31_200)


def test_compare_spend_prices_each_hour_at_its_own_rate(tmp_path):
    """planner compare's spend per option adds up to the plan's total with dated prices (it read today's)."""
    from planner.whatif.metrics import spend

    prices = [price(hourly=2.0), price(hourly=3.0, valid_from="2027-01-06"),
              price(option="spot", hourly=1.0, interruptions_per_hour=0.0),
              price(option="spot", hourly=2.5, interruptions_per_hour=0.0, valid_from="2027-01-05")]
    path = write_case(tmp_path, {"train": [10.0] * 4}, prices, {"train": {"spot": True, "max_spot_share": 0.5}},
                      hours=24.0)
    plan = make_plan(load_inputs(path))
    sp = spend(plan).set_index("option")["usd"]
    assert sp.sum() == pytest.approx(plan.cost["total"], rel=1e-9)
    # day 2 spot (2.5) is dearer than on-demand (2.0): all on demand; else half on spot (the cap), by date
    assert sp["on_demand"] == pytest.approx(24 * (5 * 2 + 10 * 2 + 5 * 3 + 5 * 3))
    assert sp["spot"] == pytest.approx(24 * (5 * 1 + 5 * 2.5 + 5 * 2.5))


def test_evaluate_takes_the_named_scenarios_prices_as_the_ones_that_came(tmp_path):
    """The plan buys at 1.5 against on-demand 2.0 (b: 1.0); evaluated with --scenario b, on-demand at 1.0 was
    the hindsight plan: regret 100 x 240 h x 0.5 = 12,000. An unknown scenario is exit 2."""
    prices = [price(hourly=2.0), price(hourly=1.0, scenario="b"), price(option="reserved_1y", hourly=1.5, term_months=12)]
    path = write_case(tmp_path, {"train": [100.0] * 10}, prices, {"train": {}}, hours=24.0,
                      extra_top='[term]\njudge = "horizon"\n[scenarios]\na = 0.6\nb = 0.4\n')
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["plan", str(path), "--out", str(out), "-q"]).exit_code == 0
    r = CliRunner().invoke(cli, ["evaluate", str(path), "--plan", str(out / "plan.json"), "--demand",
                                 str(tmp_path / "demand.csv"), "--scenario", "b", "--out", str(tmp_path / "ev"),
                                 "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "ev" / "evaluation.json").read_text())
    assert doc["regret_usd"] == pytest.approx(12_000)
    r = CliRunner().invoke(cli, ["evaluate", str(path), "--plan", str(out / "plan.json"), "--demand",
                                 str(tmp_path / "demand.csv"), "--scenario", "zz", "--out", str(tmp_path / "ev2")])
    assert r.exit_code == 2 and "not a scenario of the model" in r.output


def test_a_scenario_priced_twice_or_a_dated_cap_is_refused(tmp_path):
    prices = [price(hourly=2.0), price(hourly=3.0, scenario="b"),
              price(option="spot", hourly=1.0, interruptions_per_hour=0.0),
              price(option="spot", hourly=1.5, interruptions_per_hour=0.0, max_gpus=2, valid_from="2027-01-05")]
    path = write_case(tmp_path, {"train": [10.0] * 4}, prices, {"train": {"spot": True}}, hours=24.0,
                      extra_top='[scenarios.a]\nprobability = 0.5\n[scenarios.b]\nprobability = 0.5\n'
                                'prices = "b.csv"\n')
    pd.DataFrame([{"gpu_type": "A", "region": "r1", "option": "on_demand", "hourly_usd": 1.0}]).to_csv(
        tmp_path / "b.csv", index=False)
    with pytest.raises(InputError) as e:
        load_inputs(path)
    text = str(e.value)
    assert "scenario b is priced twice" in text and "b.csv" in text
    assert "max_gpus on a dated or scenario price differs from the option's undated row" in text


@pytest.mark.slow
def test_a_shared_purchase_reads_its_scenarios_mix_of_prices_in_libreoffice(lo_books, tmp_path):
    """A purchase shared by scenarios whose prices differ reads their mix of Prices rows: numbers LibreOffice
    computes (it once wrote np.float64(0.5): #NAME?), and the Costs sheet adds up to plan.json's total."""
    from conftest import book
    from test_workbook import cached_matches_recomputed

    out, xlsx = lo_books["shared purchase"]  # (_shared_purchase_case planned, recomputed with the other in one start)
    formulas = book(xlsx)["Purchases"]  # (loaded once, for cached_matches_recomputed too)
    mixed = [c.value for row in formulas.iter_rows(min_row=2) for c in row
             if isinstance(c.value, str) and "0.5*Prices!" in c.value]
    assert mixed and not any("np." in f for f in mixed)
    n, recomputed = cached_matches_recomputed(xlsx, tmp_path / "lo", strict_blanks=True)
    errors = [f"{ws.title}!{c.coordinate}={c.value}" for ws in recomputed.worksheets for row in ws.iter_rows()
              for c in row if isinstance(c.value, str) and c.value.startswith("#")]
    assert n > 50 and not errors, errors[:5]
    costs = recomputed["Costs"]
    head = [c.value for c in costs[1]]
    total = sum(row[head.index("cost_usd")] or 0.0 for row in costs.iter_rows(min_row=2, values_only=True)
                if row[0] in ("reserved", "on_demand", "spot"))
    assert total == pytest.approx(json.loads((out / "plan.json").read_text())["cost_usd"]["total"], rel=1e-9)


def test_a_backtest_of_a_model_with_price_paths_says_the_scenarios_are_the_models(tmp_path):
    """The demand file has no scenarios: the message names the model's [scenarios] (it blamed demand.csv's
    'scenario' column, which the file does not have)."""
    from conftest import ROOT

    r = CliRunner().invoke(cli, ["backtest", str(ROOT / "models" / "price-paths.toml"), "--out", str(tmp_path / "bt")])
    assert r.exit_code == 2, r.output
    assert "a backtest needs one scenario; the model's [scenarios] gives 2 (hold, fall" in r.output
    assert "column 'scenario'" not in r.output and not (tmp_path / "bt").exists()


def test_a_savings_plan_is_valued_at_each_hours_on_demand_price_on_a_forward_curve(tmp_path):
    """On-demand 4.00 for a day, then 2.00; a savings plan covers all 10 GPUs' 48 hours. Its usage at on-demand is
    10 x 24 x (4 + 2) = 1,440 (it was valued at the undated 4.00: 1,920), its saving 1,440 - 480 = 960, and the one
    class is charged the plan's whole cost in the showback (it was 0, the 480 left '(unallocated)')."""
    prices = [price(hourly=4.0), price(hourly=2.0, valid_from="2027-01-05T00:00"),
              price(option="savings_plan_1y", hourly=1.0)]
    path = write_case(tmp_path, {"work": [10.0] * 48}, prices, {"work": {}}, extra_top='[term]\njudge = "horizon"\n')
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["plan", str(path), "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "plan.json").read_text())
    sp = doc["spend_commitments"]
    assert len(sp) == 1 and doc["cost_usd"]["total"] == pytest.approx(480.0)
    assert sp[0]["covered_at_on_demand_usd"] == pytest.approx(1440.0) and sp[0]["savings_usd"] == pytest.approx(960.0)
    assert doc["cost_by_class_usd"] == pytest.approx({"work": 480.0})


def test_a_backtest_of_a_demand_file_with_identical_scenarios_names_its_scenario_column(tmp_path):
    """No [scenarios] in the model; demand.csv's scenario column gives two identical histories: the message names
    the file's column (it blamed a [scenarios] table the model does not have)."""
    from conftest import price, write_case

    m = write_case(tmp_path / "m", {"c": [20.0] * 120}, [price(hourly=3.0)], {"c": {}}, hours=24,
                   start="2027-01-01T00:00")
    d = pd.read_csv(tmp_path / "m" / "demand.csv")
    pd.concat([d.assign(scenario="x"), d.assign(scenario="y")]).to_csv(tmp_path / "m" / "demand.csv", index=False)
    r = CliRunner().invoke(cli, ["backtest", str(m), "--train-hours", "1440", "--test-hours", "1200",
                                 "--out", str(tmp_path / "bt")])
    assert r.exit_code == 2, r.output
    assert "demand.csv, column 'scenario': a backtest needs one demand history" in r.output
    assert "[scenarios]" not in r.output and not (tmp_path / "bt").exists()


@pytest.mark.parametrize("where", ["dated", "scenario"])
def test_the_spot_economics_compare_spot_with_todays_reserved_price(tmp_path, where):
    """docs/inputs.md: the spot economics use today's prices. A reserved row dated from February (1.00) or a
    scenario's row (0.70) is not today's 2.00 (the best reserved rate took the cheapest purchase row of either)."""
    from conftest import price, write_case

    days = pd.date_range("2027-01-01", "2027-03-31", freq="D")
    rows = [price(hourly=4.0, scenario=""), price(option="spot", hourly=1.5, interruptions_per_hour=0.05, scenario=""),
            price(option="reserved_1y", hourly=2.0, term_months=12, scenario="")]
    rows.append(price(option="reserved_1y", hourly=1.0, term_months=12, valid_from="2027-02-01", scenario="")
                if where == "dated" else price(option="reserved_1y", hourly=0.7, term_months=12, scenario="cheap"))
    top = '[term]\njudge = "horizon"\n' + ("" if where == "dated" else "[scenarios]\nsheet = 0.5\ncheap = 0.5\n")
    m = write_case(tmp_path, {"work": [5.0] * len(days)}, rows, {"work": {"spot": True, "max_spot_share": 1.0}},
                   hours=24, start="2027-01-01T00:00", extra_top=top + '[commitments]\npurchase_every = "month"')
    pd.DataFrame(rows).to_csv(tmp_path / "prices.csv", index=False)
    spot = load_inputs(m).spot
    assert spot["best_reserved_usd_per_gpu_hour"].tolist() == [pytest.approx(2.0)]
