"""Capacity blocks (kind "window"): whole instances for a calendar window, prepaid (issue 24).

Oracles are hand-solved: a two-week pretraining burst where a block beats on-demand and a 1-year term;
the provider rules of the contract; Benders equal to the monolithic model; cash, workbook and FOCUS tie out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from openpyxl import load_workbook

from planner import load_inputs, make_plan
from planner.inputs import commitments
from planner.cli import cli
from planner.pipeline.run import write_outputs
from conftest import price, solve_case, write_case
from test_workbook import cached_matches_recomputed, needs_lo

OD, R1Y, BLOCK = 10.0, 5.0, 6.0  # USD per GPU-hour
BURST = [8.0] * 168 + [64.0] * 336 + [8.0] * 168  # 4 weeks: a two-week burst in weeks 2-3


def block_row(**kw):
    row = dict(gpu_type="H100", region="r", option="capacity_block", hourly_usd=BLOCK, gpus_per_instance=8,
               block_start="2027-01-11T00:00", block_days=14, max_gpus=64)
    row.update(kw)
    return row


def block_case(folder: Path, blocks=(None,), demand=BURST, solver=None, extra_top="") -> Path:
    rows = [price("H100", "r", "on_demand", OD, gpus_per_instance=8),
            price("H100", "r", "reserved_1y", R1Y, term_months=12, gpus_per_instance=8)]
    rows += [block_row(**(b or {})) for b in blocks]
    path = write_case(folder, {"pre": list(demand)}, rows, {"pre": {}}, solver=solver, extra_top=extra_top)
    pd.DataFrame(rows).to_csv(folder / "prices.csv", index=False)  # write_case keeps only the older columns
    return path


def test_a_block_beats_on_demand_and_a_term_for_a_two_week_burst(tmp_path):
    plan = solve_case(block_case(tmp_path))
    # by hand: the base 8 GPUs on the 1-year term (5 x 672 h each, amortised, beats 10 x 672 on demand);
    # the burst's 56 more for 336 h: block 6 x 336 = 2,016 per GPU < term 5 x 672 = 3,360 = on-demand 10 x 336
    assert plan.cost["total"] == pytest.approx(8 * R1Y * 672 + 56 * BLOCK * 336)
    p = plan.purchases.set_index("option")
    assert p.loc["capacity_block", "instances"] == 7 and p.loc["reserved_1y", "instances"] == 1
    assert p.loc["capacity_block", "kind"] == "window"
    assert p.loc["capacity_block", "commitment_usd"] == pytest.approx(56 * BLOCK * 24 * 14)
    assert p.loc["capacity_block", "monthly_recurring_usd"] == 0.0
    assert plan.shortfall_gpu_hours == 0.0


def test_a_block_is_capacity_for_its_window_only(tmp_path):
    # the block covers days 7-21 only: demand outside it may not use it (on-demand pays there)
    demand = [64.0] * 672
    plan = solve_case(block_case(tmp_path, demand=demand))
    used = plan.fleet.groupby(plan.fleet["period"] < pd.Timestamp("2027-01-11"))["reserved_owned"].max()
    assert used[True] == pytest.approx(8 * plan.purchases.set_index("option").loc["reserved_1y", "instances"])
    # by hand: all 64 GPUs on the term (3,360 each) beats block + on-demand outside (2,016 + 10 x 336)
    assert plan.cost["total"] == pytest.approx(64 * R1Y * 672)


def test_the_offer_caps_the_instances(tmp_path):
    plan = solve_case(block_case(tmp_path, blocks=({"max_gpus": 24},)))
    p = plan.purchases.set_index("option")
    assert p.loc["capacity_block", "instances"] == 3
    # the 32 burst GPUs the block cannot hold: term and on-demand tie at 3,360 a GPU
    assert plan.cost["total"] == pytest.approx(8 * R1Y * 672 + 24 * BLOCK * 336 + 32 * OD * 336)


def test_two_offers_in_one_pool_are_two_rows(tmp_path):
    plan = solve_case(block_case(tmp_path, blocks=({"block_days": 7}, {"block_start": "2027-01-18T00:00",
                                                                       "block_days": 7, "hourly_usd": 7.0})))
    b = plan.purchases[plan.purchases["kind"] == "window"].sort_values("block_start")
    assert list(b["instances"]) == [7, 7]
    assert plan.cost["total"] == pytest.approx(8 * R1Y * 672 + 56 * 6.0 * 168 + 56 * 7.0 * 168)


def test_a_block_is_paid_whole_in_the_month_its_window_starts(tmp_path):
    demand = [8.0] * (31 * 24 - 72) + [64.0] * (14 * 24) + [8.0] * 72  # Jan 4 to Feb 14, burst from Jan 29 00:00
    plan = solve_case(block_case(tmp_path, demand=demand, blocks=({"block_start": "2027-02-01T00:00",
                                                                   "block_days": 10},)))
    cash = plan.cash_schedule.set_index("month")
    block = plan.purchases.set_index("option").loc["capacity_block"]
    assert block["instances"] == 7 and block["firm"]
    assert cash.loc["2027-02", "upfront_usd"] == pytest.approx(56 * BLOCK * 240)
    assert cash.loc["2027-01", "upfront_usd"] == 0.0
    paths = write_outputs(plan, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    row = next(p for p in data["reserved_purchases"] if p["option"] == "capacity_block")
    assert row["kind"] == "window" and row["block_days"] == 10 and row["cash_date"].startswith("2027-02-01")
    flow = load_workbook(paths["xlsx"], data_only=True)["Cash flow"]
    months = {f"{r[0].value:%Y-%m}": r[1].value for r in flow.iter_rows(min_row=2) if r[0].value}
    assert months["2027-02"] == pytest.approx(56 * BLOCK * 240)
    focus = tmp_path / "f.csv"
    assert CliRunner().invoke(cli, ["export", "focus", str(paths["json"]), "--out", str(focus)]).exit_code == 0
    f = pd.read_csv(focus)
    fee = f[(f["x_Option"] == "capacity_block") & (f["ChargeCategory"] == "Purchase")]
    assert fee["BilledCost"].sum() == pytest.approx(56 * BLOCK * 240)
    assert set(fee["BillingPeriodStart"]) == {"2027-02-01T00:00:00Z"}


def test_an_aws_block_more_than_eight_weeks_out_is_bought_later(tmp_path):
    demand = [8.0] * (24 * 90)  # Jan 4 to Apr 4
    start = "2027-03-15T11:30"
    plan = solve_case(block_case(tmp_path, demand=demand, blocks=({"block_start": start, "block_days": 7,
                                                                   "provider": "aws", "max_gpus": ""},)))
    b = plan.inputs.commitments[plan.inputs.commitments["kind"] == "window"].iloc[0]
    assert b["purchase_date"] == pd.Timestamp(start) - pd.Timedelta(weeks=8) and not b["firm"]
    assert b["max_units"] == commitments_limit()


def commitments_limit():
    from planner.inputs.validate import AWS_BLOCK_MAX_INSTANCES

    return AWS_BLOCK_MAX_INSTANCES


@pytest.mark.parametrize("change,message", [
    ({"block_start": "2026-12-28T00:00"}, "row 4, column 'block_start': capacity block outside the horizon"),
    ({"block_start": "2027-01-25T00:00"}, "row 4, column 'block_start': capacity block outside the horizon"),
    ({"block_days": ""}, "row 4, column 'block_days': capacity_block row without block_days"),
    ({"block_start": ""}, "row 4, column 'block_start': capacity_block row without block_start"),
    ({"block_days": 2.5}, "block_days is not a whole number of days (got '2.5')"),
    ({"provider": "aws", "block_start": "2027-01-11T11:30", "block_days": 15},
     "AWS does not sell a Capacity Block of this length (got '15"),
    ({"provider": "aws", "block_start": "2027-01-11T00:00"}, "AWS Capacity Blocks start at 11:30 UTC"),
    ({"provider": "aws", "block_start": "2027-01-11T11:30", "max_gpus": 520},
     "over AWS's limit of 64 instances in one Capacity Block (got '520"),
    ({"provider": "gcp", "block_days": 91}, "GCP calendar-mode reservations last at most 90 days (got '91"),
    ({"provider": "azure"}, "row 4, column 'provider': unknown provider (got 'azure')"),
    ({"hourly_usd": 0}, "row 4, column 'hourly_usd': price of zero"),
    ({"upfront_usd": 100}, "row 4, column 'upfront_usd': upfront payment on a non-reserved row"),
    ({"provider": "aws", "block_start": "2027-01-11T11:30:45"}, "AWS Capacity Blocks start at 11:30 UTC"),
    ({"max_gpus": 20}, "a capacity block's max_gpus is not a whole number of instances (got '20"),
    ({"max_gpus": 4}, "a capacity block's max_gpus is not a whole number of instances (got '4"),
    ({"term_months": 1}, "row 4, column 'term_months': term on a capacity_block row"),
])
def test_bad_block_offers_exit_2_naming_the_row(tmp_path, change, message):
    m = block_case(tmp_path, blocks=(change,))
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2, r.output
    assert message in r.output.replace("\n", " ")


def test_block_columns_on_other_rows_exit_2(tmp_path):
    m = block_case(tmp_path)
    df = pd.read_csv(tmp_path / "prices.csv")
    df.loc[1, "block_days"] = 7
    df.to_csv(tmp_path / "prices.csv", index=False)
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2 and "row 3, column 'block_days': block_days on a row that is not a capacity_block" in r.output


def test_aws_durations_follow_the_contract():
    from planner.inputs.validate import aws_block_days_ok

    days = pd.Series(range(1, 200))
    ok = set(days[aws_block_days_ok(days)])
    assert ok == set(range(1, 15)) | set(range(21, 183, 7))


def test_kind_registry_knows_every_option_spelling():
    s = pd.Series(["on_demand", "spot", "reserved", "reserved_1y", "reserved_3y_all_upfront", "capacity_block",
                   "savings_bond"])
    assert list(commitments.kind_of(s).fillna("-")) == ["on_demand", "spot", "instance", "instance", "instance",
                                                         "window", "-"]
    assert list(commitments.adds_capacity(s)) == [False, False, True, True, True, True, False]


def test_benders_equals_the_monolithic_model_with_blocks(tmp_path):
    demand = [8.0] * (24 * 28) + [40.0] * (24 * 14) + [8.0] * (24 * 20)  # Jan 4 to Mar 5, burst Feb 1-15
    common = dict(demand=demand, blocks=({"block_start": "2027-02-01T00:00", "block_days": 14},),
                  extra_top="[commitments]\npurchase_every = \"month\"")
    mono = make_plan(load_inputs(block_case(tmp_path / "m", solver={"method": "monolithic"}, **common)),
                     mip_gap=0.0)
    bend = make_plan(load_inputs(block_case(tmp_path / "b", solver={"method": "benders"}, **common)), mip_gap=1e-9)
    assert "benders" in bend.stats
    assert bend.cost["total"] == pytest.approx(mono.cost["total"], rel=1e-6)
    assert bend.purchases.set_index(["option", "purchase_date"])["instances"].to_dict() == \
        mono.purchases.set_index(["option", "purchase_date"])["instances"].to_dict()
    # by hand: base 8 on a 1-year term bought at the start; the 32 burst GPUs on the block
    assert mono.cost["total"] == pytest.approx(8 * R1Y * len(demand) + 32 * BLOCK * 24 * 14)


@needs_lo
def test_libreoffice_recomputes_a_block_plan_to_its_cached_values(tmp_path):
    demand = [8.0] * (31 * 24 - 72) + [64.0] * (14 * 24) + [8.0] * 72
    plan = solve_case(block_case(tmp_path, demand=demand, blocks=({"block_start": "2027-02-01T00:00",
                                                                   "block_days": 10},)))
    paths = write_outputs(plan, tmp_path / "out")
    n, again = cached_matches_recomputed(paths["xlsx"], tmp_path)
    assert n > 100
    total = {r[0].value: r[1].value for r in again["Summary"].iter_rows() if r[0].value}
    assert any(v == pytest.approx(plan.cost["total"]) for v in total.values() if isinstance(v, (int, float)))


TWO = ({"block_start": "2027-01-11T00:00", "block_days": 7, "max_gpus": 40},
       {"block_start": "2027-01-18T00:00", "block_days": 7, "hourly_usd": 6.5, "max_gpus": 32})


def test_evaluate_tells_two_offers_of_one_pool_apart(tmp_path):
    m = block_case(tmp_path, blocks=TWO)
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["plan", str(m), "--out", str(out), "-q"]).exit_code == 0
    r = CliRunner().invoke(cli, ["evaluate", str(m), "--out", str(tmp_path / "ev1"), "--plan", str(out / "plan.json"), "--demand",
                                 str(tmp_path / "demand.csv"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    plan = json.loads((out / "plan.json").read_text())
    assert doc["cost_usd"]["total"] == pytest.approx(plan["cost_usd"]["total"])
    assert doc["regret_usd"] == pytest.approx(0.0, abs=1e-6)
    # the text names the regret's basis and both objectives, not a cost beside an objective
    r = CliRunner().invoke(cli, ["evaluate", str(m), "--out", str(tmp_path / "ev2"), "--plan", str(out / "plan.json"),
                                 "--demand", str(tmp_path / "demand.csv")])
    assert (f"against hindsight, on the objective (cost + unmet GPU-hours at the shortfall penalty: "
            f"${doc['objective_usd']:,.0f} realised, ${doc['hindsight']['objective_usd']:,.0f} in hindsight)") in r.output


def test_backtest_fixes_each_block_it_bought_by_its_window(tmp_path):
    weeks = [8.0] * 168 + [40.0] * 168 + [72.0] * 168 + [8.0] * 168
    m = block_case(tmp_path, demand=weeks, blocks=TWO)
    r = CliRunner().invoke(cli, ["backtest", str(m), "--demand", str(tmp_path / "demand.csv"), "--train-hours", "168",
                                 "--test-hours", "168", "--forecaster", "latest", "--strategies", "point",
                                 "--jobs", "1", "--out", str(tmp_path / "bt"), "--json"])
    assert r.exit_code in (0, 3), r.output
    doc = json.loads(r.output)
    assert doc["strategies"]["point"]["total_cost_usd"] > 0
    windows = doc["windows"]
    bought = [p for w in windows for p in w["purchases"] if p["option"] == "capacity_block"]
    assert all(p["instances"] <= 5 for p in bought)  # never more than an offer holds (40 / 8)


def test_compare_sees_a_block_price_change(tmp_path):
    m = block_case(tmp_path, blocks=TWO)
    df = pd.read_csv(tmp_path / "prices.csv")
    df.loc[3, "hourly_usd"] = 9.0  # the second block (2027-01-18) only
    df.to_csv(tmp_path / "prices2.csv", index=False)
    r = CliRunner().invoke(cli, ["compare", str(m), "--prices", str(tmp_path / "prices2.csv"),
                                 "--out", str(tmp_path / "cmp")])
    assert r.exit_code in (0, 3), r.output
    text = r.output + (r.stderr if r.stderr_bytes is not None else "")
    assert "no price changes" not in text
    assert "H100/r capacity_block 2027-01-18T00:00 7d upfront_usd 1092 -> 1512" in text


def test_fixed_block_purchases_above_the_offer_are_infeasible_and_say_so(tmp_path):
    """make_plan(fixed_reserved=...) buying more of a capacity block than its offer (max_units) holds is never
    priced: infeasible, the block named (a review priced 7 units of a 4-unit offer, a negative regret)."""
    import numpy as np

    from planner import load_inputs, make_plan
    from planner.model import unit_bounds

    inp = load_inputs(block_case(tmp_path))
    cap = unit_bounds(inp)
    blocks = np.flatnonzero(np.isfinite(cap))
    assert len(blocks)
    n = np.zeros(len(cap))
    n[blocks[0]] = cap[blocks[0]] + 3
    plan = make_plan(inp, fixed_reserved=n, risk=False)
    assert plan.status.value == "infeasible"
    assert any(f"{cap[blocks[0]] + 3:g} units bought where the offer has {cap[blocks[0]]:g}" in x for x in plan.notes)
    n[blocks[0]] = cap[blocks[0]]
    assert make_plan(inp, fixed_reserved=n, risk=False).status.has_plan
