"""A plan's cash by calendar and fiscal year, the fees of commitments already owned included (pure).

``plan.cash_schedule`` holds the cash of this plan's decisions (upfronts, recurring fees, residual values,
on-demand and spot). The commitments already owned (the inventory file) are not in it: their upfront is
sunk, but their recurring fee is still paid every month they run. Where the price sheet prices an
inventory row (``planner.results.bill.inventory_table``: the sheet's row of its option valid when it started) its
``hourly_usd`` x GPUs x the real hours of each calendar month of ``[max(start, horizon start), end)`` is
added here as ``owned_recurring_usd``, and its residual value (if any) comes back in the month it ends
(``owned_residual_usd``, negative), as ``ladder.cash_schedule`` treats the plan's own purchases.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

CASH_COLUMNS = ["upfront_usd", "reserved_recurring_usd", "owned_recurring_usd", "owned_residual_usd",
                "on_demand_usd", "spot_usd", "total_usd"]


def owned_fees_by_month(inp) -> pd.DataFrame:
    """Per calendar month (``month`` a Period) the recurring fees and residual values of the inventory."""
    from planner.results.bill import inventory_table
    from planner.inputs.ladder import HOUR, active_hours_by_month

    inv = inventory_table(inp)
    inv = inv[inv["priced"].astype(bool)] if len(inv) else inv
    empty = pd.DataFrame({"month": pd.PeriodIndex([], freq="M"), "owned_recurring_usd": [], "owned_residual_usd": []})
    if not len(inv) or not inp.T:
        return empty
    start = pd.to_datetime(inv["start"]).clip(lower=inp.periods[0])
    end = pd.to_datetime(inv["end"])
    live = (end > start).to_numpy()
    inv, start, end = inv[live], start[live], end[live]
    if not len(inv):
        return empty
    months = pd.period_range(inp.periods[0].to_period("M"), (end - HOUR).max().to_period("M"), freq="M")
    hours = active_hours_by_month(pd.DataFrame({"active_from": start.to_numpy(), "end_date": end.to_numpy()}), months)
    gpus = inv["gpus"].to_numpy(float)
    recurring = (gpus * inv["hourly_usd"].to_numpy(float)) @ hours
    residual = np.zeros(len(months))
    pos = months.get_indexer((end - HOUR).dt.to_period("M"))
    np.add.at(residual, pos, -gpus * inv["residual_usd"].to_numpy(float))
    return pd.DataFrame({"month": months, "owned_recurring_usd": recurring, "owned_residual_usd": residual})


def cash_monthly(plan) -> pd.DataFrame:
    """The plan's cash schedule with the owned commitments' fees, one row per calendar month.

    Columns: ``month`` (the month's first day, a Timestamp), ``upfront_usd``, ``reserved_recurring_usd``
    (this plan's purchases), ``owned_recurring_usd``, ``owned_residual_usd`` (the inventory),
    ``on_demand_usd``, ``spot_usd`` (then any other rented kind's, e.g. ``flex_start_usd``), ``total_usd`` (all of them). Months run from the first period's to
    the end of the last term, the plan's or the inventory's.
    """
    cash = plan.cash_schedule
    own = owned_fees_by_month(plan.inputs)
    base = pd.DataFrame({"month": pd.PeriodIndex(cash["month"], freq="M")}) if len(cash) else \
        pd.DataFrame({"month": pd.PeriodIndex([], freq="M")})
    others = [c for c in cash.columns if c.endswith("_usd") and c not in CASH_COLUMNS]  # flex_start_usd, ...
    for c in ("upfront_usd", "reserved_recurring_usd", "on_demand_usd", "spot_usd", *others):
        base[c] = cash[c].to_numpy(float) if len(cash) else []
    out = base.merge(own, on="month", how="outer").sort_values("month")
    out = out.fillna(0.0).reset_index(drop=True)
    columns = CASH_COLUMNS[:-1] + others + ["total_usd"]
    out["total_usd"] = out[columns[:-1]].sum(axis=1)
    out["month"] = pd.PeriodIndex(out["month"], freq="M").to_timestamp()
    return out[["month"] + columns]


def fiscal_year_of(months: pd.DatetimeIndex | pd.Series, fiscal_year_start: int) -> np.ndarray:
    """The fiscal year of each month, named by the calendar year it ends in (start 4: April 2027 to March
    2028 is FY2028); with ``fiscal_year_start = 1`` the calendar year."""
    d = pd.DatetimeIndex(months)
    return np.asarray(d.year + (d.month >= fiscal_year_start).astype(int) * (fiscal_year_start > 1), int)


def cash_by_year(plan, fiscal_year_start: int | None = None) -> pd.DataFrame:
    """Calendar-year and fiscal-year subtotals of :func:`cash_monthly` (owned commitments' fees included).

    ``fiscal_year_start``: the month (1-12) a fiscal year starts, default ``[finance] fiscal_year_start``
    (1). One row per (``basis`` "calendar" | "fiscal", ``year``) with ``label`` ("2027", "FY2028"),
    ``first_month`` and ``last_month`` (Timestamps of the months in the schedule), ``months`` and the
    money columns of :func:`cash_monthly` summed. Both bases add up to the same whole-schedule total.
    """
    if fiscal_year_start is None:
        fiscal_year_start = getattr(plan.inputs.config.finance, "fiscal_year_start", 1)
    fiscal_year_start = int(fiscal_year_start)
    if not 1 <= fiscal_year_start <= 12:
        raise ValueError(f"fiscal_year_start must be a month 1-12, got {fiscal_year_start}")
    m = cash_monthly(plan)
    money = [c for c in m.columns if c != "month"]  # CASH_COLUMNS with any other rented kind's before the total
    frames = []
    for basis, year in (("calendar", m["month"].dt.year.to_numpy(int)),
                        ("fiscal", fiscal_year_of(m["month"], fiscal_year_start))):
        g = m.assign(year=year).groupby("year", sort=True)
        t = g[money].sum()
        t["first_month"] = g["month"].min()
        t["last_month"] = g["month"].max()
        t["months"] = g["month"].size()
        t = t.reset_index()
        t["basis"] = basis
        t["label"] = t["year"].astype(str) if basis == "calendar" or fiscal_year_start == 1 \
            else "FY" + t["year"].astype(str)
        frames.append(t)
    cols = ["basis", "year", "label", "first_month", "last_month", "months"] + money
    if not len(m):
        return pd.DataFrame(columns=cols)
    return pd.concat(frames, ignore_index=True)[cols]


def cash_next_12_months(plan) -> float:
    """The cash of the first 12 calendar months of the schedule (from the first period's month), USD,
    owned commitments' fees included."""
    m = cash_monthly(plan)
    if not len(m):
        return 0.0
    first = m["month"].iloc[0]
    return float(m.loc[m["month"] < first + pd.DateOffset(months=12), "total_usd"].sum())
