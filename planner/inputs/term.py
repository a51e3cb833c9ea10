"""How commitments that outlive the horizon were judged, said in every output (issue 34: never silently).

One model judges every commitment on its horizon only: a purchase pays (amortised accounting) or is charged
(full_term) for its term, but the demand past the horizon is not forecast. :func:`term_judgement` names that
wherever a term the plan may buy runs past the demand given (plan.json ``term``, the terminal)
and the plan was judged on its horizon (``[term] judge = "horizon"``, or ``make_plan`` alone); ``planner plan``
judges on the whole term by default (:mod:`planner.pipeline.whole_term`).
"""

from __future__ import annotations

import pandas as pd

HOURS_PER_MONTH = 730.0


def outlives_horizon(inp) -> bool:
    """True when a purchase the plan may make runs past the horizon's end: a term longer than the horizon, or a
    dated purchase late in it (a 3-year term bought in month 30 of a 36-month horizon holds 30 months past it)."""
    res = inp.commitments
    if not len(res) or "term_months" not in res:
        return False
    if "end_date" not in res or not inp.T:
        return float(res["term_months"].max()) * HOURS_PER_MONTH > float(inp.horizon_hours)
    from planner.inputs.whole_term import horizon_end

    return bool((pd.DatetimeIndex(res["end_date"]) > horizon_end(inp)).any())


def term_judgement(inp) -> dict | None:
    """``{"source", "months", "branches", "horizon_hours", "note"}`` when a term outlives the horizon, else None."""
    res = inp.commitments
    if not len(res) or "term_months" not in res:
        return None
    months = float(res["term_months"].max())
    horizon = float(inp.horizon_hours)
    if not outlives_horizon(inp):
        return None
    span = (f"{months / 12:g}-year" if months % 12 == 0 else f"{months:g}-month")
    weeks = horizon / 168.0
    given = f"{weeks:.0f}-week" if weeks >= 1 else f"{horizon:.0f}-hour"
    accounting = inp.config.commitments.accounting
    how = "amortised: each purchase pays only the horizon hours it is active" if accounting == "amortised" \
        else "full_term: each purchase pays its whole term against the horizon's use"
    return {"source": "horizon", "judge": "horizon", "months": months, "branches": 1, "horizon_hours": horizon,
            "note": f"{span} terms judged on the {given} demand given only ({how}); demand past the horizon "
                    f"was not forecast"}
