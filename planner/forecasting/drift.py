"""The growth and drift band of demand past the horizon, from a demand history (issue 34, whole-term demand).

Per class, the history's hour-weighted daily means are averaged by week when the history spans at least
three weeks (:data:`WEEKLY_FROM_DAYS`; daily means otherwise, as short histories leave nothing else), and a
straight line is fitted to them against time in years (ordinary least squares). Its slope over the mean
level is the class's growth a year (0.1: +10 %/year; an exponential's rate to within its curvature) and
``1.2816 x`` the slope's standard error over the mean level is the band a year (the trend's 80 % interval,
as the forecast tree reads p10-p90). The growth used is the trend shrunk by its signal to noise, ``trend x
z^2 / (1 + z^2)`` with ``z`` the slope over its standard error (a trend one standard error from 0 counts half,
three standard errors 90 %), and :mod:`planner.inputs.whole_term` damps it over the term (it halves every
year). Levels, not logarithms: a class that runs in bursts (pretraining on for
weeks, then off) has weeks at 0 GPUs, which a log fit would read as a collapse. Both are clipped to
``+-MAX_RATE`` a year, and the note says so when they are: a few days of history cannot sign for a trend of
+300 %/year. :mod:`planner.inputs.whole_term` turns them into the branches of the tree over the term.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

Z80 = 1.2815515655446004  # the normal's 90th percentile: half the width of an 80 % interval
WEEKLY_FROM_DAYS = 21
MAX_RATE = 1.0  # growth and band a year are clipped to +-1 (log): x2.7 a year


def growth_and_band(periods: pd.DatetimeIndex, hours: np.ndarray, values: np.ndarray) -> dict:
    """``{"growth", "band", "clipped"}`` per class (arrays (K,)) and ``points``, ``unit``, ``days`` from a history's
    ``values`` (K, T) over ``periods`` of ``hours``."""
    values = np.asarray(values, float)
    K = values.shape[0]
    day = pd.DatetimeIndex(periods).normalize()
    frame = pd.DataFrame(values.T * np.asarray(hours, float)[:, None]).assign(_h=np.asarray(hours, float), _d=day)
    daily = frame.groupby("_d").sum()
    days = daily.index
    means = daily.drop(columns="_h").to_numpy(float) / daily["_h"].to_numpy(float)[:, None]  # (D, K)
    span_days = (days[-1] - days[0]).days + 1 if len(days) else 0
    unit = "day"
    t = (days - days[0]).days.to_numpy(float)
    if span_days >= WEEKLY_FROM_DAYS:
        week = (t // 7).astype(int)
        counts = np.bincount(week)
        means = np.stack([np.bincount(week, weights=means[:, k]) for k in range(K)], axis=1) / counts[:, None]
        t = np.arange(len(counts)) * 7.0 + 3.0
        keep = counts > 0
        means, t = means[keep], t[keep]
        unit = "week"
    years = t / 365.25
    growth, band, trend = np.zeros(K), np.zeros(K), np.zeros(K)
    if len(years) >= 3 and np.ptp(years) > 0:
        x = years - years.mean()
        sxx = float((x ** 2).sum())
        y = np.maximum(means, 0.0)  # (N, K)
        level = y.mean(axis=0)
        slope = (x[:, None] * (y - level)).sum(axis=0) / sxx
        resid = y - level - slope[None, :] * x[:, None]
        se = np.sqrt((resid ** 2).sum(axis=0) / max(len(x) - 2, 1) / sxx)
        safe = np.where(level > 0, level, 1.0)
        trend = np.where(level > 0, slope / safe, 0.0)  # a year, as a share of the history's mean level
        band = np.where(level > 0, Z80 * se / safe, 0.0)
        z2 = np.where(se > 0, (slope / np.where(se > 0, se, 1.0)) ** 2, np.inf)
        growth = trend * np.where(np.isfinite(z2), z2 / (1.0 + z2), 1.0)  # shrunk by its signal to noise
    clipped = (np.abs(growth) > MAX_RATE) | (band > MAX_RATE)  # (K,) per class
    return {"growth": np.clip(growth, -MAX_RATE, MAX_RATE), "band": np.minimum(band, MAX_RATE), "trend": trend,
            "points": int(len(years)), "unit": unit, "days": int(span_days), "clipped": clipped}
