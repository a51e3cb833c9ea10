"""Reading a FOCUS cost-and-usage file (CSV, CSV.gz or Parquet; FOCUS 1.0 to 1.2) as text columns under
the 1.2 names, ``NULL`` as missing, with its dates and quantities parsed and every bad cell reported.

Older names are renamed to the current ones (FOCUS 1.0-preview ``ChargeType``, ``Provider``, ``UsageQuantity``
/ ``UsageUnit``, ``ResourceID``; 1.2 keeps 1.0's ``ConsumedQuantity`` / ``ConsumedUnit`` and ``PricingQuantity`` /
``PricingUnit``). Only the columns the history import uses are kept, so a bill of millions of rows stays small.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.errors import InputError, Problem
from planner.imports.guards import DATE_RANGE_TEXT, MAX_QUANTITY, outside_range

# older spelling -> the name used here (the first one present wins; the current name always wins)
RENAMES = {"ChargeType": "ChargeCategory", "Provider": "ProviderName", "UsageQuantity": "ConsumedQuantity",
           "UsageUnit": "ConsumedUnit", "ResourceID": "ResourceId", "Region": "RegionId"}
REQUIRED = ["ChargePeriodStart", "ChargePeriodEnd"]
NEEDED = ["ChargeCategory", "RegionId"]  # (not dates): which rows are usage, and the region that finds their pool
NUMBERS = ["ConsumedQuantity", "PricingQuantity", "CommitmentDiscountQuantity"]
USED = ["ChargeCategory", "ChargeClass", "ServiceCategory", "ResourceType", "SkuId", "ChargeDescription",
        "RegionId", "ProviderName", "PricingUnit", "ConsumedUnit", "CommitmentDiscountId", "CommitmentDiscountType",
        "CommitmentDiscountCategory", "CommitmentDiscountStatus", "CommitmentDiscountUnit", "CapacityReservationId",
        "Tags", *REQUIRED, *NUMBERS]
NULLS = ("", "NULL", "null", "None", "NaN", "nan")
CHUNK_ROWS = 500_000  # rows read at once (the progress bar counts them)


def _read_raw(path: Path, progress: bool = False) -> pd.DataFrame:
    from planner.core.progress import bar
    from planner.imports.catalog_read import GZIP_ERRORS, PANDAS_KEEPS_NUL, check_gzip, not_gzip, refuse_nul_cells

    name = path.name.lower()
    try:
        if name.endswith(".parquet") or name.endswith(".pq"):
            frame = pd.read_parquet(path)
            return frame.astype(object).where(frame.notna(), None).astype(str).where(frame.notna(), "")
        check_gzip(path)
        if not PANDAS_KEEPS_NUL:  # (pandas 2 would end a cell at a NUL byte, silently)
            refuse_nul_cells(path)
        rows = bar(None, f"reading {path.name}", enabled=progress, unit="row")
        parts = []
        for chunk in pd.read_csv(path, dtype=str, keep_default_na=False, compression="infer", encoding="utf-8-sig",
                                 chunksize=CHUNK_ROWS):
            parts.append(chunk)
            rows.update(len(chunk))
        rows.close()
        if not parts:  # a header and no rows
            return pd.read_csv(path, dtype=str, keep_default_na=False, compression="infer", encoding="utf-8-sig",
                               nrows=0)
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    except GZIP_ERRORS as exc:
        raise not_gzip(path, f"damaged: {exc}") from None
    except (UnicodeDecodeError, pd.errors.ParserError, OSError, ValueError, EOFError) as exc:
        raise InputError(Problem(str(path), f"cannot be read as a FOCUS file ({type(exc).__name__}: {exc})",
                                 expected="a FOCUS cost-and-usage export: CSV, CSV.gz or Parquet")) from None


def read_focus(path: str | Path, progress: bool = False) -> pd.DataFrame:
    """The FOCUS file at ``path``: the columns the import uses (plus every ``x_`` column), text with NaN for
    missing or ``NULL``, ``ChargePeriodStart``/``End`` as UTC timestamps and the quantities as floats, and
    ``_row``, the spreadsheet row of each record (header = 1). Bad files (a charge period ending before it
    starts, a date outside 1970-01-01 .. 2200-01-01, a quantity that is infinite or above 1e12, too) raise InputError
    naming file, row, column and value. ``progress``: a bar of the rows read."""
    path = Path(path)
    if not path.is_file():
        raise InputError(Problem(str(path), "FOCUS file not found", expected="a FOCUS CSV, CSV.gz or Parquet file"))
    raw = _read_raw(path, progress)
    raw.columns = [str(c).strip() for c in raw.columns]
    for old, new in RENAMES.items():
        if old in raw.columns and new not in raw.columns:
            raw = raw.rename(columns={old: new})
    missing = [c for c in REQUIRED + NEEDED if c not in raw.columns]
    if missing:
        why = {"ChargeCategory": " (which rows are usage)", "RegionId": " (the region that finds a row's pool)"}
        raise InputError([Problem(str(path), f"missing column '{c}'", row=1, column=c,
                                  expected=f"a FOCUS 1.0-1.2 cost-and-usage file with {c}{why.get(c, '')} "
                                           "(ChargePeriodStart, ChargePeriodEnd, ChargeCategory, RegionId, "
                                           "ConsumedQuantity or PricingQuantity, ...)") for c in missing])
    repeated = raw.duplicated(keep="first").to_numpy()  # a whole line again, every column alike: read once
    keep = [c for c in raw.columns if c in USED or c.startswith("x_")]
    out = raw[keep].copy()
    for c in keep:
        out[c] = out[c].str.strip()
        out[c] = out[c].where(~out[c].isin(NULLS))
    out["_row"] = np.arange(2, len(out) + 2)
    out.attrs["repeated_rows"] = out["_row"].to_numpy()[repeated].tolist()
    out = out[~repeated]
    problems: list[Problem] = []
    for c in REQUIRED:
        parsed = pd.to_datetime(out[c], utc=True, errors="coerce", format="mixed")
        far = outside_range(out[c], parsed)
        bad = parsed.isna() & ~far
        problems += [Problem(str(path), "not a date and time", row=int(r), column=c, value=v,
                             expected="ISO 8601, e.g. 2024-09-01T00:00:00Z")
                     for r, v in zip(out.loc[bad, "_row"].head(20), out.loc[bad, c].head(20))]
        problems += [Problem(str(path), "a date outside the range the planner can hold", row=int(r), column=c, value=v,
                             expected=DATE_RANGE_TEXT)
                     for r, v in zip(out.loc[far, "_row"].head(20), out.loc[far, c].head(20))]
        out[c] = parsed.dt.tz_convert(None).where(~far)
    backwards = out["ChargePeriodEnd"] < out["ChargePeriodStart"]
    problems += [Problem(str(path), "ChargePeriodEnd is before ChargePeriodStart", row=int(r), column="ChargePeriodEnd",
                         value=str(v), expected=f"a time at or after ChargePeriodStart ({b})")
                 for r, v, b in zip(out.loc[backwards, "_row"].head(20), out.loc[backwards, "ChargePeriodEnd"].head(20),
                                    out.loc[backwards, "ChargePeriodStart"].head(20))]
    for c in NUMBERS:
        if c not in out:
            continue
        parsed = pd.to_numeric(out[c].str.replace(",", "", regex=False), errors="coerce")
        bad = parsed.isna() & out[c].notna()
        problems += [Problem(str(path), "not a number", row=int(r), column=c, value=v, expected="a decimal number")
                     for r, v in zip(out.loc[bad, "_row"].head(20), out.loc[bad, c].head(20))]
        huge = parsed.notna() & ~(parsed.abs() <= MAX_QUANTITY)
        problems += [Problem(str(path), "not a finite quantity a bill can hold", row=int(r), column=c, value=v,
                             expected=f"a finite number, at most {MAX_QUANTITY:.0e} in size")
                     for r, v in zip(out.loc[huge, "_row"].head(20), out.loc[huge, c].head(20))]
        out[c] = parsed.astype(float)
    if problems:
        raise InputError(problems)
    return out
