"""The finance analytics of the CFO purchase memo (issue 25): planner.memo.build and its modules."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from planner import load_inputs, make_plan
from planner.cli import cli
from planner.core.executors import LocalExecutor
from planner.inputs.arrays import scale_inputs
from planner.memo.build import (Memo, build_memo, cash_by_year, cash_monthly, cash_next_12_months, commitment_curve,
                          coverage, default_factors, downside, savings, tranche_utilisation)
from planner.memo.resolve import scaled_units

from conftest import price, write_case

H = 24.0  # daily periods
JAN = [12, 8, 12, 8, 12, 8, 12]  # 2027-01-25 .. 31
FEB = [24, 16, 20, 16, 20, 16, 20]  # 2027-02-01 .. 07
ONE = LocalExecutor(1)  # in this process: the small re-solves need no worker start-up


def two_tranches(folder, extra: str = ""):
    """One pool: on-demand 10 USD/h, reserved_1y 2 USD/h (8 GPUs an instance), 4 GPUs owned; monthly
    purchase dates. The optimum (worked by hand below): one instance on 2027-01-25 and one on 2027-02-01."""
    return write_case(folder, {"c": JAN + FEB},
                      [price(hourly=10.0, gpus_per_instance=8),
                       price(option="reserved_1y", hourly=2.0, upfront_usd=0.0, term_months=12, gpus_per_instance=8)],
                      {"c": {}}, hours=H, start="2027-01-25T00:00",
                      inventory=[{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 4,
                                  "start": "2026-06-01T00:00", "end": "2028-01-01T00:00"}],
                      extra_top='[commitments]\npurchase_every = "month"\n' + extra)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = two_tranches(tmp_path_factory.mktemp("memo"))
    inp = load_inputs(path)
    return inp, make_plan(inp, mip_gap=0.0)


def test_the_hand_worked_plan_is_what_the_model_buys(tiny):
    inp, plan = tiny
    bought = plan.purchases[plan.purchases["instances"] > 0]
    assert list(bought["instances"]) == [1, 1]
    assert list(pd.to_datetime(bought["purchase_date"])) == [pd.Timestamp("2027-01-25"), pd.Timestamp("2027-02-01")]
    assert plan.cost["reserved"] == pytest.approx(8 * 2 * (14 + 7) * H)
    assert plan.cost["on_demand"] == pytest.approx(4 * H * 10)  # the 24-GPU day: 4 above 4 + 8 + 8


def test_two_tranches_marginal_utilisation_by_hand(tiny):
    # stacked: 4 owned first, then tranche 1 (Jan 25), then tranche 2 (Feb 1). Tranche 1 holds demand - 4
    # up to 8: Jan 8,4,8,4,8,4,8 and 8 every Feb day; tranche 2 holds Feb demand - 12 up to 8: 8,4,8,4,8,4,8
    _, plan = tiny
    t = tranche_utilisation(plan)
    assert len(t) == 2 and list(t["stack_position"]) == [1, 2]
    first, second = t.iloc[0], t.iloc[1]
    assert first["gpus"] == 8 and first["active_periods"] == 14 and second["active_periods"] == 7
    assert first["capacity_gpu_hours"] == pytest.approx(8 * 14 * H)
    assert first["used_gpu_hours"] == pytest.approx((44 + 56) * H)
    assert first["avg_utilisation"] == pytest.approx(100 / 112, abs=1e-12)
    assert first["min_utilisation"] == pytest.approx(0.5, abs=1e-12)
    assert second["used_gpu_hours"] == pytest.approx(44 * H)
    assert second["avg_utilisation"] == pytest.approx(44 / 56, abs=1e-12)
    assert second["min_utilisation"] == pytest.approx(0.5, abs=1e-12)
    assert first["horizon_cost_usd"] == pytest.approx(8 * 2 * 14 * H)
    assert second["horizon_cost_usd"] == pytest.approx(8 * 2 * 7 * H)
    assert first["full_term_usd"] == pytest.approx(8 * 2 * 12 * 730)
    assert first["on_demand_value_usd"] == pytest.approx(100 * H * 10)
    assert second["on_demand_value_usd"] == pytest.approx(44 * H * 10)
    assert list(t["break_even_utilisation"]) == pytest.approx([0.2, 0.2]) and t["pays"].all()
    assert t["horizon_cost_usd"].sum() == pytest.approx(plan.cost["reserved"])


def test_coverage_by_hand(tiny):
    _, plan = tiny
    c = coverage(plan)
    reserved = (sum(JAN) + sum(FEB) - 4) * H  # all but the 4 GPUs of on-demand on the 24-GPU day
    assert c["eligible_gpu_hours"] == pytest.approx(reserved + 4 * H)
    assert c["owned_gpu_hours"] == pytest.approx(4 * 14 * H)
    assert c["bought_gpu_hours"] == pytest.approx(reserved - 4 * 14 * H)
    assert c["coverage"] == pytest.approx(reserved / (reserved + 4 * H))


def test_downside_equals_a_hand_re_solve_and_stranding_grows(tiny):
    inp, plan = tiny
    d = downside(plan, inp, make_plan=make_plan, shocks=(0.2, 0.3), executor=ONE, mip_gap=0.0)
    assert list(d["shock"]) == [0.0, 0.2, 0.3]
    units = plan.purchases["units"].to_numpy(float)
    for shock in (0.2, 0.3):
        hand = make_plan(scale_inputs(inp, demand_level=1 - shock), fixed_reserved=units, risk=False, shadow=False,
                         mip_gap=0.0)
        row = d[d["shock"] == shock].iloc[0]
        full = hand.commitments["reserved_full_term_usd"] + hand.cost["on_demand"] + hand.cost["spot"]
        assert row["full_term_cost_usd"] == pytest.approx(full, abs=1e-6)
        assert row["total_cost_usd"] == pytest.approx(hand.cost["total"], abs=1e-6)
        assert row["on_demand_usd"] == pytest.approx(hand.cost["on_demand"], abs=1e-6)
        assert row["reserved_utilisation"] == pytest.approx(hand.reserved_utilisation, abs=1e-9)
        # stranded: the bought GPU-hours left unused x 2 USD/h (the owned 4 GPUs are still all used)
        used = tranche_utilisation(hand)["used_gpu_hours"].sum()
        assert row["stranded_usd"] == pytest.approx((8 * 21 * H - used) * 2.0, abs=1e-6)
        assert row["liability_past_horizon_usd"] == pytest.approx(plan.commitments["liability_past_horizon_usd"])
    assert d["stranded_usd"].is_monotonic_increasing and d["stranded_usd"].iat[2] > d["stranded_usd"].iat[0]
    assert d["full_term_cost_usd"].iat[0] == pytest.approx(plan.commitments["reserved_full_term_usd"]
                                                           + plan.cost["on_demand"] + plan.cost["spot"])


def test_downside_by_hand_at_30_percent(tiny):
    # 0.7 x demand: Jan 8.4/5.6, Feb 16.8/11.2/14: tranche 1 holds min(8, d - 4), tranche 2 max(0, d - 12)
    inp, plan = tiny
    d = downside(plan, inp, make_plan=make_plan, shocks=(0.3,), executor=ONE, mip_gap=0.0).iloc[1]
    dem = 0.7 * np.array(JAN + FEB, float)
    t1 = np.clip(dem - 4, 0, 8)
    t2 = np.clip(dem[7:] - 12, 0, 8)
    stranded = (8 * 14 - t1.sum() + 8 * 7 - t2.sum()) * H * 2.0
    assert d["stranded_usd"] == pytest.approx(stranded, abs=1e-6)
    assert d["on_demand_usd"] == pytest.approx(0.0, abs=1e-6)
    assert d["total_cost_usd"] == pytest.approx(plan.cost["reserved"], abs=1e-6)


def test_commitment_curve_passes_through_the_plan_and_is_lowest_there(tiny):
    inp, plan = tiny
    c = commitment_curve(plan, inp, make_plan=make_plan, factors=(0, 0.5, 1, 1.5, 2, 3), executor=ONE, mip_gap=0.0)
    assert list(c["factor"]) == [0, 0.5, 1, 1.5, 2, 3]
    me = c[c["optimum"]].iloc[0]
    assert me["factor"] == 1 and c["optimum"].sum() == 1
    assert me["total_cost_usd"] == pytest.approx(plan.cost["total"], rel=1e-6)
    assert me["objective_usd"] == pytest.approx(plan.objective, rel=1e-6)
    assert me["npv_usd"] == pytest.approx(plan.finance["npv_usd"], rel=1e-6)
    zero = make_plan(inp, fixed_reserved=np.zeros(len(plan.purchases)), risk=False, shadow=False, mip_gap=0.0)
    at0 = c[c["factor"] == 0].iloc[0]
    assert at0["total_cost_usd"] == pytest.approx(zero.cost["total"], rel=1e-9)
    assert at0["committed_gpus"] == 0 and at0["committed_usd"] == 0
    assert at0["total_cost_usd"] == pytest.approx((sum(JAN) + sum(FEB) - 4 * 14) * H * 10)
    assert (c["objective_usd"] >= me["objective_usd"] - 1e-6).all()  # the plan is optimal: the curve's minimum
    assert bool(me["cheapest"])
    assert list(c["committed_gpus"]) == [0, 16, 16, 32, 32, 48]  # 1 + 1 instances x factor, half up
    assert (c["savings_usd"] == c["baseline_all_on_demand_usd"] - c["total_cost_usd"]).all()


def test_commitment_curve_on_local_processes_matches_in_process(tiny):
    inp, plan = tiny
    here = commitment_curve(plan, inp, make_plan=make_plan, factors=(0, 2), executor=ONE, mip_gap=0.0)
    there = commitment_curve(plan, inp, make_plan=make_plan, factors=(0, 2), executor=LocalExecutor(2), mip_gap=0.0)
    assert np.allclose(here["total_cost_usd"], there["total_cost_usd"], rtol=1e-9)


def test_scaled_units_round_whole_instances_and_keep_caps(tmp_path):
    path = write_case(tmp_path, {"c": [20.0] * 48},
                      [price(hourly=10.0, gpus_per_instance=8),
                       price(option="reserved_1y", hourly=2.0, upfront_usd=0.0, term_months=12, gpus_per_instance=8,
                             max_gpus=24)], {"c": {}})
    inp = load_inputs(path)
    plan = make_plan(inp, mip_gap=0.0)
    assert plan.purchases["instances"].sum() == 3  # 24 GPUs: the cap (the third instance: 4 of 8 used, pays)
    assert list(scaled_units(plan, inp, 1.0)) == list(plan.purchases["units"])
    assert scaled_units(plan, inp, 0.5).sum() == 2  # 1.5 -> 2, half up
    assert scaled_units(plan, inp, 0.1).sum() == 0
    assert scaled_units(plan, inp, 2.0).sum() == 3  # 6 instances = 48 GPUs > the 24 the sheet allows
    c = commitment_curve(plan, inp, make_plan=make_plan, factors=(0, 2), executor=ONE, mip_gap=0.0)
    assert (c["status"] == "optimal").all() and c["committed_gpus"].max() == 24


def test_savings_against_on_demand_and_the_next_best_plan_by_hand(tiny):
    inp, plan = tiny
    s = savings(plan, inp, make_plan=make_plan, mip_gap=0.0)
    demand_h = (sum(JAN) + sum(FEB)) * H
    next_best = (demand_h - 4 * 14 * H) * 10  # the 4 owned GPUs serve, the rest on-demand
    mine = plan.cost["total"]
    assert s["all_on_demand_usd"] == pytest.approx(demand_h * 10)
    assert s["next_best_cost_usd"] == pytest.approx(next_best)
    assert s["savings_vs_on_demand_usd"] == pytest.approx(demand_h * 10 - mine)
    assert s["savings_vs_next_best_usd"] == pytest.approx(next_best - mine)
    full = 2 * 8 * 2 * 12 * 730 + plan.cost["on_demand"]
    assert s["plan_full_term_usd"] == pytest.approx(full)
    assert s["savings_vs_next_best_full_term_usd"] == pytest.approx(next_best - full)
    assert s["already_committed_usd"] == pytest.approx(4 * 2 * 14 * H)


def test_cash_by_year_includes_the_owned_fees_by_hand(tiny):
    _, plan = tiny
    m = cash_monthly(plan)
    assert m["month"].iat[0] == pd.Timestamp("2027-01-01")
    owned = m.set_index("month")["owned_recurring_usd"]
    assert owned[pd.Timestamp("2027-01-01")] == pytest.approx(4 * 2 * 7 * 24)  # from Jan 25, the horizon's start
    assert owned[pd.Timestamp("2027-02-01")] == pytest.approx(4 * 2 * 28 * 24)
    assert owned.sum() == pytest.approx(4 * 2 * 341 * 24)  # to 2028-01-01
    assert m["total_usd"].sum() == pytest.approx(plan.cash_schedule["total_usd"].sum() + owned.sum())
    y = cash_by_year(plan, fiscal_year_start=4)
    cal, fis = y[y["basis"] == "calendar"], y[y["basis"] == "fiscal"]
    assert cal["total_usd"].sum() == pytest.approx(fis["total_usd"].sum())
    assert list(fis["label"])[:2] == ["FY2027", "FY2028"]
    first = fis.iloc[0]
    assert first["first_month"] == pd.Timestamp("2027-01-01") and first["last_month"] == pd.Timestamp("2027-03-01")
    assert first["owned_recurring_usd"] == pytest.approx(4 * 2 * (7 + 28 + 31) * 24)
    assert cal[cal["year"] == 2027]["owned_recurring_usd"].iat[0] == pytest.approx(4 * 2 * 341 * 24)
    plain = cash_by_year(plan)  # [finance] fiscal_year_start defaults to 1: fiscal = calendar
    assert list(plain[plain["basis"] == "fiscal"]["total_usd"]) == pytest.approx(list(cal["total_usd"]))
    nxt = cash_next_12_months(plan)
    assert nxt == pytest.approx(m[m["month"] < pd.Timestamp("2028-01-01")]["total_usd"].sum())


def test_fiscal_year_start_from_the_model_file(tmp_path):
    path = two_tranches(tmp_path, extra="[finance]\nfiscal_year_start = 4\n")
    inp = load_inputs(path)
    assert inp.config.finance.fiscal_year_start == 4
    plan = make_plan(inp, mip_gap=0.0)
    assert cash_by_year(plan)["label"].str.startswith("FY").any()


@pytest.mark.parametrize("text,message", [
    ("fiscal_year_start = 13", "'finance.fiscal_year_start' out of range (got 13)"),
    ("fiscal_year_start = 0", "'finance.fiscal_year_start' out of range (got 0)"),
    ("fiscal_year_start = 4.5", "finance.fiscal_year_start"),
    ('fiscal_year_start = "April"', "finance.fiscal_year_start"),
])
def test_bad_fiscal_year_start_exits_2(tmp_path, text, message):
    m = write_case(tmp_path, {"c": [1.0]}, [price(hourly=1.0)], {"c": {}}, extra_top=f"[finance]\n{text}")
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2 and message in r.output, r.output


def test_memo_to_dict_is_json(tiny):
    inp, plan = tiny
    memo = build_memo(plan, inp, make_plan=make_plan, shocks=(0.2,), factors=(0, 1), executor=ONE, mip_gap=0.0)
    assert isinstance(memo, Memo)
    doc = json.loads(json.dumps(memo.to_dict(), allow_nan=False))
    assert len(doc["tranches"]) == 2 and doc["tranches"][0]["purchase_date"].startswith("2027-01-25")
    assert [r["factor"] for r in doc["curve"]] == [0, 1] and doc["coverage"]["coverage"] > 0.9
    assert doc["cash_next_12_months_usd"] == pytest.approx(memo.cash_next_12_months_usd)
    assert default_factors(inp) == (0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2)


def test_ladder_last_tranches_are_used_less_than_the_first(tmp_path):
    """Two years of daily demand growing from 10 to 40 GPUs with noise, a 1-year term bought any quarter: the
    tranches stack in purchase order, so the first is used nearly always and the last only at the peaks (the
    bundled three-year ladder shows the same: about 94 % for the first tranche down to 43 % for the last)."""
    import numpy as np

    from conftest import price, write_case

    n = 2 * 365
    rng = np.random.default_rng(5)
    demand = list((10 + 30 * np.arange(n) / n + rng.normal(0, 3, n)).clip(0).round(2))
    m = write_case(tmp_path, {"a": demand}, [price("A", "r", "on_demand", 4.0),
                                             price("A", "r", "reserved_1y", 1.5, term_months=12)],
                   {"a": {"spot": False}}, hours=24.0, start="2027-01-01",
                   extra_top='[commitments]\npurchase_every = "quarter"\n')
    plan = make_plan(load_inputs(m), risk=False)
    t = tranche_utilisation(plan)
    assert len(t) >= 4
    for _, pool in t.groupby(["gpu_type", "region"]):
        if len(pool) < 4:
            continue
        pool = pool.sort_values("stack_position")
        q = max(1, len(pool) // 4)
        assert pool["avg_utilisation"].iloc[-q:].mean() < pool["avg_utilisation"].iloc[:q].mean()
        assert pool["avg_utilisation"].iloc[-1] < pool["avg_utilisation"].iloc[0]
    assert t["horizon_cost_usd"].sum() == pytest.approx(plan.cost["reserved"], rel=1e-9)


def test_scaled_units_keep_the_reserved_cap_net_of_inventory(tmp_path):
    # cap 24 GPUs with 8 owned: at most 16 new GPUs (2 instances); the plan buys them, factor 2 stays at 2
    path = write_case(tmp_path, {"c": [20.0] * 48},
                      [price(hourly=10.0, gpus_per_instance=8),
                       price(option="reserved_1y", hourly=2.0, upfront_usd=0.0, term_months=12, gpus_per_instance=8,
                             max_gpus=24)], {"c": {}},
                      inventory=[{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 8,
                                  "start": "2026-06-01T00:00", "end": "2028-01-01T00:00"}])
    inp = load_inputs(path)
    plan = make_plan(inp, mip_gap=0.0)
    assert plan.purchases["instances"].sum() == 2
    assert scaled_units(plan, inp, 2.0).sum() == 2 and scaled_units(plan, inp, 0.5).sum() == 1
    c = commitment_curve(plan, inp, make_plan=make_plan, factors=(0, 0.5, 2), executor=ONE, mip_gap=0.0)
    assert (c["status"] == "optimal").all()
    assert c.loc[c["factor"] == 2, "total_cost_usd"].iat[0] == pytest.approx(plan.cost["total"], rel=1e-9)


def test_the_memo_of_other_inputs_honours_their_budget(tmp_path):
    """Re-solves of inputs other than the plan's (a budget added) are not priced in batches that ignore it."""
    import dataclasses

    from planner.inputs.config import BudgetPolicy
    from test_decompose import _case

    inp = _case(tmp_path, 11, days=120)
    plan = make_plan(inp, risk=False)
    cap = 0.85 * plan.cost["total"]
    capped = dataclasses.replace(inp, config=dataclasses.replace(inp.config, budget=BudgetPolicy(max_total_usd=cap)))
    memo = build_memo(plan, capped, make_plan=make_plan, factors=(0, 1, 1.5))
    for frame in (memo.downside.iloc[1:], memo.curve[memo.curve["factor"] != 1.0]):
        solved = frame[frame["status"] == "optimal"]
        assert (solved["total_cost_usd"] <= cap * (1 + 1e-6)).all(), solved[["total_cost_usd"]]


def test_a_whole_plans_batched_memo_tables_come_from_one_solve_path(tmp_path):
    """A plan solved whole whose re-solves are batched: its own row is priced in the batches too (same cost)."""
    from test_decompose import _case

    inp = _case(tmp_path, 11, days=120)
    inp = dataclasses_replace_method(inp, "monolithic")
    plan = make_plan(inp, risk=False)
    memo = build_memo(plan, make_plan=make_plan, factors=(0, 1, 1.5))
    own = memo.downside.iloc[0]
    assert own["shock"] == 0.0 and own["seconds"] > 0  # priced again, not copied from the plan
    assert own["total_cost_usd"] == pytest.approx(plan.cost["total"], rel=1e-7)
    row = memo.curve[memo.curve["factor"] == 1.0].iloc[0]
    assert row["total_cost_usd"] == pytest.approx(plan.cost["total"], rel=1e-7) and bool(row["optimum"])


def dataclasses_replace_method(inp, method: str):
    import dataclasses

    return dataclasses.replace(inp, config=dataclasses.replace(
        inp.config, solver=dataclasses.replace(inp.config.solver, method=method)))


@pytest.mark.parametrize("cap_mw", [0.01, 1.0])
def test_commitment_curve_points_past_a_site_power_cap_are_infeasible_not_the_memo_lost(tmp_path, cap_mw):
    """The plan buys the 10 GPUs a 10 kW site holds: the curve's points above it break the site's power (a
    first-stage row) and say infeasible, the others are priced; before, the batched re-solve raised and the whole
    memo was dropped (a note, and no curve, downside or savings). Without the cap every point is priced."""
    from conftest import write_case
    from planner.memo.build import build_memo
    from planner.pipeline.run import make_plan as pipeline_make_plan

    prices = [{"gpu_type": "A", "region": "r1", "option": "on_demand", "hourly_usd": 4.0},
              {"gpu_type": "A", "region": "r1", "option": "reserved_1y", "hourly_usd": 1.0, "site": "s1",
               "kw_per_gpu": 1.0}]
    m = write_case(tmp_path, {"work": [20.0] * 48}, prices, {"work": {}},
                   extra_top=f'[term]\njudge = "horizon"\n[sites.s1]\nmax_mw = {cap_mw}\n')
    pd.DataFrame(prices).to_csv(tmp_path / "prices.csv", index=False)  # with the site columns
    plan = make_plan(load_inputs(m))
    bought = float(plan.purchases["gpus"].sum())
    assert bought == (10.0 if cap_mw == 0.01 else 20.0)
    curve = build_memo(plan, make_plan=pipeline_make_plan).curve
    over = curve["factor"] > 1.0
    expect = "infeasible" if cap_mw == 0.01 else "optimal"
    assert (curve.loc[over, "status"] == expect).all() and (curve.loc[~over, "status"] == "optimal").all()
    assert curve.loc[~over, "total_cost_usd"].notna().all()
