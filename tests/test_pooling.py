"""SLO-sized classes in plans, backfill with internal preemption, and `planner pooling`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from planner import cli as cli_mod
from planner.sizing import queueing
from planner.sizing.backfill import job_reclaim_rate, rises_and_idle
from planner.pipeline.run import load_inputs, make_plan
from planner.pooling import compare_pooling
from planner.report import plan_json
from conftest import price, write_case

ROOT = Path(__file__).resolve().parent.parent
POOLING = ROOT / "models" / "pooling.toml"

PRICES = [price(hourly=10.0), price(option="reserved_1y", hourly=4.0, term_months=12)]


def _plan(i):
    return make_plan(i, backend="highs", mip_gap=0.0, risk=False)


def test_reclaim_estimator_by_hand():
    req = np.array([[0.0, 10.0, 5.0, 20.0]])
    rises, idle = rises_and_idle(req, np.ones(4))
    assert rises.tolist() == [[10.0, 0.0, 15.0]]
    assert idle.tolist() == [20 + 10 + 15 + 0]
    # 8-GPU gangs: a rise of 10 takes 2 gangs back, 15 takes 2: 4 jobs over 45/8 gang-hours
    assert job_reclaim_rate(rises[0], 45.0, 8.0) == pytest.approx(4 * 8 / 45)


def test_pooled_backfill_hand_case(tmp_path):
    # inference needs 2 GPUs, then 6, alternately; training 3 GPUs in the quiet hours only.
    # Separate: inference reserves 6 (both levels are busy >= r/od = 40 % of hours), training 3: 9 x 4 x 4 = 144.
    # Pooled at goodput 1: training fits on the 4 GPUs inference leaves idle: 6 x 4 x 4 = 96.
    classes = {"inf": {}, "tr": {"backfill": True, "backfill_goodput": 1.0}}
    m = write_case(tmp_path / "g1", {"inf": [2, 6, 2, 6], "tr": [3, 0, 3, 0]}, PRICES, classes)
    res = compare_pooling(load_inputs(m), _plan)
    assert res.metrics["separate"]["total_cost_usd"] == pytest.approx(144.0)
    assert res.metrics["pooled"]["total_cost_usd"] == pytest.approx(96.0)
    # at goodput 0.5 training needs 6 backfilled GPUs for 3 useful, but only 4 are idle:
    # buy a 7th GPU (above inference's peak of 6: training's own, never reclaimed): 1 + 4 x 0.5 = 3, cost 112
    # (6 GPUs and 1 on-demand GPU for 2 hours would cost 96 + 20 = 116)
    classes["tr"]["backfill_goodput"] = 0.5
    m = write_case(tmp_path / "g05", {"inf": [2, 6, 2, 6], "tr": [3, 0, 3, 0]}, PRICES, classes)
    res = compare_pooling(load_inputs(m), _plan)
    assert res.metrics["pooled"]["total_cost_usd"] == pytest.approx(112.0)
    bf = res.pooled.backfill.iloc[0]
    assert bf["own_reserved_gpu_hours"] == pytest.approx(2.0)
    assert bf["backfilled_gpu_hours"] == pytest.approx(8.0)
    assert res.metrics["pooled"]["training_useful_gpu_hours"] == pytest.approx(6.0)
    assert res.metrics["pooled"]["training_lost_to_preemption_pct"] == pytest.approx(40.0)


def test_backfill_uses_its_own_idle_gpus_before_reclaimable_ones(tmp_path):
    # inference 2 / 6 GPUs alternately, training 2 / 1 useful GPUs at backfill goodput 0.5. Buying 7 (112 USD) beats
    # 6 and an on-demand GPU in the busy hours (96 + 20): the 7th is training's own, never reclaimed. In a quiet hour
    # training's 2 can come from its own GPU and 2 reclaimable ones (1 + 2 x 0.5) or from 4 reclaimable ones
    # (4 x 0.5), at the same cost: a scheduler fills its own GPU first, and so must the plan's figures
    # (backfilled 2 + 2 GPU-hours, own 4; not 4 + 4 and 2, which says training loses 40 % where it loses 25 %)
    classes = {"inf": {}, "tr": {"backfill": True, "backfill_goodput": 0.5}}
    m = write_case(tmp_path / "own", {"inf": [2, 6, 2, 6], "tr": [2, 1, 2, 1]}, PRICES, classes)
    res = compare_pooling(load_inputs(m), _plan)
    assert res.metrics["pooled"]["total_cost_usd"] == pytest.approx(112.0)
    bf = res.pooled.backfill.iloc[0]
    assert bf["own_reserved_gpu_hours"] == pytest.approx(4.0)
    assert bf["backfilled_gpu_hours"] == pytest.approx(4.0)
    assert res.metrics["pooled"]["training_gpu_hours"] == pytest.approx(8.0)
    assert res.metrics["pooled"]["training_lost_to_preemption_pct"] == pytest.approx(25.0)
    assert res.pooled.objective == pytest.approx(112.0)  # the tie-break is not a cost


def _bundled_copy(tmp_path: Path, goodput: float | None) -> Path:
    data = tmp_path / "data" / "pooling"
    shutil.copytree(ROOT / "data" / "pooling", data)
    text = POOLING.read_text()
    if goodput is not None:
        text = text.replace("backfill = true", f"backfill = true\nbackfill_goodput = {goodput}")
    (tmp_path / "models").mkdir()
    path = tmp_path / "models" / "pooling.toml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_pooled_never_costs_more_when_preemption_is_free(tmp_path):
    res = compare_pooling(load_inputs(_bundled_copy(tmp_path, 1.0)), _plan)
    sep, pool = res.metrics["separate"], res.metrics["pooled"]
    assert pool["total_cost_usd"] <= sep["total_cost_usd"] * (1 + 1e-6)
    assert (res.pooled.backfill["goodput"] == 1.0).all()
    # inference has priority: its latency is the same in both arrangements
    assert pool["inference_p99_ms"] == pytest.approx(sep["inference_p99_ms"], rel=1e-9)


def test_bundled_pooling_meets_the_slo_in_every_period():
    res = compare_pooling(load_inputs(POOLING), _plan)
    for plan in res.separate[:1] + [res.pooled]:
        lat = plan.latency
        assert len(lat) == 672 and lat["slo_met"].all()
        assert (lat["latency_at_percentile_ms"] <= 2000 + 1e-6).all()
        # one replica fewer would miss the SLO wherever the plan provisions exactly the requirement
        need = queueing.replicas_for_slo(lat["requests_per_s"].to_numpy(), 0.4, 2.0, 99)
        assert (lat["replicas"].to_numpy() >= need).all()
    assert res.metrics["pooled"]["inference_p99_ms"] == pytest.approx(res.metrics["separate"]["inference_p99_ms"])
    assert res.metrics["pooled"]["total_cost_usd"] <= res.metrics["separate"]["total_cost_usd"]
    bf = res.pooled.backfill.iloc[0]
    assert 0 < bf["goodput"] < 1 and bf["job_reclaims_per_hour"] > 0


def test_slo_class_demand_is_the_replicas_in_gpus(tmp_path):
    m = write_case(tmp_path, {"chat": [40.0, 0.0, 80.0]}, PRICES,
                   {"chat": {"demand_unit": "requests_per_s", "latency_slo_ms": 3000,
                             "replicas": {"A": {"service_ms": 500, "gpus_per_replica": 2}}}})
    inp = load_inputs(m)
    assert inp.demand[0, 0].tolist() == [44.0, 0.0, 84.0]  # 22 and 42 replicas of 2 GPUs
    plan = make_plan(inp, backend="highs", mip_gap=0.0)
    d = json.loads(plan_json(plan))
    slo = d["slo"][0]
    assert slo["peak_replicas"] == 42 and slo["periods_missing_slo"] == 0
    assert [p["replicas"] for p in slo["periods"]] == [22, 0, 42]


def test_second_gpu_type_gets_its_worst_case_speed(tmp_path):
    prices = PRICES + [price(gpu_type="B", hourly=1.0)]
    m = write_case(tmp_path, {"chat": [10.0, 40.0]}, prices,
                   {"chat": {"demand_unit": "requests_per_s", "latency_slo_ms": 3000,
                             "replicas": {"A": {"service_ms": 500}, "B": {"service_ms": 600}}}})
    inp = load_inputs(m)
    need_a = queueing.replicas_for_slo(np.array([10.0, 40.0]), 0.5, 3.0, 99)
    need_b = queueing.replicas_for_slo(np.array([10.0, 40.0]), 0.6, 3.0, 99)
    speed_b = inp.speed[0, inp.pools.index[inp.pools["gpu_type"] == "B"][0]]
    assert speed_b == pytest.approx(min(need_a / need_b))
    # served on B alone, every period gets at least the replicas it needs there
    assert np.all(np.floor(inp.demand[0, 0] / speed_b + 1e-9) >= need_b)


@pytest.mark.parametrize("table,message", [
    ({"slo_percentile": 100}, "'classes.chat.slo_percentile' out of range (got 100); expected a percentile "
                              "above 0 and at most 99.9999999 (a tail of 1e-9), e.g. 99"),
    ({"replicas": {"A": {"service_ms": 0}}}, "'classes.chat.replicas.A.service_ms' must be > 0 (got 0); "
                                             "expected a service time or rate > 0"),
    ({"latency_slo_ms": 1000}, "'classes.chat.replicas.A': no number of replicas meets p99 <= 1000 ms "
                               "(got 'service_ms = 500, service_cv = 1'); expected latency_slo_ms >= 2303 "
                               "(p99 of the service time alone) or a faster replica"),
    ({"demand_unit": "rps"}, "'classes.chat.demand_unit' not understood (got 'rps'); expected \"gpus\" or "
                             "\"requests_per_s\""),
])
def test_bad_slo_inputs_exit_2_with_the_exact_message(tmp_path, table, message):
    chat = {"demand_unit": "requests_per_s", "latency_slo_ms": 3000, "replicas": {"A": {"service_ms": 500}}}
    chat.update(table)
    m = write_case(tmp_path, {"chat": [10.0, 20.0]}, PRICES, {"chat": chat})
    result = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_slo_command_json_and_exit_codes():
    runner = CliRunner()
    r = runner.invoke(cli_mod.cli, ["slo", "--requests-per-s", "40", "--service-ms", "500", "--slo-ms", "3000",
                                    "--percentile", "99", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["replicas"] == 22 and d["gpus"] == 22
    for key in ("utilisation", "p_latency_above_slo", "latency_at_percentile_ms"):
        assert key in d
    r = runner.invoke(cli_mod.cli, ["slo", "--requests-per-s", "40", "--service-ms", "500", "--slo-ms", "3000",
                                    "--sweep", "requests", "--sweep-values", "5,40,80", "--json"])
    assert [row["replicas"] for row in json.loads(r.output)] == [4, 22, 42]
    r = runner.invoke(cli_mod.cli, ["slo", "--requests-per-s", "40", "--service-ms", "500", "--slo-ms", "2000"])
    assert r.exit_code == 2 and "no number of replicas meets p99 <= 2000 ms" in r.output


@pytest.mark.slow
def test_pooling_command_writes_json_and_workbook(tmp_path):
    out = tmp_path / "out"
    r = CliRunner().invoke(cli_mod.cli, ["pooling", str(POOLING), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("separate: $")
    d = json.loads((out / "pooling.json").read_text())
    for side in ("separate", "pooled"):
        for key in ("total_cost_usd", "inference_p99_ms", "training_useful_gpu_hours", "preemptions_per_day"):
            assert d[side][key] is not None
    assert d["pooled"]["total_cost_usd"] == pytest.approx(
        sum(d["pooled"]["cost_usd"][k] for k in ("reserved", "on_demand", "spot")))
    from openpyxl import load_workbook

    ws = load_workbook(out / "pooling.xlsx")["Pooling"]
    assert ws["B2"].value == pytest.approx(d["separate"]["total_cost_usd"])
    assert ws["C2"].value == pytest.approx(d["pooled"]["total_cost_usd"])
    assert len(ws._charts) == 1
    # the pooled plan is `planner plan`'s own: its purchases judged over their whole term (the default), and said so
    assert d["purchases_judged"].startswith("purchases judged over their whole term: 3-year terms judged on a ")
    assert "purchases judged over their whole term" in r.output
    from planner.pipeline.whole_term import plan_over_term

    alone = plan_over_term(load_inputs(POOLING), make_plan, risk=False)
    assert alone.term["judge"] == "term"
    assert d["pooled"]["reserved_gpus_bought"] == pytest.approx(float(alone.purchases["gpus"].sum()))
    assert d["pooled"]["total_cost_usd"] == pytest.approx(alone.cost["total"], rel=1e-4)


def test_pooling_without_backfill_class_is_an_input_error(tmp_path):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, PRICES, {"a": {}})
    r = CliRunner().invoke(cli_mod.cli, ["pooling", str(m), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "no class has backfill = true" in r.output
    assert not (tmp_path / "o").exists()


# --- defects found by the independent review, each now a test ---------------------------------------


@pytest.mark.slow
def test_cbc_solves_backfill_models_like_highs():
    inp = load_inputs(POOLING)
    a = make_plan(inp, backend="highs", mip_gap=0.0, risk=False)
    b = make_plan(inp, backend="cbc", mip_gap=0.0, risk=False)
    assert b.status.value == "optimal"
    assert b.cost["total"] == pytest.approx(a.cost["total"], rel=1e-6)


@pytest.mark.slow
def test_windows_and_what_ifs_of_slo_models_keep_the_slo():
    from planner.inputs.arrays import scale_inputs, slice_periods

    inp = load_inputs(POOLING)
    week = slice_periods(inp, np.arange(168, 336))
    assert week.requests.shape == (1, 2, 168)
    assert _plan(week).latency["slo_met"].all()
    for level in (0.5, 2.0):  # requests are scaled and sized again, not the GPUs scaled
        scaled = scale_inputs(inp, demand_level=level)
        lam = inp.requests[0, 0] * level
        assert scaled.demand[0, 0].tolist() == queueing.replicas_for_slo(lam, 0.4, 2.0, 99).tolist()
        assert _plan(scaled).latency["slo_met"].all()


def test_pooled_beats_separate_with_shared_caps_and_expiring_inventory(tmp_path):
    # caps are the market's, shared by both pools; owned GPUs that expire mid-horizon stay feasible
    path = _bundled_copy(tmp_path, 1.0)
    prices = tmp_path / "data" / "pooling" / "prices.csv"
    text = prices.read_text().replace("reserved_3y,2.43,63860.4,36,,", "reserved_3y,2.43,63860.4,36,400,")
    prices.write_text(text)
    (tmp_path / "data" / "pooling" / "inventory.csv").write_text(
        "gpu_type,region,option,gpus,start,end\nH100,us-central1,reserved_1y,400,2026-06-01T00:00,2027-01-18T00:00\n")
    path.write_text(path.read_text().replace('prices = "../data/pooling/prices.csv"',
                                             'prices = "../data/pooling/prices.csv"\n'
                                             'inventory = "../data/pooling/inventory.csv"'))
    res = compare_pooling(load_inputs(path), _plan)
    sep, pool = res.metrics["separate"], res.metrics["pooled"]
    assert pool["total_cost_usd"] <= sep["total_cost_usd"] * (1 + 1e-6)
    # the separate training pool got what the inference plan left of the reserved cap of 400
    bought = res.separate[0].purchases["gpus"].sum() + res.separate[1].purchases["gpus"].sum()
    assert bought <= 400 + 1e-9


def test_training_hours_are_counted_in_reference_gpus(tmp_path):
    # training may run on a half-speed type: useful reference GPU-hours must equal its demand
    prices = PRICES + [price(gpu_type="B", hourly=4.0), price(gpu_type="B", option="spot", hourly=1.0,
                                                               interruptions_per_hour=0.0)]
    classes = {"inf": {"gpu_types": {"A": 1.0}},
               "tr": {"backfill": True, "spot": True, "gpu_types": {"A": 1.0, "B": 0.5}}}
    m = write_case(tmp_path, {"inf": [2, 6, 2, 6], "tr": [3, 3, 3, 3]}, prices, classes)
    res = compare_pooling(load_inputs(m), _plan)
    for side in ("separate", "pooled"):
        assert res.metrics[side]["training_useful_gpu_hours"] == pytest.approx(12.0)


@pytest.mark.parametrize("cls,message", [
    ({"spot": True, "max_spot_share": 0.5}, "'classes.chat' is SLO-sized and has spot = true"),
    ({"replicas": {"B200": {"service_ms": 500}}}, "'classes.chat.replicas.B200' names a GPU type not in the "
                                                 "price sheet"),
])
def test_more_bad_slo_inputs(tmp_path, cls, message):
    chat = {"demand_unit": "requests_per_s", "latency_slo_ms": 3000, "replicas": {"A": {"service_ms": 500}}}
    chat.update(cls)
    m = write_case(tmp_path, {"chat": [10.0, 20.0]}, PRICES, {"chat": chat})
    result = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert result.exit_code == 2 and message in result.output, result.output


def test_backfill_goodput_needs_backfill(tmp_path):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, PRICES, {"a": {"backfill_goodput": 0.5}})
    result = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert result.exit_code == 2 and "'classes.a.backfill_goodput' without backfill = true" in result.output


def test_a_load_beyond_sizing_is_an_input_error(tmp_path):
    m = write_case(tmp_path, {"chat": [10.0, 2e7]}, PRICES,
                   {"chat": {"demand_unit": "requests_per_s", "latency_slo_ms": 3000,
                             "replicas": {"A": {"service_ms": 500}}}})
    result = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert result.exit_code == 2, result.output
    assert "class 'chat' has a load beyond what the planner sizes on A (got '2e+07 requests/s')" in result.output


@pytest.mark.parametrize("args", [["--requests-per-s", "nan"], ["--requests-per-s", "inf"],
                                  ["--requests-per-s", "1e9"], ["--gpus-per-replica", "nan"]])
def test_slo_command_rejects_absurd_numbers(args):
    base = {"--requests-per-s": "40", "--service-ms": "500", "--slo-ms": "3000"}
    base.update(dict(zip(args[::2], args[1::2])))
    r = CliRunner().invoke(cli_mod.cli, ["slo"] + [x for kv in base.items() for x in kv])
    assert r.exit_code == 2, r.output
