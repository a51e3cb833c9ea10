"""``planner prices import``: a cloud's price catalog -> the planner's price sheet, every assumption stated.

Each format has a reader (``catalog_<format>.py``) that turns its files into *offer rows*, one per instance
type, region and purchase option, priced per **instance** (``OFFER_COLUMNS``), each with its source row and
the basis of its price. What is common is done here, once, vectorised: the ``--regions`` / ``--gpu-types`` /
``--instance-types`` filters, one instance type per pool (gpu_type x region; ``--pick``), the division by
``gpus_per_instance`` (per-GPU prices, the size kept as ``gpus_per_instance``), and the rules the price sheet
enforces (an on-demand row per pool, savings-plan rates below on-demand). ``catalog_write`` writes the sheet
and its provenance note and checks the sheet with the planner's own validation before it is published.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.errors import InputError, Problem
from planner.inputs.io import sha256_of

FORMATS = ("skypilot", "wide", "aws-pricelist", "azure-retail", "gcp-skus")
PICKS = ("largest", "smallest", "cheapest")
ZONE_RULES = ("median", "min", "max")
INTERRUPTION_RULES = ("low", "mid", "high")
PAYMENTS = ("all_upfront", "partial_upfront", "no_upfront")
HOURS_PER_MONTH = 730.0  # the planner's month (planner.core.units)

OFFER_COLUMNS = ["gpu_type", "region", "instance_type", "gpus_per_instance", "option", "hourly_usd", "upfront_usd",
                 "interruptions_per_hour", "guarantees_capacity", "plan_family", "payment", "source", "basis"]

# AWS Spot Advisor "frequency of interruption" buckets (share of instances interrupted per month) ->
# the % a month each rule takes; ">20%" has no upper bound published: 30 % (mid) and 50 % (high) are assumed
INTERRUPTION_BUCKETS = {
    "<5%": {"low": 0.0, "mid": 2.5, "high": 5.0},
    "5-10%": {"low": 5.0, "mid": 7.5, "high": 10.0},
    "10-15%": {"low": 10.0, "mid": 12.5, "high": 15.0},
    "15-20%": {"low": 15.0, "mid": 17.5, "high": 20.0},
    ">20%": {"low": 20.0, "mid": 30.0, "high": 50.0},
}


@dataclass
class ImportOptions:
    """What ``planner prices import`` was asked for, beyond the files (every field has its CLI option)."""

    regions: tuple[str, ...] = ()
    gpu_types: tuple[str, ...] = ()
    instance_types: tuple[str, ...] = ()
    pick: str = "largest"
    zones: str = "median"
    interruption_rule: str = "mid"
    spot_interruptions_per_hour: float | None = None
    ri_class: str = "standard"
    payments: tuple[str, ...] = PAYMENTS
    catalog: Path | None = None
    vm_hourly_usd_per_gpu: float = 0.0
    all_locations: bool = False
    fx: dict = field(default_factory=dict)  # currency -> USD per unit (--fx)


@dataclass
class ImportResult:
    """A price sheet made from catalog files: ``prices`` (the sheet's columns, one row per pool and option),
    ``provenance`` (the same rows: instance type, source rows, basis), ``notes`` (every assumption, in
    words), ``inputs`` (path, sha256 of each file read) and ``instance_sizes`` (the GPUs of every instance type
    the files price, kept in the sheet or not)."""

    prices: pd.DataFrame
    provenance: pd.DataFrame
    notes: list[str]
    inputs: list[tuple[str, str]]
    fmt: str
    options: ImportOptions = field(default_factory=ImportOptions)
    made_at: str = ""
    instance_sizes: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["instance_type", "gpu_type", "gpus_per_instance", "in_sheet"]))


class Notes(list):
    """The assumptions of one import, in the order they were made, each said once."""

    def add(self, text: str) -> None:
        """Record ``text`` unless it is already there."""
        if text not in self:
            self.append(text)


def interruption_rate(percent_per_month) -> np.ndarray:
    """Interruptions per instance-hour from a share of instances interrupted per month (%/100 / 730 h)."""
    return np.asarray(percent_per_month, dtype=float) / 100.0 / HOURS_PER_MONTH


def unknown_interruptions(opts: ImportOptions, notes: Notes, why: str) -> float:
    """The interruption rate given to spot rows whose source publishes none: ``--spot-interruptions-per-hour``,
    else the ``>20%`` AWS bucket under ``--interruption-rule`` (the worst published bucket: an assumption)."""
    if opts.spot_interruptions_per_hour is not None:
        notes.add(f"Spot interruptions: {why}; every spot row takes --spot-interruptions-per-hour = "
                  f"{opts.spot_interruptions_per_hour:g} per instance-hour.")
        return float(opts.spot_interruptions_per_hour)
    pct = INTERRUPTION_BUCKETS[">20%"][opts.interruption_rule]
    rate = float(interruption_rate(pct))
    notes.add(f"Spot interruptions: {why}; such spot rows are given the worst AWS Spot Advisor bucket (>20 % a "
              f"month, {pct:g} % under --interruption-rule {opts.interruption_rule}) = {rate:.6g} per "
              "instance-hour, an assumption: set --spot-interruptions-per-hour from your own history.")
    return rate


def offers(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with exactly the offer columns (missing ones blank), in order."""
    out = frame.reindex(columns=OFFER_COLUMNS)
    gc = out["guarantees_capacity"].astype(object)
    out["guarantees_capacity"] = gc.where(gc.notna(), True).astype(bool)
    for col in ("plan_family", "payment", "basis", "source", "instance_type"):
        out[col] = out[col].astype(object).where(out[col].notna(), "").astype(str)
    for col in ("gpus_per_instance", "hourly_usd", "upfront_usd", "interruptions_per_hour"):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float)
    out["upfront_usd"] = out["upfront_usd"].fillna(0.0)
    return out


def _option_order(option: pd.Series) -> pd.Series:
    rank = np.select([option.eq("on_demand"), option.eq("spot"), option.str.startswith("reserved")], [0, 1, 2], 3)
    return pd.Series(rank, index=option.index)


def _filter(df: pd.DataFrame, col: str, wanted: tuple[str, ...], flag: str, notes: Notes) -> pd.DataFrame:
    if not wanted:
        return df
    folded = df[col].str.casefold()
    want = [w.strip() for w in wanted if w.strip()]
    missing = [w for w in want if not folded.eq(w.casefold()).any()]
    if missing:
        known = ", ".join(sorted(df[col].unique())[:40])
        raise InputError([Problem(f"--{flag}", f"no price in the files for {col} '{w}'", value=w,
                                  expected=f"one of {known}") for w in missing])
    notes.add(f"Kept only {col} {', '.join(want)} (--{flag}).")
    return df[folded.isin([w.casefold() for w in want])]


def finish(raw: pd.DataFrame, opts: ImportOptions, notes: Notes, files: list[str]) -> tuple[pd.DataFrame, ...]:
    """Offer rows (per instance) -> (price sheet, provenance, GPUs of every instance type read): filtered, one
    instance type per pool, per GPU."""
    df = offers(raw)
    no_region = df["gpu_type"].ne("") & df["region"].fillna("").astype(str).str.strip().eq("") & df["hourly_usd"].notna()
    if no_region.any():  # a price for no place: not a pool of the sheet, and said so
        named = df.loc[no_region, "instance_type"].replace("", np.nan).dropna().unique()
        notes.add(f"{int(no_region.sum())} priced rows of GPU instances name no region: left out"
                  + (f" ({', '.join(map(str, named[:8]))}{' ...' if len(named) > 8 else ''})" if len(named) else "")
                  + ".")
    df = df[df["gpu_type"].ne("") & ~no_region & df["region"].ne("") & df["hourly_usd"].notna()]
    _refuse_control_characters(df)
    if df.empty:
        raise InputError(Problem(", ".join(files), "no GPU prices found in the files",
                                 expected="rows of GPU instances with an on-demand price"))
    every = instance_sizes(df)
    df = _filter(df, "region", opts.regions, "regions", notes)
    df = _filter(df, "gpu_type", opts.gpu_types, "gpu-types", notes)
    df = _filter(df, "instance_type", opts.instance_types, "instance-types", notes)
    paid = df["payment"].eq("") | df["payment"].isin(opts.payments)
    if not paid.all():
        notes.add(f"Kept only the payment options {', '.join(opts.payments)} (--payment).")
    df = df[paid]
    df = _dedupe(df, notes)
    df = _pick_instances(df, opts, notes)
    sheet = df.copy()
    sheet["hourly_usd"] = df["hourly_usd"] / df["gpus_per_instance"]
    reserved = df["option"].str.startswith("reserved")
    sheet["upfront_usd"] = df["upfront_usd"].where(~reserved, df["upfront_usd"] / df["gpus_per_instance"])
    sheet = _savings_below_on_demand(sheet, notes)
    sheet = sheet.assign(_rank=_option_order(sheet["option"])).sort_values(
        ["gpu_type", "region", "_rank", "option"], kind="stable").drop(columns="_rank").reset_index(drop=True)
    notes.add("Prices are per GPU-hour: the instance's price divided by its GPUs (gpus_per_instance, kept in the "
              "sheet, so reserved purchases are whole instances); reserved upfront_usd is per GPU too; a savings "
              "plan's upfront_usd is per USD/h committed, as docs/commitments.md defines it.")
    provenance = sheet[["gpu_type", "region", "option", "instance_type", "gpus_per_instance", "source", "basis"]]
    every["in_sheet"] = every["instance_type"].isin(set(provenance["instance_type"]))
    return _sheet_columns(sheet), provenance, every


def _refuse_control_characters(df: pd.DataFrame) -> None:
    """Exit 2 naming the source row of every region, GPU or instance name with a control character (a newline,
    NUL, tab ...): the sheet would carry it to every output."""
    from planner.imports.guards import CONTROL

    problems = []
    for col in ("region", "gpu_type", "instance_type", "plan_family"):
        hit = (df[col].str.contains(CONTROL, regex=True) & ~df.duplicated(["source", col])).to_numpy(bool)
        problems += [Problem(src, f"a control character in the {col}", column=col, value=v,
                             expected="printable text") for src, v in zip(df.loc[hit, "source"].head(10),
                                                                          df.loc[hit, col].head(10))]
    if problems:
        raise InputError(problems)


def instance_sizes(df: pd.DataFrame) -> pd.DataFrame:
    """The GPUs of every instance type of the offer rows (``instance_type, gpu_type, gpus_per_instance``), one
    row each, before any filter or pick: ``planner history import`` sizes a bill's instances from it (the price
    per GPU is the pool's, whichever instance type priced it). GCP's "GPU only" rows name no instance."""
    named = df[df["instance_type"].ne("") & ~df["instance_type"].str.startswith("GPU only")]
    return named[["instance_type", "gpu_type", "gpus_per_instance"]].drop_duplicates("instance_type") \
        .sort_values("instance_type").reset_index(drop=True)


def _dedupe(df: pd.DataFrame, notes: Notes) -> pd.DataFrame:
    key = ["gpu_type", "region", "instance_type", "option"]
    eff = df["hourly_usd"] + df["upfront_usd"].fillna(0) / 8760.0
    ordered = df.assign(_eff=eff).sort_values(key + ["_eff"], kind="stable")
    dup = ordered.duplicated(key, keep="first")
    if dup.any():
        notes.add(f"{int(dup.sum())} offer rows repeated an instance type, region and option already priced "
                  "(another SKU of the same offer): the lowest price was kept.")
    return ordered[~dup].drop(columns="_eff")


def _pick_instances(df: pd.DataFrame, opts: ImportOptions, notes: Notes) -> pd.DataFrame:
    """One instance type per pool, so that the pool has one gpus_per_instance (the sheet requires it)."""
    od = df[df["option"].eq("on_demand")].copy()
    pools = df[["gpu_type", "region"]].drop_duplicates()
    no_od = pools.merge(od[["gpu_type", "region"]].drop_duplicates(), how="left", indicator=True)
    lost = no_od[no_od["_merge"].eq("left_only")]
    if len(lost):
        notes.add(f"{len(lost)} pools had no on-demand price and were left out (the sheet needs one per pool): "
                  + ", ".join(f"{g}/{r}" for g, r in lost[["gpu_type", "region"]].head(12).itertuples(index=False))
                  + (" ..." if len(lost) > 12 else "") + ".")
    od["_per_gpu"] = od["hourly_usd"] / od["gpus_per_instance"]
    size = {"largest": -od["gpus_per_instance"], "smallest": od["gpus_per_instance"], "cheapest": od["_per_gpu"]}
    od["_first"] = size[opts.pick]
    od["_second"] = od["_per_gpu"] if opts.pick != "cheapest" else -od["gpus_per_instance"]
    chosen = od.sort_values(["gpu_type", "region", "_first", "_second", "instance_type"], kind="stable") \
        .drop_duplicates(["gpu_type", "region"])[["gpu_type", "region", "instance_type"]]
    several = od.groupby(["gpu_type", "region"])["instance_type"].nunique()
    if (several > 1).any():
        rule = {"largest": "the one with the most GPUs (ties: the lowest on-demand price per GPU)",
                "smallest": "the one with the fewest GPUs (ties: the lowest on-demand price per GPU)",
                "cheapest": "the one with the lowest on-demand price per GPU (ties: the most GPUs)"}[opts.pick]
        notes.add(f"{int((several > 1).sum())} pools (gpu_type x region) are sold as several instance types; one "
                  f"per pool is kept, {rule} (--pick {opts.pick}; --instance-types to choose them yourself); the "
                  "instance type of every row is in the provenance table.")
    kept = df.merge(chosen, on=["gpu_type", "region", "instance_type"], how="inner")
    lost_rows = df.merge(chosen, on=["gpu_type", "region", "instance_type"], how="left", indicator=True)
    lost_rows = lost_rows[lost_rows["_merge"].eq("left_only")]
    in_priced = lost_rows.merge(chosen[["gpu_type", "region"]], on=["gpu_type", "region"], how="inner")
    if len(in_priced):
        by = in_priced["option"].where(in_priced["option"].isin(["on_demand", "spot"]),
                                       in_priced["option"].str.split("_").str[0]).value_counts()
        notes.add(f"{len(in_priced)} offer rows of instance types not kept in their pool were dropped ("
                  + ", ".join(f"{k} {v}" for k, v in by.items()) + f"; --pick {opts.pick}, or --instance-types): "
                  "a pool has one instance type; the GPUs of every instance type read are listed in the notes "
                  "for `planner history import`.")
    if len(lost):
        n = len(df.merge(lost[["gpu_type", "region"]], on=["gpu_type", "region"], how="inner"))
        notes.add(f"{n} offer rows of pools without an on-demand price were dropped.")
    return kept


def _savings_below_on_demand(sheet: pd.DataFrame, notes: Notes) -> pd.DataFrame:
    spend = sheet["option"].str.startswith("savings_plan")
    if not spend.any():
        return sheet
    od = sheet.loc[sheet["option"].eq("on_demand"), ["gpu_type", "region", "hourly_usd"]] \
        .rename(columns={"hourly_usd": "_od"})
    both = sheet.reset_index(drop=True).merge(od, on=["gpu_type", "region"], how="left")
    useless = both["option"].str.startswith("savings_plan") & ~(both["hourly_usd"] < both["_od"])
    if useless.any():
        notes.add(f"{int(useless.sum())} savings-plan rates were not below the pool's on-demand price and were "
                  "dropped (the sheet refuses them: they save nothing).")
    return both[~useless].drop(columns="_od")


def _sheet_columns(sheet: pd.DataFrame) -> pd.DataFrame:
    cols = ["gpu_type", "region", "option", "hourly_usd", "upfront_usd", "interruptions_per_hour",
            "gpus_per_instance"]
    out = sheet[cols].copy()
    out["interruptions_per_hour"] = out["interruptions_per_hour"].where(out["option"].eq("spot"))
    committed = sheet["option"].str.startswith(("reserved", "savings_plan"))
    out["upfront_usd"] = out["upfront_usd"].where(committed)
    if out["upfront_usd"].fillna(0).eq(0).all():
        out = out.drop(columns="upfront_usd")
    if (~sheet["guarantees_capacity"]).any():
        out["guarantees_capacity"] = np.where(sheet["guarantees_capacity"], "", "false")
        out["guarantees_capacity"] = out["guarantees_capacity"].where(sheet["option"].str.startswith("reserved"), "")
    if sheet["option"].str.startswith("savings_plan").any():
        out["plan_family"] = sheet["plan_family"].where(sheet["option"].str.startswith("savings_plan"), "")
    return out.reset_index(drop=True)


def import_prices(fmt: str, files, opts: ImportOptions | None = None) -> ImportResult:
    """Read catalog ``files`` of format ``fmt`` (one of ``FORMATS``) into a price sheet with its provenance."""
    import importlib

    opts = opts or ImportOptions()
    modules = {"skypilot": "catalog_skypilot", "wide": "catalog_wide", "aws-pricelist": "catalog_aws",
               "azure-retail": "catalog_azure", "gcp-skus": "catalog_gcp"}
    if fmt not in modules:
        raise InputError(Problem("--from", "unknown catalog format", value=fmt, expected=" | ".join(FORMATS)))
    paths = [Path(f) for f in files]
    if not paths:
        raise InputError(Problem("FILE", "no catalog file given", expected="one or more files"))
    for p in paths:
        if not p.is_file():
            raise InputError(Problem(str(p), "no such file", expected=f"a {fmt} catalog file"))
    notes = Notes()
    raw = importlib.import_module(f".{modules[fmt]}", __package__).read(paths, opts, notes)
    prices, provenance, sizes = finish(raw, opts, notes, [str(p) for p in paths])
    inputs = [(str(p), sha256_of(p)) for p in paths]
    if opts.catalog is not None:
        inputs.append((str(opts.catalog), sha256_of(Path(opts.catalog))))
    return ImportResult(prices=prices, provenance=provenance, notes=list(notes), inputs=inputs, fmt=fmt,
                        options=opts, instance_sizes=sizes, made_at=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
