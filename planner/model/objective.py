"""The objective: expected cost over the horizon (USD), shortfall penalty included.

    min  sum_{p,c,s} m_p n[p,c,s] r[p,c] a[c,s]     (amortised; full_term: m_p n (hourly L + upfront - residual))
       + sum_b w_b sum_{j,k,p} price_{j,p,b} r[j,k,p,b] - sum_b w_b sum_{c,p} od_{p,b} v[c,p,b]
       + sum_{k,b} M_k w_b u[k,b]      (M_k: the class's shortfall_penalty, else the solver's M)

with w_b the block's probability-weighted hours (sum over its periods of
probability x h_t). Inventory is sunk and not charged. price_{j,p,b} is the price sheet's price, or
the block's own where a forward curve or a scenario's price path dates it (planner.inputs.price_paths).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.model.blocks import Blocks
from planner.inputs import rented
from planner.inputs.activity import matvec
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
    hours_active = matvec(inp.active, inp.hours) if len(res) else np.zeros(0)
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


def cost_by_scenario(inp: PlanInputs, cost=None) -> np.ndarray | None:
    """(R, S) what one unit of each commitments-table row costs in scenario s at that scenario's own prices (a
    price path: :mod:`planner.inputs.price_paths`), undivided by the row's probability; None when commitment
    prices do not differ by scenario. The objective charges a row its scenarios' probability-weighted mean of
    these (its expected cost); a scenario's own cost (CVaR, the scenario costs) takes its own column.
    ``cost``: the per-row cost function (default :func:`first_stage_cost`)."""
    from dataclasses import replace

    paths = inp.price_paths
    R, S = len(inp.commitments), len(inp.scenarios)
    if paths is None or not paths.reserved or not R:
        return None
    cost = cost or first_stage_cost
    weight = np.asarray(inp.reserved_weight, float)
    out = np.zeros((R, S))
    for s in range(S):
        one = np.zeros((R, S), dtype=bool)
        one[:, s] = True
        priced = replace(inp, commitments=paths.price_commitments(inp.commitments, one, inp.probability))
        out[:, s] = np.divide(cost(priced), weight, out=np.zeros(R), where=weight > 0)
    return out


SPEND_TIE_USD = 1e-4  # per GPU-hour covered by a savings plan: a tie-break, not a cost. An on-demand GPU-hour the
# plan's unused dollars cover costs nothing net, so without it a solve could run GPUs beyond demand there (coverage,
# utilisation and stranded dollars overstated); with it covered usage saves on-demand less 1e-4, and none is idle
BACKFILL_TIE_USD = 1e-4  # per GPU-hour of a backfill class's at-risk (backfilled) reserved use: a tie-break, not a
# cost (plan costs are read from the quantities): where the class's own reserved GPUs are idle, the solve uses them
# first, as a scheduler does, instead of any of the equal-cost splits (a hundredth of a cent: $10 per 100,000 h)

OWNED_TIE_USD = 1e-5  # per GPU-hour of reserved (owned or bought) use, times a pool and class order in [1, 4): a
# tie-break, not a cost. Reserved GPUs cost the same used or idle, so where several pools hold idle GPUs the work
# could run on any of them, at any split between classes: the figures read from which GPUs ran it (a tranche's use,
# stranded dollars, the term downside, chargeback) were whichever vertex the solve path reached (the whole model and
# the decomposition differed by 5 % on the example's term downside). With it the answer is one: work runs on the
# fewest reserved GPU-hours (the fastest idle GPUs) weighed by a pool and class order (pools sorted by GPU type and
# region, classes in the model file), then that order alone (docs/formulation.md: what it means for a tranche's
# "used" and for chargeback). Below SPEND_TIE_USD (covered on-demand stays dearer than an idle reserved GPU of like
# speed) and any price.


def objective_coefficients(inp: PlanInputs, blocks: Blocks, fam: dict[str, pd.DataFrame],
                           n_vars: int, npv: bool = False, ties: bool = True) -> np.ndarray:
    """The objective coefficient of every column (USD over the horizon), shortfall penalty included.

    ``npv``: the NPV of each column's cash at ``[finance] discount_rate`` instead (purchases by
    :func:`first_stage_cost`, the per-period columns by their blocks' discounted weights). ``ties``: with the
    tie-breaks (:data:`SPEND_TIE_USD`, :data:`BACKFILL_TIE_USD`), as the objective; without, each column's cost
    alone (what a budget caps).
    """
    c = np.zeros(n_vars)
    c[fam["n"]["col"]] = first_stage_cost(inp) if npv else reserved_cost_per_instance(inp)
    w = blocks.npv_weight if npv and blocks.npv_weight is not None else blocks.weight
    r = fam["r"]
    c[r["col"]] = w[r["b"]] * block_price(inp, blocks, r["j"], r["p"], r["b"])
    c[fam["u"]["col"]] = w[fam["u"]["b"]] * inp.penalty_by_class[fam["u"]["k"]]
    if "v" in fam and len(fam["v"]):  # covered usage is paid by the savings plan, not at the on-demand price
        v = fam["v"]
        c[v["col"]] = -w[v["b"]] * block_price(inp, blocks, np.full(len(v), rented.index("on_demand")), v["p"],
                                               v["b"])
    if ties:
        cols, coefs = tie_breaks(inp, blocks, fam, npv)
        np.add.at(c, cols, coefs)
    return c


def owned_tie(inp: PlanInputs, blocks: Blocks, fam: dict[str, pd.DataFrame], npv: bool = False) -> tuple:
    """(columns, coefficients) of the owned-GPU tie-break: every reserved GPU-hour used (``x``, and a backfill
    class's own ``xd``) costs :data:`OWNED_TIE_USD` x :func:`owned_order` (per GPU-hour, at the block's weight)."""
    w = blocks.npv_weight if npv and blocks.npv_weight is not None else blocks.weight
    cols, coefs = [np.zeros(0, int)], [np.zeros(0)]
    for name in ("x", "xd"):
        x = fam.get(name)
        if x is not None and len(x):
            cols.append(x["col"].to_numpy())
            coefs.append(w[x["b"].to_numpy()] * OWNED_TIE_USD
                         * owned_order(x["k"].to_numpy(), x["p"].to_numpy(), inp.K, inp.P))
    return np.concatenate(cols).astype(np.int64), np.concatenate(coefs).astype(float)


def tie_breaks(inp: PlanInputs, blocks: Blocks, fam: dict[str, pd.DataFrame], npv: bool = False,
               owned: bool = True) -> tuple:
    """(columns, coefficients) the objective adds to break ties between equal-cost answers, never costs: covered
    usage saves on-demand less :data:`SPEND_TIE_USD`, a backfill class's reclaimable reserved use costs
    :data:`BACKFILL_TIE_USD` (per GPU-hour, at the block's weight) and, with ``owned``, every reserved GPU-hour used
    :func:`owned_tie`: what a plan is read with. A decision's own solves leave that one out (the purchases are the
    same; which idle GPU runs the work is read after them, and the LPs price faster without it)."""
    w = blocks.npv_weight if npv and blocks.npv_weight is not None else blocks.weight
    cols, coefs = [np.zeros(0, int)], [np.zeros(0)]
    if owned:
        cols[0], coefs[0] = owned_tie(inp, blocks, fam, npv)
    if "v" in fam and len(fam["v"]):
        v = fam["v"]
        cols.append(v["col"].to_numpy())
        coefs.append(w[v["b"].to_numpy()] * SPEND_TIE_USD)
    if "xd" in fam and len(fam["xd"]):  # backfill classes: their own GPUs before the reclaimable ones, at equal cost
        x = fam["x"]
        at_risk = np.isin(x["k"].to_numpy(), np.unique(fam["xd"]["k"].to_numpy()))
        cols.append(x["col"].to_numpy()[at_risk])
        coefs.append(w[x["b"].to_numpy()[at_risk]] * BACKFILL_TIE_USD)
    return np.concatenate(cols).astype(np.int64), np.concatenate(coefs).astype(float)


def owned_order(k: np.ndarray, p: np.ndarray, K: int, P: int) -> np.ndarray:
    """The factor in [1, 4) of :data:`OWNED_TIE_USD` for class ``k`` on pool ``p``: ``(1 + (p + 1) / (P + 1)) (1 + (k
    + 1) / (K + 1))``, increasing in the pool's and the class's position; a product, so that two classes trading
    two pools (same GPUs, each class's work unchanged) differ too."""
    return (1.0 + (np.asarray(p, float) + 1.0) / (P + 1.0)) * (1.0 + (np.asarray(k, float) + 1.0) / (K + 1.0))


def block_price(inp: PlanInputs, blocks: Blocks, j, p, b) -> np.ndarray:
    """USD per GPU-hour of rented kind ``j`` in pool ``p`` during block ``b`` (arrays of equal length): the price
    sheet's one price, or the block's own where prices change over time or by scenario (``blocks.price``)."""
    j, p, b = (np.asarray(x, int) for x in (j, p, b))
    if blocks.price is not None:
        return blocks.price[j, p, b]
    return inp.rented_price[j, p]
