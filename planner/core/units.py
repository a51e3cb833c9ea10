"""Facts used in more than one place, defined once: hours per month, the effective reserved rate,
the limits on a class's headroom, and how money is printed.

Nothing here reads, models or writes; every module that needs one of these imports it from here.
"""

from __future__ import annotations

HOURS_PER_MONTH = 730.0  # 8,760 h / 12: how a term in months becomes hours everywhere (and in the workbook)
HEADROOM_MAX = 10.0  # a class's headroom, as a fraction of its demand: 0 .. 10 (1,000 %)
EPS = 1e-7  # a solved quantity below this is read as zero (the plan's tables and a decision's costs alike)
IDLE_REL = 1e-9  # capacity left idle below this share of the capacity held is the float noise of summing one
# quantity two ways (held less used): read as 0


def idle_of(held, used):
    """Capacity ``held`` less that ``used`` (numbers or numpy arrays), never below 0, and 0 where the difference is
    below ``IDLE_REL`` of what is held: the sums' float noise, which would otherwise be charged as 1e-13 USD."""
    import numpy as np

    held = np.asarray(held, float)
    idle = np.clip(held - np.asarray(used, float), 0.0, None)
    return np.where(idle > IDLE_REL * np.abs(held), idle, 0.0)


def effective_rate(hourly_usd, upfront_usd, term_months):
    """Effective reserved USD per GPU-hour: ``hourly + upfront / (term_months x 730)``.

    Works on floats, numpy arrays and pandas Series alike (the upfront is spread evenly over the term).
    """
    return hourly_usd + upfront_usd / (term_months * HOURS_PER_MONTH)


def commitment_usd(hourly_usd, upfront_usd, term_months):
    """What one GPU of a commitment costs over its whole term: ``hourly x term x 730 + upfront``."""
    return hourly_usd * term_months * HOURS_PER_MONTH + upfront_usd


def usd(x) -> str:
    """Whole dollars with thousands separators (``$1,234``); ``-`` for None."""
    return "-" if x is None else f"${x:,.0f}"


def signed_usd(x: float) -> str:
    """A change in whole dollars with its sign (``+$1,234``, ``-$56``)."""
    return f"{'+' if x >= 0 else '-'}${abs(x):,.0f}"
