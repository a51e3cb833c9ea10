"""Requests-per-second classes in a backtest, sized causally.

An SLO-sized class (``[classes.X.slo]``) has its demand in requests per second; :func:`planner.inputs.arrays.size_slo_classes`
turns each period's load into replicas (M/M/c, per period: causal) and, from the whole file, the relative speeds
of its GPU types (the smallest ratio over every period: the future). At a cut-off of a backtest this module
forecasts the **requests** seen so far, sizes the forecast (replicas and speeds from the forecast alone), and gives
the rules the speeds sized on the requests seen; nothing sized on the whole history reaches a decision. The
realised plan of the span keeps the sizing of the requests that came: its SLO-hours are the ones those requests
would have missed.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.inputs.arrays import apply_slo_speeds, size_slo_classes


def slo_rows(inp) -> np.ndarray:
    """Positions of the SLO-sized classes."""
    return np.array([k for k, c in enumerate(inp.classes) if inp.config.classes[c].slo is not None], dtype=int)


def requests_seen(inp, seen: np.ndarray) -> np.ndarray:
    """``seen`` (K, c: demand in GPUs up to the cut-off) with the SLO classes' rows in requests per second."""
    rows = slo_rows(inp)
    if not len(rows) or inp.requests is None:
        return seen
    raw = np.array(seen, float, copy=True)
    raw[rows] = inp.requests[0][rows, :seen.shape[1]]
    return raw


def sized(inp, cube: np.ndarray):
    """(inputs with the SLO classes' speeds sized on ``cube``, ``cube`` (S, K, H) with their rows in GPUs)."""
    if not len(slo_rows(inp)):
        return inp, cube
    _, gpus, speeds, _ = size_slo_classes(inp.config, inp.classes, np.asarray(cube, float))
    speed = apply_slo_speeds(inp.speed, inp.classes, inp.pools, speeds)
    return replace(inp, speed=speed), gpus
