"""The fleet as scheduler flavors and each team's demand on them, from a plan or a fixed total."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

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


def from_total(inp: PlanInputs, total_gpus: int) -> TeamDemand:
    """One flavor of ``total_gpus`` GPUs; a team's demand = its classes' demand with headroom (expected)."""
    teams, classes_of, weights, floors, pre, lat = _teams(inp)
    cls_demand = np.einsum("s,skt->kt", inp.probability, inp.demand) * (1 + inp.headroom)[:, None]
    dem = np.stack([cls_demand[[inp.classes.index(c) for c in classes_of[t]]].sum(axis=0) for t in teams])
    gpu = inp.pools["gpu_type"].iat[0] if inp.pools["gpu_type"].nunique() == 1 else "gpu"
    flavors = pd.DataFrame({"name": [dns_name(f"{gpu}-shared")], "gpu_type": [gpu], "region": ["any"],
                            "option": ["reserved"], "capacity_gpus": [int(total_gpus)], "preemptible": [False]})
    return TeamDemand(teams, flavors, dem[:, None, :], np.ones((len(teams), 1), bool), inp.hours, weights,
                      floors, classes_of, pre, lat)


def from_plan(plan: Plan) -> TeamDemand:
    """Flavors = the plan's pools x options with their GPUs (reserved owned, peak on-demand and spot use);
    a team's demand on a flavor = the plan's allocation of its classes there (expected over scenarios)."""
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
    T = inp.T
    dem = np.zeros((len(teams), len(flavors), T))
    eligible = np.zeros((len(teams), len(flavors)), bool)
    a = plan.allocation_positions
    key = {(r.gpu_type, r.region, r.option): i for i, r in enumerate(flavors.itertuples())}
    team_idx = {t: i for i, t in enumerate(teams)}
    if len(a):
        a = a.assign(team=a["workload_class"].map(inp.config.team_of), wt=a["scenario"].map(w))
        a["flavor"] = [key.get(x, -1) for x in zip(a["gpu_type"], a["region"], a["option"])]
        a = a[a["flavor"] >= 0]
        np.add.at(dem, (a["team"].map(team_idx).to_numpy(), a["flavor"].to_numpy(), a["_t"].to_numpy()),
                  (a["gpus"] * a["wt"]).to_numpy())
    pool_of = {(g, r): p for p, (g, r) in enumerate(zip(inp.pools["gpu_type"], inp.pools["region"]))}
    for j, fl in enumerate(flavors.itertuples()):
        p = pool_of[(fl.gpu_type, fl.region)]
        for t in teams:
            ks = [inp.classes.index(c) for c in classes_of[t]]
            ok = inp.speed[ks, p] > 0
            if fl.option == "spot":
                ok &= inp.goodput[ks, p] > 0
            eligible[team_idx[t], j] = bool(ok.any()) or dem[team_idx[t], j].max() > 0
    return TeamDemand(teams, flavors, dem, eligible, inp.hours, weights, floors, classes_of, pre, lat)


def integer_weights(weights) -> list[int]:
    """Fair-sharing weights as integers (Volcano weight, Slurm Fairshare): 10 for the smallest, the
    others in proportion, rounded half up (1 : 2.5 -> 10 : 25), within 1..65535."""
    w = np.asarray(weights, float)
    low = float(w.min()) if len(w) else 1.0
    return [int(min(65535, max(1, np.floor(10.0 * x / low + 0.5)))) for x in w]
