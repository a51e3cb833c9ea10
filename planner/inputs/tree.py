"""Purchases that may wait for information: the scenario tree the demand implies (non-anticipativity).

With several scenarios and dated purchases, a purchase on date ``s`` may depend only on what is known at ``s``
(spec/contracts.md, "Forecasts and scenario trees"): the scenarios whose demand (and prices, where the price
sheet gives scenarios their own: :mod:`planner.inputs.price_paths`) coincides in every period before ``s`` form
one *node* at ``s`` and share its purchases; the first date's node holds every scenario (the
decision to act on now). Nothing is declared: the tree is read off the demand cube. A forecast tree
(``planner forecast --tree``) branches at purchase dates, so information arrives gradually; quantile paths
that differ from the first period on make every later purchase a recourse decision per scenario.

:func:`expand` turns the commitments table (one row per option and purchase date) into one row per option,
date and node, with ``member`` (R, S): the scenarios each row serves. The model then charges each row its
cost times its node's probability, and counts its GPUs only in its own scenarios' periods (blocks,
reserved rows and caps per scenario). ``[commitments] non_anticipativity = "first_stage"`` keeps every
purchase common to all scenarios (the two-stage plan): the comparison that prices the value of waiting.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.inputs.activity import take_rows

MODES = ("tree", "first_stage")


def node_labels(demand: np.ndarray, cut: np.ndarray) -> np.ndarray:
    """(len(cut), S) node of every scenario at each cut (a period position): scenarios share a node when their
    demand (S, K, T) is equal (to a millionth of each class's peak) in every period before the cut.
    Nodes are numbered by first scenario."""
    S, K, T = demand.shape
    out = np.zeros((len(cut), S), dtype=np.int64)
    if S == 1:
        return out
    # demand equal to a millionth of the class's peak is equal: float noise (a CSV's last digits) is not information
    scale = np.maximum(np.abs(demand).max(axis=(0, 2), keepdims=True), 1.0)
    q = np.round(demand / scale, 6) + 0.0  # + 0.0: -0.0 is 0.0
    # the cuts in time order, each refining the last: two scenarios share a node at t when they shared one at the
    # cut before and their demand is equal between the two (each period is read once, not once per cut)
    label, done = np.zeros(S, dtype=np.int64), 0
    for i in np.argsort(cut, kind="stable"):
        t = min(int(cut[i]), T)
        if t <= 0:
            continue
        if t > done:
            seen: dict = {}
            seg = q[:, :, done:t]
            unknown = np.isnan(seg).any(axis=(1, 2))  # NaN equals nothing, not even itself: a node of its own
            label = np.array([seen.setdefault((int(label[s]), s if unknown[s] else -1, seg[s].tobytes()), len(seen))
                              for s in range(S)], dtype=np.int64)  # numbered by first scenario
            done = t
        out[i] = label
    return out


def expand(reserved: pd.DataFrame, active: np.ndarray, periods: pd.DatetimeIndex, demand: np.ndarray,
           scenarios: list[str], probability: np.ndarray,
           signature: np.ndarray | None = None) -> tuple[pd.DataFrame, np.ndarray, np.ndarray | None]:
    """The commitments table with one row per (row, node at its purchase date): (table, activity, member).

    ``member`` (R', S) is None when no row splits (one scenario, or every scenario equal before every purchase
    date): the table is then returned as given. Added columns: ``node`` (the node's number at its date),
    ``branch`` (the scenarios it serves, readable), ``probability`` (theirs, summed) and ``origin`` (the row of
    the given table). A resale (kind ``exit``) keeps as ``parent`` the expanded row of its term that serves
    its scenarios. ``signature`` (S, X, T): the scenarios' prices (:meth:`planner.inputs.price_paths.PricePaths.signature`);
    scenarios share a node only where their demand and their prices coincide before the purchase date.
    """
    S = len(scenarios)
    if S < 2 or not len(reserved):
        return reserved, active, None
    # what is known at a purchase instant: the periods that ended before it (a purchase inside a period, a
    # capacity block bought at 11:30, knows nothing of that period)
    when = pd.DatetimeIndex(reserved["purchase_date"]).as_unit("ns").asi8
    cut = np.clip(np.searchsorted(pd.DatetimeIndex(periods).as_unit("ns").asi8, when, side="right") - 1, 0, None)
    dates, which = np.unique(cut, return_inverse=True)
    known = demand if signature is None else np.concatenate([np.asarray(demand, float),
                                                             np.asarray(signature, float)], axis=1)
    labels = node_labels(known, dates)  # (D, S)
    if labels.max() == 0:
        return reserved, active, None
    nodes = labels.max(axis=1) + 1  # (D,) nodes at each purchase date
    counts = nodes[which]  # (R,) rows each given row becomes: one per node at its date
    origin = np.repeat(np.arange(len(reserved)), counts)
    node = np.arange(len(origin)) - np.repeat(np.cumsum(counts) - counts, counts)
    member = labels[which[origin]] == node[:, None]  # (R', S)
    table = reserved.iloc[origin].reset_index(drop=True)
    table["origin"] = origin
    table["node"] = node
    table["probability"] = member.astype(float) @ np.asarray(probability, float)
    names = np.asarray(scenarios, dtype=object)
    offset = np.concatenate([[0], np.cumsum(nodes)])  # one name per (date, node), not per row
    name_of = [branch_name(names[labels[d] == g].tolist(), S) for d in range(len(nodes)) for g in range(nodes[d])]
    table["branch"] = np.asarray(name_of, dtype=object)[offset[which[origin]] + node]
    if "parent" in table and (table["parent"] >= 0).any():  # a resale's parent: its term's row that serves it
        par = table["parent"].to_numpy(int)
        new_parent = par.copy()
        for e in np.flatnonzero(par >= 0):
            cand = np.flatnonzero((origin == par[e]) & np.all(member[:, member[e]], axis=1))
            new_parent[e] = int(cand[0]) if len(cand) else -1
        table["parent"] = new_parent
    return table, take_rows(active, origin), member


def branch_name(names: list[str], total: int) -> str:
    """How a node is named to a reader: ``all``, the scenarios (up to three), or the first and last of them."""
    if len(names) == total:
        return "all"
    if len(names) <= 3:
        return " + ".join(names)
    return f"{names[0]} ... {names[-1]} ({len(names)} scenarios)"


def member_of(inp) -> np.ndarray:
    """(R, S) the scenarios each commitments-table row serves (all, without a tree)."""
    m = getattr(inp, "reserved_member", None)
    return np.ones((len(inp.commitments), len(inp.scenarios)), dtype=bool) if m is None else m


def weight_of(inp) -> np.ndarray:
    """(R,) each row's probability: the sum over the scenarios it serves (1 for a purchase common to all)."""
    m = getattr(inp, "reserved_member", None)
    if m is None:
        return np.ones(len(inp.commitments))
    return m.astype(float) @ np.asarray(inp.probability, float)
