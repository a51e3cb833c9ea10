"""Kueue cohort tree and flavor order, Slurm GPU-hour budgets (GrpTRESMins) and their replay by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from planner import cli as cli_mod
from planner.export import kueue
from planner.quotas.budgets import replay_with_budgets, reset_period
from planner.quotas.build import TeamDemand

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT.parent / "shared" / "schemas"


def _validate(doc, kind):
    jsonschema = pytest.importorskip("jsonschema")
    from test_quotas import _strict

    path = SCHEMAS / f"kueue.x-k8s.io_v1beta2_{kind}.json"
    if not path.exists():
        pytest.skip("../shared/schemas not present")
    jsonschema.Draft4Validator(_strict(json.loads(path.read_text()))).validate(doc)


def _two_teams(hours=4):
    flavors = pd.DataFrame({"name": ["a-r1-reserved"], "gpu_type": ["A"], "region": ["r1"], "option": ["reserved"],
                            "capacity_gpus": [10.0], "preemptible": [False]})
    demand = np.zeros((2, 1, hours))
    demand[0, 0, :] = 8.0  # team x wants 8 GPUs every hour
    demand[1, 0, :] = 2.0  # team y wants 2
    data = TeamDemand(["x", "y"], flavors, demand, np.ones((2, 1), bool), np.ones(hours), np.ones(2), np.zeros(2),
                      {"x": ["cx"], "y": ["cy"]}, {"x": False, "y": False}, {"x": False, "y": False})
    quotas = pd.DataFrame({"team": ["x", "y"], "flavor": ["a-r1-reserved"] * 2, "nominal_gpus": [5.0, 5.0],
                           "borrowing_limit_gpus": [5.0, 5.0], "lending_limit_gpus": [5.0, 5.0]})
    return data, quotas


def test_budget_replay_by_hand_two_teams():
    # Without budgets x gets 5 of its own + 3 lent by y = 8 every hour (32 GPU-hours), y gets 2 (8).
    # With a 20 GPU-hour budget x gets 8, 8, then the 4 left, then nothing: 20, cut off in hours 3 and 4.
    data, quotas = _two_teams()
    r = replay_with_budgets(data, quotas, [20.0, np.inf]).set_index("team")
    assert r.loc["x", "admitted_without_budget_gpu_hours"] == pytest.approx(32)
    assert r.loc["x", "admitted_with_budget_gpu_hours"] == pytest.approx(20)
    assert r.loc["x", "hours_cut_off"] == 2 and r.loc["x", "first_hour_cut_off"] == 2
    assert r.loc["y", "admitted_with_budget_gpu_hours"] == pytest.approx(8)
    assert r.loc["y", "hours_cut_off"] == 0
    # a budget of 0 for y: x can borrow what y no longer runs, still capped by its borrowing limit (10 in all)
    r = replay_with_budgets(data, quotas, [np.inf, 0.0]).set_index("team")
    assert r.loc["y", "admitted_with_budget_gpu_hours"] == 0
    assert r.loc["x", "admitted_with_budget_gpu_hours"] == pytest.approx(32)


def test_reset_period_covers_the_horizon():
    assert reset_period(24) == ("DAILY", 24.0)
    assert reset_period(28 * 24)[0] == "MONTHLY"
    assert reset_period(90 * 24)[0] == "QUARTERLY"
    assert reset_period(400 * 24)[0] == "YEARLY"


def test_kueue_cohort_tree_and_flavor_order(tmp_path):
    from test_quotas import kueue_of_two_teams

    out = kueue_of_two_teams(tmp_path)
    docs = {name: list(yaml.safe_load_all((out / name).read_text())) for name in
            ("cohort.yaml", "cluster-queues.yaml", "resource-flavors.yaml", "local-queues.yaml",
             "workload-priority-classes.yaml")}
    kinds = {"cohort.yaml": "Cohort", "cluster-queues.yaml": "ClusterQueue", "resource-flavors.yaml": "ResourceFlavor",
             "local-queues.yaml": "LocalQueue", "workload-priority-classes.yaml": "WorkloadPriorityClass"}
    for name, objs in docs.items():
        for doc in objs:
            _validate(doc, kinds[name])
    cohorts = {c["metadata"]["name"]: c["spec"].get("parentName") for c in docs["cohort.yaml"]}
    assert cohorts["gpu-fleet"] is None  # the organisation's root
    assert len(cohorts) == 3 and all(parent == "gpu-fleet" for name, parent in cohorts.items() if name != "gpu-fleet")
    capacity = {f["metadata"]["name"]: f["spec"]["nodeLabels"]["planner.inputs.io/capacity-type"]
                for f in docs["resource-flavors.yaml"]}
    rank = {"reserved": 0, "on-demand": 2, "spot": 3}
    for cq in docs["cluster-queues.yaml"]:
        assert cq["spec"]["cohortName"] == f"team-{cq['metadata']['name']}" and cq["spec"]["cohortName"] in cohorts
        assert cq["spec"]["flavorFungibility"]["whenCanBorrow"] == "MayStopSearch"
        order = [capacity[f["name"]] for f in cq["spec"]["resourceGroups"][0]["flavors"]]
        assert [rank[o] for o in order] == sorted(rank[o] for o in order), order
    assert any(len(cq["spec"]["resourceGroups"][0]["flavors"]) >= 2 for cq in docs["cluster-queues.yaml"])


def test_cohort_tree_with_organisations():
    objs, team_cohort = kueue.cohort_tree(["x", "y", "z"], {"x": "x", "y": "y", "z": "z"}, {"x": 1, "y": 2.5, "z": 1},
                                          {"x": "Research", "y": "Research", "z": "Product"})
    parent = {o["metadata"]["name"]: o["spec"].get("parentName") for o in objs}
    assert parent == {"gpu-fleet": None, "org-research": "gpu-fleet", "org-product": "gpu-fleet",
                      "team-x": "org-research", "team-y": "org-research", "team-z": "org-product"}
    assert team_cohort == {"x": "team-x", "y": "team-y", "z": "team-z"}
    for o in objs:
        _validate(o, "Cohort")
    assert [o["spec"]["fairSharing"]["weight"] for o in objs if o["metadata"]["name"] == "team-y"] == ["2.5"]


def test_option_rank_is_purchase_order():
    opts = ["spot", "on_demand", "reserved_3y", "dws", "owned"]
    assert sorted(opts, key=kueue.option_rank) == ["reserved_3y", "owned", "dws", "on_demand", "spot"]


@pytest.mark.slow
def test_slurm_budgets_on_the_bundled_teams(tmp_path):
    out = tmp_path / "s"
    r = CliRunner().invoke(cli_mod.cli, ["export", "slurm", str(ROOT / "models" / "quotas.toml"), "--total-gpus",
                                         "1024", "--gpu-hour-budgets", "0.8", "--out", str(out)])
    assert r.exit_code == 0, r.output
    b = pd.read_csv(out / "budgets.csv")
    text = (out / "sacctmgr.sh").read_text()
    for row in b.itertuples():
        assert f"add qos {row.team} GrpTRES=" in text and f"GrpTRESMins=gres/gpu={row.grp_tres_mins} " in text
        assert row.grp_tres_mins == int(np.ceil(round(row.budget_gpu_hours * 60, 6)))
        # with 80 % of what the quota gave, each team gets at most its budget over the horizon
        assert row.admitted_with_budget_gpu_hours <= row.horizon_budget_gpu_hours + 1e-6
        assert row.admitted_with_budget_gpu_hours <= row.admitted_without_budget_gpu_hours + 1e-6
    assert "PriorityDecayHalfLife=0" in (out / "slurm.conf.preemption").read_text()
    assert (b.hours_cut_off > 0).any()


def _straddling_a_week():
    """Two teams on 10 GPUs, x wants 8 and y 2 every period; four daily periods from Saturday 2027-01-30: Slurm's
    WEEKLY reset (Sunday 00:00) falls after the first day."""
    data, _ = _two_teams(hours=4)
    data.hours = np.full(4, 24.0)
    data.periods = pd.date_range("2027-01-30", periods=4, freq="D")
    from planner.quotas.run import analyse

    return analyse(data)


def test_budget_replay_resets_with_slurm():
    """Issue 36 item 2: the replay spends the budget Slurm is given (GrpTRESMins / 60 per period), fresh at each
    reset; it spent one horizon's pro-rata budget once (384 GPU-hours for x at SLACK 0.5, cut after two days)."""
    from planner.quotas.budgets import budget_periods, budget_table

    r = _straddling_a_week()
    assert budget_periods("WEEKLY", r.data.hours, r.data.periods).tolist() == [0, 1, 1, 1]
    assert budget_periods("WEEKLY", r.data.hours).tolist() == [0, 0, 0, 0]  # no timestamps: from the start
    # x held 8 x 96 = 768 GPU-hours; 96 h -> WEEKLY; per week 768 x 168 / 96 x 0.5 = 672 GPU-hours (40,320 min).
    # Saturday: 192 of a fresh 672; Sunday to Tuesday: 576 of a fresh 672: x is never cut off, 768 admitted.
    b = budget_table(r, 0.5).set_index("team")
    assert b.loc["x", "reset_period"] == "WEEKLY" and b.loc["x", "grp_tres_mins"] == 40320
    assert b.loc["x", "reset_periods"] == 2 and b.loc["x", "horizon_budget_gpu_hours"] == pytest.approx(1344)
    assert b.loc["x", "admitted_with_budget_gpu_hours"] == pytest.approx(768)
    assert b.loc["x", "hours_cut_off"] == 0
    # SLACK 0.2: 268.8 GPU-hours a week. Saturday 192 (76.8 left, lost at the reset); Sunday 192 of a fresh 268.8,
    # Monday the 76.8 left (3.2 GPUs for 24 h), then nothing: 192 + 268.8 = 460.8, cut off Monday and Tuesday.
    b = budget_table(r, 0.2).set_index("team")
    assert b.loc["x", "budget_gpu_hours"] == pytest.approx(268.8)
    assert b.loc["x", "admitted_with_budget_gpu_hours"] == pytest.approx(460.8)
    assert b.loc["x", "hours_cut_off"] == 48 and b.loc["x", "first_hour_cut_off"] == 2
    # y the same way: 192 x 1.75 x 0.2 = 67.2 a week: Saturday 48, then 48 + 19.2 of a fresh 67.2: 115.2
    assert b.loc["y", "admitted_with_budget_gpu_hours"] == pytest.approx(48 + 67.2)
