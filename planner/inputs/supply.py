"""The supply registry: every kind of GPU supply and what it *does*, declared once.

A price-sheet ``option`` belongs to one kind (its ``pattern``); the rest of the planner asks the registry
what a kind does (``supply.get(kind).stage``, ``supply.mask(kinds, unit="usd_per_hour")``,
``supply.names(rented=True)``) instead of comparing kind names. A new kind is one more :class:`Supply`
row of ``SUPPLIES``.

Fields (one behaviour each):

- ``stage``: ``"first"`` (bought ahead: a first-stage decision, paid whether used or not) or ``"period"``
  (used per period, paid as used);
- ``unit``: what one unit of the decision is: ``"instance"`` (whole instances of a pool), ``"usd_per_hour"``
  (a spend commitment) or ``"gpu_hour"`` (rented by the GPU-hour);
- ``dated_by``: how a first-stage row is active: ``"term"`` (from its purchase date for its term),
  ``"window"`` (a calendar window), ``"resale"`` (a sale of a term row: from the sale to its parent's end),
  ``""`` for rented kinds;
- ``required`` / ``forbidden``: price-sheet columns a row of the kind must carry / must leave blank;
- ``useful_share``: the share of a paid GPU-hour that does work: ``"goodput"`` (preemptible: spot),
  ``"queued"`` (arrives after a queue: reliability x the run's share after its restart, and only the share of a
  class's demand whose start delay the queue meets, :mod:`planner.inputs.rented`) or ``"reliability"``;
- ``cap_source``: where its cap comes from: ``"sheet+availability"`` (``max_gpus`` and the availability
  file), ``"offer"`` (the offer's own ``max_gpus``), ``""`` (none);
- ``cash``: when it is paid: ``"purchase"`` (upfront at purchase), ``"window_start"`` (whole, in the month
  its window starts), ``"incurred"`` (as used);
- ``adds_capacity``: its instances hold reserved GPUs of their pool;
- ``covered_by_spend``: its usage may be paid by a spend commitment (savings plan);
- ``resellable``: a term commitment that may be sold (``resale_haircut``);
- ``focus``: FOCUS ``(PricingCategory, CommitmentDiscountCategory)`` of its charges;
- ``showback``: the cost bucket it is reported in (``results.OPTIONS``: reserved, on_demand, spot);
- ``availability_index``: its row of ``inp.availability`` (rented kinds with an availability file);
- ``pool_price`` / ``pool_cap`` / ``cap_family``: a rented kind's columns of the pool table (its USD per GPU-hour
  and its cap) and the model's row family of its cap;
  the model reads them as arrays indexed by kind (:mod:`planner.inputs.rented`), one rented family over them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Supply:
    """One kind of GPU supply and its behaviour."""

    name: str
    pattern: str | None  # regular expression over the normalised option name (None: made by the planner)
    stage: str  # "first" | "period"
    unit: str  # "instance" | "usd_per_hour" | "gpu_hour"
    dated_by: str  # "term" | "window" | "resale" | ""
    required: tuple[str, ...]
    forbidden: tuple[str, ...]
    useful_share: str  # "goodput" | "reliability"
    cap_source: str  # "sheet+availability" | "offer" | ""
    cash: str  # "purchase" | "window_start" | "incurred"
    adds_capacity: bool
    covered_by_spend: bool
    resellable: bool
    focus: tuple[str, str]  # (PricingCategory, CommitmentDiscountCategory)
    showback: str  # "reserved" | "on_demand" | "spot"
    availability_index: int  # row of inp.availability (-1: none)
    example: str
    pool_price: str = ""  # rented kinds: its price column of the pool table
    pool_cap: str = ""  # rented kinds: its cap column of the pool table
    cap_family: str = ""  # rented kinds: the model's row family of its cap

    @property
    def commitment(self) -> bool:
        """Bought ahead and paid whether used or not."""
        return self.stage == "first"

    @property
    def rented(self) -> bool:
        """Used per period by the GPU-hour, no commitment."""
        return self.stage == "period"

    @property
    def preemptible(self) -> bool:
        """Its useful share is the goodput left by preemptions."""
        return self.useful_share == "goodput"


_TERM_COLS = ("valid_from", "lead_time_months", "residual_usd", "resale_haircut", "guarantees_capacity")
_RENTED_FORBIDS = _TERM_COLS[1:]  # a rented price may be dated (valid_from: a forward curve), nothing else of a term
_BLOCK_COLS = ("block_start", "block_days", "provider")
SUPPLIES: tuple[Supply, ...] = (
    Supply("on_demand", r"on_demand", "period", "gpu_hour", "", ("hourly_usd",),
           ("upfront_usd", "term_months", "interruptions_per_hour") + _RENTED_FORBIDS + _BLOCK_COLS, "reliability",
           "sheet+availability", "incurred", False, True, False, ("Standard", ""), "on_demand", 0, "on_demand",
           "od", "cap_od", "od_cap"),
    Supply("spot", r"spot", "period", "gpu_hour", "", ("hourly_usd", "interruptions_per_hour"),
           ("upfront_usd", "term_months") + _RENTED_FORBIDS + _BLOCK_COLS, "goodput",
           "sheet+availability", "incurred", False, False, False, ("Dynamic", ""), "spot", 1, "spot", "sp", "cap_sp",
           "spot_cap"),
    # queued capacity (GCP DWS flex-start, AWS capacity waits): GPUs that arrive after a queue, cheaper than
    # on-demand, for classes that tolerate a start delay (``max_start_delay_hours``)
    Supply("flex_start", r"flex_start", "period", "gpu_hour", "", ("hourly_usd", "queue_hours_p50", "queue_hours_p90"),
           ("upfront_usd", "term_months", "interruptions_per_hour") + _RENTED_FORBIDS + _BLOCK_COLS, "queued",
           "sheet", "incurred", False, False, False, ("Standard", ""), "flex_start", -1, "flex_start",
           "fx", "cap_fx", "flex_cap"),
    Supply("instance", r"reserved(_[\w.]+)?", "first", "instance", "term", ("term_months",),
           ("interruptions_per_hour",) + _BLOCK_COLS, "reliability", "", "purchase", True, False, True,
           ("Committed", "Usage"), "reserved", -1, "reserved_1y"),
    Supply("window", r"capacity_block(_[\w.]+)?", "first", "instance", "window", ("hourly_usd", "block_start",
           "block_days"), ("term_months", "interruptions_per_hour", "scenario") + _TERM_COLS, "reliability", "offer",
           "window_start", True, False, False, ("Committed", "Usage"), "reserved", -1, "capacity_block"),
    Supply("spend", r"savings_plan(_[\w.]+)?", "first", "usd_per_hour", "term", ("term_months",),
           ("interruptions_per_hour", "valid_from", "scenario") + _BLOCK_COLS, "reliability", "", "purchase", False, False, False,
           ("Committed", "Spend"), "reserved", -1, "savings_plan_1y"),
    Supply("exit", None, "first", "instance", "resale", (), (), "reliability", "", "purchase", False, False, False,
           ("Committed", "Usage"), "reserved", -1, ""),
)
_BY_NAME = {s.name: s for s in SUPPLIES}
# the cost buckets of allocation frames ("reserved", "on_demand", "spot") name their supply too
_BY_BUCKET = {"reserved": _BY_NAME["instance"]}
_PATTERNS = [(s.name, re.compile(rf"^{s.pattern}$")) for s in SUPPLIES if s.pattern]
RENTED: tuple[str, ...] = tuple(s.name for s in SUPPLIES if s.rented)
BUCKETS: tuple[str, ...] = tuple(dict.fromkeys(s.showback for s in SUPPLIES if s.commitment)) + RENTED
DEFAULT = "instance"  # the kind of a commitments row that does not say (term commitments of whole instances)


@lru_cache(maxsize=None)
def get(name: str) -> Supply:
    """The :class:`Supply` called ``name``: a kind, a cost bucket (``"reserved"``) or an option name
    (``"reserved_1y"``); KeyError if none."""
    s = _BY_NAME.get(name) or _BY_BUCKET.get(name) or _BY_NAME.get(kind_of_name(name))
    if s is None:
        raise KeyError(name)
    return s


def kind_of_name(option: str) -> str | None:
    """The kind of one (normalised) option name, or None when no kind spells it so."""
    for name, rx in _PATTERNS:
        if rx.match(str(option)):
            return name
    return None


def names(**behaviour) -> tuple[str, ...]:
    """The kinds whose attributes equal every ``behaviour`` given, e.g. ``names(stage="first")``."""
    return tuple(s.name for s in SUPPLIES if all(getattr(s, k) == v for k, v in behaviour.items()))


def mask(kinds, **behaviour) -> np.ndarray:
    """Boolean array: True where the kind (or cost bucket) of ``kinds`` has every ``behaviour`` given.

    ``kinds`` is a Series or array of kind names; a missing kind (None/NaN) counts as ``DEFAULT``.
    """
    if np.ndim(kinds) == 0:  # one name, a generator, a dict: what a Series makes of it
        kinds = pd.Series(kinds, dtype=object)
    codes, uniq = pd.factorize(np.asarray(kinds, dtype=object))  # (a missing name: code -1, the last hit below)
    hit = [all(getattr(get(k), b) == v for b, v in behaviour.items()) for k in (*uniq, DEFAULT)]
    return np.asarray(hit, bool)[codes]


def is_(kind, **behaviour) -> bool:
    """True when one kind (None: ``DEFAULT``) has every ``behaviour`` given."""
    s = get(DEFAULT if kind is None or (isinstance(kind, float) and np.isnan(kind)) else kind)
    return all(getattr(s, b) == v for b, v in behaviour.items())


def kinds_of(table: pd.DataFrame) -> pd.Series:
    """The ``kind`` column of a commitments table (``DEFAULT`` where it is absent or blank)."""
    if "kind" not in table:
        return pd.Series(DEFAULT, index=table.index, dtype=object)
    return table["kind"].astype(object).fillna(DEFAULT)


def table_mask(table: pd.DataFrame, **behaviour) -> np.ndarray:
    """:func:`mask` over a commitments table's ``kind`` column (``DEFAULT`` where it has none)."""
    return mask(table["kind"] if "kind" in table else np.full(len(table), DEFAULT, dtype=object), **behaviour)


def option_mask(options, **behaviour) -> np.ndarray:
    """Boolean array over option names (price-sheet spellings, e.g. ``reserved_1y``): True where the option's
    kind has every ``behaviour`` given; False for names no kind spells."""
    values = pd.Series(options, dtype=object)
    hit = {}
    for o in pd.unique(values):
        k = kind_of_name(o) if isinstance(o, str) else None
        hit[o] = k is not None and all(getattr(get(k), b) == v for b, v in behaviour.items())
    return values.map(hit).to_numpy(bool)
