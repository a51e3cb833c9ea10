"""Volcano ``scheduling.volcano.sh/v1beta1`` Queue objects for a quota policy (one per team, or per team and
GPU type when the fleet has several types)."""

from __future__ import annotations

from planner.quotas.build import integer_weights, label_value, unique_names
from planner.quotas.run import QuotaResult

GPU = "nvidia.com/gpu"
WEIGHT_MAX = 65535  # the Queue CRD: spec.weight is an int32 in 1..65535


def _spec(q, weight: int) -> dict:
    nominal = int(q["nominal_gpus"].sum())
    cap = nominal + int(q["borrowing_limit_gpus"].sum())
    keep = nominal - int(q["lending_limit_gpus"].sum())
    spec = {"weight": weight, "reclaimable": True, "capability": {GPU: cap}, "deserved": {GPU: nominal}}
    if keep > 0:
        spec["guarantee"] = {"resource": {GPU: keep}}
    return spec


def manifests(r: QuotaResult) -> dict[str, list[dict]]:
    """One Queue per team: deserved = nominal, capability = nominal + borrowing, guarantee = the part
    of the nominal it does not lend, weight = the fair-sharing weight (integer, 10 for the smallest, finer
    when 10 would move a ratio by more than 0.5%; refused when 1..65535 cannot hold the ratios),
    reclaimable: what a queue holds above its deserved share (borrowed) can be taken back.

    All GPU types are the one resource ``nvidia.com/gpu``, so a fleet of several types gets one Queue per
    team and type (``<team>-<type>``, labelled ``planner.inputs.io/team`` and ``planner.inputs.io/gpu-type``), pinned to
    the type's nodes by ``affinity.nodeGroupAffinity`` (node group = the type's DNS name: label the nodes
    ``volcano.sh/nodegroup-name=<it>``): a team's H100 and A100 GPUs are never added together."""
    d = r.data
    names = unique_names(d.teams)
    weights = integer_weights(d.weights, d.teams, high=WEIGHT_MAX, what="Volcano queue weights", source=r.model)
    types = list(dict.fromkeys(d.flavors["gpu_type"]))
    groups = unique_names(types) if len(types) > 1 else {}
    pairs = unique_names([f"{names[t]}\x00{groups[g]}" for t, g in
                          r.quotas[["team", "gpu_type"]].drop_duplicates().itertuples(index=False)]) if groups else {}
    out = []
    for i, t in enumerate(d.teams):
        q = r.quotas[r.quotas["team"] == t]
        if not len(q):
            continue
        if not groups:
            out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                        "metadata": {"name": names[t]}, "spec": _spec(q, weights[i])})
            continue
        for gpu, qt in q.groupby("gpu_type", sort=False):
            spec = _spec(qt, weights[i])
            spec["affinity"] = {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [groups[gpu]]}}
            out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                        "metadata": {"name": pairs[f"{names[t]}\x00{groups[gpu]}"],
                                     "labels": {"planner.inputs.io/team": names[t],
                                                "planner.inputs.io/gpu-type": label_value(gpu) or groups[gpu]}},
                        "spec": spec})
    return {"queues.yaml": out}
