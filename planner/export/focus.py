"""A plan's projected charges as a FinOps FOCUS 1.2 cost-and-usage file (CSV), from its plan.json.

One row per charge of the horizon, per calendar month (the billing period) and pool:

- **Purchase** rows of every commitment: the one-time upfront fee on its purchase date (when that falls
  in the horizon) and the recurring hourly fee per month it is active (this plan's purchases and, marked
  ``x_Source = already committed``, the inventory). BilledCost is what is invoiced; EffectiveCost is 0
  (the commitment's cost is amortised onto its usage rows).
- **Usage** rows per month and pool: reserved GPU-hours used (CommitmentDiscountStatus ``Used``) and idle
  (``Unused``) carrying the amortised commitment cost as EffectiveCost; on-demand (PricingCategory
  ``Standard``) and spot (``Dynamic``) GPU-hours with BilledCost = EffectiveCost.

Totals: sum(EffectiveCost) is the bill of the horizon under amortised accounting (plan.json
``bill_usd.total_usd``); sum(BilledCost) is the cash invoiced in the horizon. ListCost prices the
reserved GPU-hours used at the on-demand rate (what they would have cost without the commitment), the
dollars a savings plan drew at the on-demand value of the usage they paid (ListUnitPrice: on-demand USD per
USD drawn), and everything else at its own rate; ContractedCost = ContractedUnitPrice x
PricingQuantity with the sheet's price as the contracted unit price (on every row, to the cent: decimals are
written with up to 12 places, ``decimal_text``). Custom columns start with ``x_``.

Column versions: the 1.2 set; ``CommitmentDiscountQuantity``/``Unit`` and ``CapacityReservationId``/``Status``
(FOCUS 1.1, unchanged in 1.2 and 1.3: a reserved commitment is a capacity reservation unless plan.json says
``guarantees_capacity`` false); ``ServiceProviderName``/``HostProviderName`` (FOCUS 1.3, beside 1.2's
``ProviderName``/``PublisherName``, prefixed ``x_`` as every column outside 1.2 is); the 1.0 names (``COMPAT``,
prefixed too unless ``focus10_names``); ``ResourceId`` (the commitment's id on its rows, ``pool/GPU/region`` on a
pool's usage rows); ``x_CommitmentDiscountStart``/``End`` (the
term, which FOCUS up to 1.3 has no cost-and-usage column for). With ``granularity="period"`` the usage rows are
per period of the plan (``focus_hourly``).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
from planner.inputs import supply

# the FOCUS 1.2 mandatory columns, then the conditional/recommended ones this file fills, then ours
MANDATORY = ["BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
             "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd",
             "ChargePeriodStart", "ContractedCost", "EffectiveCost", "InvoiceIssuerName", "ListCost",
             "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory", "ServiceName"]
OTHER = ["ChargeFrequency", "PricingCategory", "CommitmentDiscountCategory", "CommitmentDiscountId",
         "CommitmentDiscountName", "CommitmentDiscountQuantity", "CommitmentDiscountStatus",
         "CommitmentDiscountType", "CommitmentDiscountUnit", "ConsumedQuantity", "ConsumedUnit",
         "ContractedUnitPrice", "ListUnitPrice", "RegionId", "RegionName", "ResourceType", "SkuId",
         "SubAccountId", "SubAccountName", "CapacityReservationId", "CapacityReservationStatus", "ResourceId",
         "ResourceName", "SkuPriceId", "Tags"]
# the columns outside FOCUS 1.2 carry the x_ prefix of custom columns (issue 35): FOCUS 1.3's names for the
# provider columns (ProviderName and PublisherName stay, as 1.2 requires them) and the FOCUS 1.0 names of the
# FinOps Foundation's focus-validator (which checks 1.0); ``focus10_names=True`` writes those unprefixed
V13 = ["x_ServiceProviderName", "x_HostProviderName"]
COMPAT = ["x_ChargeType", "x_InvoiceIssuer", "x_Provider", "x_Publisher", "x_ResourceID"]
CUSTOM = ["x_PlanName", "x_PlanRunId", "x_Source", "x_GpuType", "x_Option", "x_CommitmentDiscountStart",
          "x_CommitmentDiscountEnd"]
COLUMNS = MANDATORY + OTHER + V13 + COMPAT + CUSTOM
UNIT_PRICES = ["ContractedUnitPrice", "ListUnitPrice"]
DECIMALS = ["BilledCost", "ContractedCost", "EffectiveCost", "ListCost", "PricingQuantity",
            "CommitmentDiscountQuantity", "ConsumedQuantity", "ContractedUnitPrice", "ListUnitPrice"]
DATETIMES = ["BillingPeriodEnd", "BillingPeriodStart", "ChargePeriodEnd", "ChargePeriodStart"]


def focus_of(option: str) -> tuple[str, str]:
    """FOCUS ``(PricingCategory, CommitmentDiscountCategory)`` of an option's charges, from the supply registry."""
    return supply.get(str(option)).focus


def _iso(ts: pd.Timestamp) -> str:
    return pd.Timestamp(ts).strftime("%Y-%m-%dT%H:%M:%SZ")


def _month_bounds(month: str) -> tuple[pd.Timestamp, pd.Timestamp]:
    start = pd.Timestamp(month + "-01")
    return start, start + pd.offsets.MonthBegin(1)


def _hours_by_month(a: pd.Timestamp, b: pd.Timestamp, lo: pd.Timestamp, hi: pd.Timestamp) -> dict[str, float]:
    """Hours of [a, b) inside [lo, hi), per calendar month."""
    a, b = max(pd.Timestamp(a), lo), min(pd.Timestamp(b), hi)
    out: dict[str, float] = {}
    m = a.to_period("M").to_timestamp()
    while m < b:
        nxt = m + pd.offsets.MonthBegin(1)
        h = (min(b, nxt) - max(a, m)).total_seconds() / 3600.0
        if h > 0:
            out[m.strftime("%Y-%m")] = h
        m = nxt
    return out


def focus_frame(plan: dict, provider: str = "unspecified", billing_account: str = "planned",
                sub_account: str | None = None, fleet: pd.DataFrame | None = None,
                focus10_names: bool = False) -> pd.DataFrame:
    """The FOCUS rows of a plan.json (a dict): see the module docstring. With ``fleet`` (the plan's fleet.csv),
    the usage rows of pools and of reserved commitments are per period of the plan instead of per month.
    ``focus10_names``: the columns outside FOCUS 1.2 without their ``x_`` prefix (for FOCUS 1.0 validators)."""
    horizon = plan["horizon"]
    lo = pd.Timestamp(horizon["start"])
    lo = lo.tz_convert(None) if lo.tzinfo else lo
    hi = lo + pd.Timedelta(hours=float(horizon["hours"]))
    rows: list[dict] = []
    base = {"BillingAccountId": billing_account, "BillingAccountName": billing_account, "BillingCurrency": "USD",
            "ChargeClass": None, "InvoiceIssuerName": provider, "ProviderName": provider, "PublisherName": provider,
            "ServiceCategory": "Compute", "ServiceName": "GPU compute", "SubAccountId": sub_account,
            "x_ServiceProviderName": provider, "x_HostProviderName": provider,
            "SubAccountName": sub_account, "x_PlanName": plan.get("name"), "x_PlanRunId": plan.get("run_id")}

    def add(month: str, start, end, **cols):
        b0, b1 = _month_bounds(month)
        rows.append({**base, "BillingPeriodStart": _iso(b0), "BillingPeriodEnd": _iso(b1),
                     "ChargePeriodStart": _iso(max(start, b0)), "ChargePeriodEnd": _iso(min(end, b1)), **cols})

    commitments = []  # one per commitment active in the horizon: this plan's purchases, then the inventory
    # keyed by option, family, purchase date and branch (on a scenario tree two branches' savings plans of one date
    # are two commitments: keyed without the branch the last took the other's utilisation and markup)
    spend_use = {(c["option"], c["family"], c["purchase_date"], c.get("branch") or "all"):
                 float(c.get("utilisation") or 0.0) for c in plan.get("spend_commitments", [])}
    # on-demand USD per USD a savings plan drew: the on-demand value of the usage it paid over its value at the
    # plan's rates (each drawn dollar lists at this: ListCost - EffectiveCost is what the plan saved)
    spend_markup = {(c["option"], c["family"], c["purchase_date"], c.get("branch") or "all"):
                    float(c.get("covered_at_on_demand_usd") or 0.0) / float(c["covered_at_rates_usd"])
                    if float(c.get("covered_at_rates_usd") or 0.0) > 0 else 0.0
                    for c in plan.get("spend_commitments", [])}
    for p in plan.get("reserved_purchases", []):
        spend = bool(p.get("kind")) and supply.is_(p.get("kind"), unit="usd_per_hour")
        if not (p.get("usd_per_hour") if spend else p.get("instances")):
            continue
        # a savings plan's quantity is its USD per hour committed (it covers on-demand usage, held by no pool)
        gpus = float(p["usd_per_hour"]) if spend else float(p["gpus"])
        # a purchase that waits for information (a branch of the scenario tree) is projected at its probability:
        # the expected quantity, its branch named in the commitment's id
        prob = float(p.get("probability", 1.0) if p.get("probability") is not None else 1.0)
        branch = p.get("branch", "all") or "all"
        cid = (f"savings_plan/{p.get('plan_family')}/{p['option']}/{str(p.get('purchase_date'))[:10]}" if spend
               else f"{p['gpu_type']}/{p['region']}/{p['option']}/{str(p.get('purchase_date'))[:10]}")
        commitments.append({
            "cid": cid if branch == "all" else f"{cid}/if {branch} (p={prob:g})",
            "spend": spend, "family": p.get("plan_family"),
            "gpu_type": p["gpu_type"], "region": p["region"], "option": p["option"], "gpus": gpus * prob,
            "hourly": float(p["monthly_recurring_usd"]) / gpus / 730.0 if gpus else 0.0,
            "eff": float(p["effective_usd_per_gpu_hour"]), "upfront": float(p.get("upfront_usd") or 0.0) * prob,
            "residual": float(p.get("residual_usd") or 0.0) * prob,
            "term_hours": float(p.get("term_months") or 0) * 730.0,
            "start": pd.Timestamp(p.get("active_from") or horizon["start"]),
            "end": pd.Timestamp(p["end_date"]) if p.get("end_date") else hi,
            "bought": pd.Timestamp(p.get("cash_date") or p["purchase_date"]) if p.get("purchase_date") else lo,
            "source": "new purchase",  # a capacity block is paid in the month its window starts (cash_date)
            "capacity": p.get("guarantees_capacity", True) is not False,
            "spend_share": spend_use.get((p["option"], p.get("plan_family"), str(p.get("purchase_date"))[:10], branch))
            if spend else None,
            "spend_markup": spend_markup.get((p["option"], p.get("plan_family"), str(p.get("purchase_date"))[:10],
                                              branch), 0.0) if spend else None})
    for i, r in enumerate(plan.get("inventory", [])):
        if not r.get("priced"):
            continue
        commitments.append({
            "cid": f"owned/{r['gpu_type']}/{r['region']}/{r['option']}/{str(r['start'])[:10]}/{i}",
            "gpu_type": r["gpu_type"], "region": r["region"], "option": r["option"], "gpus": float(r["gpus"]),
            "hourly": float(r["hourly_usd"]), "eff": float(r["effective_usd_per_gpu_hour"]), "upfront": 0.0,
            "residual": 0.0, "term_hours": 0.0, "start": pd.Timestamp(r["start"]), "end": pd.Timestamp(r["end"]),
            "bought": None, "source": "already committed", "capacity": r.get("guarantees_capacity", True) is not False})

    def kind(c, **extra):
        extra = {"x_CommitmentDiscountStart": _iso(c["start"]), "x_CommitmentDiscountEnd": _iso(c["end"]), **extra}
        if c.get("spend"):  # a savings plan: a dollar commitment (FOCUS category "Spend"), held by no region
            return {"x_Option": c["option"], "CommitmentDiscountId": c["cid"], "CommitmentDiscountName": c["cid"],
                    "CommitmentDiscountType": "Savings Plan", "CommitmentDiscountCategory": focus_of(c["option"])[1],
                    "CommitmentDiscountUnit": "USD", "SkuId": f"savings_plan/{c['family']}/{c['option']}",
                    "x_Source": c["source"], **extra}
        return {"RegionId": c["region"], "RegionName": c["region"], "x_GpuType": c["gpu_type"], "x_Option": c["option"],
                "CommitmentDiscountId": c["cid"], "CommitmentDiscountName": c["cid"],
                "CommitmentDiscountType": "Reserved capacity", "CommitmentDiscountCategory": focus_of(c["option"])[1],
                "CommitmentDiscountUnit": "GPU-Hours", "ResourceType": "GPU",
                "CapacityReservationId": c["cid"] if c.get("capacity") else None,
                "SkuId": f"{c['gpu_type']}/{c['region']}/{c['option']}", "x_Source": c["source"], **extra}

    def unit_of(c) -> str:
        return "USD" if c.get("spend") else "GPU-Hours"  # a savings plan is counted in dollars committed

    def what(c) -> str:
        return (f"savings plan {c['option']} ({c['family']}), ${c['gpus']:g} an hour" if c.get("spend")
                else f"{c['gpus']:g} {c['gpu_type']} GPUs, {c['option']} in {c['region']}")

    od_price = {}
    for sp_row in plan.get("spot_economics", []):
        od_price[(sp_row["gpu_type"], sp_row["region"])] = sp_row.get("on_demand_usd_per_gpu_hour")
    for t in plan.get("tranches") or []:  # pools without spot: the list price of a reserved GPU-hour from its tranche
        if t.get("on_demand_usd_per_gpu_hour") is not None:
            od_price.setdefault((t["gpu_type"], t["region"]), t["on_demand_usd_per_gpu_hour"])
    share_used, od_rates = {}, {}
    for u in plan.get("monthly_usage", []):
        key = (u["month"], u["gpu_type"], u["region"])
        owned, used = float(u["reserved_owned_gpu_hours"]), float(u["reserved_used_gpu_hours"])
        share_used[key] = min(max(used / owned, 0.0), 1.0) if owned > 0 else 0.0
        # the on-demand rate per BILLED GPU-hour: the hours a savings plan paid are not in on_demand_usd
        billed = float(u["on_demand_gpu_hours"]) - float(u.get("on_demand_covered_gpu_hours") or 0.0)
        od_rates[(u["gpu_type"], u["region"])] = float(u["on_demand_usd"]) / billed if billed > 1e-9 else \
            od_rates.get((u["gpu_type"], u["region"]), od_price.get((u["gpu_type"], u["region"])))

    for c in commitments:
        gpus = c["gpus"]
        if c["upfront"] and c["bought"] is not None and lo <= c["bought"] < hi:
            q = gpus * c["term_hours"] if c["term_hours"] else gpus
            add(c["bought"].strftime("%Y-%m"), c["bought"], c["bought"] + pd.Timedelta(days=1),
                ChargeCategory="Purchase", ChargeFrequency="One-Time",
                ChargeDescription=f"Upfront fee of {what(c)}",
                BilledCost=c["upfront"], EffectiveCost=0.0, ListCost=c["upfront"], ContractedCost=c["upfront"],
                ContractedUnitPrice=c["upfront"] / q, ListUnitPrice=c["upfront"] / q, PricingQuantity=q,
                PricingUnit=unit_of(c), PricingCategory=focus_of(c["option"])[0], **kind(c, CommitmentDiscountQuantity=q))
        if c["residual"] and lo <= c["end"] <= hi:  # the residual value comes back when the term ends
            add(c["end"].strftime("%Y-%m") if c["end"] < hi else (hi - pd.Timedelta(hours=1)).strftime("%Y-%m"),
                c["end"] - pd.Timedelta(hours=1), c["end"], ChargeCategory="Credit", ChargeFrequency="One-Time",
                ChargeDescription=f"Residual value back: {what(c)}",
                BilledCost=-c["residual"], EffectiveCost=0.0, ListCost=-c["residual"], ContractedCost=-c["residual"],
                PricingQuantity=gpus, PricingUnit="GPU", PricingCategory=focus_of(c["option"])[0], **kind(c))
        for month, h in _hours_by_month(c["start"], c["end"], lo, hi).items():
            b0, b1 = _month_bounds(month)
            span = (max(c["start"], lo, b0), min(c["end"], hi, b1))
            fee, gh = gpus * c["hourly"] * h, gpus * h
            add(month, *span, ChargeCategory="Purchase", ChargeFrequency="Recurring",
                ChargeDescription=f"Recurring fee of {what(c)}",
                BilledCost=fee, EffectiveCost=0.0, ListCost=fee, ContractedCost=fee, ContractedUnitPrice=c["hourly"],
                ListUnitPrice=c["hourly"], PricingQuantity=gh, PricingUnit=unit_of(c), PricingCategory=focus_of(c["option"])[0],
                **kind(c, CommitmentDiscountQuantity=gh))
            share = c["spend_share"] if c.get("spend_share") is not None else \
                share_used.get((month, c["gpu_type"], c["region"]), 0.0)
            list_rate = od_rates.get((c["gpu_type"], c["region"]))
            list_rate = list_rate if list_rate is not None and math.isfinite(list_rate) else None
            if fleet is not None and not c.get("spend"):
                continue  # per period, below
            for status, part in (("Used", share), ("Unused", 1.0 - share)):
                q = gh * part
                if abs(q) <= 1e-9:  # a resale counts negative
                    continue
                list_cost = q * list_rate if (status == "Used" and list_rate is not None and not c.get("spend")) \
                    else 0.0
                if c.get("spend") and status == "Used":  # what the usage it paid lists at on demand
                    list_cost = q * c["spend_markup"]
                text = (f"Savings plan {c['option']} ({c['family']}) {'drawn' if status == 'Used' else 'unused'} "
                        f"({c['cid']})") if c.get("spend") else (
                    f"{'Reserved' if status == 'Used' else 'Idle reserved'} {c['gpu_type']} GPU-hours in "
                    f"{c['region']} ({c['cid']})")
                add(month, *span, ChargeCategory="Usage", ChargeFrequency="Usage-Based",
                    ChargeDescription=text, BilledCost=0.0,
                    EffectiveCost=gpus * c["eff"] * h * part, ListCost=list_cost, ContractedCost=list_cost,
                    # ContractedCost = ContractedUnitPrice x PricingQuantity: a savings plan's usage at what it lists
                    ContractedUnitPrice=(list_rate if not c.get("spend") else c["spend_markup"]) if status == "Used"
                    else 0.0,
                    ListUnitPrice=(list_rate if not c.get("spend") else c["spend_markup"]) if status == "Used"
                    else 0.0, PricingQuantity=q,
                    PricingUnit=unit_of(c), PricingCategory=focus_of(c["option"])[0], CommitmentDiscountStatus=status,
                    ConsumedQuantity=q if status == "Used" else None,
                    ConsumedUnit=unit_of(c) if status == "Used" else None, **kind(c, CommitmentDiscountQuantity=q),
                    **({"CapacityReservationStatus": status} if c.get("capacity") and not c.get("spend") else {}))

    for u in plan.get("monthly_usage", []) if fleet is None else ():
        b0, b1 = _month_bounds(u["month"])
        start, end = max(b0, lo), min(b1, hi)
        pool = {"RegionId": u["region"], "RegionName": u["region"], "x_GpuType": u["gpu_type"], "ResourceType": "GPU",
                "x_Source": "plan"}
        od_gh, sp_gh = float(u["on_demand_gpu_hours"]), float(u["spot_gpu_hours"])
        covered = float(u.get("on_demand_covered_gpu_hours") or 0.0)  # paid by a savings plan: billed there
        others = [(k, float(u[f"{k}_gpu_hours"]), float(u[f"{k}_usd"])) for k in supply.RENTED[2:]
                  if f"{k}_gpu_hours" in u]  # flex-start, where the plan's pools sell it
        for option, gh, usd in (("on_demand", od_gh, float(u["on_demand_usd"])), ("spot", sp_gh, float(u["spot_usd"])),
                                *others):
            category = focus_of(option)[0]  # FOCUS PricingCategory, from the supply registry
            if gh <= 1e-9:
                continue
            billed_gh = max(gh - covered, 0.0) if supply.is_(option, covered_by_spend=True) else gh
            unit = usd / billed_gh if billed_gh > 1e-9 else (od_rates.get((u["gpu_type"], u["region"]))
                                                             or od_price.get((u["gpu_type"], u["region"])) or 0.0)
            add(u["month"], start, end, ChargeCategory="Usage", ChargeFrequency="Usage-Based",
                ChargeDescription=f"{option.replace('_', '-')} {u['gpu_type']} GPU-hours in {u['region']}"
                + (f" ({covered:,.1f} of them paid by a savings plan)" if supply.is_(option, covered_by_spend=True) and covered > 1e-9
                   else ""),
                # listed and priced: the hours no savings plan paid (those it paid are listed on its Used rows)
                BilledCost=usd, EffectiveCost=usd, ListCost=billed_gh * unit, ContractedCost=billed_gh * unit,
                ContractedUnitPrice=unit, ListUnitPrice=unit, PricingQuantity=billed_gh,
                PricingUnit="GPU-Hours", PricingCategory=category, ConsumedQuantity=gh, ConsumedUnit="GPU-Hours",
                SkuId=f"{u['gpu_type']}/{u['region']}/{option}", x_Option=option, **pool)
    ext = float((plan.get("cost_usd") or {}).get("extension") or 0.0)
    if ext:  # columns added through the model's extension hook: their cost over the horizon, as one row
        add(lo.strftime("%Y-%m"), lo, hi, ChargeCategory="Usage", ChargeFrequency="Usage-Based",
            ChargeDescription="Cost of the model's extension columns (planner.plan(..., extend=...))",
            BilledCost=ext, EffectiveCost=ext, ListCost=ext, ContractedCost=ext, PricingQuantity=1.0,
            PricingUnit="Plan", PricingCategory="Standard", SkuId="extension", x_Source="plan")
    frames = [pd.DataFrame(rows)]
    if fleet is not None:
        from planner.export.focus_hourly import period_rows

        frames.append(period_rows(plan, fleet, commitments, base, lo, hi))
    out = pd.concat(frames, ignore_index=True).reindex(columns=COLUMNS)
    for col in ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost"):  # float noise (-1e-12) is 0
        v = pd.to_numeric(out[col], errors="coerce")
        out[col] = v.where(v.abs() > 1e-9, 0.0).where(v.notna(), out[col])
    out["x_ChargeType"] = out["ChargeCategory"]
    out["x_InvoiceIssuer"] = out["x_Provider"] = out["x_Publisher"] = provider
    # a stable id per purchase (its commitment id) and per pool (its usage rows); the extension row its SKU
    pool_id = "pool/" + out["x_GpuType"].astype(object) + "/" + out["RegionId"].astype(object)
    out["ResourceId"] = out["CommitmentDiscountId"].where(out["CommitmentDiscountId"].notna(),
                                                          pool_id.where(out["x_GpuType"].notna(), out["SkuId"]))
    out["ResourceName"] = out["ResourceId"]
    out["x_ResourceID"] = out["ResourceId"]  # 1.0's spelling
    out["SkuPriceId"] = out["SkuId"] + "/" + out["PricingCategory"].fillna("")
    out.loc[out["CapacityReservationId"].isna(), "CapacityReservationStatus"] = None
    out["Tags"] = json.dumps({"planner_plan": plan.get("name")})
    for c in DECIMALS:
        out[c] = pd.to_numeric(out[c]).astype(float)
    out = out.sort_values(["BillingPeriodStart", "ChargeCategory", "x_GpuType", "RegionId"],
                          kind="stable").reset_index(drop=True)
    if focus10_names:  # 1.0's ResourceID and 1.2's ResourceId: one only, or case-insensitive readers see two
        out = out.drop(columns=["ResourceId"]).rename(columns={c: c[2:] for c in V13 + COMPAT})
    return out


def decimal_text(x: float) -> str:
    """A number as FOCUS decimal text: positional (no exponent), the shortest digits that read back as the same
    float, at most 12 decimals, so that unit price x quantity gives the cost to the cent on every row."""
    return np.format_float_positional(x, precision=12, unique=True, trim="0")


def read_fleet(plan_file, plan: dict) -> pd.DataFrame:
    """The fleet.csv published beside ``plan_file`` (per period and pool: reserved owned / used, on-demand,
    spot), typed and checked against ``plan`` (:func:`planner.results.fleet_file.read_fleet_file`); InputError
    when it is missing or refused."""
    from pathlib import Path

    from planner.core.errors import InputError, Problem
    from planner.results.fleet_file import read_fleet_file

    path = Path(plan_file).with_name("fleet.csv")
    if not path.is_file():
        raise InputError(Problem(str(path), "the per-period export needs the plan's fleet.csv beside its plan.json",
                                 expected="the folder `planner plan` wrote (plan.json, fleet.csv)"))
    return read_fleet_file(path, plan)


def write_focus(plan_file, out, granularity: str = "month", **options) -> tuple:
    """Read ``plan_file`` (plan.json), write the FOCUS CSV to ``out`` whole or not at all; (path, rows).
    ``granularity`` ``"month"`` (usage rows per calendar month) or ``"period"`` (per period of the plan, from the
    fleet.csv beside plan.json: hourly for an hourly plan)."""
    import json
    from pathlib import Path

    from planner.core.atomic import atomic_path
    from planner.core.errors import InputError, Problem

    plan_file, out = Path(plan_file), Path(out)
    if out.is_dir() or out.suffix.lower() != ".csv":
        raise InputError(Problem("--out", "the FOCUS export is one CSV file", value=str(out),
                                 expected="a path ending in .csv"))
    if not plan_file.is_file():
        raise InputError(Problem(str(plan_file), "plan file not found", expected="a plan.json written by `planner plan`"))
    try:
        data = json.loads(plan_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(Problem(str(plan_file), f"not valid JSON ({exc})")) from None
    missing = [k for k in ("horizon", "reserved_purchases", "monthly_usage") if not isinstance(data, dict)
               or k not in data]
    if missing:
        raise InputError(Problem(str(plan_file), f"no {', '.join(missing)} in it",
                                 expected="a plan.json written by `planner plan` (version with monthly_usage)",
                                 hint="plan again with this version of planner"))
    if granularity not in ("month", "period"):
        raise InputError(Problem("--granularity", "unknown granularity", value=granularity, expected="month or period"))
    fleet = read_fleet(plan_file, data) if granularity == "period" else None
    try:
        frame = focus_frame(data, fleet=fleet, **options)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise InputError(Problem(str(plan_file), f"malformed plan.json ({type(exc).__name__}: {exc})",
                                 expected="a plan.json written by `planner plan`, unedited")) from None
    from planner.core.csvsafe import inert_frame

    with atomic_path(out) as tmp:  # text a spreadsheet would run as a formula gets a leading apostrophe
        inert_frame(frame).to_csv(tmp, index=False, float_format=decimal_text)
    return out, len(frame)

