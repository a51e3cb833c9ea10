"""Demand forecasts from history, over the term: statsforecast's MSTL / AutoETS / AutoARIMA per class, with
prediction intervals, turned into quantile-path scenarios the planner reads (docs/forecasting.md).

    >>> import planner.forecasting as pf
    >>> result = pf.forecast_demand(history_frame, horizon_months=3)        # doctest: +SKIP
    >>> result.demand        # long form: period, workload_class, gpus, scenario[, hours]
    >>> result.scenarios     # {"p10": 0.3, "p50": 0.4, "p90": 0.3}
    >>> result.report        # method and held-back error per class

One job per module: ``history`` reads and checks the history, ``seasons`` decides which seasonalities fit,
``models`` fits one class with one method, ``metrics`` scores a held-back tail, ``scenarios`` turns
quantiles into scenarios, ``tree`` builds scenario trees that branch at purchase dates, ``engine`` runs it all
for every class, ``output`` writes the three files.
"""

from __future__ import annotations

_EXPORTS = {"forecast_demand": "engine", "ForecastResult": "engine", "write_forecast": "output",
            "METHODS": "models", "LIBRARY_METHODS": "models", "read_history": "history",
            "history_from_frame": "history", "forecast_periods": "engine", "check_tree_dates": "tree",
            "ScenarioTree": "tree"}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'planner.forecasting' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
