"""Issue 22 item 3: full-term regret, the baselines users run, reliability in the backtest, intervals, rankings."""

from __future__ import annotations

import functools
import importlib.util
import itertools
import json
import sys

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from planner import load_inputs, make_plan
from planner.forecasting import point as forecast
from planner.backtest import rules
from planner.backtest import stats
from planner.backtest.run import STRATEGIES, Settings, backtest, decide, run_chain
from planner.cli import cli
from planner.inputs.arrays import with_demand
from conftest import ROOT, price, write_case

HIGHS = functools.partial(make_plan, backend="highs")
LIABILITY = 0.5 * 12 * 730  # one GPU of the 1-year term at 0.5 $/h: 4,380 USD


def step_case(tmp_path, demand=None, term_months=12):
    """One class, on-demand 1 $/GPU-h, reserved 0.5 $/GPU-h: demand 4 for two days, then 8."""
    d = demand if demand is not None else [4.0] * 48 + [8.0] * 48
    return load_inputs(write_case(tmp_path, {"c": d}, [price(hourly=1.0), price(option="reserved_1y", hourly=0.5,
                                                                                term_months=term_months)],
                                  {"c": {}}, solver={"backend": "highs", "mip_gap": 0}))


# ---------------------------------------------------------------- full-term regret, by hand

def test_full_term_regret_by_hand(tmp_path):
    # cut-offs at 24, 48, 72; the last day forecast: point buys 4 at 24, none at 48, 4 at 72 (test_backtest.py).
    # Full term: each GPU bought costs 4,380 on the day it is signed. Windows: 4 x 4,380 (day 0, demand 4 covered);
    # 4 GPUs on demand for 24 h = 96 (day 1); 4 x 4,380 (day 2). The full-term hindsight pays terms in full too:
    # on 72 hours no year pays, so it buys nothing: 96 + 192 + 192 = 480.
    r = backtest(step_case(tmp_path), 24, 24, HIGHS, horizon_periods=24, forecaster="latest",
                 strategies=("point", "all_on_demand"))
    s = r.strategies.set_index("strategy")
    w = r.windows[r.windows["strategy"] == "point"].sort_values("window")
    assert w["signed_usd"].tolist() == pytest.approx([4 * LIABILITY, 0, 4 * LIABILITY])
    # per window: the in-span cost plus what the window's signatures owe past the span. Day 0: 48 in span
    # (4 x 0.5 x 24) + 4 x 4,380 - 4 x 0.5 x 72 (its 72 hours in the span); day 1: 48 + 96 on demand; day 2:
    # 96 (8 reserved) + 4 x 4,380 - 4 x 0.5 x 24. They add up to the total above.
    expected = [48 + 4 * LIABILITY - 144, 144, 96 + 4 * LIABILITY - 48]
    assert w["full_term_objective_usd"].tolist() == pytest.approx(expected)
    assert sum(expected) == pytest.approx(8 * LIABILITY + 96)
    assert w["hindsight_full_term_objective_usd"].tolist() == pytest.approx([96, 192, 192])
    assert w["full_term_regret_usd"].iloc[0] == pytest.approx(expected[0] - 96)
    assert s.loc["point", "full_term_objective_usd"] == pytest.approx(8 * LIABILITY + 96)
    # 72 hours of trace against 1-year terms: a full-term regret would rank the strategies by what they signed
    # (here 100 * (8 x 4,380 + 96 - 480) / 480 = 7,220 % for point against 0 for all-on-demand): it is not
    # reported, and the note says why (issue 34 item 3); the per-window figures above stay
    assert s["full_term_regret_pct"].isna().all() and s["full_term_regret_ci90"].isna().all()
    assert "before the last decision" in s.loc["point", "full_term_note"]
    # in span the same purchases cost 48 + 144 + 96 = 288 against 240 (amortised, as before)
    assert s.loc["point", "total_cost_usd"] == pytest.approx(288)
    assert r.hindsight["full_term"]["solved_apart"] and r.hindsight["full_term"]["purchases"] == []
    assert r.hindsight["full_term"]["objective_usd"] == pytest.approx(480)


def test_terms_inside_the_span_make_both_accountings_agree(tmp_path):
    # a one-month term, bought only at the first cut-off (decide 24 h), the span running past its end: the
    # full-term hindsight is the in-span one (no second solve) and full-term regret is the in-span total regret
    d = [4.0] * 24 + [6.0] * 768
    r = backtest(step_case(tmp_path, d, term_months=1), 24, 24, HIGHS, horizon_periods=24, forecaster="latest",
                 strategies=("point",), decide_periods=24)
    s = r.strategies.set_index("strategy")
    assert not r.hindsight["full_term"]["solved_apart"]
    bought = r.purchases
    assert bought["window"].tolist() == [0]  # nothing after the first cut-off
    assert s.loc["point", "full_term_regret_pct"] == pytest.approx(s.loc["point", "total_regret_pct"], abs=1e-6)
    assert s.loc["point", "signed_usd"] == pytest.approx(4 * 0.5 * 730)
    assert any("first 1 cut-offs" in n for n in r.notes)


# ---------------------------------------------------------------- the baselines, by hand

def _spot_case(tmp_path):
    prices = [price(hourly=1.0), price(option="reserved_1y", hourly=0.6, term_months=12),
              price(option="spot", hourly=0.3, interruptions_per_hour=0.01)]
    d = [10.0] * 96
    return load_inputs(write_case(tmp_path, {"a": d, "b": d}, prices,
                                  {"a": {}, "b": {"spot": True, "max_spot_share": 0.5, "headroom": 0.1}},
                                  solver={"backend": "highs"}))


def _at_cutoff(inp):
    settings = Settings(train=24, test=24, step=24, horizon=24, period_hours=1.0, forecaster="latest")
    return decide("all_on_demand", inp, inp.demand[0][:, :24], inp.periods[24],
                  pd.DataFrame(columns=["gpu_type", "region", "gpus", "start", "end"]), settings, HIGHS)[0]


def test_spot_aware_level_is_the_hand_percentile_of_non_spot_demand(tmp_path):
    inp = _at_cutoff(_spot_case(tmp_path))
    assert inp.goodput[1].max() > 0 and inp.goodput[0].max() == 0  # b may use spot, a may not
    rng = np.random.default_rng(1)
    usage = np.vstack([rng.uniform(20, 60, 168), rng.uniform(0, 40, 168)])
    non_spot = usage[0] + 0.5 * 1.1 * usage[1]  # a whole; b's half that cannot go to spot, with headroom
    level = np.quantile(non_spot, 1 - 0.6 / 1.0)
    assert rules.spot_aware(inp, usage, np.zeros(1)).tolist() == [np.floor(level)]
    assert rules.spot_aware(inp, usage, np.array([level - 3.2])).tolist() == [3.0]  # less what is owned
    # the fleet rules would size on all of b's demand: a higher level
    assert np.quantile(usage[0] + 1.1 * usage[1], 0.4) > level


def test_coverage_ladder_tranche_is_share_x_trailing_minimum_over_4(tmp_path):
    inp = _at_cutoff(_spot_case(tmp_path))
    usage = np.vstack([np.r_[np.full(100, 60.0), 40.0], np.full(101, 20.0)])  # non-spot minimum 40 + 11 = 51
    minimum = 40.0 + 0.5 * 1.1 * 20.0
    assert rules.coverage_ladder(inp, usage, np.zeros(1), share=0.8).tolist() == [np.floor(0.8 * minimum / 4)]
    # never above share x minimum in force: with 39 owned only 1 more (40.8)
    assert rules.coverage_ladder(inp, usage, np.array([39.0]), share=0.8).tolist() == [1.0]


def test_the_rules_act_weekly_and_quarterly_in_a_backtest(tmp_path):
    # 10 GPUs for three days, then 14. Cut-offs daily from hour 24. The spot-aware rule runs at cut-offs 0 and 7:
    # at 0 its week is one day at 10 (buys 10); at 7 (hour 192) the last 168 h are 48 h at 10 and 120 h at 14, the
    # break-even percentile (r/od = 0.5: the median) is 14: 4 more. The ladder runs once in 8 days: 0.8 x 10 / 4 = 2.
    inp = step_case(tmp_path, [10.0] * 72 + [14.0] * 144)
    r = backtest(inp, 24, 24, HIGHS, horizon_periods=24, strategies=("spot_aware", "coverage_ladder"))
    p = r.purchases
    aware = p[p["strategy"] == "spot_aware"]
    assert aware["window"].tolist() == [0, 7] and aware["gpus"].tolist() == [10, 4]
    ladder = p[p["strategy"] == "coverage_ladder"]
    assert ladder["window"].tolist() == [0] and ladder["gpus"].tolist() == [2]


# ---------------------------------------------------------------- reliability

def test_an_availability_series_makes_shortfall_the_report_counts(tmp_path):
    rows = [{"period": f"2027-01-05T{h:02d}:00", "gpu_type": "A", "region": "r1", "option": "on_demand",
             "max_gpus": 6} for h in range(6, 12)]
    pd.DataFrame(rows).to_csv(tmp_path / "availability.csv", index=False)
    m = write_case(tmp_path, {"a": [10.0] * 72}, [price(hourly=1.0), price(option="reserved_1y", hourly=0.5)],
                   {"a": {"shortfall_penalty": 7.0}}, solver={"backend": "highs"},
                   extra_top='availability = "availability.csv"')
    r = backtest(load_inputs(m), 24, 24, HIGHS, horizon_periods=24, strategies=("all_on_demand",))
    s = r.strategies.set_index("strategy").loc["all_on_demand"]
    assert s["shortfall_gpu_hours"] == pytest.approx(4 * 6)  # 10 wanted, 6 obtainable, 6 hours
    assert s["slo_hours_missed"] == 6
    assert s["total_objective_usd"] - s["total_cost_usd"] == pytest.approx(7.0 * 24)  # the class's own penalty
    w = r.windows.set_index("window")
    assert w.loc[0, "shortfall_gpu_hours"] == pytest.approx(24) and w.loc[1, "shortfall_gpu_hours"] == 0
    ranks = r.penalty_ranks
    assert set(ranks["multiplier"]) == {2.0, 10.0, 50.0}
    at50 = ranks[ranks["multiplier"] == 50.0].iloc[0]
    assert at50["objective_usd"] == pytest.approx(s["total_cost_usd"] + 50 * 1.0 * 24)


def test_slo_hours_are_the_same_with_the_classes_in_any_order(tmp_path):
    t = np.arange(72)
    demand = {"a": (6 + 4 * np.sin(t / 24 * 2 * np.pi)).round(1).tolist(),
              "b": (3 + 2 * np.cos(t / 24 * 2 * np.pi)).round(1).tolist(),
              "c": (4 + 2 * np.sin(t / 12 * 2 * np.pi)).round(1).tolist()}
    classes = {"a": {}, "b": {"spot": True, "max_spot_share": 0.5, "shortfall_penalty": 3.0}, "c": {"headroom": 0.1}}
    prices = [price(hourly=1.0, max_gpus=11), price(option="reserved_1y", hourly=0.6, term_months=12, max_gpus=3),
              price(option="spot", hourly=0.4, interruptions_per_hour=0.05, max_gpus=1)]
    seen = set()
    for order in itertools.permutations("abc"):
        m = write_case(tmp_path / "".join(order), {k: demand[k] for k in order}, prices,
                       {k: classes[k] for k in order}, solver={"backend": "highs", "mip_gap": 0})
        r = backtest(load_inputs(m), 24, 24, HIGHS, horizon_periods=24, forecaster="latest",
                     strategies=("all_on_demand",))
        s = r.strategies.iloc[0]
        seen.add((round(s["slo_hours_missed"], 6), round(s["shortfall_gpu_hours"], 4)))
    assert len(seen) == 1
    assert next(iter(seen))[0] > 0  # the caps do bite: the count is not trivially zero


# ---------------------------------------------------------------- no look-ahead, intervals, the JSON

def test_no_look_ahead_through_the_trend_forecaster_and_the_rules(tmp_path):
    rng = np.random.default_rng(11)
    d = (10 + 4 * np.sin(np.arange(24 * 9) / 24 * 2 * np.pi) + rng.normal(0, 1.5, 24 * 9) + np.arange(24 * 9) / 30)
    d = d.clip(0).round(2)
    base = step_case(tmp_path, d.tolist())
    settings = Settings(train=48, test=24, step=24, horizon=48, period_hours=1.0, forecaster="weekly_trend")
    cut = int(settings.cutoffs(base.T)[3])
    changed = d.copy()
    changed[cut:] = changed[cut:] * 3 + 5
    other = with_demand(base, changed[None, None, :], base.scenarios, base.probability)
    for strategy in ("point", "spot_aware", "coverage_ladder"):
        a, _ = run_chain(base, strategy, settings, HIGHS)
        b, _ = run_chain(other, strategy, settings, HIGHS)
        keep = ["window", "option", "instances"]
        pd.testing.assert_frame_equal(a[a["window"] <= 3][keep].reset_index(drop=True),
                                      b[b["window"] <= 3][keep].reset_index(drop=True))


def test_bootstrap_interval_contains_the_mean_and_is_seeded():
    rng = np.random.default_rng(0)
    v = rng.gamma(2.0, 3.0, 25)
    ci = stats.mean_ci(v, seed=4)
    assert ci[0] < v.mean() < ci[1]
    assert stats.mean_ci(v, seed=4) == ci and stats.mean_ci(v, seed=5) != ci
    assert stats.mean_ci([2.0] * 5) == pytest.approx((2.0, 2.0))
    num, den = rng.normal(1, 1, 25), rng.uniform(10, 20, 25)
    r = stats.ratio_ci(num, den, seed=1)
    assert r[0] < 100 * num.sum() / den.sum() < r[1] and stats.ratio_ci(num, den, seed=1) == r
    assert stats.mean_ci([None, float("nan")]) is None


def test_backtest_json_has_the_hindsight_purchases_intervals_and_rankings(tmp_path):
    m = write_case(tmp_path, {"a": [4.0] * 48 + [8.0] * 48}, [price(hourly=1.0),
                                                            price(option="reserved_1y", hourly=0.5)],
                   {"a": {}}, solver={"backend": "highs", "mip_gap": 0})
    out = tmp_path / "bt"
    r = CliRunner().invoke(cli, ["backtest", str(m), "--train-hours", "24", "--test-hours", "24", "--horizon-hours",
                                 "24", "--forecaster", "latest", "--strategies", "point,spot_aware,all_on_demand",
                                 "--seed", "3", "--json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    bought = doc["hindsight"]["purchases"]
    assert sum(p["gpus"] for p in bought) == 8  # 4 at the first cut-off, 4 at the second (test_backtest.py)
    assert {p["purchase_date"][:10] for p in bought} == {"2027-01-05", "2027-01-06"}
    assert all(p["liability_usd"] == pytest.approx(p["gpus"] * LIABILITY) for p in bought)
    point = doc["strategies"]["point"]
    lo, hi = point["mean_regret_ci90"]
    assert lo <= point["mean_regret_pct"] <= hi
    assert set(point) >= {"full_term_regret_pct", "full_term_regret_ci90", "signed_usd", "full_term_cost_usd"}
    assert [s["multiplier"] for s in doc["penalty_sensitivity"]] == [2.0, 10.0, 50.0]
    assert sorted(doc["penalty_sensitivity"][0]["ranking"]) == ["all_on_demand", "point", "spot_aware"]
    assert doc["settings"]["bootstrap_seed"] == 3


@pytest.mark.parametrize("args, message", [
    (["--ladder-share", "0"], "--ladder-share"),
    (["--ladder-share", "1.5"], "--ladder-share"),
    (["--penalty-multipliers", "2,x"], "--penalty-multipliers"),
    (["--penalty-multipliers", "-1"], "--penalty-multipliers"),
    (["--decide-hours", "0"], "--decide-hours"),
    (["--strategies", "point,ladder"], "unknown strategy"),
])
def test_bad_backtest_options_exit_2_naming_them(tmp_path, args, message):
    m = write_case(tmp_path, {"a": [3.0] * 96}, [price(hourly=2.0), price(option="reserved_1y", hourly=1.1)],
                   {"a": {}}, solver={"backend": "highs"})
    out = tmp_path / "bt"
    r = CliRunner().invoke(cli, ["backtest", str(m), "--train-hours", "48", "--test-hours", "24", "--out", str(out)]
                           + args)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output
    assert not out.exists()


def test_strategies_are_the_cli_names():
    from planner.cli.plan import STRATEGY_NAMES

    from planner.backtest.run import OPTIONAL

    assert {"spot_aware", "coverage_ladder"} <= set(STRATEGIES) and set(STRATEGY_NAMES) == set(STRATEGIES) | set(OPTIONAL)
    assert set(OPTIONAL) == {"tree", "default"}


# ---------------------------------------------------------------- the trend-aware forecast, the traces

def test_weekly_trend_by_hand():
    # two weeks whose daily means rise exactly 1 GPU a day (no noise: standard error 0, the slope kept whole);
    # each day is flat at its mean, so the last week's profile is its days over the week's mean
    days = np.arange(14, dtype=float) + 10.0
    history = np.repeat(days, 24)[None]
    out = forecast.weekly_trend(history, 48)
    phi = forecast.DAMPING_PER_WEEK ** (1 / 7)
    last = days[-7:]
    level = last.mean() + 1.0 * 3.5  # the last week's mean (20) at its end
    for d in (0, 1):
        growth = phi * (1 - phi ** (d + 1)) / (1 - phi)
        assert out[0, 24 * d:24 * (d + 1)] == pytest.approx(np.full(24, last[d] / last.mean() * (level + growth)))
    # pure noise around a flat level: the slope is within two standard errors of 0 and is dropped
    rng = np.random.default_rng(0)
    flat = 50 + rng.normal(0, 5, 24 * 28)
    shaped = forecast.weekly_trend(flat[None], 24 * 14)
    assert shaped[0] == pytest.approx(np.tile(flat[-168:], 2), rel=0.05)
    assert forecast.weekly_trend(history[:, :48], 5).tolist() == forecast.latest(history[:, :48], 5).tolist()
    assert "weekly_trend" in forecast.FORECASTERS


def _traces():
    spec = importlib.util.spec_from_file_location("traces", ROOT / "benchmarks" / "traces.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("traces", mod)  # dataclasses look their module up
    spec.loader.exec_module(sys.modules["traces"])
    return sys.modules["traces"]


def test_synthetic_traces_are_seeded_and_follow_their_level_path(tmp_path):
    traces = _traces()
    a, _ = traces.generate("growth_then_cut", years=3.0, seed=1)
    b, _ = traces.generate("growth_then_cut", years=3.0, seed=1)
    c, _ = traces.generate("growth_then_cut", years=3.0, seed=2)
    pd.testing.assert_frame_equal(a, b)
    assert not a["gpus"].equals(c["gpus"])
    assert len(a) == 2 * 3 * 8760 and (a["gpus"] >= 0).all()
    inf = a[a["workload_class"] == "inference"].set_index("period")["gpus"]
    months = inf.groupby((np.arange(len(inf)) // 730)).mean()
    # 4 %/month for 18 months: month 17 about 1.04^17 x month 0; the regime change at 30 cuts 35 %
    assert months[17] / months[0] == pytest.approx(1.04 ** 17, rel=0.15)
    assert months[31] / months[28] == pytest.approx(0.65 * 0.99, rel=0.15)
    spec = traces.SCENARIOS["growth_then_cut"][0]
    assert traces.level_path(spec, np.array([0.0, 18.0, 30.0, 31.0])) == pytest.approx(
        [100, 100 * 1.04 ** 18, 100 * 1.04 ** 18 * 0.65, 100 * 1.04 ** 18 * 0.65 * 0.99])


def test_level_scenarios_spread_with_the_square_root_of_time_by_hand():
    from scipy.stats import norm

    weeks = [1.0, np.exp(0.1), 1.0, np.exp(0.1)]  # week-on-week log changes 0.1, -0.1, 0.1
    history = np.concatenate([np.full(168, w) for w in weeks])[None]
    point = np.full((1, 168 * 4), 10.0)
    cube, prob = forecast.level_scenarios(point, history, 1.0, count=5)
    sigma = np.std([0.1, -0.1, 0.1])
    z = norm.ppf((np.arange(5) + 0.5) / 5)
    for h in (0, 167, 168 * 4 - 1):
        w = (h + 1) / 168
        assert cube[:, 0, h] == pytest.approx(10 * np.exp(z * sigma * np.sqrt(w) - sigma ** 2 * w / 2))
    assert prob.tolist() == [0.2] * 5
    assert cube[:, 0, -1].mean() == pytest.approx(10, rel=0.02)  # about the point forecast on average
    one, w1 = forecast.level_scenarios(point, history[:, :300], 1.0)  # under three weeks: the point alone
    assert one.shape == (1, 1, 672) and w1.tolist() == [1.0]


# ---------------------------------------------------------------- requests-per-second classes

def _slo_case(tmp_path, requests, types=("A", "B")):
    replicas = {"A": {"service_ms": 500, "gpus_per_replica": 2}, "B": {"service_ms": 250, "gpus_per_replica": 2}}
    classes = {"svc": {"demand_unit": "requests_per_s", "latency_slo_ms": 3000,
                       "replicas": {t: replicas[t] for t in types}}}
    prices = [price(hourly=1.0), price(option="reserved_1y", hourly=0.5, term_months=12),
              price(gpu_type="B", hourly=1.6), price(gpu_type="B", option="reserved_1y", hourly=0.9, term_months=12)]
    return load_inputs(write_case(tmp_path, {"svc": requests}, prices, classes,
                                  solver={"backend": "highs", "mip_gap": 0}))


def test_requests_per_second_classes_are_sized_from_the_forecast_at_each_cut_off(tmp_path):
    from planner.sizing.queueing import replicas_for_slo

    # 4 req/s for two days, then 40; one GPU type; the latest day forecast, flat: reserve its replicas whole
    inp = _slo_case(tmp_path, [4.0] * 48 + [40.0] * 48, types=("A",))
    r = backtest(inp, 24, 24, HIGHS, horizon_periods=24, forecaster="latest", strategies=("point",))
    need = {lam: 2 * int(replicas_for_slo(np.array([lam]), 0.5, 3.0, 99.0)[0]) for lam in (4.0, 40.0)}
    bought = r.purchases.groupby("window")["gpus"].sum()
    assert bought.to_dict() == {0: need[4.0], 2: need[40.0] - need[4.0]}
    # realised on the requests that came: day 1 (40 req/s) ran on demand beside the reserved need[4]
    s = r.strategies.iloc[0]
    assert s["shortfall_gpu_hours"] == 0 and s["slo_hours_missed"] == 0
    assert s["on_demand_usd"] == pytest.approx((need[40.0] - need[4.0]) * 1.0 * 24)


def test_requests_changed_after_a_cut_off_leave_earlier_purchases_and_speeds_unchanged(tmp_path):
    rng = np.random.default_rng(3)
    lam = (6 + 3 * np.sin(np.arange(144) / 24 * 2 * np.pi) + rng.normal(0, 0.5, 144)).clip(0.1).round(2)
    other = lam.copy()
    other[96:] = other[96:] * 20  # a far higher load after the fourth cut-off: other sizing, other speeds
    settings = Settings(train=24, test=24, step=24, horizon=24, period_hours=1.0, forecaster="latest")
    keep = ["window", "gpu_type", "option", "instances"]
    a = run_chain(_slo_case(tmp_path / "a", lam.tolist()), "point", settings, HIGHS)[0]
    b = run_chain(_slo_case(tmp_path / "b", other.tolist()), "point", settings, HIGHS)[0]
    pd.testing.assert_frame_equal(a[a["window"] <= 2][keep].reset_index(drop=True),
                                  b[b["window"] <= 2][keep].reset_index(drop=True))
    assert not a[keep].reset_index(drop=True).equals(b[keep].reset_index(drop=True))


def test_synthetic_traces_vary_from_day_to_day_as_the_real_ones_do(tmp_path):
    """Issue 34 item 4: days resampled from the real traces (weekday-matched), not AR(1) noise: a week's replay
    misses the synthetic trace by about what it misses the real one (within 6 points); without the real traces
    the stand-in says so. The new shapes follow their level paths."""
    traces = _traces()
    assert {"boom_then_bust", "saturating_growth", "seasonal_cycle", "migration_away"} <= set(traces.SCENARIOS)
    _, source = traces.generate("seasonal_cycle", years=1.0, seed=0, real=tmp_path / "none")
    assert "stand-in" in source
    days = traces.real_days()
    if days is None:
        pytest.skip("../shared/data/real not present")
    demand, source = traces.generate("seasonal_cycle", years=1.0, seed=0)
    assert "real days" in source
    for cls, shape in (("inference", "inference"), ("training", "training")):
        synthetic = traces.replay_error(demand.loc[demand["workload_class"] == cls, "gpus"].to_numpy())
        real = traces.replay_error(days[shape][0].reshape(-1))
        assert abs(synthetic - real) < 6.0, (cls, synthetic, real)
    inf = demand[demand["workload_class"] == "inference"]["gpus"].to_numpy()
    months = inf[: 12 * 730].reshape(12, 730).mean(axis=1)
    # +-25 % a year: month 3 (the sine's peak) well above month 9 (its trough)
    assert months[2] / months[8] == pytest.approx(1.25 / 0.75, rel=0.2)
    spec = traces.SCENARIOS["migration_away"][0]
    assert traces.level_path(spec, np.array([18.0, 19.0])) == pytest.approx(
        [120 * 1.02 ** 18 * 0.5, 120 * 1.02 ** 18 * 0.5 * 0.96])


def test_hours_over_the_latency_slo_come_from_the_queue_of_the_replicas_given(tmp_path):
    """Issue 34 item 3: SLO columns named for what they measure. 4 req/s, then 40: the point plan reserves
    day 0's replicas and buys day 1's only at the third cut-off; with on-demand capped at one GPU (no whole
    replica) the second window runs 40 req/s on the replicas for 4: its 24 hours are over the latency SLO (the
    M/M/c queue), the others are not."""
    replicas = {"A": {"service_ms": 500, "gpus_per_replica": 2}}
    classes = {"svc": {"demand_unit": "requests_per_s", "latency_slo_ms": 3000, "replicas": replicas}}
    prices = [price(hourly=1.0, max_gpus=1), price(option="reserved_1y", hourly=0.5, term_months=12)]
    inp = load_inputs(write_case(tmp_path, {"svc": [4.0] * 48 + [40.0] * 48}, prices, classes,
                                 solver={"backend": "highs", "mip_gap": 0}))
    r = backtest(inp, 24, 24, HIGHS, horizon_periods=24, forecaster="latest", strategies=("point",))
    w = r.windows.sort_values("window")
    assert w["hours_over_latency_slo"].tolist() == [0.0, 24.0, 0.0]
    assert r.strategies.iloc[0]["hours_over_latency_slo"] == 24.0
    assert w["spot_goodput"].isna().all()  # no spot here: no goodput to report


def test_spot_goodput_is_the_work_left_per_spot_gpu_hour_paid(tmp_path):
    r = backtest(_spot_case(tmp_path), 24, 24, HIGHS, horizon_periods=24, forecaster="latest",
                 strategies=("point",))
    inp = _spot_case(tmp_path / "again")
    g = float(inp.goodput[1, 0])  # class b on the one pool: the only spot user
    assert 0 < g < 1
    s = r.strategies.iloc[0]
    assert s["spot_usd"] > 0 and s["spot_goodput"] == pytest.approx(g, rel=1e-9)
