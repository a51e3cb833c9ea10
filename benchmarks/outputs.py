"""What reading a model and writing its outputs take, in one process (medians of --repeat runs, alternating).

    python benchmarks/outputs.py /tmp/bb/XL/model.toml --repeat 3 --jobs 2

Reads the model --repeat times (``load_inputs``: read and validate), plans it once (``planner plan``'s path: the
whole-term decision, the plan, its memo; --jobs local pricing processes), then writes its outputs --repeat times:
allocation.csv and fleet.csv by ``planner.core.csvwrite`` and by pandas' ``to_csv`` (the text made inert the same
way), alternating, with their bytes compared; the workbook; plan.json. One JSON line per figure: medians in
seconds, and the ratio of pandas' CSV time to the writer's. A phase's own time, so that the machine's noise
(several seconds on a two-minute end-to-end run) does not hide a change of one or two seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2, help="local pricing processes for the one plan (default 2)")
    a = ap.parse_args()

    from planner.core.csvsafe import inert_frame
    from planner.core.executors import LocalExecutor
    from planner.core.frames import time_text
    from planner.pipeline.run import load_inputs, make_plan, period_csv, with_memo
    from planner.pipeline.whole_term import plan_over_term
    from planner.report import plan_json, write_workbook
    from planner.report.showback import kept
    from planner.solve.workers import keep_pricers

    reads = [_timed(lambda: load_inputs(a.model)) for _ in range(a.repeat)]
    print(json.dumps({"model": str(a.model), "figure": "read and validate", "median_s": round(statistics.median(reads), 2),
                      "runs_s": [round(x, 2) for x in reads]}), flush=True)
    inp = load_inputs(a.model)
    pool = LocalExecutor(a.jobs)
    try:
        with keep_pricers(inp):
            plan = plan_over_term(inp, make_plan, timings={}, executor=pool)
            plan = with_memo(plan, executor=pool)
    finally:
        pool.close()

    def pandas_csv(frame, path):
        out = frame.copy(deep=False)
        out["period"] = time_text(out["period"], "%Y-%m-%dT%H:%M")
        inert_frame(out).to_csv(path, index=False, float_format="%.10g")

    with tempfile.TemporaryDirectory(prefix="outputs-") as tmp, kept(plan):
        tmp = Path(tmp)
        for name, frame in (("allocation.csv", plan.allocation), ("fleet.csv", plan.fleet)):
            ours, theirs = [], []
            for _ in range(a.repeat):
                ours.append(_timed(lambda: period_csv(frame, tmp / "ours.csv")))
                theirs.append(_timed(lambda: pandas_csv(frame, tmp / "pandas.csv")))
            same = (tmp / "ours.csv").read_bytes() == (tmp / "pandas.csv").read_bytes()
            print(json.dumps({"model": str(a.model), "figure": name, "rows": len(frame),
                              "csvwrite_s": round(statistics.median(ours), 2),
                              "pandas_s": round(statistics.median(theirs), 2),
                              "ratio": round(statistics.median(theirs) / statistics.median(ours), 2),
                              "same_bytes": same}), flush=True)
            if not same:
                sys.exit(f"{name}: the writer's bytes differ from pandas'")
        book = [_timed(lambda: write_workbook(plan, tmp / "plan.xlsx")) for _ in range(a.repeat)]
        text = [_timed(lambda: (tmp / "plan.json").write_text(plan_json(plan), encoding="utf-8"))
                for _ in range(a.repeat)]
        print(json.dumps({"model": str(a.model), "figure": "plan.xlsx", "median_s": round(statistics.median(book), 2)}))
        print(json.dumps({"model": str(a.model), "figure": "plan.json", "median_s": round(statistics.median(text), 2)}))


if __name__ == "__main__":
    main()
