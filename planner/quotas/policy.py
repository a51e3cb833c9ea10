"""Quotas from demand: nominal (guaranteed) GPUs, borrowing and lending limits per team and flavor. Pure.

The policy, per flavor of capacity ``C`` (whole GPUs) and the teams that may use it:

1. **Target**: a team's nominal target is the ``percentile`` (default 50) of its hourly demand on the
   flavor, and at least its ``guaranteed_gpus`` floor (split over the non-preemptible flavors in
   proportion to its demand there, and never above its peak demand there; preemptible flavors
   guarantee nothing).
2. **Scaled to fit** by weighted max-min (water-filling): floors first; then, up to their targets,
   every team's share grows in proportion to its ``fair_share_weight`` until the flavor is full. If
   the targets fit, what is left goes the same way up to each team's peak demand, and any rest by
   weight, so the nominal quotas add up to the flavor's capacity (idle quota is lent, not lost).
3. **Whole GPUs**: rounded down, the remainder to the largest fractions, never over ``C``.
4. **Borrowing limit** = what the team may hold above its nominal: up to its own peak demand and never
   more than the rest of the flavor (``min(C - nominal, ceil(peak) - nominal)``, >= 0).
5. **Lending limit** = nominal less the floor it is guaranteed: the rest of its quota is lent when idle
   and reclaimed (preempting the borrower) when the team needs it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def waterfill(amount, caps, weights) -> np.ndarray:
    """Weighted max-min share of ``amount`` among items capped at ``caps``: ``min(cap_i, w_i * level)``.

    Vectorised over leading axes: ``amount`` (...,), ``caps`` and ``weights`` (..., n). Returns (..., n)
    adding up to ``min(amount, sum(caps))``.
    """
    caps = np.maximum(np.asarray(caps, float), 0.0)
    w = np.broadcast_to(np.asarray(weights, float), caps.shape)
    amount = np.minimum(np.asarray(amount, float), caps.sum(axis=-1))
    caps = np.minimum(caps, amount[..., None])  # no item takes more than there is (and no inf)
    lo = np.zeros(amount.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        hi = np.nanmax(np.where(w > 0, caps / w, 0.0), axis=-1, initial=0.0)
    for _ in range(100):  # bisection on the level
        mid = 0.5 * (lo + hi)
        got = np.minimum(caps, w * mid[..., None]).sum(axis=-1)
        lo, hi = np.where(got < amount, mid, lo), np.where(got < amount, hi, mid)
    out = np.minimum(caps, w * hi[..., None])
    excess = out.sum(axis=-1) - amount  # the bisection's last sliver, taken back pro rata
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(out.sum(axis=-1) > 0, 1 - excess / out.sum(axis=-1), 1.0)
    return out * scale[..., None]


def whole(values: np.ndarray, total: int) -> np.ndarray:
    """Round to whole numbers adding up to at most ``total`` (largest remainders get the spare units)."""
    base = np.floor(values + 1e-9)
    spare = int(min(total, round(values.sum())) - base.sum())
    if spare > 0:
        order = np.argsort(-(values - base), kind="stable")[:spare]
        base[order] += 1
    return base.astype(int)


def flavor_quotas(demand: np.ndarray, capacity: int, weights: np.ndarray, floors: np.ndarray,
                  percentile: float = 50.0) -> pd.DataFrame:
    """Quotas of ``n`` teams on one flavor from their hourly ``demand`` (n, T); see the module doc."""
    n = demand.shape[0]
    need = np.percentile(demand, percentile, axis=1) if demand.shape[1] else np.zeros(n)
    peak = demand.max(axis=1) if demand.shape[1] else np.zeros(n)
    floors = np.minimum(np.asarray(floors, float), peak)  # a guarantee above the team's peak would only idle
    target = np.maximum(need, floors)
    floor_part = waterfill(capacity, floors, weights)  # floors first (scaled if they do not fit)
    nominal = floor_part + waterfill(capacity - floor_part.sum(), target - floor_part, weights)
    if nominal.sum() < capacity - 1e-9:  # targets fit: up to the peaks, then by weight
        nominal += waterfill(capacity - nominal.sum(), np.maximum(peak - nominal, 0.0), weights)
    active = peak > 0
    if nominal.sum() < capacity - 1e-9 and active.any():
        nominal += waterfill(capacity - nominal.sum(), np.where(active, np.inf, 0.0), weights)
    nominal = whole(nominal, int(capacity))
    borrowing = np.maximum(0, np.minimum(capacity - nominal, np.ceil(peak - 1e-9).astype(int) - nominal))
    lending = np.maximum(0, nominal - np.minimum(np.ceil(floors - 1e-9).astype(int), nominal))
    return pd.DataFrame({"nominal_gpus": nominal, "borrowing_limit_gpus": borrowing.astype(int),
                         "lending_limit_gpus": lending.astype(int), "guaranteed_floor_gpus": floors,
                         "demand_percentile_gpus": need, "demand_peak_gpus": peak,
                         "demand_mean_gpus": demand.mean(axis=1) if demand.shape[1] else np.zeros(n)})


def quota_table(demand: np.ndarray, teams: list[str], flavors: pd.DataFrame, weights: np.ndarray,
                floors: np.ndarray, eligible: np.ndarray, percentile: float = 50.0) -> pd.DataFrame:
    """Quotas for every team and flavor. ``demand`` (teams, flavors, T) in GPUs; ``flavors`` has
    ``name``, ``capacity_gpus`` and ``preemptible``; ``eligible`` (teams, flavors) says who may use what."""
    rows = []
    guaranteed = ~flavors["preemptible"].to_numpy(bool)
    mean = demand.mean(axis=2) if demand.shape[2] else np.zeros(demand.shape[:2])
    share = np.where(guaranteed[None, :] & eligible, mean, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        split = np.where(share.sum(axis=1, keepdims=True) > 0, share / share.sum(axis=1, keepdims=True),
                         (guaranteed[None, :] & eligible) / np.maximum((guaranteed[None, :] & eligible)
                                                                       .sum(axis=1, keepdims=True), 1))
    for f, fl in enumerate(flavors.itertuples()):
        who = np.flatnonzero(eligible[:, f])
        if not len(who):
            continue
        q = flavor_quotas(demand[who, f], int(fl.capacity_gpus), weights[who], floors[who] * split[who, f],
                          percentile)
        q.insert(0, "flavor", fl.name)
        q.insert(0, "team", [teams[i] for i in who])
        q["fair_share_weight"] = weights[who]
        q["preemptible"] = bool(fl.preemptible)
        q["capacity_gpus"] = int(fl.capacity_gpus)
        rows.append(q)
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


#: the order a workload tries flavors, by purchase option (lower first); unknown options after on-demand
OPTION_ORDER = {"owned": 0, "reserved": 0, "savings_plan": 0, "dws": 1, "flex_start": 1, "queued": 1,
                "on_demand": 2, "spot": 3}


def option_rank(option: str) -> int:
    """Rank of a purchase option in a ClusterQueue's flavor list (reservations first, spot last)."""
    o = str(option).lower()
    if o.startswith(("reserved", "owned", "savings", "commit")):
        return 0
    return OPTION_ORDER.get(o, 2)
