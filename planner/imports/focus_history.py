"""FOCUS cost-and-usage rows -> hourly GPU demand per class (the long-form demand file), and the commitments in the
bill -> an inventory.

Rows kept as GPU usage: ``ChargeCategory`` Usage, not the unused part of a commitment (``CommitmentDiscountStatus``
Unused), a pool found for them (``history_pools``), and a quantity in hours: ``ConsumedQuantity``/``ConsumedUnit``
(FOCUS 1.0-1.2; 1.0-preview ``UsageQuantity``/``UsageUnit``), or ``PricingQuantity``/``PricingUnit`` in a file
without ConsumedQuantity. GPU-hours = the quantity x the instance's GPUs (instance hours) or x 1 (GPU-hours), spread
over the clock hours of ChargePeriodStart .. ChargePeriodEnd (``history_spread``). Classes: ``pool`` (default) one
per pool, ``<gpu_type>@<region>``; ``tag:KEY`` the value of KEY in the row's ``Tags`` JSON (``untagged`` without it,
or when the cell is not a JSON object: counted in the notes with the first row), GPUs of every type added as they
are (no speed conversion); a class name with a control character, or that is a JSON object, exits 2 naming its row.
Usage rows without a quantity (NULL) are counted in the notes with their rows. Negative quantities (corrections,
credits) are netted and counted in the notes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.errors import InputError, Problem
from planner.imports.guards import bad_class_names, same_but_case
from planner.imports.history_commitments import commitments
from planner.imports.history_pools import gpu_family_rows, match_pools, read_sheet, unit_factor
from planner.imports.history_read import read_focus
from planner.imports.history_spread import spread_hourly
from planner.imports.history_write import HistoryResult, hourly_grid


def class_rule(text: str | None) -> tuple[str, str | None]:
    """``pool`` or ``tag:KEY`` -> (kind, key); anything else raises InputError (exit 2)."""
    text = (text or "pool").strip()
    if text == "pool":
        return "pool", None
    if text.startswith("tag:") and text[4:].strip():
        return "tag", text[4:].strip()
    raise InputError(Problem("command line", "--class-by must be `pool` or `tag:KEY`", value=text,
                             expected="pool (one class per <gpu_type>@<region>) or tag:KEY (a key of the Tags JSON)"))


BROKEN = "\x00not a JSON object"  # marks a Tags cell that is not a JSON object


def _tag_values(tags: pd.Series, key: str) -> tuple[pd.Series, pd.Series]:
    """(the value of ``key`` in each row's Tags JSON, NaN where absent; True where the cell is not a JSON
    object: broken JSON or a list), each distinct text parsed once."""
    def one(text):
        try:
            doc = json.loads(text)
        except (TypeError, ValueError, RecursionError):  # nested thousands deep: not a tag a bill writes
            return BROKEN
        if not isinstance(doc, dict):
            return BROKEN
        value = doc.get(key)
        return np.nan if value in (None, "") else str(value)

    uniq = pd.Series(tags.dropna().unique())
    values = tags.map(dict(zip(uniq, uniq.map(one))))
    broken = values.eq(BROKEN)
    return values.mask(broken), broken


def _refuse_class_names(bill: pd.DataFrame, gpu: pd.Series, path, column: str) -> None:
    """Exit 2 naming the first row of every class name the planner would refuse later (control characters,
    a JSON object)."""
    names = bill.loc[gpu, "_class"]
    why = bad_class_names(names)
    first = why.ne("") & ~names.duplicated()
    clash = same_but_case(names)
    if clash:  # the planner refuses classes that differ only in case or spaces: name both rows
        raise InputError([Problem(str(path), f"class names {a!r} and {b!r} differ only in case or spaces",
                                  row=int(bill.loc[names[names.eq(b)].index[0], "_row"]), column=column, value=b,
                                  expected=f"one spelling (the planner reads them as one class; {a!r} first on row "
                                           f"{int(bill.loc[names[names.eq(a)].index[0], '_row'])})")
                          for a, b in clash[:20]])
    if first.any():
        raise InputError([Problem(str(path), f"the class name would hold {w}", row=int(r), column=column, value=n,
                                  expected="a class name of printable text, not a JSON object")
                          for r, n, w in zip(bill.loc[first[first].index, "_row"].head(20), names[first].head(20),
                                             why[first].head(20))])


def _lower(bill: pd.DataFrame, col: str) -> pd.Series:
    return bill[col].fillna("").str.strip().str.lower() if col in bill else pd.Series("", index=bill.index)


def import_focus(path: str | Path, prices: str | Path, class_by: str | None = None,
                 progress: bool = False) -> HistoryResult:
    """Read the FOCUS file ``path`` with the price sheet ``prices``; see the module docstring. ``progress``:
    bars of the rows read and of the hour spreading (on a terminal only)."""
    kind, key = class_rule(class_by)
    bill = read_focus(path, progress)
    pools, types, notes = read_sheet(prices)
    name = Path(path).name
    again = bill.attrs.get("repeated_rows", [])
    if again:  # an exported line twice is one charge, not two
        notes.append(f"{name}: {len(again)} rows repeat an earlier row in every column: read once (rows "
                     + ", ".join(map(str, again[:12])) + (" ..." if len(again) > 12 else "") + ").")
    usage = _lower(bill, "ChargeCategory").eq("usage")
    unused = _lower(bill, "CommitmentDiscountStatus").eq("unused")
    compute = usage & _lower(bill, "ServiceCategory").eq("compute")
    pool = match_pools(bill, pools, types)
    bill = bill.join(pool)
    if "ConsumedQuantity" in bill:
        qty, factor = bill["ConsumedQuantity"], unit_factor(bill.get("ConsumedUnit", pd.Series(np.nan, index=bill.index, dtype=object)),
                                                            bill["gpus_per_instance"])
    else:
        notes.append(f"{name}: no ConsumedQuantity column: usage from PricingQuantity / PricingUnit.")
        qty, factor = bill.get("PricingQuantity"), unit_factor(bill.get("PricingUnit"), bill["gpus_per_instance"])
    if qty is None:
        raise InputError(Problem(str(path), "no quantity column", row=1, column="ConsumedQuantity",
                                 expected="ConsumedQuantity (FOCUS 1.0-1.2) or PricingQuantity"))
    gpu_hours = (qty * factor).where(usage & ~unused & bill["gpu_type"].notna())
    no_qty = usage & ~unused & bill["gpu_type"].notna() & qty.isna()
    if no_qty.any():
        qcol = "ConsumedQuantity" if "ConsumedQuantity" in bill else "PricingQuantity"
        notes.append(f"{int(no_qty.sum())} usage rows of GPU instances have no quantity (NULL or blank {qcol}): "
                     "skipped, not counted as usage (rows " + ", ".join(map(str, bill.loc[no_qty, "_row"].head(12)))
                     + (" ..." if no_qty.sum() > 12 else "") + ").")
    gpu = gpu_hours.notna()
    counts = {"rows read": len(bill) + len(again), "usage rows": int(usage.sum()), "compute usage rows": int(compute.sum()),
              "GPU usage rows": int(gpu.sum())}
    sized = bill["gpu_type"].notna()
    lost_units = usage & ~unused & sized & factor.isna() & qty.notna()  # no quantity at all: counted above
    if lost_units.any():
        notes.append(f"{int(lost_units.sum())} usage rows of GPU instances with a quantity not in hours "
                     f"({', '.join(sorted(bill.loc[lost_units, 'ConsumedUnit'].dropna().unique())[:5])}): skipped.")
    family = gpu_family_rows(bill)
    unsized = usage & ~sized & family.notna()
    if unsized.any():
        named = family[unsized].value_counts()
        listed = ",".join(named.index[:8])
        notes.append(f"{int(unsized.sum())} usage rows name AWS GPU instance types that the price sheet does not size "
                     "(" + ", ".join(f"{k} {v}" for k, v in named.head(8).items()) + "): not counted as GPU usage. "
                     "To count them, import the sheet from a catalog that prices them (its note lists the GPUs of "
                     "every instance type read), e.g. `planner prices import --from wide prices_aws.csv "
                     f"--instance-types {listed} --out prices.csv`, or give the sheet an instance_type column.")
    if not gpu.any():
        notes.append(f"{name}: {counts['rows read']:,} rows read, {counts['compute usage rows']:,} compute usage rows, "
                     "none of them GPU usage: the history is empty.")
    bill["_class"] = bill["gpu_type"] + "@" + bill["region"]
    if kind == "tag":
        if "Tags" in bill:
            tag, broken = _tag_values(bill["Tags"], key)
        else:
            tag, broken = pd.Series(np.nan, index=bill.index, dtype=object), pd.Series(False, index=bill.index)
        bill["_class"] = tag.fillna("untagged")
        if (gpu & broken).any():
            first = bill.loc[gpu & broken].iloc[0]
            notes.append(f"{int((gpu & broken).sum())} GPU usage rows have a Tags cell that is not a JSON object "
                         f"(broken JSON or a list; the first: row {int(first['_row'])}, column Tags, "
                         f"{str(first['Tags'])[:40]!r}): class `untagged`.")
        if gpu.any() and tag[gpu].isna().any():
            notes.append(f"{int(tag[gpu].isna().sum())} GPU usage rows have no tag {key!r}: class `untagged`.")
        mixed = bill[gpu].groupby("_class")["gpu_type"].nunique()
        if (mixed > 1).any():
            notes.append("classes spanning several GPU types (their GPUs added as they are, no speed conversion): "
                         + ", ".join(mixed[mixed > 1].index[:10]) + ".")
    _refuse_class_names(bill, gpu, path, "Tags" if kind == "tag" else "RegionId")
    negative = gpu & gpu_hours.lt(0)
    if negative.any():
        notes.append(f"{int(negative.sum())} GPU usage rows have a negative quantity (corrections or credits, "
                     f"{-gpu_hours[negative].sum():,.6g} GPU-hours; the first: row {int(bill.loc[negative, '_row'].iloc[0])}): "
                     "netted against the usage of the hours they cover (an hour below 0 is written as 0).")
    spread = spread_hourly(bill.loc[gpu, "ChargePeriodStart"], bill.loc[gpu, "ChargePeriodEnd"],
                           gpu_hours[gpu], bill.loc[gpu, "_class"], progress=progress)
    notes.append("GPU-hours spread evenly over each row's charge period, by clock hour (UTC); a class's demand in "
                 "an hour = its GPU-hours in that hour.")
    unpriced = bill.loc[gpu, ["gpu_type", "region"]].drop_duplicates().merge(pools, how="left", indicator=True)
    unpriced = unpriced[unpriced["_merge"] == "left_only"]
    if len(unpriced):
        notes.append("pools with usage but not in the price sheet: "
                     + ", ".join((unpriced["gpu_type"] + "@" + unpriced["region"]).head(10)) + ".")
    pricing_f = unit_factor(bill.get("PricingUnit", pd.Series(np.nan, index=bill.index, dtype=object)), bill["gpus_per_instance"])
    covered = gpu_hours.where(~unused, bill.get("PricingQuantity", np.nan) * pricing_f)
    covered = covered.where(usage & bill["gpu_type"].notna())
    bill["_cid"] = bill.get("CommitmentDiscountId")
    inventory = commitments(bill, covered, notes, str(path))
    span = None
    if gpu.any():  # the hours the bill shows usage in: from its first usage row to its last, of any service (an
        # hour without a GPU usage row is an hour the bill shows none: 0, not unknown; purchases, fees and credits,
        # whose periods can span a term, do not stretch it)
        first = bill.loc[usage, "ChargePeriodStart"].min().floor("h")
        last = (bill.loc[usage, "ChargePeriodEnd"].max() - pd.Timedelta(microseconds=1)).floor("h")
        span = (first, last)
        notes.append(f"the history spans the bill's usage, {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC (its "
                     "first usage row to its last, of any service): hours without GPU usage are 0.")
    return HistoryResult(history=hourly_grid(spread, span), inventory=inventory, counts=counts, notes=notes)
