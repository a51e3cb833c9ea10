"""The ``tree`` strategy: decide today's purchases on a scenario tree over the term, with later purchases allowed.

At a cut-off the point forecast covers the horizon (a term); the level may drift as the history's weekly means
did (:func:`planner.forecasting.point.level_scenarios`'s sigma). Instead of fanning out from today, the scenarios form a
tree that branches at the first ``depth`` calendar quarter starts (``branches`` children each, the Gauss–Hermite
nodes of planner.forecasting.tree): what happens in a quarter is known at the next purchase date. Purchases may
be dated at every quarter start of the horizon, and a purchase on a date is shared only by the scenarios alike
until then (planner.inputs.tree). So today's plan can buy what today's demand needs and leave growth to later,
branch-specific purchases, instead of betting now on a level three years out; only today's purchases are made
(the next cut-off plans again).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TREE_BY = "quarter"
TREE_BRANCHES = 2
TREE_DEPTH = 2  # branch dates: 2 ** 2 = 4 scenarios


def level_sigma(history: np.ndarray, period_hours: float, weeks_max: int = 26) -> np.ndarray | None:
    """(K,) the standard deviation of the week-on-week log change of each class's weekly means (None with fewer
    than three weeks of history): how fast its level drifts."""
    history = np.asarray(history, float)
    week = max(1, int(round(168 / period_hours)))
    weeks = min(weeks_max, history.shape[1] // week)
    if weeks < 3:
        return None
    means = history[:, -weeks * week:].reshape(history.shape[0], weeks, week).mean(axis=2)
    floor = np.maximum(means.max(axis=1, keepdims=True) * 1e-3, 1e-9)
    return np.diff(np.log(np.maximum(means, floor)), axis=1).std(axis=1)


def tree_scenarios(point: np.ndarray, history: np.ndarray, periods: pd.DatetimeIndex, period_hours: float,
                   by: str = TREE_BY, branches: int = TREE_BRANCHES, depth: int = TREE_DEPTH):
    """(cube (L, K, H), names, probabilities, purchase positions) of the tree over ``periods``.

    Leaf l in period t: ``point x exp(s(t) W_l(t) / sqrt(j(t)) - s(t)^2 / 2)`` with ``s(t) = sigma_k sqrt(weeks
    ahead)``, ``W_l`` the walk of its branches and ``j(t)`` the branch dates passed (the lognormal level of
    :func:`planner.forecasting.point.level_scenarios`, revealed one quarter at a time). Purchase positions: the first
    period and every quarter start of the horizon. Without three weeks of history: the point forecast alone.
    """
    from planner.forecasting.tree import gauss_hermite, leaf_index, leaf_names, leaf_paths
    from planner.inputs.ladder import purchase_periods

    dates = purchase_periods(periods, by)
    sigma = level_sigma(history, period_hours)
    branch_at = dates[1:1 + depth]
    if sigma is None or not len(branch_at):
        return point[None].copy(), ["forecast"], np.array([1.0]), dates
    week = 168.0 / period_hours
    s = sigma[:, None] * np.sqrt((np.arange(point.shape[1]) + 1) / week)[None, :]  # (K, H)
    walk = leaf_paths(np.zeros_like(point), s, branch_at, branches)  # (L, K, H): s W / sqrt(j)
    passed = np.searchsorted(branch_at, np.arange(point.shape[1]), side="right")
    drift = np.where(passed > 0, s ** 2 / 2, 0.0)  # the lognormal's mean stays the point path
    cube = point[None] * np.exp(walk - drift[None])
    index = leaf_index(branches, len(branch_at))
    _, weights = gauss_hermite(branches)
    prob = np.prod(weights[index], axis=1)
    return cube, leaf_names(index), prob / prob.sum(), dates
