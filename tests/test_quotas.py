"""Teams, quota policy, replay, gaming and the scheduler exports (Kueue, Volcano, Slurm)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from planner import cli as cli_mod
from planner.pipeline.run import load_inputs
from planner.quotas.build import from_total
from planner.quotas.policy import flavor_quotas, waterfill
from planner.quotas.replay import admitted, jain_index, measure
from planner.quotas.run import analyse
from conftest import price, write_case

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "quotas.toml"
SCHEMAS = ROOT.parent / "shared" / "schemas"


@pytest.fixture(scope="module")
def result():
    return analyse(from_total(load_inputs(MODEL), 1024))


# --- policy ----------------------------------------------------------------------------------------

def test_waterfill_by_hand():
    # 10 among caps 2, 8, 8 with weights 1, 1, 2: level 8/3 -> 2, 8/3, 16/3
    assert waterfill(10, [2, 8, 8], [1, 1, 2]) == pytest.approx([2, 8 / 3, 16 / 3])
    assert waterfill(100, [2, 8, 8], [1, 1, 1]) == pytest.approx([2, 8, 8])


def test_quotas_fill_the_flavor_and_respect_floors_and_weights():
    d = np.array([[100.0] * 10, [300.0] * 10, [50.0] * 5 + [400.0] * 5])
    q = flavor_quotas(d, 300, np.array([1.0, 1.0, 2.0]), np.array([0.0, 0.0, 100.0]))
    # floor 100 first, then 200 by weight 1:1:2 up to the targets (100, 300, 225): 50, 50, 100 more
    assert q["nominal_gpus"].tolist() == [50, 50, 200]
    assert q["lending_limit_gpus"].tolist() == [50, 50, 100]  # the floor is never lent
    assert (q["borrowing_limit_gpus"] + q["nominal_gpus"] <= 300).all()


def test_bundled_quotas_add_up(result):
    q = result.quotas
    for flavor, df in q.groupby("flavor"):
        cap = int(df["capacity_gpus"].iat[0])
        assert df["nominal_gpus"].sum() <= cap
        assert (df["borrowing_limit_gpus"] <= cap - df["nominal_gpus"]).all()
        assert (df["lending_limit_gpus"] <= df["nominal_gpus"]).all()
        # borrowing never exceeds what the rest of the cohort can lend
        lendable = df["lending_limit_gpus"].sum() - df["lending_limit_gpus"]
        assert (df["borrowing_limit_gpus"] <= lendable + (cap - df["nominal_gpus"].sum())).all()
        for col in ("nominal_gpus", "borrowing_limit_gpus", "lending_limit_gpus"):
            assert df[col].map(lambda v: float(v).is_integer()).all()
    serving = q[q["team"] == "serving"].iloc[0]
    assert serving["nominal_gpus"] >= 160 and serving["lending_limit_gpus"] == serving["nominal_gpus"] - 160


# --- replay ----------------------------------------------------------------------------------------

def test_replay_invariants(result):
    d = result.data
    dem = d.demand[:, 0].T
    q = result.quotas.set_index("team").loc[d.teams].reset_index()
    for policy in ("quota", "quota_hardened", "equal_split", "fcfs"):
        a = admitted(policy, dem, 1024, q, d.weights)
        assert (a <= dem + 1e-6).all()  # nobody gets more than it asks
        assert (a.sum(axis=1) <= 1024 + 1e-6).all()  # the pool is never over-allocated
    # the quota policy meets every team's guarantee, min(demand, nominal), every hour
    a = admitted("quota", dem, 1024, q, d.weights)
    assert (a >= np.minimum(dem, q["nominal_gpus"].to_numpy()[None, :]) - 1e-6).all()


def test_equal_weights_and_identical_demand_are_perfectly_fair():
    rng = np.random.default_rng(1)
    one = rng.uniform(0, 200, 100)
    dem = np.stack([one] * 4, axis=1)
    q = flavor_quotas(dem.T, 400, np.ones(4), np.zeros(4))
    for policy in ("quota", "equal_split"):
        r = measure(list("abcd"), dem, admitted(policy, dem, 400, q, np.ones(4)), np.ones(100), 400)
        assert r.jain == pytest.approx(1.0)
    assert jain_index(np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(0.25)


def test_gaming_table_has_every_behaviour_and_policy(result):
    g = result.gaming
    assert set(g["behaviour"]) == {"inflate", "hoard", "split", "priority"}
    assert set(g["policy"]) == {"quota", "quota_hardened", "equal_split", "fcfs"}
    hardened = g[g["policy"] == "quota_hardened"].set_index("behaviour")
    # the countermeasures remove the gains of inflating and of priority
    assert hardened.loc["inflate", "gamer_gain_gpu_hours"] <= 1e-6
    assert hardened.loc["priority", "gamer_gain_gpu_hours"] <= 1e-6
    # jumping the fair share with priority pays under plain quotas, at the others' expense, one for one
    plain = g[g["policy"] == "quota"].set_index("behaviour")
    assert plain.loc["priority", "gamer_gain_gpu_hours"] > 0
    assert plain.loc["priority", "others_loss_gpu_hours"] == pytest.approx(
        plain.loc["priority", "gamer_gain_gpu_hours"], rel=1e-6)


# --- exports ---------------------------------------------------------------------------------------

def _strict(schema):
    """The schema with additionalProperties: false on every object that lists its properties."""
    s = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                node.setdefault("additionalProperties", False)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(s)
    return s


def _validate(doc, kind_file):
    jsonschema = pytest.importorskip("jsonschema")
    path = SCHEMAS / kind_file
    if not path.exists():
        pytest.skip("../shared/schemas not present")
    jsonschema.Draft4Validator(_strict(json.loads(path.read_text()))).validate(doc)


def _export(kind, tmp_path):
    out = tmp_path / kind
    r = CliRunner().invoke(cli_mod.cli, ["export", kind, str(MODEL), "--total-gpus", "1024", "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out


@pytest.mark.slow
def test_kueue_manifests_validate_against_the_crds(tmp_path):
    out = _export("kueue", tmp_path)
    files = {"resource-flavors.yaml": "ResourceFlavor", "cohort.yaml": "Cohort",
             "cluster-queues.yaml": "ClusterQueue", "local-queues.yaml": "LocalQueue",
             "workload-priority-classes.yaml": "WorkloadPriorityClass"}
    docs = {}
    for name, kind in files.items():
        docs[kind] = list(yaml.safe_load_all((out / name).read_text()))
        for doc in docs[kind]:
            assert doc["apiVersion"] == "kueue.x-k8s.io/v1beta2" and doc["kind"] == kind
            assert doc["metadata"]["name"]
            _validate(doc, f"kueue.x-k8s.io_v1beta2_{kind}.json")
    flavors = {d["metadata"]["name"] for d in docs["ResourceFlavor"]}
    cap = 1024
    nominal = 0
    for cq in docs["ClusterQueue"]:
        spec = cq["spec"]
        assert spec["cohortName"]  # CEL: borrowingLimit must be nil when cohort is empty
        for rg in spec["resourceGroups"]:
            names = [f["name"] for f in rg["flavors"]]
            assert len(names) == len(set(names)) and set(names) <= flavors  # list-map keys unique, known
            for f in rg["flavors"]:
                # CEL: each flavor lists as many resources as coveredResources, in the same order (webhook)
                assert [r["name"] for r in f["resources"]] == rg["coveredResources"]
                for r in f["resources"]:
                    for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                        assert isinstance(r[key], int) and r[key] >= 0  # whole GPUs
                    assert r["lendingLimit"] <= r["nominalQuota"]
                    nominal += r["nominalQuota"]
        p = spec["preemption"]  # CEL: reclaimWithinCohort=Never forbids borrowWithinCohort != Never
        assert not (p.get("reclaimWithinCohort", "Never") == "Never"
                    and p.get("borrowWithinCohort", {}).get("policy", "Never") != "Never")
    assert nominal <= cap
    queues = {cq["metadata"]["name"] for cq in docs["ClusterQueue"]}
    assert {lq["spec"]["clusterQueue"] for lq in docs["LocalQueue"]} == queues
    assert all(lq["metadata"]["namespace"] for lq in docs["LocalQueue"])


@pytest.mark.slow
def test_volcano_queues_validate(tmp_path):
    out = _export("volcano", tmp_path)
    for q in yaml.safe_load_all((out / "queues.yaml").read_text()):
        _validate(q, "scheduling.volcano.sh_v1beta1_Queue.json")
        s = q["spec"]
        gpu = "nvidia.com/gpu"
        assert 1 <= s["weight"] <= 65535
        assert s["capability"][gpu] >= s["deserved"][gpu] >= s.get("guarantee", {}).get("resource", {}).get(gpu, 0)


@pytest.mark.slow
def test_slurm_commands_match_the_golden_files(tmp_path):
    out = _export("slurm", tmp_path)
    for name in ("sacctmgr.sh", "slurm.conf.preemption"):
        golden = ROOT / "tests" / "golden" / f"quotas-{name}"
        assert (out / name).read_text() == golden.read_text(), f"{name} differs from {golden}"


def kueue_of_two_teams(tmp_path):
    """Team x (on-demand or reserved) and team y (spot allowed) on one pool, exported as Kueue manifests: the
    output folder."""
    prices = [price(hourly=10.0), price(option="spot", hourly=3.0, interruptions_per_hour=0.01),
              price(option="reserved_1y", hourly=4.0, term_months=12)]
    m = write_case(tmp_path, {"a": [4, 8, 4, 8], "b": [2, 2, 6, 6]}, prices,
                   {"a": {"team": "x"}, "b": {"spot": True, "team": "y"}}, solver={"backend": "highs"})
    out = tmp_path / "k"
    r = CliRunner().invoke(cli_mod.cli, ["export", "kueue", str(m), "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out


def test_kueue_export_of_a_planned_fleet_has_a_flavor_per_option(tmp_path):
    out = kueue_of_two_teams(tmp_path)
    flavors = list(yaml.safe_load_all((out / "resource-flavors.yaml").read_text()))
    spot = [f for f in flavors if f["spec"]["nodeLabels"]["planner.inputs.io/capacity-type"] == "spot"]
    for f in spot:  # preemptible capacity is tainted
        assert f["spec"]["nodeTaints"][0]["effect"] == "NoSchedule"
        _validate(f, "kueue.x-k8s.io_v1beta2_ResourceFlavor.json")


# --- command line and bad input --------------------------------------------------------------------

@pytest.mark.slow
def test_quotas_json_has_teams_and_gaming(tmp_path):
    r = CliRunner().invoke(cli_mod.cli, ["quotas", str(MODEL), "--total-gpus", "1024", "--json",
                                         "--out", str(tmp_path / "q")])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert len(d["teams"]) == 8 and len(d["gaming"]) == 16
    assert sum(t["nominal_gpus"] for t in d["teams"]) == 1024
    assert (tmp_path / "q" / "quotas.xlsx").exists()
    # latency-critical means a latency SLO: pretraining kept off spot (spot = false, no SLO) is not
    team = {t["team"]: t for t in d["teams"]}
    assert team["llm"]["latency_critical"] is False and team["llm"]["preemptible_work"] is False
    assert not any(t["latency_critical"] for t in d["teams"])  # no class of the bundled model declares an SLO


@pytest.mark.parametrize("teams,message", [
    ({"nobody": {"fair_share_weight": 1}}, "'teams.nobody' is not the team of any class"),
    ({"x": {"fair_share_weight": 0}}, "'teams.x.fair_share_weight' out of range (got 0); expected a weight between 0.001 and 1000"),
    ({"x": {"guaranteed_gpus": -5}}, "'teams.x.guaranteed_gpus' out of range (got -5); expected GPUs >= 0"),
])
def test_bad_team_exits_2(tmp_path, teams, message):
    lines = "\n".join(f"[teams.{t}]\n" + "\n".join(f"{k} = {v}" for k, v in kv.items()) for t, kv in teams.items())
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price()], {"a": {"team": "x"}})
    m.write_text(m.read_text() + "\n" + lines + "\n")
    r = CliRunner().invoke(cli_mod.cli, ["quotas", str(m), "--total-gpus", "8", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2, r.output
    assert str(m) in r.output and message in r.output
    assert not (tmp_path / "o").exists()


def test_the_strict_validator_rejects_what_the_api_server_would():
    jsonschema = pytest.importorskip("jsonschema")
    bad = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "a"},
           "spec": {"cohort": "fleet"}}  # v1beta1's field name: unknown in v1beta2
    with pytest.raises(jsonschema.ValidationError):
        _validate(bad, "kueue.x-k8s.io_v1beta2_ClusterQueue.json")
    half = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "a"},
            "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
                {"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 0.5}]}]}]}}
    with pytest.raises(jsonschema.ValidationError):  # a float is not a quantity
        _validate(half, "kueue.x-k8s.io_v1beta2_ClusterQueue.json")


@pytest.mark.slow
def test_showback_adds_up_to_the_total_by_class_and_team(example_plan):
    from planner.report.showback import by_class, by_team

    plan = example_plan[0] if isinstance(example_plan, tuple) else example_plan
    c = by_class(plan)
    assert c["total_usd"].sum() == pytest.approx(plan.cost["total"], rel=1e-9)
    assert by_team(plan)["total_usd"].sum() == pytest.approx(plan.cost["total"], rel=1e-9)
    # on-demand and spot are the classes' own; reserved = used + idle share of every purchase
    assert c["on_demand_usd"].sum() == pytest.approx(plan.cost["on_demand"], rel=1e-9)
    assert c["spot_usd"].sum() == pytest.approx(plan.cost["spot"], rel=1e-9)
    assert (c["reserved_used_usd"] + c["reserved_idle_usd"]).sum() == pytest.approx(plan.cost["reserved"], rel=1e-9)


# --- defects found by the independent review of #13, each now a test -------------------------------

def test_team_names_that_collide_or_are_not_latin_get_distinct_valid_names(tmp_path):
    import re

    from planner.quotas.build import unique_names

    names = unique_names(["team a", "Team-A", "视觉团队", "语音团队", "x" * 62 + "z", "ok"])
    assert len(set(names.values())) == 6
    rx = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    assert all(rx.match(v) and len(v) <= 63 for v in names.values())
    assert names["ok"] == "ok"
    classes = {f"c{i}": {"team": t} for i, t in enumerate(["team a", "Team-A", "视觉团队", "x" * 62 + "z"])}
    m = write_case(tmp_path, {c: [1.0, 2.0] for c in classes}, [price()], classes)
    out = tmp_path / "k"
    r = CliRunner().invoke(cli_mod.cli, ["export", "kueue", str(m), "--total-gpus", "16", "--out", str(out)])
    assert r.exit_code == 0, r.output
    for f in ("cluster-queues.yaml", "local-queues.yaml", "namespaces.yaml"):
        docs = list(yaml.safe_load_all((out / f).read_text()))
        assert len({d["metadata"]["name"] for d in docs}) == 4
        assert all(rx.match(d["metadata"]["name"]) for d in docs)


def test_integer_weights_keep_their_ratio():
    from planner.quotas.build import integer_weights

    assert integer_weights([1, 2.5, 1.4]) == [10, 25, 14]


def test_guarantees_beyond_the_fleet_exit_2(tmp_path):
    m = write_case(tmp_path, {"a": [100.0, 200.0], "b": [100.0, 200.0]}, [price()],
                   {"a": {"team": "x"}, "b": {"team": "y"}})
    m.write_text(m.read_text() + "\n[teams.x]\nguaranteed_gpus = 600\n[teams.y]\nguaranteed_gpus = 600\n")
    r = CliRunner().invoke(cli_mod.cli, ["quotas", str(m), "--total-gpus", "1024", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "guaranteed_gpus add up to more than the fleet" in r.output, r.output


def test_a_guarantee_above_the_peak_is_not_locked_idle():
    d = np.array([[10.0, 20.0], [100.0, 100.0]])
    q = flavor_quotas(d, 200, np.ones(2), np.array([150.0, 0.0]))
    assert q["guaranteed_floor_gpus"].iat[0] == 20  # capped at the team's peak
    assert q["nominal_gpus"].sum() == 200 and q["lending_limit_gpus"].iat[0] == q["nominal_gpus"].iat[0] - 20


@pytest.mark.slow
def test_hours_are_counted_once_per_team_across_flavors(example_plan):
    from planner.quotas.build import from_plan

    plan = example_plan[0]  # the example planned by HiGHS (the session's plan: it was planned again here)
    assert len(plan.inputs.scenarios) == 1  # (one scenario: the risk view it skipped changes nothing)
    r = analyse(from_plan(plan))
    H = plan.inputs.horizon_hours
    assert (r.replay["hours_waiting"] <= H + 1e-9).all()
    assert (r.replay["hours_below_guarantee"] <= H + 1e-9).all()
    assert (r.gaming[["gamer_gain_gpu_hours", "others_loss_gpu_hours"]].abs() >= 0).all().all()


@pytest.mark.slow
def test_an_unwritable_output_folder_is_a_clean_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = CliRunner().invoke(cli_mod.cli, ["quotas", str(MODEL), "--total-gpus", "1024", "--out", str(blocker / "sub")])
    assert r.exit_code == 2 and "Error: cannot write" in r.output and "Internal error" not in r.output
