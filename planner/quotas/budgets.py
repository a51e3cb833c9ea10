"""GPU-hour budgets over time (Slurm ``GrpTRESMins``) beside the GPU caps, and their replay. Pure.

A team's budget is the GPU-hours the quota policy gives it over the planning horizon (its held GPU-hours
in the ``quota`` replay), scaled to Slurm's usage reset period (``PriorityUsageResetPeriod``: the
shortest of DAILY, WEEKLY, MONTHLY, QUARTERLY, YEARLY that covers the horizon, budget pro rata:
``held x period_hours / horizon_hours``) and multiplied by ``slack``. Slurm stops starting a team's jobs
once its usage reaches the budget (with ``PriorityDecayHalfLife=0`` so usage does not decay, and
``AccountingStorageEnforce=safe``: a job starts only if it can finish within the budget).

:func:`replay_with_budgets` replays the quota policy hour by hour with the budgets: in each hour a team
asks for at most what is left of its budget (flavors tried in purchase order: reserved, on-demand, spot),
and once its budget is spent it gets no GPUs until the next reset. :func:`budget_table` replays what Slurm is
given: the budget written (``GrpTRESMins`` / 60), fresh at every reset instant of the period inside the horizon,
as slurm.conf(5) states them: DAILY at midnight, WEEKLY on Sunday at 00:00, MONTHLY on the first day of each
month, QUARTERLY on the first day of each quarter, YEARLY on the first day of each year (00:00, the plan's
period timestamps read as the controller's local time; a horizon without timestamps resets every period's
length from its start). A period of the plan that a reset falls inside counts wholly in the budget period it
starts in.
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


#: pandas period of each reset: a budget period is one of these (weeks from Sunday: 'W-SAT' ends on Saturday)
CALENDAR = {"DAILY": "D", "WEEKLY": "W-SAT", "MONTHLY": "M", "QUARTERLY": "Q", "YEARLY": "Y"}


def budget_periods(period: str, hours, starts=None) -> np.ndarray:
    """(T,) the budget period (0, 1, ...) each of the horizon's periods falls in: the calendar ``period`` of its
    start time (``starts``, a DatetimeIndex) where given, else its start hour over the period's length."""
    hours = np.asarray(hours, float)
    if starts is not None and len(starts) == len(hours):
        key = pd.DatetimeIndex(starts).to_period(CALENDAR[period]).asi8
    else:
        length = dict(PERIODS)[period]
        start = np.concatenate([[0.0], np.cumsum(hours)[:-1]])
        key = np.floor(start / length + 1e-9).astype(np.int64)
    return np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)


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


def replay_with_budgets(data, quotas: pd.DataFrame, budget_gpu_hours, policy: str = "quota",
                        segment=None) -> pd.DataFrame:
    """Per team: demanded, admitted with and without budgets, the budget, hours cut off by it.

    ``quotas``: the team x flavor table of :class:`~planner.quotas.run.QuotaResult`; ``budget_gpu_hours``
    (teams,) per budget period (inf: no budget); ``segment`` (T,) the budget period of each hour (see
    :func:`budget_periods`; default: one, the whole horizon): the budget left is reset to the full budget
    when the period changes. A simulation with state (the budget left), hour by hour; within an hour flavors in
    purchase order, each by ``policy`` among its eligible teams.
    """
    n, T = len(data.teams), len(data.hours)
    budget = np.asarray(budget_gpu_hours, float)
    seg = np.zeros(T, np.int64) if segment is None else np.asarray(segment, np.int64)
    left = budget.copy()
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
        if t and seg[t] != seg[t - 1]:  # a reset (PriorityUsageResetPeriod): usage back to 0
            left = budget.copy()
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
    """:func:`team_budgets` joined with :func:`replay_with_budgets` of the budgets Slurm is given: ``GrpTRESMins``
    / 60 GPU-hours, fresh at each reset of the period inside the horizon (``reset_periods``: the budget periods
    the horizon touches, partial ones at its ends included; ``horizon_budget_gpu_hours``: the most a team may
    spend over the horizon, the budget x that count)."""
    b = team_budgets(result, slack)
    period = str(b["reset_period"].iat[0]) if len(b) else "MONTHLY"
    seg = budget_periods(period, result.data.hours, getattr(result.data, "periods", None))
    per_period = b["grp_tres_mins"].to_numpy(float) / 60.0
    r = replay_with_budgets(result.data, result.quotas, per_period, segment=seg)
    out = b.merge(r.drop(columns=["budget_gpu_hours"]), on="team")
    count = int(seg.max()) + 1 if len(seg) else 0
    out["reset_periods"] = count
    out["horizon_budget_gpu_hours"] = per_period * count
    return out
