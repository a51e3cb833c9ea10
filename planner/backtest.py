"""Rolling backtest: plan on a window of history, evaluate on the next, compare three strategies.

For each window the forecast of the test window is the training window repeated
(seasonal naive). The strategies that choose the reserved purchases are:

- ``stochastic``: the two-stage plan over three level scenarios of that forecast, low / base / high
  (the 10th and 90th percentiles of the training window's daily demand relative to its mean),
  weighted 0.3 / 0.4 / 0.3;
- ``point``: the deterministic plan on the forecast;
- ``percentile``: the finance rule: for each class, reserve in its cheapest reserved option the
  demand level (with headroom) that the forecast exceeds in the break-even share of hours
  (effective reserved price / on-demand price per reference GPU-hour), rounded down to instances.

Each purchase is then fixed and evaluated on the demand that really came (cheapest recourse);
regret is against the plan made with hindsight on that same window.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .evaluate import evaluate
from .inputs import PlanInputs, slice_periods, with_demand

STRATEGIES = ("stochastic", "point", "percentile")
SCENARIO_WEIGHTS = np.array([0.3, 0.4, 0.3])


def forecast_from(train: np.ndarray, length: int) -> np.ndarray:
    """Seasonal-naive forecast (K, length): the training window (K, L) repeated."""
    reps = int(np.ceil(length / train.shape[1]))
    return np.tile(train, reps)[:, :length]


def level_spread(train: np.ndarray, hours_per_day: int = 24) -> tuple[float, float]:
    """10th and 90th percentiles of daily total demand relative to the window's mean day."""
    total = train.sum(axis=0)
    days = len(total) // hours_per_day
    if days < 2:
        return 1.0, 1.0
    daily = total[: days * hours_per_day].reshape(days, hours_per_day).mean(axis=1)
    mean = daily.mean()
    if mean <= 0:
        return 1.0, 1.0
    return float(np.percentile(daily / mean, 10)), float(np.percentile(daily / mean, 90))


def percentile_rule(inp: PlanInputs, forecast: np.ndarray) -> np.ndarray:
    """Instances per reserved option bought by the finance team's percentile rule."""
    n = np.zeros(len(inp.reserved))
    if not len(inp.reserved):
        return n
    od = inp.pools["od"].to_numpy(float)
    res = inp.reserved
    for k in range(inp.K):
        q = inp.speed[k] * inp.reliability[k]
        allowed = q > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            od_ref = np.where(allowed, od / q, np.inf)
            r_ref = np.where(allowed[res["pool"]], res["r"].to_numpy() / q[res["pool"]], np.inf)
        od_best = np.nanmin(np.where(np.isnan(od_ref), np.inf, od_ref))
        c = int(np.argmin(r_ref))
        if not np.isfinite(r_ref[c]) or r_ref[c] >= od_best:
            continue
        share = r_ref[c] / od_best  # reserve the level exceeded in this share of hours
        level = np.quantile(forecast[k] * (1 + inp.headroom[k]), 1 - share)
        p = int(res["pool"].iat[c])
        n[c] += np.floor(level / q[p] / res["m"].iat[c] + 1e-9)
    return n


def _window(history: PlanInputs, w: int, a: int, train_periods: int, test_periods: int, make_plan) -> list[dict]:
    """One window: plan on [a, a + train), evaluate every strategy on the test periods after it."""
    train_idx = np.arange(a, a + train_periods)
    test_idx = np.arange(a + train_periods, a + train_periods + test_periods)
    actual = slice_periods(history, test_idx)
    train = history.demand[0][:, train_idx]
    fc = forecast_from(train, test_periods)
    low, high = level_spread(train)
    point_inp = with_demand(actual, fc[None], ["forecast"], np.array([1.0]))
    stoch_inp = with_demand(actual, np.stack([fc * low, fc, fc * high]), ["low", "base", "high"],
                            SCENARIO_WEIGHTS)
    choices = {
        "stochastic": make_plan(stoch_inp, risk=False).purchases["instances"].to_numpy(float),
        "point": make_plan(point_inp, risk=False).purchases["instances"].to_numpy(float),
        "percentile": percentile_rule(actual, fc),
    }
    hindsight = make_plan(actual, risk=False)
    rows = []
    for name in STRATEGIES:
        ev = evaluate(actual, choices[name], make_plan, hindsight=hindsight)
        rows.append({
            "window": w, "train_start": history.periods[train_idx[0]], "test_start": actual.periods[0],
            "test_end": actual.periods[-1], "strategy": name,
            "reserved_gpus": float((choices[name] * actual.reserved["m"].to_numpy()).sum()),
            "realised_cost_usd": ev.realised.cost["total"], "realised_objective_usd": ev.realised.objective,
            "hindsight_objective_usd": hindsight.objective, "regret_usd": ev.regret_usd,
            "regret_pct": 100 * ev.regret_usd / hindsight.objective if hindsight.objective else 0.0,
            "shortfall_gpu_hours": ev.realised.shortfall_gpu_hours,
            "scenario_low": low, "scenario_high": high})
    return rows


_STATE: dict = {}  # per worker: the history and the solve function shared by every window


def _init_worker(history: PlanInputs, make_plan) -> None:
    _STATE.update(history=history, make_plan=make_plan)


def _run_window(task: tuple) -> list[dict]:
    return _window(_STATE["history"], *task, _STATE["make_plan"])


def backtest(history: PlanInputs, train_periods: int, test_periods: int, make_plan,
             step_periods: int | None = None, executor=None, progress: bool = False) -> pd.DataFrame:
    """Regret per window and strategy over a (single-scenario) demand history.

    Windows are independent and run on ``executor`` (a :mod:`planner.executors` executor; default: here,
    one after another); ``make_plan`` must then be picklable (a module function or ``functools.partial``).
    """
    from .errors import SolverError
    from .executors import LocalExecutor

    step = step_periods or test_periods
    starts = range(0, history.T - train_periods - test_periods + 1, step)
    tasks = [(w, a, train_periods, test_periods) for w, a in enumerate(starts)]
    outcomes = (executor or LocalExecutor(1)).map(
        _run_window, tasks, initializer=_init_worker, initargs=(history, make_plan), progress=progress,
        describe=lambda o: f"window {o.index}" + ("" if o.ok else f": FAILED {o.error}"))
    failed = [f"window {o.index}: {o.error}" for o in outcomes if not o.ok]
    if failed:
        raise SolverError("backtest stopped: " + "; ".join(failed))
    return pd.DataFrame([row for o in outcomes for row in o.value])


def backtest_hours(history: PlanInputs, train_hours: float, test_hours: float, step_hours: float | None = None,
                   *, backend: str | None = None, executor=None, progress: bool = False,
                   source: str = "demand") -> pd.DataFrame:
    """:func:`backtest` with window lengths in hours; a history too short or with scenarios is an InputError."""
    import functools

    from .errors import InputError, Problem
    from .pipeline import make_plan

    if len(history.scenarios) > 1:
        raise InputError(Problem(source, "a backtest needs one demand history, not scenarios", column="scenario"))
    step = float(np.median(history.hours))
    train, test = int(round(train_hours / step)), int(round(test_hours / step))
    if train + test > history.T:
        raise InputError(Problem(source, f"history too short: {history.T} periods of {step:g} h for a "
                                 f"{train_hours:g} h + {test_hours:g} h window",
                                 hint="shorten --train-hours or --test-hours"))
    return backtest(history, train, test, functools.partial(make_plan, backend=backend),
                    step_periods=int(round((step_hours or test_hours) / step)), executor=executor,
                    progress=progress)


def write_backtest(result: pd.DataFrame, out_dir) -> dict:
    """backtest.csv and backtest.json (``{"windows": [...]}``), each whole or not at all."""
    import json
    from pathlib import Path

    from .atomic import atomic_path

    out_dir = Path(out_dir)
    paths = {"csv": out_dir / "backtest.csv", "json": out_dir / "backtest.json"}
    with atomic_path(paths["csv"]) as tmp:
        result.to_csv(tmp, index=False)
    records = json.loads(result.to_json(orient="records", date_format="iso"))
    with atomic_path(paths["json"]) as tmp:
        tmp.write_text(json.dumps({"windows": records}, indent=2) + "\n", encoding="utf-8")
    return paths
