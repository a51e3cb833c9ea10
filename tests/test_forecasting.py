"""planner forecast: statsforecast methods per class, quantile-path scenarios, held-back error, bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from conftest import price, write_case
from planner.forecasting import point as fc_mod
from planner.cli import cli
from planner.cli import forecast_cmd  # noqa: F401  (registers `forecast` until planner/cli/__init__ imports it)
from planner.core.errors import InputError
from planner.forecasting.models import library_available

needs_statsforecast = pytest.mark.skipif(not library_available(),
                                         reason="statsforecast not installed (pip install 'planner[forecast]')")
from planner.forecasting import forecast_demand


def synth(K=3, T=24 * 7 * 8, seed=0, growth=0.0, start="2026-01-05T00:00"):
    """Seeded hourly history, wide form: daily and weekly seasonality, white noise, optional linear growth."""
    rng = np.random.default_rng(seed)
    t = np.arange(T)
    cols = {}
    for k in range(K):
        base = 50.0 + 10 * k
        y = (base * (1 + growth * t / T) + 0.15 * base * np.sin(2 * np.pi * t / 24)
             + 0.08 * base * np.sin(2 * np.pi * t / 168) + rng.normal(0, 0.05 * base, T))
        cols[f"c{k}"] = np.clip(y, 0, None)
    df = pd.DataFrame(cols)
    df.insert(0, "period", pd.date_range(start, periods=T, freq="h").strftime("%Y-%m-%dT%H:%M"))
    return df


def to_long(df):
    return df.melt(id_vars="period", var_name="workload_class", value_name="gpus")


def model_for(tmp_path, classes, demand="demand.csv"):
    """A tiny model (one pool, on-demand and a 1-year reservation) over ``classes``."""
    m = write_case(tmp_path, {c: [1.0] * 24 for c in classes},
                   [price(hourly=2.0), price(option="reserved_1y", hourly=1.1)], {c: {} for c in classes})
    return m


@needs_statsforecast
def test_interval_coverage_is_near_nominal():
    result = forecast_demand(synth(K=3, seed=1), 1, method="mstl", jobs=1)
    for cls, scores in result.report["holdout"].items():
        assert abs(scores["coverage_80"] - 0.8) <= 0.10, (cls, scores)
    assert result.scenarios == {"p10": 0.3, "p50": 0.4, "p90": 0.3}
    assert set(result.report["method"].values()) == {"mstl"}


@needs_statsforecast
def test_trend_aware_method_beats_weekly_replay_on_growth():
    history = synth(K=2, seed=2, growth=0.5)
    mstl = forecast_demand(history, 1, method="mstl", jobs=1).report["holdout"]
    weekly = forecast_demand(history, 1, method="weekly", jobs=1).report["holdout"]
    for cls in mstl:
        assert mstl[cls]["mape"] < weekly[cls]["mape"], (cls, mstl[cls], weekly[cls])


def test_scenarios_are_quantile_paths_in_order_and_aggregated(tmp_path):
    result = forecast_demand(synth(K=1, seed=3), 1, period_hours=24, scenarios=3, jobs=1)
    d = result.demand
    assert list(d.columns) == ["period", "workload_class", "gpus", "scenario", "hours"]
    piv = d.pivot(index="period", columns="scenario", values="gpus")
    assert (piv["p10"] <= piv["p50"]).all() and (piv["p50"] <= piv["p90"]).all()
    assert (d["gpus"] >= 0).all() and d["hours"].max() == 24
    assert d["hours"].sum() / 3 == pytest.approx(31 * 24)  # 2026-03-02 + one month, three scenarios
    five = forecast_demand(synth(K=1, seed=3), 1, scenarios=5, method="weekly", jobs=1)
    assert five.scenarios == pytest.approx({"p10": 0.2, "p30": 0.2, "p50": 0.2, "p70": 0.2, "p90": 0.2})


def test_too_short_history_for_seasonality_asked_exits_2(tmp_path):
    m = model_for(tmp_path, ["c0", "c1"])
    to_long(synth(K=2, T=200)).to_csv(tmp_path / "h.csv", index=False)
    r = CliRunner().invoke(cli, ["forecast", str(m), "--history", str(tmp_path / "h.csv"), "--horizon-months", "1",
                                 "--seasonality", "24,168", "--out", str(tmp_path / "fc")])
    assert r.exit_code == 2, r.output
    assert "'c0'" in r.output and "'c1'" in r.output and "336" in r.output and "168 h" in r.output
    assert not (tmp_path / "fc").exists()
    # not asked: the weekly seasonality is dropped, and said so
    ok = forecast_demand(synth(K=1, T=200), 1, jobs=1)
    assert ok.report["seasonality_hours"] == [24.0]
    assert any("168 h seasonality was dropped" in n for n in ok.report["notes"])


def test_nan_and_non_numeric_history_exit_2_naming_file_row_column(tmp_path):
    m = model_for(tmp_path, ["c0"])
    long = to_long(synth(K=1, T=400)).astype({"gpus": object})
    long.loc[5, "gpus"] = "nan"
    long.loc[9, "gpus"] = ""
    long.loc[11, "gpus"] = "lots"
    long.to_csv(tmp_path / "h.csv", index=False)
    r = CliRunner().invoke(cli, ["forecast", str(m), "--history", str(tmp_path / "h.csv"), "--horizon-months", "1",
                                 "--out", str(tmp_path / "fc")])
    assert r.exit_code == 2, r.output
    assert "h.csv, row 7, column 'gpus': not a number" in r.output
    assert "row 11, column 'gpus': blank cell" in r.output
    assert "row 13, column 'gpus': not a number (got 'lots')" in r.output
    assert not (tmp_path / "fc").exists()
    frame = synth(K=1, T=400)
    frame.loc[3, "c0"] = np.nan
    with pytest.raises(InputError, match=r"<history DataFrame>, row 5, column 'c0': blank cell"):
        forecast_demand(frame, 1)


def test_missing_column_exits_2(tmp_path):
    m = model_for(tmp_path, ["c0"])
    to_long(synth(K=1, T=400)).drop(columns="gpus").to_csv(tmp_path / "h.csv", index=False)
    r = CliRunner().invoke(cli, ["forecast", str(m), "--history", str(tmp_path / "h.csv"), "--horizon-months", "1",
                                 "--out", str(tmp_path / "fc")])
    assert r.exit_code == 2 and "row 1" in r.output and "missing column 'gpus'" in r.output, r.output


@needs_statsforecast
def test_round_trip_the_forecast_plans(tmp_path):
    m = model_for(tmp_path, ["c0"])
    to_long(synth(K=1, T=24 * 21, seed=4)).to_csv(tmp_path / "h.csv", index=False)
    out = tmp_path / "fc"
    r = CliRunner().invoke(cli, ["forecast", str(m), "--history", str(tmp_path / "h.csv"), "--horizon-months", "1",
                                 "--period-hours", "24", "--out", str(out), "--jobs", "1"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["forecast.csv", "forecast.json", "scenarios.toml"]
    doc = json.loads((out / "forecast.json").read_text())
    assert set(doc["holdout"]["c0"]) == {"mape", "pinball", "coverage_80"} and doc["method"] == {"c0": "mstl"}
    assert sum(doc["scenarios"].values()) == pytest.approx(1.0)
    model = m.read_text().replace('demand = "demand.csv"', f'demand = "{out / "forecast.csv"}"')
    model = model.replace("[solver]", (out / "scenarios.toml").read_text() + "[solver]")
    (tmp_path / "planned.toml").write_text(model)
    p = CliRunner().invoke(cli, ["plan", str(tmp_path / "planned.toml"), "--out", str(tmp_path / "plan")])
    assert p.exit_code == 0, p.output
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    assert {s["name"]: s["probability"] for s in plan["scenarios"]} == pytest.approx(doc["scenarios"])


def test_absurd_forecast_exits_2_and_writes_nothing(tmp_path, monkeypatch):
    from planner.forecasting import models

    m = model_for(tmp_path, ["c0"])
    to_long(synth(K=1, T=400)).to_csv(tmp_path / "h.csv", index=False)
    out = tmp_path / "fc"
    args = ["forecast", str(m), "--history", str(tmp_path / "h.csv"), "--horizon-months", "1", "--out", str(out),
            "--jobs", "1", "--method", "weekly"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    monkeypatch.setattr(models, "quantile_paths", lambda *a, **k: np.full((len(a[4]), a[2]), 1e7))
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2 and "the forecaster weekly returned" in r.output and "'c0'" in r.output, r.output
    monkeypatch.setattr(models, "quantile_paths", lambda *a, **k: np.full((len(a[4]), a[2]), np.nan))
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2 and "NaN" in r.output and "'c0'" in r.output, r.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the previous three, untouched


@needs_statsforecast
def test_backtest_forecaster_names_resolve_and_are_contained():
    history = synth(K=2, T=400, seed=5).drop(columns="period").to_numpy().T
    for name in ("mstl", "autoets", "autoarima", "auto"):
        assert name in fc_mod.FORECASTERS
        out = fc_mod.run(fc_mod.resolve(name), history, 48, 1.0, ["c0", "c1"])
        assert out.shape == (2, 48) and np.isfinite(out).all() and (out >= 0).all()
        assert abs(out.mean() / history[:, -168:].mean() - 1) < 0.2


@pytest.mark.skipif(library_available(), reason="statsforecast is installed")
def test_a_library_method_without_statsforecast_exits_2_with_the_install_hint(tmp_path):
    m = model_for(tmp_path, ["c0"])
    to_long(synth(K=1)).to_csv(tmp_path / "h.csv", index=False)
    r = CliRunner().invoke(cli, ["forecast", str(m), "--history", str(tmp_path / "h.csv"), "--horizon-months", "1",
                                 "--method", "mstl", "--out", str(tmp_path / "fc")])
    assert r.exit_code == 2 and "planner[forecast]" in r.output and "weekly, latest, trend" in r.output
    assert not (tmp_path / "fc").exists()
    default = forecast_demand(synth(K=1), 1, jobs=1)  # no method asked: the hand-written trend, and it says so
    assert default.report["method"] == {"c0": "trend"} and "statsforecast is not installed" in default.notes[0]
