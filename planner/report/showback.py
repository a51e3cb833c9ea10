"""Showback: a plan's cost and GPU-hours per class and per team. Pure over a :class:`Plan`.

On-demand and spot cost go to the class that used them. A pool's reserved cost (new purchases; owned
inventory is sunk and costs nothing here) is spread over the reserved GPU-hours owned there: each class
pays that rate for the reserved GPU-hours it used, and the idle GPU-hours' cost is spread over the
classes in proportion to their reserved use of the pool (the rule finance expects: who uses the fleet
carries its idle part). A pool whose reserved GPUs nobody used leaves its cost ``unallocated``. The
classes' totals add up to the plan's total cost.

With ``owned=True`` (:func:`by_class`, :func:`by_team`, :func:`by_month`) the commitments already owned
(the inventory file, priced by ``planner.results.bill.inventory_table`` at their option's effective rate for their
hours in the horizon) are charged too, by :func:`owned_charges`: per pool and period the reserved GPUs in
use are stacked on the inventory first (as ``planner.memo.tranches`` stacks them), each class pays the
owned GPUs' cost pro rata its share of the pool's reserved use, and the owned capacity nobody used goes to
a visible ``(unused commitments)`` line. Then the classes and that line add up to the bill (new decisions
plus already committed, ``planner.results.bill.bill``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.core.frames import lookup, time_text
from planner.core.units import idle_of
from planner.results.plan import Plan
from planner.inputs import commitments
from planner.inputs import rented, supply


_KIND_INDEX = {k: i for i, k in enumerate(rented.KINDS)}

_KEPT: dict = {}  # id(plan) -> {(table, owned): table} while a ``kept(plan)`` block is open


class kept:
    """``with kept(plan):`` :func:`by_class` and :func:`by_month` of ``plan`` are computed once inside (plan.json and
    the workbook read them several times: at XL, 3 s of the outputs); outside, every call computes them afresh (a
    plan's tables may be edited between calls)."""

    def __init__(self, plan: Plan):
        self.plan = plan

    def __enter__(self):
        _KEPT[id(self.plan)] = {}
        return self

    def __exit__(self, *exc):
        _KEPT.pop(id(self.plan), None)


def _kept_or_made(plan: Plan, name: str, owned: bool, make) -> pd.DataFrame:
    store = _KEPT.get(id(plan))
    if store is None:
        return make(plan, owned)
    key = (name, bool(owned))
    if key not in store:
        store[key] = make(plan, owned)
    return store[key].copy()


def _rented_price(option: pd.Series, p: np.ndarray, price: np.ndarray) -> np.ndarray:
    """Per allocation row: its rented kind's price in its pool ``p`` (``price``: (J, P) by rented kind,
    :data:`planner.inputs.rented.KINDS`); 0 for reserved GPUs."""
    j = lookup(option, _KIND_INDEX)
    hit = ~pd.isna(j)
    out = np.zeros(len(j))
    if hit.any():
        out[hit] = np.nan_to_num(price)[j[hit].astype(int), np.asarray(p, int)[hit]]
    return out


def _row_prices(plan: Plan, a: pd.DataFrame, p: np.ndarray) -> np.ndarray:
    """Per allocation row: its rented kind's price in its pool, scenario and period (a price path), else the
    sheet's one price (:func:`_rented_price`); 0 for reserved GPUs."""
    inp = plan.inputs
    path = inp.rented_price_path
    if path is None:
        return _rented_price(a["option"], p, inp.rented_price)
    j = lookup(a["option"], _KIND_INDEX)
    s = pd.Index(inp.scenarios).get_indexer(a["scenario"])
    t = pd.DatetimeIndex(inp.periods).get_indexer(pd.DatetimeIndex(a["period"]))
    hit = ~pd.isna(j) & (s >= 0) & (t >= 0)
    out = np.zeros(len(a))
    if hit.any():
        out[hit] = np.nan_to_num(path)[s[hit], j[hit].astype(int), np.asarray(p, int)[hit], t[hit]]
    return out


def _other_kinds(plan: Plan) -> tuple[str, ...]:
    """The rented kinds beyond on-demand and spot that the plan's pools sell (flex-start): a column each."""
    return tuple(k for k in rented.reported(plan.inputs.pools) if k not in rented.ALWAYS)


def _pool_cost_and_owned(plan: Plan) -> tuple[np.ndarray, np.ndarray]:
    """Per pool: the amortised cost of this plan's purchases, and the reserved GPU-hours owned (expected)."""
    inp = plan.inputs
    w = dict(zip(inp.scenarios, inp.probability))
    pur = plan.purchases
    if "kind" in pur:
        pur = pur[~commitments.is_spend(pur)]  # a savings plan holds no pool's GPUs: see savings_plan_credit
    pool_of = {(g, r): p for p, (g, r) in enumerate(zip(inp.pools["gpu_type"], inp.pools["region"]))}
    cost_p = np.zeros(inp.P)
    weight = pur["probability"].to_numpy(float) if "probability" in pur else 1.0  # a branch's: expected
    np.add.at(cost_p, [pool_of[(g, r)] for g, r in zip(pur["gpu_type"], pur["region"])],
              pur["horizon_cost_usd"].to_numpy(float) * weight)
    f = plan.fleet.assign(wt=lookup(plan.fleet["scenario"], w))
    owned_p = (f["reserved_owned"] * f["hours"] * f["wt"]).groupby([f["gpu_type"], f["region"]]).sum()
    owned = np.array([owned_p.get((g, r), 0.0) for g, r in zip(inp.pools["gpu_type"], inp.pools["region"])])
    return cost_p, owned


def savings_plan_credit(plan: Plan) -> pd.DataFrame:
    """Per class, savings-plan row and month: what the plan paid of the class's on-demand (``credit_usd``, at the
    on-demand price: the class is not billed for it) and that usage at the plan's own rates (``at_rates_usd``).

    A pool's covered GPUs in a period are shared by its on-demand users pro rata their GPUs. Each commitment's
    cost is charged to the classes it covered, in proportion to their usage at its rates (its unused part
    with it), as a provider's amortised effective cost does."""
    inp = plan.inputs
    cov = plan.coverage
    a = plan.allocation_positions
    cols = ["_k", "c", "month", "credit_usd", "at_rates_usd"]
    if cov is None or not len(cov):
        return pd.DataFrame(columns=cols)
    od = a[supply.mask(a["option"], covered_by_spend=True)]
    key = ["scenario", "period", "gpu_type", "region"]
    total = od.groupby(key)["gpus"].sum().rename("pool_gpus").reset_index()
    m = cov.merge(od[key + ["_k", "gpus"]].rename(columns={"gpus": "class_gpus"}), on=key).merge(total, on=key)
    w = dict(zip(inp.scenarios, inp.probability))
    share = np.divide(m["class_gpus"], m["pool_gpus"], out=np.zeros(len(m)), where=m["pool_gpus"].to_numpy() > 0)
    gh = share * m["gpus"] * m["hours"] * lookup(m["scenario"], w)
    price = np.nan_to_num(inp.pools["od"].to_numpy(float))[m["_p"].to_numpy(int)]
    path = inp.rented_price_path  # (S, J, P, T) where a forward curve or price paths date the prices
    if path is not None and len(m):
        from planner.inputs import rented

        s = pd.Index(inp.scenarios).get_indexer(m["scenario"])
        t = inp.periods.get_indexer(pd.DatetimeIndex(m["period"]))
        price = np.nan_to_num(path[s, rented.index("on_demand"), m["_p"].to_numpy(int), t])
    out = pd.DataFrame({"_k": m["_k"].to_numpy(int), "c": m["c"].to_numpy(int),
                        "month": time_text(m["period"], "%Y-%m"),
                        "credit_usd": (gh * price).to_numpy(float), "at_rates_usd": (gh * m["rate"]).to_numpy(float)})
    return out.groupby(["_k", "c", "month"], as_index=False)[["credit_usd", "at_rates_usd"]].sum()


def _commitment_charges(plan: Plan, credit: pd.DataFrame, by_month: bool) -> tuple[pd.DataFrame, dict]:
    """Each savings-plan commitment's cost (total, or per month) charged to classes by their usage at its rates:
    (rows ``_k``, [``month``,] ``usd``), and what no class drew on (per month or "")."""
    pur = plan.purchases
    spend = np.flatnonzero(commitments.is_spend(pur)) if "kind" in pur else np.zeros(0, int)
    if not len(spend):
        return pd.DataFrame(columns=["_k", "month", "usd"]), {}
    full = plan.inputs.config.commitments.accounting == "full_term"
    if by_month:
        from planner.results.bill import purchase_cost_by_period

        cube = purchase_cost_by_period(plan)
        months = plan.inputs.periods.strftime("%Y-%m")
        cost = {(int(c), m): float(v) for c in spend
                for m, v in pd.Series(cube[c], index=months).groupby(level=0).sum().items()}
    else:
        col = "commitment_usd" if full else "horizon_cost_usd"
        prob = pur["probability"] if "probability" in pur else pd.Series(1.0, index=pur.index)
        cost = {(int(c), ""): float(pur[col].iat[c] * prob.iat[c]) for c in spend}
    use = credit.assign(month=credit["month"] if by_month else "").groupby(["c", "month", "_k"])["at_rates_usd"].sum()
    rows, left = [], {}
    for (c, m), usd in cost.items():
        if usd <= 0:
            continue
        mine = use.loc[(c, m)] if (c, m) in use.index.droplevel(2) else pd.Series(dtype=float)
        total = float(mine.sum())
        if total <= 0:
            left[m] = left.get(m, 0.0) + usd
            continue
        rows += [{"_k": int(k), "month": m, "usd": usd * float(x) / total} for k, x in mine.items()]
    return pd.DataFrame(rows, columns=["_k", "month", "usd"]), left


def spend_cost(plan: Plan, by_month: bool = False):
    """The savings plans' cost: in total under the model's accounting, or per month (amortised: USD/h x hours)."""
    pur = plan.purchases
    if "kind" not in pur or not commitments.is_spend(pur).any():
        return pd.Series(dtype=float) if by_month else 0.0
    spend = commitments.is_spend(pur)
    if not by_month:
        full = plan.inputs.config.commitments.accounting == "full_term"
        prob = pur["probability"] if "probability" in pur else 1.0
        return float((pur["commitment_usd" if full else "horizon_cost_usd"] * prob)[spend].sum())
    from planner.results.bill import purchase_cost_by_period

    cube = purchase_cost_by_period(plan)[spend].sum(axis=0)
    return pd.Series(cube, index=plan.inputs.periods.strftime("%Y-%m")).groupby(level=0).sum()


def reserved_use(plan: Plan) -> dict:
    """The parts of the reserved allocation: ``use`` (K, P) expected reserved GPU-hours per class and pool,
    ``owned`` and ``cost`` (P,) GPU-hours owned and the amortised purchase cost per pool."""
    inp = plan.inputs
    w = dict(zip(inp.scenarios, inp.probability))
    a = plan.allocation_positions
    sel = a[supply.mask(a["option"], stage="first")]
    use = np.zeros((inp.K, inp.P))
    np.add.at(use, (sel["_k"].to_numpy(int), sel["_p"].to_numpy(int)),
              (sel["gpu_hours"] * lookup(sel["scenario"], w)).to_numpy(float))
    cost, owned = _pool_cost_and_owned(plan)
    return {"use": use, "owned": owned, "cost": cost}


UNUSED = "(unused commitments)"


def owned_charges(plan: Plan) -> pd.DataFrame:
    """The commitments already owned charged to their users: rows ``_k`` (class position, -1 for the owned
    capacity nobody used), ``month`` ("YYYY-MM"), ``usd`` (expected over scenarios).

    Per pool p and period t the owned cost ``C[p,t]`` (every inventory row of the pool: GPUs x effective rate
    x its hours in t) is split by the share of the owned GPUs in use, ``min(reserved used, owned) / owned``
    (reserved use is stacked on the inventory first); the used part goes to the classes pro rata their
    reserved GPUs in the pool that period, the rest to -1. The rows add up to ``bill(plan)["already_committed_usd"]``.
    """
    from planner.results.bill import inventory_cost_by_period, inventory_table
    from planner.memo.tranches import stack

    inp = plan.inputs
    cols = ["_k", "month", "usd"]
    inv = inventory_table(inp)
    if not len(inv):
        return pd.DataFrame(columns=cols)
    cost = np.zeros((inp.P, inp.T))
    pools = pd.MultiIndex.from_arrays([inp.pools["gpu_type"], inp.pools["region"]])
    np.add.at(cost, pools.get_indexer(pd.MultiIndex.from_arrays([inv["gpu_type"], inv["region"]])),
              inventory_cost_by_period(inp, inv))
    st = stack(plan)
    E, U, OU = st["inventory"], st["used_total"], st["owned_used"]
    used_share = np.divide(OU, E[None], out=np.zeros_like(OU), where=E[None] > 0)  # (S, P, T)
    pi = inp.probability
    months = np.asarray(inp.periods.strftime("%Y-%m"))
    unused = np.einsum("s,pt,spt->t", pi, cost, 1.0 - used_share)
    a = plan.allocation_positions
    a = a[supply.mask(a["option"], stage="first")]
    s_ = pd.Index(inp.scenarios).get_indexer(a["scenario"])
    p_, t_ = a["_p"].to_numpy(int), a["_t"].to_numpy(int)
    tot = U[s_, p_, t_]
    share = np.divide(a["gpus"].to_numpy(float), tot, out=np.zeros(len(a)), where=tot > 0)
    usd = pi[s_] * cost[p_, t_] * used_share[s_, p_, t_] * share
    # owned GPUs in use that no allocation row carries (cannot happen: the fleet is the allocation's sum)
    frame = pd.concat([pd.DataFrame({"_k": a["_k"].to_numpy(int), "month": months[t_], "usd": usd}),
                       pd.DataFrame({"_k": -1, "month": months, "usd": unused})], ignore_index=True)
    out = frame.groupby(["_k", "month"], as_index=False)["usd"].sum()
    return out[out["usd"].abs() > 0][cols].reset_index(drop=True)


def by_class(plan: Plan, owned: bool = False) -> pd.DataFrame:
    """One row per class: team, GPU-hours and cost by option, idle reserved share, total (expected).

    ``owned``: also charge the commitments already owned (:func:`owned_charges`): an ``owned_commitments_usd``
    column in the totals and a ``(unused commitments)`` row; the rows then add up to the bill.
    """
    return _kept_or_made(plan, "by_class", owned, _by_class)


def _by_class(plan: Plan, owned: bool) -> pd.DataFrame:
    include_owned = owned
    inp = plan.inputs
    w = dict(zip(inp.scenarios, inp.probability))
    a = plan.allocation_positions.assign(wt=lookup(plan.allocation_positions["scenario"], w))
    a["wgh"] = a["gpu_hours"] * a["wt"]
    price = _row_prices(plan, a, a["_p"].to_numpy(int))
    a["usd"] = a["wgh"] * price
    K, P = inp.K, inp.P
    gh = {o: np.zeros(K) for o in supply.BUCKETS}
    usd = {o: np.zeros(K) for o in supply.RENTED}
    others = _other_kinds(plan)
    res_use = np.zeros((K, P))
    for o in gh:
        sel = a[a["option"] == o]
        np.add.at(gh[o], sel["_k"].to_numpy(int), sel["wgh"].to_numpy())
        if o in usd:
            np.add.at(usd[o], sel["_k"].to_numpy(int), sel["usd"].to_numpy())
        else:
            np.add.at(res_use, (sel["_k"].to_numpy(int), sel["_p"].to_numpy(int)), sel["wgh"].to_numpy())
    cost_p, owned = _pool_cost_and_owned(plan)
    used = res_use.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(owned > 0, cost_p / owned, 0.0)
        share = np.where(used > 0, res_use / used, 0.0)
    reserved_used = (res_use * rate).sum(axis=1)
    reserved_idle = (share * (rate * idle_of(owned, used))[None, :]).sum(axis=1)
    credit = np.zeros(K)
    cr = savings_plan_credit(plan)
    np.add.at(credit, cr["_k"].to_numpy(int), cr["credit_usd"].to_numpy(float))
    charges, _left = _commitment_charges(plan, cr, by_month=False)
    sp_share = np.zeros(K)
    np.add.at(sp_share, charges["_k"].to_numpy(int), charges["usd"].to_numpy(float))
    out = pd.DataFrame({
        "workload_class": inp.classes, "team": [inp.config.team_of(c) for c in inp.classes],
        "reserved_gpu_hours": gh["reserved"], "on_demand_gpu_hours": gh["on_demand"], "spot_gpu_hours": gh["spot"],
        "reserved_used_usd": reserved_used, "reserved_idle_usd": reserved_idle,
        "on_demand_usd": usd["on_demand"] - credit, "spot_usd": usd["spot"], "savings_plan_usd": sp_share,
        "savings_plan_credit_usd": credit})
    for kind in others:  # another rented kind a pool sells (flex-start): its GPU-hours and its cost
        out.insert(out.columns.get_loc("spot_gpu_hours") + 1, f"{kind}_gpu_hours", gh[kind])
        out.insert(out.columns.get_loc("spot_usd") + 1, f"{kind}_usd", usd[kind])
    parts = ["reserved_used_usd", "reserved_idle_usd", "on_demand_usd", "spot_usd",
             *(f"{kind}_usd" for kind in others), "savings_plan_usd"]
    left = 0.0
    if include_owned:
        oc = owned_charges(plan)
        mine = oc[oc["_k"] >= 0]
        charged = np.zeros(K)
        np.add.at(charged, mine["_k"].to_numpy(int), mine["usd"].to_numpy(float))
        out["owned_commitments_usd"] = charged
        parts.append("owned_commitments_usd")
        left = float(oc.loc[oc["_k"] < 0, "usd"].sum())
    out["total_usd"] = out[parts].sum(axis=1)
    unallocated = float(plan.cost["total"] + (float(out["owned_commitments_usd"].sum()) if include_owned else 0.0)
                        - out["total_usd"].sum())
    if abs(unallocated) > 1e-6 * max(1.0, plan.cost["total"]):
        out = pd.concat([out, pd.DataFrame([{"workload_class": "(unallocated)", "team": "(unallocated)",
                                             "reserved_idle_usd": unallocated, "total_usd": unallocated}])],
                        ignore_index=True).fillna(0.0)
    if include_owned and abs(left) > 0:
        out = pd.concat([out, pd.DataFrame([{"workload_class": UNUSED, "team": UNUSED,
                                             "owned_commitments_usd": left, "total_usd": left}])],
                        ignore_index=True).fillna(0.0)
    return out


def by_team(plan: Plan, owned: bool = False) -> pd.DataFrame:
    """The classes' showback summed per team (``owned``: as :func:`by_class`)."""
    c = by_class(plan, owned=owned)
    return c.drop(columns=["workload_class"]).groupby("team", sort=False).sum(numeric_only=True).reset_index()


def by_month(plan: Plan, owned: bool = False) -> pd.DataFrame:
    """Chargeback per calendar month and class, by the same rule as :func:`by_class` applied month by month.

    ``owned``: the commitments already owned are charged too (:func:`owned_charges`, month by month): an
    ``owned_commitments_usd`` column and ``(unused commitments)`` rows; the months then add up to the bill.

    A pool's reserved cost of the month (this plan's purchases, amortised over their active hours in it) is
    spread over the reserved GPU-hours owned there that month; each class pays that rate for its use, and
    the month's idle cost is spread over the classes in proportion to their use of the pool that month
    (``(unallocated)`` when nobody used it). The months add up to the amortised total cost.
    """
    return _kept_or_made(plan, "by_month", owned, _by_month)


def _by_month(plan: Plan, owned: bool) -> pd.DataFrame:
    include_owned = owned
    inp = plan.inputs
    w = dict(zip(inp.scenarios, inp.probability))
    a = plan.allocation_positions
    month = time_text(a["period"], "%Y-%m")
    wgh = a["gpu_hours"] * lookup(a["scenario"], w)
    p = a["_p"].to_numpy(int)
    frame = pd.DataFrame({"month": month, "k": a["_k"].to_numpy(int), "p": p, "option": a["option"], "gh": wgh,
                          "usd": wgh * _row_prices(plan, a, p)})
    others = _other_kinds(plan)
    extra = [f"{kind}_usd" for kind in others]
    cols = ["month", "team", "workload_class", "reserved_used_usd", "reserved_idle_usd", "on_demand_usd", "spot_usd",
            *extra, "savings_plan_usd", "total_usd"]
    if not len(frame):
        return pd.DataFrame(columns=cols)
    paid = frame[~supply.mask(frame["option"], stage="first")].pivot_table(index=["month", "k"], columns="option", values="usd",
                                                            aggfunc="sum", fill_value=0.0)
    use = frame[supply.mask(frame["option"], stage="first")].groupby(["month", "p", "k"])["gh"].sum()
    # the month's reserved cost and GPU-hours owned per pool
    per_month = inp.periods.strftime("%Y-%m")
    res = inp.commitments
    cost_pm = pd.Series(dtype=float)
    if len(res):
        from planner.results.bill import purchase_cost_by_period

        held = res["pool"].to_numpy(int) >= 0  # savings plans hold no pool's GPUs: charged by their credit below
        cube = pd.DataFrame(purchase_cost_by_period(plan)[held].T, index=per_month).groupby(level=0).sum()
        cost_pm = cube.T.groupby(res["pool"].to_numpy(int)[held]).sum().stack()  # (p, month)
        cost_pm.index = cost_pm.index.swaplevel()  # (month, p)
    f = plan.fleet
    pool_of = pd.MultiIndex.from_frame(inp.pools[["gpu_type", "region"]]).get_indexer(
        pd.MultiIndex.from_arrays([f["gpu_type"], f["region"]]))  # each fleet row's pool (every row has one)
    owned_pm = (f["reserved_owned"] * f["hours"] * lookup(f["scenario"], w)).groupby(
        [time_text(f["period"], "%Y-%m"), pool_of]).sum()
    rows: dict = {}
    unallocated: dict = {}
    for (m, pp), cost in cost_pm.items():
        owned = float(owned_pm.get((m, pp), 0.0))
        if cost <= 0:
            continue
        if owned <= 0:
            unallocated[m] = unallocated.get(m, 0.0) + cost
            continue
        rate = cost / owned
        users = use.loc[(m, pp)] if (m, pp) in use.index.droplevel(2) else pd.Series(dtype=float)
        used = float(users.sum())
        idle = rate * float(idle_of(owned, used))
        if used <= 0:
            unallocated[m] = unallocated.get(m, 0.0) + cost
            continue
        for k, gh in users.items():
            r = rows.setdefault((m, int(k)), {"reserved_used_usd": 0.0, "reserved_idle_usd": 0.0})
            r["reserved_used_usd"] += gh * rate
            r["reserved_idle_usd"] += idle * gh / used
    for (m, k), r in paid.iterrows():
        x = rows.setdefault((m, int(k)), {"reserved_used_usd": 0.0, "reserved_idle_usd": 0.0})
        x["on_demand_usd"] = float(r.get("on_demand", 0.0))
        x["spot_usd"] = float(r.get("spot", 0.0))
        for kind in others:
            x[f"{kind}_usd"] = float(r.get(kind, 0.0))
    # savings plans: each class's on-demand less what a plan paid of it (its credit), and the month's
    # savings-plan cost charged in proportion to the month's credits ((unallocated) without any)
    cr = savings_plan_credit(plan)
    credit = cr.groupby(["month", "_k"])["credit_usd"].sum()
    for (m, k), c in credit.items():
        x = rows.setdefault((m, int(k)), {"reserved_used_usd": 0.0, "reserved_idle_usd": 0.0})
        x["on_demand_usd"] = x.get("on_demand_usd", 0.0) - float(c)
    charges, left = _commitment_charges(plan, cr, by_month=True)
    for r in charges.itertuples():
        x = rows.setdefault((r.month, int(r._1)), {"reserved_used_usd": 0.0, "reserved_idle_usd": 0.0})
        x["savings_plan_usd"] = x.get("savings_plan_usd", 0.0) + float(r.usd)
    for m, usd in left.items():
        unallocated[m] = unallocated.get(m, 0.0) + usd
    out = [{"month": m, "team": inp.config.team_of(inp.classes[k]), "workload_class": inp.classes[k],
            "reserved_used_usd": v["reserved_used_usd"], "reserved_idle_usd": v["reserved_idle_usd"],
            "on_demand_usd": v.get("on_demand_usd", 0.0), "spot_usd": v.get("spot_usd", 0.0),
            **{c: v.get(c, 0.0) for c in extra}, "savings_plan_usd": v.get("savings_plan_usd", 0.0)}
           for (m, k), v in rows.items()]
    out += [{"month": m, "team": "(unallocated)", "workload_class": "(unallocated)", "reserved_used_usd": 0.0,
             "reserved_idle_usd": v, "on_demand_usd": 0.0, "spot_usd": 0.0, **{c: 0.0 for c in extra},
             "savings_plan_usd": 0.0} for m, v in unallocated.items()]
    df = pd.DataFrame(out, columns=cols[:-1])  # no rows at all when the plan costs nothing (inventory covers it)
    parts = ["reserved_used_usd", "reserved_idle_usd", "on_demand_usd", "spot_usd", *extra, "savings_plan_usd"]
    if include_owned:
        df = _with_owned_by_month(plan, df)
        parts.append("owned_commitments_usd")
        cols = cols[:-1] + ["owned_commitments_usd", "total_usd"]
    df["total_usd"] = df[parts].sum(axis=1)
    return df.sort_values(["month", "workload_class"]).reset_index(drop=True)[cols]


def _with_owned_by_month(plan: Plan, df: pd.DataFrame) -> pd.DataFrame:
    """``by_month``'s rows with the owned commitments' monthly charges merged in (new rows where a class
    used only owned GPUs that month; ``(unused commitments)`` rows for what nobody used)."""
    inp = plan.inputs
    oc = owned_charges(plan)
    names = np.asarray(inp.classes + [UNUSED], dtype=object)
    teams = np.asarray([inp.config.team_of(c) for c in inp.classes] + [UNUSED], dtype=object)
    k = oc["_k"].to_numpy(int)
    add = pd.DataFrame({"month": oc["month"], "workload_class": names[k], "team": teams[k],
                        "owned_commitments_usd": oc["usd"].to_numpy(float)})
    key = ["month", "team", "workload_class"]
    merged = df.merge(add, on=key, how="outer")
    money = [c for c in df.columns if c.endswith("_usd")] + ["owned_commitments_usd"]
    merged[money] = merged[money].fillna(0.0)
    return merged
