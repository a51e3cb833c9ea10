"""Run CBC (through ``COIN_CMD`` and cbcbox's binary) or HiGHS on a built model.

The solver's answer is mapped to :class:`Status`; a plan is called
``optimal`` only when the solver proved optimality within the requested
relative gap, and the achieved gap is reported beside it.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
import shlex
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pulp

from planner.core.errors import SolverError
from planner.model import PlanModel
from planner.solve.interrupt import run

UNBOUNDED = ("{solver}: the model is unbounded: some purchases pay back more than they cost (a resale credited more "
             "than its term?); nothing was written")


class Status(str, enum.Enum):
    """How a solve ended: optimal (proven within the gap), feasible (a plan, not proven), infeasible or error."""
    optimal = "optimal"  # proven optimal within the relative gap
    feasible = "feasible"  # a plan, but stopped (time limit) before proving it optimal
    infeasible = "infeasible"
    error = "error"  # no usable answer

    @property
    def has_plan(self) -> bool:
        """True when the solve returned a plan: optimal, or feasible at a limit."""
        return self in (Status.optimal, Status.feasible)

    @property
    def proven(self) -> bool:
        """True when the plan is proven optimal within the gap."""
        return self is Status.optimal


@dataclass(frozen=True)
class SolveResult:
    """A solver's answer: status, one value per column, objective, gap, bound, time and backend."""
    status: Status
    values: np.ndarray  # one value per column of the PlanModel, in column order
    objective: float
    mip_gap: float | None  # achieved relative gap (None if unknown)
    best_bound: float | None
    seconds: float
    backend: str
    message: str = ""
    time_limit_s: float | None = None  # the limits this solve ran under (after any override of the model file)
    mip_gap_limit: float | None = None
    row_duals: np.ndarray | None = None  # the rows' duals where the plan came from an LP (integers fixed), else None
    read_fell_back: bool = False  # a plan LP was asked for (``tied``) and did not end optimal: the MIP's own values


HIGHS_RAN = False  # set once HiGHS has solved in this process (its native thread pool exists: fork is unsafe)


def cbc_path() -> str | None:
    """cbcbox's CBC binary if installed, else ``cbc`` on PATH."""
    try:
        import cbcbox

        path = cbcbox.cbc_bin_path()
        if path and os.access(path, os.X_OK):
            return path
    except Exception:  # cbcbox missing or broken: fall back to PATH
        pass
    return shutil.which("cbc")


def highs_available() -> bool:
    """True when highspy is installed and PuLP sees it."""
    try:
        import highspy  # noqa: F401
    except ImportError:
        return False
    return pulp.HiGHS(msg=False).available()


def available_backends() -> list[str]:
    """The installed solver backends, of 'cbc' and 'highs'."""
    out = []
    if cbc_path():
        out.append("cbc")
    if highs_available():
        out.append("highs")
    return out


def solve(model: PlanModel, backend: str = "cbc", time_limit_s: float | None = None,
          mip_gap: float = 1e-4, threads: int | None = None, strategy: str = "auto", tied=None) -> SolveResult:
    """Solve with ``backend``; ``strategy`` ("auto" or "mip") picks HiGHS's LP-rounding first pass. ``tied``
    (:func:`planner.solve.reading.tied_lp`, HiGHS only): the plan is read from that LP at the solution's purchases,
    as a decomposed plan is (its values, objective and duals; the MIP's own where it does not end optimal)."""
    backend = backend.lower()
    if backend == "cbc":
        result = _solve_cbc(model, time_limit_s, mip_gap, threads)
    elif backend == "highs":
        result = _solve_highs(model, time_limit_s, mip_gap, threads, strategy, tied)
    else:
        raise SolverError(f"unknown solver backend {backend!r}; expected 'cbc' or 'highs'")
    return replace(result, time_limit_s=time_limit_s, mip_gap_limit=mip_gap)


def _set_start(model: PlanModel, variables: list) -> None:
    """Give the solver a feasible incumbent, so a time limit always leaves a plan to report."""
    for v, x in zip(variables, model.start.tolist()):
        v.setInitialValue(x)


def _values(variables: list) -> np.ndarray:
    return np.array([v.varValue if v.varValue is not None else np.nan for v in variables], dtype=float)


def _result(model: PlanModel, backend: str, status: Status, t0: float, gap, bound, message,
            values: np.ndarray, row_duals: np.ndarray | None = None) -> SolveResult:
    ok = status in (Status.optimal, Status.feasible)
    if ok:
        values = np.where(np.isnan(values), 0.0, values)  # columns in no row and no objective
        values = np.where(np.abs(values) < 1e-9, 0.0, values)
    else:
        values = np.full(model.n_variables, np.nan)
    objective = float(model.cost @ values) if ok else float("nan")
    if ok and len(model.tie[0]):  # the objective's tie-breaks are not costs: the objective and its bound without
        tie = model.tie_at(values)  # them (the bound less the tie-breaks at the plan, as the gap was proven on)
        objective -= tie
        bound = bound - tie if bound is not None and np.isfinite(bound) else bound
    return SolveResult(status=status, values=values, objective=objective, mip_gap=gap, best_bound=bound,
                       seconds=time.perf_counter() - t0, backend=backend, message=message,
                       row_duals=row_duals if ok else None)


_CBC_RESULT = re.compile(r"^Result - (.*)$", re.M)
_CBC_GAP = re.compile(r"^Gap:\s+([-\d.eE+]+)", re.M)
_CBC_BOUND = re.compile(r"^Lower bound:\s+([-\d.eE+]+)", re.M)


def _solve_cbc(model: PlanModel, time_limit_s, mip_gap, threads) -> SolveResult:
    path = cbc_path()
    if not path:
        raise SolverError("CBC is not installed: reinstall the planner (pip install 'pulp[cbc]') "
                          "or use --solver highs")
    t0 = time.perf_counter()
    _remove_stale_cbc_folders()
    with tempfile.TemporaryDirectory(prefix=f"planner-cbc-{os.getpid()}-") as tmp:
        log = os.path.join(tmp, "cbc.log")
        prob, variables = model.to_pulp()  # derived from the arrays for this solve
        _set_start(model, variables)
        solver = pulp.COIN_CMD(path=_dies_with_us(path), msg=False, timeLimit=time_limit_s,
                               gapRel=mip_gap, threads=threads, logPath=log, warmStart=True)
        solver.tmpDir = tmp  # PuLP's .mps/.mst/.sol files go in our private folder (absolute paths), removed
        for attempt in range(5):  # no chdir: the working directory is the process's, and other threads'
            try:
                prob.solve(solver)
                break
            except pulp.PulpSolverError as exc:
                raise SolverError(f"CBC failed: {exc}") from None
            except OSError as exc:  # ETXTBSY: another thread forked while the launcher was being written
                if exc.errno != 26 or attempt == 4:
                    raise
                time.sleep(0.05 * (attempt + 1))
        text = Path(log).read_text(encoding="utf-8", errors="replace") if os.path.exists(log) else ""
    result = _CBC_RESULT.search(text)
    result_text = result.group(1).strip() if result else ""
    gap = _CBC_GAP.search(text)
    bound = _CBC_BOUND.search(text)
    gap_v = float(gap.group(1)) if gap else None
    bound_v = float(bound.group(1)) if bound else None
    st, sol = prob.status, prob.sol_status
    if st == pulp.LpStatusUnbounded or sol == pulp.LpSolutionUnbounded:
        raise SolverError(UNBOUNDED.format(solver="CBC"))
    if st == pulp.LpStatusOptimal and sol == pulp.LpSolutionOptimal:
        status = Status.optimal
        if gap_v is None:
            gap_v = 0.0
    elif sol == pulp.LpSolutionIntegerFeasible:
        status = Status.feasible
    elif st == pulp.LpStatusInfeasible:
        status = Status.infeasible
    else:
        status = Status.error
    return _result(model, "cbc", status, t0, gap_v, bound_v, result_text, _values(variables))


_LAUNCHER_LOCK = threading.Lock()
_LAUNCHER: dict = {}  # (process id, cbc path) -> this process's launcher script (written once)


def _dies_with_us(cbc: str) -> str:
    """A launcher for CBC that the kernel kills when the planner dies (SIGKILL included): util-linux's
    ``setpriv --pdeathsig KILL``; the plain binary where setpriv is missing.

    A planner killed between its fork and setpriv's ``prctl`` would leave CBC running with no one to kill
    it, so once the death signal is set a shell checks that its parent is still this process (a killed
    parent's children pass to init or a subreaper) and exits otherwise, before CBC starts.

    Written once per process (under a lock; keyed by the process id, which the launcher names, as a
    forked worker inherits the table) in a private folder, closed before any solve runs it: a script
    written while another thread forks would be "text file busy" (ETXTBSY) for that thread's exec.
    """
    setpriv = shutil.which("setpriv")
    if not setpriv or sys.platform != "linux":
        return cbc
    pid = os.getpid()
    with _LAUNCHER_LOCK:
        launcher = _LAUNCHER.get((pid, cbc))
        if launcher and os.path.exists(launcher):
            return launcher
        import atexit

        folder = tempfile.mkdtemp(prefix=f"planner-cbc-{pid}-launcher-")
        atexit.register(shutil.rmtree, folder, True)
        launcher = os.path.join(folder, "cbc")
        tmp = launcher + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:  # (paths quoted for the shell: a $ or ` in one is text)
            f.write(f"#!/bin/sh\nexec {shlex.quote(setpriv)} --pdeathsig KILL -- /bin/sh -c "
                    f"'[ \"$PPID\" = {pid} ] || exit 137; exec \"$@\"' cbc {shlex.quote(cbc)} \"$@\"\n")
        os.chmod(tmp, 0o700)
        os.replace(tmp, launcher)
        _LAUNCHER[(pid, cbc)] = launcher
        return launcher


def _remove_stale_cbc_folders() -> None:
    """Remove the private CBC folders of planner runs that were killed (their process is gone)."""
    for folder in Path(tempfile.gettempdir()).glob("planner-cbc-*-*"):
        try:
            pid = int(folder.name.split("-")[2])
        except (IndexError, ValueError):
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            pass


_QUIET_LOCK = threading.Lock()
_QUIET = {"depth": 0, "fd": None, "saved": None}  # one redirection per process, however many threads solve


@contextlib.contextmanager
def quiet_stdout():
    """Silence the C library's writes to file descriptor 1 for the duration (keep it short: fd 1 is the
    whole process's, so other threads' output is silenced too; the planner wraps only the making of a
    HiGHS object, which prints a banner).

    File descriptor 1 belongs to the process, so threads share one redirection: the first to enter saves
    fd 1 and points it at /dev/null, the last to leave puts it back (save/restore pairs of several
    threads would otherwise interleave and leave fd 1 on /dev/null for good).
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # captured stdout (pytest, notebooks)
        yield
        return
    with _QUIET_LOCK:
        if _QUIET["depth"] == 0:
            sys.stdout.flush()
            saved = os.dup(fd)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
            _QUIET.update(fd=fd, saved=saved)
        _QUIET["depth"] += 1
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _QUIET["depth"] -= 1
            if _QUIET["depth"] == 0:
                os.dup2(_QUIET["saved"], _QUIET["fd"])
                os.close(_QUIET["saved"])
                _QUIET.update(fd=None, saved=None)


def pass_arrays(h, highspy, cost, lower, upper, row_lower, row_upper, start, index, value, integer=None):
    """Hand HiGHS an LP (a MIP with ``integer``, a bool per column) as numpy arrays, row-wise, in one call: no
    Python list per column or entry (a HighsLp's fields, set from Python, are copied element by element: 15 ms
    of a 77,000-column batch's 35 ms pricing). Returns HiGHS's status."""
    inf = highspy.kHighsInf
    ncol = len(cost)
    kinds = np.zeros(ncol, dtype=np.int32) if integer is None else \
        np.where(integer, int(highspy.HighsVarType.kInteger), int(highspy.HighsVarType.kContinuous)).astype(np.int32)
    f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
    i32 = lambda a: np.ascontiguousarray(a, dtype=np.int32)  # noqa: E731
    return h.passModel(ncol, len(row_lower), len(value), int(highspy.MatrixFormat.kRowwise),
                       int(highspy.ObjSense.kMinimize), 0.0, f64(cost), f64(lower),
                       f64(np.where(np.isinf(upper), inf, upper)), f64(np.where(np.isinf(row_lower), -inf, row_lower)),
                       f64(np.where(np.isinf(row_upper), inf, row_upper)), i32(start), i32(index), f64(value), kinds)


def pass_model(h, model: PlanModel, highspy, integer: bool):
    """Hand HiGHS ``model`` (its LP relaxation unless ``integer``): the row-wise matrix straight from the arrays."""
    start, index, value, row_lower, row_upper = model.constraints.to_csr()
    return pass_arrays(h, highspy, model.cost, model.lower, model.upper, row_lower, row_upper, start, index, value,
                       model.integer if integer else None)


def new_highs(highspy, time_limit_s, mip_gap, threads):
    """A quiet HiGHS object with the planner's options (time limit, MIP gap, threads): shared by the monolithic
    solve, the Benders masters, the batches' recourse LPs and the shadow-price LP."""
    global HIGHS_RAN
    HIGHS_RAN = True
    with quiet_stdout():  # HiGHS prints its banner when it is made, whatever its options; then it is silent
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", float(mip_gap))
    if time_limit_s is not None:
        h.setOptionValue("time_limit", max(float(time_limit_s), 0.01))
    if threads:
        h.setOptionValue("threads", int(threads))
    return h


def time_left(h, seconds: float, least: float = 0.01) -> None:
    """Give ``h``'s next LP run ``seconds`` more (at least ``least``). HiGHS measures an LP's ``time_limit`` against
    its own clock, which adds up over every run of the object: a limit of the seconds left alone stopped a second
    run at once whenever the first had taken longer (a warm re-solve after 3.5 s of relaxation, given 1.5 s, ended
    in 0.03 s with "Time limit reached"; a Benders master LP re-solved for minutes likewise). A MIP's limit is per
    run: set it to the seconds left as they are."""
    h.setOptionValue("time_limit", float(h.getRunTime()) + max(float(seconds), least))


def _lp_round(model: PlanModel, highspy, time_limit_s, mip_gap, threads, t0):
    """Solve the LP relaxation, round the few integer columns, re-solve with them fixed (warm).

    The relaxation's optimum is a lower bound on the MILP's, so the rounded plan is proven optimal
    within ``(upper - lower) / upper``. Returns (values, objective, lower bound, duals, the HiGHS object: a warm
    start for the plan LP, :func:`_read_on`) or None when the relaxation did not solve; the caller decides whether
    the bound certifies the gap.
    """
    h = new_highs(highspy, time_limit_s, mip_gap, threads)
    if pass_model(h, model, highspy, integer=False) == highspy.HighsStatus.kError:
        raise SolverError("HiGHS rejected the model")
    run(h)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    lower = float(h.getInfo().objective_function_value)
    relaxed = np.asarray(h.getSolution().col_value, dtype=float)
    cols = np.flatnonzero(model.integer)
    best = None
    for rounded in (np.floor(relaxed[cols] + 0.5), np.floor(relaxed[cols] + 1e-9)):
        rounded = np.clip(rounded, model.lower[cols], model.upper[cols])
        if best is not None and np.array_equal(rounded, best[2]):
            continue
        h.changeColsBounds(len(cols), cols.astype(np.int32), rounded, rounded)
        if time_limit_s is not None:
            time_left(h, float(time_limit_s) - (time.perf_counter() - t0))
        run(h)  # warm: the basis of the relaxation is a few pivots away
        if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
            sol = h.getSolution()
            values = np.asarray(sol.col_value, dtype=float)
            values[cols] = rounded
            objective = float(model.cost @ values)
            if best is None or objective < best[1]:
                best = (values, objective, rounded, np.asarray(sol.row_dual, dtype=float))
            if (best[1] - lower) <= mip_gap * max(abs(best[1]), 1e-9):
                break  # the relaxation's bound already proves this rounding: the other is not needed
    return None if best is None else (best[0], best[1], lower, best[3], h)


def _unbounded_or_infeasible(model, highspy, threads):
    """Which of the two a model HiGHS's presolve called "unbounded or infeasible" is: its LP relaxation solved
    without presolve (unbounded: some purchase pays back more than it costs; else infeasible)."""
    h = new_highs(highspy, None, 0.0, threads)
    h.setOptionValue("presolve", "off")
    pass_model(h, model, highspy, integer=False)
    run(h)
    ms = h.getModelStatus()
    return ms if ms == highspy.HighsModelStatus.kUnbounded else highspy.HighsModelStatus.kInfeasible


def _solve_highs(model: PlanModel, time_limit_s, mip_gap, threads, strategy: str = "auto", tied=None) -> SolveResult:
    """HiGHS on the model's arrays. With ``strategy="auto"`` and integer columns, first the LP relaxation
    and rounding (proven within the gap by the relaxation's bound, or else), then the branch and bound. With
    ``tied`` (see :func:`solve`) the plan is read from the plan LP: warm after the rounding or an LP, cold after the
    branch and bound."""
    if not highs_available():
        raise SolverError("HiGHS is not installed: pip install 'planner[highs]' (highspy), or use --solver cbc")
    import highspy

    t0 = time.perf_counter()
    if model.n_variables == 0:  # nothing to decide (no demand, nothing to buy): HiGHS calls an empty model an error
        return _result(model, "highs", Status.optimal, t0, 0.0, 0.0, "Optimal (empty model)", np.zeros(0))
    has_int = bool(model.integer.any())
    limit = time_limit_s  # (the whole solve's: the plan LP gets what it leaves)

    def read(result: SolveResult, h=None) -> SolveResult:
        """``result`` read from the plan LP ``tied`` (warm on ``h``, else on a new HiGHS object); as it is where none
        was asked, ``read_fell_back`` where it did not end optimal."""
        if tied is None or result.status not in (Status.optimal, Status.feasible):
            return result
        seconds = _remaining(limit, t0)
        got = _read_on(h, highspy, tied, result.values, seconds) if h is not None else \
            _read_cold(model, tied, result.values, threads, seconds)
        if got is None:
            return replace(result, read_fell_back=True, seconds=time.perf_counter() - t0)
        values, duals = got
        out = _result(model, "highs", result.status, t0, result.mip_gap, None, result.message, values,
                      duals if result.row_duals is not None else None)
        bound = result.best_bound  # (proven at the MIP's values, to its tolerance: never above the plan read)
        if bound is not None and np.isfinite(bound):
            bound = min(bound + model.tie_at(result.values) - model.tie_at(values), out.objective)
        return replace(out, best_bound=bound)

    rounded = None
    if has_int and strategy == "auto":
        rounded = _lp_round(model, highspy, time_limit_s, mip_gap, threads, t0)
        if rounded is not None:
            values, objective, lower, duals, h_round = rounded
            gap = (objective - lower) / max(abs(objective), 1e-9)
            if gap <= mip_gap + 1e-12:
                return read(_result(model, "highs", Status.optimal, t0, max(gap, 0.0), lower,
                                    "Optimal (LP relaxation rounded; its bound proves the gap)", values, duals), h_round)
            # (its HiGHS object kept: a rounded plan kept after a branch and bound that stopped early is read warm
            # on it; cold, the seconds a time limit leaves then were too few for a large model)
        if time_limit_s is not None:
            time_limit_s = max(time_limit_s - (time.perf_counter() - t0), 0.01)
    h = new_highs(highspy, time_limit_s, mip_gap, threads)
    if pass_model(h, model, highspy, integer=has_int) == highspy.HighsStatus.kError:
        raise SolverError("HiGHS rejected the model")
    # no setSolution(model.start): with HiGHS 1.16 a MIP start made run() stop at once and call the
    # start optimal (bound 0, gap 0). HiGHS finds its own first incumbent early.
    if run(h) == highspy.HighsStatus.kError:
        raise SolverError(f"HiGHS failed: {h.modelStatusToString(h.getModelStatus())}")
    info = h.getInfo()
    ms = h.getModelStatus()
    text = h.modelStatusToString(ms)
    feasible = int(info.primal_solution_status) == 2
    if ms == highspy.HighsModelStatus.kUnboundedOrInfeasible:  # presolve's answer: which one says what to mend
        ms = _unbounded_or_infeasible(model, highspy, threads)
    if ms == highspy.HighsModelStatus.kUnbounded:
        raise SolverError(UNBOUNDED.format(solver="HiGHS"))
    if ms == highspy.HighsModelStatus.kOptimal:
        status = Status.optimal
    elif ms in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
        status = Status.infeasible
    elif feasible:
        status = Status.feasible  # stopped early (time limit) with a primal-feasible incumbent
    else:
        status = Status.error
    gap = float(info.mip_gap) if has_int else 0.0
    bound = float(info.mip_dual_bound) if has_int else None
    if gap is not None and not np.isfinite(gap):
        gap = None
    values = np.asarray(h.getSolution().col_value, dtype=float) if status in (Status.optimal, Status.feasible) \
        else np.full(model.n_variables, np.nan)
    if status != Status.optimal and rounded is not None:
        # stopped early: keep the rounded plan if branch and bound found nothing better
        r_values, r_objective, lower, r_duals, h_round = rounded
        if status != Status.feasible or r_objective < float(model.cost @ np.nan_to_num(values)):
            best = max(lower, bound) if bound is not None and np.isfinite(bound) else lower
            r_gap = max((r_objective - best) / max(abs(r_objective), 1e-9), 0.0)
            kept = Status.optimal if r_gap <= mip_gap + 1e-12 else Status.feasible
            return read(_result(model, "highs", kept, t0, r_gap, best,
                                f"{text}; kept the rounded LP-relaxation plan", r_values, r_duals), h_round)
    duals = np.asarray(h.getSolution().row_dual, dtype=float) if not has_int and status is Status.optimal else None
    # the plan LP: warm on this LP, cold after a branch and bound (no LP basis to start from)
    return read(_result(model, "highs", status, t0, gap, bound, text, values, duals), None if has_int else h)


def _read_on(h, highspy, tied, values: np.ndarray, seconds: float | None = None):
    """Solve the plan LP ``tied`` (:class:`planner.solve.reading.Tied`) on ``h``, a HiGHS object holding the model's
    LP (its basis a warm start): the purchase columns fixed at ``values``, the plan LP's objective and options, at
    most ``seconds`` (at least 1). (column values, row duals divided back), or None where it does not end optimal."""
    f = np.asarray(tied.fixed, dtype=np.int32)
    if len(f):
        h.changeColsBounds(len(f), f, values[tied.fixed], values[tied.fixed])
    h.changeColsCost(len(tied.cost), np.arange(len(tied.cost), dtype=np.int32), np.ascontiguousarray(tied.cost, float))
    for key, v in tied.options.items():
        h.setOptionValue(key, v)
    if seconds is not None:
        time_left(h, seconds, least=1.0)
    run(h)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    sol = h.getSolution()
    out = np.asarray(sol.col_value, dtype=float)
    out[tied.fixed] = values[tied.fixed]
    duals = np.asarray(sol.row_dual, dtype=float)
    return out, (duals if tied.row_factor is None else duals / tied.row_factor)


def _read_cold(model: PlanModel, tied, values: np.ndarray, threads, seconds: float | None):
    """:func:`_read_on` on a new HiGHS object holding ``model``'s LP (after a branch and bound: no LP basis to start
    from); None where it does not end optimal or HiGHS rejects it."""
    import highspy

    h = new_highs(highspy, None, 0.0, threads)
    if pass_model(h, model, highspy, integer=False) == highspy.HighsStatus.kError:
        return None
    return _read_on(h, highspy, tied, values, seconds)


def _remaining(time_limit_s: float | None, t0: float) -> float | None:
    """The seconds a time limit leaves since ``t0`` (None: no limit)."""
    return None if time_limit_s is None else float(time_limit_s) - (time.perf_counter() - t0)
