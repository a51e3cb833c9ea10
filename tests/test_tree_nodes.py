"""The scenario tree's nodes read off the demand cube (planner.inputs.tree): against brute force."""

import numpy as np
import pandas as pd

from planner.inputs.tree import expand, node_labels


def _brute(demand, cut):
    """Scenarios share a node at t exactly when their demand (to a millionth of each class's peak) is equal in
    every period before t; nodes numbered by first scenario."""
    S, _K, T = demand.shape
    scale = np.maximum(np.abs(demand).max(axis=(0, 2), keepdims=True), 1.0)
    q = np.round(demand / scale, 6)
    out = np.zeros((len(cut), S), dtype=np.int64)
    for i, t in enumerate(cut):
        t = min(max(int(t), 0), T)
        reps: list[int] = []
        for s in range(S):
            same = [r for r in reps if np.array_equal(q[r, :, :t], q[s, :, :t])]
            if same:
                out[i, s] = reps.index(same[0])
            else:
                out[i, s] = len(reps)
                reps.append(s)
    return out


def test_nodes_match_brute_force_for_cuts_in_any_order():
    rng = np.random.default_rng(3)
    for _ in range(200):
        S, K, T = int(rng.integers(1, 7)), int(rng.integers(1, 3)), int(rng.integers(1, 12))
        demand = np.repeat(rng.integers(0, 3, (1, K, T)).astype(float), S, axis=0)
        for s in range(S):  # each scenario leaves the common path at its own period (or never)
            t0 = int(rng.integers(0, T + 1))
            demand[s, :, t0:] = rng.integers(0, 3, (K, T - t0))
        cut = rng.integers(-1, T + 3, int(rng.integers(1, 6)))
        assert np.array_equal(node_labels(demand, cut), _brute(demand, cut)), (demand, cut)


def test_noise_below_a_millionth_and_negative_zero_are_not_information():
    demand = np.array([[[100.0, 0.0, 5.0]], [[100.0 + 1e-5, -0.0, 7.0]]])
    assert node_labels(demand, np.array([2, 3, 1])).tolist() == [[0, 0], [0, 1], [0, 0]]


def test_expanded_rows_serve_their_nodes_scenarios():
    """Each purchase row becomes one row per node at its date; member says which scenarios each serves, the
    probability is theirs, and the activity is the origin row's."""
    periods = pd.date_range("2027-01-01", periods=4, freq="MS")
    demand = np.array([[[1.0, 1, 1, 1]], [[1.0, 2, 2, 2]], [[1.0, 2, 3, 3]]])
    table = pd.DataFrame({"purchase_date": periods[[0, 1, 2, 3]], "x": [10, 11, 12, 13]})
    active = np.arange(16, dtype=float).reshape(4, 4)
    out, act, member = expand(table, active, periods, demand, ["a", "b", "c"], np.array([0.5, 0.3, 0.2]))
    assert out["origin"].tolist() == [0, 1, 2, 2, 3, 3, 3]
    assert out["node"].tolist() == [0, 0, 0, 1, 0, 1, 2]
    assert member.tolist() == [[1, 1, 1], [1, 1, 1], [1, 0, 0], [0, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert np.allclose(out["probability"], [1, 1, 0.5, 0.5, 0.5, 0.3, 0.2])
    assert out["branch"].tolist() == ["all", "all", "a", "b + c", "a", "b", "c"]
    assert np.array_equal(act, active[[0, 1, 2, 2, 3, 3, 3]])


def test_nan_demand_shares_no_node():
    """NaN equals nothing (as np.unique found it): a NaN in a class leaves its scale unknown, and every scenario is a
    node of its own from the first cut on, never merged by equal bytes."""
    demand = np.array([[[1.0, np.nan, 2.0]], [[1.0, np.nan, 2.0]], [[1.0, 5.0, 2.0]], [[1.0, 5.0, 2.0]]])
    assert node_labels(demand, np.array([1, 2, 3])).tolist() == [[0, 1, 2, 3]] * 3
    assert node_labels(demand, np.array([0])).tolist() == [[0, 0, 0, 0]]
