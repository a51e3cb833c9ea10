"""One class, one method: quantile paths of the next ``h`` periods.

Library methods (statsforecast, fitted on numpy arrays, one class at a time):

- ``mstl``: statsforecast's MSTL decomposition (statsmodels STL per season, the seasons that fit) with an
  AutoETS (``ZZN``: error, trend and damping chosen by AICc, no season) forecast of the deseasonalised
  series; the seasonal components repeat their last cycle (what ``statsforecast.models.MSTL`` does, composed
  here so that the seasonal windows can be set: :data:`SEASONAL_WINDOW`). Intervals are the trend model's.
- ``autoarima``: the same MSTL decomposition, an AutoARIMA forecast of the deseasonalised series (a seasonal
  ARIMA of period 24 or 168 on hourly data takes minutes per class: 250 s measured on 8 weeks).
- ``autoets``: AutoETS (``ZZZ``) with the daily season in its state, on the last 28 days of history.

Hand-written (planner.forecasting.point's ``weekly``, ``latest``, ``trend``): their point forecast, with Gaussian
intervals from the seasonal naive's own in-sample errors, widening with the square root of the cycles ahead.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

LIBRARY_METHODS = ("mstl", "autoets", "autoarima")
HAND_METHODS = ("weekly", "latest", "trend")
METHODS = LIBRARY_METHODS + HAND_METHODS + ("auto",)


def library_available() -> bool:
    """True when statsforecast (the optional extra ``planner[forecast]``) can be imported."""
    import importlib.util

    return importlib.util.find_spec("statsforecast") is not None
AUTO_CANDIDATES = ("mstl", "autoets", "autoarima", "weekly", "trend")
ETS_WINDOW_HOURS = 28 * 24  # autoets sees the last four weeks (its fit time grows with the length)
# STL's loess is evaluated every few points and interpolated between, as R's stl() does by default
# (ceiling(window / 10)); statsmodels' default (every point) takes 4x longer on a year of hours.
STL_JUMPS = {"seasonal_jump": 2, "trend_jump": 5, "low_pass_jump": 3}
# STL's seasonal smoothing span, in cycles, per seasonality in hours. The defaults (11 and 15 cycles, R's
# mstl) let the seasonal components soak up noise, so the remainder, and the intervals built on it, are too
# narrow: 64-69 % of held-back hours inside the 80 % interval on seasonal series with white noise; with
# 101 days and 51 weeks, 69-81 % (measured on 8 weeks and a year of seeded series).
SEASONAL_WINDOW = {24.0: 101, 168.0: 51}


def _levels(quantiles) -> list[float]:
    """The symmetric interval levels (in %) statsforecast needs for these quantiles."""
    return sorted({round(abs(1 - 2 * q) * 100, 6) for q in quantiles if abs(q - 0.5) > 1e-12})


def _from_intervals(out: dict, quantiles) -> np.ndarray:
    """Quantile paths (len(quantiles), h) from statsforecast's {'mean', 'lo-L', 'hi-L'}."""
    rows = []
    for q in quantiles:
        if abs(q - 0.5) <= 1e-12:
            rows.append(out["mean"])
            continue
        level = round(abs(1 - 2 * q) * 100, 6)
        key = next(k for k in out if k.startswith("lo-" if q < 0.5 else "hi-") and abs(float(k[3:]) - level) < 1e-6)
        rows.append(out[key])
    return np.asarray(rows, float)


def _library(method: str, y: np.ndarray, h: int, seasons: list[int], quantiles, step_hours: float) -> np.ndarray:
    from statsforecast.models import AutoARIMA, AutoETS

    if method == "autoets":
        window = max(1, int(round(ETS_WINDOW_HOURS / step_hours)))
        daily = [m for m in seasons if m * step_hours == 24.0]
        m = daily[0] if daily and len(y[-window:]) >= 2 * daily[0] else 1
        model, y = AutoETS(season_length=m, model="ZZZ" if m > 1 else "ZZN"), y[-window:]
    else:
        trend = AutoETS(model="ZZN") if method == "mstl" else AutoARIMA()
        if seasons:
            return _mstl(np.asarray(y, float), int(h), sorted(seasons), trend, quantiles, step_hours)
        model = trend
    levels = _levels(quantiles)
    out = model.forecast(y=np.asarray(y, float), h=int(h), level=levels or None)
    return _from_intervals(out, quantiles)


def _mstl(y: np.ndarray, h: int, seasons: list[int], trend, quantiles, step_hours: float) -> np.ndarray:
    """MSTL: decompose (statsforecast.mstl), forecast trend + remainder with ``trend``, add each seasonal
    component's last cycle repeated."""
    from statsforecast.mstl import mstl

    window = np.array([SEASONAL_WINDOW.get(m * step_hours, 51) for m in seasons])
    parts = mstl(y, seasons, s_window=window, stl_kwargs=dict(STL_JUMPS))
    adjusted = (parts["trend"] + parts["remainder"]).to_numpy(float)
    levels = _levels(quantiles)
    out = _from_intervals(trend.forecast(y=adjusted, h=h, level=levels or None), quantiles)
    ahead = np.arange(h)
    if len(seasons) == 1:
        seas = parts["seasonal"].to_numpy(float)[-seasons[0]:][ahead % seasons[0]]
    else:
        seas = sum(parts[f"seasonal{m}"].to_numpy(float)[-m:][ahead % m] for m in seasons)
    return out + seas[None, :]


def _hand(method: str, y: np.ndarray, h: int, quantiles, step_hours: float) -> np.ndarray:
    from planner.forecasting import hand

    point = getattr(hand, method)(y[None, :], int(h), float(step_hours))[0]
    day, week = int(round(24 / step_hours)), int(round(168 / step_hours))
    m = week if method == "weekly" and len(y) >= 2 * week else max(1, min(day, len(y) - 1))
    errors = y[m:] - y[:-m] if len(y) > m else np.zeros(1)
    sigma = float(np.std(errors)) if errors.size else 0.0
    width = sigma * np.sqrt(np.arange(int(h)) // m + 1.0)
    z = np.array([NormalDist().inv_cdf(q) for q in quantiles])
    return point[None, :] + z[:, None] * width[None, :]


def quantile_paths(method: str, y: np.ndarray, h: int, seasons: list[int], quantiles,
                   step_hours: float = 1.0) -> np.ndarray:
    """(len(quantiles), h) quantile paths of ``y``'s next ``h`` periods by ``method`` (not clipped, not
    checked: :mod:`planner.forecasting.engine` does both). A constant history forecasts itself exactly."""
    y = np.asarray(y, float)
    if y.size and np.ptp(y) == 0:  # nothing to learn; the libraries' likelihoods are degenerate on a constant
        return np.full((len(quantiles), int(h)), float(y[-1]))
    if method in LIBRARY_METHODS:
        return _library(method, y, h, seasons, quantiles, step_hours)
    if method in HAND_METHODS:
        return _hand(method, y, h, quantiles, step_hours)
    raise ValueError(f"unknown method {method!r}: expected one of {', '.join(METHODS)}")
