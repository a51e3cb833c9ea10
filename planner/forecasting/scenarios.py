"""Scenarios from quantile paths, weighted by the planner's own rule for quantile demand files.

S scenarios are the quantile paths at levels (j - 1/2) / S, j = 1..S, rounded to whole percentiles (S = 3:
Swanson's p10, p50, p90). Each is weighted by the probability mass nearest to its level, between the
midpoints of its neighbours (planner.inputs.arrays.quantile_weights): p10/p50/p90 get 0.3/0.4/0.3; the levels
(j - 1/2) / S get 1/S each.
"""

from __future__ import annotations

import numpy as np

from planner.core.errors import InputError, Problem

MAX_SCENARIOS = 49


def scenario_levels(count: int) -> list[int]:
    """The whole percentiles of ``count`` quantile paths."""
    if not isinstance(count, (int, np.integer)) or not 1 <= count <= MAX_SCENARIOS:
        raise InputError(Problem("--scenarios", "out of range", value=count,
                                 expected=f"a whole number of scenarios from 1 to {MAX_SCENARIOS}"))
    if count == 3:
        return [10, 50, 90]
    return [int(round(100 * (j - 0.5) / count)) for j in range(1, count + 1)]


def scenario_weights(levels: list[int]) -> dict[str, float]:
    """{"p<level>": probability} by the nearest-mass rule (adds up to 1)."""
    from planner.inputs.arrays import quantile_weights

    names, weights = quantile_weights([f"p{q}" for q in levels])
    return {n: round(float(w), 12) for n, w in zip(names, weights)}
