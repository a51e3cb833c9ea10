"""Dated commitments (the ladder): when purchases may be made, when each is active, what it costs and when.

Pure functions of the price sheet's reserved options, the periods and the model file's
``[commitments]`` (spec/formulation.md, "Dated commitments: the ladder"):

- purchase dates: the first period, and with ``purchase_every = "quarter" | "month"`` the first period
  of every calendar quarter / month that starts in the horizon, before ``purchase_until``;
- one purchase row per (reserved option, purchase date) at the price valid on that date
  (``valid_from``), active from ``date + lead_time_months x 730 h`` for ``term_months x 730`` hours;
- its cost under both accountings: amortised (effective rate x its active horizon hours) and full term
  (``hourly x L + upfront - residual``), and the cash it pays per calendar month.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.core.units import HOURS_PER_MONTH

HOUR = pd.Timedelta(hours=1)


def purchase_periods(periods: pd.DatetimeIndex, every: str = "once", until: str | None = None) -> np.ndarray:
    """Positions of the periods at which purchases may be dated (the first period always counts)."""
    if not len(periods):
        return np.zeros(0, dtype=int)
    if every == "once":
        idx = np.array([0])
    else:
        group = periods.to_period("Q" if every == "quarter" else "M").asi8
        idx = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    if until is not None:
        idx = idx[periods[idx] < pd.Timestamp(until)]
    return idx


def purchase_rows(options: pd.DataFrame, periods: pd.DatetimeIndex, hours: np.ndarray,
                  dates: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
    """One row per (reserved option, purchase date) and its activity (R, T): the share of each period it is active.

    ``options`` has one row per price-sheet reserved row (``valid_from`` NaT = valid from the start); a
    purchase at date s takes the row of its option with the latest ``valid_from`` on or before s, and is not
    offered when every row of the option starts later. Rows are ordered by pool, option, then date.
    """
    if not len(options) or not len(dates):
        cols = list(options.columns) + ["purchase_date", "active_from", "end_date", "hours_active", "firm"]
        return pd.DataFrame({c: [] for c in cols}), np.zeros((0, len(periods)))
    frames = []
    valid = options["valid_from"].fillna(pd.Timestamp.min)
    for i, s in enumerate(dates):
        when = periods[s]
        ok = options[valid <= when].assign(_v=valid[valid <= when])
        ok = ok.sort_values("_v").groupby(["pool", "option"], sort=False).tail(1).drop(columns="_v")
        frames.append(ok.assign(purchase_date=when, date_index=i))
    rows = pd.concat(frames, ignore_index=True).sort_values(["pool", "option", "date_index"], kind="stable")
    rows = rows.reset_index(drop=True)
    L = rows["term_months"].to_numpy(float) * HOURS_PER_MONTH
    lead = rows["lead_time_months"].to_numpy(float) * HOURS_PER_MONTH
    rows["active_from"] = rows["purchase_date"] + pd.to_timedelta(lead, unit="h")
    rows["end_date"] = rows["active_from"] + pd.to_timedelta(L, unit="h")
    # the share of each period the purchase is active (as inventory is counted): 0/1 with hourly periods,
    # a fraction where a term starts or ends inside a longer period
    active = overlap_hours(rows["active_from"], rows["end_date"], periods, hours) / np.asarray(hours, float)[None, :]
    active = np.where(active > 1 - 1e-12, 1.0, np.where(active < 1e-12, 0.0, active))
    rows["hours_active"] = active @ np.asarray(hours, float)
    rows["firm"] = rows["date_index"] == 0  # dated in the first purchase interval: act on it now
    return rows, active


def overlap_hours(start, end, periods: pd.DatetimeIndex, hours: np.ndarray) -> np.ndarray:
    """(rows, T): the hours of each interval [start, end) that fall in each period [t, t + h_t)."""
    t0 = periods.to_numpy().astype("datetime64[s]").astype(float)
    t1 = t0 + np.asarray(hours, float) * 3600.0
    lo = pd.DatetimeIndex(start).to_numpy().astype("datetime64[s]").astype(float)[:, None]
    hi = pd.DatetimeIndex(end).to_numpy().astype("datetime64[s]").astype(float)[:, None]
    return np.clip(np.minimum(t1[None, :], hi) - np.maximum(t0[None, :], lo), 0.0, None) / 3600.0


def full_term_usd_per_gpu(rows: pd.DataFrame) -> np.ndarray:
    """The whole liability of one GPU of each purchase row: ``hourly x L + upfront - residual``."""
    L = rows["term_months"].to_numpy(float) * HOURS_PER_MONTH
    return rows["hourly_usd"].to_numpy(float) * L + rows["upfront_usd"].to_numpy(float) \
        - rows["residual_usd"].to_numpy(float)


def schedule_months(purchases: pd.DataFrame, periods: pd.DatetimeIndex) -> pd.PeriodIndex:
    """Calendar months from the first period's to the one in which the last commitment's term ends."""
    first = periods[0].to_period("M")
    ends = [periods[-1].to_period("M")] + [pd.Timestamp(e - HOUR).to_period("M") for e in purchases["end_date"]]
    return pd.period_range(first, max(ends), freq="M")


def active_hours_by_month(purchases: pd.DataFrame, months: pd.PeriodIndex) -> np.ndarray:
    """(purchases, months): the real hours of each calendar month inside each purchase's active term."""
    start = months.start_time.to_numpy()
    stop = (months + 1).start_time.to_numpy()
    lo = pd.to_datetime(purchases["active_from"]).to_numpy()[:, None]
    hi = pd.to_datetime(purchases["end_date"]).to_numpy()[:, None]
    overlap = (np.minimum(stop[None, :], hi) - np.maximum(start[None, :], lo)) / np.timedelta64(1, "h")
    return np.clip(overlap.astype(float), 0.0, None)


def cash_schedule(purchases: pd.DataFrame, periods: pd.DatetimeIndex, on_demand: pd.Series,
                  spot: pd.Series, others: dict | None = None) -> pd.DataFrame:
    """Cash per calendar month from the first period to the end of the last commitment's term.

    ``purchases``: rows with ``gpus`` > 0, their ``purchase_date``, ``active_from``, ``end_date``,
    ``hourly_usd``, ``upfront_usd`` and ``residual_usd`` (per GPU), and optionally ``cash_date``; the upfront
    is paid in the month of ``cash_date`` (a capacity block: its window's start), else of the purchase date and the residual value comes back in the month the term ends (a negative upfront), the
    recurring part ``hourly x GPUs x hours`` in every calendar month of the active term (its real hours). ``on_demand``/``spot``: expected USD
    per month (index "YYYY-MM"); ``others``: the same for any other rented kind (``{kind: Series}``, e.g. flex-start),
    a column ``<kind>_usd`` each.
    """
    months = schedule_months(purchases, periods)
    gpus = purchases["quantity" if "quantity" in purchases else "gpus"].to_numpy(float)  # GPUs, or USD/h (savings plan)
    upfront = np.zeros(len(months))
    hourly = purchases["hourly_usd"].to_numpy(float)
    if len(purchases):  # the upfront is paid on the cash date: the purchase date (a block: its window's start)
        paid_on = purchases["cash_date"] if "cash_date" in purchases else purchases["purchase_date"]
        pos = months.get_indexer(pd.to_datetime(paid_on).dt.to_period("M"))
        np.add.at(upfront, pos, gpus * purchases["upfront_usd"].to_numpy(float))
        # the residual value comes back when the term ends (a negative upfront in that month)
        end = months.get_indexer((pd.to_datetime(purchases["end_date"]) - HOUR).dt.to_period("M"))
        np.add.at(upfront, end, -gpus * purchases["residual_usd"].to_numpy(float))
    recurring = (gpus * hourly) @ active_hours_by_month(purchases, months) if len(purchases) else np.zeros(len(months))
    label = months.strftime("%Y-%m")
    od = on_demand.reindex(label).fillna(0.0).to_numpy(float)
    sp = spot.reindex(label).fillna(0.0).to_numpy(float)
    extra = {f"{k}_usd": v.reindex(label).fillna(0.0).to_numpy(float) for k, v in (others or {}).items()}
    total = upfront + recurring + od + sp + sum(extra.values(), np.zeros(len(label)))
    return pd.DataFrame({"month": label, "upfront_usd": upfront, "reserved_recurring_usd": recurring,
                         "on_demand_usd": od, "spot_usd": sp, **extra, "total_usd": total})
