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
  (damped to half a step per day ahead, never below zero);
- ``weekly_trend``: ``weekly``'s profile scaled to a level that follows the damped trend of the last (up to 56)
  daily means, the slope shrunk by two standard errors: steady growth carried over a long horizon (a term), bursts
  and noise not.

``mstl``, ``autoets``, ``autoarima`` and ``auto`` are planner.forecasting's statsforecast methods (their median
path; docs/forecasting.md), loaded on first use.

Bring your own with ``--forecaster package.module:function`` (or ``path/to/file.py:function``) or by
passing the function to :func:`planner.backtest.run.backtest`.

Scenarios from forecast error (:func:`error_scenarios`): at each of the latest origins before the
cut-off whose whole forecast horizon is already history, the forecaster is run on the history up to
that origin and its residuals (actual - forecast, per class and lead time) are kept. Scenario j is
the point forecast plus residual j minus the mean residual, so the scenarios' mean is the point
forecast and their spread is what this forecaster actually got wrong.

A forecaster is somebody else's code running inside the planner, so :func:`run` contains it
(:func:`contained`): what it prints goes to stderr (stdout carries ``--json``'s document); an exception,
``sys.exit()`` or ``os._exit()`` becomes a :class:`ForecastError` (exit 2, naming the forecaster and the
cut-off), never the end of the run; and what it returns must be (K, horizon) finite numbers no larger than
:data:`GROWTH_BOUND` x the largest demand in the history it was given (at least 1 GPU) and never above
the demand file's own bound (1e8 GPUs). :func:`run_isolated` runs it once in a forked child process, so
that a forecaster that kills its process some other way (a crash in native code, ``posix._exit``) is
reported too.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import multiprocessing
import os
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from planner.forecasting.hand import (  # noqa: F401  (the built-in forecasters, re-exported)
    DAMPING_PER_WEEK, FLOOR_GPUS, GROWTH_BOUND, SHRINK_SE, TREND_DAYS, bound, latest, trend, weekly, weekly_trend)

Forecaster = Callable[[np.ndarray, int, float], np.ndarray]

class ForecastError(ValueError):
    """The forecaster failed, ended its process, or returned something unusable (the user's mistake)."""


class _HardExit(BaseException):
    """``os._exit(code)`` called by a forecaster (a BaseException: its own ``except Exception`` won't eat it)."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


_GUARD = threading.Lock()
_inside: Counter = Counter()  # threads running a forecaster now, with their depth
_saved: dict = {}


@contextlib.contextmanager
def contained():
    """While a forecaster runs: ``print`` and writes to fd 1 go to stderr, and ``os._exit`` raises instead of
    ending the process.

    Thread-safe: the first thread in saves and patches, the last one out restores. ``os._exit`` is diverted
    only in this process and in the threads running a forecaster (a child the forecaster forks, or another
    thread, gets the real one).
    """
    me = threading.get_ident()
    with _GUARD:
        if not _inside:
            real, pid = os._exit, os.getpid()

            def _exit(code):
                if os.getpid() == pid and _inside.get(threading.get_ident()):
                    raise _HardExit(code)
                real(code)

            with contextlib.suppress(Exception):
                sys.stdout.flush()
            _saved.update(exit=real, stdout=sys.stdout, fd1=_point_fd1_at_stderr())
            os._exit = _exit
            sys.stdout = sys.stderr
        _inside[me] += 1
    try:
        yield
    finally:
        with _GUARD:
            _inside[me] -= 1
            if _inside[me] <= 0:
                del _inside[me]
            if not _inside:
                with contextlib.suppress(Exception):
                    sys.stderr.flush()
                os._exit = _saved.pop("exit")
                sys.stdout = _saved.pop("stdout")
                _restore_fd1(_saved.pop("fd1"))


def _point_fd1_at_stderr() -> int | None:
    """Point file descriptor 1 at stderr (a forecaster's os.write(1, ...) or child process's output would
    otherwise land in --json's document); returns a copy of the old fd 1, or None where there is none."""
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a closed or replaced stdout
        pass
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
        return saved
    except OSError:
        return None


def _restore_fd1(saved: int | None) -> None:
    if saved is None:
        return
    with contextlib.suppress(OSError):
        os.dup2(saved, 1)
    with contextlib.suppress(OSError):
        os.close(saved)


def _why(exc: BaseException) -> str:
    """What a forecaster did instead of returning, in words."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}) (a forecaster returns its forecast; it may not end the run)"
    if isinstance(exc, _HardExit):
        return f"it called os._exit({exc.code!r}) (a forecaster returns its forecast; it may not end the run)"
    return f"{type(exc).__name__}: {exc}"


FORECASTERS: dict[str, Forecaster] = {"latest": latest, "weekly": weekly, "trend": trend,
                                      "weekly_trend": weekly_trend}


def _library_forecaster(method: str) -> Forecaster:
    """``method`` of planner.forecasting (statsforecast), loaded on first use (median path per class)."""

    def forecaster(history, horizon, period_hours=1.0):
        return point_forecaster(method)(history, horizon, period_hours)

    forecaster.__name__ = forecaster.__qualname__ = method
    return forecaster


FORECASTERS.update({m: _library_forecaster(m) for m in ("mstl", "autoets", "autoarima", "auto")})


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
            with contained():
                loaded.loader.exec_module(module)
        else:
            with contained():
                module = importlib.import_module(where)
    except ValueError:
        raise
    except (Exception, SystemExit, _HardExit) as exc:  # an import error of the user's module, whatever it is
        raise ValueError(f"cannot import forecaster module {where!r}: {_why(exc)}") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"{where!r} has no function {name!r}")
    return fn


def run(forecaster: Forecaster, history: np.ndarray, horizon: int, period_hours: float,
        classes: Sequence[str] | None = None) -> np.ndarray:
    """Call ``forecaster`` (contained) and check what it returns: shape (K, horizon), finite, within
    :func:`bound`, clipped at zero. Anything else is a :class:`ForecastError` (``classes`` name the rows)."""
    history = np.asarray(history, float)
    try:
        with contained():
            raw = forecaster(np.array(history, float, copy=True), int(horizon), float(period_hours))
        if np.iscomplexobj(np.asarray(raw)):
            raise ForecastError("the forecaster returned complex numbers, expected real GPUs")
        out = np.asarray(raw, float)
    except ForecastError:
        raise
    except (Exception, SystemExit, _HardExit) as exc:  # not KeyboardInterrupt: Ctrl-C stays Ctrl-C
        raise ForecastError(_why(exc)) from None
    K = history.shape[0]
    if out.shape != (K, horizon):
        raise ForecastError(f"the forecaster returned shape {out.shape}, expected ({K}, {horizon})")
    if not np.isfinite(out).all():
        raise ForecastError("the forecaster returned NaN or infinite values")
    limit = bound(history)
    if out.size and out.max() > limit:
        k, h = np.unravel_index(int(np.argmax(out)), out.shape)
        name = f"class {classes[k]!r}" if classes is not None and k < len(classes) else f"row {k}"
        top = float(np.max(history)) if history.size else 0.0
        raise ForecastError(f"it returned {out[k, h]:.6g} GPUs ({name}, period {h + 1} of the "
                            f"horizon); expected values from 0 to {limit:,.6g} ({GROWTH_BOUND:g} x the largest "
                            f"demand in the history it was given, {top:,.6g}, counted as at least "
                            f"{FLOOR_GPUS:g}; at most 1e8)")
    return np.clip(out, 0.0, None)


def _child(parent, send, forecaster, history, horizon, period_hours, classes) -> None:
    from planner.core.executors import die_with_parent

    die_with_parent(parent)
    try:
        send.send((True, run(forecaster, history, horizon, period_hours, classes)))
    except ForecastError as exc:
        send.send((False, str(exc)))
    except KeyboardInterrupt:  # Ctrl-C: the parent is interrupted too, and says so
        send.send((None, "interrupted"))
    except BaseException as exc:  # noqa: BLE001 - whatever it is, the parent reports it
        send.send((False, _why(exc)))
    finally:
        send.close()


def run_isolated(forecaster: Forecaster, history: np.ndarray, horizon: int, period_hours: float,
                 classes: Sequence[str] | None = None) -> np.ndarray:
    """:func:`run` in a forked child process, where forking is safe (else here): a forecaster that ends
    its process by any means (``posix._exit``, a crash in native code, a signal) is a ForecastError
    naming its exit code, not the silent end of the planner."""
    from planner.core.executors import fork_context

    ctx = fork_context()
    if ctx is None or multiprocessing.current_process().daemon:  # a daemon process may have no children
        return run(forecaster, history, horizon, period_hours, classes)
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, daemon=True, args=(os.getpid(), send, forecaster, np.asarray(history, float),
                                                         horizon, period_hours, classes))
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    try:
        proc.start()
    except OSError:  # no fork today (process limit, memory): here, then
        recv.close()
        send.close()
        return run(forecaster, history, horizon, period_hours, classes)
    send.close()
    try:
        try:
            message = recv.recv()
        except EOFError:  # the child died without a word
            message = None
        proc.join()
    except BaseException:  # Ctrl-C or SIGTERM while it runs: the child goes too
        proc.kill()
        raise
    finally:
        recv.close()
    if message is None:
        code = proc.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        raise ForecastError(f"it ended its process ({how}) without returning a forecast")
    ok, value = message
    if ok:
        return value
    if ok is None:
        raise KeyboardInterrupt
    raise ForecastError(value)


def residuals(forecaster: Forecaster, history: np.ndarray, horizon: int, period_hours: float,
              origins: int = 7, spacing: int | None = None, min_history: int | None = None,
              classes: Sequence[str] | None = None) -> np.ndarray:
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
        fc = run(forecaster, history[:, :o], horizon, period_hours, classes)
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


LEVEL_SCENARIOS = 5
LEVEL_WEEKS = 26  # the weekly means the level's volatility is learnt from (at most)


def level_scenarios(point: np.ndarray, history: np.ndarray, period_hours: float,
                    count: int = LEVEL_SCENARIOS) -> tuple[np.ndarray, np.ndarray]:
    """Scenarios (J, K, H) for a horizon as long as a term, and their weights (J,): the point forecast times a
    level that drifts like the history's weekly means did.

    sigma_k is the standard deviation of the week-on-week log change of class k's weekly means (the last 26 weeks
    at most); scenario j scales week w ahead by ``exp(z_j sigma_k sqrt(w) - sigma_k^2 w / 2)`` with z_j the normal
    quantiles at (j + 1/2) / J, one z for every class (a fleet grows or shrinks together). The scenarios' mean is
    about the point forecast; their spread grows with the square root of the time ahead: a 3-year term sees the
    years it may be stranded in. With fewer than three weeks of history, the point forecast alone.
    """
    from scipy.stats import norm

    history = np.asarray(history, float)
    week = max(1, int(round(168 / period_hours)))
    weeks = min(LEVEL_WEEKS, history.shape[1] // week)
    if weeks < 3 or count < 2:
        return point[None].copy(), np.array([1.0])
    means = history[:, -weeks * week:].reshape(history.shape[0], weeks, week).mean(axis=2)
    floor = np.maximum(means.max(axis=1, keepdims=True) * 1e-3, 1e-9)
    sigma = np.diff(np.log(np.maximum(means, floor)), axis=1).std(axis=1)  # (K,)
    ahead = (np.arange(point.shape[1]) + 1) / week  # weeks ahead
    spread = sigma[:, None] * np.sqrt(ahead)[None, :]  # (K, H)
    z = norm.ppf((np.arange(count) + 0.5) / count)
    cube = point[None] * np.exp(z[:, None, None] * spread[None] - spread[None] ** 2 / 2)
    return cube, np.full(count, 1.0 / count)


def point_forecaster(method: str):
    """A forecaster ``f(history (K, t), horizon, period_hours) -> (K, horizon)`` that forecasts
    with ``method`` (the median path; seasonalities the history is too short for are dropped; ``auto`` picks
    per class by held-out pinball loss). Registered in planner.forecasting.point.FORECASTERS for ``--forecaster``."""

    def forecaster(history, horizon, period_hours=1.0):
        """The ``method`` median forecast of every class of ``history``."""
        from planner.forecasting.engine import fit_classes

        history = np.asarray(history, float)
        paths, _, _, _ = fit_classes(history, int(horizon), float(period_hours), method, [0.5], jobs=1,
                                      holdout=method == "auto")
        return paths[:, 0, :]

    forecaster.__name__ = method
    forecaster.__qualname__ = method
    return forecaster
