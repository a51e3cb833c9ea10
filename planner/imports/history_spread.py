"""Spreading quantities over the clock hours their charge periods cover (vectorised, in bounded chunks).

A row of ``q`` GPU-hours charged over ``[start, end)`` puts ``q x overlap / (end - start)`` GPU-hours into each
clock hour it overlaps, which is the average number of GPUs in use in that hour. A row whose period is empty
puts all of ``q`` into the hour of its start.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

HOUR_NS = 3_600_000_000_000
CHUNK = 4_000_000  # hour cells expanded at once


def spread_hourly(start: pd.Series, end: pd.Series, gpu_hours: pd.Series, key: pd.Series,
                  progress: bool = False, desc: str = "spreading hours") -> pd.DataFrame:
    """Columns ``period`` (hour start, naive UTC), ``key``, ``gpus`` (GPU-hours in that hour = average GPUs),
    summed over the rows; one row per hour and key that any row touches. ``progress``: a bar over the chunks
    (``planner.core.progress.bar``, drawn only on a terminal)."""
    from planner.core.progress import bar

    s = start.to_numpy("datetime64[ns]").astype(np.int64)
    e = end.to_numpy("datetime64[ns]").astype(np.int64)
    q = gpu_hours.to_numpy(float)
    k = pd.Series(key).astype(str).to_numpy()
    e = np.maximum(e, s)
    h0 = np.floor_divide(s, HOUR_NS)
    h1 = np.maximum(-np.floor_divide(-e, HOUR_NS), h0 + 1)
    n = (h1 - h0).astype(np.int64)
    parts, cum, lo = [], np.cumsum(n), 0
    chunks = bar(int(-(-int(cum[-1]) // CHUNK)) if len(n) else 0, desc, enabled=progress, unit="chunk")
    while lo < len(n):
        done = cum[lo - 1] if lo else 0
        hi = max(int(np.searchsorted(cum, done + CHUNK, side="right")), lo + 1)
        idx = np.repeat(np.arange(lo, hi), n[lo:hi])
        first = np.repeat(np.cumsum(n[lo:hi]) - n[lo:hi], n[lo:hi])
        hour = h0[idx] + (np.arange(len(idx)) - first)
        dur = (e - s)[idx].astype(float)
        overlap = (np.minimum(e[idx], (hour + 1) * HOUR_NS) - np.maximum(s[idx], hour * HOUR_NS)).astype(float)
        share = np.where(dur > 0, overlap / np.where(dur > 0, dur, 1.0), 1.0)
        part = pd.DataFrame({"hour": hour, "key": k[idx], "gpus": q[idx] * share})
        parts.append(part.groupby(["hour", "key"], sort=False)["gpus"].sum().reset_index())
        chunks.update(1)
        lo = hi
    chunks.close()
    if not parts:
        return pd.DataFrame({"period": pd.Series(dtype="datetime64[ns]"), "key": pd.Series(dtype=object),
                             "gpus": pd.Series(dtype=float)})
    out = pd.concat(parts).groupby(["hour", "key"], sort=True)["gpus"].sum().reset_index()
    out["period"] = pd.to_datetime(out.pop("hour") * HOUR_NS)
    return out[["period", "key", "gpus"]]
