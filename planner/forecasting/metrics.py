"""Held-back error of quantile paths: MAPE of the median, mean pinball loss, coverage of the 80 % interval."""

from __future__ import annotations

import numpy as np


def pinball(actual: np.ndarray, paths: np.ndarray, quantiles) -> float:
    """Mean pinball loss over ``quantiles`` and periods: q x (a - f) when a >= f, (1 - q) x (f - a) otherwise."""
    q = np.asarray(quantiles, float)[:, None]
    diff = actual[None, :] - paths
    return float(np.mean(np.maximum(q * diff, (q - 1) * diff)))


def mape(actual: np.ndarray, median: np.ndarray) -> float | None:
    """Mean absolute percentage error of the median over the periods with positive actual demand (None if none)."""
    pos = actual > 0
    if not pos.any():
        return None
    return float(np.mean(np.abs(actual[pos] - median[pos]) / actual[pos]) * 100.0)


def coverage(actual: np.ndarray, low: np.ndarray, high: np.ndarray) -> float:
    """Share of periods whose actual lies inside [low, high]."""
    return float(np.mean((actual >= low) & (actual <= high)))


def holdout_scores(actual: np.ndarray, paths: np.ndarray, rows, scored) -> dict:
    """``mape`` (% of the median), ``pinball`` (GPUs, mean over the quantiles ``scored``) and ``coverage_80``
    on the held-back ``actual``; ``paths`` has one row per quantile in ``rows`` (0.1 and 0.9 among them)."""
    idx = {round(float(q), 9): i for i, q in enumerate(rows)}
    used = [idx[round(float(q), 9)] for q in scored]
    median = paths[idx[0.5]] if 0.5 in idx else paths[used].mean(axis=0)
    return {"mape": _round(mape(actual, median)), "pinball": _round(pinball(actual, paths[used], scored)),
            "coverage_80": _round(coverage(actual, paths[idx[0.1]], paths[idx[0.9]]))}


def _round(x):
    return None if x is None else round(float(x), 6)
