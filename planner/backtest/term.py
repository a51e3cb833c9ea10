"""Full-term accounting of a backtest: every commitment signed is charged its whole liability.

The in-span figures charge a commitment its effective rate for the hours it is active inside the test span
(amortised): a 3-year term signed on day 3 of a 24-day backtest costs 21 days of it, and the 35 months after the
span are nobody's problem. Here each commitment costs ``hourly x term hours + upfront - residual``
(:func:`planner.inputs.ladder.full_term_usd_per_gpu`) on the date it is signed, whatever part of the term the span
holds; on-demand, spot and the shortfall penalty stay as realised in the span.

The hindsight is charged likewise: :func:`full_term_inputs` re-plans the span with ``accounting = "full_term"``,
so the hindsight is the cheapest way to serve the span's demand when everything signed is paid in full. On a
month-long trace that is (almost) all on demand: a month cannot pay for a year, and full-term regret then says
how much of a term a strategy signed on evidence that cannot justify it. Where the trace runs past the last
cut-off that buys by the longest term (``decide`` in :class:`planner.backtest.run.Settings`, the span extended to
cover the terms), every term lies inside the span and the two accountings agree: that is how the multi-year
traces test 1-year against 3-year terms and buying now against waiting.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from planner.inputs.ladder import full_term_usd_per_gpu
from planner.inputs import commitments


def liability_usd(purchases: pd.DataFrame) -> np.ndarray:
    """Per row of a plan's ``purchases``: the whole liability of the GPUs bought there (a capacity block: its
    window's cost, which lies inside the span)."""
    if not len(purchases):
        return np.zeros(0)
    gpus = purchases["gpus"].to_numpy(float)
    term = commitments.is_term_row(purchases)
    full = np.where(term, full_term_usd_per_gpu(purchases.fillna({"term_months": 0.0, "upfront_usd": 0.0,
                                                                  "residual_usd": 0.0})), 0.0)
    whole_block = purchases["effective_usd_per_gpu_hour"].to_numpy(float) * purchases["hours_active"].to_numpy(float)
    return gpus * np.where(term, full, whole_block)


def by_date(plan, dates: pd.DatetimeIndex) -> tuple[np.ndarray, np.ndarray]:
    """(D,) twice: the whole liabilities the plan signs on each of the purchase ``dates`` (the cut-offs that buy),
    and the part of them that falls past the span (the liability less its amortised charge inside the span)."""
    p = plan.purchases
    signed, past = np.zeros(len(dates)), np.zeros(len(dates))
    if not len(p) or not len(dates):
        return signed, past
    where = dates.get_indexer(pd.DatetimeIndex(p["purchase_date"]))
    owed = liability_usd(p)
    keep = (where >= 0) & (owed != 0)
    np.add.at(signed, where[keep], owed[keep])
    np.add.at(past, where[keep], owed[keep] - p["horizon_cost_usd"].to_numpy(float)[keep])
    return signed, past


def terms_inside(whole) -> bool:
    """True when every commitment the span offers ends inside it (the two accountings then agree)."""
    res = whole.commitments
    if not len(res) or not whole.T:
        return True
    end = whole.periods[-1] + pd.Timedelta(hours=float(whole.hours[-1]))
    return bool((pd.to_datetime(res["end_date"]) <= end).all())


def full_term_inputs(whole):
    """The span's inputs with every commitment charged its whole liability (the full-term hindsight's)."""
    cfg = whole.config
    return replace(whole, config=replace(cfg, commitments=replace(cfg.commitments, accounting="full_term")))


def window_costs(costs: pd.DataFrame, past: np.ndarray, starts: np.ndarray, test: int) -> pd.DataFrame:
    """Per window (positions ``starts`` in ``costs``, ``test`` periods each): its in-span objective plus the part
    past the span of the liabilities signed at its cut-off (window w: ``past[w]``; none past the cut-offs that
    buy). Summed over windows (``step = test``) that is the full-term objective of the span; where every term
    lies inside the span it is the in-span objective, window by window."""
    cum = np.r_[0.0, costs["objective"].cumsum().to_numpy()]
    ends = np.minimum(starts + test, len(costs))
    extra = np.zeros(len(starts))
    extra[:min(len(starts), len(past))] = past[:len(starts)]
    return pd.DataFrame({"past_span_usd": extra, "full_term_objective_usd": cum[ends] - cum[starts] + extra})


def full_term_covered(base, settings, cuts) -> tuple[bool, str | None]:
    """Whether the trace covers the decision span plus the longest term a strategy may sign (then full-term regret
    is measured on demand that happened), and why not when it does not (backtest.json ``full_term_note``)."""
    import pandas as pd

    if base.options is None or not len(base.options):
        return True, None
    longest = float(base.options["term_months"].max()) * 730.0
    decisions = settings.decisions(base.T)
    last = base.periods[int(decisions.max()) if len(decisions) else int(cuts[-1])]
    end = base.periods[-1] + pd.Timedelta(hours=float(base.hours[-1]))
    need = last + pd.Timedelta(hours=longest)
    if end >= need:
        return True, None
    return False, (f"the trace ends {end:%Y-%m-%d}, before the last decision ({last:%Y-%m-%d}) plus the longest "
                   f"term ({longest / 730:g} months, to {need:%Y-%m-%d}): full-term regret would rank strategies "
                   "by the dollars they committed, not by what they saved")
