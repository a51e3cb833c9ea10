"""Forecasters for backtests, and forecast-error scenarios from their own past mistakes.

A forecaster is any function ``f(history, horizon, period_hours) -> forecast``:

- ``history``: array (K, t) of demand per class up to the cut-off (oldest first; never anything after it),
- ``horizon``: the number of periods to forecast,
- ``period_hours``: the length of one period in hours (24 / period_hours periods make a day),

returning an array (K, horizon) of non-negative demand. Three are built in (``FORECASTERS``):

- ``latest``: seasonal naive on the last day: hour h of every forecast day repeats hour h of the
  last full day of history;
- ``weekly``: seasonal naive on the last week (the same hour of the same weekday), ``latest`` while
  the history is shorter than a week;
- ``trend``: ``latest``'s daily profile, shifted by the linear trend of the last seven daily means
  (damped to half a step per day ahead, never below zero).

Bring your own with ``--forecaster package.module:function`` (or ``path/to/file.py:function``) or by
passing the function to :func:`planner.backtest.backtest`.

Scenarios from forecast error (:func:`error_scenarios`): at each of the latest origins before the
cut-off whose whole forecast horizon is already history, the forecaster is run on the history up to
that origin and its residuals (actual - forecast, per class and lead time) are kept. Scenario j is
the point forecast plus residual j minus the mean residual, so the scenarios' mean is the point
forecast and their spread is what this forecaster actually got wrong.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Callable

import numpy as np

Forecaster = Callable[[np.ndarray, int, float], np.ndarray]


def _season(history: np.ndarray, horizon: int, season: int) -> np.ndarray:
    """Seasonal naive with a season of ``season`` periods: forecast[h] = history[-season + h % season]."""
    if history.shape[1] == 0:
        return np.zeros((history.shape[0], horizon))
    season = max(1, min(season, history.shape[1]))
    last = history[:, -season:]
    return last[:, np.arange(horizon) % season]


def latest(history: np.ndarray, horizon: int, period_hours: float = 1.0) -> np.ndarray:
    """Seasonal naive on the last day of history (hour h of each forecast day = hour h of the last day)."""
    return _season(np.asarray(history, float), horizon, int(round(24 / period_hours)))


def weekly(history: np.ndarray, horizon: int, period_hours: float = 1.0) -> np.ndarray:
    """Seasonal naive on the last week; :func:`latest` while there is less than a week of history."""
    week = int(round(168 / period_hours))
    history = np.asarray(history, float)
    if history.shape[1] < week:
        return latest(history, horizon, period_hours)
    return _season(history, horizon, week)


def trend(history: np.ndarray, horizon: int, period_hours: float = 1.0) -> np.ndarray:
    """:func:`latest` plus the damped linear trend of the last seven daily means (never below zero)."""
    history = np.asarray(history, float)
    day = int(round(24 / period_hours))
    base = latest(history, horizon, period_hours)
    days = min(7, history.shape[1] // day)
    if days < 2:
        return base
    means = history[:, -days * day:].reshape(history.shape[0], days, day).mean(axis=2)
    x = np.arange(days) - (days - 1) / 2.0
    slope = (means * x).sum(axis=1) / (x * x).sum()  # per day, per class
    ahead = (np.arange(horizon) // day + 1) * 0.5  # damped: half the trend per day ahead
    return np.clip(base + slope[:, None] * ahead[None, :], 0.0, None)


FORECASTERS: dict[str, Forecaster] = {"latest": latest, "weekly": weekly, "trend": trend}


def resolve(spec: str | Forecaster) -> Forecaster:
    """A forecaster from a built-in name, ``module:function``, ``file.py:function`` or a callable."""
    if callable(spec):
        return spec
    if spec in FORECASTERS:
        return FORECASTERS[spec]
    if ":" not in spec:
        raise ValueError(f"unknown forecaster {spec!r}: expected one of {', '.join(FORECASTERS)} "
                         "or module:function")
    where, name = spec.rsplit(":", 1)
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise ValueError(f"forecaster file {where!r} not found")
            loaded = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except ValueError:
        raise
    except Exception as exc:  # an import error of the user's module, whatever it is
        raise ValueError(f"cannot import forecaster module {where!r}: {exc}") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"{where!r} has no function {name!r}")
    return fn


def run(forecaster: Forecaster, history: np.ndarray, horizon: int, period_hours: float) -> np.ndarray:
    """Call ``forecaster`` and check what it returns: shape (K, horizon), finite, clipped at zero."""
    out = np.asarray(forecaster(np.array(history, float, copy=True), int(horizon), float(period_hours)), float)
    K = history.shape[0]
    if out.shape != (K, horizon):
        raise ValueError(f"the forecaster returned shape {out.shape}, expected ({K}, {horizon})")
    if not np.isfinite(out).all():
        raise ValueError("the forecaster returned NaN or infinite values")
    return np.clip(out, 0.0, None)


def residuals(forecaster: Forecaster, history: np.ndarray, horizon: int, period_hours: float,
              origins: int = 7, spacing: int | None = None, min_history: int | None = None) -> np.ndarray:
    """(J, K, horizon) residuals (actual - forecast) of the latest ``origins`` forecasts made inside ``history``.

    Origin o is used when ``o + horizon <= t`` (its whole horizon is history) and ``o >= min_history``
    (default one day); origins are ``spacing`` periods apart (default one day), the latest first.
    """
    history = np.asarray(history, float)
    day = max(1, int(round(24 / period_hours)))
    spacing = spacing or day
    min_history = day if min_history is None else min_history
    t = history.shape[1]
    out = []
    o = t - horizon
    while o >= min_history and len(out) < origins:
        fc = run(forecaster, history[:, :o], horizon, period_hours)
        out.append(history[:, o:o + horizon] - fc)
        o -= spacing
    return np.array(out).reshape(len(out), history.shape[0], horizon)


def error_scenarios(point: np.ndarray, errors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scenarios (J, K, H) = point + (residual_j - mean residual), clipped at zero, and their weights (J,).

    With fewer than two residuals there is no spread to learn from: the point forecast alone.
    """
    if len(errors) < 2:
        return point[None].copy(), np.array([1.0])
    centred = errors - errors.mean(axis=0, keepdims=True)
    return np.clip(point[None] + centred, 0.0, None), np.full(len(errors), 1.0 / len(errors))
