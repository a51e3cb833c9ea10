"""Marginal utilisation of each commitment tranche, and commitment coverage (pure functions of a Plan).

The reserved GPUs a pool uses in a period are stacked on its capacity in a fixed order: the inventory
already owned first, then every purchase (tranche) in purchase order (earlier purchase date first; on
the same date the cheaper effective rate first, then the price sheet's row order). The last tranche
bought is the last one used, so its utilisation is the marginal utilisation of the commitment level:
the figure that says whether the last GPUs bought pay. Everything is expected over scenarios (each
scenario's use stacked separately, then weighted by its probability).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from planner.inputs import rented, supply
from planner.inputs.activity import take_rows
from planner.core.units import idle_of

TRANCHE_COLUMNS = ["row", "gpu_type", "region", "option", "kind", "purchase_date", "end_date", "firm",
                   "stack_position", "instances", "gpus", "active_periods", "capacity_gpu_hours", "used_gpu_hours",
                   "avg_utilisation", "min_utilisation", "horizon_cost_usd", "full_term_usd",
                   "on_demand_value_usd", "net_savings_usd", "effective_usd_per_gpu_hour",
                   "on_demand_usd_per_gpu_hour", "break_even_utilisation", "pays", "branch", "probability",
                   "max_utilisation", "spot_usd_per_useful_gpu_hour", "break_even_vs_spot",
                   "break_even_vs_nothing", "queued_usd_per_useful_gpu_hour", "break_even_vs_queued"]


def fleet_cube(plan, columns: tuple[str, ...]) -> np.ndarray:
    """(S, P, T) the sum of the plan's fleet-table ``columns`` (those it has) per scenario, pool and period."""
    inp = plan.inputs
    f = plan.fleet
    out = np.zeros((len(inp.scenarios), inp.P, inp.T))
    if not len(f):
        return out
    pools = pd.MultiIndex.from_arrays([inp.pools["gpu_type"], inp.pools["region"]])
    p = pools.get_indexer(pd.MultiIndex.from_arrays([f["gpu_type"], f["region"]]))
    t = inp.periods.get_indexer(pd.DatetimeIndex(f["period"]))
    s = pd.Index(inp.scenarios).get_indexer(f["scenario"])
    np.add.at(out, (s, p, t), sum(f[c].to_numpy(float) for c in columns if c in f))
    return out


def reserved_used_cube(plan) -> np.ndarray:
    """(S, P, T) reserved GPUs in use per scenario, pool and period (the plan's fleet table): the work's, and the
    spares held for a class's gang (``reserved_spares``: held idle on purpose, not stranded)."""
    return fleet_cube(plan, ("reserved_used", "reserved_spares"))


def stack(plan) -> dict:
    """The stacking of each pool's reserved use on its inventory and its tranches.

    Returns ``rows`` (positions in ``inputs.commitments`` of the tranches bought, in stacking order),
    ``pool`` (their pools), ``cap`` (R, T) expected GPUs each holds per period (a term's partial periods pro
    rata, resales netted off their parent, a branch's purchase at its probability), ``used`` (S, R, T) GPUs
    of each in use, ``owned_used`` (S, P, T)
    inventory GPUs in use, ``inventory`` (P, T) and ``used_total`` (S, P, T).
    """
    inp = plan.inputs
    res = inp.commitments
    U = reserved_used_cube(plan)
    inv = np.asarray(inp.inventory, float)
    S = U.shape[0]
    owned_used = np.minimum(U, inv[None])
    empty = {"rows": np.zeros(0, int), "pool": np.zeros(0, int), "cap": np.zeros((0, inp.T)),
             "used": np.zeros((S, 0, inp.T)), "owned_used": owned_used, "inventory": inv, "used_total": U}
    if not len(res):
        return empty
    units = plan.purchases["units"].to_numpy(float)
    kind = res["kind"].to_numpy()
    pool = res["pool"].to_numpy(int)
    m = res["m"].to_numpy(float)
    holds = (units > 0) & (pool >= 0) & supply.mask(kind, adds_capacity=True)
    rows = np.flatnonzero(holds)
    if not len(rows):
        return empty
    order = np.lexsort((rows, res["r"].to_numpy(float)[rows], pd.to_datetime(res["purchase_date"]).to_numpy()[rows],
                        pool[rows]))
    rows = rows[order]
    gpus_t = (units[rows] * m[rows])[:, None] * np.asarray(take_rows(inp.active, rows))  # (r, T)
    # per scenario: a purchase that waits for information holds GPUs in its own branch's scenarios only
    member = inp.member[rows].T.astype(float)  # (S, r)
    cap_s = gpus_t[None, :, :] * member[:, :, None]  # (S, r, T)
    ex = np.flatnonzero(supply.mask(kind, dated_by="resale") & (units > 0))
    if len(ex):  # a resale nets its GPUs (a negative m) off its parent in the scenarios that sell: its own branch's
        at = np.full(len(res), -1)
        at[rows] = np.arange(len(rows))
        ex = ex[at[res["parent"].to_numpy(int)[ex]] >= 0]  # (a sale's parent is bought: n[exit] <= n[parent])
        sold = (units[ex] * m[ex])[:, None] * np.asarray(take_rows(inp.active, ex))  # (e, T), negative
        np.add.at(cap_s, (slice(None), at[res["parent"].to_numpy(int)[ex]]),
                  inp.member[ex].T.astype(float)[:, :, None] * sold[None])
    cap_s = np.clip(cap_s, 0.0, None)
    pr = pool[rows]
    below = np.cumsum(cap_s, axis=1) - cap_s  # capacity of the earlier tranches (all pools)
    first = np.r_[True, pr[1:] != pr[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(rows)), 0))
    lower = inv[pr][None] + below - below[:, start]  # GPUs stacked under each tranche in its own pool
    used = np.clip(U[:, pr, :] - lower, 0.0, cap_s)
    # "cap": the expected GPUs each holds (a branch's at its probability): expected used / expected capacity is
    # the tranche's utilisation in its own branch
    return {"rows": rows, "pool": pr, "cap": np.einsum("s,srt->rt", inp.probability, cap_s), "used": used,
            "owned_used": owned_used, "inventory": inv, "used_total": U}


def tranche_utilisation(plan, st: dict | None = None) -> pd.DataFrame:
    """One row per purchase bought (a tranche), with its MARGINAL utilisation (see the module docstring).

    Columns: ``row`` (of ``plan.purchases``), ``gpu_type``, ``region``, ``option``, ``kind``,
    ``purchase_date``, ``end_date``, ``firm``, ``stack_position`` (1 = first used in its pool after the
    inventory), ``instances``, ``gpus``, ``active_periods`` (periods of the horizon it holds GPUs in),
    ``capacity_gpu_hours`` and ``used_gpu_hours`` (expected; a branch's tranche: given its branch), ``avg_utilisation`` (used / capacity
    GPU-hours), ``min_utilisation`` (the lowest expected per-period utilisation over its active periods),
    ``horizon_cost_usd`` (amortised: effective rate x active horizon hours, as ``plan.purchases``),
    ``full_term_usd`` (its whole liability), ``on_demand_value_usd`` (its used GPU-hours at its pool's
    on-demand price), ``net_savings_usd`` (value less horizon cost), ``effective_usd_per_gpu_hour``,
    ``on_demand_usd_per_gpu_hour``, ``break_even_utilisation`` (effective / on-demand rate) and ``pays``
    (average utilisation at or above break-even), ``branch`` and ``probability`` (of the scenario-tree branch it
    is bought in: "all" and 1 for a purchase made whatever happens), ``max_utilisation``,
    ``spot_usd_per_useful_gpu_hour`` (spot's hourly price / the best goodput of a class on the pool; NaN without
    spot), ``break_even_vs_spot`` (effective / that) and ``break_even_vs_nothing`` (effective / the cheaper of
    on-demand and spot: what buying nothing would pay for the same hours IF all the work on them may run on spot;
    an upper bound, as classes with ``spot = false`` can only rent on demand: the verdict ``pays`` is against
    on-demand); ``queued_usd_per_useful_gpu_hour`` and ``break_even_vs_queued``: the same against queued capacity
    (flex-start) where the sheet sells it, for classes that may wait for it (NaN elsewhere).
    """
    inp = plan.inputs
    st = stack(plan) if st is None else st  # (``st``: the plan's stack(), when the caller has it)
    rows = st["rows"]
    if not len(rows):
        return pd.DataFrame(columns=TRANCHE_COLUMNS)
    pur = plan.purchases
    pr = st["pool"]
    h = inp.hours
    cap, used = st["cap"], st["used"]
    exp_used = np.einsum("s,srt->rt", inp.probability, used)
    # a tranche of a branch of the scenario tree: its GPU-hours given that branch (expected / its probability),
    # like its cost; 1 for a purchase made whatever happens
    w = np.maximum(inp.reserved_weight[rows], 1e-12)
    cap_h = (cap @ h) / w
    used_h = (exp_used @ h) / w
    active = cap > 1e-12
    util_t = np.divide(exp_used, cap, out=np.full(cap.shape, np.inf), where=active)
    od = inp.pools["od"].to_numpy(float)[pr]
    r = pur["effective_usd_per_gpu_hour"].to_numpy(float)[rows]
    cost = pur["horizon_cost_usd"].to_numpy(float).copy()
    full = pur["commitment_usd"].to_numpy(float).copy()
    kind = inp.commitments["kind"].to_numpy()
    if "parent" in inp.commitments:  # a resale's cost (negative: money back) is its parent's, in the parent's
        # branch: each sale at its probability given that branch (a sale made in one of its branches only)
        ex = np.flatnonzero(supply.mask(kind, dated_by="resale") & (pur["units"].to_numpy(float) > 0))
        par = inp.commitments["parent"].to_numpy(int)[ex]
        given = inp.reserved_weight[ex] / np.maximum(inp.reserved_weight[par], 1e-12)
        np.add.at(cost, par, cost[ex] * given)
        np.add.at(full, par, full[ex] * given)
    first = np.r_[True, pr[1:] != pr[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(rows)), 0))
    out = pd.DataFrame({
        "row": rows, "gpu_type": pur["gpu_type"].to_numpy()[rows], "region": pur["region"].to_numpy()[rows],
        "option": pur["option"].to_numpy()[rows], "kind": kind[rows],
        "purchase_date": pd.to_datetime(pur["purchase_date"]).to_numpy()[rows],
        "end_date": pd.to_datetime(pur["end_date"]).to_numpy()[rows], "firm": pur["firm"].to_numpy(bool)[rows],
        "stack_position": np.arange(len(rows)) - start + 1,
        "instances": pur["instances"].to_numpy(int)[rows], "gpus": pur["gpus"].to_numpy(float)[rows],
        "active_periods": active.sum(axis=1), "capacity_gpu_hours": cap_h, "used_gpu_hours": used_h,
        "avg_utilisation": np.divide(used_h, cap_h, out=np.zeros(len(rows)), where=cap_h > 0),
        "min_utilisation": np.where(active.any(axis=1), util_t.min(axis=1), 0.0),
        "horizon_cost_usd": cost[rows], "full_term_usd": full[rows],
        "on_demand_value_usd": used_h * np.nan_to_num(od)})
    out["net_savings_usd"] = out["on_demand_value_usd"] - out["horizon_cost_usd"]
    out["effective_usd_per_gpu_hour"] = r
    out["on_demand_usd_per_gpu_hour"] = od
    out["break_even_utilisation"] = np.divide(r, od, out=np.full(len(rows), np.inf), where=np.nan_to_num(od) > 0)
    out["pays"] = out["avg_utilisation"] >= out["break_even_utilisation"] - 1e-12
    out["branch"] = pur["branch"].to_numpy()[rows] if "branch" in pur else "all"
    out["probability"] = inp.reserved_weight[rows]
    out["max_utilisation"] = np.where(active.any(axis=1), np.where(active, util_t, -np.inf).max(axis=1), 0.0)
    # spot's price per useful GPU-hour: its hourly price over the best goodput of any class on the pool (the
    # cheapest spot can be, so the break-even against it is the highest: conservative)
    g = np.asarray(inp.goodput, float).max(axis=0)[pr] if np.size(inp.goodput) else np.zeros(len(rows))
    sp = inp.pools["sp"].to_numpy(float)[pr]
    spot = np.divide(sp, g, out=np.full(len(rows), np.nan), where=(g > 0) & np.isfinite(sp))
    out["spot_usd_per_useful_gpu_hour"] = spot
    out["break_even_vs_spot"] = np.divide(r, spot, out=np.full(len(rows), np.nan), where=np.nan_to_num(spot) > 0)
    # buying nothing serves the same hours at the cheaper of on-demand and spot
    alt = np.fmin(np.where(np.nan_to_num(od) > 0, od, np.nan), spot)
    out["break_even_vs_nothing"] = np.divide(r, alt, out=np.full(len(rows), np.inf), where=np.nan_to_num(alt) > 0)
    # queued capacity (flex-start) where the sheet sells it: its price per useful GPU-hour (the best run share of a
    # class that may wait for it on the pool) and the break-even against it
    queued = np.full(len(rows), np.nan)
    for kind in rented.reported(inp.pools):
        if kind in rented.ALWAYS:
            continue
        j = rented.index(kind)
        waits = inp.rented_in_time[j] > 0  # (K, P): the classes that may take it on the pool
        share = np.divide(inp.rented_useful[j], inp.speed, out=np.zeros_like(inp.speed), where=inp.speed > 0)
        best = np.where(waits, share, 0.0).max(axis=0)[pr]
        price = np.asarray(inp.rented_price[j], float)[pr]
        per_useful = np.divide(price, best, out=np.full(len(rows), np.nan), where=(best > 0) & np.isfinite(price))
        queued = np.fmin(queued, per_useful)
    out["queued_usd_per_useful_gpu_hour"] = queued
    out["break_even_vs_queued"] = np.divide(r, queued, out=np.full(len(rows), np.nan), where=np.nan_to_num(queued) > 0)
    return out[TRANCHE_COLUMNS]


def verdict(pays: bool, avg_utilisation: float, break_even_vs_nothing: float = float("nan")) -> str:
    """The verdict on one tranche, in words every output shares: ``"DOES NOT PAY"`` below its break-even against
    on-demand; ``"pays against on-demand, not against spot"`` when its own use is under the break-even against
    buying nothing (its work on the cheaper of on-demand and spot; above 100 %: no use pays there); else ``"pays"``
    (against on-demand and, where the pool sells it, spot)."""
    if not pays:
        return "DOES NOT PAY"
    vs = float(break_even_vs_nothing)
    if vs == vs and np.isfinite(vs) and float(avg_utilisation) < vs - 1e-12:
        return "pays against on-demand, not against spot"
    return "pays"


def spend_verdict(drawn_usd: float, worth_usd: float, utilisation: float) -> tuple[float, str]:
    """A savings plan's break-even and verdict: each dollar drawn (``drawn_usd`` at its rates) pays for
    ``worth_usd / drawn_usd`` dollars of on-demand, so it pays once the share of its committed dollars drawn
    (``utilisation``) reaches ``drawn / worth``. Returns (break-even, NaN when nothing was drawn; the words the
    terminal, Summary and HTML report print)."""
    be = float(drawn_usd) / float(worth_usd) if float(worth_usd) > 0 else float("nan")
    if be != be:
        return be, "n/a (nothing drawn)"
    return be, "pays" if float(utilisation) >= be - 1e-12 else "DOES NOT PAY"


def owned_idle(plan, st: dict | None = None) -> dict:
    """The commitments already owned left unused (expected over scenarios): ``gpu_hours`` and ``usd`` (those
    GPU-hours at each inventory row's effective rate, ``planner.results.bill.inventory_table``; 0 where unpriced)."""
    from planner.results.bill import inventory_cost_by_period, inventory_table

    inp = plan.inputs
    st = stack(plan) if st is None else st  # (``st``: the plan's stack(), when the caller has it)
    idle = idle_of(st["inventory"][None], st["owned_used"])  # (S, P, T) GPUs
    idle_t = np.einsum("s,spt->pt", inp.probability, idle)
    inv = inventory_table(inp)
    rate = np.zeros((inp.P, inp.T))
    if len(inv):
        cost = np.zeros((inp.P, inp.T))
        pools = pd.MultiIndex.from_arrays([inp.pools["gpu_type"], inp.pools["region"]])
        p = pools.get_indexer(pd.MultiIndex.from_arrays([inv["gpu_type"], inv["region"]]))
        np.add.at(cost, p, inventory_cost_by_period(inp, inv))
        gh = st["inventory"] * inp.hours[None, :]
        rate = np.divide(cost, gh, out=rate, where=gh > 0)
    return {"gpu_hours": float((idle_t * inp.hours).sum()),
            "usd": float((idle_t * inp.hours * rate).sum())}


def coverage(plan) -> dict:
    """Share of commitment-eligible GPU-hours covered by commitments (expected over scenarios).

    Eligible: reserved and on-demand GPU-hours in pools that sell a reserved (or capacity-block) option,
    are eligible for a savings plan, or hold inventory (spot is not commitment-eligible and is left out;
    its GPU-hours are reported beside). Covered: reserved GPU-hours on inventory (``owned_gpu_hours``), on
    this plan's purchases (``bought_gpu_hours``) and on-demand GPU-hours a savings plan paid
    (``savings_plan_gpu_hours``). ``coverage`` = covered / eligible (NaN with nothing eligible).
    """
    inp = plan.inputs
    st = stack(plan)
    w, h = inp.probability, inp.hours
    f = plan.fleet
    eligible_pool = inp.pools["has_res"].to_numpy(bool) | (st["inventory"].sum(axis=1) > 0)
    rates = inp.spend_rates
    if len(rates):
        eligible_pool[np.unique(rates["pool"].to_numpy(int))] = True
    pools = pd.MultiIndex.from_arrays([inp.pools["gpu_type"], inp.pools["region"]])
    p = pools.get_indexer(pd.MultiIndex.from_arrays([f["gpu_type"], f["region"]]))
    wt = pd.Index(inp.scenarios).get_indexer(f["scenario"])
    gh = f["hours"].to_numpy(float) * w[wt]
    el = eligible_pool[p]
    reserved = float(np.sum(f["reserved_used"].to_numpy(float) * gh * el))
    od = float(np.sum(f["on_demand"].to_numpy(float) * gh * el))
    sp_cov = float(np.sum(f["on_demand_covered"].to_numpy(float) * gh * el)) if "on_demand_covered" in f else 0.0
    owned = float(np.einsum("s,spt,t->", w, st["owned_used"] * eligible_pool[None, :, None], h))
    eligible = reserved + od
    covered = reserved + sp_cov
    spot = float(np.sum(f["spot"].to_numpy(float) * gh))
    spot_el = float(np.sum(f["spot"].to_numpy(float) * gh * el))  # spot GPU-hours in the eligible pools
    return {"coverage_with_spot": covered / (eligible + spot_el) if eligible + spot_el > 0 else float("nan"),
            "eligible_spot_gpu_hours": spot_el,"eligible_gpu_hours": eligible, "covered_gpu_hours": covered, "owned_gpu_hours": owned,
            "bought_gpu_hours": reserved - owned, "savings_plan_gpu_hours": sp_cov,
            "on_demand_uncovered_gpu_hours": od - sp_cov,
            "spot_gpu_hours": spot,
            "coverage": covered / eligible if eligible > 0 else float("nan"),
            "eligible_pools": [str(n) for n in inp.pools["name"].to_numpy()[eligible_pool]]}
