"""The hand-written forecasters (seasonal naive on the last day or week, damped trends) and the bound on any
forecast: plain numpy, no library, no process isolation (that is :mod:`planner.forecasting.point`)."""

from __future__ import annotations

import numpy as np

# A forecast above GROWTH_BOUND x the history's largest demand is a bug, not a forecast: no fleet grows a
# thousandfold within one planning horizon. The bound also keeps the solver's numbers sane: demand enters the
# rows with coefficients near 1 and the objective at the shortfall penalty, so 1e300 (or anything near HiGHS's
# infinity, 1e20) makes the model unsolvable ("HiGHS rejected the model") rather than merely large.
GROWTH_BOUND = 1e3
FLOOR_GPUS = 1.0  # the history's largest demand counts as at least this (a history of zeros may still grow)


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


DAMPING_PER_WEEK = 0.98  # weekly_trend: each week ahead adds 0.98 x the growth of the week before it
TREND_DAYS = 182  # weekly_trend: the trend of at most the last 26 weeks of daily means
SHRINK_SE = 2.0  # weekly_trend: the slope is soft-thresholded at this many standard errors


def weekly_trend(history: np.ndarray, horizon: int, period_hours: float = 1.0) -> np.ndarray:
    """The last week's profile at a level that follows the trend, when the history shows one.

    Per class: the least-squares slope b of the daily means over the last (up to 182) days, and its standard error
    se (inflated by the residuals' lag-1 autocorrelation rho, ``sqrt((1 + rho) / (1 - rho))``: a run of hot days
    is not a trend); the slope kept is b soft-thresholded at 2 se (``sign(b) max(0, |b| - 2 se)``): steady growth
    is carried, bursts and noise are not. The level starts from the last week's mean (the last day's with less than a week)
    moved to the end of that week, and day d ahead adds ``b x (phi + phi^2 + ... + phi^d)`` with phi = 0.98 per
    week (a damped trend: about a year's worth of the current growth in the long run); never below zero. The
    profile is the last week's hour of the week over its mean (the last day's with less than a week). With
    fewer than three days of history, :func:`latest`.
    """
    history = np.asarray(history, float)
    day = max(1, int(round(24 / period_hours)))
    week = 7 * day
    days = min(TREND_DAYS, history.shape[1] // day)
    if days < 3:
        return latest(history, horizon, period_hours)
    means = history[:, -days * day:].reshape(history.shape[0], days, day).mean(axis=2)
    x = np.arange(days) - (days - 1) / 2.0
    sxx = (x * x).sum()
    slope = (means * x).sum(axis=1) / sxx  # GPUs per day, per class
    fitted = means.mean(axis=1, keepdims=True) + slope[:, None] * x[None, :]
    resid = means - fitted
    se = np.sqrt((resid ** 2).sum(axis=1) / max(days - 2, 1) / sxx)
    # days that run hot or cold together make a drift look like a trend: inflate the error by the residuals'
    # lag-1 autocorrelation rho (effective sample n (1 - rho) / (1 + rho))
    num = (resid[:, 1:] * resid[:, :-1]).sum(axis=1)
    rho = np.clip(np.divide(num, (resid ** 2).sum(axis=1), out=np.zeros(len(num)),
                            where=(resid ** 2).sum(axis=1) > 0), 0.0, 0.95)
    se = se * np.sqrt((1 + rho) / (1 - rho))
    kept = np.sign(slope) * np.clip(np.abs(slope) - SHRINK_SE * se, 0.0, None)
    season = week if history.shape[1] >= week else day
    last = history[:, -season:]
    mean = last.mean(axis=1, keepdims=True)
    profile = np.divide(last, mean, out=np.ones_like(last), where=mean > 0)
    level = mean[:, 0] + kept * (season / day) / 2.0  # the last season's mean sits at its middle
    phi = DAMPING_PER_WEEK ** (1.0 / 7.0)
    ahead = np.arange(horizon) // day + 1  # forecast day 1, 2, ...
    growth = phi * (1 - phi ** ahead) / (1 - phi)
    path = np.clip(level[:, None] + kept[:, None] * growth[None, :], 0.0, None)
    return profile[:, np.arange(horizon) % season] * path


def bound(history: np.ndarray) -> float:
    """The largest forecast accepted on ``history``: GROWTH_BOUND x its largest value (at least FLOOR_GPUS),
    and never above the demand file's own bound."""
    from planner.inputs.validate import ABSURD_GPUS

    top = float(np.max(history)) if np.size(history) else 0.0
    return min(GROWTH_BOUND * max(top, FLOOR_GPUS), ABSURD_GPUS)
