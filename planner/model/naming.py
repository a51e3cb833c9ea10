"""The only place variable and constraint names are made.

Names are ``<family>_<i>_<j>...`` over integer positions (class k, pool p,
block b, reserved option c), so they are always legal for PuLP and the LP/MPS
writers, short, and unique by construction. ``describe`` turns a name back into
the labels a person reads (class, pool, period).
"""

from __future__ import annotations

import re

FAMILIES = {
    # variables
    "n": ("reserved instances bought", ("option",)),
    "x": ("reserved GPUs used", ("class", "pool", "block")),
    "r": ("rented GPUs (on-demand, spot, flex-start: planner.inputs.rented.KINDS)", ("kind", "class", "pool", "block")),
    "u": ("unmet demand", ("class", "block")),
    "xd": ("backfill class's own reserved GPUs (above the priority peak)", ("class", "pool", "block")),
    "pk": ("priority classes' peak use of purchased reserved GPUs", ("pool",)),
    "v": ("on-demand GPUs a savings plan pays for", ("option", "pool", "block")),
    # constraints
    "demand": ("demand with headroom", ("class", "block")),
    "spot_share": ("maximum spot share", ("class", "block")),
    "spares": ("spare GPUs served by reserved capacity", ("class", "block")),
    "reserved_share": ("reserved GPUs shared by classes", ("pool", "block")),
    "od_cap": ("on-demand cap", ("pool", "block")),
    "spot_cap": ("spot cap", ("pool", "block")),
    "flex_cap": ("flex-start (queued capacity) cap", ("pool", "block")),
    "reserved_cap": ("reserved cap", ("pool", "set")),  # one row per set of purchases active together
    "backfill_peak": ("priority classes' peak reserved use", ("pool", "block")),
    "backfill_dedicated": ("backfill classes' own reserved GPUs", ("pool", "block")),
    "spend_usage": ("savings plans cover used on-demand GPUs only", ("pool", "block")),
    "spend_commitment": ("a savings plan covers up to its USD per hour", ("option", "block")),
    "discount_only_cap": ("discount-only commitments count against the on-demand cap", ("pool", "block")),
    "exit_link": ("a commitment sells at most what it bought", ("option",)),
    "site_power": ("power the owned GPUs of a site draw", ("site", "set")),  # one row per set active together
}


def names(family: str, *keys) -> list[str]:
    """Names for a family over parallel integer arrays ``keys``."""
    if family not in FAMILIES:
        raise KeyError(f"unknown family {family!r}")
    if not keys:
        raise ValueError("at least one key array")
    columns = [k.tolist() if hasattr(k, "tolist") else list(k) for k in keys]
    return [family + "".join(f"_{v}" for v in vals) for vals in zip(*columns)]


_NAME = re.compile(r"^([a-z_]+?)((?:_\d+)+)$")


def parse(name: str) -> tuple[str, tuple[int, ...]]:
    """(family, integer keys) of a planner name; ValueError for anything else."""
    m = _NAME.match(name)
    if not m or m.group(1) not in FAMILIES:
        raise ValueError(f"not a planner name: {name!r}")
    return m.group(1), tuple(int(v) for v in m.group(2).split("_")[1:])
