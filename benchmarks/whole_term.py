"""Whole-term judgement against the horizon's (issue 34 item 1): what each set of purchases made now costs over the
whole term, on demand paths the plan did not see.

    python benchmarks/whole_term.py [MODEL ...] [--history FILE]     (default: models/example.toml)

For each model, three sets of purchases dated in the horizon: ``term`` (what ``planner plan`` buys: judged on
whole-term demand), ``horizon`` (``[term] judge = "horizon"``: judged on the demand given, amortised: on the
bundled cases this is the break-even rule a user runs, see benchmarks/README_backtest.md) and ``none``. Each is
fixed and the rest of the term re-solved (later tranches each quarter, on-demand, spot) on single *truth*
paths past the horizon: the horizon's last quarter held flat, falling 15 / 30 %/year, growing 15 / 30 %/year,
and a bust (falling 60 %/year). Printed: the cost over the term of each, and each strategy's excess over the
best of the three per truth, in %. Nothing is asserted; solve times are the machine's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner import load_inputs, make_plan  # noqa: E402
from planner.inputs import whole_term  # noqa: E402
from planner.pipeline.whole_term import plan_over_term  # noqa: E402

TRUTHS = {"flat": 0.0, "-15 %/y": -0.15, "-30 %/y": -0.30, "+15 %/y": 0.15, "+30 %/y": 0.30, "bust -60 %/y": -0.60}


def truth_inputs(inp, rate: float):
    """``inp`` carried to the end of its terms on one path: the last quarter's level moving ``rate`` a year
    (linear in the level, as the band's branches; two identical branches)."""
    lv = np.zeros(inp.K)
    basis = whole_term.TermBasis(source="drift", growth=lv, band=0.0, branches=2, step="month", note="truth")
    ext = whole_term.extend(inp, basis)
    E = inp.T
    years = ((ext.periods[E:] - ext.periods[E]) / pd.Timedelta(days=365.25)).to_numpy(float)
    demand = ext.demand.copy()
    demand[:, :, E:] *= np.maximum(0.0, 1.0 + rate * years)[None, None, :]
    from planner.inputs.arrays import with_demand

    return with_demand(ext, demand, ext.scenarios, ext.probability)


def cost_over_term(ext, inp, units_now: np.ndarray) -> float:
    """The truth's cost over the term with the purchases dated in the horizon fixed at ``units_now`` (per row of
    ``inp.commitments``), the later tranches and the rest re-solved."""
    res_big, res = ext.commitments, inp.commitments
    key = ["pool", "option", "purchase_date"]
    index = {tuple(r): i for i, r in enumerate(res[key].astype(str).itertuples(index=False, name=None))}
    pins = [(i, units_now[index[tuple(r)]]) for i, r in enumerate(res_big[key].astype(str).itertuples(index=False, name=None))
            if tuple(r) in index]

    def fix(model):
        n = model.families["n"]
        col = dict(zip(n["c"].to_numpy(), n["col"].to_numpy()))
        for j, (c, u) in enumerate(pins):
            if c in col:
                model.add_constraint(f"now{j}x", {int(col[c]): 1.0}, "==", float(u))

    p = make_plan(ext, risk=False, shadow=False, extend=fix, mip_gap=1e-4)
    return float(p.cost["total"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*", default=["models/example.toml"])
    ap.add_argument("--history", default=None)
    args = ap.parse_args()
    for m in args.models:
        inp = load_inputs(m)
        t0 = time.perf_counter()
        term = plan_over_term(inp, make_plan, risk=False, history=args.history)
        t_term = time.perf_counter() - t0
        horizon = make_plan(inp, risk=False)
        bought = {"term": term.purchases["units"].to_numpy(float),
                  "horizon": horizon.purchases["units"].to_numpy(float),
                  "none": np.zeros(len(inp.commitments))}
        gpus = {k: float((v * inp.commitments["m"].to_numpy(float)).sum()) for k, v in bought.items()}
        print(f"\n{m}: GPUs bought in the horizon: " + ", ".join(f"{k} {g:,.0f}" for k, g in gpus.items())
              + f"  (whole-term plan {t_term:.1f} s; {term.term['note'] if term.term else ''})")
        rows = []
        for name, rate in TRUTHS.items():
            ext = truth_inputs(inp, rate)
            costs = {k: cost_over_term(ext, inp, u) for k, u in bought.items()}
            best = min(costs.values())
            rows.append({"truth": name, **{f"{k} $M": v / 1e6 for k, v in costs.items()},
                         **{f"{k} +%": 100 * (v - best) / best for k, v in costs.items()}})
        table = pd.DataFrame(rows)
        print(table.to_string(index=False, float_format=lambda x: f"{x:,.2f}"))
        print("median excess over the best, %: " + ", ".join(
            f"{k} {table[f'{k} +%'].median():.2f}" for k in bought))


if __name__ == "__main__":
    main()
