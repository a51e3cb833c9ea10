"""A Prometheus ``/api/v1/query_range`` result of a GPU-requests metric -> hourly demand per class.

The file is the API's JSON answer: ``{"status": "success", "data": {"resultType": "matrix", "result":
[{"metric": {...}, "values": [[unix_ts, "value"], ...]}, ...]}}``. A class is the value of ``--label`` in each
series' metric (``unlabelled`` where the series has none). At each timestamp the series of one class are added
(e.g. one series per pod); the hourly demand is the **mean** of those sums over the samples in the clock hour
(UTC), so a 1-minute step averages 60 samples. ``NaN`` samples (Prometheus writes ``"NaN"``) are skipped;
anything else that is not a number, ``+Inf`` / ``-Inf``, a negative value, a timestamp not in seconds since
the epoch (before 2000 or above 1e11: milliseconds), a status other than ``success`` or a result type other
than ``matrix`` exits 2 naming the file and the sample (``data.result[i].values[j]``).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError, Problem
from ..validate import ABSURD_GPUS
from .history_write import HistoryResult, hourly_grid
from .names import check_class_names

MIN_TS = 946_684_800.0  # 2000-01-01T00:00:00Z
MAX_TS = 7_258_118_400.0  # 2200-01-01T00:00:00Z: beyond it a "timestamp" is milliseconds or a typo
UNLABELLED = "unlabelled"  # the class of series without the label (renamed when a label has this value)


def _load(path: Path) -> dict:
    if not path.is_file():
        raise InputError(Problem(str(path), "Prometheus file not found", expected="a query_range JSON answer"))
    from .catalog_read import GZIP_ERRORS, check_gzip, not_gzip

    check_gzip(path)
    try:
        raw = gzip.open(path, "rb").read() if path.name.lower().endswith(".gz") else path.read_bytes()
    except GZIP_ERRORS as exc:
        raise not_gzip(path, f"damaged: {exc}") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(Problem(str(path), f"not valid JSON ({exc})", expected="a query_range JSON answer")) from None
    except RecursionError:
        raise InputError(Problem(str(path), "JSON nested too deeply to be a query_range answer",
                                 expected="a query_range JSON answer")) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InputError(Problem(str(path), f"not valid JSON ({exc})"[:300], expected="a query_range JSON answer")) from None
    if not isinstance(doc, dict):
        raise InputError(Problem(str(path), "not a Prometheus answer", column="(top level)",
                                 value=type(doc).__name__, expected='an object with "status" and "data"'))
    if doc.get("status") != "success":
        raise InputError(Problem(str(path), "the query failed", column="status", value=doc.get("status"),
                                 expected='"success"', hint=str(doc.get("error") or "")[:200] or None))
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        raise InputError(Problem(str(path), "not a range query result", column="data.resultType",
                                 value=data.get("resultType") if isinstance(data, dict) else data,
                                 expected='"matrix" (the answer of /api/v1/query_range)'))
    if not isinstance(data.get("result"), list):
        raise InputError(Problem(str(path), "no series list", column="data.result", expected="a list of series"))
    return data


def _safe_float(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return float("inf") if isinstance(v, int) else float("nan")


def _series(path: Path, i: int, s, label: str) -> pd.DataFrame:
    where = f"data.result[{i}]"
    if not isinstance(s, dict) or not isinstance(s.get("values"), list):
        raise InputError(Problem(str(path), "a series without values", column=where,
                                 expected='{"metric": {...}, "values": [[unix_ts, "value"], ...]}'))
    vals = s["values"]
    bad_shape = next((j for j, v in enumerate(vals) if not isinstance(v, (list, tuple)) or len(v) != 2), None)
    if bad_shape is not None:
        raise InputError(Problem(str(path), "a sample is not [unix_ts, \"value\"]", column=f"{where}.values[{bad_shape}]",
                                 value=vals[bad_shape]))
    arr = pd.DataFrame(vals, columns=["ts", "value"], dtype=object)
    try:
        ts = pd.to_numeric(arr["ts"], errors="coerce")
    except OverflowError:  # an integer too large for a float (a 400-digit "timestamp"): out of range below
        ts = arr["ts"].map(_safe_float)
    text = arr["value"].astype(str).str.strip()
    value = pd.to_numeric(text, errors="coerce")
    nan_ok = text.str.lower().isin(["nan"])
    for col, parsed, ok, field in (("ts", ts, pd.Series(False, index=arr.index), 0),
                                   ("value", value, nan_ok, 1)):
        bad = parsed.isna() & ~ok
        if bad.any():
            j = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(Problem(str(path), f"sample {'timestamp' if field == 0 else 'value'} is not a number",
                                     row=j + 1, column=f"{where}.values[{j}][{field}]", value=arr[col].iat[j],
                                     expected="a Unix time in seconds" if field == 0 else 'a number as text, e.g. "8"',
                                     hint=f"{int(bad.sum())} such samples in this series" if bad.sum() > 1 else None))
    checks = (
        (ts.notna() & ((ts < MIN_TS) | (ts > MAX_TS)), 0, "sample timestamp out of range: seconds since the epoch "
         "expected", "a Unix time in seconds from 2000-01-01 to before 2200-01-01 (not milliseconds), e.g. 1725148800"),
        (value.notna() & ~(value.astype(float).abs() <= ABSURD_GPUS), 1, "sample value is not finite or is absurdly "
         "large", f'a finite number of GPUs up to {ABSURD_GPUS:.0e} as text, e.g. "8" ("NaN" is skipped)'),
        (value.notna() & (value < 0), 1, "sample value is negative", 'GPUs requested, >= 0, e.g. "8"'),
    )
    for bad, field, message, expected in checks:
        if bad.any():
            j = int(np.flatnonzero(bad.to_numpy())[0])
            col = "ts" if field == 0 else "value"
            raise InputError(Problem(str(path), message, row=j + 1, column=f"{where}.values[{j}][{field}]",
                                     value=arr[col].iat[j], expected=expected,
                                     hint=f"{int(bad.sum())} such samples in this series" if bad.sum() > 1 else None))
    metric = s.get("metric") if isinstance(s.get("metric"), dict) else {}
    given = metric.get(label)
    if given is not None and not isinstance(given, str):  # Prometheus label values are strings
        raise InputError(Problem(str(path), f"label {label!r} is not text", column=f"{where}.metric.{label}",
                                 value=str(given)[:60], expected="a label value (a string)"))
    cls = given if given not in (None, "") else None  # None: the series has no such label
    frame = pd.DataFrame({"ts": ts.to_numpy(float), "key": cls, "gpus": value.to_numpy(float)}).dropna(subset=["ts", "gpus"])
    frame["labelled"] = cls is not None
    return frame


def import_prometheus(path: str | Path, label: str) -> HistoryResult:
    """Read the query_range answer at ``path``; one class per value of ``label``; see the module docstring."""
    path = Path(path)
    if not label:
        raise InputError(Problem("command line", "--label is required with --prometheus",
                                 expected="the metric label naming the class, e.g. namespace"))
    result = _load(path)["result"]
    frames = [_series(path, i, s, label) for i, s in enumerate(result)]
    notes = [f"{path.name}: {len(result)} series; class = the value of label {label!r}; the series of one class "
             "added at each timestamp, then resampled hourly by the mean of the samples in each clock hour (UTC)."]
    samples = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["ts", "key", "gpus", "labelled"])
    check_class_names(pd.Series([f["key"].iat[0] if len(f) else None for f in frames], dtype=object),
                      pd.Series([f"data.result[{i}].metric.{label}" for i in range(len(frames))], dtype=object),
                      str(path), f"metric.{label}")
    unlabelled = sum(1 for f in frames if len(f) and not f["labelled"].iat[0])
    if unlabelled:
        name = UNLABELLED
        while samples["key"].eq(name).any():  # a label whose value is literally `unlabelled` keeps its own class
            name = "_" + name
        samples["key"] = samples["key"].fillna(name)
        notes.append(f"{unlabelled} series have no label {label!r}: class `{name}`"
                     + (f" (`{UNLABELLED}` is a value of the label, a class of its own)." if name != UNLABELLED else "."))
    if not len(samples):
        notes.append(f"{path.name}: no samples: the history is empty.")
        return HistoryResult(history=hourly_grid(pd.DataFrame(columns=["period", "key", "gpus"])),
                             counts={"series": len(result), "samples": 0}, notes=notes)
    at = samples.groupby(["ts", "key"], sort=False)["gpus"].sum().reset_index()
    over = ~(at["gpus"] <= ABSURD_GPUS)  # series that each hold a plausible number can add up to inf
    if over.any():
        r = at[over].iloc[0]
        raise InputError(Problem(str(path), f"the series of class {r['key']!r} add up to {r['gpus']:.3g} GPUs at one "
                                 "timestamp", column="data.result[*].values", value=f"ts {r['ts']:.0f}",
                                 expected=f"at most {ABSURD_GPUS:.0e} GPUs per class at a time"))
    at["period"] = pd.to_datetime(at["ts"], unit="s").dt.floor("h")
    hourly = at.groupby(["period", "key"])["gpus"].mean().reset_index()
    full = hourly_grid(hourly)
    gaps = len(full) - len(hourly)
    if gaps:
        notes.append(f"{gaps} class-hours without samples set to 0 GPUs.")
    return HistoryResult(history=full, counts={"series": len(result), "samples": len(samples),
                                               "classes": hourly["key"].nunique(), "hours": full["period"].nunique()},
                         notes=notes)
