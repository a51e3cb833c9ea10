"""Every class forecast, checked and turned into the planner's demand: :func:`forecast_demand`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from planner.core.errors import InputError, Problem
from planner.forecasting import metrics, models, seasons as seasons_mod, tree as tree_mod
from planner.forecasting.scenarios import scenario_levels, scenario_weights

INTERVAL = (0.1, 0.9)  # the 80 % interval, scored as coverage_80 whatever the scenarios


@dataclass
class ForecastResult:
    """A forecast: ``demand`` (long form: period, workload_class, gpus, scenario[, hours]), ``scenarios``
    ({name: probability}), ``report`` (forecast.json's document), ``quantiles`` (period,
    workload_class, p.., [hours]: the same paths as columns, the planner's quantile form; with a tree, the
    p10/p50/p90 paths it is built from) and ``tree`` (the :class:`~planner.forecasting.tree.ScenarioTree`, or
    None)."""

    demand: pd.DataFrame
    scenarios: dict
    report: dict
    quantiles: pd.DataFrame
    notes: list = field(default_factory=list)
    tree: object = None  # a planner.forecasting.tree.ScenarioTree with tree=..., else None

    def scenarios_toml(self) -> str:
        """The ``[scenarios]`` table, as a model file takes it."""
        lines = ["[scenarios]"] + [f'"{k}" = {v!r}' for k, v in self.scenarios.items()]
        return "\n".join(lines) + "\n"


TREE_MIN_HISTORY_HOURS = 72.0  # a scenario tree needs the forecast's error measured: two days to fit, one held back


def _holdout_length(T: int, h: int, day: int) -> int:
    """Held-back tail: a fifth of the history in whole days (at least a day), no longer than the horizon."""
    tail = max(day, (T // 5) // day * day)
    return int(min(tail, h, max(0, T - 2 * day)))


def _fit_one(args):
    """One class: (paths (Q, h), method used, holdout scores, candidates' scores) or (None, error text)."""
    y, h, step, method, quantiles, seasons, hold, hold_seasons, scored = args
    try:
        scores, candidates, chosen = None, {}, method
        grid = sorted(set(quantiles) | set(INTERVAL))
        if hold:
            train, actual = y[:-hold], y[-hold:]
            tried = models.AUTO_CANDIDATES if method == "auto" else (method,)
            for m in tried:
                paths = np.sort(np.clip(models.quantile_paths(m, train, hold, hold_seasons, grid, step), 0, None), 0)
                if not np.isfinite(paths).all():
                    if method != "auto":
                        return None, (m, "NaN or infinite values on the held-back tail")
                    continue
                candidates[m] = metrics.holdout_scores(actual, paths, grid, scored)
            if method == "auto":
                if not candidates:
                    return None, ("auto", "every candidate returned NaN or infinite values")
                chosen = min(candidates, key=lambda m: candidates[m]["pinball"])
            scores = candidates[chosen]
        elif method == "auto":
            chosen = "mstl" if seasons else "trend"
        paths = models.quantile_paths(chosen, y, h, seasons, quantiles, step)
        return (paths, chosen, scores, candidates), None
    except Exception as exc:  # noqa: BLE001 - the library's failure on this class, reported by the caller
        return None, (method, f"{type(exc).__name__}: {exc}")


def _map(tasks, jobs):
    from planner.core.executors import fork_context

    jobs = min(jobs or os.cpu_count() or 1, len(tasks))
    ctx = fork_context() if jobs > 1 else None
    if ctx is None:
        return [_fit_one(t) for t in tasks]
    with ctx.Pool(jobs) as pool:
        return pool.map(_fit_one, tasks, chunksize=1)


def fit_classes(values: np.ndarray, horizon: int, step_hours: float, method: str, quantiles, *,
                scored=None, seasonality=None, classes=None, jobs=None, source: str = "history", holdout: bool = True):
    """Fit every class of ``values`` (K, T): (paths (K, Q, horizon) checked and clipped at 0, per-class info,
    notes, {"hold": held-back periods, "seasons": seasonalities fitted, in hours}). A NaN, infinite or absurd forecast (above planner.forecasting.point.bound of the class's history) is an
    InputError naming the method and the class. ``scored``: the quantiles the held-back pinball loss is
    averaged over (default ``quantiles``)."""
    from planner.forecasting.hand import bound

    values = np.asarray(values, float)
    K, T = values.shape
    classes = list(classes) if classes is not None else [f"row {k}" for k in range(K)]
    if method not in models.METHODS:
        raise InputError(Problem("--method", "unknown method", value=method, expected="one of " + ", ".join(models.METHODS)))
    if T < 4:
        raise InputError([Problem(source, f"history too short: class {c!r} has {T} periods; a forecast needs at "
                                  "least 4", column="period") for c in classes])
    seasons, notes = seasons_mod.fitting(T, step_hours, seasonality, classes, source)
    if method in models.LIBRARY_METHODS + ("auto",) and not models.library_available():
        raise InputError(Problem("--method", "needs statsforecast, which is not installed", value=method,
                                 expected="pip install 'planner[forecast]' (statsforecast; it installs pandas < 3), "
                                          "or a hand-written method: " + ", ".join(models.HAND_METHODS)))
    day = max(1, int(round(24 / step_hours)))
    hold = _holdout_length(T, horizon, day) if holdout else 0
    hold_seasons, hold_notes = seasons_mod.fitting(T - hold, step_hours, None) if hold else ([], [])
    hold_seasons = [m for m in hold_seasons if m in seasons]
    if hold and hold_notes and seasonality is None:
        notes += [f"held-back fit: {n}" for n in hold_notes if n not in notes]
    quantiles = [float(q) for q in quantiles]
    scored = quantiles if scored is None else [float(q) for q in scored]
    tasks = [(values[k], int(horizon), float(step_hours), method, quantiles, seasons, hold, hold_seasons, scored)
             for k in range(K)]
    results = _map(tasks, jobs)
    out = np.empty((K, len(quantiles), int(horizon)))
    info = []
    for k, (res, err) in enumerate(results):
        if err is not None:
            raise InputError(Problem("--method", f"the forecaster {err[0]} failed on class {classes[k]!r}: {err[1]}",
                                     hint="try another --method (weekly needs no library)"))
        paths, chosen, scores, cands = res
        limit = bound(values[k])
        if not np.isfinite(paths).all():
            raise InputError(Problem("--method", f"the forecaster {chosen} returned NaN or infinite values for "
                                     f"class {classes[k]!r}", hint="try another --method"))
        if paths.size and paths.max() > limit:
            raise InputError(Problem("--method", f"the forecaster {chosen} returned {paths.max():.6g} GPUs for class "
                                     f"{classes[k]!r}", expected=f"values from 0 to {limit:,.6g} (1,000 x the "
                                     "largest demand in its history, counted as at least 1; at most 1e8)",
                                     hint="try another --method"))
        out[k] = np.sort(np.clip(paths, 0.0, None), axis=0)  # negative demand is clipped; quantiles never cross
        info.append({"method": chosen, "holdout": scores, "candidates": cands})
    return out, info, notes, {"hold": hold, "seasons": [m * step_hours for m in seasons]}


def _period_grid(h: int, start: pd.Timestamp, step: float, period_hours: float | None):
    """(first history step of each output period, history steps per output period, period starts); the first
    two are None when the output periods are the history's."""
    if not period_hours or abs(period_hours - step) < 1e-9:
        return None, None, pd.date_range(start, periods=h, freq=pd.Timedelta(hours=step))
    n = int(round(period_hours / step))
    edges = np.arange(0, h, n)
    counts = np.diff(np.append(edges, h))
    return edges, counts, start + pd.to_timedelta(edges * step, unit="h")


def _aggregate(paths: np.ndarray, start: pd.Timestamp, step: float, period_hours: float | None):
    """(paths per output period (K, Q, P), period starts, hours per period or None for the history's step)."""
    edges, counts, starts = _period_grid(paths.shape[-1], start, step, period_hours)
    if edges is None:
        return paths, starts, None
    sums = np.add.reduceat(paths, edges, axis=-1)
    return sums / counts, starts, counts * step


def _horizon(hist, horizon_months, period_hours) -> tuple[pd.Timestamp, pd.Timestamp, int]:
    """(first forecast period, end of the horizon, history steps in it), the horizon and period length checked."""
    step = hist.step_hours
    if not isinstance(horizon_months, (int, np.integer)) or not 1 <= horizon_months <= 120:
        raise InputError(Problem("--horizon-months", "out of range", value=horizon_months,
                                 expected="a whole number of months from 1 to 120"))
    if period_hours is not None:
        n = float(period_hours) / step
        if not np.isfinite(n) or n < 1 or abs(n - round(n)) > 1e-9 or period_hours > 8784:
            raise InputError(Problem("--period-hours", "not a whole number of the history's periods", value=period_hours,
                                     expected=f"a multiple of {step:g} h, at most 8784"))
    start = hist.end
    stop = start + pd.DateOffset(months=int(horizon_months))
    return start, stop, int(round((stop - start) / pd.Timedelta(hours=step)))


def _history(history, classes):
    from planner.forecasting.history import History, history_from_frame

    return history if isinstance(history, History) else history_from_frame(history, classes)


def forecast_periods(history, horizon_months: int = 3, *, period_hours: float | None = None,
                     classes=None) -> pd.DatetimeIndex:
    """The starts of the periods :func:`forecast_demand` would write for ``history`` (nothing is fitted): what
    a model's purchase dates are computed on, e.g. for :func:`planner.forecasting.tree.check_tree_dates`."""
    hist = _history(history, classes)
    start, _, h = _horizon(hist, horizon_months, period_hours)
    return pd.DatetimeIndex(_period_grid(h, start, hist.step_hours, period_hours)[2])


def _long(values: np.ndarray, names: list, text, classes: list, hours) -> pd.DataFrame:
    """The long form (period, workload_class, gpus, scenario[, hours]) of ``values`` (K, S, P)."""
    K, S, P = values.shape
    demand = pd.DataFrame({
        "period": np.tile(np.repeat(text, K), S),
        "workload_class": np.tile(np.array(classes, dtype=object), P * S),
        "gpus": np.round(values.transpose(1, 2, 0).reshape(-1), 6),
        "scenario": np.repeat(np.array(names, dtype=object), P * K)})
    if hours is not None:
        demand["hours"] = np.tile(np.repeat(hours, K), S)
    return demand


def forecast_demand(history, horizon_months: int = 3, *, period_hours: float | None = None,
                    scenarios: int | None = None, method: str | None = None, seasonality=None, classes=None,
                    jobs: int | None = None, tree: str | None = None, branches: int | None = None) -> ForecastResult:
    """Forecast every class of ``history`` over ``horizon_months`` calendar months from its end.

    ``history``: a DataFrame (or a :class:`~planner.forecasting.history.History`) in the demand file's long or
    wide form (``period, workload_class, gpus`` or ``period, <class>...``), one scenario, contiguous periods
    of one length. ``method``: ``mstl`` (the default when statsforecast is installed, else ``trend``, said in the
    notes), ``autoets``, ``autoarima``, ``auto`` (per class, the lowest
    held-back pinball loss of mstl, autoets, autoarima, weekly and trend) or the hand-written ``weekly``,
    ``latest``, ``trend``. ``seasonality``: hours (default daily and weekly, each dropped when the history
    holds fewer than two cycles; given explicitly, a history too short is an InputError naming the class and
    the length needed). ``scenarios``: S quantile paths (default 3; docs/forecasting.md, "Scenarios").
    ``tree``: ``"quarter"`` or ``"month"`` for a scenario tree instead, ``branches`` (2 to 5, default 2) children
    per node at each branch date (:mod:`planner.forecasting.tree`; ``result.tree`` holds its arrays; check the
    dates against a model with :func:`~planner.forecasting.tree.check_tree_dates`). ``period_hours``:
    aggregate to periods of that many hours (mean GPUs, with an ``hours`` column). Every problem is an
    :class:`~planner.core.errors.InputError`.
    """
    fallback = None
    if method is None:
        method = "mstl" if models.library_available() else "trend"
        if method == "trend":
            fallback = ("statsforecast is not installed (pip install 'planner[forecast]'): the hand-written trend "
                        "forecaster was used")
    hist = _history(history, classes)
    step = hist.step_hours
    start, stop, h = _horizon(hist, horizon_months, period_hours)
    conflicts = tree_mod.option_problems(tree, branches, scenarios)
    if conflicts:
        raise InputError(conflicts)
    if tree is None:
        levels = scenario_levels(3 if scenarios is None else scenarios)
    else:
        branches = 2 if branches is None else branches
        tree_mod.plan_tree(_period_grid(h, start, step, period_hours)[2], tree, branches)  # before any fit
        need = TREE_MIN_HISTORY_HOURS / step
        if hist.values.shape[1] < need:  # the tree's spread is the forecast's own measured error: it needs a past
            raise InputError(Problem(hist.source, f"history too short for a scenario tree: "
                                     f"{hist.values.shape[1]} periods of {step:g} h",
                                     expected=f"at least {int(np.ceil(need))} periods ({TREE_MIN_HISTORY_HOURS:g} h: "
                                     "the tree's branches spread by the forecast's own error, measured on a "
                                     "held-back tail of at least a day)",
                                     hint="a longer history, or quantile paths (--scenarios) without --tree"))
        levels = [int(round(100 * q)) for q in tree_mod.TREE_QUANTILES]
    quantiles = [q / 100 for q in levels]
    grid = sorted(set(quantiles) | set(INTERVAL))
    paths, info, notes, meta = fit_classes(hist.values, h, step, method, grid, scored=quantiles,
                                           seasonality=seasonality, classes=hist.classes, jobs=jobs, source=hist.source)
    hold = meta["hold"]
    pick = [grid.index(q) for q in quantiles]
    agg, starts, hours = _aggregate(paths[:, pick, :], start, step, period_hours)
    names = [f"p{q}" for q in levels]
    K, Q, P = agg.shape
    text = pd.Index(starts).strftime("%Y-%m-%dT%H:%M")
    wide = pd.DataFrame({"period": np.repeat(text, K), "workload_class": np.tile(np.array(hist.classes, object), P)})
    for i, n in enumerate(names):
        wide[n] = np.round(agg[:, i, :].T.reshape(-1), 6)
    if hours is not None:
        wide["hours"] = np.repeat(hours, K)
    notes.append("negative forecasts are clipped at 0 GPUs")
    if tree is None:
        scen_tree, weights = None, scenario_weights(levels)
        demand = _long(agg, names, text, hist.classes, hours)
    else:
        scen_tree = tree_mod.build_tree(agg[:, 1], tree_mod.sigma_80(agg[:, 0], agg[:, 2]), starts, tree, branches)
        weights = scen_tree.scenarios
        demand = _long(scen_tree.leaves.transpose(1, 0, 2), scen_tree.names, text, hist.classes, hours)
        flat = [repr(c) for c, sd in zip(hist.classes, scen_tree.sigma) if not sd.any()]
        if flat:
            notes.append(f"the forecast of {', '.join(flat)} has an 80 % interval of zero width: every leaf is its "
                         "point path")
        if scen_tree.clipped:
            notes.append(f"{scen_tree.clipped} of the tree's {scen_tree.leaves.size} leaf values "
                         f"{'was' if scen_tree.clipped == 1 else 'were'} clipped at 0 GPUs (there the leaves' mean is "
                         "above the point forecast)")
    if fallback:
        notes.insert(0, fallback)
    report = {
        "method": {c: i["method"] for c, i in zip(hist.classes, info)},
        "holdout": {c: i["holdout"] for c, i in zip(hist.classes, info)},
        "scenarios": weights,
        **({"tree": scen_tree.doc()} if scen_tree is not None else {}),
        "method_asked": method,
        "candidates": {c: i["candidates"] for c, i in zip(hist.classes, info) if method == "auto"},
        "quantiles": quantiles,
        "holdout_periods": hold,
        "seasonality_hours": [float(x) for x in meta["seasons"]],
        "history": {"source": hist.source, "start": hist.periods[0].strftime("%Y-%m-%dT%H:%M"),
                    "end": start.strftime("%Y-%m-%dT%H:%M"), "periods": int(hist.values.shape[1]),
                    "period_hours": step},
        "horizon": {"start": start.strftime("%Y-%m-%dT%H:%M"), "end": stop.strftime("%Y-%m-%dT%H:%M"),
                    "months": int(horizon_months), "periods": int(P), "period_hours": period_hours or step},
        "notes": notes}
    if method != "auto":
        del report["candidates"]
    return ForecastResult(demand=demand, scenarios=weights, report=report, quantiles=wide, notes=notes,
                          tree=scen_tree)
