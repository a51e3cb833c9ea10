"""`planner compare`: scenarios side by side, equal to separate plans; the price-sheet diff."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from planner.pipeline.whole_term import plan_over_term
from click.testing import CliRunner
from openpyxl import load_workbook

from planner import load_inputs, make_plan
from planner.cli import cli
from planner.core.errors import ConfigError
from planner.whatif import diff_prices
from planner.whatif.compare import resolve_variants
from planner.whatif.pricediff import diff_price_files, read_price_sheet
from conftest import price, write_case

SPOT_CLASS = {"c": {"spot": True, "max_spot_share": 0.5, "job_gpus": 1, "checkpoint_minutes": 2,
                    "restart_minutes": 5, "headroom": 0.1}}
DEMAND = {"c": [5, 6, 3, 8, 7, 2]}


def _sheet(folder: Path, rows: list[dict]) -> Path:
    cols = ["gpu_type", "region", "option", "hourly_usd", "upfront_usd", "term_months", "max_gpus",
            "interruptions_per_hour", "gpus_per_instance"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "prices.csv"
    pd.DataFrame(rows).reindex(columns=cols).to_csv(path, index=False)
    return path


def _base_prices():
    return [price(hourly=2.0), price(option="spot", hourly=0.8, interruptions_per_hour=0.1),
            price(option="reserved_1y", hourly=1.0, term_months=12)]


@pytest.fixture
def case(tmp_path):
    model = write_case(tmp_path / "m", DEMAND, _base_prices(), SPOT_CLASS)
    offer = _base_prices()
    offer[1] = price(option="spot", hourly=1.5, interruptions_per_hour=0.1)  # spot 87.5 % dearer
    offer.append(price(option="reserved_3y", hourly=0.5, upfront_usd=100, term_months=36))  # a new offer
    return model, tmp_path / "m" / "prices.csv", _sheet(tmp_path / "offer", offer)


def _run(*args):
    return CliRunner().invoke(cli, ["compare", *map(str, args)])


@pytest.mark.slow
def test_compare_totals_equal_separate_plan_runs(case, tmp_path):
    model, now, offer = case
    out = tmp_path / "out"
    result = _run(model, "--prices", now, "--prices", offer, "--label", "today", "--label", "offer",
                  "--out", out, "--jobs", "2")
    assert result.exit_code == 0, result.output
    data = json.loads((out / "comparison.json").read_text())
    assert [s["label"] for s in data["scenarios"]] == ["today", "offer"]
    for s, prices in zip(data["scenarios"], (now, offer)):
        alone = plan_over_term(load_inputs(model, prices=prices), make_plan)  # as `planner plan` plans
        assert s["status"] == "optimal"
        for k in ("reserved", "on_demand", "spot", "total"):
            assert s["cost_usd"][k] == pytest.approx(alone.cost[k], rel=1e-9, abs=1e-9)
        bought = {(r["option"]): r["gpus"] for r in s["reserved_purchases"]}
        assert bought == {r.option: r.gpus for r in alone.purchases.itertuples()}
        # every key of plan.json is there, and the scenario's own plan.json says the same
        own = json.loads((out / s["plan_files"]["json"]).read_text())
        assert set(own) <= set(s)
        assert own["cost_usd"] == s["cost_usd"]
    # the offer changes the decision: the comparison must show it
    assert data["scenarios"][0]["cost_usd"]["total"] != pytest.approx(data["scenarios"][1]["cost_usd"]["total"])
    moved = {(c["option"], c["quantity"]) for c in data["changes"]}
    assert ("reserved_3y", "reserved GPUs bought") in moved


@pytest.mark.slow
def test_compare_workbook_side_by_side_delta_chart_and_links(case, tmp_path):
    model, now, offer = case
    out = tmp_path / "out"
    result = _run(model, "--prices", now, "--prices", offer, "--label", "today", "--label", "offer",
                  "--out", out, "--jobs", "1")
    assert result.exit_code == 0, result.output
    data = json.loads((out / "comparison.json").read_text())
    wb = load_workbook(out / "comparison.xlsx")
    assert wb.sheetnames == ["Summary", "Delta", "Changes", "Price changes", "Plans"]
    summary = {r[1]: r[2:] for r in wb["Summary"].iter_rows(min_row=2, values_only=True) if r[1]}
    totals = [s["cost_usd"]["total"] for s in data["scenarios"]]
    assert summary["Total expected cost (USD)"] == pytest.approx(tuple(totals))
    assert summary["A/r1/reserved_3y"] == (None, data["metrics"][1]["reserved_gpus"]["A/r1/reserved_3y"])
    assert len(wb["Summary"]._charts) == 1
    delta = {r[1]: r[2:] for r in wb["Delta"].iter_rows(min_row=2, values_only=True) if r[1]}
    assert delta["Total expected cost (USD)"] == pytest.approx((totals[0], totals[1] - totals[0]))
    assert "spot hourly_usd 0.8 -> 1.5" in delta["Price sheet changes"][1]
    changes = list(wb["Price changes"].iter_rows(min_row=2, max_row=3, values_only=True))
    assert changes[0][2:9] == ("changed", "A", "r1", "spot", "hourly_usd", 0.8, 1.5)
    assert changes[1][2:6] == ("added", "A", "r1", "reserved_3y")
    plans = wb["Plans"]
    for row in (2, 3):
        link = plans[f"D{row}"].hyperlink.target
        assert not Path(link).is_absolute()
        assert (out / link).is_file()
        assert load_workbook(out / link).sheetnames[0] == "Summary"


@pytest.mark.slow
def test_compare_demand_variants_and_single_variant_gets_the_base(tmp_path):
    model = write_case(tmp_path / "m", DEMAND, _base_prices(), SPOT_CLASS)
    high = tmp_path / "high.csv"
    d = pd.read_csv(tmp_path / "m" / "demand.csv")
    d["gpus"] = d["gpus"] * 2
    d.to_csv(high, index=False)
    out = tmp_path / "out"
    result = _run(model, "--demand", high, "--out", out, "--jobs", "1", "-q")
    assert result.exit_code == 0, result.output
    data = json.loads((out / "comparison.json").read_text())
    assert [s["label"] for s in data["scenarios"]] == ["base", "high"]
    base = plan_over_term(load_inputs(model), make_plan)  # as `planner plan` plans
    doubled = plan_over_term(load_inputs(model, demand=high), make_plan)
    assert data["scenarios"][0]["cost_usd"]["total"] == pytest.approx(base.cost["total"], rel=1e-9)
    assert data["scenarios"][1]["cost_usd"]["total"] == pytest.approx(doubled.cost["total"], rel=1e-9)
    assert data["price_diffs"][0]["changed"] == [] and data["price_diffs"][0]["added"] == []


def test_compare_bad_input_in_any_scenario_exits_2_and_writes_nothing(case, tmp_path):
    model, now, offer = case
    text = offer.read_text().replace("1.5,", "cheap,", 1)
    offer.write_text(text)
    out = tmp_path / "out"
    result = _run(model, "--prices", now, "--prices", offer, "--out", out)
    assert result.exit_code == 2, result.output
    assert "prices.csv, row 3, column 'hourly_usd'" in result.output
    assert "'cheap'" in result.output
    assert not out.exists()


@pytest.mark.slow
def test_compare_exit_3_when_a_scenario_leaves_demand_unmet(case, tmp_path):
    model, now, _offer = case
    capped = _sheet(tmp_path / "capped", [price(hourly=2.0, max_gpus=4),
                                          price(option="spot", hourly=0.8, interruptions_per_hour=0.1, max_gpus=1)])
    out = tmp_path / "out"
    result = _run(model, "--prices", now, "--prices", capped, "--out", out, "--jobs", "1")
    assert result.exit_code == 3, result.output
    assert "GPU-hours of demand unmet" in result.output
    data = json.loads((out / "comparison.json").read_text())
    assert data["scenarios"][0]["shortfall_gpu_hours"] == 0
    assert data["scenarios"][1]["shortfall_gpu_hours"] > 0
    removed = [r["option"] for r in data["price_diffs"][0]["removed"]]
    assert removed == ["reserved_1y"]


def test_resolve_variants_rules(tmp_path):
    m = tmp_path / "m.toml"
    a, b, d = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "d.csv"
    v = resolve_variants(m, [], [a, b], [d], [], False)  # a list given once applies to every scenario
    assert [(x.label, x.prices, x.demand) for x in v] == [("a", a, d), ("b", b, d)]
    v = resolve_variants(m, [], [a, b], [], ["now", "offer"], True)
    assert [x.label for x in v] == ["base", "now", "offer"] and v[0].prices is None
    with pytest.raises(ConfigError, match="different lengths"):
        resolve_variants(m, [], [a, b], [d, d, d], [], False)
    with pytest.raises(ConfigError, match="3 --label given for 2 scenarios"):
        resolve_variants(m, [], [a, b], [], ["x", "y", "z"], False)
    with pytest.raises(ConfigError, match="two scenarios are labelled"):
        resolve_variants(m, [], [a, b], [], ["x", "X"], False)
    with pytest.raises(ConfigError, match="nothing to compare"):
        resolve_variants(m, [], [], [], [], False)


def test_compare_label_mismatch_is_exit_2(case, tmp_path):
    model, now, offer = case
    result = _run(model, "--prices", now, "--prices", offer, "--label", "only-one", "--out", tmp_path / "o")
    assert result.exit_code == 2
    assert "1 --label given for 2 scenarios" in result.output
    assert not (tmp_path / "o").exists()


def test_price_diff_gives_rows_added_removed_and_moved(tmp_path):
    old = _sheet(tmp_path / "old", [
        price("H100", "us-east", hourly=10.0),
        price("H100", "us-east", option="spot", hourly=4.0, interruptions_per_hour=0.05, max_gpus=100),
        price("H100", "us-east", option="Reserved-1Y", hourly=7.0),  # normalised: same row as reserved_1y
        price("L4", "eu", hourly=0.7),
    ])
    new = _sheet(tmp_path / "new", [
        price("H100", "us-east", hourly=10.0),
        price("H100", "us-east", option="spot", hourly=5.2, interruptions_per_hour=0.1, max_gpus=100),
        price("H100", "us-east", option="reserved_1y", hourly=7.0),
        price("H100", "us-east", option="reserved_3y", hourly=2.5, upfront_usd=60000, term_months=36),
    ])
    diff = diff_price_files(old, new)
    assert [(r["gpu_type"], r["region"], r["option"], r["hourly_usd"]) for r in diff.added] == \
        [("H100", "us-east", "reserved_3y", 2.5)]
    assert diff.added[0]["effective_usd_per_gpu_hour"] == pytest.approx(2.5 + 60000 / (36 * 730))
    assert [(r["gpu_type"], r["region"], r["option"]) for r in diff.removed] == [("L4", "eu", "on_demand")]
    moved = {(c["option"], c["field"]): (c["old"], c["new"], c["delta"], c["delta_pct"]) for c in diff.changed}
    assert moved == {("spot", "hourly_usd"): (4.0, 5.2, pytest.approx(1.2), pytest.approx(30.0)),
                     ("spot", "interruptions_per_hour"): (0.05, 0.1, pytest.approx(0.05), pytest.approx(100.0))}
    assert diff.changed[0]["row"] == 3  # the row in the later sheet
    text = diff.summary()
    assert text.startswith("1 row changed, 1 added, 1 removed")
    assert "spot hourly_usd 4 -> 5.2 (+30.0 %)" in text
    assert diff_price_files(old, old).empty
    sheet = read_price_sheet(new)
    assert diff_prices(sheet, sheet.iloc[::-1]).empty  # row order does not matter
