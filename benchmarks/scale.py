"""End to end at scale (issue 23): `planner plan` on generated cases, timed and measured as a user runs it.

    python benchmarks/generate.py /tmp/bb/XL --size XL        # and L, M, 3Y, 3Y5
    python benchmarks/scale.py /tmp/bb/L/model.toml /tmp/bb/XL/model.toml --jobs 1 2 --dask 2
    python benchmarks/scale.py models/ladder.toml
    python benchmarks/scale.py /tmp/bb/L/model.toml --yardstick --time-limit 900

Each run is `planner plan MODEL --out TMP -q --jobs J` (J = 0: without --jobs, the default) (or `--executor dask --jobs J`: a Dask LocalCluster of J
worker processes) in a fresh process; the peak memory is the most the whole process tree (the planner and its
pricing workers, or the Dask cluster) held at once, sampled from /proc every 0.2 s. Printed per run: wall
seconds, status and proven gap (from plan.json), Benders iterations and pricing workers, the time of each stage
(plan.json timings_s) and of each phase of the decomposition (benders_phases), the peak MB and the load average
when it started (these machines are shared: read the ratios). ``--yardstick``: the same model written the plain PuLP way (benchmarks/run.py's build_plain) and solved
by PuLP's HiGHS in a fresh process, one purchase date only; its wall time against the planner's is the ratio a
user who writes the model by hand would see. ``--no-memo`` skips the purchase memo (its re-solves).

The planner's modules are compiled first (``compileall``), as an installed planner's are: pip compiles a package
at install, and an editable install's first run writes them, but a machine that sets ``PYTHONDONTWRITEBYTECODE``
(this one does) would compile every module again in every run, about 0.3 s of each run's start here, where the
yardstick's libraries are compiled. ``--no-compile`` measures without.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _tree_rss_mb(root: int) -> float:
    """Resident MB of ``root`` and every descendant (children of children: workers, the Dask cluster)."""
    total, todo, seen = 0.0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += float(line.split()[1]) / 1024.0
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return total


def watch(cmd: list[str], timeout_s: float) -> tuple[int, float, float, str]:
    """Run ``cmd``; (exit code, wall s, peak tree MB, stderr tail)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, _tree_rss_mb(proc.pid))
        if time.perf_counter() - t0 > timeout_s:
            proc.kill()
        time.sleep(0.2)
    _out, err = proc.communicate()
    return proc.returncode, time.perf_counter() - t0, peak, "\n".join(err.strip().splitlines()[-4:])


def plan_run(model: Path, jobs: int, dask: bool, memo: bool, timeout_s: float) -> dict:
    """`planner plan` once; its figures."""
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        cmd = [sys.executable, "-m", "planner", "plan", str(model), "--out", tmp, "-q"]
        cmd += ["--jobs", str(jobs)] if jobs else []  # 0: the default (no --jobs), as a user runs it
        cmd += ["--executor", "dask"] if dask else []
        cmd += [] if memo else ["--no-memo"]
        load = os.getloadavg()[0]
        code, wall, peak, err = watch(cmd, timeout_s)
        out = {"model": model.parent.name if model.name == "model.toml" else model.stem,
               "how": f"{'dask' if dask else 'local'} x{jobs}" if jobs or dask else "default", "exit": code, "wall_s": round(wall, 1),
               "peak_mb": round(peak), "load1": round(load, 2)}
        path = Path(tmp) / "plan.json"
        if not path.exists():
            out["error"] = err
            return out
        d = json.loads(path.read_text())
        b = d.get("model_size", {}).get("benders") or {}
        out.update(status=d["status"], gap=d["mip_gap"], objective=round(d["objective_usd"], 2),
                   iterations=b.get("iterations"), workers=b.get("workers"),
                   timings={k: round(v, 1) for k, v in d.get("timings_s", {}).items()},
                   benders_phases={k: round(v, 1) for k, v in (b.get("phases_s") or {}).items()})
        return out


def yardstick(model: Path, time_limit: float, timeout_s: float) -> dict:
    """benchmarks/run.py's plain PuLP build + PuLP's HiGHS, in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="scale-y-") as tmp:
        res = Path(tmp) / "y.json"
        code = ("import json, sys; sys.path.insert(0, %r); import run; "
                "r = run.worker_yardstick(%r, 'highs', %r, None); json.dump(r, open(%r, 'w'))"
                % (str(HERE), str(model), time_limit, str(res)))
        load = os.getloadavg()[0]
        rc, wall, peak, err = watch([sys.executable, "-c", code], timeout_s)
        out = {"model": model.parent.name, "how": "plain PuLP + HiGHS", "exit": rc, "wall_s": round(wall, 1),
               "peak_mb": round(peak), "load1": round(load, 2)}
        if res.exists():
            r = json.loads(res.read_text())
            out.update(status=r["status"], objective=r["objective"] and round(r["objective"], 2),
                       timings={"build": round(r["build"], 1), "solve": round(r["solve"], 1)})
        else:
            out["error"] = err
        return out


def main() -> None:
    """Run every model each way asked; one JSON line per run."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--jobs", type=int, nargs="+", default=[2], help="local pricing workers to try (default 2; 0: no --jobs, "
                    "the planner's own default: every core's threads in this process below 30,000 cells)")
    ap.add_argument("--dask", type=int, nargs="*", default=[], help="Dask LocalCluster sizes to try")
    ap.add_argument("--no-memo", action="store_true")
    ap.add_argument("--yardstick", action="store_true")
    ap.add_argument("--time-limit", type=float, default=900.0, help="the yardstick's solver limit (s)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="wall limit of one run (s)")
    ap.add_argument("--no-compile", action="store_true", help="leave the planner's modules as they are (see above)")
    a = ap.parse_args()
    where = subprocess.run([sys.executable, "-c", "import os, planner; print(os.path.dirname(planner.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()  # what `-m planner` runs
    how = "as it is"
    if not a.no_compile:
        import compileall

        how = "compiled" if compileall.compile_dir(where, quiet=2) else "as it is: compiling it failed"
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, commit "
          + subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True).stdout.strip() + f", planner {where} ({how})",
          flush=True)
    for model in a.models:
        for jobs in a.jobs:
            print(json.dumps(plan_run(model, jobs, False, not a.no_memo, a.timeout)), flush=True)
        for jobs in a.dask:
            print(json.dumps(plan_run(model, jobs, True, not a.no_memo, a.timeout)), flush=True)
        if a.yardstick:
            print(json.dumps(yardstick(model, a.time_limit, a.timeout)), flush=True)


if __name__ == "__main__":
    main()
