"""Time the planner's stages on synthetic cases, against a plain-PuLP yardstick.

    python benchmarks/run.py                         # sizes S M L, HiGHS, once each
    python benchmarks/run.py --sizes S M --solver cbc
    python benchmarks/run.py --sizes L --repeat 3    # medians of 3 runs
    python benchmarks/run.py --sizes XL --time-limit 600   # XL only when asked, and only with a time limit

For every size and repeat, two fresh subprocesses run (so ``ru_maxrss`` is a per-size peak):

1. the planner, stage by stage: read+validate (``pipeline.load_inputs``), build
   (``model.build_model``), solve (``solve.solve`` with the model file's gap and time limit, or
   ``--time-limit``), extract (``results.extract_plan``), write (``pipeline.write_outputs``:
   plan.xlsx + plan.json into a temporary folder);
2. the yardstick: the same formulation built the plain way (Python loops, dicts keyed by
   (class, pool, period), ``lpSum``; no period merging, a variable for every allowed
   (k, p, t)), from the planner's validated inputs, solved by the same solver with the same gap
   and time limit.

Results are appended to ``benchmarks/results.csv`` (one row per size and solver, medians over the
repeats) and printed as a table. ``ratio`` = yardstick (build + solve) / planner total (all five
stages). The objectives must agree to a relative 1e-4; a ``MISMATCH`` line is printed if not.

A watchdog kills a worker whose resident memory passes ``--mem-limit-gb`` (default 16) or whose
wall time passes ``--worker-timeout``; the stage it was in is reported.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

RESULTS = HERE / "results.csv"
STAGES = ("read_validate", "build", "solve", "extract", "write")
COLUMNS = (["date", "size", "solver"] + [f"{s}_s" for s in STAGES]
           + ["total_s", "peak_mb", "variables", "constraints", "nonzeros", "status", "gap", "objective",
              "yardstick_build", "yardstick_total", "yardstick_objective", "ratio",
              # extras
              "yardstick_solve", "yardstick_status", "yardstick_variables", "yardstick_peak_mb",
              "objective_rel_diff", "agree", "blocks", "periods", "classes", "pools", "solver_child_mb",
              "time_limit_s", "repeats", "seed", "solve_transfer_s", "solve_native_s", "write_xlsx_s",
              "yardstick_solve_transfer_s", "commit", "load1", "mip_gap_limit"])
REL_TOL = 2e-4  # each run is within its 1e-4 gap of the optimum, so they may differ by about that


# ============================================================================ workers (subprocess side)

def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _progress(path: str | None, **info) -> None:
    """Leave a note of the current stage for the parent (read if the worker is killed)."""
    if path:
        Path(path).write_text(json.dumps(info))


from planner.solve.monolithic import quiet_stdout as _quiet_stdout  # noqa: E402  (HiGHS prints a banner)


@contextlib.contextmanager
def _solver_split():
    """Time the Python side of a PuLP solve (model transfer in, solution back) apart from the solver.

    Wraps, for the duration, HiGHS.buildSolverModel / callSolver / findSolutionValues, for CBC
    LpProblem.writeMPS / COIN_CMD.readsol_MPS, and PlanModel.pulp where the planner keeps an array
    model and makes the PuLP problem only for CBC. Yields a dict of accumulated seconds. A planner
    that hands arrays to HiGHS itself shows no transfer: all of its solve counts as "native".
    """
    import pulp

    acc: dict[str, float] = {}
    targets = [(pulp.LpProblem, "writeMPS", "transfer_in"), (pulp.COIN_CMD, "readsol_MPS", "transfer_out")]
    if hasattr(pulp.HiGHS, "buildSolverModel"):
        targets += [(pulp.HiGHS, "buildSolverModel", "transfer_in"), (pulp.HiGHS, "callSolver", "native"),
                    (pulp.HiGHS, "findSolutionValues", "transfer_out")]
    try:  # an array model makes its PuLP problem lazily, inside solve (CBC): count that as transfer in
        from planner.model import PlanModel

        if callable(PlanModel.__dict__.get("pulp")):
            targets.append((PlanModel, "pulp", "transfer_in"))
    except ImportError:
        pass
    saved = []

    def wrap(fn, key):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                acc[key] = acc.get(key, 0.0) + time.perf_counter() - t0
        return timed

    for cls, name, key in targets:
        orig = cls.__dict__.get(name)
        if orig is None:
            continue
        saved.append((cls, name, orig))
        setattr(cls, name, wrap(orig, key))
    try:
        yield acc
    finally:
        for cls, name, orig in saved:
            setattr(cls, name, orig)


class _Profiler:
    """Optional cProfile of one stage: top functions by cumulative time."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.reports: dict[str, str] = {}

    @contextlib.contextmanager
    def stage(self, name: str):
        if not self.enabled:
            yield
            return
        import cProfile
        import io
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        try:
            yield
        finally:
            prof.disable()
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(18)
            self.reports[name] = buf.getvalue()


def _split_summary(acc: dict, total: float) -> dict:
    """transfer (Python <-> solver) and native (the solver itself; for CBC the subprocess) seconds."""
    transfer = acc.get("transfer_in", 0.0) + acc.get("transfer_out", 0.0)
    native = acc.get("native", total - transfer)
    return {"transfer_in": acc.get("transfer_in", 0.0), "transfer_out": acc.get("transfer_out", 0.0),
            "transfer": transfer, "native": native}


def _nonzeros(model) -> int:
    """Constraint-matrix non-zeros: the model's own count if it keeps one (array models), else PuLP's.

    Asking an array model for ``prob`` would build the PuLP problem just to count, so it is not done.
    """
    own = getattr(type(model), "nonzeros", None)
    if own is not None:
        return int(model.nonzeros)
    return len(model.to_pulp()[0].constraints)


def worker_planner(model_path: str, backend: str, time_limit: float | None, progress: str | None,
                   profile: bool = False) -> dict:
    import warnings

    caught = warnings.catch_warnings(record=True)  # the planner's warnings are reported, not fatal
    seen = caught.__enter__()
    warnings.simplefilter("always")
    from planner.model import build_model
    from planner.pipeline.run import load_inputs, write_outputs
    from planner.results.plan import extract_plan
    from planner.solve.monolithic import solve

    prof = _Profiler(profile)
    out: dict = {"seconds": {}, "rss_after_mb": {}}

    def mark(stage: str, t0: float) -> None:
        out["seconds"][stage] = time.perf_counter() - t0
        out["rss_after_mb"][stage] = _rss_mb()

    _progress(progress, stage="read_validate")
    t0 = time.perf_counter()
    with prof.stage("read_validate"):
        inp = load_inputs(model_path)
    mark("read_validate", t0)

    _progress(progress, stage="build")
    t0 = time.perf_counter()
    with prof.stage("build"):
        model = build_model(inp)
    mark("build", t0)

    s = inp.config.solver
    limit = time_limit if time_limit is not None else s.time_limit_s
    _progress(progress, stage="solve")
    t0 = time.perf_counter()
    with prof.stage("solve"), _solver_split() as split:
        result = solve(model, backend, limit, s.mip_gap, s.threads)
    mark("solve", t0)
    out["solve_split"] = _split_summary(split, out["seconds"]["solve"])

    _progress(progress, stage="extract")
    t0 = time.perf_counter()
    with prof.stage("extract"):
        plan = extract_plan(inp, model, result, {})
    mark("extract", t0)

    _progress(progress, stage="write")
    with tempfile.TemporaryDirectory(prefix="bench-out-") as tmp:
        t0 = time.perf_counter()
        with prof.stage("write"):
            write_outputs(plan, tmp)
        mark("write", t0)
        out["write_xlsx_s"] = plan.timings.get("write_xlsx")  # set by write_outputs (workbook part)
        out["xlsx_mb"] = os.path.getsize(Path(tmp) / "plan.xlsx") / 2**20
        out["json_mb"] = os.path.getsize(Path(tmp) / "plan.json") / 2**20

    out.update({
        "total": sum(out["seconds"].values()),
        "peak_mb": _rss_mb(),
        "solver_child_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0,
        "variables": model.n_variables,
        "constraints": model.n_constraints,
        "nonzeros": _nonzeros(model),
        "status": result.status.value,
        "gap": result.mip_gap,
        "objective": plan.objective,
        "solver_objective": result.objective,
        "time_limit_s": limit,
        "mip_gap_limit": s.mip_gap,
        "blocks": model.blocks.B, "periods": inp.T, "classes": inp.K, "pools": inp.P,
        "scenarios": len(inp.scenarios),
        "allocation_rows": len(plan.allocation),
        "profile": prof.reports,
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in seen})[:10],
    })
    caught.__exit__(None, None, None)
    return out


# ---------------------------------------------------------------------------- the yardstick

def build_plain(inp):
    """The formulation of spec/formulation.md written the plain way: loops, dicts and lpSum.

    Uses the planner's validated inputs (the same numbers: speeds, goodput, prices, caps),
    creates a variable for every allowed (scenario, class, pool, period), merges no periods.
    The non-spot reliability q (1 unless a failure rate is set) multiplies x and y as in the planner.
    """
    import math

    from pulp import LpInteger, LpMinimize, LpProblem, lpSum

    S, K, P, T = len(inp.scenarios), inp.K, inp.P, inp.T
    pools = inp.pools
    # plain Python data
    speed = {(k, p): float(inp.speed[k, p]) for k in range(K) for p in range(P) if inp.speed[k, p] > 0}
    good = {(k, p): float(inp.goodput[k, p]) for (k, p) in speed}
    rel = {(k, p): float(inp.reliability[k, p]) for (k, p) in speed}
    dem = {(s, k, t): float(inp.demand[s, k, t]) for s in range(S) for k in range(K) for t in range(T)}
    hours = [float(h) for h in inp.hours]
    prob_s = [float(x) for x in inp.probability]
    eta = [float(x) for x in inp.headroom]
    phi = [float(x) for x in inp.spot_share]
    od = [float(x) for x in pools["od"]]
    sp = [float(x) for x in pools["sp"]]
    has_od = [bool(x) for x in pools["has_od"]]
    has_sp = [bool(x) for x in pools["has_sp"]]
    cap_od = [float(x) for x in pools["cap_od"]]
    cap_sp = [float(x) for x in pools["cap_sp"]]
    cap_res = [float(x) for x in pools["cap_res"]]
    inv = {(p, t): float(inp.inventory[p, t]) for p in range(P) for t in range(T)}
    options = [(c, int(r.pool), float(r.m), float(r.r)) for c, r in enumerate(inp.commitments.itertuples())]
    H = sum(hours)
    M = inp.penalty
    has_res = [any(o[1] == p for o in options) or any(inv[p, t] > 0 for t in range(T)) for p in range(P)]

    prob = LpProblem("plain_fleet_plan", LpMinimize)
    n = {c: prob.add_variable(f"n_{c}", lowBound=0, cat=LpInteger) for c, _, _, _ in options}
    x, y, z, u = {}, {}, {}, {}
    for s in range(S):
        for (k, p) in speed:
            for t in range(T):
                if has_res[p]:
                    x[s, k, p, t] = prob.add_variable(f"x_{s}_{k}_{p}_{t}", lowBound=0)
                if has_od[p]:
                    y[s, k, p, t] = prob.add_variable(f"y_{s}_{k}_{p}_{t}", lowBound=0)
                if phi[k] > 0 and has_sp[p] and good[k, p] > 0:
                    z[s, k, p, t] = prob.add_variable(f"z_{s}_{k}_{p}_{t}", lowBound=0)
        for k in range(K):
            for t in range(T):
                u[s, k, t] = prob.add_variable(f"u_{s}_{k}_{t}", lowBound=0)

    pools_of = {k: [p for p in range(P) if (k, p) in speed] for k in range(K)}
    classes_of = {p: [k for k in range(K) if (k, p) in speed] for p in range(P)}
    N = {p: lpSum(m * n[c] for c, pool, m, _ in options if pool == p) for p in range(P)}

    for s in range(S):
        for k in range(K):
            for t in range(T):
                prob += (lpSum(speed[k, p] * rel[k, p] * x[s, k, p, t] for p in pools_of[k] if (s, k, p, t) in x)
                         + lpSum(speed[k, p] * rel[k, p] * y[s, k, p, t] for p in pools_of[k] if (s, k, p, t) in y)
                         + lpSum(speed[k, p] * good[k, p] * z[s, k, p, t] for p in pools_of[k] if (s, k, p, t) in z)
                         + u[s, k, t] >= (1 + eta[k]) * dem[s, k, t], f"demand_{s}_{k}_{t}")
                spot_terms = [speed[k, p] * good[k, p] * z[s, k, p, t] for p in pools_of[k] if (s, k, p, t) in z]
                if spot_terms:
                    prob += lpSum(spot_terms) <= phi[k] * dem[s, k, t], f"spot_share_{s}_{k}_{t}"
        for p in range(P):
            for t in range(T):
                if has_res[p] and classes_of[p]:
                    prob += (lpSum(x[s, k, p, t] for k in classes_of[p]) - N[p] <= inv[p, t],
                             f"reserved_share_{s}_{p}_{t}")
                if has_od[p] and not math.isnan(cap_od[p]) and classes_of[p]:
                    prob += lpSum(y[s, k, p, t] for k in classes_of[p]) <= cap_od[p], f"od_cap_{s}_{p}_{t}"
                zs = [z[s, k, p, t] for k in classes_of[p] if (s, k, p, t) in z]
                if zs and not math.isnan(cap_sp[p]):
                    prob += lpSum(zs) <= cap_sp[p], f"spot_cap_{s}_{p}_{t}"
    for p in range(P):
        if not math.isnan(cap_res[p]) and any(pool == p for _, pool, _, _ in options):
            prob += N[p] <= cap_res[p] - max(inv[p, t] for t in range(T)), f"reserved_cap_{p}"

    prob += (lpSum(m * r * H * n[c] for c, _, m, r in options)
             + lpSum(prob_s[s] * hours[t] * od[p] * var for (s, k, p, t), var in y.items())
             + lpSum(prob_s[s] * hours[t] * sp[p] * var for (s, k, p, t), var in z.items())
             + lpSum(M * prob_s[s] * hours[t] * var for (s, k, t), var in u.items()))
    return prob, len(n) + len(x) + len(y) + len(z) + len(u)


def solve_plain(prob, backend: str, time_limit: float | None, gap: float, threads: int | None) -> dict:
    import pulp

    if backend == "highs":
        solver = pulp.HiGHS(msg=False, timeLimit=time_limit, gapRel=gap, threads=threads)
        with _quiet_stdout():
            prob.solve(solver)
    else:
        from planner.solve.monolithic import cbc_path

        solver = pulp.COIN_CMD(path=cbc_path(), msg=False, timeLimit=time_limit, gapRel=gap, threads=threads)
        cwd = os.getcwd()
        with tempfile.TemporaryDirectory(prefix="bench-cbc-") as tmp:
            os.chdir(tmp)
            try:
                prob.solve(solver)
            finally:
                os.chdir(cwd)
    return {"status": pulp.LpStatus[prob.status], "solution": pulp.LpSolution[prob.sol_status],
            "objective": pulp.value(prob.objective)}


def worker_yardstick(model_path: str, backend: str, time_limit: float | None, progress: str | None,
                     profile: bool = False) -> dict:
    import warnings

    warnings.simplefilter("error", DeprecationWarning)
    from planner.pipeline.run import load_inputs

    inp = load_inputs(model_path)  # shared with the planner, not timed
    s = inp.config.solver
    limit = time_limit if time_limit is not None else s.time_limit_s
    _progress(progress, stage="build")
    t0 = time.perf_counter()
    prob, n_vars = build_plain(inp)
    t_build = time.perf_counter() - t0
    _progress(progress, stage="solve")
    t0 = time.perf_counter()
    with _solver_split() as split:
        sol = solve_plain(prob, backend, limit, s.mip_gap, s.threads)
    t_solve = time.perf_counter() - t0
    return {"solve_split": _split_summary(split, t_solve), "build": t_build, "solve": t_solve, "total": t_build + t_solve, "objective": sol["objective"],
            "status": f"{sol['status']}/{sol['solution']}", "variables": n_vars,
            "constraints": prob.numConstraints(), "peak_mb": _rss_mb()}


# ============================================================================ parent side

def _rss_now_mb(pid: int) -> float:
    """Resident memory of pid and its children (the CBC subprocess), from /proc."""
    total = 0.0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += float(line.split()[1]) / 1024.0
        except OSError:
            pass
    return total


def run_worker(kind: str, model: Path, solver: str, time_limit: float | None, mem_limit_gb: float,
               timeout_s: float, profile: bool = False) -> dict:
    """Run one worker in a fresh interpreter under the watchdog; return its JSON or an error record."""
    with tempfile.TemporaryDirectory(prefix="bench-w-") as tmp:
        out, prog = Path(tmp) / "out.json", Path(tmp) / "progress.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--model", str(model),
               "--solver", solver, "--json-out", str(out), "--progress", str(prog)]
        if time_limit is not None:
            cmd += ["--time-limit", str(time_limit)]
        if profile:
            cmd += ["--profile"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        killed, peak = None, 0.0
        while proc.poll() is None:
            rss = _rss_now_mb(proc.pid)
            peak = max(peak, rss)
            if rss > mem_limit_gb * 1024:
                killed = f"killed: memory {rss / 1024:.1f} GB > {mem_limit_gb:g} GB"
            elif time.perf_counter() - t0 > timeout_s:
                killed = f"killed: wall time > {timeout_s:g} s"
            if killed:
                proc.kill()
                break
            time.sleep(0.25)
        stdout, stderr = proc.communicate()
        wall = time.perf_counter() - t0
        stage = json.loads(prog.read_text()).get("stage") if prog.exists() else None
        if killed or proc.returncode != 0 or not out.exists():
            reason = killed or f"exit code {proc.returncode}"
            tail = "\n".join(stderr.strip().splitlines()[-6:])
            return {"error": f"{reason} during {stage or 'start-up'} after {wall:.0f} s", "stage": stage,
                    "stderr": tail, "watch_peak_mb": peak}
        data = json.loads(out.read_text())
        data["watch_peak_mb"] = peak
        return data


def _median(values):
    vals = [v for v in values if isinstance(v, (int, float)) and v == v]
    return statistics.median(vals) if vals else None


def combine(runs: list[dict]) -> dict:
    """Medians over repeats of every number; the last run's text fields."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return runs[-1]
    out = dict(ok[-1])
    if "seconds" in out:
        out["seconds"] = {s: _median([r["seconds"].get(s) for r in ok]) for s in STAGES}
    if "solve_split" in out:
        out["solve_split"] = {k: _median([r["solve_split"][k] for r in ok]) for k in out["solve_split"]}
    for key in ("total", "peak_mb", "objective", "gap", "solver_child_mb", "build", "solve", "write_xlsx_s"):
        if key in out:
            out[key] = _median([r.get(key) for r in ok])
    out["repeats"] = len(ok)
    return out


def _optimal(p: dict, y: dict) -> tuple[bool, bool]:
    return p.get("status") == "optimal", str(y.get("status", "")).endswith("/Optimal Solution Found")


def must_agree(p: dict, y: dict) -> bool:
    """Whether the objectives must agree: both proven optimal (within the gap), or one stopped early
    yet cheaper than the other's proven optimum.

    A run stopped by its time limit may be dearer than the optimum, but never cheaper than it
    (same formulation, minimisation).
    """
    p_opt, y_opt = _optimal(p, y)
    if p_opt and y_opt:
        return True
    a, b = p.get("objective"), y.get("objective")
    if a is None or b is None:
        return False
    if p_opt and b < a * (1 - REL_TOL):  # the stopped yardstick is cheaper than the planner's optimum
        return True
    if y_opt and a < b * (1 - REL_TOL):  # the stopped planner is cheaper than the yardstick's optimum
        return True
    return False


def rel_diff(a, b) -> float | None:
    if a is None or b is None:
        return None
    return abs(a - b) / max(1.0, abs(a), abs(b))


def planner_version() -> str:
    """Short commit, '+dirty' if planner/ has uncommitted changes, and a hash of planner/**/*.py.

    The source hash tells two runs on different uncommitted states apart.
    """
    import hashlib

    root = HERE.parent
    h = hashlib.sha256()
    for f in sorted((root / "planner").rglob("*.py")):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    src = h.hexdigest()[:8]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "planner"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"src:{src}"
    return head + ("+dirty" if dirty else "") + f" src:{src}"


def row_for(size: str, solver: str, seed: int, p: dict, y: dict | None, load1: float | None = None,
            version: str | None = None) -> dict:
    date = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    row = {c: "" for c in COLUMNS}
    row.update(date=date, size=size, solver=solver, seed=seed,
               commit=planner_version() if version is None else version,
               load1="" if load1 is None else round(load1, 2))
    if "error" in p:
        row["status"] = p["error"]
        return row
    for s in STAGES:
        row[f"{s}_s"] = round(p["seconds"][s], 3)
    row.update(total_s=round(p["total"], 3), peak_mb=round(p["peak_mb"]), variables=p["variables"],
               constraints=p["constraints"], nonzeros=p["nonzeros"], status=p["status"],
               gap="" if p["gap"] is None else f"{p['gap']:.2e}", objective=round(p["objective"], 2),
               blocks=p["blocks"], periods=p["periods"], classes=p["classes"], pools=p["pools"],
               solver_child_mb=round(p.get("solver_child_mb") or 0), time_limit_s=p["time_limit_s"],
               repeats=p.get("repeats", 1), solve_transfer_s=round(p["solve_split"]["transfer"], 3),
               solve_native_s=round(p["solve_split"]["native"], 3),
               write_xlsx_s="" if p.get("write_xlsx_s") is None else round(p["write_xlsx_s"], 3),
               mip_gap_limit=p["mip_gap_limit"])
    if y is not None and "error" not in y:
        d = rel_diff(p["objective"], y["objective"])
        verdict = "" if d is None else ("yes" if d <= REL_TOL else "NO")
        if verdict == "NO" and not must_agree(p, y):
            verdict = "n/a"  # a time limit stopped one of them: the objectives need not agree
        row.update(yardstick_build=round(y["build"], 3), yardstick_solve=round(y["solve"], 3),
                   yardstick_total=round(y["total"], 3),
                   yardstick_objective="" if y["objective"] is None else round(y["objective"], 2),
                   ratio=round(y["total"] / p["total"], 2), yardstick_status=y["status"],
                   yardstick_variables=y["variables"], yardstick_peak_mb=round(y["peak_mb"]),
                   yardstick_solve_transfer_s=round(y["solve_split"]["transfer"], 3),
                   objective_rel_diff="" if d is None else f"{d:.1e}",
                   agree=verdict)
    elif y is not None:
        row["yardstick_status"] = y["error"]
    return row


def append_csv(rows: list[dict], path: Path = RESULTS) -> None:
    new = not path.exists() or path.stat().st_size == 0
    if not new:
        with open(path, newline="") as f:
            header = next(csv.reader(f), [])
        if header != COLUMNS:
            raise SystemExit(f"{path} has different columns; move it aside to start a new file")
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            w.writeheader()
        w.writerows(rows)


def fmt_table(rows: list[dict], cols: list[tuple[str, str]]) -> str:
    """Aligned text table; cols = (key, heading)."""
    cells = [[h for _, h in cols]] + [[str(r.get(k, "")) for k, _ in cols] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(cols))]
    lines = ["  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(zip(line, widths)))
             for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


TABLE = [("size", "size"), ("solver", "solver"), ("read_validate_s", "read"), ("build_s", "build"),
         ("solve_s", "solve"), ("extract_s", "extract"), ("write_s", "write"), ("total_s", "total"),
         ("peak_mb", "peak_MB"), ("variables", "vars"), ("constraints", "rows"), ("nonzeros", "nnz"),
         ("status", "status"), ("gap", "gap"), ("objective", "objective"),
         ("yardstick_build", "y_build"), ("yardstick_total", "y_total"), ("ratio", "ratio"),
         ("agree", "agree")]


def report(size: str, p: dict, y: dict | None) -> list[str]:
    """Human-readable lines about one size: per-stage memory, objective check, errors."""
    lines = []
    if "error" in p:
        lines.append(f"[{size}] planner FAILED: {p['error']}")
        if p.get("stderr"):
            lines.append("    " + p["stderr"].replace("\n", "\n    "))
        return lines
    rss = ", ".join(f"{s} {p['rss_after_mb'][s]:.0f}" for s in STAGES)
    lines.append(f"[{size}] peak RSS after each stage (MB): {rss}; solver subprocess {p.get('solver_child_mb', 0):.0f};"
                 f" blocks {p['blocks']} of {p['periods']} periods; allocation rows {p['allocation_rows']};"
                 f" plan.xlsx {p['xlsx_mb']:.1f} MB")
    sp = p["solve_split"]
    lines.append(f"[{size}] solve {p['seconds']['solve']:.2f} s = PuLP->solver transfer {sp['transfer_in']:.2f} s"
                 f" + solver {sp['native']:.2f} s + solution back {sp['transfer_out']:.2f} s;"
                 f" write {p['seconds']['write']:.2f} s of which plan.xlsx {p.get('write_xlsx_s') or 0:.2f} s")
    for w in p.get("warnings", []):
        lines.append(f"[{size}] planner warning: {w}")
    if y is None:
        return lines
    if "error" in y:
        lines.append(f"[{size}] yardstick FAILED: {y['error']}")
        return lines
    d = rel_diff(p["objective"], y["objective"])
    if (d is None or d > REL_TOL) and not must_agree(p, y):
        lines.append(f"[{size}] objectives not compared: planner {p['status']} {p['objective']:.2f} (gap {p['gap']}), "
                     f"yardstick {y['status']} {y['objective']} (a time limit stopped at least one of them); "
                     f"relative difference {'n/a' if d is None else f'{d:.2e}'}")
    elif d is None or d > REL_TOL:
        lines.append(f"[{size}] MISMATCH: planner objective {p['objective']:.4f} ({p['status']}, gap {p['gap']}) vs "
                     f"yardstick {y['objective']} ({y['status']}); relative difference "
                     f"{'n/a' if d is None else f'{d:.2e}'} > {REL_TOL:g}")
    else:
        lines.append(f"[{size}] objectives agree: planner {p['objective']:.2f}, yardstick {y['objective']:.2f} "
                     f"(relative difference {d:.1e}); yardstick {y['variables']} variables, "
                     f"{y['constraints']} rows, build {y['build']:.2f} s + solve {y['solve']:.2f} s, "
                     f"peak {y['peak_mb']:.0f} MB; ratio plain/planner = {y['total'] / p['total']:.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["S", "M", "L"], type=str.upper,
                    help="named sizes (default S M L; XL only when named, with --time-limit)")
    ap.add_argument("--solver", choices=["cbc", "highs"], default="highs")
    ap.add_argument("--time-limit", type=float, help="solver time limit in seconds (default: the model file's)")
    ap.add_argument("--mip-gap", type=float, default=1e-4,
                    help="relative MIP gap written into the generated model files (default 1e-4, the planner's "
                         "own default; the objective check then allows the two runs' gaps)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per size; medians are reported")
    ap.add_argument("--seed", type=int, default=0, help="generator seed")
    ap.add_argument("--no-yardstick", action="store_true", help="skip the plain-PuLP yardstick")
    ap.add_argument("--no-csv", action="store_true", help=f"do not append to {RESULTS.name}")
    ap.add_argument("--keep-cases", type=Path, help="generate the cases here and keep them (default: a temp dir)")
    ap.add_argument("--mem-limit-gb", type=float, default=16.0, help="kill a worker above this RSS")
    ap.add_argument("--worker-timeout", type=float, default=3600.0, help="kill a worker after this many seconds")
    ap.add_argument("--profile", action="store_true", help="print cProfile's top functions of each planner stage")
    # internal: one worker in a fresh process
    ap.add_argument("--worker", choices=["planner", "yardstick"], help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--json-out", help=argparse.SUPPRESS)
    ap.add_argument("--progress", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a.worker:
        fn = worker_planner if a.worker == "planner" else worker_yardstick
        data = fn(a.model, a.solver, a.time_limit, a.progress, a.profile)
        Path(a.json_out).write_text(json.dumps(data))
        return 0

    from generate import SIZES, generate_size

    unknown = [s for s in a.sizes if s not in SIZES]
    if unknown:
        ap.error(f"unknown size(s) {unknown}; choose from {sorted(SIZES)}")
    if "XL" in a.sizes and a.time_limit is None:
        ap.error("XL needs an explicit --time-limit (e.g. --time-limit 600)")
    if a.repeat < 1:
        ap.error("--repeat must be >= 1")

    case_root = a.keep_cases or Path(tempfile.mkdtemp(prefix="bench-cases-"))
    rows, notes = [], []
    try:
        for size in a.sizes:
            case = case_root / f"{size}-s{a.seed}"
            t0 = time.perf_counter()
            model = generate_size(case, size, seed=a.seed, backend=a.solver, mip_gap=a.mip_gap)
            load1 = os.getloadavg()[0]  # other work on the machine skews timings; recorded per size
            version = planner_version()  # the planner tree may change while benchmarks run
            print(f"[{size}] generated {case} in {time.perf_counter() - t0:.1f} s", flush=True)
            p_runs, y_runs = [], []
            for i in range(a.repeat):
                p = run_worker("planner", model, a.solver, a.time_limit, a.mem_limit_gb, a.worker_timeout,
                               a.profile and i == 0)
                p_runs.append(p)
                msg = p.get("error") or (f"total {p['total']:.1f} s (" + ", ".join(
                    f"{s} {p['seconds'][s]:.2f}" for s in STAGES) + f"), {p['status']}")
                print(f"[{size}] planner run {i + 1}/{a.repeat}: {msg}", flush=True)
                for stage, text in p.get("profile", {}).items():
                    print(f"----- profile of {stage} -----\n{text}")
                if a.no_yardstick:
                    continue
                y = run_worker("yardstick", model, a.solver, a.time_limit, a.mem_limit_gb, a.worker_timeout)
                y_runs.append(y)
                msg = y.get("error") or f"build {y['build']:.2f} s + solve {y['solve']:.2f} s, {y['status']}"
                print(f"[{size}] yardstick run {i + 1}/{a.repeat}: {msg}", flush=True)
            p = combine(p_runs)
            y = None if a.no_yardstick else combine(y_runs)
            row = row_for(size, a.solver, a.seed, p, y, load1, version)
            rows.append(row)
            notes += report(size, p, y)
            if not a.no_csv:
                append_csv([row])
    finally:
        if not a.keep_cases:
            shutil.rmtree(case_root, ignore_errors=True)

    print()
    print(fmt_table(rows, TABLE))
    print()
    print("\n".join(notes))
    if not a.no_csv:
        print(f"\nappended {len(rows)} row(s) to {RESULTS}")
    return 1 if any(r.get("agree") == "NO" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
