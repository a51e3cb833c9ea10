"""Volcano ``scheduling.volcano.sh/v1beta1`` Queue objects for a quota policy (one per team)."""

from __future__ import annotations

from ..quotas.build import integer_weights, unique_names
from ..quotas.run import QuotaResult

GPU = "nvidia.com/gpu"


def manifests(r: QuotaResult) -> dict[str, list[dict]]:
    """One Queue per team: deserved = nominal, capability = nominal + borrowing, guarantee = the part
    of the nominal it does not lend, weight = the fair-sharing weight (integer, 10 for the smallest),
    reclaimable: what a queue holds above its deserved share (borrowed) can be taken back."""
    d = r.data
    names = unique_names(d.teams)
    weights = integer_weights(d.weights)
    out = []
    for i, t in enumerate(d.teams):
        q = r.quotas[r.quotas["team"] == t]
        if not len(q):
            continue
        nominal = int(q["nominal_gpus"].sum())
        cap = nominal + int(q["borrowing_limit_gpus"].sum())
        keep = nominal - int(q["lending_limit_gpus"].sum())
        spec = {"weight": weights[i], "reclaimable": True,
                "capability": {GPU: cap}, "deserved": {GPU: nominal}}
        if keep > 0:
            spec["guarantee"] = {"resource": {GPU: keep}}
        out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                    "metadata": {"name": names[t]}, "spec": spec})
    return {"queues.yaml": out}
