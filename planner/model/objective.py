"""The objective: expected cost over the horizon (USD), shortfall penalty included.

    min  sum_{p,c,s} m_p n[p,c,s] r[p,c] a[c,s]     (amortised; full_term: m_p n (hourly L + upfront - residual))
       + sum_b w_b sum_{j,k,p} price_{j,p} r[j,k,p,b] - sum_b w_b sum_{c,p} od_p v[c,p,b]
       + sum_{k,b} M_k w_b u[k,b]      (M_k: the class's shortfall_penalty, else the solver's M)

with w_b the block's probability-weighted hours (sum over its periods of
probability x h_t). Inventory is sunk and not charged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.model.blocks import Blocks
from planner.inputs.arrays import PlanInputs


def reserved_cost_per_instance(inp: PlanInputs, accounting: str | None = None) -> np.ndarray:
    """What one instance of each purchase row costs in the objective.

    "amortised": m r a (a = the horizon hours in which it is active: m r H for a purchase at the first
    period that outlives the horizon); "full_term": m (hourly L + upfront - residual), its whole liability.
    A purchase that waits for information (:mod:`planner.inputs.tree`) is made in its node's scenarios only: its
    expected cost is that times its node's probability.
    """
    from planner.inputs.ladder import full_term_usd_per_gpu

    res = inp.commitments
    accounting = accounting or inp.config.commitments.accounting
    m = res["m"].to_numpy(float)
    weight = inp.reserved_weight
    if accounting == "full_term":
        return weight * m * full_term_usd_per_gpu(res)
    hours_active = np.asarray(inp.active, float) @ inp.hours if len(res) else np.zeros(0)
    return weight * m * res["r"].to_numpy(float) * hours_active


def first_stage_cost(inp: PlanInputs) -> np.ndarray:
    """What one unit of each commitments-table row costs in the objective: its cost, or under
    ``[finance] objective = "npv"`` the NPV of its cash (:func:`planner.inputs.finance.objective_npv_per_gpu`)."""
    f = inp.config.finance
    if not f.npv:
        return reserved_cost_per_instance(inp)
    from planner.inputs.finance import objective_npv_per_gpu

    res = inp.commitments
    per_gpu = objective_npv_per_gpu(res, inp.active, inp.hours, inp.discount,
                                    inp.discount_origin or inp.periods[0].to_period("M"),
                                    f.discount_rate, inp.config.commitments.accounting)
    return inp.reserved_weight * res["m"].to_numpy(float) * per_gpu


def objective_coefficients(inp: PlanInputs, blocks: Blocks, fam: dict[str, pd.DataFrame],
                           n_vars: int, npv: bool = False) -> np.ndarray:
    """The objective coefficient of every column (USD over the horizon), shortfall penalty included.

    ``npv``: the NPV of each column's cash at ``[finance] discount_rate`` instead (purchases by
    :func:`first_stage_cost`, the per-period columns by their blocks' discounted weights).
    """
    c = np.zeros(n_vars)
    c[fam["n"]["col"]] = first_stage_cost(inp) if npv else reserved_cost_per_instance(inp)
    w = blocks.npv_weight if npv and blocks.npv_weight is not None else blocks.weight
    price = inp.rented_price  # (J, P)
    r = fam["r"]
    c[r["col"]] = w[r["b"]] * price[r["j"], r["p"]]
    c[fam["u"]["col"]] = w[fam["u"]["b"]] * inp.penalty_by_class[fam["u"]["k"]]
    if "v" in fam and len(fam["v"]):  # covered usage is paid by the savings plan, not at the on-demand price
        c[fam["v"]["col"]] = -w[fam["v"]["b"]] * inp.pools["od"].to_numpy()[fam["v"]["p"]]
    return c
