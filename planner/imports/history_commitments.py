"""The commitments a bill shows (``CommitmentDiscountId`` with its type, category and usage) as inventory rows
(docs/inputs.md, "Inventory"), with what a bill cannot tell said in the notes.

A commitment's GPUs are the most GPU-hours it covered, used plus unused, in any clock hour of the bill; its
pool is that of the usage it covered. FOCUS 1.0-1.2 has no column for a commitment's term: ``start`` and ``end``
are the first and last hour the bill shows it, unless the rows carry ``x_CommitmentDiscountStart`` /
``x_CommitmentDiscountEnd`` (the planner's own export does). The option is ``x_Option`` when it names a reserved
option, else ``reserved_from_bill``. Spend-based commitments (savings plans) hold no GPUs and are only counted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.core.errors import InputError, Problem
from planner.imports.guards import DATE_RANGE_TEXT, outside_range
from planner.imports.history_spread import spread_hourly
from planner.imports.history_write import INVENTORY_COLUMNS


def commitments(bill: pd.DataFrame, gpu_hours: pd.Series, notes: list[str], file: str = "bill") -> pd.DataFrame:
    """Inventory rows of the usage-based commitments of ``bill`` (usage rows with their pool matched) whose
    covered GPU-hours per row are ``gpu_hours`` (NaN where not GPU usage); a term date outside the planner's range
    exits 2 naming ``file`` and the row."""
    cid = bill.get("CommitmentDiscountId", pd.Series(np.nan, index=bill.index, dtype=object))
    category = bill.get("CommitmentDiscountCategory", pd.Series(np.nan, index=bill.index, dtype=object)).fillna("").str.lower()
    ctype = bill.get("CommitmentDiscountType", pd.Series(np.nan, index=bill.index, dtype=object)).fillna("").str.lower()
    spend = cid.notna() & (category.eq("spend") | ctype.str.contains("savings"))
    if spend.any():
        notes.append(f"{cid[spend].nunique()} spend-based commitments (savings plans; {int(spend.sum())} rows) not "
                     "written to the inventory: it holds reserved GPUs, and a savings plan is dollars an hour "
                     "(give it as a savings_plan_* price-sheet row instead).")
    usage = cid.notna() & ~spend & gpu_hours.notna() & (gpu_hours.abs() > 0)
    others = cid.notna() & ~spend & ~usage
    lost = cid[others & ~cid.isin(cid[usage])].nunique()
    if lost:
        notes.append(f"{lost} usage-based commitments with no GPU usage matched to a pool of the price sheet: "
                     "not written.")
    if not usage.any():
        return pd.DataFrame(columns=INVENTORY_COLUMNS)
    rows = bill[usage]
    per_hour = spread_hourly(rows["ChargePeriodStart"], rows["ChargePeriodEnd"], gpu_hours[usage], rows["_cid"])
    gpus = per_hour.groupby("key")["gpus"].max()
    first = rows.groupby("_cid").agg(gpu_type=("gpu_type", "first"), region=("region", "first"),
                                     start=("ChargePeriodStart", "min"), end=("ChargePeriodEnd", "max"))
    option = rows["x_Option"] if "x_Option" in rows else pd.Series(np.nan, index=rows.index, dtype=object)
    first["option"] = option.where(option.fillna("").str.startswith("reserved")).groupby(rows["_cid"]).first()
    first["option"] = first["option"].fillna("reserved_from_bill")
    given = False
    for col, name in (("x_CommitmentDiscountStart", "start"), ("x_CommitmentDiscountEnd", "end")):
        if col in rows:
            parsed = pd.to_datetime(rows[col], utc=True, errors="coerce", format="mixed")
            far = outside_range(rows[col], parsed)
            bad = parsed.isna() & rows[col].notna() & ~far  # given, but no date: never the bill's hours instead
            if far.any() or bad.any():
                raise InputError([Problem(file, "a date outside the range the planner can hold", row=int(r), column=col,
                                          value=v, expected=DATE_RANGE_TEXT)
                                  for r, v in zip(rows.loc[far, "_row"].head(20), rows.loc[far, col].head(20))]
                                 + [Problem(file, "not a date and time", row=int(r), column=col, value=v,
                                            expected="ISO 8601, e.g. 2027-01-01T00:00:00Z (or blank: the bill's hours)")
                                    for r, v in zip(rows.loc[bad, "_row"].head(20), rows.loc[bad, col].head(20))])
            told = parsed.dt.tz_convert(None).groupby(rows["_cid"]).first()
            first[name] = told.where(told.notna(), first[name])
            given = given or bool(told.notna().any())
    if given:
        _refuse_backwards(rows, first, file)
    first["gpus"] = gpus.reindex(first.index).round(6)
    out = first.reset_index(drop=True)
    for c in ("start", "end"):
        out[c] = pd.to_datetime(out[c]).dt.strftime("%Y-%m-%dT%H:%M")
    if not given:
        notes.append(f"{len(out)} commitments written to the inventory: GPUs = the most GPU-hours each covered "
                     "(used + unused) in one hour; start and end = the first and last hour the bill shows it: "
                     "FOCUS 1.0-1.2 has no term dates, so set `end` from the contract (a bill's last hour is not "
                     "the term's end); option `reserved_from_bill` unless x_Option names one.")
    else:
        notes.append(f"{len(out)} commitments written to the inventory, start and end from x_CommitmentDiscountStart "
                     "/ x_CommitmentDiscountEnd.")
    return out[INVENTORY_COLUMNS]


def _refuse_backwards(rows: pd.DataFrame, first: pd.DataFrame, file: str) -> None:
    """Exit 2 where a commitment's term, as its rows give it, ends at or before it starts (an offset such as
    ``+05:00`` on one date and not the other can place it there): never an inventory row no plan can read. The row
    named is the first that gives the end (else the start) of that commitment."""
    minute = lambda c: pd.to_datetime(first[c]).dt.floor("min")  # noqa: E731 (the inventory is written to the minute)
    back = first.index[(minute("end") <= minute("start")).to_numpy()]
    if not len(back):
        return
    problems = []
    for cid in back[:20]:
        mine = rows[rows["_cid"] == cid]
        col = next((c for c in ("x_CommitmentDiscountEnd", "x_CommitmentDiscountStart")
                    if c in mine and mine[c].notna().any()), "x_CommitmentDiscountEnd")
        at = mine[mine[col].notna()] if col in mine else mine
        start, end = first.at[cid, "start"], first.at[cid, "end"]
        problems.append(Problem(file, "a commitment's term ends at or before it starts", row=int(at["_row"].iat[0]),
                                column=col, value=at[col].iat[0] if col in at else end,
                                expected=f"an end after the start ({pd.Timestamp(start):%Y-%m-%dT%H:%M} UTC; "
                                         f"the end read is {pd.Timestamp(end):%Y-%m-%dT%H:%M} UTC)"))
    raise InputError(problems)

