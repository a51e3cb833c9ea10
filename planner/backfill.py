"""Backfill with internal preemption: the reclaim rate and goodput of work on idle reserved GPUs. Pure.

A class with ``backfill = true`` may run on reserved GPUs that the classes with priority (every class
without backfill) leave idle; when their requirement rises, they take GPUs back and the backfilled job
on them is preempted, exactly as spot is (Daly's model, :mod:`planner.economics`).

Estimator of the reclaim rate in pool ``p`` (documented in docs/slo-and-pooling.md): let ``R_t`` be the
GPUs of pool ``p`` the priority classes would need in period ``t`` if they ran there alone
(``(1 + eta_k) d[k,t] / s[k,p]`` summed over the priority classes allowed in ``p``, expected over the
scenarios). In a pool sized to their peak, backfill has ``sum_t h_t (max R - R_t)`` idle GPU-hours and
loses ``sum_t max(0, R_t - R_{t-1})`` GPUs to reclaims. Each reclaimed GPU preempts the job on it, so the
reclaim rate per backfilled GPU-hour is their ratio, per instance ``m_p`` times that, and a gang of
``j = ceil(job_gpus / m_p)`` instances is stopped at ``j`` times the instance rate (plus hardware
failures, when a failure rate is set). The class's goodput on backfill is Daly's ``g`` at that rate with
its checkpoint and restart times (optimal interval unless the class fixes one), or ``backfill_goodput``
where the model file overrides it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import economics


def priority_requirement(demand: np.ndarray, probability: np.ndarray, headroom: np.ndarray,
                         speed: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """(P, T): GPUs of each pool the priority classes would need there alone (expected over scenarios)."""
    expected = np.einsum("s,skt->kt", probability, demand) * (1.0 + headroom)[:, None]  # (K, T)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_gpu = np.where((speed > 0) & priority[:, None], 1.0 / np.where(speed > 0, speed, 1.0), 0.0)  # (K, P)
    return np.einsum("kp,kt->pt", per_gpu, expected)


def reclaim_rate_per_gpu_hour(requirement: np.ndarray, hours: np.ndarray) -> np.ndarray:
    """(P,): GPUs taken back per idle (backfillable) GPU-hour, from the requirement's rises."""
    if requirement.shape[1] < 2:
        return np.zeros(requirement.shape[0])
    rises = np.clip(np.diff(requirement, axis=1), 0.0, None).sum(axis=1)
    idle = ((requirement.max(axis=1, keepdims=True) - requirement) * hours[None, :]).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(idle > 0, rises / np.where(idle > 0, idle, 1.0), 0.0)


def backfill_table(classes: list[str], policies: dict, pools: pd.DataFrame, speed: np.ndarray,
                   reliability: np.ndarray, demand: np.ndarray, probability: np.ndarray,
                   headroom: np.ndarray, hours: np.ndarray, fleet_failure: float) -> tuple[np.ndarray, pd.DataFrame]:
    """The (K, P) share of a reserved GPU-hour that is useful (reliability, or the backfill goodput)
    and one row per (backfill class, pool) with the economics behind it."""
    useful = reliability.copy()
    backfill = np.array([policies[c].backfill for c in classes], dtype=bool)
    if not backfill.any():
        return useful, pd.DataFrame()
    requirement = priority_requirement(demand, probability, headroom, speed, ~backfill)
    rate = reclaim_rate_per_gpu_hour(requirement, hours)
    rows = []
    for k in np.flatnonzero(backfill):
        pol = policies[classes[k]]
        fail = pol.failure_rate_per_gpu_hour
        fail = fleet_failure if fail is None else fail
        C, R = pol.checkpoint_minutes / 60.0, pol.restart_minutes / 60.0
        tau_fixed = None if pol.checkpoint_interval_minutes is None else pol.checkpoint_interval_minutes / 60.0
        for p in np.flatnonzero(speed[k] > 0):
            m = float(pools["m"].iat[p])
            job = pol.job_gpus if pol.job_gpus is not None else m
            lam = float(economics.job_interruption_rate(rate[p] * m, job, m, fail))
            tau = float(economics.optimal_interval(lam, C)) if tau_fixed is None else tau_fixed
            g = float(economics.goodput(lam, tau, C, R))
            if pol.backfill_goodput is not None:
                g = pol.backfill_goodput
            useful[k, p] = g
            rows.append({
                "workload_class": classes[k], "gpu_type": pools["gpu_type"].iat[p],
                "region": pools["region"].iat[p], "class_index": int(k), "pool": int(p),
                "priority_peak_gpus": float(requirement[p].max()) if requirement.shape[1] else 0.0,
                "priority_mean_gpus": float(np.average(requirement[p], weights=hours)) if hours.sum() else 0.0,
                "reclaims_per_gpu_hour": float(rate[p]),
                "job_gpus": float(job), "job_interruptions_per_hour": lam,
                "checkpoint_minutes": pol.checkpoint_minutes, "restart_minutes": pol.restart_minutes,
                "interval_minutes": tau * 60.0, "goodput": g,
                "goodput_source": "backfill_goodput" if pol.backfill_goodput is not None else "model",
            })
    return useful, pd.DataFrame(rows)
