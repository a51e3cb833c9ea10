"""The fleet a rule sees at a cut-off: the cheapest term row per class, the GPUs a row's classes need, what is
owned or on order, and the room left under the reserved cap (shared by the rules and the backtest's strategies)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.inputs import commitments
from planner.inputs.arrays import PlanInputs


def cheapest_rows(inp: PlanInputs) -> dict[int, list[int]]:
    """Per purchase row: the classes whose cheapest reserved option (per useful GPU-hour) it is."""
    res = inp.commitments
    q = inp.q_reserved
    pools = res["pool"].to_numpy(int)
    r = np.where(term_rows(res), res["r"].to_numpy(float), np.inf)  # the rules buy terms, never blocks
    out: dict[int, list[int]] = {}
    for k in range(inp.K):
        useful = q[k, pools]
        if not (useful > 0).any():
            continue
        ref = np.where(useful > 0, r / np.where(useful > 0, useful, 1.0), np.inf)
        if np.isfinite(ref).any():
            out.setdefault(int(np.argmin(ref)), []).append(k)
    return out


def term_rows(res: pd.DataFrame) -> np.ndarray:
    """Rows of the commitments table that are term commitments (the rule-based strategies buy only these)."""
    return commitments.is_term_row(res)


def fleet_series(inp: PlanInputs, demand: np.ndarray, row: int, classes: list[int]) -> np.ndarray:
    """GPUs of the row's pool the classes need per period: demand x (1 + headroom) / useful share."""
    p = int(inp.commitments["pool"].iat[row])
    q = inp.q_reserved[:, p]
    return sum(demand[k] * (1 + inp.headroom[k]) / q[k] for k in classes)


def owned_now(inp: PlanInputs, on_order: np.ndarray | None = None) -> np.ndarray:
    """GPUs owned per pool at the cut-off: active now (inventory file + earlier purchases), or ``on_order``
    when given (per pool: earlier purchases not yet expired, active or still in their lead time)."""
    now = inp.inventory[:, 0].copy() if inp.T else np.zeros(inp.P)
    return now if on_order is None else np.maximum(now, on_order)


def room(inp: PlanInputs, owned: np.ndarray) -> np.ndarray:
    """Per pool: reserved GPUs that may still be bought under the price sheet's reserved cap (max_gpus)."""
    cap = inp.pools["cap_res"].to_numpy(float) if "cap_res" in inp.pools else np.full(inp.P, np.nan)
    return np.where(np.isnan(cap), np.inf, np.clip(cap - owned, 0.0, None))
