"""The bill of a plan's horizon: new decisions plus the commitments already owned, priced.

The formulation leaves inventory out of the objective (it is sunk: nothing the plan decides changes
it), but finance pays it: each inventory row is priced at the price sheet's effective rate of its own
option (``hourly + (upfront - residual) / (term x 730)``, the row valid when the commitment started)
for the hours it is active inside the horizon. ``already committed + new decisions = the bill``.
Pure functions of a :class:`~planner.results.plan.Plan`; nothing here changes the plan.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.inputs.ladder import overlap_hours
from planner.core.units import HOURS_PER_MONTH
from planner.inputs import commitments


def _rate_rows(prices: pd.DataFrame, inventory: pd.DataFrame) -> pd.DataFrame:
    """Per inventory row: the price-sheet row of its (gpu_type, region, option) valid at its start (or none)."""
    res = prices[commitments.is_term(prices["option"])].copy()  # inventory is bought as term commitments
    if "valid_from" not in res:
        res["valid_from"] = pd.NaT
    res["_vf"] = res["valid_from"].fillna(pd.Timestamp.min)
    rows = []
    for r in inventory.itertuples():
        cand = res[(res["gpu_type"] == r.gpu_type) & (res["region"] == r.region) & (res["option"] == r.option)]
        valid = cand[cand["_vf"] <= pd.Timestamp(r.start)]
        pick = (valid if len(valid) else cand).sort_values("_vf")
        rows.append(pick.iloc[-1 if len(valid) else 0] if len(pick) else None)
    return rows


def inventory_table(inp) -> pd.DataFrame:
    """One row per commitment already owned: dates, GPUs, hours active in the horizon, rate and cost there.

    ``horizon_cost_usd`` = GPUs x effective rate x hours active in the horizon; ``recurring_usd`` and
    ``amortised_upfront_usd`` are its two parts; ``recurring_after_horizon_usd`` the hourly fee still owed
    after the horizon (to the row's end); ``expires_in_horizon`` when it ends before the horizon does.
    A row whose option the price sheet lacks is listed with ``priced = False`` and costs nothing.
    """
    cols = ["gpu_type", "region", "option", "gpus", "start", "end", "term_months", "hourly_usd", "upfront_usd",
            "residual_usd", "effective_usd_per_gpu_hour", "hours_in_horizon", "recurring_usd",
            "amortised_upfront_usd", "horizon_cost_usd", "recurring_after_horizon_usd", "expires_in_horizon",
            "priced", "valid_from", "hours_after_horizon"]
    inv = inp.tables.inventory
    if inv is None or not len(inv):
        return pd.DataFrame({c: [] for c in cols})
    inv = inv.reset_index(drop=True)
    hours = overlap_hours(inv["start"], inv["end"], inp.periods, inp.hours).sum(axis=1)
    horizon_end = inp.periods[-1] + pd.Timedelta(hours=float(inp.hours[-1]))
    out = inv[["gpu_type", "region", "option", "gpus", "start", "end"]].copy()
    picked = _rate_rows(inp.tables.prices, inv)
    get = lambda col, default=0.0: np.array([  # noqa: E731
        float(p[col]) if p is not None and col in p and pd.notna(p[col]) else default for p in picked])
    out["term_months"] = get("term_months", np.nan)
    out["hourly_usd"] = get("hourly_usd")
    out["upfront_usd"] = get("upfront_usd")
    out["residual_usd"] = get("residual_usd")
    out["priced"] = [p is not None for p in picked]
    out["valid_from"] = [p["valid_from"] if p is not None and pd.notna(p["valid_from"]) else pd.NaT for p in picked]
    out["hours_after_horizon"] = 0.0
    amort = np.where(out["priced"], (out["upfront_usd"] - out["residual_usd"])
                     / (np.nan_to_num(out["term_months"], nan=1.0) * HOURS_PER_MONTH), 0.0)
    out["effective_usd_per_gpu_hour"] = out["hourly_usd"] + amort
    out["hours_in_horizon"] = hours
    out["recurring_usd"] = out["gpus"] * out["hourly_usd"] * hours
    out["amortised_upfront_usd"] = out["gpus"] * amort * hours
    out["horizon_cost_usd"] = out["recurring_usd"] + out["amortised_upfront_usd"]
    after = np.clip((inv["end"] - horizon_end).dt.total_seconds().to_numpy() / 3600.0, 0.0, None)
    out["hours_after_horizon"] = after
    out["recurring_after_horizon_usd"] = out["gpus"] * out["hourly_usd"] * after
    out["expires_in_horizon"] = (inv["end"] > inp.periods[0]) & (inv["end"] <= horizon_end)
    return out[cols]


def bill(plan) -> dict:
    """``{"new_decisions_usd", "already_committed_usd", "total_usd"}`` for the horizon (expected over scenarios)."""
    owned = float(inventory_table(plan.inputs)["horizon_cost_usd"].sum())
    new = float(plan.cost["total"])
    return {"new_decisions_usd": new, "already_committed_usd": owned, "total_usd": new + owned}


def purchase_cost_by_period(plan) -> np.ndarray:
    """(R, T): the amortised cost of the plan's purchases in each period (GPUs x effective rate x active hours),
    expected: a purchase that waits for information counts at its branch's probability."""
    inp = plan.inputs
    res = inp.commitments
    if not len(res):
        return np.zeros((0, inp.T))
    units = plan.purchases["units" if "units" in plan.purchases else "instances"].to_numpy(float)  # instances or USD/h
    per_hour = units * res["m"].to_numpy(float) * res["r"].to_numpy(float) * inp.reserved_weight
    return per_hour[:, None] * np.asarray(inp.active) * inp.hours[None, :]


def inventory_cost_by_period(inp, inventory: pd.DataFrame) -> np.ndarray:
    """(rows, T): each owned commitment's cost in each period (GPUs x effective rate x its hours there)."""
    if not len(inventory):
        return np.zeros((0, inp.T))
    hours = overlap_hours(inventory["start"], inventory["end"], inp.periods, inp.hours)
    return (inventory["gpus"].to_numpy(float) * inventory["effective_usd_per_gpu_hour"].to_numpy(float))[:, None] * hours
