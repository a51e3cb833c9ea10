"""Replay a quota policy on demand traces, hour by hour, and the same with one team gaming it. Pure.

A fluid replay of one pool of ``C`` GPUs shared by ``n`` teams: in each hour team ``i`` asks for
``d_i(t)`` GPUs and is admitted ``a_i(t) <= d_i(t)``; ``sum_i a_i(t) <= C``.

Policies:
- ``quota``: Kueue-style. A team first gets ``min(d_i, nominal_i)`` of its own quota (reclaiming what
  it lent); the unused quota of the others, each up to its lending limit, is lent by weighted max-min
  (fair-sharing weights) to teams still waiting, each up to its borrowing limit.
- ``quota_hardened``: the same with the countermeasures: quotas from measured usage (not declared
  requests), idle reclaim (borrowed GPUs a team does not use go back: a team borrows only for work it
  runs), priority capped for borrowing (a team's high priority does not jump the fair share).
- ``equal_split``: static ``C / n`` per team, no borrowing.
- ``fcfs``: no quotas, first come first served: running work keeps its GPUs; free GPUs go to the team
  that has waited longest (ties by team order).

Measures per team: demanded and admitted GPU-hours, waiting GPU-hours and hours, GPUs taken back from
running work (preempted) and how often, and for the pool its utilisation and Jain's fairness index of the
teams' satisfaction ratios ``admitted / demanded``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.quotas.policy import waterfill

POLICIES = ("quota", "quota_hardened", "equal_split", "fcfs")
BEHAVIOURS = {
    "inflate": "inflates its requests by a factor (declares and queues more than it runs)",
    "hoard": "keeps its whole quota busy with placeholder jobs so none of it is lent",
    "split": "splits jobs into many small ones to slip into gaps first",
    "priority": "marks its batch work high priority to borrow first and never be preempted",
}
COUNTERMEASURES = {
    "inflate": "quotas from measured usage, not declared requests; idle reclaim of borrowed GPUs",
    "hoard": "no scheduler rule sees a placeholder job as idle: usage-based charging (showback bills the "
             "held GPU-hours to the team); the others' loss is bounded by the hoarder's nominal quota",
    "split": "fair sharing by weight (admission is by share, not by arrival): splitting gains nothing",
    "priority": "borrowWithinCohort.maxPriorityThreshold / priority classes only for SLO work: priority "
                "does not buy borrowing",
}


@dataclass
class Replay:
    """Per-team results of one replay and the pool's figures."""

    teams: pd.DataFrame  # team, demanded/admitted/useful/waiting GPU-hours, hours waiting, preemptions
    utilisation: float
    jain: float
    masks: dict | None = None  # per hour and team (T, n): "waiting", "below_guarantee", "preempted"


def jain_index(x: np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when equal, 1/n when one takes all."""
    x = np.asarray(x, float)
    if not len(x) or not np.any(x > 0):
        return 1.0
    return float(x.sum() ** 2 / (len(x) * (x ** 2).sum()))


def _quota_hours(req, nominal, borrow, lend, weights, first=None):
    """Admitted GPUs per hour (T, n) under the quota policy; ``first`` borrows ahead of fair share."""
    own = np.minimum(req, nominal[None, :])
    lendable = np.minimum(nominal[None, :] - own, lend[None, :]).clip(min=0).sum(axis=1)
    want = np.minimum(req - own, borrow[None, :])
    got = np.zeros_like(req)
    if first is not None:
        got[:, first] = np.minimum(want[:, first], lendable)
        lendable = lendable - got[:, first]
        want = want.copy()
        want[:, first] = 0.0
    got += waterfill(lendable, want, weights)
    return own + got


def _fcfs_hours(req, capacity, first=None):
    T, n = req.shape
    out = np.zeros_like(req)
    prev = np.zeros(n)
    age = np.zeros(n)
    for t in range(T):  # a queue has state: this is a simulation, hour by hour
        keep = np.minimum(req[t], prev)
        free = capacity - keep.sum()
        unmet = req[t] - keep
        order = np.lexsort((np.arange(n), -age))
        if first is not None:
            order = np.concatenate([[first], order[order != first]])
        for i in order:
            if free <= 1e-12:
                break
            give = min(unmet[i], free)
            keep[i] += give
            free -= give
        out[t] = keep
        age = np.where(req[t] - keep > 1e-9, age + 1, 0)
        prev = keep
    return out


def admitted(policy: str, req: np.ndarray, capacity: float, quotas: pd.DataFrame, weights: np.ndarray,
             first: int | None = None) -> np.ndarray:
    """GPUs admitted per hour and team (T, n) for ``policy`` on requests ``req`` (T, n)."""
    nominal = quotas["nominal_gpus"].to_numpy(float)
    borrow = quotas["borrowing_limit_gpus"].to_numpy(float)
    lend = quotas["lending_limit_gpus"].to_numpy(float)
    if policy in ("quota", "quota_hardened"):
        return _quota_hours(req, nominal, borrow, lend, weights, first if policy == "quota" else None)
    if policy == "equal_split":
        return np.minimum(req, capacity / req.shape[1])
    if policy == "fcfs":
        return _fcfs_hours(req, capacity, first)
    raise ValueError(f"unknown policy {policy!r}")


def measure(names: list[str], demand: np.ndarray, admit: np.ndarray, hours: np.ndarray,
            capacity: float, entitled: np.ndarray | None = None) -> Replay:
    """The replay's figures from true demand (T, n) and admitted GPUs (T, n); useful = min(admitted, demand).

    ``entitled`` (n,): the nominal quotas as the yardstick of guarantees: hours in which a team got less
    than ``min(demand, entitled)`` count as ``hours_below_guarantee``, whatever the policy."""
    useful = np.minimum(admit, demand)
    h = hours[:, None]
    prev = np.vstack([np.zeros((1, admit.shape[1])), useful[:-1]])
    taken = np.clip(np.minimum(prev, demand) - useful, 0.0, None)  # running work that lost its GPUs
    wait = np.clip(demand - useful, 0.0, None)
    demanded = (demand * h).sum(axis=0)
    got = (useful * h).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(demanded > 0, got / demanded, 1.0)
    teams = pd.DataFrame({
        "team": names, "demanded_gpu_hours": demanded, "admitted_gpu_hours": got,
        "held_gpu_hours": (admit * h).sum(axis=0),
        "satisfaction": ratio, "waiting_gpu_hours": (wait * h).sum(axis=0),
        "hours_waiting": ((wait > 0.5) * h).sum(axis=0),
        "preempted_gpu_hours": (taken * h).sum(axis=0), "times_preempted": (taken > 0.5).sum(axis=0),
    })
    masks = {"waiting": wait > 0.5, "preempted": taken > 0.5}
    if entitled is not None:
        short = np.minimum(demand, entitled[None, :]) - useful > 0.5
        teams["hours_below_guarantee"] = (short * h).sum(axis=0)
        masks["below_guarantee"] = short
    H = hours.sum()
    util = float((admit.sum(axis=1) * hours).sum() / (capacity * H)) if capacity > 0 and H > 0 else 0.0
    return Replay(teams=teams, utilisation=util, jain=jain_index(ratio[demanded > 0]), masks=masks)


def replay(names, demand, hours, capacity, quotas, weights, policies=POLICIES) -> dict[str, Replay]:
    """Every policy on the honest demand (T, n)."""
    nominal = quotas["nominal_gpus"].to_numpy(float)
    return {p: measure(names, demand, admitted(p, demand, capacity, quotas, weights), hours, capacity, nominal)
            for p in policies}


def gaming(names, demand, hours, capacity, quotas_fn, weights, gamer: int, factor: float = 1.5,
           policies=POLICIES) -> pd.DataFrame:
    """One row per (behaviour, policy): the gamer's gain and the others' loss in useful GPU-hours.

    ``quotas_fn(declared_demand) -> quotas`` recomputes the quota policy from declared demand (T, n).
    """
    honest_q = quotas_fn(demand)
    honest = {p: measure(names, demand, admitted(p, demand, capacity, honest_q, weights), hours, capacity)
              for p in policies}
    rows = []
    n = demand.shape[1]
    for behaviour in BEHAVIOURS:
        for p in policies:
            req, q, first = demand.copy(), honest_q, None
            if behaviour == "inflate":
                req[:, gamer] *= factor
                if p == "quota":  # declared demand sets the quota
                    q = quotas_fn(req)
            elif behaviour == "hoard":
                share = q["nominal_gpus"].to_numpy(float)[gamer] if p.startswith("quota") else capacity / n
                req[:, gamer] = np.maximum(req[:, gamer], share)
            elif behaviour == "split":  # arrival order matters only without quotas
                first = gamer if p == "fcfs" else None
            elif behaviour == "priority":  # jumps the queue (fcfs) or the fair share (quota, not hardened)
                first = gamer
            if p == "quota_hardened" and behaviour == "inflate":
                req = demand.copy()  # idle reclaim: requests beyond what runs are not held
            got = measure(names, demand, admitted(p, req, capacity, q, weights, first), hours, capacity)
            base = honest[p].teams
            gain = float(got.teams["admitted_gpu_hours"].iat[gamer] - base["admitted_gpu_hours"].iat[gamer])
            others = [i for i in range(n) if i != gamer]
            loss = float(base["admitted_gpu_hours"].to_numpy()[others].sum()
                         - got.teams["admitted_gpu_hours"].to_numpy()[others].sum())
            idle_held = float(got.teams["held_gpu_hours"].iat[gamer] - got.teams["admitted_gpu_hours"].iat[gamer])
            rows.append({"behaviour": behaviour, "policy": p, "gamer": names[gamer],
                         "what_the_team_does": BEHAVIOURS[behaviour],
                         "gamer_gain_gpu_hours": gain, "others_loss_gpu_hours": loss,
                         "gamer_idle_held_gpu_hours": idle_held,
                         "jain_honest": honest[p].jain, "jain_gamed": got.jain,
                         "countermeasure": COUNTERMEASURES[behaviour]})
    return pd.DataFrame(rows)
