"""Queued capacity (GCP DWS flex-start) as a rented kind of the supply registry: one more row of
``supply.SUPPLIES``, priced, capped and made useful through the one rented family ``r[j,k,p,b]``.

Hand oracles: a delay-tolerant class takes flex-start where its queue fits its start delay and on-demand where
it does not (the share in time of a lognormal queue through p50 and p90); a grant's restart lowers its useful
share to L / (L + R); a cap binds; a class that does not wait never takes it; the decomposed plan is the
monolithic one.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from planner import load_inputs, make_plan
from planner.core.errors import InputError, ConfigError
from planner.inputs import rented, supply
from conftest import price, write_case

T = 4  # hourly periods


def _flex(region, p50, p90, hourly=2.0, **extra):
    return price(region=region, option="flex_start", hourly=hourly, queue_hours_p50=p50, queue_hours_p90=p90,
                 **extra)


def _case(tmp_path, classes, flex_rows, demand=100.0, solver=None):
    prices = [price(region="r1", hourly=4.0), price(region="r2", hourly=4.0)] + flex_rows
    return write_case(tmp_path, {k: [demand] * T for k in classes}, prices, classes, solver=solver)


def _gpus(plan, cls, option, region=None):
    a = plan.allocation
    sel = (a["workload_class"] == cls) & (a["option"] == option)
    if region is not None:
        sel &= a["region"] == region
    return float(a.loc[sel, "gpu_hours"].sum()) / T


def test_the_registry_declares_flex_start_as_a_rented_kind():
    s = supply.get("flex_start")
    assert s.rented and not s.preemptible and s.useful_share == "queued" and s.cash == "incurred"
    assert supply.RENTED == ("on_demand", "spot", "flex_start") == rented.KINDS
    assert supply.kind_of_name("flex_start") == "flex_start"
    assert "flex_start" in supply.BUCKETS


def test_in_time_share_is_the_lognormal_through_p50_and_p90():
    # tolerance 24 h, queue p50 48 h, p90 96 h: ln(24/48) / (ln 2 / z90) = -z90, so 10 % start in time
    got = rented.in_time_share(np.array([48.0, 2.0, 0.0, np.nan]), np.array([96.0, 2.0, 0.0, np.nan]),
                               np.array([24.0, np.nan]))
    assert got[0, 0] == pytest.approx(0.10, abs=1e-12)
    assert got[0, 1] == 1.0 and got[0, 2] == 1.0 and got[0, 3] == 0.0  # a point queue that fits; none; not sold
    assert (got[1] == 0).all()  # a class that does not wait
    z = (math.log(30) - math.log(10)) / ((math.log(40) - math.log(10)) / NormalDist().inv_cdf(0.9))
    assert rented.lognormal_p(10, 40, 30) == pytest.approx(NormalDist().cdf(z))
    assert rented.in_time_share(np.array([10.0]), np.array([40.0]), np.array([30.0]))[0, 0] == \
        pytest.approx(rented.lognormal_p(10, 40, 30), rel=1e-12)


def test_a_delay_tolerant_class_takes_flex_start_where_its_queue_fits_and_on_demand_where_not(tmp_path):
    """near (r1, queue 2 h, fits 24 h): all flex; far (r2, p50 48 h / p90 96 h): 10 % flex, 90 % on-demand;
    serve (no start delay): all on-demand though flex is half the price."""
    classes = {"near": {"regions": ["r1"], "max_start_delay_hours": 24.0, "restart_minutes": 0.0},
               "far": {"regions": ["r2"], "max_start_delay_hours": 24.0, "restart_minutes": 0.0},
               "serve": {"regions": ["r1"]}}
    plan = make_plan(load_inputs(_case(tmp_path, classes, [_flex("r1", 2, 2), _flex("r2", 48, 96)])), mip_gap=0.0)
    assert plan.status.value == "optimal"
    assert _gpus(plan, "near", "flex_start") == pytest.approx(100.0)
    assert _gpus(plan, "near", "on_demand") == pytest.approx(0.0, abs=1e-9)
    assert _gpus(plan, "far", "flex_start") == pytest.approx(10.0, rel=1e-9)
    assert _gpus(plan, "far", "on_demand") == pytest.approx(90.0, rel=1e-9)
    assert _gpus(plan, "serve", "flex_start") == 0.0 and _gpus(plan, "serve", "on_demand") == pytest.approx(100.0)
    flex = (100 + 10) * 2.0 * T
    on_demand = (90 + 100) * 4.0 * T
    assert plan.cost["flex_start"] == pytest.approx(flex, rel=1e-9)
    assert plan.cost["on_demand"] == pytest.approx(on_demand, rel=1e-9)
    assert plan.cost["total"] == pytest.approx(flex + on_demand, rel=1e-9)
    assert plan.objective == pytest.approx(flex + on_demand, rel=1e-9)
    # the fleet, the cash and the scenario costs carry the kind too, and add up to the total
    assert plan.fleet["flex_start"].sum() == pytest.approx(110.0 * T, rel=1e-9)
    assert plan.cash_schedule["flex_start_usd"].sum() == pytest.approx(flex, rel=1e-9)
    assert plan.cash_schedule["total_usd"].sum() == pytest.approx(flex + on_demand, rel=1e-9)
    assert plan.scenario_costs["flex_start"].iat[0] == pytest.approx(flex, rel=1e-9)


def test_a_grant_that_restarts_is_useful_for_its_run_only(tmp_path):
    """Grants run at most 9 h, then the job restarts (60 min): 9/10 of a paid hour does work, so 100 GPUs of
    demand take 100 / 0.9 flex GPUs (2 / 0.9 = 2.22 < 4 on-demand)."""
    classes = {"train": {"regions": ["r1"], "max_start_delay_hours": 6.0, "restart_minutes": 60.0}}
    plan = make_plan(load_inputs(_case(tmp_path, classes, [_flex("r1", 1, 1, max_run_hours=9)])), mip_gap=0.0)
    assert _gpus(plan, "train", "flex_start") == pytest.approx(100 / 0.9, rel=1e-9)
    assert plan.cost["total"] == pytest.approx(100 / 0.9 * 2.0 * T, rel=1e-9)


def test_flex_start_stops_paying_where_restarts_cost_more_than_the_discount(tmp_path):
    """Grants of 1 h with a 90-minute restart: 0.4 of a paid hour does work, 2 / 0.4 = 5 > 4: all on-demand."""
    classes = {"train": {"regions": ["r1"], "max_start_delay_hours": 6.0, "restart_minutes": 90.0}}
    plan = make_plan(load_inputs(_case(tmp_path, classes, [_flex("r1", 1, 1, max_run_hours=1)])), mip_gap=0.0)
    assert _gpus(plan, "train", "flex_start") == 0.0
    assert _gpus(plan, "train", "on_demand") == pytest.approx(100.0)


def test_the_flex_cap_binds_and_the_rest_goes_on_demand(tmp_path):
    classes = {"train": {"regions": ["r1"], "max_start_delay_hours": 24.0, "restart_minutes": 0.0}}
    plan = make_plan(load_inputs(_case(tmp_path, classes, [_flex("r1", 2, 2, max_gpus=30)])), mip_gap=0.0)
    assert _gpus(plan, "train", "flex_start") == pytest.approx(30.0)
    assert _gpus(plan, "train", "on_demand") == pytest.approx(70.0)
    assert plan.stats["rows_per_family"]["flex_cap"] == plan.stats["blocks"]  # one flex_cap row a block
    assert plan.stats["rows_per_family"]["od_cap"] == plan.stats["rows_per_family"]["spot_cap"] == 0


def test_the_decomposed_plan_equals_the_monolithic_one_with_flex_start(tmp_path):
    """Two weeks of hours, a 1-year reservation against flex-start and on-demand: Benders (forced) and the
    monolithic model give the same plan."""
    from conftest import price as pr

    hours = 24 * 14
    t = np.arange(hours)
    demand = {"train": list(60 + 40 * np.sin(t / 24 * 2 * np.pi) ** 2), "serve": [50.0] * hours}
    prices = [pr(region="r1", hourly=4.0), pr(region="r1", option="reserved_1y", hourly=2.5),
              _flex("r1", 8, 30, max_gpus=50)]
    classes = {"train": {"max_start_delay_hours": 12.0, "restart_minutes": 10.0}, "serve": {}}
    plans = {}
    for method in ("monolithic", "benders"):
        path = write_case(tmp_path / method, demand, prices, classes, solver={"method": method})
        plans[method] = make_plan(load_inputs(path), mip_gap=0.0, risk=False)
    mono, dec = plans["monolithic"], plans["benders"]
    assert "benders" in dec.stats and "benders" not in mono.stats
    assert mono.cost["flex_start"] > 0 and mono.purchases["gpus"].sum() > 0  # both kinds matter here
    assert dec.cost["total"] == pytest.approx(mono.cost["total"], rel=1e-6)
    for kind in ("flex_start", "on_demand", "reserved"):
        assert dec.cost[kind] == pytest.approx(mono.cost[kind], rel=1e-5, abs=1e-6)
    np.testing.assert_allclose(dec.purchases["gpus"], mono.purchases["gpus"], rtol=1e-6)


@pytest.mark.parametrize("row,column", [
    (dict(queue_hours_p50=None, queue_hours_p90=3), "queue_hours_p50"),
    (dict(queue_hours_p50=5, queue_hours_p90=3), "queue_hours_p90"),
    (dict(queue_hours_p50=-1, queue_hours_p90=3), "queue_hours_p50"),
    (dict(queue_hours_p50=0, queue_hours_p90=3), "queue_hours_p50"),
    (dict(queue_hours_p50=2, queue_hours_p90=3, max_run_hours=0), "max_run_hours"),
])
def test_bad_queue_times_name_the_cell(tmp_path, row, column):
    flex = price(region="r1", option="flex_start", hourly=2.0, **{k: v for k, v in row.items() if v is not None})
    path = write_case(tmp_path, {"train": [1.0] * 2}, [price(region="r1", hourly=4.0), flex],
                      {"train": {"max_start_delay_hours": 4.0}})
    with pytest.raises(InputError) as err:
        load_inputs(path)
    assert column in str(err.value) and "prices.csv" in str(err.value)


def test_queue_times_on_another_row_and_a_delay_on_an_slo_class_are_refused(tmp_path):
    path = write_case(tmp_path, {"train": [1.0] * 2}, [price(region="r1", hourly=4.0, queue_hours_p50=2)],
                      {"train": {}})
    with pytest.raises(InputError, match="queue_hours_p50"):
        load_inputs(path)
    path = write_case(tmp_path / "b", {"train": [1.0] * 2}, [price(region="r1", hourly=4.0)],
                      {"train": {"max_start_delay_hours": -3.0}})
    with pytest.raises(ConfigError, match="max_start_delay_hours"):
        load_inputs(path)
    path = write_case(tmp_path / "c", {"chat": [10.0] * 2}, [price(region="r1", hourly=4.0)],
                      {"chat": {"demand_unit": "requests_per_s", "latency_slo_ms": 2000, "slo_percentile": 99,
                                "replicas": {"A": {"service_ms": 400, "gpus_per_replica": 1}},
                                "max_start_delay_hours": 1.0}})
    with pytest.raises(ConfigError, match="SLO-sized and has max_start_delay_hours"):
        load_inputs(path)


@pytest.fixture(scope="module")
def flex_plan(tmp_path_factory):
    """models/flex.toml planned with its memo and every output written (the bundled queued-capacity example)."""
    from conftest import ROOT
    from planner.pipeline.run import with_memo, write_outputs

    plan = with_memo(make_plan(load_inputs(ROOT / "models" / "flex.toml")))
    out = tmp_path_factory.mktemp("flex")
    write_outputs(plan, out)
    return plan, out


def test_every_output_carries_flex_start_and_adds_up(flex_plan):
    """plan.json's costs, cash, monthly usage and scenarios, the memo's cash by year, the showback and the FOCUS
    export all count flex-start, and each adds up to the plan's total (the tables a finance reader sums)."""
    import json

    import pandas as pd

    from planner.export.focus import write_focus
    from planner.memo.cash import cash_by_year
    from planner.report.showback import by_class, by_month

    plan, out = flex_plan
    c = plan.cost
    assert c["flex_start"] > 1000 and c["total"] == pytest.approx(
        c["reserved"] + c["on_demand"] + c["spot"] + c["flex_start"], rel=1e-12)
    d = json.loads((out / "plan.json").read_text())
    assert d["cost_usd"]["flex_start"] == pytest.approx(c["flex_start"])
    cash = pd.DataFrame(d["cash_schedule"])
    parts = ["upfront_usd", "reserved_recurring_usd", "on_demand_usd", "spot_usd", "flex_start_usd"]
    np.testing.assert_allclose(cash[parts].sum(axis=1), cash["total_usd"], rtol=1e-12)
    mu = pd.DataFrame(d["monthly_usage"])
    assert mu["flex_start_usd"].sum() == pytest.approx(c["flex_start"], rel=1e-9)
    assert mu["flex_start_gpu_hours"].sum() == pytest.approx(plan.fleet["flex_start"].mul(plan.fleet["hours"]).sum(),
                                                             rel=1e-9)
    years = cash_by_year(plan)
    cal = years[years["basis"] == "calendar"]
    assert cal["flex_start_usd"].sum() == pytest.approx(c["flex_start"], rel=1e-9)
    assert cal["total_usd"].sum() == pytest.approx(cash["total_usd"].sum(), rel=1e-9)
    sb = by_class(plan)
    assert sb["flex_start_usd"].sum() == pytest.approx(c["flex_start"], rel=1e-9)
    assert sb["total_usd"].sum() == pytest.approx(c["total"], rel=1e-9)
    assert by_month(plan)["total_usd"].sum() == pytest.approx(c["total"], rel=1e-9)
    for granularity in ("month", "period"):
        path, *_ = write_focus(out / "plan.json", out / f"focus-{granularity}.csv", granularity=granularity)
        f = pd.read_csv(out / f"focus-{granularity}.csv", low_memory=False)
        assert f.loc[f["x_Option"] == "flex_start", "BilledCost"].sum() == pytest.approx(c["flex_start"], rel=1e-6)
        assert f["BilledCost"].sum() == pytest.approx(c["total"], rel=1e-6)
    memo = plan.memo
    assert memo is not None and "flex_start_usd" in memo.downside


def test_without_flex_start_the_same_model_commits_more_and_costs_more(flex_plan, tmp_path):
    """The docs' figure: the queue is worth something here, and a plan without it commits more GPUs."""
    import pandas as pd

    from conftest import ROOT

    plan, _ = flex_plan
    src = ROOT / "data" / "flex"
    p = pd.read_csv(src / "prices.csv")
    p[p["option"] != "flex_start"].to_csv(tmp_path / "prices.csv", index=False)
    (tmp_path / "demand.csv").write_bytes((src / "demand.csv").read_bytes())
    (tmp_path / "model.toml").write_text((ROOT / "models" / "flex.toml").read_text().replace("../data/flex/", ""))
    without = make_plan(load_inputs(tmp_path / "model.toml"), risk=False)
    assert "flex_start" not in without.cost
    assert without.cost["total"] > plan.cost["total"] * 1.02
    assert without.purchases["gpus"].sum() > plan.purchases["gpus"].sum()


@pytest.mark.slow
@pytest.mark.skipif(__import__("shutil").which("soffice") is None, reason="LibreOffice (soffice) not installed")
def test_the_workbook_recomputes_to_the_plan_with_flex_start(flex_plan, tmp_path):
    """LibreOffice recomputes every formula of the workbook to its stored value, the Summary's flex-start line
    included, and the flex-start columns of Cash by year and Showback add up to the plan's flex-start cost."""
    from conftest import book
    from test_workbook import cached_matches_recomputed

    plan, out = flex_plan
    n, wb = cached_matches_recomputed(out / "plan.xlsx", tmp_path)
    assert n > 100
    summary = {r[0]: r[1] for r in wb["Summary"].iter_rows(values_only=True) if r and r[0]}
    assert summary["Flex-start (queued capacity)"] == pytest.approx(plan.cost["flex_start"], rel=1e-9)
    cby = [r for r in wb["Cash by year"].iter_rows(values_only=True)]
    col = cby[0].index("flex_start_usd")
    total_row = [r for r in cby if r[0] == "total"][0]
    assert total_row[col] == pytest.approx(plan.cost["flex_start"], rel=1e-9)
    sb = [r for r in wb["Showback"].iter_rows(values_only=True)]
    col = sb[0].index("flex_start_usd")
    assert sum(r[col] or 0 for r in sb[1:] if isinstance(r[col], (int, float))) == pytest.approx(
        plan.cost["flex_start"], rel=1e-9)
    assert book(out / "plan.xlsx")["Summary"] is not None  # (the formulas, as loaded by cached_matches_recomputed)


def test_the_backtest_costs_and_the_quota_flavors_count_flex_start(flex_plan):
    """The backtest's per-period costs add flex-start into the total, and the quotas built from the plan get a
    flex-start flavor per pool of its peak use, ranked between the reservation and on-demand (Kueue's order)."""
    from planner.backtest.run import period_costs
    from planner.quotas.build import from_plan
    from planner.quotas.policy import option_rank

    plan, _ = flex_plan
    pc = period_costs(plan)
    assert pc["flex_start"].sum() == pytest.approx(plan.cost["flex_start"], rel=1e-9)
    assert pc["total"].sum() == pytest.approx(plan.cost["total"], rel=1e-9)
    fl = from_plan(plan).flavors
    flex = fl[fl["option"] == "flex_start"]
    f = plan.fleet
    peak = f.groupby(["gpu_type", "region"])["flex_start"].max()
    assert len(flex) == (peak > 1e-6).sum() > 0
    for r in flex.itertuples():
        assert r.capacity_gpus == int(np.ceil(peak[(r.gpu_type, r.region)] - 1e-6)) and not r.preemptible
    assert option_rank("reserved") < option_rank("flex_start") < option_rank("on_demand") < option_rank("spot")


@pytest.mark.slow
@pytest.mark.skipif(__import__("shutil").which("soffice") is None or __import__("shutil").which("pdftotext") is None,
                    reason="LibreOffice or poppler-utils not installed")
def test_the_finance_pack_with_its_memo_prints_at_8_pt_or_more(flex_plan, tmp_path):
    """With the memo on, every finance-pack sheet (Term downside and Downside included, whose long notes once ran
    past the table and shrank the sheet to 5.6 pt) prints at 8 pt or more: median word box >= 10.4 pt."""
    import re
    import statistics
    import subprocess

    from conftest import lo_convert

    _plan, out = flex_plan
    lo_convert(out / "plan.xlsx", tmp_path, "pdf", tmp_path / "lo")
    boxes = subprocess.run(["pdftotext", "-bbox", str(tmp_path / "plan.pdf"), "-"], check=True, capture_output=True,
                           text=True).stdout
    size = {}
    for page in boxes.split("<page ")[1:]:
        words = [(float(a), float(b), w) for a, b, w in
                 re.findall(r'yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)<', page)]
        if not words:
            continue
        bottom = max(w[0] for w in words)
        sheet = " ".join(w[2] for w in words if w[0] >= bottom - 1).split(" Page")[0].split(":")[0]
        body = [b - a for a, b, _w in words if a < bottom - 1]
        if body:
            size[sheet] = min(size.get(sheet, 99.0), statistics.median(body))
    pack = ["Summary", "Cash by year", "Tranches", "Downside", "Term downside", "Purchases"]
    assert set(pack) <= set(size), sorted(size)
    assert all(size[s] >= 10.4 for s in pack), {s: size[s] for s in pack}


def test_compare_and_sweep_show_flex_start_and_their_costs_add_up(tmp_path):
    """`planner compare` with flex-start dearer, and `planner sweep` over the on-demand price (flex-start moves with
    it): both print a flex-start line or column, and every point's cost parts add up to its total."""
    import pandas as pd
    from click.testing import CliRunner

    from conftest import ROOT
    from planner.cli import cli

    src = ROOT / "data" / "flex" / "prices.csv"
    p = pd.read_csv(src)
    p.loc[p["option"] == "flex_start", "hourly_usd"] = 9.0
    p.to_csv(tmp_path / "dear.csv", index=False)
    model = str(ROOT / "models" / "flex.toml")
    r = CliRunner().invoke(cli, ["compare", model, "--prices", str(tmp_path / "dear.csv"), "--out", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.strip().startswith("flex-start"))
    assert "$1,798,078" in line  # the base's flex-start cost, as `planner plan models/flex.toml` (docs/spot-economics.md)
    r = CliRunner().invoke(cli, ["sweep", model, "--on-demand-price", "0.8,1.2", "--jobs", "1",
                                 "--out", str(tmp_path / "s")])
    assert r.exit_code == 0, r.output
    sw = pd.read_csv(tmp_path / "s" / "sweep.csv")
    parts = sw[["reserved_usd", "on_demand_usd", "spot_usd", "flex_start_usd"]].sum(axis=1)
    np.testing.assert_allclose(parts, sw["total_usd"], rtol=1e-9)
    # flex-start is priced off on-demand: its cost moves with the on-demand factor
    assert sw.loc[sw["on_demand_price"] == 0.8, "flex_start_usd"].iat[0] != pytest.approx(
        sw.loc[sw["varied"] == "base", "flex_start_usd"].iat[0], rel=1e-3)


def test_a_purchase_says_its_break_even_against_flex_start_by_hand(tmp_path):
    """The memo's tranche: queued capacity's price per useful GPU-hour is its price over the run share of the
    class that may wait for it (9 h runs, 60-minute restarts: 0.9), and the break-even is the reserved rate over
    that: 1.0 / (2.0 / 0.9) = 45 %."""
    from planner.memo.tranches import tranche_utilisation as tranches

    classes = {"train": {"regions": ["r1"], "max_start_delay_hours": 24.0, "restart_minutes": 60.0}}
    prices = [price(region="r1", hourly=4.0), price(region="r1", option="reserved_1y", hourly=1.0, term_months=12),
              _flex("r1", 1, 1, hourly=2.0, max_run_hours=9)]
    path = write_case(tmp_path, {"train": [100.0] * T}, prices, classes)
    plan = make_plan(load_inputs(path), mip_gap=0.0)
    t = tranches(plan)
    assert len(t) == 1
    assert t["queued_usd_per_useful_gpu_hour"].iat[0] == pytest.approx(2.0 / 0.9, rel=1e-9)
    assert t["break_even_vs_queued"].iat[0] == pytest.approx(0.45, rel=1e-9)
    # a sheet without flex-start: no such break-even
    plain = make_plan(load_inputs(write_case(tmp_path / "plain", {"train": [100.0] * T}, prices[:2],
                                             {"train": {"regions": ["r1"]}})), mip_gap=0.0)
    assert tranches(plain)["break_even_vs_queued"].isna().all()
