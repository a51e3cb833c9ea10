"""The finance analytics behind the CFO purchase memo (issue 25): pure functions of a Plan and its inputs.

One job per module, gathered here:

- :mod:`planner.memo.tranches`: :func:`tranche_utilisation` (the MARGINAL utilisation of each tranche
  bought: inventory used first, then the purchases in purchase order) and :func:`coverage`;
- :mod:`planner.memo.resolve`: :func:`downside` (demand shocks, purchases fixed, re-solved),
  :func:`commitment_curve` (cost and NPV against the commitment level) and :func:`savings`;
- :mod:`planner.memo.cash`: :func:`cash_by_year`, :func:`cash_next_12_months`, :func:`cash_monthly`
  (the plan's cash schedule with the fees of the commitments already owned).

:func:`build_memo` computes them all into a :class:`Memo`; ``Memo.to_dict()`` is JSON-ready.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from planner.memo.cash import cash_by_year, cash_monthly, cash_next_12_months
from planner.memo.resolve import DEFAULT_FACTORS, DEFAULT_SHOCKS, commitment_curve, downside, savings
from planner.memo.term_downside import whole_term_downside
from planner.memo.tranches import coverage, tranche_utilisation

__all__ = ["Memo", "build_memo", "tranche_utilisation", "downside", "commitment_curve", "cash_by_year",
           "cash_monthly", "cash_next_12_months", "coverage", "savings", "default_factors"]

LARGE_MODEL_CELLS = 25_000  # periods x classes x scenarios above which the curve defaults to fewer points (a
# quarter of hours x 20 classes, the bundled ladder; the bundled quarter, 13,104 cells, keeps nine)
SHORT_FACTORS = (0, 0.5, 1, 1.5)  # factor 1 is the plan itself (not re-solved): three LPs


@dataclass
class Memo:
    """The memo's tables: ``tranches`` (:func:`tranche_utilisation`), ``downside``, ``curve``
    (:func:`commitment_curve`), ``cash_by_year``, ``cash_monthly``, ``cash_next_12_months_usd``,
    ``coverage`` and ``savings`` (dicts), ``seconds`` (time spent per part)."""

    tranches: pd.DataFrame
    downside: pd.DataFrame
    curve: pd.DataFrame
    cash_by_year: pd.DataFrame
    cash_monthly: pd.DataFrame
    cash_next_12_months_usd: float
    coverage: dict
    savings: dict
    seconds: dict = field(default_factory=dict)
    term_downside: pd.DataFrame | None = None  # each tranche over its whole term under demand shocks (term_downside)

    def to_dict(self) -> dict:
        """JSON-ready values: tables as lists of records, dates ISO 8601, NaN and infinities as None."""
        return {"tranches": _records(self.tranches), "downside": _records(self.downside),
                "curve": _records(self.curve), "cash_by_year": _records(self.cash_by_year),
                "cash_monthly": _records(self.cash_monthly),
                "cash_next_12_months_usd": _plain(self.cash_next_12_months_usd),
                "coverage": _plain(self.coverage), "savings": _plain(self.savings), "seconds": _plain(self.seconds),
                "term_downside": _records(self.term_downside) if self.term_downside is not None else []}


def default_factors(inp) -> tuple:
    """The curve's factors: the nine of :data:`DEFAULT_FACTORS`, or four (0, 0.5, 1, 1.5) on a large model
    (more than ``LARGE_MODEL_CELLS`` periods x classes x scenarios, e.g. a quarter of hours for 20 classes, the
    bundled three-year ladder)."""
    cells = inp.T * inp.K * len(inp.scenarios)
    return SHORT_FACTORS if cells > LARGE_MODEL_CELLS else DEFAULT_FACTORS


class _NoBatches:
    """A stand-in plan with no batches to share (the memo of other inputs than the plan's)."""

    recourse = None
    inputs = None
    stats: dict = {}


def build_memo(plan, inp=None, *, shocks=DEFAULT_SHOCKS, factors=None, executor=None,
               fiscal_year_start: int | None = None, make_plan=None, **solve) -> Memo:
    """Every table of the memo for ``plan`` (``inp`` defaults to ``plan.inputs``; ``factors`` to
    :func:`default_factors`; ``executor`` as :func:`commitment_curve`; ``solve``: ``backend``,
    ``time_limit_s``, ``mip_gap`` of the re-solves; ``make_plan``: the pipeline's, for re-solves of a model
    solved whole)."""
    inp = plan.inputs if inp is None else inp
    seconds = {}
    t0 = time.perf_counter()
    tranches = tranche_utilisation(plan)
    cov = coverage(plan)
    by_year, monthly, next12 = cash_by_year(plan, fiscal_year_start), cash_monthly(plan), cash_next_12_months(plan)
    seconds["tables"] = time.perf_counter() - t0
    from planner.memo.resolve import shared_batches

    with shared_batches(plan if inp is plan.inputs else _NoBatches(), executor, solve.get("backend")):  # a decomposed plan's batches, once
        t0 = time.perf_counter()
        down = downside(plan, inp, shocks, executor=executor, make_plan=make_plan, **solve)
        seconds["downside"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        bought = bool((plan.purchases["units"].to_numpy(float) > 0).any()) if "units" in plan.purchases else \
            bool((plan.purchases["instances"] > 0).any())
        curve = commitment_curve(plan, inp, default_factors(inp) if factors is None else factors, executor=executor,
                                 make_plan=make_plan, **solve) if bought else pd.DataFrame()  # nothing bought: nothing to scale
        seconds["curve"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    zero = curve[curve["factor"] == 0.0] if len(curve) else curve
    if len(zero) and zero["status"].iat[0] in ("optimal", "feasible"):  # the curve's 0 is the next-best plan
        next_best = {k: v for k, v in zero.iloc[0].to_dict().items()}
    elif not bought:
        from planner.memo.resolve import plan_figures

        next_best = plan_figures(plan)  # nothing new bought: the plan is its own next best
    else:
        next_best = None
    sav = savings(plan, inp, next_best=next_best, make_plan=make_plan, **solve)
    seconds["savings"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    term = whole_term_downside(plan, (0.0,) + tuple(float(s) for s in shocks if float(s) != 0.0))
    seconds["term_downside"] = time.perf_counter() - t0
    return Memo(tranches=tranches, downside=down, curve=curve, cash_by_year=by_year, cash_monthly=monthly,
                cash_next_12_months_usd=next12, coverage=cov, savings=sav, seconds=seconds, term_downside=term)


def fallback_note(memo: Memo) -> str | None:
    """The note a plan carries when some of its memo's re-solves were not read from their plan LP at its tighter
    settings (the row's ``fell_back``, :func:`planner.memo.resolve.fell_back`: weeks re-solved at HiGHS's defaults, or
    a whole model read from its MIP), naming each such row; the plan's own figures, not re-solved (``seconds`` 0), are
    the plan's own note's. None when none was."""
    said = []
    for table, key, name in ((memo.downside, "shock", "the downside at {:.0%} less demand"),
                             (memo.curve, "factor", "the commitment curve at x{:g}")):
        if table is None or not len(table) or "fell_back" not in table:
            continue
        for level, what, seconds in zip(table[key], table["fell_back"], table["seconds"]):
            if isinstance(what, str) and what and float(seconds) > 0:  # (NaN: a point with no plan)
                said.append(f"{name.format(float(level))}: {what}")
    if not said:
        return None
    return ("some of the purchase memo's re-solves did not finish at the plan LP's tighter settings (weeks re-solved "
            "at HiGHS's defaults, or a whole model read from its MIP): their costs are unaffected, but their tranche use "
            "and stranded dollars are one of several equal-cost readings (" + "; ".join(said) + ")")


def _plain(v):
    """A JSON-ready copy of ``v``: numpy scalars to Python, timestamps to ISO text, NaN/inf to None."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_plain(x) for x in v]
    if isinstance(v, (pd.Timestamp, np.datetime64)):
        return None if pd.isna(v) else pd.Timestamp(v).isoformat()
    if isinstance(v, pd.Period):
        return str(v)
    if v is None or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(float(v)) else None
    return v


def _records(df: pd.DataFrame) -> list[dict]:
    """A table as a list of JSON-ready records."""
    if df is None or not len(df):
        return []
    return [_plain(r) for r in df.to_dict(orient="records")]
