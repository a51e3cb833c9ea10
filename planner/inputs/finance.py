"""The cost of capital: discount factors, the NPV of a commitment's cash and of a plan's (pure functions).

The contract (spec/contracts.md, "Payment options and the cost of capital"): the cash of calendar month
``m`` (0 = the month of the first period) is worth ``(1 + rate) ** (-m / 12)`` today. A commitment's
upfront falls in the month it is paid (its cash date: the purchase date; a capacity block's window
start), its recurring fee in the months its term runs (each month's real hours), its residual value
in the month the term ends; on-demand and spot cash in the month it is incurred.

``purchase_npv_per_gpu`` prices one GPU of every commitments-table row: its whole term's cash,
discounted. Under ``accounting = "amortised"`` the objective charges each purchase its NPV-equivalent
level rate (the constant hourly rate whose discounted stream over its term equals its NPV) for each of
its active horizon hours, discounted at that hour's month, as on-demand is; at a rate of 0 that is
exactly the amortised cost (effective rate x active hours). Under ``"full_term"`` the whole NPV. So
``objective = "npv"`` at rate 0 is ``objective = "cost"``, in both accountings.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.core.units import HOURS_PER_MONTH
from planner.inputs import supply
from planner.inputs.activity import matvec


def month_factor(months, origin, rate: float) -> np.ndarray:
    """``(1 + rate) ** (-m / 12)`` for each calendar month (PeriodIndex or month Periods) after ``origin``."""
    months = pd.PeriodIndex(months, freq="M")
    m = (months.year - origin.year) * 12 + (months.month - origin.month)
    return (1.0 + float(rate)) ** (-np.asarray(m, float) / 12.0)


def period_factor(periods: pd.DatetimeIndex, origin, rate: float) -> np.ndarray:
    """(T,) the discount factor of each period: that of the calendar month it starts in."""
    return month_factor(periods.to_period("M"), origin, rate)


def _term_months(rows: pd.DataFrame, origin):
    from planner.inputs.ladder import HOUR

    paid = pd.to_datetime(rows["cash_date"] if "cash_date" in rows else rows["purchase_date"])
    first = min(paid.min(), pd.to_datetime(rows["active_from"]).min()).to_period("M")
    last = (pd.to_datetime(rows["end_date"]) - HOUR).max().to_period("M")
    return paid, pd.period_range(min(first, origin), last, freq="M")


def purchase_npv_per_gpu(rows: pd.DataFrame, origin, rate: float) -> np.ndarray:
    """(R,) the NPV of one GPU of each commitments-table row over its whole term (or window).

    ``upfront`` at the month of ``cash_date`` (else ``purchase_date``), ``hourly`` x the real hours of every
    month of ``[active_from, end_date)``, minus ``residual`` at the month the term ends.
    """
    from planner.inputs.ladder import HOUR, active_hours_by_month

    if not len(rows):
        return np.zeros(0)
    paid, months = _term_months(rows, origin)
    f = month_factor(months, origin, rate)
    recurring = rows["hourly_usd"].to_numpy(float) * (active_hours_by_month(rows, months) @ f)
    up = rows["upfront_usd"].to_numpy(float) * month_factor(paid.dt.to_period("M"), origin, rate)
    end = (pd.to_datetime(rows["end_date"]) - HOUR).dt.to_period("M")
    back = rows["residual_usd"].to_numpy(float) * month_factor(end, origin, rate)
    return up + recurring - back


def discounted_term_hours(rows: pd.DataFrame, origin, rate: float) -> np.ndarray:
    """(R,) the hours of each row's whole active term, each discounted at its calendar month's factor."""
    from planner.inputs.ladder import active_hours_by_month

    if not len(rows):
        return np.zeros(0)
    _, months = _term_months(rows, origin)
    return active_hours_by_month(rows, months) @ month_factor(months, origin, rate)


def level_rate(rows: pd.DataFrame, origin, rate: float) -> np.ndarray:
    """(R,) the NPV-equivalent level rate of each row: the constant USD per GPU-hour over its active term
    whose discounted stream equals its NPV (an annuity; at rate 0 the effective rate r)."""
    npv = purchase_npv_per_gpu(rows, origin, rate)
    hours = discounted_term_hours(rows, origin, rate)
    return np.divide(npv, hours, out=np.zeros_like(npv), where=hours > 0)


def objective_npv_per_gpu(rows: pd.DataFrame, active: np.ndarray, hours: np.ndarray, discount: np.ndarray,
                          origin, rate: float, accounting: str) -> np.ndarray:
    """(R,) what one GPU of each row costs in an NPV objective.

    ``full_term``: its whole NPV. ``amortised``: its NPV-equivalent level rate (:func:`level_rate`) for each
    of its active horizon hours, discounted at that hour's month (``active`` (R, T), ``hours`` and
    ``discount`` (T,)): at rate 0 exactly the amortised cost, and a commitment dearer than on-demand in every
    hour is dearer in the objective too (both are discounted by the same months).
    """
    if accounting == "full_term" or not len(rows):
        return purchase_npv_per_gpu(rows, origin, rate)
    return level_rate(rows, origin, rate) * matvec(active, np.asarray(hours, float) * discount)


def cash_npv(cash: pd.DataFrame, origin, rate: float) -> float:
    """The NPV of a cash schedule (``month`` "YYYY-MM", ``total_usd``) at ``rate`` from ``origin``."""
    if not len(cash):
        return 0.0
    f = month_factor(pd.PeriodIndex(cash["month"], freq="M"), origin, rate)
    return float(cash["total_usd"].to_numpy(float) @ f)


def payment_options(inp, purchases: pd.DataFrame) -> pd.DataFrame:
    """For each purchase bought: the NPV (at the model's rate) of the same GPUs under every payment option
    of its pool, kind, term and purchase date (rows that differ only in upfront / hourly / residual).

    Columns: ``purchase`` (row of ``purchases``), ``option``, ``chosen``, ``upfront_usd``,
    ``monthly_recurring_usd``, ``full_term_usd`` (undiscounted), ``npv_usd``, ``reserved_row`` (the option's
    row of ``inp.commitments``).
    """
    from planner.inputs.ladder import full_term_usd_per_gpu

    res = inp.commitments
    cols = ["purchase", "option", "chosen", "upfront_usd", "monthly_recurring_usd", "full_term_usd", "npv_usd",
            "reserved_row"]
    qty = purchases["quantity"] if "quantity" in purchases else purchases["gpus"]  # GPUs, or USD/h (savings plan)
    bought = np.flatnonzero(qty.to_numpy(float) > 0)
    if not len(bought) or not len(res):
        return pd.DataFrame(columns=cols)
    rate = inp.config.finance.discount_rate
    npv = purchase_npv_per_gpu(res, inp.discount_origin, rate)
    full = full_term_usd_per_gpu(res)
    kind = res["kind"]
    pools = res["pool"].astype(object).copy()
    rates = inp.spend_rates  # a savings plan's "pool" is the set of pools it covers: its options cover the same
    for c, g in rates.groupby("c"):
        pools.iat[int(c)] = tuple(sorted(g["pool"].astype(int)))
    key = pd.DataFrame({"pool": pools, "kind": kind, "term": res["term_months"].round(9),
                        "date": res["purchase_date"], "start": res["block_start"],
                        "node": res["node"] if "node" in res else 0})  # a tree: the same node's options only
    out = []
    for i in bought:
        same = (key["pool"] == key["pool"].iat[i]) & (key["kind"] == key["kind"].iat[i]) & \
            (key["term"] == key["term"].iat[i]) & (key["date"] == key["date"].iat[i]) & \
            (key["node"] == key["node"].iat[i])
        if supply.is_(kind.iat[i], dated_by="window"):
            same &= key["start"] == key["start"].iat[i]
        gpus = float(qty.iat[i])
        for j in np.flatnonzero(same.to_numpy()):
            out.append({"purchase": int(i), "option": res["option"].iat[j], "chosen": bool(j == i),
                        "upfront_usd": gpus * float(res["upfront_usd"].iat[j]),
                        "monthly_recurring_usd": gpus * float(res["hourly_usd"].iat[j]) * HOURS_PER_MONTH,
                        "full_term_usd": gpus * float(full[j]), "npv_usd": gpus * float(npv[j]),
                        "reserved_row": int(j)})
    return pd.DataFrame(out, columns=cols)


def break_even_rate(rows: pd.DataFrame, origin, lo: float = -0.99, hi: float = 100.0) -> float:
    """The annual cost of capital at which the first row of ``rows`` (the most upfront) and the second (the
    least) cost the same today: the internal rate of return of the difference of their cash flows, found by
    Brent's method on the difference of their NPVs (:func:`purchase_npv_per_gpu`). Below it the upfront option
    is cheaper, above it the other. NaN when the difference does not change sign in ``[lo, hi]`` (one option is
    cheaper at every rate)."""
    from scipy.optimize import brentq

    def gap(rate: float) -> float:
        v = purchase_npv_per_gpu(rows, origin, rate)
        return float(v[0] - v[1])

    a, b = gap(lo), gap(hi)
    if not (np.isfinite(a) and np.isfinite(b)) or a * b > 0:
        return float("nan")
    return float(brentq(gap, lo, hi, xtol=1e-12, rtol=1e-12, maxiter=200))


def payment_break_even(inp, po: pd.DataFrame) -> pd.DataFrame:
    """Per purchase with payment options of different upfronts: the most-upfront and the least-upfront option,
    the NPV of each at the model's rate, and :func:`break_even_rate` between them (the rate at which they cost
    the same). Columns: ``purchase``, ``upfront_option``, ``other_option``, ``upfront_npv_usd``,
    ``other_npv_usd``, ``break_even_rate``, ``rate`` (the model's), ``cheaper`` (the option cheaper at it)."""
    cols = ["purchase", "upfront_option", "other_option", "upfront_npv_usd", "other_npv_usd", "break_even_rate",
            "rate", "cheaper"]
    if po is None or not len(po) or "reserved_row" not in po:
        return pd.DataFrame(columns=cols)
    res = inp.commitments
    rate = float(inp.config.finance.discount_rate)
    out = []
    for i, g in po.groupby("purchase"):
        g = g.sort_values(["upfront_usd", "option"], kind="stable")
        most, least = g.iloc[-1], g.iloc[0]
        if len(g) < 2 or most["upfront_usd"] <= least["upfront_usd"] + 1e-9:
            continue
        rows = res.iloc[[int(most["reserved_row"]), int(least["reserved_row"])]]
        out.append({"purchase": int(i), "upfront_option": most["option"], "other_option": least["option"],
                    "upfront_npv_usd": float(most["npv_usd"]), "other_npv_usd": float(least["npv_usd"]),
                    "break_even_rate": break_even_rate(rows, inp.discount_origin), "rate": rate,
                    "cheaper": most["option"] if most["npv_usd"] <= least["npv_usd"] else least["option"]})
    return pd.DataFrame(out, columns=cols)
