"""The objective: expected cost over the horizon (USD), shortfall penalty included.

    min  sum_{p,c,s} m_p n[p,c,s] r[p,c] a[c,s]     (amortised; full_term: m_p n (hourly L + upfront - residual))
       + sum_b w_b sum_{k,p} (od_p y[k,p,b] + sp_p z[k,p,b])
       + M sum_{k,b} w_b u[k,b]

with w_b the block's probability-weighted hours (sum over its periods of
probability x h_t). Inventory is sunk and not charged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .blocks import Blocks
from ..inputs import PlanInputs


def reserved_cost_per_instance(inp: PlanInputs, accounting: str | None = None) -> np.ndarray:
    """What one instance of each purchase row costs in the objective.

    "amortised": m r a (a = the horizon hours in which it is active: m r H for a purchase at the first
    period that outlives the horizon); "full_term": m (hourly L + upfront - residual), its whole liability.
    """
    from ..ladder import full_term_usd_per_gpu

    res = inp.reserved
    accounting = accounting or inp.config.commitments.accounting
    m = res["m"].to_numpy(float)
    if accounting == "full_term":
        return m * full_term_usd_per_gpu(res)
    hours_active = inp.active.astype(float) @ inp.hours if len(res) else np.zeros(0)
    return m * res["r"].to_numpy(float) * hours_active


def objective_coefficients(inp: PlanInputs, blocks: Blocks, fam: dict[str, pd.DataFrame],
                           n_vars: int) -> np.ndarray:
    """The objective coefficient of every column (USD over the horizon), shortfall penalty included."""
    c = np.zeros(n_vars)
    c[fam["n"]["col"]] = reserved_cost_per_instance(inp)
    od, sp = inp.pools["od"].to_numpy(), inp.pools["sp"].to_numpy()
    c[fam["y"]["col"]] = blocks.weight[fam["y"]["b"]] * od[fam["y"]["p"]]
    c[fam["z"]["col"]] = blocks.weight[fam["z"]["b"]] * sp[fam["z"]["p"]]
    c[fam["u"]["col"]] = blocks.weight[fam["u"]["b"]] * inp.penalty
    return c
