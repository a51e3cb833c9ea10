"""Shadow prices: what relaxing each binding budget, cap, headroom or spot share by one unit is worth.

The reserved purchases are fixed at the plan's (integers have no duals); the remaining LP is solved by
HiGHS and its row duals aggregated per family into figures a planner can act on:

| family | per | shadow price means |
|---|---|---|
| ``budget`` | total or month | objective change per extra USD of budget (negative: it saves shortfall penalty) |
| ``headroom`` | class | cost of one more percentage point of headroom over the horizon (sum_b dual x d) / 100 |
| ``spot_share`` | class | cost change of one more percentage point of allowed spot share |
| ``od_cap`` / ``spot_cap`` | pool | cost change of one more GPU of on-demand / spot cap, held for the whole horizon |
| ``reserved_capacity`` | pool | cost change of one more reserved GPU owned for the whole horizon (its price not counted) |

A negative value is a saving. Only binding rows (non-zero dual) are reported. They are the LP's
derivatives and equal finite differences of re-solves while the optimal basis holds; at a degenerate
optimum the derivative differs by direction (one more unit and one less), and the dual is one of the
one-sided values or between them: read them as marginal values for small changes, and re-solve
(``planner sweep``) for large ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ["family", "name", "gpu_type", "region", "workload_class", "unit", "shadow_price_usd", "per_month_usd",
           "meaning"]


def _family_duals(model, duals: np.ndarray) -> dict[str, tuple]:
    """family -> (row frame, dual per row) in the model's row order."""
    out, offset = {}, 0
    for f in model.constraints.families:
        out[f.name] = (model.row_frame(f.name) if f.labels is None else
                       pd.DataFrame({"row": np.arange(f.n), "label": list(f.labels)}), duals[offset:offset + f.n],
                       f)
        offset += f.n
    return out


def row_duals(inp, purchases: np.ndarray, threads: int | None = None):
    """The LP with the purchases fixed, solved by HiGHS: (model, row duals) or (model, None) if not optimal."""
    import highspy

    from .model import build_model
    from .solve import _highs_lp, _new_highs

    model = build_model(inp, fixed_reserved=purchases)
    if model.n_variables == 0 or model.n_constraints == 0:
        return model, np.zeros(model.n_constraints)
    h = _new_highs(highspy, None, 1e-9, threads)
    h.passModel(_highs_lp(model, highspy, integer=False))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return model, None
    return model, np.asarray(h.getSolution().row_dual, dtype=float)


def shadow_prices(plan, tol: float = 1e-7) -> pd.DataFrame:
    """One row per binding family member (see the module docstring); empty when nothing binds."""
    inp = plan.inputs
    model, duals = row_duals(inp, plan.purchases["units"].to_numpy(float), inp.config.solver.threads)
    if duals is None or not len(duals):
        return pd.DataFrame(columns=COLUMNS)
    months = max(inp.horizon_hours / 730.0, 1e-9)
    fams = _family_duals(model, duals)
    blocks = model.blocks
    rows = []

    def add(family, name, unit, value, meaning, **keys):
        if abs(value) > tol:  # a budget's is per USD of budget: per month means nothing there
            rows.append({"family": family, "name": name, "unit": unit, "shadow_price_usd": float(value),
                         "per_month_usd": None if family == "budget" else float(value) / months,
                         "meaning": meaning, **keys})

    if "budget" in fams:
        frame, d, _ = fams["budget"]
        for label, v in zip(frame["label"], d):
            what = "the total budget" if label == "budget_total" else \
                "the budget of " + label.replace("budget_month_", "").replace("_", "-")
            add("budget", label, "USD of budget", v, f"objective change per extra USD of {what}")
    if "demand" in fams:
        frame, d, f = fams["demand"]
        k, b = np.asarray(f.keys[0]), np.asarray(f.keys[1])
        base = blocks.demand[k, b]  # d[k, b] before headroom: the derivative of the right-hand side in eta
        per_class = np.bincount(k, weights=d * base, minlength=inp.K)
        for i, name in enumerate(inp.classes):
            add("headroom", name, "percentage point of headroom", per_class[i] / 100.0,
                f"cost of one more point of headroom for {name} over the horizon", workload_class=name)
    if "spot_share" in fams:
        frame, d, f = fams["spot_share"]
        k, b = np.asarray(f.keys[0]), np.asarray(f.keys[1])
        per_class = np.bincount(k, weights=d * blocks.demand[k, b], minlength=inp.K)
        for i, name in enumerate(inp.classes):
            add("spot_share", name, "percentage point of spot share", per_class[i] / 100.0,
                f"cost change if {name} may put one more point of its demand on spot", workload_class=name)
    for family, label in (("od_cap", "on-demand cap"), ("spot_cap", "spot cap"),
                          ("reserved_share", "reserved GPUs owned")):
        if family not in fams:
            continue
        frame, d, f = fams[family]
        p = np.asarray(f.keys[0])
        per_pool = np.bincount(p, weights=d, minlength=inp.P)
        for j in np.flatnonzero(np.abs(per_pool) > tol):
            gt, rg = inp.pools["gpu_type"].iat[j], inp.pools["region"].iat[j]
            name = "reserved_capacity" if family == "reserved_share" else family
            add(name, f"{gt}/{rg}", "GPU held for the whole horizon", per_pool[j],
                f"cost change with one more GPU of {label} in {gt}/{rg} in every period", gpu_type=gt, region=rg)
    return pd.DataFrame(rows).reindex(columns=COLUMNS)
