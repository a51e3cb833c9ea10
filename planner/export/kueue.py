"""Kueue ``v1beta2`` manifests for a quota policy: ResourceFlavor, Cohort, ClusterQueue, LocalQueue and
WorkloadPriorityClass objects (one YAML file per kind), and the teams' Namespaces (labelled
``planner.inputs.io/team``, which their ClusterQueue admits). Flavors select nodes by the labels
``planner.inputs.io/gpu-type``, ``planner.inputs.io/region`` and ``planner.inputs.io/capacity-type``: put them on the nodes
(or edit ``nodeLabels`` to the labels the nodes have, e.g. ``nvidia.com/gpu.product``).

Cohorts form a tree (Kueue's hierarchical cohorts): the organisation's root Cohort ``gpu-fleet``, optionally
one Cohort per organisation under it, and one Cohort per team (``team-<name>``, carrying the team's
fair-sharing weight) holding the team's ClusterQueue. Each ClusterQueue lists its flavors in the order the
capacity was bought: reservations and owned GPUs first, then queued capacity (DWS), then on-demand, then
spot; Kueue tries them in that order (flavor fungibility: ``whenCanBorrow: MayStopSearch`` borrows idle
reserved GPUs, already paid for, before paying for on-demand; ``whenCanPreempt: TryNextFlavor``)."""

from __future__ import annotations

from planner.core.errors import ConfigError, Problem
from planner.quotas.build import dns_name, label_value, unique_names
from planner.quotas.run import QuotaResult
from planner.quotas.policy import OPTION_ORDER, option_rank  # noqa: F401  (re-exported)

API = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
COHORT = "gpu-fleet"
PRIORITIES = [  # name, value, description
    ("latency-critical", 1000, "SLO-bound serving: never preempted, never borrows"),
    ("guaranteed", 500, "Work within the team's nominal quota"),
    ("preemptible", 100, "Batch and training that tolerate preemption: runs on borrowed quota and spot"),
]


def _qty(x):
    """A quantity as the schema accepts it: an integer, or a decimal string."""
    x = float(x)
    return int(x) if x.is_integer() else f"{x:g}"


def cohort_tree(teams: list[str], names: dict[str, str], weights, organisations: dict[str, str] | None = None):
    """Cohort objects (root, organisations, teams) and each team's cohort name."""
    root = {"apiVersion": API, "kind": "Cohort", "metadata": {"name": COHORT}, "spec": {}}
    out, team_cohort, orgs = [root], {}, {}
    prefixed = unique_names([f"team-{names[t]}" for t in teams])
    for t in teams:
        parent = COHORT
        if organisations and organisations.get(t):
            org = dns_name(f"org-{organisations[t]}")
            if org not in orgs:
                orgs[org] = {"apiVersion": API, "kind": "Cohort", "metadata": {"name": org},
                             "spec": {"parentName": COHORT}}
                out.append(orgs[org])
            parent = org
        name = prefixed[f"team-{names[t]}"]
        team_cohort[t] = name
        out.append({"apiVersion": API, "kind": "Cohort", "metadata": {"name": name, "labels": {
            "planner.inputs.io/team": names[t]}}, "spec": {"parentName": parent,
                                                   "fairSharing": {"weight": _qty(round(float(weights[t]), 6))}}})
    return out, team_cohort


def manifests(r: QuotaResult, organisations: dict[str, str] | None = None) -> dict[str, list[dict]]:
    """The objects per file name; ``organisations`` (team -> organisation) adds a level to the cohort tree."""
    d = r.data
    if len(d.flavors) > 64:
        raise ConfigError(Problem("command line", f"the fleet has {len(d.flavors)} flavors",
                                  expected="at most 64 (Kueue's limit per resource group)",
                                  hint="plan fewer pools, or export a fixed total with --total-gpus"))
    names = unique_names(d.teams)
    flavors = []
    for fl in d.flavors.itertuples():
        spec = {"nodeLabels": {"planner.inputs.io/gpu-type": label_value(fl.gpu_type) or "gpu",
                               "planner.inputs.io/capacity-type": str(fl.option).replace("_", "-")}}
        if fl.region != "any" and label_value(fl.region):
            spec["nodeLabels"]["planner.inputs.io/region"] = label_value(fl.region)
        if fl.preemptible:
            spec["nodeTaints"] = [{"key": "planner.inputs.io/preemptible", "value": "true", "effect": "NoSchedule"}]
            spec["tolerations"] = [{"key": "planner.inputs.io/preemptible", "operator": "Exists", "effect": "NoSchedule"}]
        flavors.append({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": fl.name}, "spec": spec})
    present = [t for t in d.teams if (r.quotas["team"] == t).any()]
    cohort, team_cohort = cohort_tree(present, names, {t: d.weights[i] for i, t in enumerate(d.teams)},
                                      organisations)
    rank = {fl.name: (option_rank(fl.option), i) for i, fl in enumerate(d.flavors.itertuples())}
    queues, local, spaces = [], [], []
    for i, t in enumerate(d.teams):
        q = r.quotas[r.quotas["team"] == t]
        if not len(q):
            continue
        name = names[t]
        q = q.iloc[sorted(range(len(q)), key=lambda j: rank.get(q["flavor"].iat[j], (2, j)))]
        resources = [{"name": row.flavor, "resources": [{
            "name": GPU, "nominalQuota": int(row.nominal_gpus), "borrowingLimit": int(row.borrowing_limit_gpus),
            "lendingLimit": int(row.lending_limit_gpus)}]} for row in q.itertuples()]
        queues.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name, "labels": {
            "planner.inputs.io/team": name}}, "spec": {
            "cohortName": team_cohort[t],
            "namespaceSelector": {"matchLabels": {"planner.inputs.io/team": name}},
            "queueingStrategy": "BestEffortFIFO",
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "fairSharing": {"weight": _qty(round(float(d.weights[i]), 6))},
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                           "borrowWithinCohort": {"policy": "Never"}},
            "resourceGroups": [{"coveredResources": [GPU], "flavors": resources}]}})
        local.append({"apiVersion": API, "kind": "LocalQueue",
                      "metadata": {"name": dns_name(f"{name[:56]}-queue"), "namespace": name},
                      "spec": {"clusterQueue": name}})
        spaces.append({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": name, "labels": {"planner.inputs.io/team": name}}})
    prio = [{"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": n}, "value": v,
             "description": text} for n, v, text in PRIORITIES]
    return {"namespaces.yaml": spaces, "resource-flavors.yaml": flavors, "cohort.yaml": cohort,
            "cluster-queues.yaml": queues, "local-queues.yaml": local, "workload-priority-classes.yaml": prio}
