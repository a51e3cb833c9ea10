"""Decision variables, created only where they can be non-zero or be needed.

Each family is a DataFrame of integer keys plus ``col``, the variable's column:

- ``n[c]``     integer >= 0, reserved instances of option c (a row of ``inputs.commitments``);
- ``x[k,p,b]`` reserved GPUs used: pool p allowed for class k (s > 0), d[k,b] > 0,
  and the pool sells reserved options or holds inventory in block b;
- ``r[j,k,p,b]`` rented GPUs of kind j (:data:`planner.inputs.rented.KINDS`: on-demand, spot, flex-start):
  s > 0, d > 0, the pool sells the kind, its useful share u[j,k,p] > 0 (spot: g > 0, which needs phi_k > 0;
  flex-start: the class waits), and the pool is not dominated for the class (below);
- ``u[k,b]``   unmet demand where d[k,b] > 0;
- ``xd[k,p,b]`` reserved GPUs of a ``backfill`` class that lie above the priority classes' peak use
  (never reclaimed: full goodput), where x of that class exists; its x is then the backfilled, at-risk use;
- ``pk[p]``    the priority classes' peak reserved use in pool p, where backfill shares a pool with them;
- ``v[c,p,b]`` on-demand GPUs of pool p in block b covered by savings plan c (a spend commitment active in b,
  p one of its eligible pools, where some class uses p on demand in b).

Dominance (exact), per rented kind j: a GPU of kind j in pool p serves class k only through the demand row
(coefficient u[j,k,p]) and p's cap of kind j. If an uncapped pool p' is at least as cheap per useful reference
GPU-hour (price[j,p] / u[j,k,p]), any use of p can move to p' at no extra cost, so r[j,k,p] is not created
(spot's share row has the demand row's coefficient, so the same holds). A queued kind's columns are bounded
by the share in time, so every pool of it counts as capped. Ties keep the first pool.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.model.blocks import Blocks
from planner.inputs.arrays import PlanInputs
from planner.inputs import rented, supply


def undominated(cost: np.ndarray, capped: np.ndarray) -> np.ndarray:
    """(K, P) mask of options worth creating, from per-useful-unit ``cost`` (inf = not allowed)."""
    keep = np.isfinite(cost)
    free = np.where(~capped[None, :] & keep, cost, np.inf)
    best = free.min(axis=1, keepdims=True)
    first = np.argmin(free, axis=1)
    has_free = np.isfinite(best[:, 0])
    cheaper_capped = keep & capped[None, :] & (cost < best)
    chosen = np.zeros_like(keep)
    chosen[np.arange(len(cost)), first] = has_free
    return np.where(has_free[:, None], chosen | cheaper_capped, keep)


def of_kind(r: pd.DataFrame, **behaviour) -> pd.DataFrame:
    """The rows of rented family ``r`` whose kind has every registry ``behaviour`` given (e.g. ``preemptible=True``)."""
    keep = np.isin(r["j"].to_numpy(), [rented.index(k) for k in supply.names(rented=True, **behaviour)])
    return r[keep]


def spend_covered(r: pd.DataFrame) -> pd.DataFrame:
    """The rented columns a savings plan may pay for (on-demand)."""
    return of_kind(r, covered_by_spend=True)


def define_variables(inp: PlanInputs, blocks: Blocks, dominance: bool = True
                     ) -> tuple[int, dict[str, pd.DataFrame]]:
    """Lay out every family's columns; returns the number of columns and the families."""
    fam: dict[str, pd.DataFrame] = {}
    n_cols = 0

    def add(family: str, keys: dict[str, np.ndarray]) -> None:
        nonlocal n_cols
        frame = pd.DataFrame(keys)
        frame["col"] = np.arange(n_cols, n_cols + len(frame))
        n_cols += len(frame)
        fam[family] = frame

    add("n", {"c": np.arange(len(inp.commitments))})
    fam["n"]["p"] = inp.commitments["pool"].to_numpy()

    active = blocks.demand > 0  # (K, B)
    allowed = inp.speed > 0  # (K, P)
    pools = inp.pools
    price, useful, in_time = inp.rented_price, inp.rented_useful, inp.rented_in_time  # (J, P), (J, K, P) x 2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cost = np.where(allowed[None] & ~np.isnan(price)[:, None, :] & (useful > 0) & (in_time > 0),
                        price[:, None, :] / useful, np.inf)  # (J, K, P) USD per useful reference GPU-hour
    use = np.isfinite(cost)
    rates = inp.spend_rates
    if dominance and inp.rented_price_path is not None:
        dominance = False  # a price that changes over time or by scenario: no pool dominates another throughout
    if dominance:
        for j, kind in enumerate(rented.KINDS):
            # a pool capped in any period (price sheet or availability file) is capped for dominance; a kind that
            # serves only part of a class's demand (queued: the share in time) is bounded, so capped too
            capped = ~np.isnan(inp.cap_series(kind)).all(axis=1) if inp.availability is not None \
                else ~np.isnan(rented.cap(pools)[j])
            if supply.get(kind).useful_share == "queued":
                capped = np.ones(inp.P, dtype=bool)
            use[j] = undominated(cost[j], capped)
            if len(rates) and supply.get(kind).covered_by_spend:
                # a savings plan can make a pool's on-demand the cheapest: keep every eligible pool's
                eligible = np.zeros(inp.P, dtype=bool)
                eligible[rates["pool"].to_numpy(int)] = True
                use[j] |= np.isfinite(cost[j]) & eligible[None, :]
    has_res = pools["has_res"].to_numpy()
    x_mask = (allowed[:, :, None] & active[:, None, :]
              & (has_res[None, :, None] | (blocks.inventory > 0)[None, :, :]))
    k, p, b = np.nonzero(x_mask)
    add("x", {"k": k, "p": p, "b": b})
    j, k, p, b = np.nonzero(use[:, :, :, None] & active[None, :, None, :])  # kind-major: on-demand, spot, ...
    add("r", {"j": j, "k": k, "p": p, "b": b})
    k, b = np.nonzero(active)
    add("u", {"k": k, "b": b})
    # v[c,p,b]: on-demand GPUs of pool p in block b covered by savings plan c (active in b) at its rate
    y = spend_covered(fam["r"])
    if len(rates) and len(y):
        pb = np.unique(y["p"].to_numpy() * blocks.B + y["b"].to_numpy())
        pairs = rates.merge(pd.DataFrame({"p": pb // blocks.B, "b": pb % blocks.B}), left_on="pool", right_on="p")
        on = blocks.active[pairs["c"].to_numpy(int), pairs["b"].to_numpy(int)] > 0
        pairs = pairs[on]
        add("v", {"c": pairs["c"].to_numpy(int), "p": pairs["p"].to_numpy(int), "b": pairs["b"].to_numpy(int)})
        fam["v"]["rate"] = pairs["rate"].to_numpy(float)
    else:
        add("v", {"c": np.zeros(0, int), "p": np.zeros(0, int), "b": np.zeros(0, int)})
        fam["v"]["rate"] = np.zeros(0)
    # backfill classes: reserved GPUs of their own (above the priority classes' peak, never reclaimed)
    bf = np.array([inp.config.classes[c].backfill for c in inp.classes], dtype=bool) if inp.reserved_useful \
        is not None else np.zeros(inp.K, dtype=bool)
    k, p, b = np.nonzero(x_mask & bf[:, None, None])
    add("xd", {"k": k, "p": p, "b": b})
    pri_pools = np.unique(fam["x"]["p"].to_numpy()[~bf[fam["x"]["k"].to_numpy()]]) if len(fam["x"]) else []
    add("pk", {"p": np.intersect1d(np.unique(p), pri_pools).astype(int)})
    return n_cols, fam
