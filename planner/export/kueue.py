"""Kueue ``v1beta2`` manifests for a quota policy: ResourceFlavor, Cohort, ClusterQueue, LocalQueue and
WorkloadPriorityClass objects (one YAML file per kind), and the teams' Namespaces (labelled
``planner.io/team``, which their ClusterQueue admits). Flavors select nodes by the labels
``planner.io/gpu-type``, ``planner.io/region`` and ``planner.io/capacity-type``: put them on the nodes
(or edit ``nodeLabels`` to the labels the nodes have, e.g. ``nvidia.com/gpu.product``)."""

from __future__ import annotations

from ..errors import ConfigError, Problem
from ..quotas.build import dns_name, label_value, unique_names
from ..quotas.run import QuotaResult

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


def manifests(r: QuotaResult) -> dict[str, list[dict]]:
    """The objects per file name."""
    d = r.data
    if len(d.flavors) > 64:
        raise ConfigError(Problem("command line", f"the fleet has {len(d.flavors)} flavors",
                                  expected="at most 64 (Kueue's limit per resource group)",
                                  hint="plan fewer pools, or export a fixed total with --total-gpus"))
    names = unique_names(d.teams)
    flavors = []
    for fl in d.flavors.itertuples():
        spec = {"nodeLabels": {"planner.io/gpu-type": label_value(fl.gpu_type) or "gpu",
                               "planner.io/capacity-type": str(fl.option).replace("_", "-")}}
        if fl.region != "any" and label_value(fl.region):
            spec["nodeLabels"]["planner.io/region"] = label_value(fl.region)
        if fl.preemptible:
            spec["nodeTaints"] = [{"key": "planner.io/preemptible", "value": "true", "effect": "NoSchedule"}]
            spec["tolerations"] = [{"key": "planner.io/preemptible", "operator": "Exists", "effect": "NoSchedule"}]
        flavors.append({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": fl.name}, "spec": spec})
    cohort = [{"apiVersion": API, "kind": "Cohort", "metadata": {"name": COHORT}, "spec": {}}]
    queues, local, spaces = [], [], []
    for i, t in enumerate(d.teams):
        q = r.quotas[r.quotas["team"] == t]
        if not len(q):
            continue
        name = names[t]
        resources = [{"name": row.flavor, "resources": [{
            "name": GPU, "nominalQuota": int(row.nominal_gpus), "borrowingLimit": int(row.borrowing_limit_gpus),
            "lendingLimit": int(row.lending_limit_gpus)}]} for row in q.itertuples()]
        queues.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name, "labels": {
            "planner.io/team": name}}, "spec": {
            "cohortName": COHORT,
            "namespaceSelector": {"matchLabels": {"planner.io/team": name}},
            "queueingStrategy": "BestEffortFIFO",
            "fairSharing": {"weight": _qty(round(float(d.weights[i]), 6))},
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                           "borrowWithinCohort": {"policy": "Never"}},
            "resourceGroups": [{"coveredResources": [GPU], "flavors": resources}]}})
        local.append({"apiVersion": API, "kind": "LocalQueue",
                      "metadata": {"name": dns_name(f"{name[:56]}-queue"), "namespace": name},
                      "spec": {"clusterQueue": name}})
        spaces.append({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": name, "labels": {"planner.io/team": name}}})
    prio = [{"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": n}, "value": v,
             "description": text} for n, v, text in PRIORITIES]
    return {"namespaces.yaml": spaces, "resource-flavors.yaml": flavors, "cohort.yaml": cohort,
            "cluster-queues.yaml": queues, "local-queues.yaml": local, "workload-priority-classes.yaml": prio}
