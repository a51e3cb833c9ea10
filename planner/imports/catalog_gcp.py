"""``--from gcp-skus``: Cloud Billing Catalog API SKU lists (``{"skus": [{"name", "skuId", "description",
"category": {"resourceFamily", "resourceGroup", "usageType"}, "serviceRegions": [...], "pricingInfo":
[{"pricingExpression": {"usageUnit": "h", "tieredRates": [{"unitPrice": {"units", "nanos"}}]}}]}]}``) -> rows.

GPU SKUs (``resourceGroup = GPU``) price one GPU-hour, the GPU alone: the VM's vCPU and RAM are not included
unless ``--vm-hourly-usd-per-gpu`` gives them (added to every row as given); ``gpus_per_instance`` is 1.
``usageType``: OnDemand -> ``on_demand``, Preemptible -> ``spot``, Commit1Yr / Commit3Yr -> ``reserved_1y`` /
``reserved_3y`` (committed use discounts: ``guarantees_capacity = false``). The price is the last
``pricingInfo`` entry's first tier (``units + nanos / 1e9``); one row per region of ``serviceRegions``. A price
in another currency than USD (``unitPrice.currencyCode``) is converted at the rate ``--fx CUR=RATE`` gives, else
exits 2 naming the SKU; a SKU that is not an object, or fields of the wrong shape, exit 2 naming their JSON path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.errors import Collector, InputError, Problem
from planner.imports.catalog import ImportOptions, Notes, offers, unknown_interruptions
from planner.imports.catalog_gpus import gcp_gpu_names
from planner.imports.catalog_read import load_json
from planner.imports.guards import usd_rates

USAGE = {"OnDemand": "on_demand", "Preemptible": "spot", "Commit1Yr": "reserved_1y", "Commit3Yr": "reserved_3y"}


def read(paths: list[Path], opts: ImportOptions, notes: Notes) -> pd.DataFrame:
    """Every file's GPU SKUs as offer rows; exit 2 on a file without ``skus`` or a GPU SKU without a price."""
    skus = pd.concat([_skus(p) for p in paths], ignore_index=True)
    gpu = skus["resourceGroup"].eq("GPU")
    name = gcp_gpu_names(skus["description"])
    unknown = gpu & name.isna()
    if unknown.any():
        notes.add(f"{int(unknown.sum())} GPU SKUs name no GPU the planner knows and were left out: "
                  + "; ".join(skus.loc[unknown, "description"].head(4)) + ".")
    other = gpu & name.notna() & ~skus["usageType"].isin(list(USAGE))
    if other.any():
        kinds = skus.loc[other, "usageType"].replace("", "(none)").value_counts()
        notes.add(f"{int(other.sum())} GPU SKUs of a usageType other than {', '.join(USAGE)} were left out: "
                  + ", ".join(f"{k} {v}" for k, v in kinds.items()) + ".")
    nowhere = gpu & name.notna() & skus["usageType"].isin(list(USAGE)) & skus["serviceRegions"].map(len).eq(0)
    if nowhere.any():
        notes.add(f"{int(nowhere.sum())} GPU SKUs name no serviceRegions and were left out: "
                  + "; ".join(skus.loc[nowhere, "source"].head(4)) + ".")
    use = skus[gpu & name.notna() & skus["usageType"].isin(list(USAGE))].assign(gpu_type=name)
    rate = usd_rates(use["currency"], opts.fx, use["_file"], use["_row"],
                     use["_row"].map(lambda r: f"skus[{r - 1}].{UNIT_PATH}.currencyCode"), notes, "GCP GPU SKUs")
    use = use.assign(price=use["price"] * rate)
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


UNIT_PATH = "pricingInfo[-1].pricingExpression.tieredRates[0].unitPrice"


def _short(value):
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return value
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _skus(path: Path) -> pd.DataFrame:
    doc = load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("skus"), list):
        raise InputError(Problem(str(path), "not a Cloud Billing Catalog SKU list: no 'skus' list", column="skus",
                                 expected='{"skus": [...]} as services.skus.list returns it'))
    raw = doc["skus"]
    bad = Collector()
    rows = []
    for i, sku in enumerate(raw):  # one price per SKU, nested three lists deep: not a column operation
        row = _sku(path, i, sku, bad)
        if row is not None:
            rows.append(row)
    bad.raise_if_any()
    cols = ["description", "resourceGroup", "usageType", "serviceRegions", "price", "currency", "source", "_row",
            "_file"]
    return pd.DataFrame(rows, columns=cols)


def _sku(path: Path, i: int, sku, bad: Collector):
    """One SKU as a row (None when it is not an object: reported to ``bad`` with its JSON path)."""
    where, file, sid = f"skus[{i}]", str(path), "?"
    if not isinstance(sku, dict):
        bad.add(file, f"SKU {i + 1} is not an object", row=i + 1, column=where, value=_short(sku),
                expected='{"skuId": ..., "category": {...}, "serviceRegions": [...], "pricingInfo": [...]}')
        return None
    sid = str(sku.get("skuId", "?"))
    cat = sku.get("category") if sku.get("category") is not None else {}
    regions = sku.get("serviceRegions") if sku.get("serviceRegions") is not None else []
    if not isinstance(cat, dict):
        bad.add(file, f"SKU {i + 1} ({sid}): category is not an object", row=i + 1, column=f"{where}.category",
                value=_short(cat), expected='{"resourceGroup": ..., "usageType": ...}')
        return None
    if not isinstance(regions, list) or not all(isinstance(r, str) for r in regions):
        bad.add(file, f"SKU {i + 1} ({sid}): serviceRegions is not a list of region names", row=i + 1,
                column=f"{where}.serviceRegions", value=_short(regions), expected='e.g. ["us-central1"]')
        return None
    group, usage = cat.get("resourceGroup"), cat.get("usageType")
    group = group if isinstance(group, str) else ""
    usage = usage if isinstance(usage, str) else ""
    desc = sku.get("description", "")
    price, currency = np.nan, "USD"
    if group == "GPU":
        price, currency = _price(file, i, sid, sku.get("pricingInfo"), bad)
    return {"description": desc if isinstance(desc, str) else str(desc), "resourceGroup": group, "usageType": usage,
            "serviceRegions": regions, "price": price, "currency": currency,
            "source": f"{path.name}: sku {i + 1} ({sid})", "_row": i + 1, "_file": file}


def _price(file: str, i: int, sid: str, info, bad: Collector) -> tuple[float, str]:
    """(price, currency) of a GPU SKU's last pricingInfo entry, first tier; NaN with the problem reported."""
    where = f"skus[{i}]"
    if not info:
        bad.add(file, f"SKU {i + 1} ({sid}) has no pricingInfo", row=i + 1, column="pricingInfo",
                expected="pricingInfo[].pricingExpression.tieredRates[].unitPrice")
        return np.nan, "USD"
    last = info[-1] if isinstance(info, list) else None
    expr = last.get("pricingExpression") if isinstance(last, dict) else None
    tiers = expr.get("tieredRates") if isinstance(expr, dict) else None
    first = tiers[0] if isinstance(tiers, list) and tiers else None
    unit = first.get("unitPrice") if isinstance(first, dict) else None
    if not isinstance(unit, dict) or not isinstance(expr, dict) or expr.get("usageUnit", "h") != "h":
        bad.add(file, f"SKU {i + 1} ({sid}) has no hourly unitPrice", row=i + 1, column=f"{where}.pricingInfo",
                value=_short(expr.get("usageUnit") if isinstance(expr, dict) else info),
                expected="a list whose last entry has pricingExpression {usageUnit 'h', "
                         "tieredRates[0].unitPrice {units, nanos}}")
        return np.nan, "USD"
    parts = {}
    for fld in ("units", "nanos"):
        raw_value = unit.get(fld)
        try:
            parts[fld] = float(raw_value or 0) if not isinstance(raw_value, (bool, dict, list)) else np.nan
        except (TypeError, ValueError, OverflowError):
            parts[fld] = np.nan
        if not np.isfinite(parts[fld]) or parts[fld] < 0:
            bad.add(file, f"SKU {i + 1} ({sid}): unitPrice.{fld} is not a number", row=i + 1,
                    column=f"pricingInfo[-1].pricingExpression.tieredRates[0].unitPrice.{fld}",
                    value=_short(raw_value), expected="a whole number >= 0 (as text or a number), e.g. \"2\" or 933908000")
            return np.nan, "USD"
    price = parts["units"] + parts["nanos"] / 1e9
    if not price > 0:
        bad.add(file, f"SKU {i + 1} ({sid}): a price of zero", row=i + 1, column=f"{where}.{UNIT_PATH}",
                value=f"units {unit.get('units')!r}, nanos {unit.get('nanos')!r}",
                expected="the GPU's price per hour (> 0)")
        return np.nan, "USD"
    currency = unit.get("currencyCode", "USD")
    if not isinstance(currency, str):
        bad.add(file, f"SKU {i + 1} ({sid}): currencyCode is not text", row=i + 1,
                column=f"{where}.{UNIT_PATH}.currencyCode", value=_short(currency), expected='e.g. "USD"')
        return np.nan, "USD"
    return price, currency
