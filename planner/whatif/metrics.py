"""The numbers of a :class:`~planner.results.plan.Plan` that what-if views put side by side.

Everything is an expected value over the plan's forecast scenarios (weighted by
their probabilities), like the plan's own totals.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from planner.results.plan import Plan
from planner.inputs import supply

SPOT_EPS = 1e-3  # GPU-hours: below this a class's spot use counts as none (solver noise)
RESERVED_EPS = 1e-9


def pool_key(gpu_type: str, region: str) -> str:
    """'gpu_type/region' of a row."""
    return f"{gpu_type}/{region}"


def reserved_key(gpu_type: str, region: str, option: str) -> str:
    """'gpu_type/region/option' of a reserved row."""
    return f"{gpu_type}/{region}/{option}"


def class_pool_key(workload_class: str, gpu_type: str, region: str) -> str:
    """'class @ gpu_type/region' of a row."""
    return f"{workload_class} @ {gpu_type}/{region}"


def _f(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def expected_gpu_hours(plan: Plan) -> pd.DataFrame:
    """Allocation with ``expected_gpu_hours`` = GPU-hours x the forecast scenario's probability."""
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    a = plan.allocation
    out = a[["scenario", "workload_class", "gpu_type", "region", "option", "gpu_hours"]].copy()
    out["expected_gpu_hours"] = out["gpu_hours"].to_numpy(float) * out["scenario"].map(prob).to_numpy(float)
    return out


def spend(plan: Plan) -> pd.DataFrame:
    """Expected spend per (option, pool): reserved per reserved option, on-demand and spot per pool.

    The rows sum to ``plan.cost["total"]``.
    """
    inp = plan.inputs
    rows = []
    full_term = inp.config.commitments.accounting == "full_term"
    reserved = {}
    for r in plan.purchases.itertuples():  # purchases of one option on several dates: one row per option
        row = reserved.setdefault((r.option, r.gpu_type, r.region), {"option": r.option, "gpu_type": r.gpu_type,
                                                                    "region": r.region, "gpus": 0.0,
                                                                    "gpu_hours": 0.0, "usd": 0.0})
        row["gpus"] += float(r.gpus)
        row["gpu_hours"] += float(r.gpus) * float(getattr(r, "hours_active", inp.horizon_hours))
        row["usd"] += float(r.commitment_usd if full_term else r.horizon_cost_usd)
    rows.extend(reserved.values())
    price = {}
    rates = np.nan_to_num(inp.rented_price)  # (J, P): every rented kind (on-demand, spot, flex-start)
    for q, (gt, rg) in enumerate(zip(inp.pools["gpu_type"], inp.pools["region"])):
        for j, kind in enumerate(supply.RENTED):
            price[(gt, rg, kind)] = float(rates[j, q])
    a = expected_gpu_hours(plan)
    a = a[~supply.mask(a["option"], stage="first")]
    if len(a) and inp.rented_price_path is not None:  # prices by date or scenario: each row at its own price
        from planner.results.plan import fleet_prices

        a = a.assign(period=plan.allocation.loc[a.index, "period"])
        usd = np.zeros(len(a))
        for kind in pd.unique(a["option"]):
            on = (a["option"] == kind).to_numpy()
            usd[on] = a["expected_gpu_hours"].to_numpy(float)[on] * fleet_prices(inp, a[on], kind)
        g = a.assign(usd=usd).groupby(["option", "gpu_type", "region"], sort=True)[["expected_gpu_hours", "usd"]].sum()
        for (opt, gt, rg), r in g.iterrows():
            rows.append({"option": opt, "gpu_type": gt, "region": rg, "gpus": None,
                         "gpu_hours": float(r["expected_gpu_hours"]), "usd": float(r["usd"])})
        a = a.iloc[0:0]
    if len(a):
        g = a.groupby(["option", "gpu_type", "region"], sort=True)["expected_gpu_hours"].sum()
        for (opt, gt, rg), hours in g.items():
            rows.append({"option": opt, "gpu_type": gt, "region": rg, "gpus": None, "gpu_hours": float(hours),
                         "usd": float(hours) * price[(gt, rg, opt)]})
    return pd.DataFrame(rows, columns=["option", "gpu_type", "region", "gpus", "gpu_hours", "usd"])


def plan_metrics(plan: Plan) -> dict:
    """Costs, purchases and spot use of ``plan`` as flat, JSON-ready numbers."""
    inp = plan.inputs
    cost = plan.cost
    base = plan.baseline_all_on_demand
    bought = plan.purchases
    prob = bought["probability"] if "probability" in bought else 1.0  # a tree's branch purchases: expected
    commitment = float((bought["commitment_usd"] * prob).sum()) if len(bought) else 0.0
    reserved = {}
    for r in bought.itertuples():  # summed over purchase dates (expected over a scenario tree's branches)
        key = reserved_key(r.gpu_type, r.region, r.option)
        reserved[key] = reserved.get(key, 0.0) + float(r.gpus) * float(getattr(r, "probability", 1.0))

    a = expected_gpu_hours(plan)
    by_class = a.groupby(["workload_class", "option"])["expected_gpu_hours"].sum() if len(a) else pd.Series(dtype=float)
    spot_hours, spot_share = {}, {}
    for k in inp.classes:
        total = float(by_class.loc[k].sum()) if k in by_class.index.get_level_values(0) else 0.0
        sp = float(by_class.loc[(k, "spot")]) if (k, "spot") in by_class.index else 0.0
        spot_hours[k] = sp if sp > SPOT_EPS else 0.0
        spot_share[k] = sp / total if total > 0 and sp > SPOT_EPS else 0.0
    by_pool = {}
    if len(plan.spot) and "spot_gpu_hours" in plan.spot:
        for r in plan.spot.itertuples():
            by_pool[class_pool_key(r.workload_class, r.gpu_type, r.region)] = \
                float(r.spot_gpu_hours) if r.spot_gpu_hours > SPOT_EPS else 0.0
    demand = np.einsum("s,skt,t->k", inp.probability, inp.demand, inp.hours)
    return {
        "status": plan.status.value,
        "total_usd": float(cost["total"]),
        "reserved_usd": float(cost["reserved"]),
        "on_demand_usd": float(cost["on_demand"]),
        "spot_usd": float(cost["spot"]),
        **{f"{k}_usd": float(cost[k]) for k in supply.RENTED[2:] if k in cost},  # flex-start, where sold
        "objective_usd": float(plan.objective),
        "all_on_demand_usd": _f(base),
        "savings_usd": _f(plan.savings),
        "savings_pct": _f(100.0 * plan.savings / base) if base and math.isfinite(base) else None,
        "commitment_usd": commitment,
        "reserved_utilisation": _f(plan.reserved_utilisation),
        "shortfall_gpu_hours": float(plan.shortfall_gpu_hours),
        "reserved_gpus": reserved,
        "spot_gpu_hours": spot_hours,
        "spot_share": spot_share,
        "spot_gpu_hours_by_pool": by_pool,
        "demand_gpu_hours": {k: float(demand[i]) for i, k in enumerate(inp.classes)},
    }
