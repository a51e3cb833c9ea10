"""The rolling backtest with state: carried commitments, no look-ahead, hindsight bound, hand-computed regret."""

from __future__ import annotations

import functools
import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from planner import load_inputs, make_plan
from planner.forecasting import point as forecast
from planner.backtest.run import OPTIONAL, STRATEGIES, backtest, decide, percentile_fleet, recommender, run_chain, Settings
from planner.cli import cli
from planner.inputs.arrays import with_demand
from conftest import SHARED, price, write_case

HIGHS = functools.partial(make_plan, backend="highs")


def step_case(tmp_path, demand=None):
    """One class, on-demand 1 $/GPU-h, reserved 0.5 $/GPU-h (1 year): demand 4 for two days, then 8."""
    d = demand if demand is not None else [4.0] * 48 + [8.0] * 48
    return load_inputs(write_case(tmp_path, {"c": d}, [price(hourly=1.0), price(option="reserved_1y", hourly=0.5,
                                                                                term_months=12)],
                                  {"c": {}}, solver={"backend": "highs", "mip_gap": 0}))


def test_hand_computed_rolling_costs_and_regret(tmp_path):
    # cut-offs at 24, 48, 72 (train 24, test 24), forecast = the last day.
    # point: buys 4 at 24 (forecast 4), nothing at 48 (the last day was still 4), 4 more at 72.
    #   window costs: 4 x 0.5 x 24 = 48; 48 + 4 x 1 x 24 = 144; 8 x 0.5 x 24 = 96 -> 288.
    # hindsight (may buy at 24, 48, 72): 4 at 24, 4 at 48 -> 48 + 96 + 96 = 240.
    # all on demand: 96 + 192 + 192 = 480.
    inp = step_case(tmp_path)
    r = backtest(inp, 24, 24, HIGHS, horizon_periods=24, forecaster="latest")
    assert r.hindsight_total_usd == pytest.approx(240)
    s = r.strategies.set_index("strategy")
    assert s.loc["point", "total_cost_usd"] == pytest.approx(288)
    assert s.loc["all_on_demand", "total_cost_usd"] == pytest.approx(480)
    w = r.windows[r.windows["strategy"] == "point"].sort_values("window")
    assert w["realised_cost_usd"].tolist() == pytest.approx([48, 144, 96])
    assert w["hindsight_cost_usd"].tolist() == pytest.approx([48, 96, 96])
    assert w["regret_pct"].tolist() == pytest.approx([0, 50, 0])
    assert s.loc["point", "mean_regret_pct"] == pytest.approx(50 / 3)
    assert s.loc["point", "total_regret_pct"] == pytest.approx(100 * 48 / 240)
    assert [sum(p["gpus"] for p in b) for b in w["purchases"]] == [4, 0, 4]
    assert w["purchases"].iloc[0][0]["purchase_date"].startswith("2027-01-05T00:00")
    # the percentile rule sees the same flat forecasts: the same purchases
    assert s.loc["percentile_fleet", "total_cost_usd"] == pytest.approx(288)
    # monthly table: every strategy's months add up to its total
    monthly = r.monthly.groupby("strategy")["cost_usd"].sum()
    assert monthly["point"] == pytest.approx(288) and monthly["hindsight"] == pytest.approx(240)


def test_recommender_saves_most_on_uncovered_usage(tmp_path):
    # usage 4 for 48 h, 8 for 24 h, 4 owned: uncovered 0 (48 h) or 4 (24 h); r/od = 0.5 -> the median, 0.
    inp = step_case(tmp_path)
    usage = inp.demand[0][:, :72]
    owned = pd.DataFrame({"gpu_type": ["A"], "region": ["r1"], "gpus": [4.0], "start": [inp.periods[0]],
                          "end": [inp.periods[0] + pd.Timedelta(days=365)]})
    settings = Settings(train=24, test=24, step=24, horizon=24, period_hours=1.0, forecaster="latest")
    win, n, _ = decide("recommender", inp, usage, inp.periods[72], owned, settings, HIGHS)
    assert win.inventory[0, 0] == pytest.approx(4)
    assert n.tolist() == [0]
    # with 3 of 4 days at 8 and 4 owned: uncovered is 4 in 75 % of hours -> buy 4
    n2 = recommender(win, np.r_[np.full(24, 4.0), np.full(72, 8.0)][None], np.ones(96))
    assert n2.tolist() == [4]
    # the fleet percentile rule on a forecast 1..8 with r/od = 0.5 and nothing owned: the median level
    fresh = decide("percentile_fleet", inp, usage, inp.periods[72], owned.iloc[:0], settings, HIGHS)[0]
    assert percentile_fleet(fresh, np.arange(1.0, 9.0)[None]).tolist() == [np.floor(np.quantile(np.arange(1, 9), 0.5))]


def test_carried_inventory_equals_the_earlier_purchases(tmp_path):
    rng = np.random.default_rng(7)
    d = (6 + 3 * np.sin(np.arange(168) / 24 * 2 * np.pi) + rng.normal(0, 1, 168) + np.arange(168) / 24).clip(0)
    inp = step_case(tmp_path, d.round(2).tolist())
    settings = Settings(train=48, test=24, step=24, horizon=48, period_hours=1.0, forecaster="latest")
    bought, _ = run_chain(inp, "point", settings, HIGHS)
    assert bought["gpus"].sum() > 0 and bought["window"].nunique() >= 2
    cuts = settings.cutoffs(inp.T)
    for w, c in enumerate(cuts):
        earlier = bought[bought["window"] < w]
        win, _, _ = decide("all_on_demand", inp, inp.demand[0][:, :c], inp.periods[c],
                           earlier[["gpu_type", "region", "gpus", "start", "end"]], settings, HIGHS)
        assert win.inventory[0].tolist() == pytest.approx([earlier["gpus"].sum()] * settings.horizon)


def test_no_look_ahead_future_changes_never_change_earlier_purchases(tmp_path):
    rng = np.random.default_rng(11)
    d = (10 + 4 * np.sin(np.arange(192) / 24 * 2 * np.pi) + rng.normal(0, 1.5, 192)).clip(0).round(2)
    base = step_case(tmp_path, d.tolist())
    settings = Settings(train=48, test=24, step=24, horizon=48, period_hours=1.0, forecaster="weekly", origins=3)
    cut = int(settings.cutoffs(base.T)[3])  # the fourth cut-off
    changed = d.copy()
    changed[cut:] = changed[cut:] * 3 + 5  # a very different future
    other = with_demand(base, changed[None, None, :], base.scenarios, base.probability)
    for strategy in STRATEGIES:
        a, _ = run_chain(base, strategy, settings, HIGHS)
        b, _ = run_chain(other, strategy, settings, HIGHS)
        keep = ["window", "option", "instances"]
        before_a = a[a["window"] <= 3][keep].reset_index(drop=True)
        before_b = b[b["window"] <= 3][keep].reset_index(drop=True)
        pd.testing.assert_frame_equal(before_a, before_b)
        if strategy in ("point", "stochastic"):  # and the future change is seen once it is history
            assert not a[a["window"] > 3][keep].reset_index(drop=True).equals(
                b[b["window"] > 3][keep].reset_index(drop=True))


def test_hindsight_bounds_every_strategy_and_regret_recomputes(tmp_path):
    rng = np.random.default_rng(5)
    h = 24 * 8
    a = (10 + 5 * np.sin(np.arange(h) / 24 * 2 * np.pi) + rng.normal(0, 1, h) + np.arange(h) / 48).clip(0)
    m = write_case(tmp_path, {"a": a.round(2).tolist(), "b": (a * 0.5).round(2).tolist()},
                   [price(hourly=2.0), price(option="reserved_1y", hourly=1.1, term_months=12),
                    price(option="reserved_3y", hourly=0.9, term_months=36),
                    price(option="spot", hourly=0.8, interruptions_per_hour=0.1)],
                   {"a": {"headroom": 0.1}, "b": {"spot": True, "max_spot_share": 0.5}},
                   solver={"backend": "highs", "mip_gap": 1e-6})
    inp = load_inputs(m)
    r = backtest(inp, 72, 24, HIGHS, origins=3)
    s = r.strategies.set_index("strategy")
    assert set(s.index) == set(STRATEGIES)
    for name, row in s.iterrows():
        assert row["total_objective_usd"] >= r.hindsight_objective_usd * (1 - 1e-6) - 1e-6, name
        w = r.windows[r.windows["strategy"] == name]
        assert row["total_cost_usd"] == pytest.approx(w["realised_cost_usd"].sum())  # step = test: windows add up
        assert row["mean_regret_pct"] == pytest.approx(w["regret_pct"].mean())
        recomputed = 100 * (w["realised_objective_usd"] - w["hindsight_objective_usd"]) / w["hindsight_objective_usd"]
        assert w["regret_pct"].to_numpy() == pytest.approx(recomputed.to_numpy())
        assert row["total_regret_pct"] == pytest.approx(
            100 * (row["total_objective_usd"] - r.hindsight_objective_usd) / r.hindsight_objective_usd)
    assert r.windows["hindsight_cost_usd"].groupby(r.windows["strategy"]).sum().to_numpy() == pytest.approx(
        r.hindsight_total_usd)
    # the stochastic strategy planned on more than one scenario once there were past forecasts
    stoch = r.windows[r.windows["strategy"] == "stochastic"]
    assert stoch["scenarios"].max() > 1
    assert s.loc["all_on_demand", "gpus_bought"] == 0
    # the table shows the basis of its regret: total regret % recomputes from its own "cost + shortfall" column
    from planner.backtest.report import COLUMNS, REGRET_BASIS, rows, strategy_table

    cells = {row[0]: dict(zip(COLUMNS, row[1:])) for row in rows(r)}
    hind = float(cells["hindsight"]["cost + shortfall (USD)"].replace(",", ""))
    for name in STRATEGIES:
        obj = float(cells[name]["cost + shortfall (USD)"].replace(",", ""))
        assert float(cells[name]["total regret %"]) == pytest.approx(100 * (obj - hind) / hind, abs=0.006 + 100 / hind)  # (whole USD)
    assert REGRET_BASIS in strategy_table(r)
    # the hindsight row's signed dollars and GPUs bought are one plan's: the full term's where its regret is shown
    full = s["full_term_regret_pct"].notna().any()
    assert (cells["hindsight"]["signed (USD)"] == "-") is (not full)
    assert (cells["hindsight"]["full-term regret %"] == "0") is bool(full)
    hs = r.hindsight["full_term"]["purchases"] if full else r.hindsight["purchases"]
    assert cells["hindsight"]["GPUs bought"] == f"{sum(p['gpus'] for p in hs):,.0f}"


def test_error_scenarios_average_to_the_point_forecast():
    rng = np.random.default_rng(2)
    history = 20 + rng.normal(0, 3, (2, 24 * 10))
    point = forecast.latest(history, 24)
    errors = forecast.residuals(forecast.latest, history, 24, 1.0, origins=5)
    assert errors.shape == (5, 2, 24)
    # the latest origin's residual is the last day minus the day before it
    assert errors[0] == pytest.approx(history[:, -24:] - history[:, -48:-24])
    cube, prob = forecast.error_scenarios(point, errors)
    assert prob.sum() == pytest.approx(1) and len(prob) == 5
    assert (cube * prob[:, None, None]).sum(axis=0) == pytest.approx(point)  # no clipping at these levels
    one, w = forecast.error_scenarios(point, errors[:1])
    assert one.shape == (1, 2, 24) and w.tolist() == [1.0]


def test_builtin_forecasters_by_hand():
    h = np.arange(24 * 8, dtype=float)[None]
    assert forecast.latest(h, 30).tolist() == [list(h[0, -24:]) + list(h[0, -24:-18])]
    assert forecast.weekly(h, 5).tolist() == [list(h[0, -168:-163])]
    assert forecast.weekly(h[:, :48], 3).tolist() == forecast.latest(h[:, :48], 3).tolist()
    # a linear ramp of 1 per hour: daily means rise 24 per day; damped trend adds 12 on day 1, 24 on day 2
    t = forecast.trend(h, 48)
    assert t[0, :24] == pytest.approx(h[0, -24:] + 12)
    assert t[0, 24:] == pytest.approx(h[0, -24:] + 24)
    with pytest.raises(ValueError, match="unknown forecaster"):
        forecast.resolve("crystal-ball")


def test_cli_json_contract_and_a_forecaster_of_your_own(tmp_path):
    rng = np.random.default_rng(3)
    d = (10 + 5 * np.sin(np.arange(120) / 24 * 2 * np.pi) + rng.normal(0, 1, 120)).clip(0).round(2).tolist()
    m = write_case(tmp_path, {"a": d}, [price(hourly=2.0), price(option="reserved_1y", hourly=1.1, term_months=12)],
                   {"a": {}}, solver={"backend": "highs"})
    mine = tmp_path / "mine.py"
    mine.write_text("import numpy as np\n\ndef flat(history, horizon, period_hours):\n"
                    "    return np.repeat(history[:, -24:].mean(axis=1, keepdims=True), horizon, axis=1)\n")
    out = tmp_path / "bt"
    result = CliRunner().invoke(cli, ["backtest", str(m), "--train-hours", "48", "--test-hours", "24", "--json",
                                      "--forecaster", f"{mine}:flat", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) >= {"windows", "strategies", "hindsight_total_usd", "monthly", "settings"}
    assert len(data["windows"]) == 3 * len(STRATEGIES)  # (120 - 48) / 24 cut-offs
    row = data["windows"][0]
    assert set(row) >= {"window", "train_start", "test_start", "test_end", "strategy", "purchases",
                        "realised_cost_usd", "regret_pct", "shortfall_gpu_hours"}
    for p in (p for w in data["windows"] for p in w["purchases"]):
        assert set(p) >= {"gpu_type", "region", "option", "purchase_date", "gpus"}
    assert set(data["strategies"]) == set(STRATEGIES)
    for s in data["strategies"].values():
        assert set(s) >= {"mean_regret_pct", "total_cost_usd", "shortfall_gpu_hours"}
        assert s["total_cost_usd"] >= data["hindsight_total_usd"] * (1 - 1e-4)
    assert data["settings"]["forecaster"].endswith("mine.py:flat")
    assert json.loads((out / "backtest.json").read_text()) == data
    assert (out / "backtest.csv").exists() and (out / "backtest_monthly.csv").exists()


@pytest.mark.parametrize("args, message", [
    (["--forecaster", "crystal-ball"], "unknown forecaster"),
    (["--forecaster", "nowhere.py:f"], "not found"),
    (["--strategies", "point,guess"], "unknown strategy"),
    (["--train-hours", "200"], "history too short"),
])
def test_cli_bad_backtest_options_exit_2(tmp_path, args, message):
    m = write_case(tmp_path, {"a": [3.0] * 96}, [price(hourly=2.0), price(option="reserved_1y", hourly=1.1)],
                   {"a": {}}, solver={"backend": "highs"})
    out = tmp_path / "bt"
    result = CliRunner().invoke(cli, ["backtest", str(m), "--train-hours", "48", "--test-hours", "24",
                                      "--out", str(out)] + args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_cli_strategy_names_match_the_module():
    from planner.cli.plan import STRATEGY_NAMES

    assert STRATEGY_NAMES == STRATEGIES + OPTIONAL


@pytest.mark.skipif(not (SHARED / "data" / "real" / "demand_alibaba_dlrm2025_hourly.csv").exists(),
                    reason="real traces not available (../shared/data/real)")
@pytest.mark.slow
def test_backtest_on_a_real_trace_beats_all_on_demand_and_respects_the_bound():
    import importlib.util
    import tempfile
    from pathlib import Path

    from conftest import ROOT

    spec = importlib.util.spec_from_file_location("backtest_real", ROOT / "benchmarks" / "backtest_real.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    with tempfile.TemporaryDirectory() as tmp:
        inp = load_inputs(bench.write_model("dlrm", Path(tmp)))
    r = backtest(inp, 168, 24, HIGHS, step_periods=96, strategies=("point", "recommender", "all_on_demand"))
    s = r.strategies.set_index("strategy")
    assert (s["total_objective_usd"] >= r.hindsight_objective_usd * (1 - 1e-6)).all()
    assert s.loc["point", "total_regret_pct"] < 3.0
    assert s.loc["all_on_demand", "total_cost_usd"] > 1.5 * s.loc["point", "total_cost_usd"]


# ---------------------------------------------------------------- the review's findings, each a regression test

def test_baselines_respect_the_reserved_cap_and_count_what_is_on_order(tmp_path):
    # reserved capped at 5 GPUs: no strategy may buy more (the realised plan would be infeasible)
    capped = load_inputs(write_case(tmp_path / "cap", {"c": [10.0] * 96},
                                    [price(hourly=1.0), price(option="reserved_1y", hourly=0.6, term_months=12,
                                                              max_gpus=5)], {"c": {}}, solver={"backend": "highs"}))
    r = backtest(capped, 24, 24, HIGHS, horizon_periods=24, forecaster="latest")
    s = r.strategies.set_index("strategy")
    for name in ("point", "percentile_fleet", "recommender"):
        assert s.loc[name, "gpus_bought"] == 5, name
        assert s.loc[name, "total_cost_usd"] >= r.hindsight_total_usd - 1e-6 > 0
    # a 48-hour lead time: the baselines buy 10 once, not again while the first purchase is on order
    lead = load_inputs(write_case(tmp_path / "lead", {"c": [10.0] * 96},
                                  [price(hourly=1.0), price(option="reserved_1y", hourly=0.5, term_months=12,
                                                            lead_time_months=48 / 730)], {"c": {}},
                                  solver={"backend": "highs"}))
    r = backtest(lead, 24, 24, HIGHS, horizon_periods=24, forecaster="latest",
                 strategies=("percentile_fleet", "recommender"))
    assert r.strategies.set_index("strategy")["gpus_bought"].tolist() == [10, 10]


def test_a_plan_the_solver_did_not_find_stops_the_backtest():
    from types import SimpleNamespace

    from planner.backtest.run import _checked
    from planner.core.errors import SolverError
    from planner.solve.monolithic import Status

    failed = SimpleNamespace(status=Status.infeasible, solve=SimpleNamespace(message="no"))
    with pytest.raises(SolverError, match="found no plan"):
        _checked(failed, "point's purchases")


def test_regret_is_undefined_when_hindsight_costs_nothing(tmp_path):
    inp = step_case(tmp_path, [10.0] * 24 + [0.0] * 24)
    r = backtest(inp, 24, 24, HIGHS, horizon_periods=24, forecaster="latest", strategies=("point",))
    w = r.windows.iloc[0]
    assert w["regret_usd"] > 0 and w["regret_pct"] is None
    assert r.strategies["total_regret_pct"].iloc[0] is None
    assert any("no regret %" in n for n in r.notes)


@pytest.mark.parametrize("case, args, message", [
    ("raise", ["--forecaster", "{fc}:boom"], "failed at the first cut-off"),
    ("shape", ["--forecaster", "{fc}:shape"], "expected (1, 48)"),  # the horizon defaults to --train-hours
    ("nan", ["--forecaster", "{fc}:nan"], "NaN"),
    ("horizon", ["--horizon-hours", "1e9"], "--horizon-hours"),
    ("gap", [], "contiguous periods"),
    ("outfile", [], "cannot write"),
])
def test_backtest_mistakes_exit_2_before_any_solve(tmp_path, case, args, message):
    fc = tmp_path / "fc.py"
    fc.write_text("import numpy as np\n"
                  "def boom(h, n, p):\n    raise RuntimeError('no model today')\n"
                  "def shape(h, n, p):\n    return np.zeros((h.shape[0], n + 1))\n"
                  "def nan(h, n, p):\n    return np.full((h.shape[0], n), np.nan)\n")
    classes = {"a": {"demand_unit": "requests_per_s", "latency_slo_ms": 3000,
                     "replicas": {"A": {"service_ms": 500, "gpus_per_replica": 2}}}} if case == "slo" else {"a": {}}
    m = write_case(tmp_path, {"a": [3.0] * 96}, [price(hourly=2.0), price(option="reserved_1y", hourly=1.1)],
                   classes, solver={"backend": "highs"})
    if case == "gap":
        d = pd.read_csv(tmp_path / "demand.csv").drop(index=range(50, 60)).assign(hours=1.0)
        d.to_csv(tmp_path / "demand.csv", index=False)
    out = tmp_path / "bt"
    if case == "outfile":
        out = tmp_path / "afile"
        out.write_text("x")
        out = out / "sub"
    result = CliRunner().invoke(cli, ["backtest", str(m), "--train-hours", "48", "--test-hours", "24",
                                      "--out", str(out)] + [a.format(fc=fc) for a in args])
    assert result.exit_code == (1 if case == "outfile" else 2), result.output  # as `planner plan` (exit 1)
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "bt").exists()


def test_duplicate_strategies_run_once(tmp_path):
    m = write_case(tmp_path, {"a": [3.0] * 72}, [price(hourly=2.0), price(option="reserved_1y", hourly=1.1)],
                   {"a": {}}, solver={"backend": "highs"})
    result = CliRunner().invoke(cli, ["backtest", str(m), "--train-hours", "24", "--test-hours", "24",
                                      "--strategies", "point,point", "--json", "--out", str(tmp_path / "bt")])
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.output)["strategies"]) == ["point"]


def test_no_look_ahead_when_the_history_file_itself_differs_after_the_cut_off(tmp_path):
    rng = np.random.default_rng(4)
    a = (8 + 3 * np.sin(np.arange(168) / 24 * 2 * np.pi) + rng.normal(0, 1, 168)).clip(0).round(2)
    b = a.copy()
    b[96:] = b[96:] * 2.5 + 3  # another future after the fourth cut-off (24 + 3 x 24 = 96)
    prices = [price(hourly=2.0), price(option="reserved_1y", hourly=1.1, term_months=12),
              price(option="spot", hourly=0.7, interruptions_per_hour=0.1)]
    classes = {"c": {"spot": True, "max_spot_share": 0.5}, "d": {"headroom": 0.1}}
    runs = []
    for name, d in (("a", a), ("b", b)):
        inp = load_inputs(write_case(tmp_path / name, {"c": d.tolist(), "d": (d / 2).round(2).tolist()}, prices,
                                     classes, solver={"backend": "highs"}))
        runs.append(backtest(inp, 24, 24, HIGHS, horizon_periods=24, origins=3).purchases)
    keep = ["strategy", "window", "option", "instances"]
    early = [r[r["window"] <= 3][keep].reset_index(drop=True) for r in runs]
    pd.testing.assert_frame_equal(early[0], early[1])
    assert not runs[0][keep].reset_index(drop=True).equals(runs[1][keep].reset_index(drop=True))
