"""A Prometheus ``/api/v1/query_range`` result of a GPU-requests metric -> hourly demand per class.

The file is the API's JSON answer: ``{"status": "success", "data": {"resultType": "matrix", "result": [{"metric":
{...}, "values": [[unix_ts, "value"], ...]}, ...]}}``. A class is the value of ``--label`` in each series' metric
(``unlabelled`` where the series has none; ``unlabelled-2`` ... when a label's value is already ``unlabelled``); a
value that is not text, has a control character or is a JSON object exits 2 naming its path. At each timestamp the
series of one class are added (e.g. one series per pod); the hourly demand is the **mean** of those sums over the
samples in the clock hour (UTC), so a 1-minute step averages 60 samples. ``NaN`` samples (Prometheus writes
``"NaN"``) are skipped; anything else that is not a number, ``+Inf`` / ``-Inf``, a negative value, a timestamp not
in seconds since the epoch (before 2000 or above 1e11: milliseconds) or after 2200-01-01 (where the planner's hourly
tables end), a value above 1e9 GPUs (or series of one class adding up to more), a status other than ``success`` or a
result type other than ``matrix`` exits 2 naming the file and the sample (``data.result[i].values[j]``).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.errors import InputError, Problem
from planner.imports.guards import DATE_MAX, MAX_GPUS, bad_class_names, same_but_case
from planner.imports.history_write import HistoryResult, hourly_grid

MIN_TS = 946_684_800.0  # 2000-01-01T00:00:00Z
MAX_MS = 1e11  # beyond it a "timestamp" is milliseconds, not seconds
MAX_TS = (DATE_MAX - pd.Timestamp(0)).total_seconds()  # 2200-01-01: later is a typo or milliseconds


def _load(path: Path) -> dict:
    if not path.is_file():
        raise InputError(Problem(str(path), "Prometheus file not found", expected="a query_range JSON answer"))
    from planner.imports.catalog_read import GZIP_ERRORS, check_gzip, not_gzip

    check_gzip(path)
    try:
        raw = gzip.open(path, "rb").read() if path.name.lower().endswith(".gz") else path.read_bytes()
    except GZIP_ERRORS as exc:
        raise not_gzip(path, f"damaged: {exc}") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise InputError(Problem(str(path), "JSON nested too deeply to read",
                                 expected="a query_range JSON answer (a few levels deep)")) from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, or an integer of more than 4,300 digits
        raise InputError(Problem(str(path), f"not valid JSON ({exc})", expected="a query_range JSON answer")) from None
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
    ts = _numbers(arr["ts"])
    text = arr["value"].map(lambda v: v if isinstance(v, str) else repr(v)).str.strip()
    value = _numbers(text)
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
        (ts.notna() & ((ts < MIN_TS) | (ts > MAX_MS)), 0, "sample timestamp out of range: seconds since the epoch "
         "expected", "a Unix time in seconds between 2000-01-01 and 2200-01-01 (not milliseconds), e.g. 1725148800"),
        (ts.notna() & (ts > MAX_TS) & (ts <= MAX_MS), 0,
         "sample timestamp after 2200-01-01, outside the range the planner can hold",
         "a Unix time in seconds between 2000-01-01 and 2200-01-01, e.g. 1725148800"),
        (value.notna() & ~np.isfinite(value.astype(float)), 1, "sample value is not finite",
         'a finite number of GPUs as text, e.g. "8" ("NaN" is skipped)'),
        (value.notna() & (value > MAX_GPUS), 1, "sample value is more GPUs than any fleet holds",
         f'GPUs requested, at most {MAX_GPUS:.0e}, e.g. "8"'),
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
    raw = metric.get(label)
    if raw is not None and not isinstance(raw, str):
        raise InputError(Problem(str(path), "a label value is not text", column=f"{where}.metric.{label}",
                                 value=repr(raw)[:60], expected="the label's value as text, as Prometheus writes it"))
    if raw not in (None, ""):
        why = bad_class_names(pd.Series([raw])).iat[0]
        if why:
            raise InputError(Problem(str(path), f"the class name (label {label!r}) would hold {why}",
                                     column=f"{where}.metric.{label}", value=raw,
                                     expected="a class name of printable text, not a JSON object"))
    frame = pd.DataFrame({"ts": ts.to_numpy(float), "key": raw if raw not in (None, "") else None,
                          "gpus": value.to_numpy(float), "series": i})
    return frame.dropna(subset=["ts", "gpus"])


def _numbers(col: pd.Series) -> pd.Series:
    """Each cell as a float (NaN where not a number; inf where a whole number is too large for a float)."""
    try:
        return pd.to_numeric(col, errors="coerce").astype(float)
    except (OverflowError, ValueError):  # e.g. a 400-digit integer: one cell at a time
        def one(v):
            if isinstance(v, bool):
                return np.nan
            try:
                return float(v)
            except OverflowError:
                return np.inf
            except (TypeError, ValueError):
                return np.nan
        return col.map(one).astype(float)


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
    samples = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["ts", "key", "gpus", "series"])
    clash = same_but_case(samples["key"])
    if clash:  # the planner refuses classes that differ only in case or spaces
        first = samples.drop_duplicates("key").set_index("key")["series"]
        raise InputError([Problem(str(path), f"class names {a!r} and {b!r} (label {label!r}) differ only in case or "
                                  "spaces", column=f"data.result[{int(first[b])}].metric.{label}", value=b,
                                  expected=f"one spelling (as data.result[{int(first[a])}] has it): the planner reads "
                                           "them as one class") for a, b in clash[:20]])
    no_label = [s for s in result
                if not (isinstance(s.get("metric"), dict) and s["metric"].get(label) not in (None, ""))]
    if no_label:
        taken = set(samples["key"].dropna())
        name = next(n for n in ("unlabelled", *(f"unlabelled-{k}" for k in range(2, len(taken) + 3)))
                    if n not in taken)
        samples["key"] = samples["key"].fillna(name)
        notes.append(f"{len(no_label)} series have no label {label!r}: class `{name}`"
                     + (" (a label's value is `unlabelled`, so these take another name)." if name != "unlabelled"
                        else "."))
    if not len(samples):
        notes.append(f"{path.name}: no samples: the history is empty.")
        return HistoryResult(history=hourly_grid(pd.DataFrame(columns=["period", "key", "gpus"])),
                             counts={"series": len(result), "samples": 0}, notes=notes)
    at = samples.groupby(["ts", "key"], sort=False)["gpus"].sum().reset_index()
    over = ~(at["gpus"] <= MAX_GPUS)
    if over.any():
        j = int(np.flatnonzero(over.to_numpy())[0])
        raise InputError(Problem(str(path), f"the series of class {at['key'].iat[j]!r} add up to more GPUs than any "
                                 "fleet holds", column="data.result", value=f"{at['gpus'].iat[j]:.6g} at ts "
                                 f"{at['ts'].iat[j]:.0f}", expected=f"at most {MAX_GPUS:.0e} GPUs at one time",
                                 hint=f"{int(over.sum())} such class-timestamps" if over.sum() > 1 else None))
    at["period"] = pd.to_datetime(at["ts"], unit="s").dt.floor("h")
    hourly = at.groupby(["period", "key"])["gpus"].mean().reset_index()
    full = hourly_grid(hourly)
    gaps = len(full) - len(hourly)
    if gaps:
        notes.append(f"{gaps} class-hours without samples set to 0 GPUs.")
    return HistoryResult(history=full, counts={"series": len(result), "samples": len(samples),
                                               "classes": hourly["key"].nunique(), "hours": full["period"].nunique()},
                         notes=notes)
