"""Backfill with internal preemption: the reclaim rate and goodput of work on idle reserved GPUs. Pure.

A class with ``backfill = true`` may run on reserved GPUs that the classes with priority (every class
without backfill) leave idle; when their requirement rises, they take GPUs back and the backfilled job
on them is preempted, exactly as spot is (Daly's model, :mod:`planner.sizing.economics`).

Estimator of the reclaim rate in pool ``p`` (documented in docs/slo-and-pooling.md): let ``R_t`` be the
GPUs of pool ``p`` the priority classes would need in period ``t`` if they ran there alone
(``(1 + eta_k) d[k,t] / s[k,p]`` summed over the priority classes allowed in ``p``, expected over the
scenarios). In a pool sized to their peak, backfill has ``sum_t h_t (max R - R_t)`` idle GPU-hours, on
which ``G = j m_p`` GPU gangs (``j = ceil(job_gpus / m_p)`` instances) run: on average
``sum_t h_t (max R - R_t) / (G H)`` of them. When the requirement rises by ``r_t = R_t - R_{t-1} > 0``
GPUs, the scheduler takes back whole gangs, the fewest that free them (Kueue and Volcano preempt whole
workloads): ``ceil(r_t / G)`` jobs. A backfilled job is therefore stopped at the rate
``lam = sum_t ceil(r_t / G) / (sum_t h_t (max R - R_t) / G)`` per hour (plus hardware failures, when a
failure rate is set). The class's goodput on backfill is Daly's ``g`` at that rate with its checkpoint
and restart times (optimal interval unless the class fixes one), or ``backfill_goodput`` where the model
file overrides it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.sizing import economics


def priority_requirement(demand: np.ndarray, probability: np.ndarray, headroom: np.ndarray,
                         speed: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """(P, T): GPUs of each pool the priority classes would need there alone (expected over scenarios)."""
    expected = np.einsum("s,skt->kt", probability, demand) * (1.0 + headroom)[:, None]  # (K, T)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_gpu = np.where((speed > 0) & priority[:, None], 1.0 / np.where(speed > 0, speed, 1.0), 0.0)  # (K, P)
    return np.einsum("kp,kt->pt", per_gpu, expected)


def rises_and_idle(requirement: np.ndarray, hours: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, T-1) rises of the requirement between periods and (P,) idle GPU-hours under its peak."""
    rises = np.clip(np.diff(requirement, axis=1), 0.0, None) if requirement.shape[1] > 1 \
        else np.zeros((requirement.shape[0], 0))
    idle = ((requirement.max(axis=1, keepdims=True) - requirement) * hours[None, :]).sum(axis=1) \
        if requirement.shape[1] else np.zeros(requirement.shape[0])
    return rises, idle


def job_reclaim_rate(rises: np.ndarray, idle_gpu_hours: float, gang_gpus: float) -> float:
    """Preemptions per hour of one backfilled gang of ``gang_gpus`` GPUs (whole gangs are taken back)."""
    if idle_gpu_hours <= 0 or gang_gpus <= 0:
        return 0.0
    jobs_preempted = np.ceil(rises[rises > 1e-9] / gang_gpus - 1e-9).sum()
    return float(jobs_preempted * gang_gpus / idle_gpu_hours)


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
    rises, idle = rises_and_idle(requirement, hours)
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
            gang = float(economics.instances_spanned(job, m)) * m
            lam_reclaim = job_reclaim_rate(rises[p], float(idle[p]), gang)
            lam = lam_reclaim + float(economics.job_interruption_rate(0.0, job, m, fail))
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
                "idle_gpu_hours": float(idle[p]),
                "gpus_reclaimed": float(rises[p].sum()),
                "job_gpus": float(job), "job_reclaims_per_hour": lam_reclaim,
                "job_interruptions_per_hour": lam,
                "checkpoint_minutes": pol.checkpoint_minutes, "restart_minutes": pol.restart_minutes,
                "interval_minutes": tau * 60.0, "goodput": g,
                "goodput_source": "backfill_goodput" if pol.backfill_goodput is not None else "model",
            })
    return useful, pd.DataFrame(rows)
