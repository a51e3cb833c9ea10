"""planner forecast --tree: scenario trees that branch only at purchase dates (docs/forecasting.md,
"Scenario trees: purchases that may wait")."""

from __future__ import annotations

import json
import math
import tomllib
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from conftest import price, write_case
from planner.cli import cli
from planner.inputs.config import load_model
from planner.core.errors import InputError
from planner.forecasting import check_tree_dates, forecast_demand, forecast_periods
from planner.forecasting import tree as tree_mod

CLASSES = ["c0", "c1"]


def history(seed=0, weeks=6, start="2026-01-05T00:00"):
    """Seeded hourly history, wide form: two classes at 60 and 90 GPUs, a daily cycle and white noise (the
    forecast starts 2026-02-16, so a 7-month horizon holds the quarter starts 2026-04-01 and 2026-07-01)."""
    rng = np.random.default_rng(seed)
    t = np.arange(24 * 7 * weeks)
    cols = {"period": pd.date_range(start, periods=t.size, freq="h").strftime("%Y-%m-%dT%H:%M")}
    for k, level in enumerate((60.0, 90.0)):
        cols[CLASSES[k]] = level + 0.1 * level * np.sin(2 * np.pi * t / 24) + rng.normal(0, 0.04 * level, t.size)
    return pd.DataFrame(cols)


def to_long(df):
    return df.melt(id_vars="period", var_name="workload_class", value_name="gpus")


def cube(result):
    """(leaf names, branch indices (L, D) 1-based, demand (L, K, P)) as forecast.csv holds it."""
    d = result.demand
    names = list(dict.fromkeys(d["scenario"]))
    periods = list(dict.fromkeys(d["period"]))
    values = (d.set_index(["scenario", "workload_class", "period"])["gpus"]
              .reindex(pd.MultiIndex.from_product([names, CLASSES, periods])).to_numpy())
    index = np.array([[int(x) for x in n[1:].split("-")] for n in names])
    return names, index, values.reshape(len(names), len(CLASSES), len(periods))


def model(tmp_path, every="quarter", until=None, scenarios=""):
    """A model over c0, c1 (one pool: on-demand and a 1-year reservation) with [commitments]."""
    write_case(tmp_path, {c: [1.0] * 24 for c in CLASSES},
               [price(hourly=2.0), price(option="reserved_1y", hourly=1.1)], {c: {} for c in CLASSES})
    lines = ['name = "tree"', 'demand = "demand.csv"', 'prices = "prices.csv"', "[commitments]",
             f'purchase_every = "{every}"'] + ([f'purchase_until = "{until}"'] if until else [])
    lines += [f"[classes.{c}]" for c in CLASSES]
    path = tmp_path / f"tree-{every}.toml"
    path.write_text("\n".join(lines) + "\n" + scenarios)
    return path


@pytest.mark.parametrize("by,branches,months,dates", [("quarter", 3, 7, ["2026-04-01T00:00", "2026-07-01T00:00"]),
                                                      ("month", 2, 4, ["2026-03-01T00:00", "2026-04-01T00:00",
                                                                       "2026-05-01T00:00", "2026-06-01T00:00"])])
def test_leaves_coincide_before_each_branch_date_and_siblings_differ_after(by, branches, months, dates):
    result = forecast_demand(history(), months, period_hours=24, method="weekly", tree=by, branches=branches, jobs=1)
    names, index, values = cube(result)
    P = values.shape[-1]
    periods = list(dict.fromkeys(result.demand["period"]))
    pos = [periods.index(d) for d in dates]
    assert result.report["tree"]["dates"] == dates and len(names) == branches ** len(dates)
    assert names[0] == "t" + "-".join(["1"] * len(dates)) and names[-1] == "t" + "-".join([str(branches)] * len(dates))
    point = result.quantiles["p50"].to_numpy().reshape(P, len(CLASSES)).T
    assert (values[:, :, :pos[0]] == point[None, :, :pos[0]]).all()  # the root: every leaf is the point path
    for j, b in enumerate(pos):
        end = pos[j + 1] if j + 1 < len(pos) else P
        _, node = np.unique(index[:, :j], axis=0, return_inverse=True)  # the node each leaf passes before date j
        assert node.max() + 1 == branches ** j
        for n in range(node.max() + 1):
            same = values[node == n]
            assert (same[:, :, :b] == same[:1, :, :b]).all(), (dates[j], n)  # identical before the branch date
            children = index[node == n, j]
            for a in range(len(same)):
                for c in range(len(same)):
                    if children[a] != children[c]:  # siblings: different in every period to the next date, per class
                        assert (same[a, :, b:end] != same[c, :, b:end]).all(), (dates[j], a, c)


@pytest.mark.parametrize("branches", [2, 3])
def test_probabilities_add_to_one_and_the_weighted_leaves_are_the_point_path(branches):
    result = forecast_demand(history(seed=1), 7, period_hours=24, method="weekly", tree="quarter",
                             branches=branches, jobs=1)
    tree = result.tree
    p = tree.probability
    assert abs(math.fsum(p) - 1) < 1e-12 and abs(sum(result.scenarios.values()) - 1) < 1e-12
    assert tree.clipped == 0 and tree.leaves.min() > 0  # no clipping on this history
    mean = np.tensordot(p, tree.leaves, axes=1)
    assert np.abs(mean - tree.point).max() < 1e-9
    x, w = tree_mod.gauss_hermite(branches)
    assert list(result.scenarios.values())[0] == pytest.approx(w[0] ** 2, rel=1e-14)
    if branches == 2:
        assert list(result.scenarios.values()) == [0.25] * 4
    else:
        assert x == pytest.approx([-math.sqrt(3), 0, math.sqrt(3)]) and w == pytest.approx([1 / 6, 2 / 3, 1 / 6])


@pytest.mark.parametrize("branches", [2, 3, 4, 5])
def test_every_tree_up_to_243_leaves_keeps_the_mean_and_the_sigma(branches):
    dates = max(d for d in range(1, 9) if branches ** d <= tree_mod.MAX_LEAVES)
    periods = pd.date_range("2026-01-15", periods=dates * 31 + 20, freq="D")
    pos = tree_mod.branch_positions(periods, "month")[:dates]
    periods = periods[:pos[-1] + 10]
    rng = np.random.default_rng(branches)
    point = 1000 + rng.uniform(0, 100, (3, len(periods)))
    sigma = rng.uniform(1, 20, (3, len(periods)))
    tree = tree_mod.build_tree(point, sigma, periods, "month", branches)
    assert len(tree.names) == branches ** dates and abs(sum(tree.scenarios.values()) - 1) < 1e-12
    mean = np.tensordot(tree.probability, tree.leaves, axes=1)
    sd = np.sqrt(np.tensordot(tree.probability, (tree.leaves - mean) ** 2, axes=1))
    assert np.abs(mean - point).max() < 1e-9
    after = slice(pos[0], None)
    assert np.abs(sd[:, after] - sigma[:, after]).max() < 1e-9 and sd[:, :pos[0]].max() < 1e-9


def test_the_leaves_spread_at_the_last_period_matches_the_80_percent_interval():
    result = forecast_demand(history(seed=2), 7, period_hours=24, method="trend", tree="quarter", branches=3, jobs=1)
    names, _, values = cube(result)
    p = np.array([result.scenarios[n] for n in names])
    last = values[:, :, -1]
    mean = p @ last
    sd = np.sqrt(p @ (last - mean) ** 2)
    q = result.quantiles[result.quantiles["period"] == result.quantiles["period"].iloc[-1]]
    implied = (q["p90"].to_numpy() - q["p10"].to_numpy()) / (2 * NormalDist().inv_cdf(0.9))
    assert implied.min() > 1  # a real interval, not a degenerate one
    assert np.abs(sd / implied - 1).max() < 0.10, (sd, implied)


def test_scenarios_round_trip_through_scenarios_toml_and_the_planner_reads_the_demand(tmp_path):
    from planner.pipeline.run import load_inputs

    m = model(tmp_path)
    to_long(history(seed=3)).to_csv(tmp_path / "h.csv", index=False)
    out = tmp_path / "fc"
    r = CliRunner().invoke(cli, ["forecast", str(m), "--history", str(tmp_path / "h.csv"), "--horizon-months", "7",
                                 "--period-hours", "24", "--method", "weekly", "--tree", "quarter", "--branches", "3",
                                 "--out", str(out), "--jobs", "1"])
    assert r.exit_code == 0, r.output
    assert "tree: by quarter, 3 branches at 2026-04-01T00:00, 2026-07-01T00:00: 9 leaves" in r.output
    table = tomllib.loads((out / "scenarios.toml").read_text())["scenarios"]
    doc = json.loads((out / "forecast.json").read_text())
    assert list(table) == [f"t{a}-{b}" for a in (1, 2, 3) for b in (1, 2, 3)]
    assert table == doc["scenarios"] and abs(sum(table.values()) - 1) < 1e-12
    assert table["t2-2"] == pytest.approx(4 / 9, rel=1e-14) and table["t1-3"] == pytest.approx(1 / 36, rel=1e-14)
    assert {k: doc["tree"][k] for k in ("by", "branches", "dates", "leaves")} == {
        "by": "quarter", "branches": 3, "dates": ["2026-04-01T00:00", "2026-07-01T00:00"], "leaves": 9}
    assert "Gauss-Hermite" in doc["tree"]["construction"]
    csv = pd.read_csv(out / "forecast.csv")
    assert list(csv.columns) == ["period", "workload_class", "gpus", "scenario", "hours"]
    # the planner's own reader and validator: a model pointing at forecast.csv with the file's [scenarios]
    planned = model(tmp_path, scenarios=(out / "scenarios.toml").read_text())
    planned.write_text(planned.read_text().replace('demand = "demand.csv"', 'demand = "fc/forecast.csv"'))
    inp = load_inputs(planned)
    assert inp.scenarios == list(table) and inp.probability == pytest.approx(list(table.values()), rel=0, abs=0)
    assert inp.demand.shape == (9, 2, doc["horizon"]["periods"])
    back = csv.set_index(["scenario", "workload_class", "period"])["gpus"]
    assert inp.demand[4, 1, -1] == back[("t2-2", "c1", csv["period"].iloc[-1])]


def _run(tmp_path, m, *extra, months="7"):
    to_long(history()).to_csv(tmp_path / "h.csv", index=False)
    out = tmp_path / "fc"
    r = CliRunner().invoke(cli, ["forecast", str(m), "--history", str(tmp_path / "h.csv"), "--horizon-months", months,
                                 "--period-hours", "24", "--method", "weekly", "--out", str(out), "--jobs", "1",
                                 *extra])
    assert r.exit_code == 2, r.output
    assert not out.exists()  # nothing written to --out
    return " ".join(r.output.split())


def test_a_monthly_tree_on_quarterly_purchases_exits_2_before_any_fit(tmp_path, monkeypatch):
    from planner.forecasting import engine

    monkeypatch.setattr(engine, "fit_classes", lambda *a, **k: pytest.fail("fitted before the dates were checked"))
    m = model(tmp_path, every="quarter")
    text = _run(tmp_path, m, "--tree", "month")
    assert str(m) in text and "'commitments.purchase_every' (got 'quarter')" in text
    assert "--tree month branches on 2026-03-01T00:00" in text  # the first branch date that is not a purchase date
    assert 'set purchase_every = "month" under [commitments]' in text and "use --tree quarter" in text


def test_a_tree_on_a_model_that_buys_once_exits_2(tmp_path):
    m = model(tmp_path, every="once")
    text = _run(tmp_path, m, "--tree", "quarter")
    assert str(m) in text and "'commitments.purchase_every' (got 'once')" in text
    assert "2026-04-01T00:00" in text and 'set purchase_every = "quarter" (or "month")' in text


def test_a_branch_date_on_or_after_purchase_until_exits_2(tmp_path):
    m = model(tmp_path, every="month", until="2026-06-01")
    text = _run(tmp_path, m, "--tree", "quarter")
    assert str(m) in text and "2026-07-01T00:00" in text and "'commitments.purchase_until'" in text
    assert "(got '2026-06-01')" in text and "shorter --horizon-months" in text
    # the same dates are fine without purchase_until, through the Python API as well
    periods = forecast_periods(history(), 7, period_hours=24)
    check_tree_dates(load_model(model(tmp_path / "ok", every="month")), periods, "quarter")
    with pytest.raises(InputError, match="commitments.purchase_until"):
        check_tree_dates(load_model(m), periods, "quarter")


def test_too_many_leaves_exits_2_with_the_count_and_smaller_trees(tmp_path):
    m = model(tmp_path, every="month")
    text = _run(tmp_path, m, "--tree", "month", "--branches", "3")
    assert "--branches: --tree month --branches 3: 7 branch dates" in text and "3 ** 7 = 2187 leaves" in text
    assert "at most 243 leaves" in text
    assert "--branches 2 (128 leaves)" in text and "--tree quarter (3 ** 2 = 9 leaves)" in text
    assert "shorter --horizon-months, ending on or before 2026-08-01 (5 month dates, 243 leaves)" in text


@pytest.mark.parametrize("extra,names", [(("--quantiles",), "--quantiles: not with --tree"),
                                         (("--scenarios", "3"), "--scenarios: not with --tree"),
                                         (("--quantiles", "--scenarios", "5"), "2 problems")])
def test_quantiles_or_scenarios_with_a_tree_exit_2(tmp_path, extra, names):
    text = _run(tmp_path, model(tmp_path), "--tree", "quarter", *extra)
    assert names in text


def test_branches_without_a_tree_and_a_tree_that_never_branches_exit_2(tmp_path):
    assert "--branches: needs --tree" in _run(tmp_path, model(tmp_path), "--branches", "3")
    text = _run(tmp_path, model(tmp_path), "--tree", "quarter", months="1")
    assert "reach no calendar quarter start after the first" in text and "longer --horizon-months" in text
    with pytest.raises(InputError, match="--scenarios"):
        forecast_demand(history(), 7, scenarios=3, tree="quarter", method="weekly")


def test_without_a_tree_nothing_changes():
    plain = forecast_demand(history(), 2, period_hours=24, method="weekly", jobs=1)
    three = forecast_demand(history(), 2, period_hours=24, method="weekly", scenarios=3, jobs=1)
    assert plain.tree is None and "tree" not in plain.report and plain.scenarios == {"p10": 0.3, "p50": 0.4, "p90": 0.3}
    pd.testing.assert_frame_equal(plain.demand, three.demand)


def test_a_class_without_uncertainty_has_identical_leaves_and_says_so():
    frame = history()
    frame["c1"] = 7.0  # constant: the forecast is 7 GPUs with an interval of zero width
    result = forecast_demand(frame, 7, period_hours=24, method="weekly", tree="quarter", jobs=1)
    _, _, values = cube(result)
    assert (values[:, 1, :] == 7.0).all() and (values[:, 0, -1] != values[0, 0, -1]).any()
    assert any("'c1' has an 80 % interval of zero width" in n for n in result.notes)
