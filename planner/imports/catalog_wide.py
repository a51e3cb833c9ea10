"""``--from wide``: the wide real price sheets (``../shared/data/real/prices_{aws,azure,gcp}.csv``: one row per
provider, region and instance type, with on-demand, spot and 1y/3y reserved prices per instance) -> offer rows.

Rules: only ``location_type == region`` rows (``--all-locations`` keeps AWS Local/Wavelength zones); only GPU
rows where ``accelerator_kind`` says (AWS's Inferentia/Trainium are left out); AWS ``interruption_bucket`` ->
``interruptions_per_hour`` by ``--interruption-rule`` (``catalog.INTERRUPTION_BUCKETS``, % a month / 730);
the sheets' reserved prices are effective hourly rates (AWS: Standard RI No Upfront; GCP: resource-based
CUDs, which reserve no capacity: ``guarantees_capacity = false``); each row's own ``spot_price_kind``,
``reserved_kind`` and ``price_basis`` go into the provenance table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import Collector
from .catalog import INTERRUPTION_BUCKETS, ImportOptions, Notes, interruption_rate, offers, unknown_interruptions
from .catalog_read import numbers, read_csv, require_columns

NEEDED = ["region", "gpu_type", "gpus_per_instance", "instance_type", "on_demand_hourly_usd"]


def read(paths: list[Path], opts: ImportOptions, notes: Notes) -> pd.DataFrame:
    """Every sheet's rows as offer rows; exit 2 naming file, row and column of every bad cell."""
    bad = Collector()
    parts = [_read_one(path, opts, notes, bad) for path in paths]
    bad.raise_if_any()
    return pd.concat(parts, ignore_index=True)


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name].astype(str).str.strip() if name in df else pd.Series("", index=df.index)


def _read_one(path: Path, opts: ImportOptions, notes: Notes, bad: Collector) -> pd.DataFrame:
    file = str(path)
    df = read_csv(path)
    require_columns(file, df.columns, NEEDED, 1)
    keep = pd.Series(True, index=df.index)
    where = _col(df, "location_type")
    if not opts.all_locations and where.ne("").any():
        local = where.ne("region")
        if local.any():
            notes.add(f"{path.name}: {int(local.sum())} rows of Local/Wavelength zones left out (location_type != "
                      "region; --all-locations keeps them).")
        keep &= ~local
    kind = _col(df, "accelerator_kind")
    if kind.ne("").any():
        asic = kind.ne("gpu") & kind.ne("")
        if asic.any():
            notes.add(f"{path.name}: {int(asic.sum())} rows of non-GPU accelerators ("
                      + ", ".join(sorted(df.loc[asic, "gpu_type"].unique())) + ") left out (accelerator_kind != gpu).")
        keep &= ~asic
    m = numbers(df, "gpus_per_instance", file, bad, blank_ok=False, low=0, strictly_above=True,
                expected="GPUs per instance (> 0)", mask=keep)
    price = {c: numbers(df, f"{c}_hourly_usd", file, bad, blank_ok=True, low=0, strictly_above=True,
                        expected="USD per instance-hour (> 0) or blank", mask=keep)
             for c in ("on_demand", "spot", "reserved_1y", "reserved_3y")}
    provider = _col(df, "provider").str.lower()
    base = pd.DataFrame({"gpu_type": df["gpu_type"].str.strip(), "region": df["region"].str.strip(),
                         "instance_type": df["instance_type"].str.strip(), "gpus_per_instance": m,
                         "source": path.name + ":" + df["_row"].astype(str)})
    rows = [base.assign(option="on_demand", hourly_usd=price["on_demand"],
                        basis=("on-demand list price; " + _col(df, "price_basis")).str.rstrip("; "))]
    spot_rate = _interruptions(df, opts, notes, path.name)
    rows.append(base.assign(option="spot", hourly_usd=price["spot"], interruptions_per_hour=spot_rate,
                            basis=_col(df, "spot_price_kind") + "; interruptions: " + _bucket_basis(df, opts)))
    cud = provider.eq("gcp")
    if (cud & (price["reserved_1y"].notna() | price["reserved_3y"].notna())).any():
        notes.add(f"{path.name}: GCP reserved prices are committed use discounts, which reserve no capacity: their "
                  "rows carry guarantees_capacity = false (they count against an on-demand cap).")
    for term in ("1y", "3y"):
        rows.append(base.assign(option=f"reserved_{term}", hourly_usd=price[f"reserved_{term}"],
                                guarantees_capacity=~cud, basis=_col(df, "reserved_kind")))
    notes.add(f"{path.name}: reserved_1y / reserved_3y are the sheet's effective hourly rates (recurring, no "
              "upfront): " + "; ".join(sorted(_col(df, "reserved_kind")[keep].replace("", np.nan).dropna().unique())[:3]))
    out = pd.concat(rows, ignore_index=True)
    return offers(out[np.tile(keep.to_numpy(), len(rows)) & out["hourly_usd"].notna()])


def _bucket_basis(df: pd.DataFrame, opts: ImportOptions) -> pd.Series:
    bucket = _col(df, "interruption_bucket")
    return ("AWS Spot Advisor bucket " + bucket + f", {opts.interruption_rule} rule").where(bucket.ne(""), "assumed")


def _interruptions(df: pd.DataFrame, opts: ImportOptions, notes: Notes, name: str) -> pd.Series:
    """Interruptions per instance-hour of each row's spot price: its AWS bucket by ``--interruption-rule``, else
    the rate for sources that publish none."""
    bucket = _col(df, "interruption_bucket")
    pct = bucket.map({k: v[opts.interruption_rule] for k, v in INTERRUPTION_BUCKETS.items()})
    rate = pd.Series(interruption_rate(pct), index=df.index)
    has_spot = _col(df, "spot_hourly_usd").ne("")
    if (has_spot & bucket.ne("")).any():
        table = ", ".join(f"{k} -> {v[opts.interruption_rule]:g} %" for k, v in INTERRUPTION_BUCKETS.items())
        notes.add(f"{name}: spot interruptions from the AWS Spot Advisor bucket (share of instances interrupted per "
                  f"month) by --interruption-rule {opts.interruption_rule}: {table}; a month is 730 instance-hours, "
                  f"so e.g. <5% -> {float(interruption_rate(INTERRUPTION_BUCKETS['<5%'][opts.interruption_rule])):.6g}"
                  " per instance-hour (>20% has no published upper bound: 20/30/50 % for low/mid/high is assumed).")
    unknown = has_spot & rate.isna()
    if unknown.any():
        fill = unknown_interruptions(opts, notes, f"{name} gives no interruption bucket for "
                                     f"{int(unknown.sum())} rows with a spot price")
        rate = rate.fillna(fill)
    return rate
