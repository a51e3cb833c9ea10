"""A batch's LP solved in parts against the same LP solved whole (planner.solve.recourse.split_parts).

    python benchmarks/parts.py MODEL [--batches 4] [--repeat 3] [--plan]

Builds the model's first ``--batches`` weekly batches and prices each pass both ways, in one process: cold at the
purchases, warm with the demand 20 % lower (the memo's downside: many simplex iterations), warm with the purchases
3 % lower (a late Benders pass: few; without ``--plan`` the same point), and a plan's pricing with its cuts at the
same point (no iteration). The purchases are none, or with ``--plan`` the model's own plan's (one solve first). Prints each pass's seconds (the
median of ``--repeat``), its simplex iterations and whether every value agrees; figures, never asserts (a shared
machine is noisy).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--plan", action="store_true", help="price at the model's own plan's purchases (solved first)")
    a = ap.parse_args()

    from planner.pipeline.run import load_inputs, make_plan
    from planner.solve import recourse
    from planner.solve.decompose import chunk_index, cut_groups

    inp = load_inputs(a.model)
    n = np.zeros(len(inp.commitments))
    if a.plan:
        n = make_plan(inp, risk=False, shadow=False).purchases["units"].to_numpy(float)
    chunks = chunk_index(inp, "week")[:a.batches]
    parts = [recourse.build_batch(inp, c, cut_groups(inp)) for c in chunks]
    whole = [replace(b, parts=None) for b in parts]
    split = [0 if b.parts is None else int(b.parts[0].max()) + 1 for b in parts]
    print(f"# {a.model}: {len(parts)} weekly batches, {sum(b.shape[0] for b in parts):,} columns, parts {split}")
    if not any(split):
        print("# no batch is large enough to be split (PART_COLUMNS = %d)" % recourse.PART_COLUMNS)
    lower = np.floor(n * 0.97)  # (no purchases without --plan: that pass is then the same point)

    def passes(batches):
        cold = [recourse.price(b, n, None, solution=True, portable=False) for b in batches]
        return {
            "cold, the plan's LP": lambda: [recourse.price(b, n, None, solution=True, portable=False) for b in batches],
            "demand x0.8, warm (plan's LP)": lambda: [recourse.price(b, n, c.basis, solution=True, scale=0.8,
                                                                     portable=False) for b, c in zip(batches, cold)],
            ("purchases x0.97, warm (cuts)" if n.any() else "same point, warm (cuts)"): lambda: [recourse.price(b, lower, c.basis, portable=False)
                                                    for b, c in zip(batches, cold)],
            "plan + cuts, same point": lambda: [recourse.price(b, n, c.basis, solution="plan+cuts", portable=False)
                                                for b, c in zip(batches, cold)],
        }

    ours, theirs = passes(parts), passes(whole)
    print("| pass | whole (s) | in parts (s) | ratio | iterations whole / parts | group values agree |")
    print("|---|---|---|---|---|---|")
    for name in ours:
        times = {}
        out = {}
        for label, fn in (("whole", theirs[name]), ("parts", ours[name])):
            ts = []
            for _ in range(a.repeat):
                t = time.perf_counter()
                out[label] = fn()
                ts.append(time.perf_counter() - t)
            times[label] = statistics.median(ts)
        agree = all(np.allclose(x.values, y.values, rtol=1e-9, atol=1e-6) for x, y in zip(out["whole"], out["parts"]))
        # (each cut group's value: where optima tie the columns and cuts may differ, the values cannot)
        its = [sum(r.iterations for r in out[k]) for k in ("whole", "parts")]
        print(f"| {name} | {times['whole']:.2f} | {times['parts']:.2f} | {times['parts'] / times['whole']:.2f} | "
              f"{its[0]:,} / {its[1]:,} | {agree} |")


if __name__ == "__main__":
    main()
