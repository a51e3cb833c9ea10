"""Issue 27, quotas and their exports: text that must stay text (#2), fair-sharing weights that keep their
ratio or are refused (#9), and a fixed fleet of several GPU types (#11 and "Quotas on a fixed fleet of
several GPU types"): one flavor per type, never GPUs of different types added together."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from openpyxl import load_workbook

from planner import cli as cli_mod
from planner.core.errors import ConfigError
from planner.pipeline.run import load_inputs, make_plan
from planner.quotas.build import from_plan, from_total, integer_weights
from planner.quotas.run import analyse
from conftest import price, write_case
from test_quotas import _validate

GPU = "nvidia.com/gpu"


def run(*args):
    return CliRunner().invoke(cli_mod.cli, [str(a) for a in args])


def add_teams(model: Path, teams: dict[str, dict]) -> Path:
    lines = [f"[teams.{json.dumps(t)}]\n" + "\n".join(f"{k} = {v}" for k, v in kv.items()) for t, kv in teams.items()]
    model.write_text(model.read_text() + "\n" + "\n".join(lines) + "\n")
    return model


# --- #2: a team name that looks like a formula is text on every sheet -----------------------------

EVIL = ["=1+1", '=HYPERLINK("http://example.com/","x")', "+SUM(A1)", "-1+2", "@cmd"]


def test_team_names_that_look_like_formulas_stay_text_in_quotas_xlsx(tmp_path):
    classes = {f"c{i}": {"team": t} for i, t in enumerate(EVIL)}
    m = write_case(tmp_path, {c: [1.0 + i, 3.0, 2.0 * i] for i, c in enumerate(classes)}, [price()], classes)
    r = run("quotas", m, "--total-gpus", 8, "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    wb = load_workbook(tmp_path / "o" / "quotas.xlsx")
    for sheet in ("Quotas", "Replay", "Gaming"):
        ws = wb[sheet]
        assert not [c.coordinate for row in ws.iter_rows() for c in row if c.data_type == "f"], sheet
        names = {c.value for row in ws.iter_rows(min_row=2) for c in row if c.data_type == "s"}
        wanted = set(EVIL) if sheet != "Gaming" else {json.loads((tmp_path / "o" / "quotas.json").read_text())["gamer"]}
        assert wanted <= names, (sheet, wanted - names)


# --- #9: integer fair-sharing weights keep the ratio, or the export is refused --------------------

def _three_teams(tmp_path, weights):
    classes = {f"c{i}": {"team": f"t{i}"} for i in range(len(weights))}
    m = write_case(tmp_path, {c: [4.0, 6.0] for c in classes}, [price()], classes)
    return add_teams(m, {f"t{i}": {"fair_share_weight": w} for i, w in enumerate(weights)})


def test_slurm_fairshare_keeps_a_million_to_one_ratio(tmp_path):
    m = _three_teams(tmp_path, [0.001, 1, 1000])
    r = run("export", "slurm", m, "--total-gpus", 24, "--out", tmp_path / "s")
    assert r.exit_code == 0, r.output
    shares = [int(x) for x in re.findall(r"Fairshare=(\d+)", (tmp_path / "s" / "sacctmgr.sh").read_text())]
    assert shares == [10, 10_000, 10_000_000]  # was 10 : 10000 : 65535, 6.6x instead of 1000x


def test_volcano_refuses_a_ratio_its_weights_cannot_hold(tmp_path):
    m = _three_teams(tmp_path, [0.001, 1, 1000])
    out = tmp_path / "v"
    r = run("export", "volcano", m, "--total-gpus", 24, "--out", out)
    assert r.exit_code == 2, r.output
    assert str(m) in r.output and "teams.t2.fair_share_weight" in r.output and "1000" in r.output
    assert "1..65,535" in r.output
    assert not (out / "queues.yaml").exists()


def test_volcano_keeps_a_ratio_it_can_hold_and_validates(tmp_path):
    m = _three_teams(tmp_path, [1, 1.01, 500])
    r = run("export", "volcano", m, "--total-gpus", 24, "--out", tmp_path / "v")
    assert r.exit_code == 0, r.output
    queues = list(yaml.safe_load_all((tmp_path / "v" / "queues.yaml").read_text()))
    assert [q["spec"]["weight"] for q in queues] == [100, 101, 50000]  # was 10 : 10 : 5000
    for q in queues:
        _validate(q, "scheduling.volcano.sh_v1beta1_Queue.json")


def test_integer_weights_never_move_a_ratio_by_more_than_half_a_percent():
    assert integer_weights([1, 2.5, 1.4]) == [10, 25, 14]  # exact at 10: the usual scale
    assert integer_weights([1, 1.01]) == [100, 101]  # was 10 : 10
    assert integer_weights([3, 1]) == [30, 10]
    rng = np.random.default_rng(7)
    for _ in range(200):
        w = np.exp(rng.uniform(np.log(0.001), np.log(1000), rng.integers(2, 12)))
        got = np.array(integer_weights(w, high=2**31 - 2))
        assert (np.abs(got / got.min() - w / w.min()) <= 0.005 * w / w.min() + 1e-12).all()
    with pytest.raises(ConfigError, match=r"teams\.b\.fair_share_weight.*whole numbers 1\.\.65,535"):
        integer_weights([1, 100_000], ["a", "b"], high=65535)
    with pytest.raises(ConfigError, match=r"teams\.b\.fair_share_weight.*within 0\.5%"):
        integer_weights([1, 1.04, 5000], ["a", "b", "c"], high=65535)


# --- #11: a fixed fleet of several GPU types --------------------------------------------------------

TWO_TYPES = [price("H100", "r1", hourly=10.0), price("A100", "r1", hourly=4.0)]


def _two_type_case(tmp_path):
    """a: H100 only, 100 GPUs; b: A100 only, 60; c: either (A100 at half speed), 40 reference GPUs."""
    classes = {"a": {"team": "ta", "gpu_types": {"H100": 1.0}}, "b": {"team": "tb", "gpu_types": {"A100": 1.0}},
               "c": {"team": "tc", "gpu_types": {"H100": 1.0, "A100": 0.5}}}
    return write_case(tmp_path, {"a": [100.0] * 4, "b": [60.0] * 4, "c": [40.0] * 4}, TWO_TYPES, classes)


def test_one_total_on_two_gpu_types_exits_2_asking_for_totals_per_type(tmp_path):
    m = _two_type_case(tmp_path)
    for cmd in (["quotas", m, "--total-gpus", 350, "--out", tmp_path / "o"],
                ["export", "kueue", m, "--total-gpus", 350, "--out", tmp_path / "k"]):
        r = run(*cmd)
        assert r.exit_code == 2, r.output
        assert "--total-gpus" in r.output and "2 GPU types (A100, H100)" in r.output
        assert "A100=N,H100=N" in r.output
    assert not (tmp_path / "o").exists() and not (tmp_path / "k").exists()


def test_totals_per_type_give_one_flavor_per_type_in_its_own_gpus(tmp_path):
    inp = load_inputs(_two_type_case(tmp_path))
    d = from_total(inp, "H100=150,A100=200")
    assert d.flavors[["name", "gpu_type", "capacity_gpus"]].values.tolist() == [
        ["h100-shared", "H100", 150], ["a100-shared", "A100", 200]]
    teams = {t: i for i, t in enumerate(d.teams)}
    # what is left of each type after the single-type teams, in useful reference GPUs: H100 150 - 100 = 50,
    # A100 (200 - 60) x 0.5 = 70; c's 40 split 50 : 70, each part in that type's GPUs
    assert d.demand[teams["ta"]] == pytest.approx(np.array([[100.0] * 4, [0.0] * 4]))
    assert d.demand[teams["tb"]] == pytest.approx(np.array([[0.0] * 4, [60.0] * 4]))
    assert d.demand[teams["tc"]] == pytest.approx(np.array([[40 * 5 / 12] * 4, [40 * 7 / 12 / 0.5] * 4]))
    assert d.eligible.tolist() == [[True, False], [False, True], [True, True]]
    r = analyse(d)
    for flavor, q in r.quotas.groupby("flavor"):
        assert q["nominal_gpus"].sum() == d.flavors.set_index("name").loc[flavor, "capacity_gpus"]
        assert q["gpu_type"].nunique() == 1


def test_totals_per_type_and_region(tmp_path):
    prices = [price("H100", "r1", hourly=10.0), price("H100", "r2", hourly=11.0), price("A100", "r1", hourly=4.0)]
    classes = {"a": {"team": "ta", "gpu_types": {"H100": 1.0}}, "b": {"team": "tb", "gpu_types": {"A100": 1.0}}}
    inp = load_inputs(write_case(tmp_path, {"a": [30.0] * 3, "b": [20.0] * 3}, prices, classes))
    d = from_total(inp, "H100@r1=40, H100@r2=20, A100=25")
    assert d.flavors[["name", "gpu_type", "region", "capacity_gpus"]].values.tolist() == [
        ["h100-r1-shared", "H100", "r1", 40], ["h100-r2-shared", "H100", "r2", 20],
        ["a100-shared", "A100", "any", 25]]
    assert d.demand[0, :, 0] == pytest.approx([20.0, 10.0, 0.0])  # 30 H100 split 40 : 20
    assert d.demand[1, :, 0] == pytest.approx([0.0, 0.0, 20.0])


@pytest.mark.parametrize("spec,message", [
    ("H100=10,B200=5", "GPU type 'B200' is not in the price sheet"),
    ("H100@r9=10,A100=5", "region 'r9' has no H100 in the price sheet"),
    ("H100=10,H100@r1=5,A100=5", "GPU type 'H100' is given both whole and per region"),
    ("H100=ten,A100=5", "the number of GPUs is not a whole number"),
    ("H100=0,A100=5", "the number of GPUs is not a whole number"),
    ("H100=10", "class 'b' runs on none of the GPUs given"),
    ("H100:10", "the number of GPUs is not a whole number"),
])
def test_bad_totals_exit_2_naming_the_option_and_value(tmp_path, spec, message):
    m = _two_type_case(tmp_path)
    r = run("quotas", m, "--total-gpus", spec, "--out", tmp_path / "o")
    assert r.exit_code == 2, r.output
    assert "--total-gpus" in r.output and message in r.output
    assert not (tmp_path / "o").exists()


def test_exports_carry_a_flavor_per_gpu_type_and_validate(tmp_path):
    m = _two_type_case(tmp_path)
    spec = "H100=150,A100=200"
    cap = {"H100": 150, "A100": 200}
    r = run("export", "kueue", m, "--total-gpus", spec, "--out", tmp_path / "k")
    assert r.exit_code == 0, r.output
    flavors = list(yaml.safe_load_all((tmp_path / "k" / "resource-flavors.yaml").read_text()))
    assert {f["metadata"]["name"]: f["spec"]["nodeLabels"]["planner.inputs.io/gpu-type"] for f in flavors} == {
        "h100-shared": "H100", "a100-shared": "A100"}
    for f in flavors:
        _validate(f, "kueue.x-k8s.io_v1beta2_ResourceFlavor.json")
    nominal = {"h100-shared": 0, "a100-shared": 0}
    for cq in yaml.safe_load_all((tmp_path / "k" / "cluster-queues.yaml").read_text()):
        _validate(cq, "kueue.x-k8s.io_v1beta2_ClusterQueue.json")
        for f in cq["spec"]["resourceGroups"][0]["flavors"]:
            nominal[f["name"]] += f["resources"][0]["nominalQuota"]
    assert nominal == {"h100-shared": 150, "a100-shared": 200}

    r = run("export", "volcano", m, "--total-gpus", spec, "--out", tmp_path / "v")
    assert r.exit_code == 0, r.output
    queues = list(yaml.safe_load_all((tmp_path / "v" / "queues.yaml").read_text()))
    by_type = {"H100": 0, "A100": 0}
    for q in queues:
        _validate(q, "scheduling.volcano.sh_v1beta1_Queue.json")
        gpu = q["metadata"]["labels"]["planner.inputs.io/gpu-type"]
        assert q["spec"]["affinity"]["nodeGroupAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
            gpu.lower()]
        by_type[gpu] += q["spec"]["deserved"][GPU]
        assert q["spec"]["capability"][GPU] <= cap[gpu]  # never more than the type has
    assert by_type == cap
    assert sorted(q["metadata"]["name"] for q in queues) == ["ta-h100", "tb-a100", "tc-a100", "tc-h100"]

    r = run("export", "slurm", m, "--total-gpus", spec, "--out", tmp_path / "s")
    assert r.exit_code == 0, r.output
    text = (tmp_path / "s" / "sacctmgr.sh").read_text()
    tres = re.findall(r"add qos (\S+) GrpTRES=(\S+)", text)
    assert [name for name, _ in tres] == ["ta", "tb", "tc"]
    for name, t in tres:
        assert "gres/gpu=" not in t and all(re.fullmatch(r"gres/gpu:(h100|a100)=\d+", x) for x in t.split(","))
    assert dict(tres)["tc"].count("gres/gpu:") == 2
    conf = (tmp_path / "s" / "slurm.conf.preemption").read_text()
    assert "AccountingStorageTRES=gres/gpu,gres/gpu:h100,gres/gpu:a100" in conf


# --- #11, the plan route: a class on two types is split by its demand, not the solver's hours ------

def test_a_planned_fleet_splits_a_two_type_class_by_its_demand_every_hour(tmp_path):
    # H100 is cheaper per useful GPU but capped at 100: the plan puts the flexible class f on H100 in the
    # hours the H100-only class p leaves it free and on A100 in the others, an arbitrary hourly split
    prices = [price("H100", "r1", hourly=2.0, max_gpus=100), price("A100", "r1", hourly=1.5)]
    classes = {"p": {"team": "tp", "gpu_types": {"H100": 1.0}}, "b": {"team": "tb", "gpu_types": {"A100": 1.0}},
               "f": {"team": "tf", "gpu_types": {"H100": 1.0, "A100": 0.5}}}
    hours = 9
    busy = [100.0 if t % 3 == 0 else 0.0 for t in range(hours)]
    m = write_case(tmp_path, {"p": busy, "b": [60.0] * hours, "f": [50.0] * hours}, prices, classes)
    plan = make_plan(load_inputs(m), mip_gap=0.0, risk=False)
    assert plan.demand_met
    d = from_plan(plan)
    tf = d.teams.index("tf")
    h100 = (d.flavors["gpu_type"] == "H100").to_numpy()
    on_h100, on_a100 = d.demand[tf, h100].sum(axis=0), d.demand[tf, ~h100].sum(axis=0)
    assert on_h100 * 1.0 + on_a100 * 0.5 == pytest.approx(np.full(hours, 50.0))  # all its demand, in type GPUs
    # the same share every hour: 2/3 of its useful GPU-hours were served on H100 by the plan
    assert on_h100 == pytest.approx(np.full(hours, 50.0 * 2 / 3), rel=1e-6)
    assert on_a100 == pytest.approx(np.full(hours, 50.0 / 3 / 0.5), rel=1e-6)
    # so its A100 median is its share of its demand, not 0 with a 100-GPU peak
    q = analyse(d).quotas
    qa = q[(q["team"] == "tf") & (q["gpu_type"] == "A100")]
    assert qa["demand_percentile_gpus"].sum() == pytest.approx(50.0 / 3 / 0.5, rel=1e-6)
    assert qa["demand_peak_gpus"].max() == pytest.approx(50.0 / 3 / 0.5, rel=1e-6)


def test_quotas_json_never_adds_gpus_of_two_types(tmp_path):
    m = _two_type_case(tmp_path)
    r = run("quotas", m, "--total-gpus", "H100=150,A100=200", "--json", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    tc = next(t for t in doc["teams"] if t["team"] == "tc")
    assert tc["nominal_gpus"] is None and set(tc["by_gpu_type"]) == {"H100", "A100"}
    assert sum(t["by_gpu_type"].get("H100", {}).get("nominal_gpus", 0) for t in doc["teams"]) == 150
    assert sum(t["by_gpu_type"].get("A100", {}).get("nominal_gpus", 0) for t in doc["teams"]) == 200
    r = run("quotas", m, "--total-gpus", "H100=150,A100=200", "--out", tmp_path / "o2")
    assert r.exit_code == 0 and "150 H100 + 200 A100 GPUs in 2 flavor(s)" in r.output, r.output
