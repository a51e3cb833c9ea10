"""The fleet as scheduler flavors and each team's demand on them, from a plan or a fixed total."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import ConfigError, Problem
from ..inputs import PlanInputs
from ..results import Plan


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
    latency_team: dict  # team -> True when one of its classes has an SLO or may not use spot


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
    lat = {t: any(cfg.classes[c].slo is not None or cfg.classes[c].phi == 0 for c in cs)
           for t, cs in classes_of.items()}
    return teams, classes_of, weights, floors, pre, lat


def class_demand(inp: PlanInputs) -> np.ndarray:
    """(K, T) each class's hourly demand with headroom, expected over the scenarios, in reference GPUs."""
    return np.einsum("s,skt->kt", inp.probability, inp.demand) * (1 + inp.headroom)[:, None]


def split_demand(cls: np.ndarray, speed: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """(K, n, T) each class's demand on each of ``n`` slots (GPU types, or types x regions), in the slot's GPUs.

    ``cls`` (K, T) in reference GPUs, ``speed`` (K, n) (0 = not allowed), ``capacity`` (n,) GPUs. A class
    allowed on one slot puts all its demand there (demand / speed). A class allowed on several splits it,
    the same share every hour, in proportion to the useful GPUs each slot offers it: what is left of the
    slot once the single-slot classes' mean demand is served, times its speed there (the slots' whole
    capacity when nothing is left anywhere). No class's demand is ever added across slots."""
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
    return cls[:, None, :] * (share / safe)[:, :, None]


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
    from .totals import slot_speed, slots

    teams, classes_of, weights, floors, pre, lat = _teams(inp)
    fleet = slots(inp, total_gpus)
    speed = slot_speed(inp, fleet)
    lost = np.flatnonzero(~(speed > 0).any(axis=1))
    if len(lost):
        k = int(lost[0])
        types = sorted(inp.pools["gpu_type"][inp.speed[k] > 0].unique())
        raise ConfigError(Problem("--total-gpus", f"class '{inp.classes[k]}' runs on none of the GPUs given",
                                  value=", ".join(f"{g}@{r}" if r != "any" else g for g, r in
                                                  zip(fleet["gpu_type"], fleet["region"])),
                                  expected="a total for one of its GPU types: " + ", ".join(types)))
    dem = _by_team(teams, classes_of, inp.classes, split_demand(class_demand(inp), speed,
                                                                fleet["capacity_gpus"].to_numpy(float)))
    eligible = _by_team(teams, classes_of, inp.classes, (speed > 0).astype(float)) > 0
    labels = [f"{g}-shared" if r == "any" else f"{g}-{r}-shared" for g, r in zip(fleet["gpu_type"], fleet["region"])]
    names = unique_names(labels)
    flavors = pd.DataFrame({"name": [names[x] for x in labels], "gpu_type": fleet["gpu_type"].to_list(),
                            "region": fleet["region"].to_list(), "option": "reserved",
                            "capacity_gpus": fleet["capacity_gpus"].astype(int).to_list(), "preemptible": False})
    return TeamDemand(teams, flavors, dem, eligible, inp.hours, weights, floors, classes_of, pre, lat)


def from_plan(plan: Plan) -> TeamDemand:
    """Flavors = the plan's pools x options with their GPUs (reserved owned, peak on-demand and spot use);
    a team's demand on a flavor = the plan's allocation of its classes there (expected over scenarios).

    A class that may run on several GPU types is not split between them hour by hour as the solver
    happened to allocate it: its demand on each type is its hourly demand times the share of its useful
    GPU-hours the plan serves on that type (the same share every hour, in that type's GPUs); within a
    type it follows the plan's allocation to the type's flavors (the hour's, else the horizon's)."""
    inp = plan.inputs
    teams, classes_of, weights, floors, pre, lat = _teams(inp)
    f = plan.fleet
    w = dict(zip(inp.scenarios, inp.probability))
    fleet = f.assign(wt=f["scenario"].map(w))
    rows = []
    for (g, r), df in fleet.groupby(["gpu_type", "region"], sort=True):
        owned = df[df["scenario"] == inp.scenarios[0]]["reserved_owned"].max()
        for option, cap in (("reserved", owned), ("on_demand", df["on_demand"].max()), ("spot", df["spot"].max())):
            cap = int(np.ceil(cap - 1e-6))
            if cap > 0:
                rows.append({"name": dns_name(f"{g}-{r}-{option.replace('_', '-')}"), "gpu_type": g, "region": r,
                             "option": option, "capacity_gpus": cap, "preemptible": option == "spot"})
    flavors = pd.DataFrame(rows, columns=["name", "gpu_type", "region", "option", "capacity_gpus", "preemptible"])
    T, K, F = inp.T, len(inp.classes), len(flavors)
    alloc = np.zeros((K, F, T))  # each class's plan allocation per flavor and hour, expected
    a = plan.allocation_positions
    key = {(r.gpu_type, r.region, r.option): i for i, r in enumerate(flavors.itertuples())}
    if len(a):
        a = a.assign(wt=a["scenario"].map(w))
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
            if fl.option == "spot":
                ok &= inp.goodput[ks, p] > 0
            eligible[team_idx[t], j] = bool(ok.any()) or dem[team_idx[t], j].max() > 0
    return TeamDemand(teams, flavors, dem, eligible, inp.hours, weights, floors, classes_of, pre, lat)


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


TOLERANCE = 0.005  # the most an integer weight may move a team's ratio to the smallest weight


def integer_weights(weights, teams=None, high: int = 65535, total: int | None = None,
                    what: str = "integer weights", source: str = "the model file") -> list[int]:
    """Fair-sharing weights as integers in 1..``high`` (and adding up to at most ``total``) that keep every
    team's ratio to the smallest weight within 0.5%: the smallest is 10, or 100, 1000... when 10 would
    move a ratio more (1 : 2.5 -> 10 : 25; 1 : 1.01 -> 100 : 101); when the range is too narrow for
    that, the scale of 1..9 that keeps the ratios best. Raises :class:`ConfigError` naming the team, its
    weight and the representable range when no scale does (never clipped, never silently distorted)."""
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
        if (np.abs(v[0] - scale * ratio) / (scale * ratio)).max() <= TOLERANCE:
            return v[0].astype(int).tolist()
        scale *= 10
    small = np.arange(1, 10)
    v = ints(small)
    rel = (np.abs(v - np.multiply.outer(small, ratio)) / np.multiply.outer(small, ratio)).max(axis=1)
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
    scaled = v[best] / small[best]
    worst = int(np.argmax(np.abs(scaled - ratio) / ratio))
    raise ConfigError(Problem(source, f"'teams.{teams[worst]}.fair_share_weight' ({w[worst]:g}) cannot be held "
                              f"to within {TOLERANCE:.1%} of its ratio to 'teams.{teams[lo]}' ({w[lo]:g}) next to "
                              f"'teams.{teams[hi]}' ({w[hi]:g}): {what} are {limit}", value=float(w[worst]),
                              expected=f"best {int(v[best][lo])} : {int(v[best][worst])} : {int(v[best][hi])}, "
                              f"{abs(scaled[worst] / ratio[worst] - 1):.1%} off",
                              hint="round the weights, or narrow their range (Kueue takes decimal weights)"))
