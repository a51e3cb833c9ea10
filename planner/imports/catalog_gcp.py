"""``--from gcp-skus``: Cloud Billing Catalog API SKU lists (``{"skus": [{"name", "skuId", "description",
"category": {"resourceFamily", "resourceGroup", "usageType"}, "serviceRegions": [...], "pricingInfo":
[{"pricingExpression": {"usageUnit": "h", "tieredRates": [{"unitPrice": {"units", "nanos"}}]}}]}]}``) -> rows.

GPU SKUs (``resourceGroup = GPU``) price one GPU-hour, the GPU alone: the VM's vCPU and RAM are not included
unless ``--vm-hourly-usd-per-gpu`` gives them (added to every row as given); ``gpus_per_instance`` is 1.
``usageType``: OnDemand -> ``on_demand``, Preemptible -> ``spot``, Commit1Yr / Commit3Yr -> ``reserved_1y`` /
``reserved_3y`` (committed use discounts: ``guarantees_capacity = false``). The price is the last
``pricingInfo`` entry's first tier (``units + nanos / 1e9``); one row per region of ``serviceRegions``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import Collector, InputError, Problem
from .catalog import ImportOptions, Notes, offers, unknown_interruptions, usd_rates
from .catalog_gpus import gcp_gpu_names
from .catalog_read import load_json

USAGE = {"OnDemand": "on_demand", "Preemptible": "spot", "Commit1Yr": "reserved_1y", "Commit3Yr": "reserved_3y"}


def read(paths: list[Path], opts: ImportOptions, notes: Notes) -> pd.DataFrame:
    """Every file's GPU SKUs as offer rows; exit 2 on a file without ``skus`` or a GPU SKU without a price."""
    skus = pd.concat([_skus(p, opts, notes) for p in paths], ignore_index=True)
    gpu = skus["resourceGroup"].eq("GPU")
    name = gcp_gpu_names(skus["description"])
    unknown = gpu & name.isna()
    if unknown.any():
        notes.add(f"{int(unknown.sum())} GPU SKUs name no GPU the planner knows and were left out: "
                  + "; ".join(skus.loc[unknown, "description"].head(4)) + ".")
    use = skus[gpu & name.notna() & skus["usageType"].isin(list(USAGE))].assign(gpu_type=name)
    notes.add("GCP GPU SKUs price the GPU alone, per GPU-hour (gpus_per_instance 1): the VM's vCPU and RAM are "
              + (f"added as --vm-hourly-usd-per-gpu {opts.vm_hourly_usd_per_gpu:g} USD per GPU-hour to every row "
                 "(undiscounted on spot and commitments: an assumption)." if opts.vm_hourly_usd_per_gpu
                 else "NOT included (give --vm-hourly-usd-per-gpu to add them)."))
    rows = use.explode("serviceRegions")
    rows = rows[rows["serviceRegions"].notna()]
    option = rows["usageType"].map(USAGE)
    out = pd.DataFrame({"gpu_type": rows["gpu_type"], "region": rows["serviceRegions"].astype(str),
                        "instance_type": "GPU only", "gpus_per_instance": 1.0, "option": option,
                        "hourly_usd": rows["price"] + opts.vm_hourly_usd_per_gpu,
                        "guarantees_capacity": ~option.str.startswith("reserved"), "source": rows["source"],
                        "basis": "Cloud Billing Catalog " + rows["usageType"] + ": " + rows["description"]})
    if option.eq("spot").any():
        out.loc[option.eq("spot").to_numpy(), "interruptions_per_hour"] = unknown_interruptions(
            opts, notes, "GCP publishes no spot interruption rate")
    if option.str.startswith("reserved").any():
        notes.add("GCP Commit1Yr / Commit3Yr SKUs are committed use discounts (no capacity reserved): "
                  "guarantees_capacity = false.")
    return offers(out)


def _skus(path: Path, opts: ImportOptions, notes: Notes) -> pd.DataFrame:
    doc = load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("skus"), list):
        raise InputError(Problem(str(path), "not a Cloud Billing Catalog SKU list: no 'skus' list", column="skus",
                                 expected='{"skus": [...]} as services.skus.list returns it'))
    raw = doc["skus"]
    bad = Collector()
    for i, sku in enumerate(raw):
        if not isinstance(sku, dict) or not isinstance(sku.get("category", {}), dict):
            bad.add(str(path), f"SKU {i + 1} is not a SKU object", row=i + 1, column=f"skus[{i}]",
                    value=str(sku)[:60], expected='{"skuId", "description", "category": {...}, "pricingInfo": [...]}')
    bad.raise_if_any()
    cat = pd.json_normalize([s.get("category") or {} for s in raw])
    for col in ("resourceGroup", "usageType"):
        if col not in cat:
            cat[col] = ""
    rates = usd_rates(opts)
    price = np.full(len(raw), np.nan)
    converted: dict[str, int] = {}
    for i, sku in enumerate(raw):  # one price per SKU, nested three lists deep: not a column operation
        if cat["resourceGroup"].iat[i] != "GPU":
            continue
        try:
            value = _sku_price(path, i, sku, bad, rates)
        except (TypeError, AttributeError, KeyError, IndexError):  # a shape the API does not write
            bad.add(str(path), f"SKU {i + 1} ({str(sku.get('skuId', '?'))[:40]}): pricingInfo is not as the API "
                    "writes it", row=i + 1, column=f"skus[{i}].pricingInfo",
                    value=str(sku.get("pricingInfo"))[:60],
                    expected="pricingInfo[].pricingExpression.tieredRates[].unitPrice {currencyCode, units, nanos}")
            continue
        if value is not None:
            price[i], cur = value
            if cur != "USD":
                converted[cur] = converted.get(cur, 0) + 1
    bad.raise_if_any()
    for cur, n in converted.items():
        notes.add(f"{n} GPU SKU prices in {cur} converted to USD at --fx {cur}={rates[cur]:g} USD per {cur} "
                  "(the rate given on the command line).")
    return pd.DataFrame({"description": [str(s.get("description", "")) for s in raw],
                         "resourceGroup": cat["resourceGroup"].fillna("").astype(str),
                         "usageType": cat["usageType"].fillna("").astype(str),
                         "serviceRegions": [s.get("serviceRegions") if isinstance(s.get("serviceRegions"), list)
                                            else [] for s in raw], "price": price,
                         "source": [f"{path.name}: sku {i + 1} ({s.get('skuId', '?')})" for i, s in enumerate(raw)]})


def _sku_price(path: Path, i: int, sku: dict, bad: Collector, rates: dict) -> tuple[float, str] | None:
    """The USD price of GPU SKU ``i`` and its currency, or None with the problem added to ``bad``."""
    info = sku.get("pricingInfo")
    if not info:
        bad.add(str(path), f"SKU {i + 1} ({sku.get('skuId', '?')}) has no pricingInfo", row=i + 1,
                column="pricingInfo", expected="pricingInfo[].pricingExpression.tieredRates[].unitPrice")
        return None
    expr = (info[-1] or {}).get("pricingExpression", {})
    tiers = expr.get("tieredRates") or []
    unit = (tiers[0] or {}).get("unitPrice") if tiers else None
    if not unit or expr.get("usageUnit", "h") != "h":
        bad.add(str(path), f"SKU {i + 1} ({sku.get('skuId', '?')}) has no hourly unitPrice", row=i + 1,
                column="pricingInfo", value=expr.get("usageUnit"),
                expected="usageUnit 'h' and tieredRates[0].unitPrice {units, nanos}")
        return None
    parts = {}
    for fld in ("units", "nanos"):
        raw_value = unit.get(fld)
        try:
            parts[fld] = float(raw_value or 0)
        except (TypeError, ValueError, OverflowError):
            parts[fld] = np.nan
        if not np.isfinite(parts[fld]) or parts[fld] < 0:
            bad.add(str(path), f"SKU {i + 1} ({sku.get('skuId', '?')}): unitPrice.{fld} is not a number",
                    row=i + 1, column=f"pricingInfo[-1].pricingExpression.tieredRates[0].unitPrice.{fld}",
                    value=str(raw_value)[:60], expected="a whole number >= 0 (as text or a number), e.g. \"2\" or 933908000")
            return None
    cur = str(unit.get("currencyCode") or "USD").strip().upper()
    if cur not in rates:
        bad.add(str(path), f"SKU {i + 1} ({sku.get('skuId', '?')}) is priced in {cur}, not USD", row=i + 1,
                column="pricingInfo[-1].pricingExpression.tieredRates[0].unitPrice.currencyCode", value=cur,
                expected=f"USD, or --fx {cur}=RATE (USD per {cur}) to convert it")
        return None
    return (parts["units"] + parts["nanos"] / 1e9) * rates[cur], cur
