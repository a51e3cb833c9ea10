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


def row_duals(inp, purchases: np.ndarray, threads: int | None = None):
    """The LP with the purchases fixed, solved by HiGHS: (model, row duals) or (model, None) if not optimal."""
    import highspy

    from planner.model import build_model
    from planner.solve.monolithic import new_highs, pass_model

    model = build_model(inp, fixed_reserved=purchases)
    if model.n_variables == 0 or model.n_constraints == 0:
        return model, np.zeros(model.n_constraints)
    h = new_highs(highspy, None, 1e-9, threads)
    pass_model(h, model, highspy, integer=False)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return model, None
    return model, np.asarray(h.getSolution().row_dual, dtype=float)


CODES = {"demand": 1, "spot_share": 2, "od_cap": 3, "spot_cap": 4, "reserved_share": 5}
PER_CLASS = ("headroom", "spot_share")
PER_POOL = ("od_cap", "spot_cap", "reserved_share")


def row_codes(model, inp) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``model``: its family code (:data:`CODES`, 0 for the rest), key (class or pool) and weight
    (the demand d[k, b] for demand and spot-share rows, 1 for caps): what :func:`sums_from_codes` needs."""
    code, key, weight = [], [], []
    blocks = model.blocks
    for f in model.constraints.families:
        c = CODES.get(f.name, 0)
        code.append(np.full(f.n, c, dtype=np.int8))
        if c in (1, 2):
            k, b = np.asarray(f.keys[0]), np.asarray(f.keys[1])
            key.append(k.astype(np.int32))
            weight.append(blocks.demand[k, b])
        elif c in (3, 4, 5):
            key.append(np.asarray(f.keys[0]).astype(np.int32))
            weight.append(np.ones(f.n))
        else:
            key.append(np.zeros(f.n, dtype=np.int32))
            weight.append(np.zeros(f.n))
    if not code:
        return np.zeros(0, np.int8), np.zeros(0, np.int32), np.zeros(0)
    return np.concatenate(code), np.concatenate(key), np.concatenate(weight)


def sums_from_codes(code: np.ndarray, key: np.ndarray, weight: np.ndarray, duals: np.ndarray, K: int, P: int
                    ) -> dict[str, np.ndarray]:
    """The shadow-price sums of row ``duals``: per class the headroom and spot-share derivatives (sum of dual x
    demand), per pool the sums of the on-demand cap, spot cap and reserved-capacity duals. Sums over disjoint
    sets of periods add up: the decomposition's batches give the whole model's."""
    out = {}
    for name, c, size in (("headroom", 1, K), ("spot_share", 2, K), ("od_cap", 3, P), ("spot_cap", 4, P),
                          ("reserved_share", 5, P)):
        hit = code == c
        out[name] = np.bincount(key[hit], weights=duals[hit] * weight[hit], minlength=size)
    return out


def family_sums(model, inp, duals: np.ndarray) -> dict:
    """:func:`sums_from_codes` of a whole model's row duals, plus its budget rows' duals by label."""
    code, key, weight = row_codes(model, inp)
    out = sums_from_codes(code, key, weight, duals, inp.K, inp.P)
    out["budget"], offset = {}, 0
    for f in model.constraints.families:
        if f.name == "budget":
            out["budget"] = dict(zip(f.labels, duals[offset:offset + f.n]))
        offset += f.n
    return out


def shadow_prices(plan, tol: float = 1e-7) -> pd.DataFrame:
    """One row per binding family member (see the module docstring); empty when nothing binds.

    The sums come from the solve that made the plan where it left row duals (``plan.dual_sums``: the LP with
    the purchases fixed, or the decomposition's last pricing); else the LP with the purchases fixed is solved.
    """
    inp = plan.inputs
    sums = getattr(plan, "dual_sums", None)
    if sums is None:
        model, duals = row_duals(inp, plan.purchases["units"].to_numpy(float), inp.config.solver.threads)
        if duals is None or not len(duals):
            return pd.DataFrame(columns=COLUMNS)
        sums = family_sums(model, inp, duals)
    return shadow_table(inp, sums, tol)


def shadow_table(inp, sums: dict, tol: float = 1e-7) -> pd.DataFrame:
    """The shadow-price table from the sums of :func:`family_sums`."""
    months = max(inp.horizon_hours / 730.0, 1e-9)
    rows = []

    def add(family, name, unit, value, meaning, **keys):
        if abs(value) > tol:  # a budget's is per USD of budget: per month means nothing there
            rows.append({"family": family, "name": name, "unit": unit, "shadow_price_usd": float(value),
                         "per_month_usd": None if family == "budget" else float(value) / months,
                         "meaning": meaning, **keys})

    for label, v in sums.get("budget", {}).items():
        what = "the total budget" if label == "budget_total" else \
            "the budget of " + label.replace("budget_month_", "").replace("_", "-")
        add("budget", label, "USD of budget", v, f"objective change per extra USD of {what}")
    for i, name in enumerate(inp.classes):
        add("headroom", name, "percentage point of headroom", sums["headroom"][i] / 100.0,
            f"cost of one more point of headroom for {name} over the horizon", workload_class=name)
    for i, name in enumerate(inp.classes):
        add("spot_share", name, "percentage point of spot share", sums["spot_share"][i] / 100.0,
            f"cost change if {name} may put one more point of its demand on spot", workload_class=name)
    for family, label in (("od_cap", "on-demand cap"), ("spot_cap", "spot cap"),
                          ("reserved_share", "reserved GPUs owned")):
        per_pool = sums[family]
        for j in np.flatnonzero(np.abs(per_pool) > tol):
            gt, rg = inp.pools["gpu_type"].iat[j], inp.pools["region"].iat[j]
            name = "reserved_capacity" if family == "reserved_share" else family
            add(name, f"{gt}/{rg}", "GPU held for the whole horizon", per_pool[j],
                f"cost change with one more GPU of {label} in {gt}/{rg} in every period", gpu_type=gt, region=rg)
    return pd.DataFrame(rows).reindex(columns=COLUMNS)
