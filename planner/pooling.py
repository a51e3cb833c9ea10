"""One shared pool with preemption, or separate pools: the same demand planned both ways, side by side.

- **separate**: the classes with priority (every class without ``backfill``; the SLO-sized inference) are
  planned alone, and the ``backfill`` classes (training) alone on a fleet of their own, where nobody
  reclaims their reserved GPUs. Commitments already owned go to the priority pool. Cost = the sum.
- **pooled**: one plan of every class; the backfill classes use reserved GPUs at the backfill goodput
  (:mod:`planner.sizing.backfill`): the priority classes take GPUs back when their requirement rises.

Both plans meet the priority classes' requirement in every period, so their latency is the same; the
comparison is the cost, the GPUs bought, and what training gets and loses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.sizing import economics
from planner.core.errors import ConfigError, Problem
from planner.inputs.arrays import PlanInputs, select_classes
from planner.results.plan import Plan
from planner.inputs import supply


@dataclass
class PoolingResult:
    """The two plans and their side-by-side metrics (``metrics``: one column per arrangement)."""

    separate: list[Plan]  # [priority plan, backfill plan]
    pooled: Plan
    metrics: dict  # {"separate": {...}, "pooled": {...}}
    priority_classes: list[str]
    backfill_classes: list[str]

    @property
    def recommendation(self) -> str:
        """One sentence: which arrangement is cheaper, by how much, and what training gives up."""
        return recommend(self.metrics)


def split_classes(inp: PlanInputs) -> tuple[list[str], list[str]]:
    """(priority classes, backfill classes); an input error when either side is empty."""
    pol = inp.config.classes
    backfill = [c for c in inp.classes if pol[c].backfill]
    priority = [c for c in inp.classes if not pol[c].backfill]
    file = str(inp.config.path) if inp.config.path else "<model>"
    if not backfill:
        raise ConfigError(Problem(file, "no class has backfill = true", expected="a training or batch class with "
                                  "backfill = true to share the pool with", hint="add backfill = true to "
                                  "[classes.<training class>]"))
    if not priority:
        raise ConfigError(Problem(file, "every class has backfill = true", expected="at least one class with "
                                  "priority (backfill = false), e.g. the inference service"))
    return priority, backfill


def compare_pooling(inp: PlanInputs, plan_fn) -> PoolingResult:
    """Plan ``inp`` separately and pooled; ``plan_fn(inputs) -> Plan`` solves one (e.g. ``make_plan``)."""
    priority, backfill = split_classes(inp)
    sep_priority = plan_fn(select_classes(inp, priority, backfill=False, inventory=True))
    sep_backfill = plan_fn(leftover_caps(select_classes(inp, backfill, backfill=False, inventory=False),
                                         sep_priority))
    pooled = plan_fn(inp)
    metrics = {"separate": _metrics([sep_priority, sep_backfill], backfill),
               "pooled": _metrics([pooled], backfill)}
    return PoolingResult(separate=[sep_priority, sep_backfill], pooled=pooled, metrics=metrics,
                         priority_classes=priority, backfill_classes=backfill)


def leftover_caps(inp: PlanInputs, first: Plan) -> PlanInputs:
    """``inp`` with each pool's caps less what ``first`` (the priority pool's plan) holds of them.

    The market's caps (quotas, spot availability, reserved limits) are shared by the two pools: the
    backfill pool gets what is left: the on-demand and spot caps less the priority plan's peak use,
    the reserved cap less the reserved GPUs it bought and owns.
    """
    from dataclasses import replace

    pools = inp.pools.copy()
    f = first.fleet.groupby(["scenario", "period", "gpu_type", "region"])[
        [kd for kd in supply.RENTED if kd in first.fleet]].sum()  # on-demand, spot (, flex-start)
    peak = f.groupby(level=["gpu_type", "region"]).max()
    key = pd.MultiIndex.from_arrays([pools["gpu_type"], pools["region"]])
    bought = first.purchases.groupby(["gpu_type", "region"])["gpus"].sum()
    owned = pd.Series(first.inputs.inventory.max(axis=1) if first.inputs.T else 0.0, index=key)
    held = {supply.get(kd).pool_cap: peak[kd].reindex(key).fillna(0.0).to_numpy() for kd in peak.columns}
    held["cap_res"] = bought.reindex(key).fillna(0.0).to_numpy() + owned.to_numpy()
    for col, used in held.items():
        if col not in pools:
            continue
        cap = pools[col].to_numpy(float)
        pools[col] = np.where(np.isnan(cap), np.nan, np.maximum(cap - used, 0.0))
    return replace(inp, pools=pools)


def _gang_rates(plan: Plan) -> pd.DataFrame:
    """Per (class, pool, option) of the backfill classes: GPU-hours used, useful share, job rate, gang GPUs."""
    inp = plan.inputs
    rows = []
    if len(plan.backfill):
        for r in plan.backfill.itertuples():
            rows.append({"workload_class": r.workload_class, "option": "backfill",
                         "gpu_hours": r.backfilled_gpu_hours, "useful": r.goodput,
                         "job_rate": r.job_interruptions_per_hour,
                         "gang_gpus": _gang(inp, r.pool, r.job_gpus)})
    if len(plan.spot):
        for r in plan.spot.itertuples():
            rows.append({"workload_class": r.workload_class, "option": "spot", "gpu_hours": r.spot_gpu_hours,
                         "useful": r.goodput, "job_rate": r.job_interruptions_per_hour,
                         "gang_gpus": r.instances_per_job * float(inp.pools["m"].iat[r.pool])})
    return pd.DataFrame(rows, columns=["workload_class", "option", "gpu_hours", "useful", "job_rate", "gang_gpus"])


def _gang(inp: PlanInputs, pool: int, job_gpus: float) -> float:
    m = float(inp.pools["m"].iat[pool])
    return float(economics.instances_spanned(job_gpus, m)) * m


def _metrics(plans: list[Plan], backfill: list[str]) -> dict:
    """The comparison's figures for one arrangement (one plan, or the sum of the separate ones)."""
    cost = {k: sum(p.cost.get(k, 0.0) for p in plans) for k in (*supply.BUCKETS, "total")}
    hours = plans[0].inputs.horizon_hours
    days = hours / 24.0
    reserved_gpus = sum(float(p.purchases["gpus"].sum()) for p in plans)
    owned = sum(float(p.inputs.inventory.max(axis=1).sum()) if p.inputs.T else 0.0 for p in plans)
    peak = {"on_demand": 0.0, "spot": 0.0}
    gpu_hours = {"reserved": 0.0, "on_demand": 0.0, "spot": 0.0}
    for p in plans:
        f = p.fleet[p.fleet["scenario"] == p.inputs.scenarios[0]].groupby("period")[["on_demand", "spot"]].sum()
        for option in peak:
            peak[option] += float(f[option].max()) if len(f) else 0.0
        a = p.allocation
        w = _scenario_weights(p)
        for option in gpu_hours:
            sel = a[a["option"] == option]
            gpu_hours[option] += float((sel["gpu_hours"] * sel["scenario"].map(w).astype(float)).sum())
    latency = pd.concat([p.latency for p in plans if len(p.latency)], ignore_index=True) \
        if any(len(p.latency) for p in plans) else pd.DataFrame()
    busy = latency[latency["requests_per_s"] > 0] if len(latency) else latency
    per_class = {c: float(df["latency_at_percentile_ms"].max())
                 for c, df in busy.groupby("workload_class")} if len(busy) else {}

    train_used = train_useful = preemptions = idle_useful = 0.0
    for p in plans:
        used, useful = _training_hours(p, backfill)
        train_used += used
        train_useful += useful
        rates = _gang_rates(p)
        rates = rates[rates["workload_class"].isin(backfill)]
        with np.errstate(divide="ignore", invalid="ignore"):
            preemptions += float(np.nansum(rates["gpu_hours"] / rates["gang_gpus"] * rates["job_rate"]))
        idle_useful += _idle_useful(p, backfill)
    return {
        "total_cost_usd": cost["total"],
        "cost_usd": cost,
        "reserved_gpus_bought": reserved_gpus,
        "reserved_gpus_owned_before": owned,
        "peak_on_demand_gpus": peak["on_demand"],
        "peak_spot_gpus": peak["spot"],
        "gpu_hours": gpu_hours,
        "inference_p99_ms": max(per_class.values()) if per_class else None,
        "inference_latency_by_class_ms": per_class,
        "training_gpu_hours": train_used,
        "training_useful_gpu_hours": train_useful,
        "training_goodput": train_useful / train_used if train_used > 0 else 1.0,
        "training_lost_to_preemption_pct": 100.0 * (1.0 - train_useful / train_used) if train_used > 0 else 0.0,
        "training_idle_useful_gpu_hours": idle_useful,
        "preemptions_per_day": preemptions / days if days > 0 else 0.0,
        "shortfall_gpu_hours": sum(p.shortfall_gpu_hours for p in plans),
        "status": [p.status.value for p in plans],
        "mip_gap": max((p.solve.mip_gap or 0.0) for p in plans),
    }


def _scenario_weights(plan: Plan) -> dict:
    return dict(zip(plan.inputs.scenarios, plan.inputs.probability))


def _training_hours(plan: Plan, backfill: list[str]) -> tuple[float, float]:
    """(GPU-hours used, useful GPU-hours) of the backfill classes, both in each class's reference GPUs.

    Used = speed x GPU-hours of every option; useful counts reserved and on-demand at the non-spot
    reliability, spot at its goodput, and the backfilled (at-risk) part of reserved at the backfill goodput.
    """
    inp = plan.inputs
    a = plan.allocation_positions
    a = a[a["workload_class"].isin(backfill)]
    if not len(a):
        return 0.0, 0.0
    w = a["scenario"].map(_scenario_weights(plan)).to_numpy(float)
    k, p = a["_k"].to_numpy(), a["_p"].to_numpy()
    ref = a["gpu_hours"].to_numpy(float) * w * inp.speed[k, p]
    factor = np.where(supply.mask(a["option"], preemptible=True), inp.goodput[k, p], inp.reliability[k, p])
    used, useful = float(ref.sum()), float((ref * factor).sum())
    if len(plan.backfill):
        b = plan.backfill
        ci, pi = b["class_index"].to_numpy(), b["pool"].to_numpy()
        loss = b["backfilled_gpu_hours"].to_numpy(float) * inp.speed[ci, pi] * (inp.reliability[ci, pi]
                                                                               - b["goodput"].to_numpy(float))
        useful -= float(loss[b["workload_class"].isin(backfill).to_numpy()].sum())
    return used, useful


def _idle_useful(plan: Plan, backfill: list[str]) -> float:
    """Useful GPU-hours the backfill classes could still draw from reserved GPUs left idle by the plan.

    Idle reserved GPU-hours (owned minus used, expected over scenarios) of the pools they may use, in
    reference GPU-hours at the backfill goodput (pooled) or the plain reliability (their own fleet).
    """
    inp = plan.inputs
    ks = [k for k, c in enumerate(inp.classes) if c in backfill]
    f = plan.fleet
    w = _scenario_weights(plan)
    idle = ((f["reserved_owned"] - f["reserved_used"]).clip(lower=0) * f["hours"] * f["scenario"].map(w).astype(float))
    pool_idle = idle.groupby([f["gpu_type"], f["region"]]).sum()
    useful = inp.q_reserved[ks]  # useful reference GPUs per reserved GPU
    total = 0.0
    for p, (g, r) in enumerate(zip(inp.pools["gpu_type"], inp.pools["region"])):
        ok = inp.speed[ks, p] > 0
        if ok.any() and (g, r) in pool_idle.index:
            total += float(pool_idle.loc[(g, r)]) * float(useful[ok, p].max())
    return total


def recommend(metrics: dict) -> str:
    """One plain sentence: which arrangement, and by how much."""
    sep, pool = metrics["separate"], metrics["pooled"]
    a, b = sep["total_cost_usd"], pool["total_cost_usd"]
    diff = a - b
    if abs(diff) <= 1e-6 * max(abs(a), 1.0):
        return "Both arrangements cost the same; keep separate pools (no preemption of training)."
    apart = sep["training_lost_to_preemption_pct"]
    also = (f"; separately it loses {apart:.1f} % to spot ({sep['preemptions_per_day']:.1f} a day)"
            if apart is not None and apart > 0.05 else "")
    if diff > 0:
        return (f"One pool with preemption: ${diff:,.0f} ({diff / a:.1%}) cheaper than separate pools, with "
                f"inference at the same latency; training loses {pool['training_lost_to_preemption_pct']:.1f} % "
                f"of its GPU-hours to preemption ({pool['preemptions_per_day']:.1f} job preemptions a day){also}.")
    return (f"Separate pools: ${-diff:,.0f} ({-diff / a:.1%}) cheaper than one pool with preemption, where "
            f"training would lose {pool['training_lost_to_preemption_pct']:.1f} % of its GPU-hours to preemption.")
