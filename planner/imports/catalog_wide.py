"""``--from wide``: the wide real price sheets (``../shared/data/real/prices_{aws,azure,gcp}.csv``: one row per
provider, region and instance type, with on-demand, spot and 1y/3y reserved prices per instance) -> offer rows.

Rules: only ``location_type == region`` rows (``--all-locations`` keeps AWS Local/Wavelength zones); only GPU
rows where ``accelerator_kind`` says (AWS's Inferentia/Trainium are left out); AWS ``interruption_bucket`` ->
``interruptions_per_hour`` by ``--interruption-rule`` (``catalog.INTERRUPTION_BUCKETS``, % a month / 730);
the sheets' reserved prices are effective hourly rates (AWS: Standard RI No Upfront; GCP: resource-based
CUDs, which reserve no capacity: ``guarantees_capacity = false``); each row's own ``spot_price_kind``,
``reserved_kind`` and ``price_basis`` go into the provenance table.

Refused (exit 2, naming the source file and row): an ``interruption_bucket`` not among the Spot Advisor buckets;
rows of several providers in one run (one cloud per run: the planner's sheet refuses a region spelled two ways,
and AWS ``us-east-1`` / GCP ``us-east1`` are); two rows of one provider, region and instance type with different
prices. Dropped, each counted in the notes: exact repeats of a row, rows with no price at all, rows with spot or
reserved prices but no on-demand price. AWS ``g6f`` / ``gr6f`` rows (upstream label ``L40 (upstream label;
fractional GPU)``: fractions of an NVIDIA L4) are named ``L4-fractional``; any other upstream label is warned of.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.errors import Collector, InputError, Problem
from planner.imports.catalog import INTERRUPTION_BUCKETS, ImportOptions, Notes, interruption_rate, offers, unknown_interruptions
from planner.imports.catalog_read import numbers, read_csv, require_columns

NEEDED = ["region", "gpu_type", "gpus_per_instance", "instance_type", "on_demand_hourly_usd"]
PRICES = ("on_demand", "spot", "reserved_1y", "reserved_3y")
FRACTIONAL_L4 = ("g6f", "gr6f")  # AWS families selling fractions of an NVIDIA L4


def _rows(rows: pd.Series) -> str:
    shown = ", ".join(map(str, rows.head(12)))
    return shown + (" ..." if len(rows) > 12 else "")


def read(paths: list[Path], opts: ImportOptions, notes: Notes) -> pd.DataFrame:
    """Every sheet's rows as offer rows; exit 2 naming file, row and column of every bad cell."""
    bad = Collector()
    parts = [_read_one(path, opts, notes, bad) for path in paths]
    bad.raise_if_any()
    found = pd.concat([info for _, info in parts], ignore_index=True)
    _one_provider(found)
    repeats = _duplicates(found, notes)
    out = pd.concat([o for o, _ in parts], ignore_index=True)
    return out[~out["source"].isin(repeats)]


def _one_provider(found: pd.DataFrame) -> None:
    """One cloud per run: exit 2 naming the first row of a second provider (and the first of the first)."""
    named = found[found["provider"].ne("")]
    if named["provider"].nunique() <= 1:
        return
    first = named.iloc[0]
    other = named[named["provider"].ne(first["provider"])].iloc[0]
    raise InputError(Problem(other["file"], f"a row of provider '{other['provider']}' in a run that began with "
                             f"provider '{first['provider']}' ({first['file']}, row {first['row']})",
                             row=int(other["row"]), column="provider", value=other["provider"],
                             expected="one cloud per `--from wide` run (the planner's sheet refuses a region spelled "
                                      "two ways, e.g. AWS us-east-1 and GCP us-east1): import each provider's sheet "
                                      "to its own price sheet"))


def _duplicates(found: pd.DataFrame, notes: Notes) -> set:
    """Rows repeating a provider, region and instance type: exact repeats are dropped (their sources returned,
    counted in the notes); repeats with other prices exit 2 naming both rows."""
    key = ["provider", "region", "instance_type"]
    rep = found[found.duplicated(key, keep=False)]
    if rep.empty:
        return set()
    bad = Collector()
    drop = set()
    for _, g in rep.groupby(key, sort=False):
        first = g.iloc[0]
        for _, r in g.iloc[1:].iterrows():
            differ = [c for c in PRICES if not (pd.isna(r[c]) and pd.isna(first[c])) and r[c] != first[c]]
            if differ:
                c = differ[0]
                bad.add(r["file"], f"repeats instance type {r['instance_type']} in region {r['region']} of "
                        f"{first['file']}, row {first['row']}, with another {c} price ({first[c]:g} there)",
                        row=int(r["row"]), column=f"{c}_hourly_usd", value=r[c],
                        expected="one row per provider, region and instance type (delete one of the two rows)")
            else:
                drop.add(r["source"])
    bad.raise_if_any()
    if drop:
        notes.add(f"{len(drop)} rows repeat another row exactly (provider, region, instance type and prices): "
                  "read once.")
    return drop


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name].astype(str).str.strip() if name in df else pd.Series("", index=df.index)


def _read_one(path: Path, opts: ImportOptions, notes: Notes, bad: Collector) -> tuple[pd.DataFrame, pd.DataFrame]:
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
    gpu = _gpu_names(df, keep, notes, path.name)
    priced = pd.concat([price[c].notna() for c in PRICES], axis=1)
    none = keep & ~priced.any(axis=1)
    if none.any():
        notes.add(f"{path.name}: {int(none.sum())} rows have no price at all (on-demand, spot and reserved blank) "
                  f"and were skipped: rows {_rows(df.loc[none, '_row'])}.")
    no_od = keep & price["on_demand"].isna() & priced.any(axis=1)
    if no_od.any():
        notes.add(f"{path.name}: {int(no_od.sum())} rows have a spot or reserved price but no on-demand price and "
                  "were skipped (the sheet prices a pool from the on-demand price of the instance type it keeps): "
                  f"rows {_rows(df.loc[no_od, '_row'])}.")
    keep &= ~none & ~no_od
    _buckets(df, keep, file, bad)
    base = pd.DataFrame({"gpu_type": gpu, "region": df["region"].str.strip(),
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
              "upfront): " + "; ".join(sorted(set(_col(df, "reserved_kind")[keep]) - {""})[:3]))
    out = pd.concat(rows, ignore_index=True)
    info = pd.DataFrame({"file": file, "row": df["_row"], "provider": provider, "region": base["region"],
                         "instance_type": base["instance_type"], "source": base["source"],
                         **{c: price[c] for c in PRICES}})[keep]
    return offers(out[np.tile(keep.to_numpy(), len(rows)) & out["hourly_usd"].notna()]), info


def _gpu_names(df: pd.DataFrame, keep: pd.Series, notes: Notes, name: str) -> pd.Series:
    """``gpu_type`` as the sheet gives it, but AWS g6f / gr6f (fractions of an L4, labelled upstream as "L40
    (upstream label; fractional GPU)") named ``L4-fractional``; other upstream labels are warned of."""
    gpu = df["gpu_type"].str.strip()
    family = df["instance_type"].str.strip().str.split(".").str[0]
    upstream = gpu.str.contains("upstream label|verify", case=False, regex=True)
    fractional = upstream & family.isin(FRACTIONAL_L4)
    if (fractional & keep).any():
        notes.add(f"{name}: {int((fractional & keep).sum())} rows of {', '.join(FRACTIONAL_L4)} instances (upstream "
                  f"label '{gpu[fractional].iloc[0]}') are fractions of an NVIDIA L4: named gpu_type L4-fractional, "
                  "gpus_per_instance the sheet's fraction of one GPU; verify before use (an upstream label).")
    other = upstream & ~fractional & keep
    if other.any():
        notes.add(f"{name}: WARNING: {int(other.sum())} rows carry an upstream GPU label marked for verification ("
                  + ", ".join(sorted(gpu[other].unique())[:4]) + "): kept as given; verify the GPU model before use.")
    return gpu.where(~fractional, "L4-fractional")


def _buckets(df: pd.DataFrame, keep: pd.Series, file: str, bad: Collector) -> None:
    """Exit 2 on an ``interruption_bucket`` that is not a Spot Advisor bucket (or blank), naming the row."""
    bucket = _col(df, "interruption_bucket")
    wrong = keep & bucket.ne("") & ~bucket.isin(list(INTERRUPTION_BUCKETS))
    for r, v in zip(df.loc[wrong, "_row"].head(10), bucket[wrong].head(10)):
        bad.add(file, "unknown AWS Spot Advisor interruption bucket", row=int(r), column="interruption_bucket",
                value=v, expected="one of " + ", ".join(INTERRUPTION_BUCKETS) + " (or blank)")


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
