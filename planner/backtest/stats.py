"""Across the windows of a backtest: seeded bootstrap confidence intervals and the ranking at other penalties.

Windows are resampled with replacement (``n`` draws, a seeded generator: the same seed gives the same
interval). :func:`mean_ci` is the interval of the mean of per-window values (regret %); :func:`ratio_ci` that of
a ratio of sums (full-term regret: lumpy liabilities make per-window percentages meaningless, so the regret of
the whole span, sum of regrets over sum of hindsight costs, is resampled instead).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

DRAWS = 2000
LEVEL = 0.90
MULTIPLIERS = (2.0, 10.0, 50.0)  # shortfall penalties re-ranked at, x the dearest on-demand GPU-hour


def _draws(n: int, seed: int, draws: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(draws, n))


def mean_ci(values, seed: int = 0, draws: int = DRAWS, level: float = LEVEL) -> tuple[float, float] | None:
    """The ``level`` percentile interval of the mean of ``values`` over ``draws`` bootstrap resamples (None when
    there are no finite values)."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], float)
    if not len(v):
        return None
    means = v[_draws(len(v), seed, draws)].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def ratio_ci(num, den, seed: int = 0, draws: int = DRAWS, level: float = LEVEL) -> tuple[float, float] | None:
    """The interval of ``100 x sum(num) / sum(den)`` over bootstrap resamples of the windows (paired)."""
    num, den = np.asarray(num, float), np.asarray(den, float)
    if not len(num) or den.sum() <= 0:
        return None
    idx = _draws(len(num), seed, draws)
    d = den[idx].sum(axis=1)
    ratio = 100 * num[idx].sum(axis=1) / np.where(d > 0, d, np.nan)
    ratio = ratio[np.isfinite(ratio)]
    lo, hi = np.quantile(ratio, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def rerank(table: pd.DataFrame, reference_usd: float, multipliers=MULTIPLIERS,
           cost: str = "total_cost_usd") -> pd.DataFrame:
    """Per multiplier and strategy: ``cost`` + multiplier x ``reference_usd`` x shortfall GPU-hours, and its rank
    (1 = cheapest; ties share the better rank). ``table``: one row per strategy with ``strategy``, ``cost`` and
    ``shortfall_gpu_hours``. The purchases and the recourse stay as realised (a higher penalty cannot change
    what was bought; with caps binding, shortfall is what the fleet could not serve at any price)."""
    rows = []
    for m in multipliers:
        penalty = float(m) * reference_usd
        obj = table[cost].to_numpy(float) + penalty * table["shortfall_gpu_hours"].to_numpy(float)
        rank = pd.Series(obj).rank(method="min").astype(int).to_numpy()
        rows += [{"multiplier": float(m), "penalty_usd_per_gpu_hour": penalty, "strategy": s, "objective_usd": float(o),
                  "rank": int(r)} for s, o, r in zip(table["strategy"], obj, rank)]
    return pd.DataFrame(rows)
