"""A scenario tree's batches priced for its first-stage inputs: the plan with every purchase common to all scenarios
(the risk view's first-stage plan) decided on the tree's own weekly batches, not on batches built again.

The first-stage inputs (:func:`planner.inputs.arrays.first_stage`) hold one row per row of the tree before its split
(the tree's ``commitments["origin"]``); each tree row is a node copy of one of them. With every copy of a row bought
alike, ``n_tree = n[origin]``, each scenario's recourse sees one copy of each row, as the first-stage inputs' recourse
sees the row: the same LPs, so the tree's batches price the first-stage plan exactly. A tree's cut
``theta_g >= rhs_g + sum_c d_gc n_c`` is then ``theta_g >= rhs_g + sum_o (sum_{c of o} d_gc) n_o``: valid for the
first-stage plan wherever it was taken (:class:`TiedPricer`, :func:`first_stage_log`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from planner.inputs.arrays import PlanInputs, first_stage

TREE_ONLY = ("origin", "node", "branch", "probability", "parent")  # columns a node copy has of its own


def first_stage_view(inp: PlanInputs) -> tuple[PlanInputs, np.ndarray] | None:
    """``(first_stage(inp), origin)`` where each first-stage row is the row ``origin`` numbers (every column the
    two tables share, but a copy's own, equal at each row's first copy); None where ``inp`` is no tree or they
    differ (the first-stage plan is then solved on batches of its own)."""
    if inp.reserved_member is None or "origin" not in inp.commitments:
        return None
    origin = inp.commitments["origin"].to_numpy(int)
    fs = first_stage(inp)
    a, b = fs.commitments, inp.commitments
    k = len(a)
    if not len(origin) or origin.min() < 0 or origin.max() >= k or len(np.unique(origin)) != k:
        return None
    first = np.unique(origin, return_index=True)[1]
    for col in a.columns:
        if col in TREE_ONLY or col not in b.columns:
            continue
        x, y = a[col].reset_index(drop=True), b[col].iloc[first].reset_index(drop=True)
        same = (x == y) | (pd.isna(x) & pd.isna(y))
        if not bool(np.asarray(same, bool).all()):
            return None
    return fs, origin


def _summed(g: np.ndarray, c: np.ndarray, d: np.ndarray, origin: np.ndarray, k: int) -> tuple:
    """Cut entries (group ``g``, tree row ``c``, coefficient ``d``) with each row's copies summed: (g, o, d) sorted
    by group, then first-stage row."""
    key = np.asarray(g, np.int64) * k + origin[np.asarray(c, np.int64)]
    uniq, inv = np.unique(key, return_inverse=True)
    return uniq // k, uniq % k, np.bincount(inv.reshape(-1), weights=d, minlength=len(uniq))


class TiedPricer:
    """The tree's pricer (``pricer``, of the tree's batches) seen from its first-stage inputs: purchases ``n`` per
    first-stage row priced as ``n[origin]`` (every copy alike), each batch's cut entries summed over a row's copies.
    Everything else (groups, bases, workers, ``close``) is the tree pricer's."""

    def __init__(self, pricer, origin: np.ndarray, k: int):
        self._pricer, self.origin, self.k = pricer, np.asarray(origin, np.int64), int(k)

    def __getattr__(self, name):
        return getattr(self._pricer, name)

    def price(self, n, bases, *args, **kwargs) -> list:
        """Every batch priced at ``n`` (first-stage rows), as :meth:`price` of the tree's pricer at ``n[origin]``."""
        out = self._pricer.price(np.asarray(n, float)[self.origin], bases, *args, **kwargs)
        return [self._mapped(r) for r in out]

    def _mapped(self, r):
        g, o, d = _summed(r.group, r.row, r.coef, self.origin, self.k)
        return replace(r, group=g, row=o, coef=d)


def first_stage_log(log: dict | None, tree: PlanInputs, fs: PlanInputs, origin: np.ndarray) -> dict | None:
    """A Benders ``cut_log`` of the tree ``tree`` (:attr:`~planner.solve.master.BendersResult.cut_log`) as cuts of
    its first-stage inputs ``fs`` on the same batches (each row's copies' coefficients summed), its purchases each
    row's copies' probability-weighted mean; None when it is not the tree's."""
    from planner.inputs.tree import weight_of
    from planner.solve.decompose import _logged, _unlogged

    if not log or log.get("inputs") is not tree:
        return None
    k = len(fs.commitments)
    G = int(sum(log["groups"]))
    entries = []
    for entry in log["entries"]:
        g, c, d, rhs = _unlogged(entry)
        gs, o, ds = _summed(g, c, d, origin, k)
        entries.append(_logged(gs, o, ds, rhs, G, k))
    out = {"inputs": fs, "chunks": log["chunks"], "groups": log["groups"], "entries": entries}
    if "cut_by" in log:
        out["cut_by"] = log["cut_by"]
    units = log.get("units")
    if units is not None and len(units) == len(origin):
        w = np.asarray(weight_of(tree), float)
        total = np.bincount(origin, weights=w, minlength=k)
        out["units"] = np.bincount(origin, weights=w * np.asarray(units, float), minlength=k) / \
            np.where(total > 0, total, 1.0)
    return out
