"""GPU-hour budgets over time (Slurm ``GrpTRESMins``) beside the GPU caps, and their replay. Pure.

A team's budget is the GPU-hours the quota policy gives it over the planning horizon (its held GPU-hours
in the ``quota`` replay), scaled to Slurm's usage reset period (``PriorityUsageResetPeriod``: the
shortest of DAILY, WEEKLY, MONTHLY, QUARTERLY, YEARLY that covers the horizon, budget pro rata:
``held x period_hours / horizon_hours``) and multiplied by ``slack``. Slurm stops starting a team's jobs
once its usage reaches the budget (with ``PriorityDecayHalfLife=0`` so usage does not decay, and
``AccountingStorageEnforce=safe``: a job starts only if it can finish within the budget).

:func:`replay_with_budgets` replays the quota policy hour by hour with the budgets: in each hour a team
asks for at most what is left of its budget (flavors tried in purchase order: reserved, on-demand, spot),
and once its budget is spent it gets no GPUs until the end of the horizon (no reset inside the replay).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.quotas.replay import admitted

PERIODS = (("DAILY", 24.0), ("WEEKLY", 168.0), ("MONTHLY", 24.0 * 31), ("QUARTERLY", 24.0 * 92),
           ("YEARLY", 24.0 * 366))


def reset_period(horizon_hours: float) -> tuple[str, float]:
    """Slurm's shortest ``PriorityUsageResetPeriod`` covering the horizon, and its length in hours."""
    for name, h in PERIODS:
        if horizon_hours <= h + 1e-9:
            return name, h
    return PERIODS[-1]


def team_budgets(result, slack: float = 1.0) -> pd.DataFrame:
    """One row per team: held GPU-hours over the horizon (quota policy), the reset period, the budget per
    period in GPU-hours and in GPU-minutes (``GrpTRESMins``, rounded up)."""
    horizon = float(result.data.hours.sum())
    period, period_h = reset_period(horizon)
    held = (result.replay[result.replay["policy"] == "quota"].set_index("team")["held_gpu_hours"]
            .reindex(result.data.teams).fillna(0.0))
    scale = period_h / horizon if horizon > 0 else 1.0
    budget = held.to_numpy() * scale * slack
    return pd.DataFrame({"team": result.data.teams, "horizon_gpu_hours": held.to_numpy(),
                         "reset_period": period, "budget_gpu_hours": budget,
                         "grp_tres_mins": np.ceil(np.round(budget * 60.0, 6)).astype(np.int64)})


def _flavor_order(flavors: pd.DataFrame) -> list[int]:
    from planner.quotas.policy import option_rank

    return sorted(range(len(flavors)), key=lambda f: (option_rank(flavors["option"].iat[f]), f))


def replay_with_budgets(data, quotas: pd.DataFrame, budget_gpu_hours, policy: str = "quota") -> pd.DataFrame:
    """Per team: demanded, admitted with and without budgets, the budget, hours cut off by it.

    ``quotas``: the team x flavor table of :class:`~planner.quotas.run.QuotaResult`; ``budget_gpu_hours``
    (teams,) over the whole horizon (inf: no budget). A simulation with state (the budget left), hour
    by hour; within an hour flavors in purchase order, each by ``policy`` among its eligible teams.
    """
    n, T = len(data.teams), len(data.hours)
    left = np.asarray(budget_gpu_hours, float).copy()
    got = np.zeros((T, n))
    free_got = np.zeros((T, n))
    cut = np.zeros((T, n), bool)
    per_flavor = []
    for f in _flavor_order(data.flavors):
        fl = data.flavors.iloc[f]
        who = np.flatnonzero(data.eligible[:, f])
        if not len(who):
            continue
        names = [data.teams[i] for i in who]
        fq = quotas[quotas["flavor"] == fl["name"]].set_index("team").loc[names].reset_index()
        per_flavor.append((who, data.demand[who, f].T, float(fl["capacity_gpus"]), fq))
        free_got[:, who] += admitted(policy, data.demand[who, f].T, float(fl["capacity_gpus"]), fq,
                                     data.weights[who])
    for t in range(T):  # the budget left is state: hour by hour
        h = float(data.hours[t])
        need = np.zeros(n)
        for who, dem, cap, fq in per_flavor:
            need[who] += dem[t]
        cut[t] = (need > 1e-9) & (left * (1 + 1e-12) < need * h)
        for who, dem, cap, fq in per_flavor:
            ask = np.minimum(dem[t], np.maximum(left[who], 0.0) / h)
            a = admitted(policy, ask[None, :], cap, fq, data.weights[who])[0]
            got[t, who] += a
            left[who] -= a * h
    hours = data.hours[:, None]
    demand = data.demand.sum(axis=1).T  # (T, n)
    return pd.DataFrame({
        "team": data.teams,
        "demanded_gpu_hours": (demand * hours).sum(axis=0),
        "admitted_without_budget_gpu_hours": (np.minimum(free_got, demand) * hours).sum(axis=0),
        "budget_gpu_hours": np.asarray(budget_gpu_hours, float),
        "admitted_with_budget_gpu_hours": (np.minimum(got, demand) * hours).sum(axis=0),
        "hours_cut_off": (cut * hours).sum(axis=0),
        "first_hour_cut_off": [int(np.argmax(cut[:, i])) if cut[:, i].any() else None for i in range(n)],
    })


def budget_table(result, slack: float = 1.0) -> pd.DataFrame:
    """:func:`team_budgets` joined with :func:`replay_with_budgets` over the horizon (budget pro rata)."""
    b = team_budgets(result, slack)
    horizon = float(result.data.hours.sum())
    _, period_h = reset_period(horizon)
    over_horizon = b["budget_gpu_hours"].to_numpy() * (horizon / period_h if period_h else 1.0)
    r = replay_with_budgets(result.data, result.quotas, over_horizon)
    out = b.merge(r.drop(columns=["budget_gpu_hours"]), on="team")
    out["horizon_budget_gpu_hours"] = over_horizon
    return out

