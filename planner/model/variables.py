"""Decision variables, created only where they can be non-zero.

Each family is a DataFrame of integer keys plus ``col``, the variable's
position in ``PlanModel.variables``:

- ``n[c]``     integer >= 0, reserved instances of option c (a row of ``inputs.reserved``);
- ``x[k,p,b]`` reserved GPUs used: pool p allowed for class k (s > 0), d[k,b] > 0,
  and the pool sells reserved options or holds inventory in block b;
- ``y[k,p,b]`` on-demand GPUs: s > 0, d > 0, the pool has an on-demand price;
- ``z[k,p,b]`` spot GPUs: g[k,p] > 0 (which needs s > 0, phi_k > 0 and a spot price), d > 0;
- ``u[k,b]``   unmet demand where d[k,b] > 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pulp import LpContinuous, LpInteger, LpProblem

from . import naming
from .blocks import Blocks
from ..inputs import PlanInputs


def _add(prob: LpProblem, variables: list, family: str, keys: dict[str, np.ndarray], cat) -> pd.DataFrame:
    frame = pd.DataFrame(keys)
    start = len(variables)
    for name in naming.names(family, *keys.values()):
        variables.append(prob.add_variable(name, lowBound=0, cat=cat))
    frame["col"] = np.arange(start, len(variables))
    return frame


def define_variables(prob: LpProblem, inp: PlanInputs, blocks: Blocks,
                     fixed_reserved: np.ndarray | None = None) -> tuple[list, dict[str, pd.DataFrame]]:
    """Create every family; ``fixed_reserved`` (instances per reserved option) fixes n, for recourse-only runs."""
    variables: list = []
    fam: dict[str, pd.DataFrame] = {}
    fam["n"] = _add(prob, variables, "n", {"c": np.arange(len(inp.reserved))}, LpInteger)
    fam["n"]["p"] = inp.reserved["pool"].to_numpy()
    if fixed_reserved is not None:
        for col, count in zip(fam["n"]["col"].tolist(), np.asarray(fixed_reserved, float).tolist()):
            variables[col].lowBound = variables[col].upBound = count

    active = blocks.demand > 0  # (K, B)
    allowed = inp.speed > 0  # (K, P)
    base = allowed[:, :, None] & active[:, None, :]  # (K, P, B)
    has_res = inp.pools["has_res"].to_numpy()
    x_mask = base & (has_res[None, :, None] | (blocks.inventory > 0)[None, :, :])
    y_mask = base & inp.pools["has_od"].to_numpy()[None, :, None]
    z_mask = (inp.goodput > 0)[:, :, None] & active[:, None, :]
    for family, mask in (("x", x_mask), ("y", y_mask), ("z", z_mask)):
        k, p, b = np.nonzero(mask)
        fam[family] = _add(prob, variables, family, {"k": k, "p": p, "b": b}, LpContinuous)
    k, b = np.nonzero(active)
    fam["u"] = _add(prob, variables, "u", {"k": k, "b": b}, LpContinuous)
    return variables, fam
