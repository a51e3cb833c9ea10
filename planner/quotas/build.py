"""The fleet as scheduler flavors and each team's demand on them, from a plan or a fixed total."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from planner.core.errors import ConfigError, Problem
from planner.inputs.arrays import PlanInputs
from planner.results.plan import Plan
from planner.inputs import supply


@dataclass
class TeamDemand:
    """Teams, flavors (name, gpu_type, region, option, capacity_gpus, preemptible), hourly demand
    ``demand`` (teams, flavors, T) in GPUs, ``eligible`` (teams, flavors), hours (T,), team policies."""

    teams: list[str]
    flavors: pd.DataFrame  # name (DNS-1123, unique), gpu_type, region, option, capacity_gpus, preemptible
    demand: np.ndarray
    eligible: np.ndarray
    hours: np.ndarray
    weights: np.ndarray
    floors: np.ndarray
    classes_of: dict  # team -> [classes]
    preemptible_team: dict  # team -> True when all its classes tolerate preemption (spot or backfill)
    latency_team: dict  # team -> True when one of its classes has a latency SLO
    # reserved GPUs held as a class's spares (spares_target): gpu_type, region, gpus (peak), classes; not quota
    standby: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=STANDBY_COLUMNS))
    periods: pd.DatetimeIndex | None = None  # each hour's start (the plan's periods): Slurm resets by the calendar


STANDBY_COLUMNS = ["gpu_type", "region", "gpus", "classes"]


def dns_name(text: str) -> str:
    """A DNS-1123 label (lower case, digits, '-'; starts and ends alphanumeric) of at most 63 characters."""
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (s or "x")[:63].rstrip("-") or "x"


def unique_names(names: list[str]) -> dict[str, str]:
    """DNS-1123 names for ``names``, distinct: where two would collide (``team a`` and ``Team-A``) or say
    nothing (non-Latin names), a short hash of the original keeps them apart."""
    import hashlib

    base = {n: dns_name(n) for n in names}
    count: dict[str, int] = {}
    for b in base.values():
        count[b] = count.get(b, 0) + 1
    out = {}
    for n, b in base.items():
        if count[b] > 1 or b == "x":
            tag = hashlib.sha1(n.encode("utf-8")).hexdigest()[:8]
            b = f"{b[:54].rstrip('-')}-{tag}"
        out[n] = b
    return out


def label_value(text: str) -> str:
    """A Kubernetes label value: at most 63 of [A-Za-z0-9-_.], starting and ending alphanumeric."""
    s = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text))[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", s)


def _teams(inp: PlanInputs):
    cfg = inp.config
    teams = list(dict.fromkeys(cfg.team_of(c) for c in inp.classes))
    classes_of = {t: [c for c in inp.classes if cfg.team_of(c) == t] for t in teams}
    weights = np.array([cfg.teams[t].fair_share_weight for t in teams])
    floors = np.array([cfg.teams[t].guaranteed_gpus for t in teams])
    pre = {t: all(cfg.classes[c].phi > 0 or cfg.classes[c].backfill for c in cs) for t, cs in classes_of.items()}
    lat = {t: any(cfg.classes[c].slo is not None for c in cs) for t, cs in classes_of.items()}  # (not "no spot":
    # batch pretraining kept off spot is not latency-critical)
    return teams, classes_of, weights, floors, pre, lat


def class_demand(inp: PlanInputs) -> np.ndarray:
    """(K, T) each class's hourly demand with headroom, expected over the scenarios, in reference GPUs."""
    return np.einsum("s,skt->kt", inp.probability, inp.demand) * (1 + inp.headroom)[:, None]


def split_demand(cls: np.ndarray, speed: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """(K, n, T) each class's demand on each of ``n`` slots (GPU types, or types x regions), in the slot's GPUs.

    ``cls`` (K, T) in reference GPUs, ``speed`` (K, n) (0 = not allowed), ``capacity`` (n,) GPUs. A class
    allowed on one slot puts all its demand there (demand / speed). A class allowed on several splits it,
    the same share every hour: in proportion to the useful GPUs each slot offers it (what is left of the
    slot once the single-slot classes' mean demand is served, times its speed there; the slots' whole
    capacity when nothing is left anywhere), unless those shares, taken by all such classes at once, put
    more demand on a slot than it has in some hour. Then the shares of all of them are set together
    (:func:`joint_shares`): a split that fits every slot in every hour whenever one exists (else the least
    worst-hour excess), and of those the one nearest the proportional shares. No class's demand is ever
    added across slots."""
    allowed = speed > 0
    safe = np.where(allowed, speed, 1.0)
    mean = cls.mean(axis=1) if cls.shape[1] else np.zeros(len(cls))
    pinned = allowed.sum(axis=1) == 1
    load = (np.where(allowed, mean[:, None] / safe, 0.0) * pinned[:, None]).sum(axis=0)
    offer = allowed * np.maximum(np.asarray(capacity, float) - load, 0.0)[None, :] * speed
    whole = allowed * np.asarray(capacity, float)[None, :] * speed
    offer = np.where(offer.sum(axis=1, keepdims=True) > 0, offer, whole)
    total = offer.sum(axis=1, keepdims=True)
    share = np.divide(offer, total, out=np.zeros_like(offer), where=total > 0)
    share = joint_shares(cls, speed, capacity, share)
    return cls[:, None, :] * (share / safe)[:, :, None]


def _load(cls: np.ndarray, speed: np.ndarray, share: np.ndarray) -> np.ndarray:
    """(n, T) each slot's hourly load, in its GPUs, of classes ``cls`` (K, T) taking ``share`` (K, n) there."""
    return np.einsum("kt,kn->nt", cls, share / np.where(speed > 0, speed, 1.0))


_EXACT = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def joint_shares(cls: np.ndarray, speed: np.ndarray, capacity: np.ndarray, share: np.ndarray) -> np.ndarray:
    """(K, n) the shares of the classes allowed on several slots, set together so that the slots hold them.

    ``share`` (K, n) are the shares each class would take alone (rows adding up to 1; a class on one slot
    has 1 there). They are kept when, with every class's hourly demand, no slot's load exceeds its
    capacity in any hour. Otherwise an LP (HiGHS) over the multi-slot classes' shares minimises the sum
    over slots of the worst hour's excess as a fraction of the slot's capacity (0 when a split that fits
    every hour exists), then, holding that, the demand moved from ``share`` (each share's change times
    the class's mean demand, reference GPUs): the fitting split nearest the proportional one. The hours
    are added as constraints only where the current solution breaks them (a cutting-plane loop), so a
    year of hours costs a few small LPs."""
    from scipy import sparse
    from scipy.optimize import linprog

    allowed = speed > 0
    capacity = np.asarray(capacity, float)
    flex = np.flatnonzero(allowed.sum(axis=1) > 1)
    if not len(flex) or not cls.shape[1]:
        return share
    tol = 1e-9 * np.maximum(capacity, 1.0)

    def over(sh):  # (n,) each slot's worst-hour excess in its GPUs
        return np.maximum(_load(cls, speed, sh).max(axis=1) - capacity, 0.0)

    before = over(share)
    if (before <= tol).all():
        return share
    safe = np.where(allowed, speed, 1.0)
    fixed = np.setdiff1d(np.arange(len(cls)), flex)
    slots = np.flatnonzero(allowed[flex].any(axis=0))  # the slots the multi-slot classes may use
    n_s, F = len(slots), len(flex)
    cap = capacity[slots]
    base = _load(cls[fixed], speed[fixed], share[fixed])[slots]  # (n_s, T) the load no share moves
    kk, jj = np.nonzero(allowed[np.ix_(flex, slots)])  # one share x per (multi-slot class, slot it may use)
    m = len(kk)
    per = cls[flex[kk]] / safe[flex[kk], slots[jj]][:, None]  # (m, T) slot GPUs per unit of share, each hour
    on_slot = sparse.csr_matrix((np.ones(m), (jj, np.arange(m))), shape=(n_s, m))
    target = share[flex[kk], slots[jj]]
    # variables: x (m) shares, o (n_s) each slot's worst-hour excess, d (m) |x - target|
    nv = 2 * m + n_s
    a_eq = sparse.hstack([sparse.csr_matrix((np.ones(m), (kk, np.arange(m))), shape=(F, m)),
                          sparse.csr_matrix((F, n_s + m))], format="csr")
    eye = sparse.identity(m, format="csr")
    zero = sparse.csr_matrix((m, n_s))
    a_dev = sparse.vstack([sparse.hstack([eye, zero, -eye]), sparse.hstack([-eye, zero, -eye])], format="csr")
    a_over = sparse.csr_matrix(np.concatenate([np.zeros(m), 1.0 / cap, np.zeros(m)])[None, :])

    def rows(hrs):  # slot j in hour t: sum of per[v, t] x_v over its shares - o_j <= cap_j - base[j, t]
        u = len(hrs)
        r = (jj[:, None] * u + np.arange(u)[None, :]).ravel()
        a = sparse.csr_matrix((per[:, hrs].ravel(), (r, np.repeat(np.arange(m), u))), shape=(n_s * u, m))
        o = sparse.csr_matrix((-np.ones(n_s * u), (np.arange(n_s * u), np.repeat(np.arange(n_s), u))),
                              shape=(n_s * u, n_s))
        return (sparse.hstack([a, o, sparse.csr_matrix((n_s * u, m))], format="csr"),
                (cap[:, None] - base[:, hrs]).ravel())

    def solve(c, a_more, b_more, bounds, hrs):
        while True:
            a, b = rows(hrs)
            res = linprog(c, A_ub=sparse.vstack([a, a_more], format="csr"), b_ub=np.concatenate([b, b_more]),
                          A_eq=a_eq, b_eq=np.ones(F), bounds=bounds, method="highs", options=_EXACT)
            if res.status != 0:
                return None, hrs
            x, o = res.x[:m], res.x[m:m + n_s]
            broken = base + on_slot @ (per * x[:, None]) - cap[:, None] - o[:, None]  # (n_s, T)
            worst = broken.argmax(axis=1)
            new = np.setdiff1d(worst[broken[np.arange(n_s), worst] > tol[slots]], hrs)
            if not len(new):
                return res, hrs
            hrs = np.union1d(hrs, new)

    start = np.unique(np.concatenate([_load(cls, speed, share)[slots].argmax(axis=1), base.argmax(axis=1),
                                      cls[flex].argmax(axis=1)]))
    bounds = np.zeros((nv, 2))
    bounds[:m + n_s, 1] = np.inf
    first, hrs = solve(np.concatenate([np.zeros(m), 1.0 / cap, np.zeros(m)]), sparse.csr_matrix((0, nv)),
                       np.zeros(0), bounds, start)
    if first is None:
        return share
    fits = first.fun <= 1e-9  # a split that fits every hour: then no excess at all, not a tolerance's worth
    bounds[m + n_s:, 1] = np.inf
    if fits:
        bounds[m:m + n_s, 1] = 0.0
    second, _ = solve(np.concatenate([np.zeros(m + n_s), np.maximum(cls[flex].mean(axis=1)[kk], 1e-9)]),
                      sparse.vstack([a_dev, a_over], format="csr"),
                      np.concatenate([target, -target, [0.0 if fits else first.fun * (1 + 1e-7)]]), bounds, hrs)
    x = (second or first).x[:m]
    out = share.copy()
    out[flex] = 0.0
    out[flex[kk], slots[jj]] = np.maximum(x, 0.0)
    out[flex] /= out[flex].sum(axis=1, keepdims=True)
    return out if (over(out) / np.maximum(capacity, 1.0)).sum() < (before / np.maximum(capacity, 1.0)).sum() \
        else share


def _by_team(teams, classes_of, classes, per_class: np.ndarray) -> np.ndarray:
    """Sum (K, ...) per class into (teams, ...) per team."""
    team_of = {c: i for i, t in enumerate(teams) for c in classes_of[t]}
    out = np.zeros((len(teams),) + per_class.shape[1:])
    np.add.at(out, np.array([team_of[c] for c in classes], int), per_class)
    return out


def from_total(inp: PlanInputs, total_gpus) -> TeamDemand:
    """A fixed fleet: ``total_gpus`` is N (one GPU type) or per type / type and region
    (:mod:`planner.quotas.totals`): one flavor per slot, named ``<type>[-<region>]-shared``; a team's
    demand on it = its classes' demand with headroom (expected) on that slot (:func:`split_demand`)."""
    from planner.quotas.totals import slot_speed, slots

    teams, classes_of, weights, floors, pre, lat = _teams(inp)
    fleet = slots(inp, total_gpus)
    speed = slot_speed(inp, fleet)
    lost = np.flatnonzero(~(speed > 0).any(axis=1))
    if len(lost):
        k = int(lost[0])
        need = inp.pools[inp.speed[k] > 0].groupby("gpu_type", sort=True)["region"].agg(lambda r: sorted(set(r)))
        where = [f"{g} in {' or '.join(rs)} (or {g} without a region)" for g, rs in need.items()]
        raise ConfigError(Problem("--total-gpus", f"class '{inp.classes[k]}' runs on none of the GPUs given",
                                  value=", ".join(f"{g}@{r}" if r != "any" else g for g, r in
                                                  zip(fleet["gpu_type"], fleet["region"])),
                                  expected="a total for " + ", or for ".join(where) if where else
                                  "a class with a pool in the price sheet (it has none)",
                                  hint=("add " + " or ".join(f"{g}@{rs[0]}=N" for g, rs in need.items()))
                                  if where else None))
    dem = _by_team(teams, classes_of, inp.classes, split_demand(class_demand(inp), speed,
                                                                fleet["capacity_gpus"].to_numpy(float)))
    eligible = _by_team(teams, classes_of, inp.classes, (speed > 0).astype(float)) > 0
    labels = [f"{g}-shared" if r == "any" else f"{g}-{r}-shared" for g, r in zip(fleet["gpu_type"], fleet["region"])]
    names = unique_names(labels)
    flavors = pd.DataFrame({"name": [names[x] for x in labels], "gpu_type": fleet["gpu_type"].to_list(),
                            "region": fleet["region"].to_list(), "option": "reserved",
                            "capacity_gpus": fleet["capacity_gpus"].astype(int).to_list(), "preemptible": False})
    return TeamDemand(teams, flavors, dem, eligible, inp.hours, weights, floors, classes_of, pre, lat,
                      periods=inp.periods)


def from_plan(plan: Plan) -> TeamDemand:
    """Flavors = the plan's pools x options with their GPUs (reserved owned, peak on-demand and spot use);
    a team's demand on a flavor = the plan's allocation of its classes there (expected over scenarios).

    A class that may run on several GPU types is not split between them hour by hour as the solver
    happened to allocate it: its demand on each type is its hourly demand times the share of its useful
    GPU-hours the plan serves on that type (the same share every hour, in that type's GPUs); within a
    type it follows the plan's allocation to the type's flavors (the hour's, else the horizon's).

    The reserved GPUs the plan holds as a class's spares (``spares_target``: the fleet's ``reserved_spares``) are
    no team's quota: a gang swaps a failed instance for one of them, so lending them out would break the gang
    when it needs them. They are left out of the reserved flavor and listed as ``standby`` (peak GPUs per pool)."""
    inp = plan.inputs
    teams, classes_of, weights, floors, pre, lat = _teams(inp)
    f = plan.fleet
    w = dict(zip(inp.scenarios, inp.probability))
    fleet = f.assign(wt=f["scenario"].map(w).astype(float))
    spares = fleet["reserved_spares"] if "reserved_spares" in fleet else pd.Series(0.0, index=fleet.index)
    fleet = fleet.assign(shareable=fleet["reserved_owned"] - spares, spares=spares)
    rows, standby = [], []
    spare_classes = [c for c in inp.classes if inp.config.classes[c].spares is not None]
    for (g, r), df in fleet.groupby(["gpu_type", "region"], sort=True):
        # reserved owned per period (less the spares held), expected over scenarios (a scenario tree's branches own
        # different fleets; without one every scenario owns the same), at its peak: not one scenario's, so the order
        # of [scenarios] is moot
        owned = (df["shareable"] * df["wt"]).groupby(df["period"]).sum().max()
        held = (df["spares"] * df["wt"]).groupby(df["period"]).sum().max()
        if held > 1e-6:
            p = int(np.flatnonzero((inp.pools["gpu_type"] == g).to_numpy() & (inp.pools["region"] == r).to_numpy())[0])
            standby.append({"gpu_type": g, "region": r, "gpus": int(np.ceil(held - 1e-6)),
                            "classes": [c for c in spare_classes if inp.speed[inp.classes.index(c), p] > 0]})
        for option, cap in (("reserved", owned), *((kd, df[kd].max()) for kd in supply.RENTED if kd in df)):
            cap = int(np.ceil(cap - 1e-6))
            if cap > 0:
                rows.append({"name": dns_name(f"{g}-{r}-{option.replace('_', '-')}"), "gpu_type": g, "region": r,
                             "option": option, "capacity_gpus": cap, "preemptible": supply.is_(option, preemptible=True)})
    flavors = pd.DataFrame(rows, columns=["name", "gpu_type", "region", "option", "capacity_gpus", "preemptible"])
    T, K, F = inp.T, len(inp.classes), len(flavors)
    alloc = np.zeros((K, F, T))  # each class's plan allocation per flavor and hour, expected
    a = plan.allocation_positions
    key = {(r.gpu_type, r.region, r.option): i for i, r in enumerate(flavors.itertuples())}
    if len(a):
        a = a.assign(wt=a["scenario"].map(w).astype(float))
        a["flavor"] = [key.get(x, -1) for x in zip(a["gpu_type"], a["region"], a["option"])]
        a = a[a["flavor"] >= 0]
        np.add.at(alloc, (a["_k"].to_numpy(), a["flavor"].to_numpy(), a["_t"].to_numpy()),
                  (a["gpus"] * a["wt"]).to_numpy())
    dem = _by_team(teams, classes_of, inp.classes, _demand_based_types(inp, flavors, alloc))
    pool_of = {(g, r): p for p, (g, r) in enumerate(zip(inp.pools["gpu_type"], inp.pools["region"]))}
    eligible = np.zeros((len(teams), F), bool)
    team_idx = {t: i for i, t in enumerate(teams)}
    for j, fl in enumerate(flavors.itertuples()):
        p = pool_of[(fl.gpu_type, fl.region)]
        for t in teams:
            ks = [inp.classes.index(c) for c in classes_of[t]]
            ok = inp.speed[ks, p] > 0
            if supply.is_(fl.option, preemptible=True):
                ok &= inp.goodput[ks, p] > 0
            eligible[team_idx[t], j] = bool(ok.any()) or dem[team_idx[t], j].max() > 0
    return TeamDemand(teams, flavors, dem, eligible, inp.hours, weights, floors, classes_of, pre, lat,
                      pd.DataFrame(standby, columns=STANDBY_COLUMNS), periods=inp.periods)


def _demand_based_types(inp: PlanInputs, flavors: pd.DataFrame, alloc: np.ndarray) -> np.ndarray:
    """(K, F, T) ``alloc`` with every multi-type class's split between GPU types set by its demand (see
    :func:`from_plan`); classes on one type keep the plan's allocation."""
    if not len(flavors):
        return alloc
    types = list(dict.fromkeys(flavors["gpu_type"]))
    ft = flavors["gpu_type"].map({g: i for i, g in enumerate(types)}).to_numpy()
    onehot = np.eye(len(types))[ft]  # (F, types)
    pools = inp.pools
    speed = np.stack([np.where(pools["gpu_type"].to_numpy() == g, inp.speed, 0.0).max(axis=1) for g in types],
                     axis=1)  # (K, types)
    flex = (speed > 0).sum(axis=1) > 1
    if not flex.any():
        return alloc
    by_type = np.einsum("kft,fg->kgt", alloc, onehot)  # (K, types, T) in each type's GPUs
    useful = (by_type * inp.hours[None, None, :]).sum(axis=2) * speed  # reference GPU-hours per type
    capacity = flavors.groupby("gpu_type", sort=False)["capacity_gpus"].sum().reindex(types).to_numpy(float)
    cls = class_demand(inp)
    fallback = split_demand(cls, speed, capacity)  # a class the plan did not serve: by what each type offers
    total = useful.sum(axis=1, keepdims=True)
    share = np.divide(useful, total, out=np.zeros_like(useful), where=total > 0)
    safe = np.where(speed > 0, speed, 1.0)
    target = np.where((total > 0)[:, :, None], cls[:, None, :] * (share / safe)[:, :, None], fallback)
    # within a type: the plan's split over the type's flavors this hour, else over the horizon, else capacity
    hour = np.divide(alloc, by_type[:, ft, :], out=np.zeros_like(alloc), where=by_type[:, ft, :] > 0)
    hz = (alloc * inp.hours).sum(axis=2)
    hz_type = (by_type * inp.hours).sum(axis=2)[:, ft]
    horizon = np.divide(hz, hz_type, out=np.zeros_like(hz), where=hz_type > 0)
    pool_of = {(g, r): i for i, (g, r) in enumerate(zip(pools["gpu_type"], pools["region"]))}
    usable = inp.speed[:, [pool_of[(g, r)] for g, r in zip(flavors["gpu_type"], flavors["region"])]] > 0
    cap = usable * (flavors["capacity_gpus"].to_numpy(float) * ~flavors["preemptible"].to_numpy(bool))  # (K, F)
    cap_type = (cap @ onehot)[:, ft]
    by_cap = np.divide(cap, cap_type, out=np.zeros_like(cap), where=cap_type > 0)
    horizon = np.where(hz_type > 0, horizon, by_cap)
    frac = np.where(by_type[:, ft, :] > 0, hour, horizon[:, :, None])
    moved = target[:, ft, :] * frac
    return np.where(flex[:, None, None], moved, alloc)


TOLERANCE = 0.005  # the most an integer weight may move the ratio of any two teams' weights


def _pair_error(v: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """The most rounding ``exact`` (..., n) to ``v`` moves the ratio of any two of them: with q = v / exact,
    max over pairs of |q_i / q_j - 1| = max(q) / min(q) - 1."""
    q = v / exact
    return q.max(axis=-1) / q.min(axis=-1) - 1


def integer_weights(weights, teams=None, high: int = 65535, total: int | None = None,
                    what: str = "integer weights", source: str = "the model file") -> list[int]:
    """Fair-sharing weights as integers in 1..``high`` (and adding up to at most ``total``) that keep the
    ratio of every pair of teams' weights within 0.5% (max over i, j of |(v_i / v_j) / (w_i / w_j) - 1|,
    which is max(v / w) / min(v / w) - 1): the smallest is 10, or 100, 1000... when 10 would move a ratio
    more (1 : 2.5 -> 10 : 25; 1 : 1.01 -> 100 : 101; 1 : 1.0049 : 1.0051 -> 1000 : 1005 : 1005); when the
    range is too narrow for that, the scale of 1..9 that keeps the ratios best. Raises :class:`ConfigError`
    naming the pair of teams, their weights and the representable range when no scale does (never
    clipped, never silently distorted)."""
    w = np.asarray(weights, float)
    if not len(w):
        return []
    teams = list(teams) if teams is not None else [f"#{i + 1}" for i in range(len(w))]
    ratio = w / w.min()

    def ints(scale):
        return np.floor(np.multiply.outer(np.atleast_1d(scale), ratio) + 0.5)

    def fits(v):
        return (v.max(axis=-1) <= high) & ((v.sum(axis=-1) <= total) if total else True)

    scale = 10
    while fits(ints(scale))[0]:
        v = ints(scale)
        if _pair_error(v[0], scale * ratio) <= TOLERANCE:
            return v[0].astype(int).tolist()
        scale *= 10
    small = np.arange(1, 10)
    v = ints(small)
    rel = _pair_error(v, np.multiply.outer(small, ratio))
    rel = np.where(fits(v), rel, np.inf)
    best = int(np.argmin(rel))
    if rel[best] <= TOLERANCE:
        return v[best].astype(int).tolist()
    lo, hi = int(np.argmin(w)), int(np.argmax(w))
    limit = f"whole numbers 1..{high:,}" + (f" adding up to at most {total:,}" if total else "")
    if not np.isfinite(rel).any():
        raise ConfigError(Problem(source, f"'teams.{teams[hi]}.fair_share_weight' is {ratio[hi]:,.6g} times "
                                  f"'teams.{teams[lo]}.fair_share_weight' ({w[lo]:g}): {what} are {limit}",
                                  value=float(w[hi]), expected=f"a largest weight at most {high:,} times the smallest"
                                  + (f" and adding up to at most {total:,} times it" if total else ""),
                                  hint="narrow the fair_share_weight range (Kueue takes decimal weights)"))
    q = v[best] / (small[best] * ratio)
    a, b = int(np.argmax(q)), int(np.argmin(q))  # the pair whose ratio moves most
    worst, other = (a, b) if abs(np.log(q[a])) >= abs(np.log(q[b])) else (b, a)
    beside = f" next to 'teams.{teams[hi]}' ({w[hi]:g})" if hi not in (worst, other) else ""
    show = [other, worst] + ([hi] if beside else [])
    raise ConfigError(Problem(source, f"'teams.{teams[worst]}.fair_share_weight' ({w[worst]:g}) cannot be held "
                              f"to within {TOLERANCE:.1%} of its ratio to 'teams.{teams[other]}' ({w[other]:g})"
                              f"{beside}: {what} are {limit}", value=float(w[worst]),
                              expected="best " + " : ".join(str(int(v[best][i])) for i in show)
                              + f", {rel[best]:.1%} off",
                              hint="round the weights, or narrow their range (Kueue takes decimal weights)"))
