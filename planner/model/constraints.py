"""One function per constraint family of ``spec/formulation.md``; each adds all its rows at once.

Every family selects the rows it applies to, returns early when there are
none, and builds its terms as (row, column, coefficient) arrays.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.model.blocks import Blocks, unique_columns
from planner.model.rows import GE as LpConstraintGE, LE as LpConstraintLE, Rows
from planner.inputs.arrays import PlanInputs
from planner.inputs import commitments
from planner.inputs import rented
from planner.model.variables import of_kind, spend_covered
from planner.sizing.spares import class_spares


def _row_ids(shape: tuple[int, int], a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique (a, b) pairs as rows: returns (row id table, row a, row b)."""
    table = np.full(shape, -1, dtype=np.int64)
    flat = np.unique(a * shape[1] + b)
    ra, rb = flat // shape[1], flat % shape[1]
    table[ra, rb] = np.arange(len(flat))
    return table, ra, rb


def define_demand_constraints(out: Rows, inp: PlanInputs, blocks: Blocks,
                              fam: dict[str, pd.DataFrame]) -> int:
    """sum_p s[k,p] q[k,p] x[k,p,b] + sum_{j,p} u[j,k,p] r[j,k,p,b] + u[k,b] >= (1 + eta_k) d[k,b].

    Applies to every (k, b) with d > 0 (u[j,k,p] is rented kind j's useful share: s q on-demand, s g spot,
    :mod:`planner.inputs.rented`; q is the non-spot reliability, 1 unless a failure rate is set; on x of a ``backfill`` class it is the backfill goodput). Rows with d = 0 hold trivially and are not built.
    """
    u = fam["u"]
    if u.empty:
        return 0
    K, B = inp.K, blocks.B
    rid, rk, rb = _row_ids((K, B), u["k"].to_numpy(), u["b"].to_numpy())
    rows, cols, coefs = [rid[u["k"], u["b"]]], [u["col"].to_numpy()], [np.ones(len(u))]
    for family, q in (("x", inp.q_reserved), ("xd", inp.speed * inp.reliability)):
        f = fam[family]
        k, p, b = f["k"].to_numpy(), f["p"].to_numpy(), f["b"].to_numpy()
        rows.append(rid[k, b])
        cols.append(f["col"].to_numpy())
        coefs.append(q[k, p])
    r = fam["r"]  # every rented kind at its useful share
    j, k, p, b = (r[c].to_numpy() for c in ("j", "k", "p", "b"))
    rows.append(rid[k, b])
    cols.append(r["col"].to_numpy())
    coefs.append(inp.rented_useful[j, k, p])
    rhs = (1.0 + inp.headroom[rk]) * blocks.demand[rk, rb]
    spares = _spares(inp, blocks)
    if spares is not None:  # a class's spares are demand too (and reserved: define_spares_constraints)
        rhs = rhs + spares[rk, rb]
    return out.add("demand", (rk, rb,), np.concatenate(rows),
                    np.concatenate(cols), np.concatenate(coefs), LpConstraintGE, rhs)


def _spares(inp: PlanInputs, blocks: Blocks) -> np.ndarray | None:
    """(K, B) spare GPUs per class and block in reference GPUs, or None (:func:`spares_of` on the blocks)."""
    got = spares_of(inp, blocks.demand)
    return None if got is None else got[0]


def spares_of(inp: PlanInputs, demand: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Spare GPUs for ``demand`` (K, ...) in reference GPUs, in the pool's own GPUs, and each class's pool (K,),
    -1 for a class without spares; None when no class asks for them. Spares are whole instances of the pool
    the gang runs on, so a class asking for them runs in one pool (one GPU type, one region; else ConfigError,
    exit 2); they are sized on its demand in that pool's own GPUs (demand / speed) and counted back in reference
    GPUs (x speed), so a faster or slower type gets the instances its gang needs."""
    from planner.core.errors import ConfigError, Problem

    asks = [k for k, c in enumerate(inp.classes) if inp.config.classes[c].spares is not None]
    if not asks:
        return None
    speed = np.ones(inp.K)
    pool = np.full(inp.K, -1, dtype=np.int64)
    for k in asks:
        pools = np.flatnonzero(inp.speed[k] > 0)
        if len(pools) != 1:
            raise ConfigError(Problem(str(inp.config.path), f"class '{inp.classes[k]}' asks for spares "
                                      f"(spares_target) but may run in {len(pools)} pools",
                                      expected="spares_target on a class with one GPU type and one region (gpu_types "
                                               "and regions of one entry each): spares are whole instances of the pool "
                                               "the gang runs on"))
        speed[k], pool[k] = inp.speed[k, pools[0]], pools[0]
    shape = (inp.K,) + (1,) * (np.ndim(demand) - 1)
    physical = class_spares(inp.classes, inp.config.classes, demand / speed.reshape(shape))
    return physical * speed.reshape(shape), physical, pool


def define_spares_constraints(out: Rows, inp: PlanInputs, blocks: Blocks, fam) -> int:
    """sum_p s[k,p] q[k,p] (x + xd)[k,p,b] + u[k,b] >= S[k,b]: a class's spares (``spares_target``) are served by
    reserved or owned GPUs, never on-demand or spot (S from :func:`planner.sizing.spares.class_spares`); spares
    the reserved fleet cannot hold are shortfall (u, at the class's penalty), so the purchases fixed below the
    spares (the memo's commitment curve, the plan with no new commitments) still solve."""
    spares = _spares(inp, blocks)
    if spares is None:
        return 0
    x = pd.concat([fam["x"].assign(q=lambda f: inp.q_reserved[f["k"].to_numpy(), f["p"].to_numpy()]),
                   fam["xd"].assign(q=lambda f: (inp.speed * inp.reliability)[f["k"].to_numpy(), f["p"].to_numpy()])], ignore_index=True)
    keep = spares > 0
    rk, rb = np.nonzero(keep)
    if not len(rk):
        return 0
    rid = np.full((inp.K, blocks.B), -1, dtype=np.int64)
    rid[rk, rb] = np.arange(len(rk))
    u = fam["u"]
    k = np.concatenate([x["k"].to_numpy(), u["k"].to_numpy()])
    b = np.concatenate([x["b"].to_numpy(), u["b"].to_numpy()])
    col = np.concatenate([x["col"].to_numpy(), u["col"].to_numpy()])
    coef = np.concatenate([x["q"].to_numpy(float), np.ones(len(u))])
    on = rid[k, b] >= 0
    return out.add("spares", (rk, rb), rid[k, b][on], col[on], coef[on], LpConstraintGE, spares[rk, rb])


def define_spot_share_constraints(out: Rows, inp: PlanInputs, blocks: Blocks,
                                  fam: dict[str, pd.DataFrame]) -> int:
    """sum_{j preemptible, p} u[j,k,p] r[j,k,p,b] <= phi_k d[k,b], for every (k, b) with spot variables."""
    z = of_kind(fam["r"], preemptible=True)
    if z.empty:
        return 0
    j, k, p, b = z["j"].to_numpy(), z["k"].to_numpy(), z["p"].to_numpy(), z["b"].to_numpy()
    rid, rk, rb = _row_ids((inp.K, blocks.B), k, b)
    return out.add("spot_share", (rk, rb,), rid[k, b], z["col"].to_numpy(),
                    inp.rented_useful[j, k, p], LpConstraintLE,
                    inp.spot_share[rk] * blocks.demand[rk, rb])


def define_reserved_share_constraints(out: Rows, inp: PlanInputs, blocks: Blocks,
                                      fam: dict[str, pd.DataFrame]) -> int:
    """sum_k (x + xd)[k,p,b] - sum_c m_p n[p,c] <= E[p,b]: classes share the reserved fleet of each pool."""
    x = pd.concat([fam["x"], fam["xd"]], ignore_index=True)
    if x.empty:
        return 0
    p, b = x["p"].to_numpy(), x["b"].to_numpy()
    rid, rp, rb = _row_ids((inp.P, blocks.B), p, b)
    rows, cols, coefs = [rid[p, b]], [x["col"].to_numpy()], [np.ones(len(x))]
    _purchased_terms(inp, blocks, fam, rp, rb, rows, cols, coefs)
    return out.add("reserved_share", (rp, rb,), np.concatenate(rows),
                    np.concatenate(cols), np.concatenate(coefs), LpConstraintLE, blocks.inventory[rp, rb])


def _purchased_terms(inp: PlanInputs, blocks: Blocks, fam, rp: np.ndarray, rb: np.ndarray,
                     rows: list, cols: list, coefs: list) -> None:
    """Append -m_p a[c,b] n[c] to each row (p, b) for every purchase c of pool p active in block b (a: its share).

    Read pool by pool: each pool's purchases against its rows' blocks (4M shares at a time), not every purchase
    against every row (a weekly batch of a three-year tree has 15,594 purchase rows: a Python step each was a
    quarter of its build). The entries come out purchase by purchase, rows ascending, as they always did (each
    pool's are, piece after piece: a stable sort by purchase orders them all), in about 36 bytes an entry at
    the most (the row, purchase and share of each, then the order and one array sorted at a time)."""
    n = fam["n"]
    m = inp.commitments["m"].to_numpy(float)
    active = blocks.active
    pool_of, col_of = n["p"].to_numpy(), n["col"].to_numpy()
    hit_r, hit_c, hit_v = [], [], []
    for pool in np.unique(pool_of):  # per pool, not per purchase or period
        mine = np.flatnonzero(pool_of == pool)
        at = np.flatnonzero(rp == pool)
        if not len(at):
            continue
        step = max(1, (1 << 22) // len(mine))
        for a in range(0, len(at), step):
            part = at[a:a + step]
            share = (np.asarray(active[mine[:, None], rb[part][None, :]], float) if active is not None
                     else np.ones((len(mine), len(part))))
            i, j = np.nonzero(share > 0)  # purchase by purchase, rows ascending
            hit_r.append(part[j])
            hit_c.append(mine[i].astype(np.int32))
            hit_v.append(share[i, j])
            del share, i, j
    if not hit_r:
        return
    c = np.concatenate(hit_c)
    hit_c.clear()
    order = np.argsort(c, kind="stable")
    c = c[order]
    r = np.concatenate(hit_r)[order]
    hit_r.clear()
    v = np.concatenate(hit_v)[order]
    hit_v.clear()
    del order
    rows.append(r)
    cols.append(col_of[c])
    coefs.append(-m[c] * v)  # a term ending inside a period holds its GPUs for that share of it


def block_caps(inp: PlanInputs, blocks: Blocks, option: str) -> np.ndarray:
    """(P, B) cap on GPUs of rented kind ``option`` held at once in each block (NaN: none): the price sheet's
    max_gpus, or per period the lower of it and the availability file's."""
    j = rented.index(option)
    if blocks.caps is None:
        return np.broadcast_to(rented.cap(inp.pools)[j][:, None], (inp.P, blocks.B))
    return blocks.caps[j * inp.P:(j + 1) * inp.P]  # blocks.caps stacks the rented kinds' caps in kind order


def rented_cap_family(kind: str):
    """The ``define_*`` of rented kind ``kind``'s cap: sum_k r[j,k,p,b] <= Ucap^j_p[b] where the price sheet (or the
    availability file) caps it; its row family is the kind's ``cap_family`` (``od_cap``, ``spot_cap``, ``flex_cap``)."""
    j = rented.index(kind)

    def define(out: Rows, inp: PlanInputs, blocks: Blocks, fam) -> int:
        r = fam["r"]
        return _cap_rows(out, inp, blocks, r[r["j"].to_numpy() == j], block_caps(inp, blocks, kind),
                         rented.cap_family(kind))

    define.__name__ = f"define_{rented.cap_family(kind)}_constraints"
    define.__doc__ = f"sum_k r[{kind},k,p,b] <= its cap (price sheet max_gpus, availability file): row family " \
                     f"{rented.cap_family(kind)!r}."
    return define


def _cap_rows(out: Rows, inp, blocks, frame, cap, family) -> int:
    """sum_k col[k,p,b] <= cap[p,b] for every capped (p, b) the family has columns in."""
    p_all, b_all = frame["p"].to_numpy(), frame["b"].to_numpy()
    f = frame[~np.isnan(cap[p_all, b_all])]
    if f.empty:
        return 0
    p, b = f["p"].to_numpy(), f["b"].to_numpy()
    rid, rp, rb = _row_ids((inp.P, blocks.B), p, b)
    return out.add(family, (rp, rb), rid[p, b], f["col"].to_numpy(),
                    np.ones(len(f)), LpConstraintLE, cap[rp, rb])


def reserved_cap_sets(inp: PlanInputs) -> tuple[list, list, list, list]:
    """The reserved caps over the purchases: one set per capped pool and distinct set of active purchases.

    Returns (pool, purchase rows, their GPUs per instance, right-hand side) per set, the right-hand side being
    the cap less the most inventory owned while that set is active (the other periods' rows are implied).
    With one purchase date that is one set per capped pool. With a scenario tree a row counts only in its own
    scenarios' periods (the patterns run over every (scenario, period)). The cap is on GPUs held at once: a resale
    (kind ``exit``, negative m) counts from its date, freeing its term's GPUs for a later purchase.
    """
    cap = inp.pools["cap_res"].to_numpy(float)
    pool = inp.commitments["pool"].to_numpy(int)
    m = inp.commitments["m"].to_numpy(float)
    term = commitments.is_term_row(inp.commitments)
    sold = np.asarray(commitments.is_exit(inp.commitments), bool)  # a resale (negative m) frees its GPUs from its date
    keys, members, coefs, rhs = [], [], [], []
    for p in np.unique(pool[term & ~np.isnan(cap[pool])]):  # capped pools only; vectorised over periods
        mine = np.flatnonzero((pool == p) & (term | sold))  # capacity blocks are capped per offer (max_units), not here
        on = inp.active[mine] > 0  # (r, T)
        if inp.reserved_member is not None:  # (r, S, T) -> (r, S * T): each row in its own scenarios only
            on = (on[:, None, :] & inp.reserved_member[mine][:, :, None]).reshape(len(mine), -1)
        reps = on.shape[1] // max(inp.T, 1)
        pattern, which = unique_columns(on)
        owned = np.full(len(pattern), -np.inf)
        np.maximum.at(owned, which.reshape(-1), np.tile(inp.inventory[p], reps))  # peaks inside a block are seen
        for j, pat in enumerate(pattern):
            if (pat & term[mine]).any():  # (resales alone only lower the GPUs held)
                keys.append(int(p))
                members.append(mine[pat])
                coefs.append(m[mine[pat]])
                rhs.append(cap[p] - owned[j])
    return keys, members, coefs, rhs


def define_backfill_peak_constraints(out: Rows, inp: PlanInputs, blocks: Blocks, fam) -> int:
    """sum_{k without backfill} x[k,p,b] - pk[p] <= E[p,b]: pk is the priority classes' peak use of
    purchased reserved GPUs (what they use beyond the inventory owned in that block)."""
    pk = fam["pk"]
    if pk.empty:
        return 0
    bf = np.array([inp.config.classes[c].backfill for c in inp.classes], dtype=bool)
    x = fam["x"]
    x = x[~bf[x["k"].to_numpy()] & x["p"].isin(pk["p"])]
    blocks_of = np.arange(blocks.B)
    rp = np.repeat(pk["p"].to_numpy(), blocks.B)
    rb = np.tile(blocks_of, len(pk))
    rid = np.full((inp.P, blocks.B), -1, dtype=np.int64)
    rid[rp, rb] = np.arange(len(rp))
    rows = [rid[x["p"].to_numpy(), x["b"].to_numpy()], rid[rp, rb]]
    pk_col = np.full(inp.P, -1, dtype=np.int64)
    pk_col[pk["p"].to_numpy()] = pk["col"].to_numpy()
    cols = [x["col"].to_numpy(), pk_col[rp]]
    coefs = [np.ones(len(x)), -np.ones(len(rp))]
    return out.add("backfill_peak", (rp, rb), np.concatenate(rows), np.concatenate(cols),
                   np.concatenate(coefs), LpConstraintLE, blocks.inventory[rp, rb])


def define_backfill_dedicated_constraints(out: Rows, inp: PlanInputs, blocks: Blocks, fam) -> int:
    """sum_{backfill k} xd[k,p,b] + pk[p] - sum_c m_p n[p,c] <= 0: only purchased GPUs the priority classes
    never need are the backfill classes' own (pk = 0 where no priority class uses the pool's reserved
    GPUs); idle inventory can still be backfilled, at risk."""
    xd = fam["xd"]
    if xd.empty:
        return 0
    p, b = xd["p"].to_numpy(), xd["b"].to_numpy()
    rid, rp, rb = _row_ids((inp.P, blocks.B), p, b)
    rows, cols, coefs = [rid[p, b]], [xd["col"].to_numpy()], [np.ones(len(xd))]
    pk = fam["pk"]
    pk_col = np.full(inp.P, -1, dtype=np.int64)
    pk_col[pk["p"].to_numpy()] = pk["col"].to_numpy()
    has = pk_col[rp] >= 0
    rows.append(np.flatnonzero(has))
    cols.append(pk_col[rp][has])
    coefs.append(np.ones(int(has.sum())))
    _purchased_terms(inp, blocks, fam, rp, rb, rows, cols, coefs)
    return out.add("backfill_dedicated", (rp, rb), np.concatenate(rows), np.concatenate(cols),
                   np.concatenate(coefs), LpConstraintLE, np.zeros(len(rp)))


def define_spend_usage_constraints(out: Rows, inp: PlanInputs, blocks: Blocks, fam) -> int:
    """sum_c v[c,p,b] - sum_k y[k,p,b] <= 0: a savings plan covers on-demand GPUs (y: the rented kinds a spend
    commitment covers) that are used, no more."""
    v, y = fam["v"], spend_covered(fam["r"])
    if v.empty:
        return 0
    rid, rp, rb = _row_ids((inp.P, blocks.B), v["p"].to_numpy(), v["b"].to_numpy())
    yy = y[rid[y["p"].to_numpy(), y["b"].to_numpy()] >= 0]
    rows = [rid[v["p"].to_numpy(), v["b"].to_numpy()], rid[yy["p"].to_numpy(), yy["b"].to_numpy()]]
    cols = [v["col"].to_numpy(), yy["col"].to_numpy()]
    coefs = [np.ones(len(v)), -np.ones(len(yy))]
    return out.add("spend_usage", (rp, rb), np.concatenate(rows), np.concatenate(cols), np.concatenate(coefs),
                   LpConstraintLE, np.zeros(len(rp)))


def define_spend_commitment_constraints(out: Rows, inp: PlanInputs, blocks: Blocks, fam) -> int:
    """sum_p rate[c,p] v[c,p,b] - a[c,b] C[c] <= 0: each hour, the usage a savings plan covers, at its rates,
    is at most the USD per hour committed (C = n[c], the row's first-stage column)."""
    v = fam["v"]
    if v.empty:
        return 0
    R = len(inp.commitments)
    rid, rc, rb = _row_ids((R, blocks.B), v["c"].to_numpy(), v["b"].to_numpy())
    n_col = fam["n"]["col"].to_numpy()
    rows = [rid[v["c"].to_numpy(), v["b"].to_numpy()], np.arange(len(rc))]
    cols = [v["col"].to_numpy(), n_col[rc]]
    coefs = [v["rate"].to_numpy(float), -blocks.active[rc, rb]]
    return out.add("spend_commitment", (rc, rb), np.concatenate(rows), np.concatenate(cols), np.concatenate(coefs),
                   LpConstraintLE, np.zeros(len(rc)))


def define_discount_only_constraints(out: Rows, inp: PlanInputs, blocks: Blocks, fam) -> int:
    """sum_k y[k,p,b] + sum_{c: no capacity} m a[c,b] n[c] <= Ucap^od_p: a commitment that discounts usage
    without reserving capacity (``guarantees_capacity = false``, GCP CUDs) holds GPUs out of the pool's
    on-demand availability, so they count against its on-demand cap (one row per capped pool and block
    where such a commitment is active)."""
    res = inp.commitments
    if res["guarantees_capacity"].to_numpy(bool).all():
        return 0
    cap = block_caps(inp, blocks, "on_demand")  # (P, B)
    soft = np.flatnonzero(~res["guarantees_capacity"].astype(bool).to_numpy() & (res["pool"].to_numpy(int) >= 0))
    soft = soft[~np.isnan(cap[res["pool"].to_numpy(int)[soft]]).all(axis=1)]
    if not len(soft):
        return 0
    pool = res["pool"].to_numpy(int)[soft]
    share = blocks.active[soft]  # (C, B)
    c_i, b_i = np.nonzero((share > 0) & ~np.isnan(cap[pool]))
    rid, rp, rb = _row_ids((inp.P, blocks.B), pool[c_i], b_i)
    n_col = fam["n"]["col"].to_numpy()
    m = res["m"].to_numpy(float)[soft]
    y = of_kind(fam["r"], cap_source="sheet+availability", covered_by_spend=True)  # on-demand: its cap's users
    yy = y[rid[y["p"].to_numpy(), y["b"].to_numpy()] >= 0]
    rows = [rid[pool[c_i], b_i], rid[yy["p"].to_numpy(), yy["b"].to_numpy()]]
    cols = [n_col[soft[c_i]], yy["col"].to_numpy()]
    coefs = [m[c_i] * share[c_i, b_i], np.ones(len(yy))]
    return out.add("discount_only_cap", (rp, rb), np.concatenate(rows), np.concatenate(cols), np.concatenate(coefs),
                   LpConstraintLE, cap[rp, rb])


def exit_links(inp: PlanInputs) -> list[tuple[int, np.ndarray]]:
    """(parent row, its exit rows) for every term commitment that may be resold (kind ``exit`` rows).

    With a scenario tree the resales of one term sit in several nodes: a scenario sells at most what its node
    bought, so there is one link per distinct set of the resales a scenario of the parent's node may make.
    """
    res = inp.commitments
    if not commitments.is_exit(res).any():
        return []
    par = res["parent"].to_numpy(int)
    ex = np.flatnonzero(commitments.is_exit(res))
    if inp.reserved_member is None:
        return [(int(c), ex[par[ex] == c]) for c in np.unique(par[ex])]
    member = inp.reserved_member
    out = []
    for c in np.unique(par[ex]):
        mine = ex[par[ex] == c]
        sets = {tuple(mine[member[mine, s]]) for s in np.flatnonzero(member[c])}
        out += [(int(c), np.asarray(e, dtype=int)) for e in sorted(sets) if len(e)]
    return out
