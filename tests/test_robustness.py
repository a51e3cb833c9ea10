"""Nothing lost, same inputs give the same plan, and random valid inputs always plan or say why."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cli import cli
from conftest import ROOT, price, solve_case, write_case

KILL_SCRIPT = """
import sys, time
from pathlib import Path
import planner.report as report
real = report.write_workbook
def stalled(plan, path):
    real(plan, path)                      # the new workbook is written to its temporary name ...
    Path(sys.argv[1]).write_text("writing")
    time.sleep(120)                       # ... and the run is killed before it is renamed into place
report.write_workbook = stalled
from planner.cli import cli
cli(["plan", sys.argv[2], "--out", sys.argv[3], "-q"], prog_name="planner")
"""


@pytest.mark.slow
def test_killing_a_run_mid_write_leaves_the_previous_outputs(tmp_path):
    m = write_case(tmp_path, {"c": [5, 6]}, [price(hourly=1.0)], {"c": {}})
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["plan", str(m), "--out", str(out), "-q"]).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.glob("plan.*")}
    (tmp_path / "prices.csv").write_text("gpu_type,region,option,hourly_usd\nA,r1,on_demand,7\n")
    flag = tmp_path / "flag"
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(flag), str(m), str(out)], cwd=ROOT)
    try:
        deadline = time.time() + 120
        while not flag.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert flag.exists(), "the run never reached the write"
    finally:
        proc.kill()
        proc.wait()
    after = {p.name: p.read_bytes() for p in out.glob("plan.*")}
    assert after == before
    assert json.loads(after["plan.json"])["cost_usd"]["total"] == pytest.approx(11.0)


@pytest.mark.slow
def test_same_inputs_same_plan_json_but_timings(tmp_path):
    m = write_case(tmp_path, {"a": [5, 6, 9], "b": [1, 8, 2]},
                   [price(hourly=2.0), price(option="reserved_1y", hourly=1.0),
                    price(option="spot", hourly=0.8, interruptions_per_hour=0.02)],
                   {"a": {}, "b": {"spot": True, "max_spot_share": 0.5}})
    docs = []
    for i in range(2):
        out = tmp_path / f"out{i}"
        assert CliRunner().invoke(cli, ["plan", str(m), "--out", str(out), "-q"]).exit_code == 0
        d = json.loads((out / "plan.json").read_text())
        d.pop("timings_s")
        d.pop("run_id")
        d.pop("created_utc")  # when it was written: differs by design
        d["solver"].pop("seconds")
        docs.append(json.dumps(d, sort_keys=True))
    assert docs[0] == docs[1]


@st.composite
def cases(draw):
    n_periods = draw(st.integers(2, 6))
    n_classes = draw(st.integers(1, 3))
    types = draw(st.lists(st.sampled_from(["A", "B", "C"]), min_size=1, max_size=2, unique=True))
    demand = {f"k{i}": draw(st.lists(st.floats(0, 50, allow_nan=False).map(lambda x: round(x, 2)),
                                     min_size=n_periods, max_size=n_periods)) for i in range(n_classes)}
    prices = []
    capped = False
    for t in types:
        od = draw(st.floats(0.5, 10))
        m = draw(st.sampled_from([1, 8]))
        cap = draw(st.one_of(st.none(), st.floats(0, 40)))
        capped |= cap is not None
        prices.append(price(t, hourly=od, gpus_per_instance=m, max_gpus=cap))
        if draw(st.booleans()):
            prices.append(price(t, option="spot", hourly=od * draw(st.floats(0.2, 1.2)), gpus_per_instance=m,
                                interruptions_per_hour=draw(st.floats(0, 0.2))))
        if draw(st.booleans()):
            prices.append(price(t, option="reserved_1y", hourly=od * draw(st.floats(0.3, 1.1)), gpus_per_instance=m))
    classes = {k: {"spot": draw(st.booleans()), "headroom": draw(st.sampled_from([0.0, 0.1, 0.25])),
                   "job_gpus": draw(st.sampled_from([1, 8, 64]))} for k in demand}
    return demand, prices, classes, capped


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_random_valid_inputs_plan_and_cover_demand(case):
    demand, prices, classes, capped = case
    with tempfile.TemporaryDirectory() as tmp:
        plan = solve_case(write_case(Path(tmp), demand, prices, classes))
    assert plan.status.value == "optimal"
    inp = plan.inputs
    a = plan.allocation_positions
    k = np.array([inp.classes.index(c) for c in a.workload_class], dtype=int)
    pool = {(g, r): i for i, (g, r) in enumerate(zip(inp.pools.gpu_type, inp.pools.region))}
    p = np.array([pool[(g, r)] for g, r in zip(a.gpu_type, a.region)], dtype=int)
    eff = np.where(a.option == "spot", inp.goodput[k, p], inp.reliability[k, p]) * inp.speed[k, p] if len(a) else []
    cover = np.zeros((inp.K, inp.T))
    if len(a):
        np.add.at(cover, (k, a["_t"].to_numpy()), a.gpus.to_numpy() * eff)
    short = np.zeros((inp.K, inp.T))
    for r in plan.shortfall.itertuples():
        short[inp.classes.index(r.workload_class), inp.periods.get_loc(r.period)] = r.unmet_gpus
    need = (1 + inp.headroom)[:, None] * inp.demand[0]
    assert np.all(cover + short >= need - 1e-6)
    if not capped:
        assert plan.shortfall_gpu_hours == 0
        assert plan.cost["total"] <= plan.baseline_all_on_demand * (1 + 1e-9) + 1e-6
