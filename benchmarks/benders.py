"""Per-period multi-cut Benders against the monolithic model and the one-cut-per-month scheme, on one model.

    python benchmarks/generate.py /tmp/bb/L --size L
    python benchmarks/benders.py /tmp/bb/L/model.toml --how mono new old [--time-limit 600] [--chunk week]

Prints, per method, the status, the proven gap, iterations, seconds and the peak memory of this process
(ru_maxrss), after the machine's load average: these machines are shared, read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time


def main() -> None:
    """Solve the model each way asked and print one JSON line per way."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model")
    ap.add_argument("--how", nargs="+", default=["mono", "new"], choices=["mono", "new", "old"])
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--chunk", default="week", help="batches of the pricing LPs: month, week, day or N periods")
    args = ap.parse_args()
    from planner.pipeline.run import load_inputs

    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    t0 = time.perf_counter()
    inp = load_inputs(args.model)
    print(f"read and validated in {time.perf_counter() - t0:.1f} s: {inp.T} periods x {inp.K} classes x {inp.P} pools, "
          f"{len(inp.commitments)} purchase rows")
    for how in args.how:
        t0 = time.perf_counter()
        out = {"how": how}
        if how == "mono":
            from planner.model import build_model
            from planner.solve.monolithic import solve

            r = solve(build_model(inp), "highs", args.time_limit, 1e-4, None)
            out.update(status=r.status.value, objective=r.objective, gap=r.mip_gap)
        else:
            if how == "old":
                from planner.solve.decompose_monthly import solve_benders

                kw = {}
            else:
                from planner.solve.decompose import solve_benders

                kw = {"chunk": int(args.chunk) if args.chunk.isdigit() else args.chunk}
            bd = solve_benders(inp, mip_gap=1e-4, time_limit_s=args.time_limit, **kw)
            out.update(status=bd.status, objective=bd.upper, lower=bd.lower, gap=bd.gap, iterations=bd.iterations,
                       thetas=bd.chunks)
        out["seconds"] = round(time.perf_counter() - t0, 1)
        out["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        print(json.dumps(out))


if __name__ == "__main__":
    main()
