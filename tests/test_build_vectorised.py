"""The model's build read by pool, by tree node and as packed bits gives exactly what the plain reads gave.

Oracles: the loops and the whole-column reads these replaced, written out here (brute force on random trees, a
model's own reserved-share entries, ``np.unique`` itself)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.inputs.activity import spans_of
from planner.model.blocks import _column_labels, _tree_labels, unique_columns


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether labels ``a`` and ``b`` split the items alike (equal in one exactly where equal in the other)."""
    a, b = a.reshape(-1), b.reshape(-1)
    pairs = np.unique(np.stack([a, b], axis=1), axis=0)
    return len(pairs) == len(np.unique(a)) == len(np.unique(b))


def _random_tree(rng, R, S, T):
    """A term activity (rows active over a run of periods, a share at each end) and a 0/1 tree membership."""
    lo = rng.integers(-3, T, R)
    hi = lo + rng.integers(-1, T, R)
    t = np.arange(T)
    active = ((t[None, :] >= lo[:, None]) & (t[None, :] <= hi[:, None])).astype(float)
    active[np.arange(R), np.clip(lo, 0, T - 1)] *= np.where(lo >= 0, rng.choice([1.0, 0.5, 0.25], R), 1.0)
    nodes = rng.integers(0, 2, (int(rng.integers(1, 6)), S)).astype(bool)  # a few membership patterns
    member = nodes[rng.integers(0, len(nodes), R)]
    return active, member


def test_tree_labels_split_the_pairs_as_their_whole_columns_do():
    """Each (scenario, period)'s label from the tree's nodes splits the pairs exactly as labelling the whole
    ``active[:, t] * member[:, s]`` columns does (and as their contents do), dense or spans, 0/1 or shares."""
    rng = np.random.default_rng(11)
    for trial in range(120):
        R, S, T = int(rng.integers(0, 30)), int(rng.integers(1, 6)), int(rng.integers(1, 60))
        active, member = _random_tree(rng, R, S, T)
        if trial % 5 == 0 and R:
            member = member * rng.choice([1.0, 0.5], (R, S))  # shares: the whole columns are labelled
        whole = np.stack([active[:, t] * member[:, s] for s in range(S) for t in range(T)])  # (S * T, R)
        exact = (np.unique(whole, axis=0, return_inverse=True)[1].reshape(S, T) if R
                 else np.zeros((S, T), dtype=np.int64))
        for act in (active, spans_of(active)):
            if act is None:
                continue
            got = _tree_labels(act, member, S, T)
            assert got.shape == (S, T)
            assert _same_partition(got, exact), trial
            if R:
                mem = np.asarray(member, float)
                plain = _column_labels(R, S * T, lambda j: active[:, j % T] * mem[:, j // T]).reshape(S, T)
                assert _same_partition(got, plain), trial


def test_tree_labels_merge_a_horizon_shared_by_branches():
    """Branches of one scenario share its horizon (their own rows start after it): their horizon periods get one
    label each, the periods after apart."""
    T, split = 20, 12
    active = np.zeros((3, T))
    active[0] = 1.0  # bought before the split: every branch
    active[1, split:] = active[2, split:] = 1.0  # a branch's own purchase after it
    member = np.array([[1, 1], [1, 0], [0, 1]], dtype=bool)
    got = _tree_labels(active, member, 2, T)
    assert np.array_equal(got[0, :split], got[1, :split])
    assert not np.isin(got[0, split:], got[1, split:]).any()


def test_unique_columns_equal_numpys():
    """Patterns, their order and each column's pattern: ``np.unique(on.T, axis=0, return_inverse=True)``."""
    rng = np.random.default_rng(5)
    for trial in range(200):
        r, c = int(rng.integers(0, 40)), int(rng.integers(0, 120))
        on = rng.random((r, c)) < rng.random()
        if c > 2 and trial % 2:
            on[:, ::2] = on[:, :1]  # repeated columns
        want, which = np.unique(on.T, axis=0, return_inverse=True)
        got, gwhich = unique_columns(on)
        assert got.dtype == want.dtype and np.array_equal(got, want), trial
        assert np.array_equal(gwhich, which.reshape(-1)), trial


def test_reserved_share_entries_equal_the_purchase_by_purchase_read(tmp_path):
    """The reserved-share rows' purchase entries of a whole-term tree (the bundled ladder's: 3-year terms bought
    monthly, judged on a tree of branches) equal, entry for entry and in order, reading every purchase row
    against every row's block as the build did."""
    from planner import load_inputs
    from planner.inputs import whole_term
    from planner.model import build_model
    from planner.pipeline.whole_term import basis_for
    from pathlib import Path

    inp = load_inputs(Path(__file__).resolve().parents[1] / "models" / "ladder.toml")
    ext = replace(whole_term.extend(inp, basis_for(inp)), reserved_source=None)
    assert ext.reserved_member is not None and len(ext.scenarios) > 1
    model = build_model(ext)
    fam = model.constraints.families
    share = next(f for f in fam if f.name == "reserved_share")
    n = model.families["n"]
    ncols = n["col"].to_numpy()
    purchase = np.isin(share.cols, ncols)
    rp, rb = share.keys
    m = ext.commitments["m"].to_numpy(float)
    rows, cols, coefs = [], [], []
    for c, (pool, col) in enumerate(zip(n["p"].to_numpy(), ncols)):  # the read this replaced
        a = model.blocks.active[c, rb]
        hit = np.flatnonzero((rp == pool) & (a > 0))
        rows.append(hit)
        cols.append(np.full(len(hit), col))
        coefs.append(-m[c] * a[hit])
    assert purchase.sum() == sum(len(r) for r in rows) > 0
    assert np.array_equal(share.rows[purchase], np.concatenate(rows))
    assert np.array_equal(share.cols[purchase], np.concatenate(cols))
    assert np.array_equal(share.coefs[purchase], np.concatenate(coefs))


def test_tree_labels_fall_back_to_the_whole_columns_where_the_nodes_cannot_say():
    """NaN or inf in the activity (NaN x 0 is NaN: a group outside a scenario is not then zero), more membership
    patterns than a tree's nested nodes (2S), or a membership of another row count: the whole columns' labels,
    as before (the review of this change found the first two split differently, the last raised)."""
    rng = np.random.default_rng(2)
    S, T, R = 3, 12, 8
    active, member = _random_tree(rng, R, S, T)
    mem = np.asarray(member, float)
    for bad in (np.nan, np.inf):
        a = active.copy()
        a[2, 3] = bad
        with np.errstate(invalid="ignore"):  # inf x 0
            plain = _column_labels(R, S * T, lambda j: a[:, j % T] * mem[:, j // T]).reshape(S, T)
            assert _same_partition(_tree_labels(a, member, S, T), plain)
    many = rng.random((40, 6)) < 0.5  # arbitrary sets of scenarios, not a tree's nested nodes
    act = rng.choice([0.0, 1.0], (40, T))
    assert len(unique_columns(many.T)[0]) > 12
    plain = _column_labels(40, 6 * T, lambda j: act[:, j % T] * many[:, j // T]).reshape(6, T)
    assert _same_partition(_tree_labels(act, many, 6, T), plain)
    assert np.array_equal(_tree_labels(np.ones((0, T)), member, S, T), np.zeros((S, T)))  # no activity rows


def test_unique_columns_refuses_what_is_not_boolean():
    import pytest

    with pytest.raises(TypeError, match="boolean"):
        unique_columns(np.array([[0, 1, 2], [2, 1, 0]]))
