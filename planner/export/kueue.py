"""Kueue ``v1beta2`` manifests for a quota policy: ResourceFlavor, Cohort, ClusterQueue, LocalQueue and
WorkloadPriorityClass objects (one YAML file per kind)."""

from __future__ import annotations

from ..quotas.build import dns_name
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
    flavors = []
    for fl in d.flavors.itertuples():
        spec = {"nodeLabels": {"nvidia.com/gpu.product": str(fl.gpu_type)[:63],
                               "planner.io/capacity-type": str(fl.option).replace("_", "-")}}
        if fl.region != "any":
            spec["nodeLabels"]["topology.kubernetes.io/region"] = str(fl.region)[:63]
        if fl.preemptible:
            spec["nodeTaints"] = [{"key": "planner.io/preemptible", "value": "true", "effect": "NoSchedule"}]
            spec["tolerations"] = [{"key": "planner.io/preemptible", "operator": "Exists", "effect": "NoSchedule"}]
        flavors.append({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": fl.name}, "spec": spec})
    cohort = [{"apiVersion": API, "kind": "Cohort", "metadata": {"name": COHORT}, "spec": {}}]
    queues, local = [], []
    for i, t in enumerate(d.teams):
        q = r.quotas[r.quotas["team"] == t]
        if not len(q):
            continue
        name = dns_name(t)
        resources = [{"name": row.flavor, "resources": [{
            "name": GPU, "nominalQuota": int(row.nominal_gpus), "borrowingLimit": int(row.borrowing_limit_gpus),
            "lendingLimit": int(row.lending_limit_gpus)}]} for row in q.itertuples()]
        queues.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name, "labels": {
            "planner.io/team": name}}, "spec": {
            "cohortName": COHORT,
            "namespaceSelector": {"matchLabels": {"planner.io/team": name}},
            "queueingStrategy": "BestEffortFIFO",
            "fairSharing": {"weight": _qty(d.weights[i])},
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                           "borrowWithinCohort": {"policy": "Never"}},
            "resourceGroups": [{"coveredResources": [GPU], "flavors": resources}]}})
        local.append({"apiVersion": API, "kind": "LocalQueue",
                      "metadata": {"name": f"{name}-queue"[:63], "namespace": name},
                      "spec": {"clusterQueue": name}})
    prio = [{"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": n}, "value": v,
             "description": text} for n, v, text in PRIORITIES]
    return {"resource-flavors.yaml": flavors, "cohort.yaml": cohort, "cluster-queues.yaml": queues,
            "local-queues.yaml": local, "workload-priority-classes.yaml": prio}
