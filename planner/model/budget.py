"""Budget rows: the plan's expected cost (reserved + on-demand + spot, no penalty) under the model file's caps.

``max_total_usd``: one row, the objective's cost coefficients of every column but the shortfall.
Monthly caps: one row per capped calendar month; a purchase contributes its amortised cost of the
hours it is active in that month (``m r sum_{t in month} a[c,t] h_t``), or with ``accounting =
"full_term"`` the cash it pays that month (hourly fees of its active hours, plus its upfront in the
month it is bought); on-demand and spot their expected cost in the month's periods. A period is
counted in the month it starts in. Monthly rows need one block per period (periods are not
merged: :func:`planner.model.build_model` turns merging off when a month is capped).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.inputs.arrays import PlanInputs
from planner.model.blocks import Blocks
from planner.model.rows import LE, Rows


def define_budget_constraints(out: Rows, inp: PlanInputs, blocks: Blocks, fam: dict[str, pd.DataFrame],
                              cost: np.ndarray) -> int:
    """Add the ``budget`` rows; returns how many."""
    budget = inp.config.budget
    rows, cols, coefs, rhs, labels = [], [], [], [], []
    spend = [f for f in ("n", "x", "xd", "r", "v") if f in fam and len(fam[f])]  # v: savings plans' credit
    if budget.max_total_usd is not None:
        c = np.concatenate([fam[f]["col"].to_numpy() for f in spend]) if spend else np.zeros(0, int)
        keep = cost[c] != 0
        rows.append(np.zeros(int(keep.sum()), int))
        cols.append(c[keep])
        coefs.append(cost[c][keep])
        rhs.append(budget.max_total_usd)
        labels.append("budget_total")
    if budget.monthly:
        month_of_period = np.asarray(inp.periods.strftime("%Y-%m"))
        of = blocks.of  # (S, T) -> block; unmerged: each block is one (scenario, period)
        block_month = np.empty(blocks.B, dtype=object)
        block_month[of.reshape(-1)] = np.broadcast_to(month_of_period, of.shape).reshape(-1)
        res = inp.commitments
        for month in sorted(set(month_of_period)):
            cap = budget.month_cap(month)
            if cap is None:
                continue
            r = len(rhs)
            for f in ("x", "xd", "r", "v"):
                if f in fam and len(fam[f]):
                    sel = fam[f][block_month[fam[f]["b"].to_numpy()] == month]
                    c = sel["col"].to_numpy()
                    nz = cost[c] != 0
                    rows.append(np.full(int(nz.sum()), r))
                    cols.append(c[nz])
                    coefs.append(cost[c][nz])
            if len(fam["n"]) and len(res):
                in_month = month_of_period == month
                hours_in = inp.active[:, in_month] @ inp.hours[in_month]
                if inp.config.commitments.accounting == "full_term":  # the month's cash: fees, upfront when bought
                    bought_in = pd.DatetimeIndex(res["purchase_date"]).strftime("%Y-%m") == month
                    per = res["m"].to_numpy(float) * (res["hourly_usd"].to_numpy(float) * hours_in
                                                      + np.where(bought_in, res["upfront_usd"].to_numpy(float), 0.0))
                else:  # the month's share of the amortised cost
                    per = res["m"].to_numpy(float) * res["r"].to_numpy(float) * hours_in
                per = per * inp.reserved_weight  # expected: a purchase that waits is made in its node only
                n = fam["n"]
                coef = per[n["c"].to_numpy()] if "c" in n else per[: len(n)]
                nz = coef != 0
                rows.append(np.full(int(nz.sum()), r))
                cols.append(n["col"].to_numpy()[nz])
                coefs.append(coef[nz])
            rhs.append(cap)
            labels.append(f"budget_month_{month.replace('-', '_')}")
    if not rhs:
        return 0
    return out.add("budget", (np.arange(len(rhs)),), np.concatenate(rows), np.concatenate(cols),
                   np.concatenate(coefs), LE, np.array(rhs, float), labels=labels)


def budget_activity(model, values: np.ndarray) -> pd.DataFrame:
    """Per budget row of a solved model: ``name``, ``cap_usd``, ``spend_usd`` (its left-hand side), ``binding``."""
    for f in model.constraints.families:
        if f.name == "budget":
            spend = np.bincount(f.rows, weights=f.coefs * values[f.cols], minlength=f.n)
            binding = spend >= f.rhs - 1e-6 * np.maximum(1.0, np.abs(f.rhs))
            return pd.DataFrame({"name": list(f.labels), "cap_usd": f.rhs, "spend_usd": spend, "binding": binding})
    return pd.DataFrame(columns=["name", "cap_usd", "spend_usd", "binding"])
