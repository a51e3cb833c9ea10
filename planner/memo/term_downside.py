"""Each purchase judged over its whole term under a demand shock (the memo's whole-term downside).

The re-solves of :mod:`planner.memo.resolve` cover the horizon; a 3-year term bought in a one-quarter plan lives
mostly past it. Here every tranche (a purchase bought, stacked in its pool as :func:`planner.memo.tranches.stack`
does: inventory first, then tranches by purchase date and rate) is judged on the demand its pool's commitments
could serve, the GPUs the plan ran there on reservations or on demand per period, **held at the horizon's profile
over the whole term** (a stress test of the purchases however they were judged: the flat extension, shocked; said
in the table's ``demand_basis``),
scaled by ``1 - shock``:

- ``used_share``: the tranche's GPU-hours in use over its capacity (marginal: the GPUs below it in the stack
  serve first), at that demand level;
- ``unused_usd``: its whole-term liability (``full_term_usd``) times the share left unused;
- ``saving_vs_nothing_usd``: its used GPU-hours over the term at the on-demand rate, less its whole-term liability
  (what buying nothing would have paid for the same hours, on demand: spot-eligible work could rent cheaper, so
  this is the upper side);
- ``break_even_demand_level``: the demand level (1 = the plan's) at which its use pays exactly its effective
  rate against on-demand: below it, the purchase stops paying (NaN: pays at no level within 0..4).

Every figure is closed form on the plan's own tables: no re-solve.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.memo.tranches import fleet_cube, stack, tranche_utilisation

SHOCKS = (0.0, 0.2, 0.3)
COLUMNS = ["row", "gpu_type", "region", "option", "purchase_date", "end_date", "gpus", "term_hours", "shock",
           "demand_level", "used_share", "unused_gpu_hours", "unused_usd", "full_term_usd", "saving_vs_nothing_usd",
           "break_even_demand_level", "demand_basis"]


def _served_demand(plan) -> np.ndarray:
    """(S, P, T) GPUs the pool's commitments could serve: what the plan ran there on reservations and on demand."""
    return fleet_cube(plan, ("reserved_used", "on_demand", "reserved_spares"))


def _used_share(levels, demand, lower, cap, prob, hours) -> np.ndarray:
    """Per tranche: expected GPU-hours in use / capacity with the served demand x its level (one level, or one per
    tranche), each tranche taking its band of the stack."""
    levels = np.broadcast_to(np.asarray(levels, float), (cap.shape[1],))
    used = np.clip(demand * levels[None, :, None] - lower, 0.0, cap)  # (S, r, T)
    exp = np.einsum("s,srt,t->r", prob, used, hours)
    capacity = np.einsum("s,srt,t->r", prob, cap, hours)
    return np.divide(exp, capacity, out=np.zeros(len(exp)), where=capacity > 0)


def whole_term_downside(plan, shocks=SHOCKS) -> pd.DataFrame:
    """One row per tranche and shock (see the module docstring); empty when nothing was bought."""
    inp = plan.inputs
    st = stack(plan)
    rows = st["rows"]
    if not len(rows):
        return pd.DataFrame(columns=COLUMNS)
    tr = tranche_utilisation(plan).set_index("row").loc[rows]
    pr = st["pool"]
    member = inp.member[rows].T.astype(float)  # (S, r)
    cap = st["cap"][None, :, :] * member[:, :, None]  # (S, r, T) GPUs each holds, in its own scenarios
    below = np.cumsum(cap, axis=1) - cap
    first = np.r_[True, pr[1:] != pr[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(rows)), 0))
    lower = st["inventory"][pr][None] + below - below[:, start]
    demand = _served_demand(plan)[:, pr, :]  # (S, r, T)
    prob, hours = inp.probability, np.asarray(inp.hours, float)
    pur = plan.purchases
    term_h = pur["term_months"].to_numpy(float)[rows] * 730.0
    gpus = tr["gpus"].to_numpy(float)
    full = tr["full_term_usd"].to_numpy(float)
    od = tr["on_demand_usd_per_gpu_hour"].to_numpy(float)
    r = tr["effective_usd_per_gpu_hour"].to_numpy(float)
    be = np.divide(r, od, out=np.full(len(rows), np.inf), where=np.nan_to_num(od) > 0)
    # the level where the used share reaches r / od: the share rises with the level (bisection, 40 halvings)
    lo, hi = np.zeros(len(rows)), np.full(len(rows), 4.0)
    for _ in range(40):
        mid = (lo + hi) / 2
        pays = _used_share(mid, demand, lower, cap, prob, hours) >= be - 1e-12
        hi, lo = np.where(pays, mid, hi), np.where(pays, lo, mid)
    reach = _used_share(np.full(len(rows), 4.0), demand, lower, cap, prob, hours) >= be - 1e-12
    level_be = np.where(reach, hi, np.nan)
    out = []
    for s in shocks:
        share = _used_share(1.0 - float(s), demand, lower, cap, prob, hours)
        unused_gh = (1.0 - share) * gpus * term_h
        out.append(pd.DataFrame({
            "row": rows, "gpu_type": tr["gpu_type"].to_numpy(), "region": tr["region"].to_numpy(),
            "option": tr["option"].to_numpy(), "purchase_date": tr["purchase_date"].to_numpy(),
            "end_date": tr["end_date"].to_numpy(), "gpus": gpus, "term_hours": term_h, "shock": float(s),
            "demand_level": 1.0 - float(s), "used_share": share, "unused_gpu_hours": unused_gh,
            "unused_usd": (1.0 - share) * full, "full_term_usd": full,
            "saving_vs_nothing_usd": share * gpus * term_h * np.nan_to_num(od) - full,
            "break_even_demand_level": level_be,
            "demand_basis": "the horizon's demand held flat over the term, then shocked (a stress test; how the purchases "
                            "were judged: plan.json term)"}))
    return pd.concat(out, ignore_index=True)[COLUMNS]

