"""``--from aws-pricelist``: the AWS Price List EC2 offer file in CSV form (5 metadata lines, then ``SKU,
OfferTermCode, RateCode, TermType, PriceDescription, ..., Unit, PricePerUnit, ..., LeaseContractLength,
PurchaseOption, OfferingClass, ..., Instance Type, ..., Tenancy, Operating System, ..., CapacityStatus, ..., GPU,
..., Pre Installed S/W, ..., Region Code, ...``), with Savings Plans rate files (CSV or JSON) among the FILEs.

Rules: Linux, Shared tenancy, no pre-installed software, ``CapacityStatus = Used``, USD; GPU instances only
(``GPU`` > 0), their model from the instance family (``catalog_gpus.AWS_FAMILIES``); ``OnDemand`` ``Hrs`` ->
``on_demand``; ``Reserved`` terms (``--ri-class``) -> ``reserved_<1y|3y>[_convertible]_<payment>``, the ``Hrs``
row as ``hourly_usd`` and the ``Upfront Fee`` (``Quantity``) row as ``upfront_usd`` (docs/commitments.md,
"payment options"); Savings Plans rates (shared-tenancy ``BoxUsage``, Linux ``RunInstances``) -> rows
``savings_plan_<n>y_<compute|instance>_<payment>`` priced at their discounted rate, plan_family ``compute``
(one commitment over every region) or ``<family>-<region>`` (an EC2 Instance Savings Plan).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from planner.core.errors import Collector, InputError, Problem
from planner.imports.catalog import ImportOptions, Notes, offers
from planner.imports.catalog_aws_sp import NEEDED as SP_NEEDED
from planner.imports.catalog_aws_sp import is_json, is_savings_plan_file, read_savings_plans, require_aws_header
from planner.imports.catalog_gpus import aws_family_gpus
from planner.imports.catalog_read import numbers, read_csv

META_LINES = 5
NEEDED = ["SKU", "OfferTermCode", "TermType", "Unit", "PricePerUnit", "Currency", "LeaseContractLength",
          "PurchaseOption", "OfferingClass", "Instance Type", "Operating System", "Tenancy", "Pre Installed S/W",
          "CapacityStatus", "GPU", "Region Code"]


def read(paths: list[Path], opts: ImportOptions, notes: Notes) -> pd.DataFrame:
    """Offer files -> on-demand and reserved rows; rate files -> savings-plan rows of the same instance types."""
    bad = Collector()
    sp_files = [p for p in paths if is_savings_plan_file(p)]
    for p in sp_files:
        if not is_json(p):
            require_aws_header(p, SP_NEEDED)
    parts = [_read_offers(p, opts, notes, bad) for p in paths if p not in sp_files]
    bad.raise_if_any()
    if not parts:
        raise InputError(Problem(", ".join(map(str, paths)), "no EC2 offer file among the files (only Savings Plans "
                                 "rates)", expected="the AmazonEC2 offer file (index.csv) too: it prices on-demand"))
    out = pd.concat(parts, ignore_index=True)
    if sp_files:
        sizes = out[["instance_type", "gpu_type", "gpus_per_instance"]].drop_duplicates("instance_type")
        out = pd.concat([out, read_savings_plans(sp_files, sizes, opts, notes)], ignore_index=True)
    return out


def _read_offers(path: Path, opts: ImportOptions, notes: Notes, bad: Collector) -> pd.DataFrame:
    file = str(path)
    require_aws_header(path, NEEDED)

    def keep(c: pd.DataFrame) -> pd.Series:
        return (c["Operating System"].eq("Linux") & c["Tenancy"].eq("Shared") & c["Pre Installed S/W"].isin(["NA", ""])
                & c["CapacityStatus"].eq("Used") & ~c["GPU"].isin(["", "0", "NA"]) & c["Currency"].isin(["USD", ""]))

    df = read_csv(path, skip=META_LINES, usecols=NEEDED, chunksize=200_000, keep=keep)
    notes.add(f"{path.name}: rows kept: Operating System Linux, Tenancy Shared, Pre Installed S/W NA, CapacityStatus "
              "Used, a GPU count; prices in USD per instance-hour.")
    gpus = numbers(df, "GPU", file, bad, blank_ok=False, low=0, strictly_above=True, expected="GPUs per instance (> 0)")
    price = numbers(df, "PricePerUnit", file, bad, blank_ok=False, low=0, expected="USD (>= 0)")
    model = aws_family_gpus(df["Instance Type"])
    if model.isna().any():
        notes.add(f"{path.name}: instance types of families without a known GPU model left out: "
                  + ", ".join(sorted(df.loc[model.isna(), "Instance Type"].unique())[:10]) + ".")
    base = pd.DataFrame({"gpu_type": model, "region": df["Region Code"].str.strip(),
                         "instance_type": df["Instance Type"].str.strip(), "gpus_per_instance": gpus,
                         "price": price, "source": path.name + ":" + df["_row"].astype(str)})
    od_mask = df["TermType"].eq("OnDemand") & df["Unit"].eq("Hrs")
    od = base[od_mask].assign(option="on_demand", hourly_usd=lambda x: x["price"],
                              basis="Price List OnDemand, Linux, Shared")
    return offers(pd.concat([od, _reserved(df, base, opts, notes, path.name)], ignore_index=True))


def _reserved(df: pd.DataFrame, base: pd.DataFrame, opts: ImportOptions, notes: Notes, name: str) -> pd.DataFrame:
    """Each Reserved term (SKU x OfferTermCode): its hourly row and its upfront fee as one offer row."""
    res = df["TermType"].eq("Reserved")
    cls = df["OfferingClass"].str.lower()
    if opts.ri_class != "all":
        res &= cls.eq(opts.ri_class)
    notes.add(f"{name}: Reserved Instances of offering class {opts.ri_class} (--ri-class); each term is its 'Hrs' "
              "row (hourly_usd) and its 'Upfront Fee' row (upfront_usd), per instance, then per GPU.")
    r = base[res].assign(key=df["SKU"] + "." + df["OfferTermCode"], unit=df["Unit"],
                         term=df["LeaseContractLength"].str.replace("yr", "y").str.strip(),
                         payment=df["PurchaseOption"].str.lower().str.replace(" ", "_"),
                         convertible=cls.eq("convertible"))
    hourly = r[r["unit"].eq("Hrs")].drop_duplicates("key").set_index("key")
    upfront = r[r["unit"].eq("Quantity")].groupby("key")["price"].sum()
    hourly = hourly.assign(hourly_usd=hourly["price"], upfront_usd=upfront.reindex(hourly.index).fillna(0.0).to_numpy())
    hourly["option"] = ("reserved_" + hourly["term"] + hourly["convertible"].map({True: "_convertible", False: ""})
                        + "_" + hourly["payment"])
    hourly["basis"] = ("Price List Reserved " + hourly["term"] + " " + hourly["payment"].str.replace("_", " ")
                       + hourly["convertible"].map({True: " convertible", False: " standard"}))
    ok = hourly["term"].isin(["1y", "3y"]) & hourly["payment"].isin(["all_upfront", "partial_upfront", "no_upfront"])
    return hourly[ok].reset_index(drop=True)
