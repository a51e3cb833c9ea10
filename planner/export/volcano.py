"""Volcano ``scheduling.volcano.sh/v1beta1`` Queue objects for a quota policy (one per team)."""

from __future__ import annotations

from ..quotas.build import dns_name
from ..quotas.run import QuotaResult

GPU = "nvidia.com/gpu"


def manifests(r: QuotaResult) -> dict[str, list[dict]]:
    """One Queue per team: deserved = nominal, capability = nominal + borrowing, guarantee = the part
    of the nominal it does not lend, weight = the fair-sharing weight (integer, relative), reclaimable
    when it lends."""
    d = r.data
    low = min(d.weights) if len(d.weights) else 1.0
    out = []
    for i, t in enumerate(d.teams):
        q = r.quotas[r.quotas["team"] == t]
        if not len(q):
            continue
        nominal = int(q["nominal_gpus"].sum())
        cap = nominal + int(q["borrowing_limit_gpus"].sum())
        keep = nominal - int(q["lending_limit_gpus"].sum())
        spec = {"weight": int(min(65535, max(1, round(d.weights[i] / low)))), "reclaimable": keep < nominal,
                "capability": {GPU: cap}, "deserved": {GPU: nominal}}
        if keep > 0:
            spec["guarantee"] = {"resource": {GPU: keep}}
        out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                    "metadata": {"name": dns_name(t)}, "spec": spec})
    return {"queues.yaml": out}
