"""Exact period reduction: (scenario, period) pairs with identical data become one block.

Periods are linked only through the reserved fleet ``N``, so two periods (in any
scenarios) with the same demand vector and the same inventory vector have the
same optimal recourse; solving one block weighted by their summed
``probability x hours`` is exact, not an approximation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Blocks:
    """(scenario, period) pairs grouped into blocks with identical demand and inventory."""
    of: np.ndarray  # (S, T) block index of each (scenario, period)
    weight: np.ndarray  # (B,) sum of probability x hours
    demand: np.ndarray  # (K, B)
    inventory: np.ndarray  # (P, B)
    active: np.ndarray | None = None  # (R, B) share of the block's periods each purchase row is active
    npv_weight: np.ndarray | None = None  # (B,) sum of probability x hours x discount factor (None = weight)
    caps: np.ndarray | None = None  # (2P, B) on-demand then spot caps per block (an availability file; NaN = none)

    @property
    def B(self) -> int:
        """Number of blocks."""
        return len(self.weight)


def make_blocks(demand: np.ndarray, inventory: np.ndarray, hours: np.ndarray,
                probability: np.ndarray, merge: bool = True, active: np.ndarray | None = None,
                discount: np.ndarray | None = None, caps: np.ndarray | None = None,
                member: np.ndarray | None = None) -> Blocks:
    """``demand`` (S, K, T), ``inventory`` (P, T), ``hours`` (T,), ``probability`` (S,), ``active`` (R, T).

    Periods merge only when the same purchases are active in them (their reserved fleet is the same).
    ``discount`` (T,): each period's discount factor; a block's ``npv_weight`` sums probability x hours x
    factor over its periods (merging stays exact: a positive factor scales a period's cost, not its argmin).
    ``caps`` (C, T): per-period caps (an availability file); periods merge only when their caps are equal.
    ``member`` (R, S): the scenarios each purchase row serves (a scenario tree): a row is active in (s, t) only
    for its own scenarios.
    """
    S, K, T = demand.shape
    P = inventory.shape[0]
    active = np.ones((0, T)) if active is None else np.asarray(active, float)
    R = active.shape[0]
    C = 0 if caps is None else caps.shape[0]
    capkey = np.zeros((0, T)) if caps is None else np.where(np.isnan(caps), -1.0, caps)  # NaN never equals itself
    act = np.broadcast_to(active.T, (S, T, R)) if member is None else \
        active.T[None, :, :] * np.asarray(member, float).T[:, None, :]  # (S, T, R)
    rows = np.concatenate([demand.transpose(0, 2, 1).reshape(S * T, K),
                           np.broadcast_to(inventory.T, (S, T, P)).reshape(S * T, P),
                           np.asarray(act).reshape(S * T, R),
                           np.broadcast_to(capkey.T, (S, T, C)).reshape(S * T, C)], axis=1)
    w = (probability[:, None] * hours[None, :]).reshape(S * T)
    if merge:
        uniq, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        # number blocks in order of first appearance, so block 0 is the first period
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        inverse = rank[inverse.reshape(-1)]
        uniq = uniq[order]
    else:
        uniq, inverse = rows, np.arange(S * T)
    weight = np.bincount(inverse, weights=w, minlength=len(uniq))
    npv_weight = None if discount is None else np.bincount(
        inverse, weights=(probability[:, None] * (hours * discount)[None, :]).reshape(S * T), minlength=len(uniq))
    return Blocks(of=inverse.reshape(S, T), weight=weight, npv_weight=npv_weight,
                  demand=np.ascontiguousarray(uniq[:, :K].T), inventory=np.ascontiguousarray(uniq[:, K:K + P].T),
                  active=np.ascontiguousarray(uniq[:, K + P:K + P + R].T),
                  caps=None if caps is None else np.where(uniq[:, K + P + R:].T < 0, np.nan, uniq[:, K + P + R:].T))
