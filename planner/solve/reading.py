"""A plan solved whole, read as a decomposed plan is read: its recourse re-solved with the purchases fixed.

The owned-GPU tie-break (:func:`planner.model.objective.owned_tie`) picks which idle reserved GPUs run the work,
by differences far below HiGHS's default tolerances once they are weighed by a scenario's probability. A model
solved whole used to be read from the MIP's own solution (or the LP-rounding's re-solve) at those defaults, so its
tie-broken figures (tranche use, stranded dollars, allocation, chargeback) could differ from a decomposed plan's at
the same purchases, which is read from a plan LP: each block's objective over its probability
(:func:`planner.solve.recourse.plan_scale`) at :data:`planner.solve.recourse.PLAN_LP_OPTIONS`. A model solved whole
is read from the same LP, built from the whole model's arrays (not the batches): :func:`tied_lp` says what it is, and
:func:`planner.solve.monolithic.solve` solves it after the MIP (warm from the LP rounding's basis, or on a new HiGHS
object after the branch and bound). Its costs are the MIP's (one LP optimum), its reading the decomposition's
where the tie-break has one optimum (docs/formulation.md: classes of different speeds on one GPU type can trade
work at no change of it, and then each path reads one of the optima).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tied:
    """The plan LP of a model solved whole: its objective (each block's over its probability), the purchase columns
    (fixed at the solution), the factors its row duals are divided by (None: not scaled) and its HiGHS options."""

    cost: np.ndarray
    fixed: np.ndarray
    row_factor: np.ndarray | None
    options: dict


def tied_lp(model, block_hours: np.ndarray, probability: np.ndarray) -> Tied | None:
    """The plan LP of ``model`` (``block_hours``: (S, B) hours of each scenario in each block,
    :func:`planner.model.blocks.scenario_hours`), or None where a plan of it is read from its own solution: no
    owned-GPU tie-break, a column in no block that is not a purchase (mean-CVaR's or an extension's
    columns), or an integer column in a block."""
    from planner.solve import recourse

    if not len(model.owned[0]) or model.n_variables == 0:
        return None
    fixed = model.families["n"]["col"].to_numpy() if "n" in model.families else np.zeros(0, dtype=np.int64)
    colblock = recourse.column_blocks(model)
    if recourse.in_no_block(colblock, fixed).any() or model.integer[colblock >= 0].any():
        return None
    start, index, _value, _lo, _up = model.constraints.to_csr()
    rows = len(start) - 1
    scaled = recourse.plan_scale(block_hours, probability, colblock, fixed, np.repeat(np.arange(rows), np.diff(start)),
                                 index, rows)
    options = dict(recourse.PLAN_LP_OPTIONS)  # (read when called: a test may set them)
    if scaled is None:
        return Tied(cost=model.cost, fixed=fixed, row_factor=None, options=options)
    return Tied(cost=model.cost * scaled[0].astype(float), fixed=fixed, row_factor=scaled[1].astype(float),
                options=options)
