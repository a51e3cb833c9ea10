"""The FOCUS usage rows per period of the plan (``planner export focus --granularity period``), built from the
fleet.csv published with plan.json: on-demand and spot GPU-hours per pool and period, and each reserved
commitment's used and unused GPU-hours per period. Expected over scenarios (weighted by their probability).

A pool's reserved GPU-hours used in a period are shared among the commitments active in it in proportion to the
GPU-hours each holds there (never more than it holds), so their Used rows add up to the plan's ``reserved_used``
of the period; on-demand rows carry every on-demand GPU-hour, those a savings plan paid included. Totals are
those of the monthly rows: the same EffectiveCost and BilledCost.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from planner.inputs import supply
from planner.results.fleet_file import expected_fleet

HOUR = pd.Timedelta(hours=1)


def other_rates(plan: dict) -> dict:
    """Per rented kind beyond on-demand and spot (flex-start) present in monthly_usage: {kind: {pool: USD per GPU-hour}}."""
    mu = pd.DataFrame(plan.get("monthly_usage", []))
    out = {}
    for kind in supply.RENTED[2:]:
        if len(mu) and f"{kind}_gpu_hours" in mu:
            g = mu.groupby(["gpu_type", "region"]).sum(numeric_only=True)
            out[kind] = (g[f"{kind}_usd"] / g[f"{kind}_gpu_hours"].where(g[f"{kind}_gpu_hours"] > 1e-9)).dropna().to_dict()
    return out


def _rates(plan: dict) -> tuple[dict, dict, dict]:
    """Per pool: the on-demand rate per billed GPU-hour, the spot rate, and the list rate (on-demand)."""
    mu = pd.DataFrame(plan.get("monthly_usage", []))
    od_price = {(r["gpu_type"], r["region"]): r.get("on_demand_usd_per_gpu_hour") for r in plan.get("spot_economics", [])}
    od, sp = {}, {}
    if len(mu):
        g = mu.groupby(["gpu_type", "region"]).sum(numeric_only=True)
        billed = g["on_demand_gpu_hours"] - g.get("on_demand_covered_gpu_hours", 0.0)
        od = (g["on_demand_usd"] / billed.where(billed > 1e-9)).dropna().to_dict()
        sp = (g["spot_usd"] / g["spot_gpu_hours"].where(g["spot_gpu_hours"] > 1e-9)).dropna().to_dict()
    listed = {k: od.get(k, v) for k, v in od_price.items() if v is not None}
    listed.update({k: v for k, v in od.items() if k not in listed})
    return od, sp, listed


def _months(start: pd.Series) -> tuple[pd.Series, pd.Series]:
    b0 = start.dt.to_period("M").dt.to_timestamp()
    return b0, b0 + pd.offsets.MonthBegin(1)


def _iso(s: pd.Series) -> pd.Series:
    return s.dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _frame(base: dict, start: pd.Series, end: pd.Series, **cols) -> pd.DataFrame:
    b0, b1 = _months(start)
    out = pd.DataFrame({**{k: v for k, v in base.items()}, "BillingPeriodStart": _iso(b0), "BillingPeriodEnd": _iso(b1),
                        "ChargePeriodStart": _iso(start), "ChargePeriodEnd": _iso(end), **cols}, index=start.index)
    return out


def pool_rows(plan: dict, g: pd.DataFrame, base: dict) -> pd.DataFrame:
    """On-demand (PricingCategory Standard) and spot (Dynamic) rows per period and pool with GPU-hours > 0."""
    od, sp, listed = _rates(plan)
    key = list(zip(g["gpu_type"], g["region"]))
    parts = []
    for option, rate in (("on_demand", od), ("spot", sp),
                         *((k, r) for k, r in other_rates(plan).items() if k in g)):  # flex-start too
        category = supply.get(option).focus[0]  # FOCUS PricingCategory, from the supply registry
        gh = g[option] * g["hours"]
        billed = ((g["on_demand"] - g["on_demand_covered"]) * g["hours"]).clip(lower=0.0) \
            if supply.is_(option, covered_by_spend=True) else gh
        fallback = listed if supply.is_(option, covered_by_spend=True) else {}
        unit = pd.Series([rate.get(k, fallback.get(k, 0.0)) for k in key], index=g.index, dtype=float)
        keep = gh > 1e-9
        if not keep.any():
            continue
        r = g[keep]
        usd = (billed * unit)[keep]
        text = option.replace("_", "-") + " " + r["gpu_type"] + " GPU-hours in " + r["region"]
        parts.append(_frame(base, r["period"], r["end"], ChargeCategory="Usage", ChargeFrequency="Usage-Based",
                            ChargeDescription=text, BilledCost=usd, EffectiveCost=usd, ListCost=billed[keep] * unit[keep],
                            ContractedCost=billed[keep] * unit[keep], ContractedUnitPrice=unit[keep],
                            ListUnitPrice=unit[keep], PricingQuantity=billed[keep], PricingUnit="GPU-Hours",
                            PricingCategory=category, ConsumedQuantity=gh[keep], ConsumedUnit="GPU-Hours",
                            SkuId=r["gpu_type"] + "/" + r["region"] + "/" + option, x_Option=option,
                            RegionId=r["region"], RegionName=r["region"], x_GpuType=r["gpu_type"], ResourceType="GPU",
                            x_Source="plan"))
    return pd.concat(parts) if parts else pd.DataFrame()


def commitment_rows(plan: dict, g: pd.DataFrame, commitments: list[dict], base: dict, lo, hi) -> pd.DataFrame:
    """Used and Unused rows per reserved commitment and period (see the module docstring)."""
    gpu = [c for c in commitments if not c.get("spend")]
    if not gpu or not len(g):
        return pd.DataFrame()
    _, _, listed = _rates(plan)
    cm = pd.DataFrame({"c": range(len(gpu)), "gpu_type": [c["gpu_type"] for c in gpu],
                       "region": [c["region"] for c in gpu]})
    x = g.merge(cm, on=["gpu_type", "region"])
    cs = np.array([max(pd.Timestamp(c["start"]), lo) for c in gpu], dtype="datetime64[ns]")[x["c"]]
    ce = np.array([min(pd.Timestamp(c["end"]), hi) for c in gpu], dtype="datetime64[ns]")[x["c"]]
    a = np.maximum(x["period"].to_numpy("datetime64[ns]"), cs)
    b = np.minimum(x["end"].to_numpy("datetime64[ns]"), ce)
    x["overlap"] = np.clip((b - a) / np.timedelta64(1, "h"), 0.0, None)
    x["start"], x["stop"] = pd.to_datetime(a), pd.to_datetime(b)
    x["gpus"] = np.array([c["gpus"] for c in gpu])[x["c"]]
    x["held"] = x["gpus"] * x["overlap"]
    x = x[x["overlap"] > 0].copy()
    held = x.groupby(["period", "gpu_type", "region"])["held"].transform("sum")
    used = x["reserved_used"] * x["hours"]
    x["share"] = np.where(held.abs() > 1e-12, np.clip(used / held.where(held.abs() > 1e-12, 1.0), 0.0, 1.0), 0.0)
    x["eff"] = np.array([c["eff"] for c in gpu])[x["c"]]
    x["rate"] = [listed.get((t, r)) for t, r in zip(x["gpu_type"], x["region"])]
    x["rate"] = pd.to_numeric(x["rate"], errors="coerce")
    parts = []
    for status, part in (("Used", x["share"]), ("Unused", 1.0 - x["share"])):
        q = x["held"] * part
        keep = q.abs() > 1e-9
        if not keep.any():
            continue
        r, q, part = x[keep], q[keep], part[keep]
        cid = pd.Series([gpu[i]["cid"] for i in r["c"]], index=r.index)
        rate = r["rate"].where(r["rate"].notna(), 0.0) if status == "Used" else pd.Series(0.0, index=r.index)
        list_cost = q * rate
        text = ("Reserved " if status == "Used" else "Idle reserved ") + r["gpu_type"] + " GPU-hours in " \
            + r["region"] + " (" + cid + ")"
        cap = pd.Series([gpu[i].get("capacity", True) for i in r["c"]], index=r.index)
        parts.append(_frame(
            base, r["start"], r["stop"], ChargeCategory="Usage", ChargeFrequency="Usage-Based", ChargeDescription=text,
            BilledCost=0.0, EffectiveCost=r["gpus"] * r["eff"] * r["overlap"] * part, ListCost=list_cost,
            ContractedCost=list_cost, ContractedUnitPrice=rate, ListUnitPrice=rate, PricingQuantity=q,
            PricingUnit="GPU-Hours", PricingCategory=supply.get("instance").focus[0], CommitmentDiscountStatus=status,
            ConsumedQuantity=q if status == "Used" else np.nan,
            ConsumedUnit="GPU-Hours" if status == "Used" else None, CommitmentDiscountQuantity=q,
            RegionId=r["region"], RegionName=r["region"], x_GpuType=r["gpu_type"],
            x_Option=[gpu[i]["option"] for i in r["c"]], CommitmentDiscountId=cid, CommitmentDiscountName=cid,
            CommitmentDiscountType="Reserved capacity", CommitmentDiscountCategory=supply.get("instance").focus[1],
            CommitmentDiscountUnit="GPU-Hours", ResourceType="GPU",
            SkuId=r["gpu_type"] + "/" + r["region"] + "/" + pd.Series([gpu[i]["option"] for i in r["c"]], index=r.index),
            x_Source=[gpu[i]["source"] for i in r["c"]],
            CapacityReservationId=cid.where(cap), CapacityReservationStatus=pd.Series(status, index=r.index).where(cap),
            x_CommitmentDiscountStart=[_one_iso(gpu[i]["start"]) for i in r["c"]],
            x_CommitmentDiscountEnd=[_one_iso(gpu[i]["end"]) for i in r["c"]]))
    return pd.concat(parts) if parts else pd.DataFrame()


def _one_iso(ts) -> str:
    return pd.Timestamp(ts).strftime("%Y-%m-%dT%H:%M:%SZ")


def period_rows(plan: dict, fleet: pd.DataFrame, commitments: list[dict], base: dict, lo, hi) -> pd.DataFrame:
    """Every per-period usage row: the reserved commitments' Used/Unused, then on-demand and spot."""
    g = expected_fleet(plan, fleet)
    g = g[(g["period"] >= lo) & (g["period"] < hi)]
    parts = [commitment_rows(plan, g, commitments, base, lo, hi), pool_rows(plan, g, base)]
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
