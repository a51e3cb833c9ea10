"""The decomposition's LP phase with and without in-out stabilisation (issue 37): iterations, master and pricing
seconds, the bound's history, the proven gap and the objective, per setting, on one model judged on its horizon.

    python benchmarks/generate.py /tmp/bb/1Y --size 3Y --hours 8760     # a year hourly, 20 classes, monthly buys
    python benchmarks/master.py /tmp/bb/1Y/model.toml [--in-out 1.0 0.5] [--jobs 1]

``--in-out 1.0`` is plain Kelley cutting planes (the master's point priced every iteration); 0.5 prices halfway
between the best priced point and the master's. Each setting runs in this process after the other (the same
inputs); the machine's load is printed first (shared machines: read the ratios).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--in-out", type=float, nargs="+", default=[1.0, 0.5])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--mip-gap", type=float, default=None, help="the gap to prove (default: the model file's)")
    ap.add_argument("--time-limit", type=float, default=None, help="the decomposition's time limit (seconds)")
    ap.add_argument("--integer-theta", choices=["group", "batch"], default=None,
                    help="the integer master's thetas: the LP phase's groups or one per batch (summed cuts)")
    ap.add_argument("--loop", action="store_true",
                    help="run the Benders loop alone (no plan, memo or workbook) and print every iteration")
    a = ap.parse_args()
    from planner import load_inputs, make_plan
    from planner.solve import decompose

    inp = load_inputs(a.model)
    inp = replace(inp, config=replace(inp.config, term=replace(inp.config.term, judge="horizon")))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {inp.T} periods x {inp.K} classes x "
          f"{inp.P} pools, {len(inp.commitments)} purchase rows")
    if a.integer_theta:
        decompose.INTEGER_THETA = a.integer_theta
    for lam in a.in_out:
        decompose.IN_OUT = lam
        if a.loop:
            _loop_only(inp, a, lam)
            continue
        t0 = time.perf_counter()
        from planner.core.executors import make_executor

        plan = make_plan(inp, risk=False, shadow=False, executor=make_executor("local", jobs=a.jobs),
                         mip_gap=a.mip_gap)
        wall = time.perf_counter() - t0
        b = plan.stats.get("benders") or {}
        ph = b.get("phases_s", {})
        print(f"in-out {lam:.2f}: {wall:7.1f} s, status {plan.status}, gap {plan.solve.mip_gap:.2e}, objective "
              f"{plan.objective:,.2f}, iterations {b.get('iterations')}, integer masters "
              f"{b.get('integer_master_solves')}, cuts kept {b.get('cuts')}, master "
              f"{ph.get('master', float('nan')):.1f} s (integer {ph.get('integer', 0.0):.1f} s), pricing "
              f"{ph.get('pricing', float('nan')):.1f} s, rounding gap {ph.get('rounding_gap', float('nan')):.1e}", flush=True)

def _loop_only(inp, a, lam) -> None:
    """The Benders loop alone: every iteration's bound and incumbent, then the phases' seconds."""
    from planner.core.executors import make_executor
    from planner.solve.decompose import solve_benders

    t0 = time.perf_counter()

    def progress(it, bound, best):
        print(f"  it {it:3d} {time.perf_counter() - t0:7.1f} s  bound {bound:,.2f}  incumbent {best:,.2f}  "
              f"gap {(best - bound) / abs(best) if best < float('inf') else float('inf'):.2e}", flush=True)
    gap = a.mip_gap if a.mip_gap is not None else inp.config.solver.mip_gap
    bd = solve_benders(inp, chunk="week", mip_gap=gap, time_limit_s=a.time_limit, progress=progress,
                       executor=make_executor("local", jobs=a.jobs))
    ph = {k: round(v, 3) if k == "rounding_gap" else round(v, 1) for k, v in bd.phases.items()}
    print(f"in-out {lam:.2f}: {time.perf_counter() - t0:7.1f} s, {bd.status}, gap {bd.gap:.2e}, iterations "
          f"{bd.iterations}, integer masters {bd.integer_master}, cuts kept {bd.cuts}, dropped {getattr(bd, 'cuts_dropped', None)}, "
          f"thetas {bd.chunks}, "
          f"phases {ph}", flush=True)


if __name__ == "__main__":
    main()
