"""Mean-CVaR risk preference over the scenarios (Rockafellar and Uryasev 2000): a linking family.

    min  (1 - lam) sum_s p_s cost_s  +  lam (eta + 1/(1 - alpha) sum_s p_s u_s)
    s.t. u_s >= cost_s - eta,  u_s >= 0,  eta free

``cost_s`` is scenario s's own cost: the purchases it carries (all of them, or on a tree those of its
branch) plus the on-demand, spot and shortfall of its periods. At the optimum ``eta`` is the alpha
value-at-risk and ``eta + 1/(1 - alpha) sum_s p_s u_s`` the alpha CVaR: the mean cost of the worst
``1 - alpha`` of outcomes. ``lam = 0`` is the risk-neutral plan, ``lam = 1`` CVaR alone.

The rows tie every period of a scenario together (its whole cost), so the decomposition is not exact with
it: :mod:`planner.model.stages` declares it a linking family. Each (scenario, period) must be its own block
(build the model with ``merge_periods=False``, as ``make_plan`` does whenever an ``extend`` is given).
"""

from __future__ import annotations

import numpy as np

ETA, EXCESS, ROWS, CAP = "cvar_eta", "cvar_excess", "cvar_tail", "cvar_cap"


def _own(inp):
    from planner.model.objective import cost_by_scenario

    return cost_by_scenario(inp)


def scenario_cost_matrix(model, inp) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scenario, column, coefficient) triples: ``cost_s = sum coef x[col]`` over the model's own columns."""
    prob = np.asarray(inp.probability, float)
    S = len(prob)
    of = np.asarray(model.blocks.of)
    block_scen = np.full(len(model.blocks.weight), -1)
    for s in range(S):  # S is small (a handful of scenarios); blocks are numbered per (s, t) without merging
        mine = np.unique(of[s])
        if np.any((block_scen[mine] != -1) & (block_scen[mine] != s)):
            raise ValueError("a CVaR objective needs each (scenario, period) as its own block: build the model "
                             "with merge_periods=False")
        block_scen[mine] = s
    scen, cols, coefs = [], [], []
    untied = model.untied_cost() if len(model.tie[0]) else model.cost  # (the objective's tie-breaks are not costs)
    for name, frame in model.families.items():
        if not len(frame):
            continue
        col = frame["col"].to_numpy()
        c = untied[col]
        if name == "n":
            weight = np.asarray(inp.reserved_weight, float) * np.ones(len(col))
            member = (np.ones((len(col), S)) if inp.reserved_member is None
                      else np.asarray(inp.reserved_member, float))
            per = np.divide(c, weight, out=np.zeros_like(c), where=weight > 0)
            r, s = np.nonzero(member)
            own = _own(inp)  # prices by scenario: each scenario pays its own, not the mean
            scen.append(s), cols.append(col[r]), coefs.append(per[r] if own is None else own[r, s])
        elif "b" in frame:
            s = block_scen[frame["b"].to_numpy()]
            scen.append(s), cols.append(col), coefs.append(c / prob[s])
        elif np.any(c != 0):
            raise ValueError(f"the CVaR objective cannot attribute family {name!r}'s cost to a scenario")
    return np.concatenate(scen), np.concatenate(cols), np.concatenate(coefs)


def add_cvar(model, inp, alpha: float, weight: float, cap: float | None = None) -> dict:
    """Turn ``model``'s expected-cost objective into mean-CVaR (in place); returns its column indices. With
    ``cap``: the objective stays the expected cost (``weight`` unused) and the alpha CVaR is held at most ``cap``
    (one row: ``eta + 1/(1 - alpha) sum_s p_s u_s <= cap``), the second, lexicographic solve of CVaR alone."""
    if not 0 < alpha < 1:
        raise ValueError(f"cvar_alpha must lie strictly between 0 and 1 (got {alpha!r})")
    if not 0 <= weight <= 1:
        raise ValueError(f"cvar_weight must lie in 0 .. 1 (got {weight!r})")
    prob = np.asarray(inp.probability, float)
    S = len(prob)
    scen, cols, coefs = scenario_cost_matrix(model, inp)
    if cap is not None:
        weight = 0.0
    model.cost = model.cost * (1.0 - weight)
    model.tie = (model.tie[0], model.tie[1] * (1.0 - weight))  # (scaled with the objective they are in)
    model.owned = (model.owned[0], model.owned[1] * (1.0 - weight))
    eta = model.add_columns(ETA, 1, lower=-np.inf, cost=weight)
    u = model.add_columns(EXCESS, S, cost=weight * prob / (1.0 - alpha))
    # u_s + eta - cost_s >= 0
    rows = np.concatenate([np.arange(S), np.arange(S), scen])
    cc = np.concatenate([u, np.repeat(eta, S), cols])
    cf = np.concatenate([np.ones(S), np.ones(S), -coefs])
    model.add_rows(ROWS, rows, cc, cf, ">=", np.zeros(S))
    if cap is not None:
        model.add_rows(CAP, np.zeros(S + 1, dtype=np.int64), np.concatenate([np.atleast_1d(eta), u]),
                       np.concatenate([[1.0], prob / (1.0 - alpha)]), "<=", np.array([float(cap)]))
    return {"eta": eta, "excess": u}


def scenario_costs(model, inp, x: np.ndarray) -> np.ndarray:
    """Each scenario's cost at the column values ``x`` (the original coefficients, before :func:`add_cvar`)."""
    scen, cols, coefs = scenario_cost_matrix(model, inp)
    return np.bincount(scen, weights=coefs * np.asarray(x, float)[cols], minlength=len(inp.probability))


def cvar(costs: np.ndarray, prob: np.ndarray, alpha: float) -> float:
    """The alpha CVaR of a discrete distribution (Rockafellar-Uryasev's min over eta, at a support point)."""
    costs, prob = np.asarray(costs, float), np.asarray(prob, float)
    return float(min(e + np.sum(prob * np.maximum(costs - e, 0.0)) / (1.0 - alpha) for e in costs))
