"""Quotas, replay and gaming for a :class:`~planner.quotas.build.TeamDemand`, per flavor and in total."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.quotas.build import TeamDemand
from planner.quotas.policy import flavor_quotas, quota_table
from planner.quotas.replay import POLICIES, gaming, jain_index, replay


@dataclass
class QuotaResult:
    """Everything ``planner quotas`` reports."""

    data: TeamDemand
    quotas: pd.DataFrame  # team x flavor
    replay: pd.DataFrame  # policy x team: figures summed over flavors
    pool: pd.DataFrame  # policy: utilisation, Jain's index
    gaming: pd.DataFrame  # behaviour x policy
    gamer: str
    percentile: float
    model: str = "the model file"  # where the teams' weights come from, for the exports' messages


def analyse(data: TeamDemand, percentile: float = 50.0, gamer: str | None = None,
            inflate: float = 1.5) -> QuotaResult:
    """Quotas by the policy of :mod:`planner.quotas.policy`, replayed on the same demand with every policy,
    and with ``gamer`` (default: the team that waits most under the quota policy) gaming each."""
    q = quota_table(data.demand, data.teams, data.flavors, data.weights, data.floors, data.eligible, percentile)
    if len(q):  # a flavor's GPUs are of one type: quotas are added up per type, never across types
        q.insert(2, "gpu_type", q["flavor"].map(dict(zip(data.flavors["name"], data.flavors["gpu_type"]))))
    n = len(data.teams)
    per_policy = {p: [] for p in POLICIES}
    T, n = len(data.hours), len(data.teams)
    hour_masks = {p: {m: np.zeros((T, n), bool) for m in ("waiting", "below_guarantee", "preempted")}
                  for p in POLICIES}
    games = []
    for f, fl in enumerate(data.flavors.itertuples()):
        who = np.flatnonzero(data.eligible[:, f])
        if not len(who):
            continue
        names = [data.teams[i] for i in who]
        fq = q[q["flavor"] == fl.name].set_index("team").loc[names].reset_index()
        for p, r in replay(names, data.demand[who, f].T, data.hours, fl.capacity_gpus, fq,
                           data.weights[who]).items():
            per_policy[p].append(r.teams.assign(capacity_gpu_hours=fl.capacity_gpus * data.hours.sum()))
            for m, mask in r.masks.items():  # an hour counts once for a team, whatever its flavors
                hour_masks[p][m][:, who] |= mask
    if gamer:
        g = data.teams.index(gamer)
    else:  # the team with the most reason to game: the most waiting under the quota policy (else the largest)
        waits = pd.concat(per_policy["quota"]).groupby("team")["waiting_gpu_hours"].sum()
        if len(waits) and waits.max() > 1.0:
            g = data.teams.index(str(waits.idxmax()))
        else:
            g = int(np.argmax((data.demand.sum(axis=1) * data.hours).sum(axis=1)))
    for f, fl in enumerate(data.flavors.itertuples()):
        who = np.flatnonzero(data.eligible[:, f])
        if not len(who):
            continue
        names = [data.teams[i] for i in who]
        dem = data.demand[who, f].T  # (T, m)
        fq = q[q["flavor"] == fl.name].set_index("team").loc[names].reset_index()
        w = data.weights[who]
        if g in who:
            floors = fq["guaranteed_floor_gpus"].to_numpy(float)

            def quotas_fn(declared, fl=fl, w=w, floors=floors):
                return flavor_quotas(declared.T, int(fl.capacity_gpus), w, floors, percentile)
            games.append(gaming(names, dem, data.hours, fl.capacity_gpus, quotas_fn, w,
                                int(np.flatnonzero(who == g)[0]), inflate))
    rows, pool = [], []
    for p, parts in per_policy.items():
        if not parts:
            continue
        t = pd.concat(parts).groupby("team", sort=False).sum(numeric_only=True).reindex(data.teams).fillna(0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            t["satisfaction"] = np.where(t["demanded_gpu_hours"] > 0,
                                         t["admitted_gpu_hours"] / t["demanded_gpu_hours"], 1.0)
        hm = hour_masks[p]
        t["hours_waiting"] = (hm["waiting"] * data.hours[:, None]).sum(axis=0)
        t["hours_below_guarantee"] = (hm["below_guarantee"] * data.hours[:, None]).sum(axis=0)
        t["times_preempted"] = hm["preempted"].sum(axis=0)
        t = t.reset_index().assign(policy=p)
        rows.append(t)
        cap = sum(part["capacity_gpu_hours"].iat[0] for part in parts)
        active = t["demanded_gpu_hours"] > 0
        pool.append({"policy": p, "utilisation": float(t["held_gpu_hours"].sum() / cap) if cap else 0.0,
                     "jain_index": jain_index(t.loc[active, "satisfaction"].to_numpy()),
                     "admitted_gpu_hours": float(t["admitted_gpu_hours"].sum()),
                     "waiting_gpu_hours": float(t["waiting_gpu_hours"].sum()),
                     "preempted_gpu_hours": float(t["preempted_gpu_hours"].sum()),
                     "hours_below_guarantee": float(t["hours_below_guarantee"].sum())})
    replayed = pd.concat(rows, ignore_index=True).drop(columns=["capacity_gpu_hours"])
    gm = pd.concat(games, ignore_index=True) if games else pd.DataFrame()
    if len(gm):
        keys = ["behaviour", "policy", "gamer", "what_the_team_does", "countermeasure"]
        gm = gm.groupby(keys, sort=False).agg(
            gamer_gain_gpu_hours=("gamer_gain_gpu_hours", "sum"), others_loss_gpu_hours=("others_loss_gpu_hours", "sum"),
            gamer_idle_held_gpu_hours=("gamer_idle_held_gpu_hours", "sum")).reset_index()
        for col in ("gamer_gain_gpu_hours", "others_loss_gpu_hours", "gamer_idle_held_gpu_hours"):
            gm[col] = gm[col].round(6) + 0.0  # no float dust, no -0
    return QuotaResult(data=data, quotas=q, replay=replayed, pool=pd.DataFrame(pool), gaming=gm,
                       gamer=data.teams[g], percentile=percentile)
