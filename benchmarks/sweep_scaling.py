"""How a sweep's wall time scales with workers: 1 local process, 2 local processes, Dask LocalCluster of 2.

    python benchmarks/sweep_scaling.py [--points 200] [--model models/example.toml]

Prints wall seconds, points per minute, the speed-up of 2 local workers over 1, and the Dask run's wall
time against the 2-process local run. Also the import time of `planner` and a notebook plan of the
example (median of 3). Figures, not assertions: the machine is shared.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--model", default=str(ROOT / "models" / "example.toml"))
    ap.add_argument("--skip-sweep", action="store_true")
    args = ap.parse_args()

    imports = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", "import time; t=time.perf_counter(); import planner; "
                              "print(time.perf_counter()-t)"], capture_output=True, text=True, check=True)
        imports.append(float(out.stdout))
    print(f"import planner: median {statistics.median(imports) * 1000:.0f} ms (5 runs)")

    import planner

    walls = []
    for _ in range(3):
        t0 = time.perf_counter()
        p = planner.plan(args.model, risk=False)
        walls.append(time.perf_counter() - t0)
    print(f"notebook plan of {Path(args.model).name} ({p.solve.backend}): median {statistics.median(walls):.2f} s "
          f"(read+validate+build+solve+extract; solve {p.solve.seconds:.2f} s), {p.status.value}")
    if args.skip_sweep:
        return

    from planner.core.executors import DaskExecutor, LocalExecutor
    from planner.whatif.sweep import SweepSpec, run_sweep

    inp = planner.load_inputs(args.model)
    spec = SweepSpec({"spot_price": [0.5 + 1.5 * i / (args.points - 1) for i in range(args.points)]})
    results = {}
    for label, make in (("local x1", lambda: LocalExecutor(1)), ("local x2", lambda: LocalExecutor(2)),
                        ("dask x2", lambda: DaskExecutor(jobs=2))):
        with make() as ex:
            t0 = time.perf_counter()
            r = run_sweep(inp, spec, backend="highs", executor=ex, progress=False)
            wall = time.perf_counter() - t0
        totals = [round(pt.get("total_usd", float("nan")), 2) for pt in r.points]
        results[label] = (wall, totals)
        print(f"{label:9s}: {args.points} points in {wall:7.1f} s ({60 * args.points / wall:5.1f} points/min), "
              f"{len(r.ok_points)} solved")
    one, two, dask = (results[k][0] for k in ("local x1", "local x2", "dask x2"))
    print(f"speed-up of 2 local workers over 1: {one / two:.2f}x")
    print(f"dask x2 against local x2: {100 * (dask / two - 1):+.1f} % wall time")
    print(f"same totals in all three runs: {results['local x1'][1] == results['local x2'][1] == results['dask x2'][1]}")


if __name__ == "__main__":
    main()
