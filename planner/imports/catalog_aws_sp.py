"""AWS Savings Plans rate files (``AWSComputeSavingsPlan`` CSV: 5 metadata lines, then ``SKU, RateCode, Unit,
EffectiveDate, DiscountedRate, ..., DiscountedUsageType, DiscountedOperation, PurchaseOption,
LeaseContractLength, LeaseContractLengthUnit, ..., Instance Family, ..., Product Family, DiscountedRegionCode,
DiscountedInstanceType``; or its JSON: ``products[]`` and ``terms.savingsPlan[].rates[]``) -> savings-plan rows.

A rate is the discounted price of one instance-hour; divided by the instance's GPUs it is the row's
``hourly_usd``. ``upfront_usd`` is per USD/h committed (docs/commitments.md): All Upfront prepays the term's
hours (8,760 a year), Partial Upfront half of them (AWS asks for at least half: half is assumed), No Upfront 0.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from planner.core.errors import Collector, InputError, Problem
from planner.imports.catalog import ImportOptions, Notes, offers
from planner.imports.catalog_read import header_line, load_json, numbers, read_csv, require_columns

META_LINES = 5
NEEDED = ["DiscountedRate", "DiscountedUsageType", "DiscountedOperation", "PurchaseOption", "LeaseContractLength",
          "Product Family", "DiscountedRegionCode", "DiscountedInstanceType", "Unit"]
KINDS = {"ComputeSavingsPlans": "compute", "EC2InstanceSavingsPlans": "instance"}
PREPAID_SHARE = {"all_upfront": 1.0, "partial_upfront": 0.5, "no_upfront": 0.0}


def is_json(path: Path) -> bool:
    """True for a ``.json`` or ``.json.gz`` file."""
    return path.name.lower().endswith((".json", ".json.gz"))


def is_savings_plan_file(path: Path) -> bool:
    """True for a Savings Plans rates file (a JSON document, or a CSV whose header has DiscountedRate, on row 6
    or, when the metadata lines are missing, on row 1)."""
    if is_json(path):
        return True
    return "DiscountedRate" in header_line(path, META_LINES) or "DiscountedRate" in header_line(path, 0)


def require_aws_header(path: Path, needed) -> None:
    """Exit 2 unless the header on row 6 (after AWS's 5 metadata lines) has every column of ``needed``; a file
    whose header is on row 1 gets one clear error (the metadata lines are missing), not one per column."""
    header = header_line(path, META_LINES)
    if all(c in header for c in needed):
        return
    first = header_line(path, 0)
    if sum(c in first for c in needed) >= len(needed) // 2:
        raise InputError(Problem(str(path), "the 5 metadata lines of an AWS offer file are missing (header "
                                 "expected on row 6)", row=1, value=",".join(first[:3]) + ",...",
                                 expected="the file as AWS publishes it: 5 metadata lines (FormatVersion, "
                                          "Disclaimer, Publication Date, Version, OfferCode), then the header"))
    require_columns(str(path), header, needed, META_LINES + 1)


def read_savings_plans(paths: list[Path], sizes: pd.DataFrame, opts: ImportOptions, notes: Notes) -> pd.DataFrame:
    """Rates of every file for the GPU instance types in ``sizes`` (instance_type, gpu_type, gpus_per_instance)."""
    bad = Collector()
    rates = pd.concat([_json(p) if is_json(p) else _csv(p) for p in paths], ignore_index=True)
    rates["rate"] = numbers(rates, "DiscountedRate", "savings plan rates", bad, blank_ok=False, low=0,
                            strictly_above=True, expected="USD per instance-hour (> 0)")
    bad.raise_if_any()
    linux = (rates["DiscountedUsageType"].str.contains("BoxUsage:", regex=False) & rates["DiscountedOperation"].eq("RunInstances")
             & rates["Unit"].isin(["Hrs", ""]) & rates["Product Family"].isin(list(KINDS)))
    r = rates[linux].merge(sizes, left_on="DiscountedInstanceType", right_on="instance_type", how="inner")
    years = pd.to_numeric(r["LeaseContractLength"], errors="coerce")
    payment = r["PurchaseOption"].str.lower().str.replace(" ", "_")
    kind = r["Product Family"].map(KINDS)
    family = r["Instance Family"].where(r["Instance Family"].ne(""), r["instance_type"].str.split(".").str[0])
    out = pd.DataFrame({"gpu_type": r["gpu_type"], "region": r["DiscountedRegionCode"], "instance_type": r["instance_type"],
                        "gpus_per_instance": r["gpus_per_instance"], "hourly_usd": r["rate"], "payment": payment,
                        "option": "savings_plan_" + years.astype("Int64").astype(str) + "y_" + kind + "_" + payment,
                        "upfront_usd": years * 8760.0 * payment.map(PREPAID_SHARE),
                        "plan_family": kind.where(kind.eq("compute"), family + "-" + r["DiscountedRegionCode"]),
                        "source": r["_source"], "basis": "Savings Plans rate (" + r["Product Family"] + ", " + r["PurchaseOption"] + ")"})
    out = out[years.isin([1, 3]).to_numpy() & payment.isin(list(PREPAID_SHARE)).to_numpy()]
    notes.add("Savings Plans: shared-tenancy Linux rates (DiscountedUsageType *BoxUsage:*, DiscountedOperation "
              "RunInstances) of the GPU instance types priced by the offer file; hourly_usd = rate / GPUs; upfront_usd "
              "per USD/h committed: All Upfront = the term's hours (8760 per year), Partial Upfront = half (assumed; "
              "AWS asks for at least half), No Upfront = 0; a Compute Savings Plan is one commitment (plan_family "
              "compute), an EC2 Instance Savings Plan one per family and region.")
    return offers(out)


def _csv(path: Path) -> pd.DataFrame:
    require_aws_header(path, NEEDED)
    df = read_csv(path, skip=META_LINES, usecols=NEEDED + ["Instance Family"], chunksize=200_000,
                  keep=lambda c: c["DiscountedUsageType"].str.contains("BoxUsage:", regex=False))
    if "Instance Family" not in df:
        df["Instance Family"] = ""
    return df.assign(_source=path.name + ":" + df["_row"].astype(str))


def _json(path: Path) -> pd.DataFrame:
    doc = load_json(path)
    terms = doc.get("terms", {}).get("savingsPlan") if isinstance(doc, dict) else None
    if not isinstance(terms, list):
        raise InputError(Problem(str(path), "no 'terms.savingsPlan' list", column="terms",
                                 expected="an AWS Savings Plans rates file (products, terms.savingsPlan[].rates[])"))
    products = pd.json_normalize(doc.get("products", []))
    fam = {} if products.empty else dict(zip(products["sku"], products.get("productFamily", "")))
    opt = {} if products.empty else dict(zip(products["sku"], products.get("attributes.purchaseOption", "")))
    ifam = {} if products.empty else dict(zip(products["sku"], products.get("attributes.instanceType", "")))
    rows = pd.json_normalize(terms, record_path="rates", meta=["sku", ["leaseContractLength", "duration"]],
                             errors="ignore")
    if rows.empty:
        return pd.DataFrame(columns=NEEDED + ["Instance Family", "_source", "_row"])
    rows["_row"] = range(1, len(rows) + 1)
    get = lambda c: rows[c].astype(str) if c in rows else pd.Series("", index=rows.index)  # noqa: E731
    return pd.DataFrame({"DiscountedRate": get("discountedRate.price"), "DiscountedUsageType": get("discountedUsageType"),
                         "DiscountedOperation": get("discountedOperation"), "Unit": get("unit"),
                         "PurchaseOption": _text(rows["sku"].map(opt)),
                         "LeaseContractLength": get("leaseContractLength.duration"),
                         "Product Family": _text(rows["sku"].map(fam)),
                         "DiscountedRegionCode": get("discountedRegionCode"),
                         "DiscountedInstanceType": get("discountedInstanceType"),
                         "Instance Family": _text(rows["sku"].map(ifam)),
                         "_row": rows["_row"], "_source": path.name + ": rate " + rows["_row"].astype(str)})




def _text(values: pd.Series) -> pd.Series:
    """Text cells, "" where missing."""
    obj = values.astype(object)
    return obj.where(obj.notna(), "").astype(str)
