"""Which pool (GPU type and region) and how many GPUs each billing row's usage is, from the price sheet.

The planner's price sheet has no column for the instance type (docs/inputs.md, "Price sheet"), so the import
learns instance types from, first, an ``instance_type`` column if the sheet given to the import has one (the
import reads the sheet itself and accepts it; ``planner plan`` does not), then the provenance note
``<sheet>.notes.md`` that ``planner prices import`` writes beside the sheet (its rows table has each row's
instance type and ``gpus_per_instance``, and its last table the GPUs of every instance type the source priced,
kept in the sheet or not: the bill's g5.4xlarge is sized even when the sheet priced A10G by g5.48xlarge),
then the built-in Azure GPU VM sizes. A billing row names its instance by ``x_InstanceType`` (or any ``x_`` column named like ``instance type``), the part after ``:`` of
``x_UsageType`` (AWS ``BoxUsage:p5.48xlarge``), ``SkuId``, ``ResourceType`` or, last, a known instance type
written in its ``ChargeDescription``. The planner's own FOCUS export is read by ``x_GpuType`` and ``RegionId``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.errors import InputError, Problem
from planner.imports.catalog_gpus import AWS_FAMILIES, AZURE_SKUS

GPU_HOUR_UNITS = r"^gpu[- _]?(hours?|hrs?|h)$"
INSTANCE_HOUR_UNITS = r"^(hours?|hrs?|h|1 hours?|instance[- _]?(hours?|hrs?)|vm[- _]?hours?|node[- _]?hours?)$"


def read_sheet(prices: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(pools, instance types, notes) of a price sheet: pools ``gpu_type, region, gpus_per_instance``;
    instance types ``instance_type, gpu_type, gpus_per_instance, source``."""
    from planner.inputs.io import read_table

    raw = read_table(prices, "price sheet").data
    missing = [c for c in ("gpu_type", "region") if c not in raw]
    if missing:
        raise InputError([Problem(str(prices), f"missing column '{c}' in the price sheet", row=1, column=c)
                          for c in missing])
    per = pd.to_numeric(raw.get("gpus_per_instance", pd.Series("", index=raw.index)), errors="coerce").fillna(1.0)
    pools = pd.DataFrame({"gpu_type": raw["gpu_type"], "region": raw["region"], "gpus_per_instance": per})
    pools = pools.drop_duplicates(["gpu_type", "region"]).reset_index(drop=True)
    notes, kinds = [], []
    if "instance_type" in raw:
        kinds.append(pd.DataFrame({"instance_type": raw["instance_type"], "gpu_type": raw["gpu_type"],
                                   "gpus_per_instance": per, "source": "price sheet column instance_type"}))
        notes.append(f"{Path(prices).name}: instance types from its instance_type column (an import-only column: "
                     "`planner plan` does not accept it; drop it there).")
    note = Path(str(prices) + ".notes.md")
    if note.is_file():
        table = _note_table(note)
        if len(table):
            kinds.append(table)
            notes.append(f"{table['instance_type'].nunique()} instance types (with their GPUs) from the price sheet's "
                         f"provenance note {note.name}.")
    azure = pd.DataFrame([(k, g, float(n)) for k, (g, n) in AZURE_SKUS.items()],
                         columns=["instance_type", "gpu_type", "gpus_per_instance"]).assign(source="built-in Azure sizes")
    kinds.append(azure)
    types = pd.concat(kinds, ignore_index=True)
    types = types[types["instance_type"].fillna("").ne("")].drop_duplicates("instance_type").reset_index(drop=True)
    return pools, types, notes


def _note_table(path: Path) -> pd.DataFrame:
    """The instance types of a ``planner prices import`` provenance note with their GPU type and GPUs: those of
    its rows table (kept in the sheet) and of its table of every instance type the source priced."""
    rows, sizes = [], False
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("## "):
            sizes = line.strip() == "## GPUs of every instance type read"
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        try:
            if len(cells) >= 6 and cells[0].isdigit():  # the rows table: instance types kept in the sheet
                rows.append((cells[4], cells[1], float(cells[5])))
            elif sizes and len(cells) == 4 and line.lstrip().startswith("|"):  # every instance type of the source
                rows.append((cells[0], cells[1], float(cells[2])))
        except ValueError:
            continue
    return pd.DataFrame(rows, columns=["instance_type", "gpu_type", "gpus_per_instance"]).assign(
        source="provenance note")


def instance_names(bill: pd.DataFrame, known: pd.Series) -> pd.Series:
    """The instance type each row names (NaN where none is known): the first candidate column that holds a
    known instance type, else one written in ChargeDescription."""
    known_set = set(known)
    out = pd.Series(np.nan, index=bill.index, dtype=object)
    cands = [c for c in bill.columns if c.startswith("x_") and re.search(r"instance.?type", c, re.I)]
    cols = [bill[c] for c in cands]
    if "x_UsageType" in bill:
        cols.append(bill["x_UsageType"].str.split(":").str[-1])
    cols += [bill[c] for c in ("SkuId", "ResourceType") if c in bill]
    for s in cols:
        s = s.where(s.isin(known_set))
        out = out.where(out.notna(), s)
    if "ChargeDescription" in bill and len(known_set) and out.isna().any():
        names = sorted(known_set, key=len, reverse=True)
        pattern = r"(?<![\w.-])(" + "|".join(re.escape(n) for n in names) + r")(?![\w-])"
        todo = out.isna() & bill["ChargeDescription"].notna()
        found = bill.loc[todo, "ChargeDescription"].str.extract(pattern, expand=False)
        out.loc[found.index] = found
    return out


def gpu_family_rows(bill: pd.DataFrame) -> pd.Series:
    """The AWS GPU instance type (p5.48xlarge, g6e.xlarge) each row names where we look, NaN elsewhere: used to
    say which GPU rows the price sheet could not size."""
    fams = "|".join(re.escape(f) for f in sorted(AWS_FAMILIES, key=len, reverse=True))
    pattern = rf"(?<![\w-])((?:{fams})\.\d*x?large)\b"
    hit = pd.Series(np.nan, index=bill.index, dtype=object)
    for c in ("x_InstanceType", "x_UsageType", "ChargeDescription"):
        if c in bill:
            hit = hit.where(hit.notna(), bill[c].str.extract(pattern, expand=False))
    return hit


def unit_factor(unit: pd.Series, gpus_per_instance: pd.Series) -> pd.Series:
    """GPUs per unit of quantity: 1 for GPU-hours, the instance's GPUs for (instance) hours, NaN otherwise."""
    u = unit.fillna("").str.strip().str.lower()
    return pd.Series(np.where(u.str.match(GPU_HOUR_UNITS), 1.0,
                              np.where(u.str.match(INSTANCE_HOUR_UNITS), gpus_per_instance, np.nan)),
                     index=unit.index, dtype=float)


def match_pools(bill: pd.DataFrame, pools: pd.DataFrame, types: pd.DataFrame) -> pd.DataFrame:
    """Per row: ``gpu_type``, ``region``, ``gpus_per_instance`` (NaN where the row is no known GPU instance)."""
    inst = instance_names(bill, types["instance_type"])
    t = types.set_index("instance_type")
    gpu = inst.map(t["gpu_type"])
    per = inst.map(t["gpus_per_instance"]).astype(float)
    region = bill["RegionId"] if "RegionId" in bill else pd.Series(np.nan, index=bill.index, dtype=object)
    if "x_GpuType" in bill:  # the planner's own export: the pool is named outright, usage is in GPU-hours
        own = bill["x_GpuType"].notna() & region.notna()
        gpu = gpu.where(~own, bill["x_GpuType"])
        sheet = pools.set_index(["gpu_type", "region"])["gpus_per_instance"]
        key = pd.MultiIndex.from_arrays([bill["x_GpuType"].fillna(""), region.fillna("")])
        per = per.where(~own, pd.Series(sheet.reindex(key).to_numpy(), index=bill.index).fillna(1.0))
    return pd.DataFrame({"instance_type": inst, "gpu_type": gpu, "region": region.where(gpu.notna()),
                         "gpus_per_instance": per.where(gpu.notna())}, index=bill.index)
