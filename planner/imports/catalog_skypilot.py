"""``--from skypilot``: SkyPilot catalog CSVs (``InstanceType, AcceleratorName, AcceleratorCount, ..., Price,
SpotPrice, Region`` and, for AWS and GCP, ``AvailabilityZone``) -> offer rows (on-demand and spot).

Rules (each stated in the notes of the import): rows with neither accelerator name nor count are not GPU
rows and are skipped; a GPU row with neither price is not offered there, one with a spot price but no on-demand
price is skipped (both counted in the notes); a row repeating an instance type, region and zone is read once when
its prices are the same, and exits 2 naming both rows when they differ; ``SpotPrice == Price`` means the
catalog had no spot price (SkyPilot fills it with the on-demand price); zones collapse to one price per
region (``--zones``); Azure sizes in the built-in table take their GPU and count from it (ND96isr_H100_v5:
8 GPUs, the v6 catalog says 12); ``_Promo`` sizes are left out.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from planner.core.errors import Collector
from planner.imports.catalog import ImportOptions, Notes, offers, unknown_interruptions
from planner.imports.catalog_gpus import AZURE_SKUS, azure_sku_table, skypilot_gpu_names
from planner.imports.catalog_read import numbers, read_csv, require_columns

NEEDED = ["InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region"]


def gpu_table(path: Path) -> pd.DataFrame:
    """A SkyPilot catalog as a GPU table (``instance_type``, ``gpu_type``, ``gpus_per_instance``), for
    ``--catalog`` of ``--from azure-retail``; sizes of the built-in Azure table keep the table's values."""
    df = read_csv(path)
    require_columns(str(path), df.columns, ["InstanceType", "AcceleratorName", "AcceleratorCount"], 1)
    count = pd.to_numeric(df["AcceleratorCount"], errors="coerce")
    ok = df["AcceleratorName"].str.strip().ne("") & count.gt(0)
    out = pd.DataFrame({"instance_type": df["InstanceType"], "gpu_type": skypilot_gpu_names(df["AcceleratorName"]),
                        "gpus_per_instance": count.astype(float)})[ok].drop_duplicates("instance_type")
    return pd.concat([azure_sku_table(), out[~out["instance_type"].isin(list(AZURE_SKUS))]], ignore_index=True)


def read(paths: list[Path], opts: ImportOptions, notes: Notes) -> pd.DataFrame:
    """Every file's GPU rows as offer rows; exit 2 naming file, row and column of every bad cell."""
    bad = Collector()
    parts = [_read_one(path, opts, notes, bad) for path in paths]
    bad.raise_if_any()
    return pd.concat(parts, ignore_index=True)


def _read_one(path: Path, opts: ImportOptions, notes: Notes, bad: Collector) -> pd.DataFrame:
    file = str(path)
    df = read_csv(path)
    require_columns(file, df.columns, NEEDED, 1)
    name, count_text = df["AcceleratorName"].str.strip(), df["AcceleratorCount"].str.strip()
    table = azure_sku_table().set_index("instance_type")
    known = df["InstanceType"].isin(table.index)
    gpu_row = name.ne("") | count_text.ne("") | known
    if (~gpu_row).any():
        notes.add(f"{path.name}: {int((~gpu_row).sum())} rows name no accelerator (not GPU rows, or sizes the catalog "
                  "does not describe) and were skipped.")
    promo = df["InstanceType"].str.endswith("_Promo")
    if (promo & gpu_row).any():
        notes.add(f"{path.name}: {int((promo & gpu_row).sum())} rows of `_Promo` sizes (retired promotional "
                  "prices) were skipped.")
    rows = gpu_row & ~promo
    _report_blank_names(df, rows & ~known & name.eq(""), file, bad)
    count = numbers(df, "AcceleratorCount", file, bad, blank_ok=False, low=0, strictly_above=True,
                    expected="the number of GPUs of the instance (> 0)", mask=rows & ~known)
    price = numbers(df, "Price", file, bad, blank_ok=True, low=0, strictly_above=True,
                    expected="the on-demand price in USD per instance-hour (> 0)", mask=rows)
    spot = numbers(df, "SpotPrice", file, bad, blank_ok=True, low=0, strictly_above=True,
                   expected="the spot price in USD per instance-hour (> 0) or blank", mask=rows)
    spot_only = rows & price.isna() & spot.notna() & df["Price"].str.strip().eq("")
    if spot_only.any():
        notes.add(f"{path.name}: {int(spot_only.sum())} rows have a SpotPrice but no Price and were skipped (the sheet "
                  "prices a pool from the on-demand price of the instance type it keeps): rows "
                  + ", ".join(map(str, df.loc[spot_only, "_row"].head(12))) + ".")
    repeat = _duplicates(df, rows, price, spot, file, bad, notes, path.name)
    rows &= ~repeat
    unpriced = rows & df["Price"].str.strip().eq("") & df["SpotPrice"].str.strip().eq("")
    if unpriced.any():
        notes.add(f"{path.name}: {int(unpriced.sum())} GPU rows have neither Price nor SpotPrice (the size is not "
                  "sold in that region) and were skipped: rows " + ", ".join(map(str, df.loc[unpriced, '_row'].head(12)))
                  + ".")
    gpu = skypilot_gpu_names(name).where(~known, df["InstanceType"].map(table["gpu_type"]))
    fixed = known & count.notna() & (count != df["InstanceType"].map(table["gpus_per_instance"]))
    if fixed.any():
        what = df.loc[fixed, ["InstanceType", "AcceleratorCount"]].drop_duplicates("InstanceType")
        notes.add(f"{path.name}: GPU counts corrected from the built-in Azure table (planner/imports/catalog_gpus.py): "
                  + ", ".join(f"{i} {c} -> {table.loc[i, 'gpus_per_instance']:g}" for i, c in what.itertuples(index=False))
                  + " (the catalog's count is wrong for these sizes).")
    m = count.where(~known, df["InstanceType"].map(table["gpus_per_instance"]))
    same = spot.notna() & price.notna() & (spot == price)
    if (rows & same).any():
        notes.add(f"{path.name}: {int((rows & same).sum())} rows have SpotPrice == Price: SkyPilot fills a missing spot "
                  "price with the on-demand price, so these have no spot row ("
                  + ", ".join(sorted(df.loc[rows & same, "InstanceType"].unique())[:6]) + ").")
    spot = spot.where(~same)
    keep = rows & price.notna() & m.notna() & gpu.notna() & ~spot_only
    instance = df["InstanceType"].where(df["InstanceType"].str.strip().ne(""), "GPU only x" + count_text)
    if (keep & df["InstanceType"].str.strip().eq("")).any():
        notes.add(f"{path.name}: rows without InstanceType price attachable GPUs alone (no VM); they are kept as "
                  "instance type 'GPU only xN'.")
    base = pd.DataFrame({"gpu_type": gpu, "region": df["Region"].str.strip(), "instance_type": instance,
                         "gpus_per_instance": m, "price": price, "spot": spot,
                         "zone": df["AvailabilityZone"] if "AvailabilityZone" in df else "",
                         "source": path.name + ":" + df["_row"].astype(str)})[keep]
    base = _collapse_zones(base, opts, notes, path.name)
    rate = unknown_interruptions(opts, notes, "the SkyPilot catalog publishes no interruption rate") \
        if base["spot"].notna().any() else None
    od = base.assign(option="on_demand", hourly_usd=base["price"], basis="SkyPilot catalog Price (on-demand, Linux)")
    sp = base[base["spot"].notna()]
    sp = sp.assign(option="spot", hourly_usd=sp["spot"], interruptions_per_hour=rate,
                   basis="SkyPilot catalog SpotPrice; interruption rate assumed")
    return offers(pd.concat([od, sp], ignore_index=True))


def _duplicates(df: pd.DataFrame, rows: pd.Series, price: pd.Series, spot: pd.Series, file: str, bad: Collector,
                notes: Notes, name: str) -> pd.Series:
    """Rows repeating an instance type, region and zone: exact repeats are dropped (returned as a mask, counted
    in the notes); repeats with another Price or SpotPrice are reported to ``bad`` naming both rows."""
    zone = df["AvailabilityZone"].str.strip() if "AvailabilityZone" in df else pd.Series("", index=df.index)
    key = pd.DataFrame({"i": df["InstanceType"].str.strip(), "r": df["Region"].str.strip(), "z": zone})[rows]
    dup = key.duplicated(keep=False)
    repeat = pd.Series(False, index=df.index)
    if not dup.any():
        return repeat
    for _, g in key[dup].groupby(["i", "r", "z"], sort=False):
        first = g.index[0]
        for i in g.index[1:]:
            for col, v in (("Price", price), ("SpotPrice", spot)):
                a, b = v[first], v[i]
                if not (pd.isna(a) and pd.isna(b)) and a != b:
                    bad.add(file, f"repeats instance type {key.at[i, 'i']} in region {key.at[i, 'r']}"
                            + (f", zone {key.at[i, 'z']}" if key.at[i, 'z'] else "")
                            + f" of row {int(df.at[first, '_row'])} with another {col} ({df.at[first, col]} there)",
                            row=int(df.at[i, "_row"]), column=col, value=df.at[i, col],
                            expected="one row per instance type, region and zone (delete one of the two rows)")
                    break
            else:
                repeat[i] = True
    if repeat.any():
        notes.add(f"{name}: {int(repeat.sum())} rows repeat another row exactly (instance type, region, zone and "
                  "prices): read once.")
    return repeat


def _report_blank_names(df: pd.DataFrame, mask: pd.Series, file: str, bad: Collector) -> None:
    for r in df.loc[mask, "_row"].head(10):
        bad.add(file, "a GPU count but no accelerator name", row=int(r), column="AcceleratorName",
                expected="the GPU model, e.g. A100-80GB")


def _collapse_zones(base: pd.DataFrame, opts: ImportOptions, notes: Notes, name: str) -> pd.DataFrame:
    """One price per instance type and region: the ``--zones`` statistic over its availability zones."""
    key = ["gpu_type", "region", "instance_type", "gpus_per_instance"]
    if not base["zone"].astype(str).str.strip().ne("").any() or not base.duplicated(key).any():
        return base.drop(columns="zone")
    g = base.groupby(key, sort=False)
    out = g.agg(price=("price", opts.zones), spot=("spot", opts.zones), source=("source", "first"),
                zones=("zone", "nunique")).reset_index()
    spread = g["price"].agg(lambda s: s.max() - s.min())  # noqa: E731 (one value per group)
    notes.add(f"{name}: prices per availability zone collapsed to one per region: the {opts.zones} over the zones of "
              f"the on-demand and of the spot price (--zones {opts.zones}); "
              + ("on-demand prices agreed across zones." if spread.max() <= 1e-12 else
                 f"on-demand prices differed across zones by up to {spread.max():.4g} USD/h."))
    out["source"] = out["source"] + f" (+ zones, {opts.zones})"
    return out.drop(columns="zones")
