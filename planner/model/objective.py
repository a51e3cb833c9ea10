"""The objective: expected cost over the horizon (USD), shortfall penalty included.

    min  sum_{p,c} m_p n[p,c] r[p,c] H
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


def objective_coefficients(inp: PlanInputs, blocks: Blocks, fam: dict[str, pd.DataFrame],
                           n_vars: int) -> np.ndarray:
    """The objective coefficient of every column (USD over the horizon), shortfall penalty included."""
    c = np.zeros(n_vars)
    res = inp.reserved
    c[fam["n"]["col"]] = (res["m"] * res["r"]).to_numpy() * inp.horizon_hours
    od, sp = inp.pools["od"].to_numpy(), inp.pools["sp"].to_numpy()
    c[fam["y"]["col"]] = blocks.weight[fam["y"]["b"]] * od[fam["y"]["p"]]
    c[fam["z"]["col"]] = blocks.weight[fam["z"]["b"]] * sp[fam["z"]["p"]]
    c[fam["u"]["col"]] = blocks.weight[fam["u"]["b"]] * inp.penalty
    return c
