"""Exact period blocks: (scenario, period) pairs merge exactly when their data are equal (brute-force oracle)."""

from __future__ import annotations

import numpy as np

from planner.model.blocks import _column_labels, make_blocks


def _signature(demand, inventory, active, caps, member, s, t):
    act = active[:, t] * (member[:, s] if member is not None else 1.0)
    cap = () if caps is None else tuple(np.nan_to_num(caps[:, t], nan=-1.0))
    return (tuple(demand[s, :, t]), tuple(inventory[:, t]), tuple(act), cap)


def test_pairs_merge_exactly_when_their_data_are_equal():
    rng = np.random.default_rng(7)
    for _ in range(150):
        S, K, T, P, R = (int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 30)),
                         int(rng.integers(1, 3)), int(rng.integers(0, 5)))
        demand = rng.integers(0, 2, (S, K, T)).astype(float)
        inventory = rng.integers(0, 2, (P, T)).astype(float)
        active = rng.choice([0.0, 0.5, 1.0], (R, T))
        caps = np.where(rng.random((2 * P, T)) < 0.3, np.nan, rng.integers(0, 2, (2 * P, T))) \
            if rng.random() < 0.5 else None
        member = rng.integers(0, 2, (R, S)).astype(float) if rng.random() < 0.5 else None
        hours, prob = rng.uniform(0.5, 2.0, T), rng.dirichlet(np.ones(S))
        b = make_blocks(demand, inventory, hours, prob, active=active, caps=caps, member=member)
        sig = {}
        for s in range(S):
            for t in range(T):
                key = _signature(demand, inventory, active, caps, member, s, t)
                assert sig.setdefault(key, b.of[s, t]) == b.of[s, t]  # equal data: one block
        assert len(sig) == b.B  # different data: different blocks
        for s in range(S):
            for t in range(T):
                want = active[:, t] * (member[:, s] if member is not None else 1.0)
                assert np.array_equal(b.active[:, b.of[s, t]], want)
        assert np.allclose(np.bincount(b.of.reshape(-1), weights=(prob[:, None] * hours).reshape(-1)), b.weight)


def test_column_labels_equal_exactly_for_equal_columns():
    rng = np.random.default_rng(3)
    a = rng.choice([0.0, 1.0, 1e-12], (40, 500))
    labels = _column_labels(40, 500, lambda j: a[:, j])
    _, exact = np.unique(a.T, axis=0, return_inverse=True)
    exact = exact.reshape(-1)
    assert len(np.unique(labels)) == len(np.unique(exact))
    assert all(len(np.unique(exact[labels == v])) == 1 for v in np.unique(labels))


def test_a_hash_collision_is_split_by_the_columns_contents():
    """Columns whose hashes collide (forced: every key zero) still get labels by their contents."""
    a = np.array([[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 1.0]])
    labels = _column_labels(2, 4, lambda j: a[:, j], keys=np.zeros((2, 2), dtype=np.uint64))
    assert labels[0] == labels[2] and len({labels[0], labels[1], labels[3]}) == 3


def test_equal_activity_columns_are_one_block_at_scale():
    """Thousands of monthly purchase rows over a year of hours: 12 distinct activity columns, 12 blocks, whatever
    the BLAS threads (the labels are integer hashes; a float projection split equal columns here)."""
    R, T = 3000, 8760
    month = np.arange(T) // 730
    active = (month[None, :] >= np.resize(np.arange(12), R)[:, None]).astype(float)
    b = make_blocks(np.ones((1, 1, T)), np.zeros((1, T)), np.ones(T), np.ones(1), active=active)
    assert b.B == 12  # the 12 distinct activity columns (a purchase each month)
    assert np.array_equal(b.active, active[:, [730 * m for m in range(12)]])


def test_a_trees_block_activity_is_read_from_its_factors_as_the_dense_product():
    """A scenario tree's (purchase rows x blocks) activity is held as the (R, T) activity and the (R, S) membership,
    never made whole (three hourly years x 15 scenarios: 14.6 GiB): every way the model reads it (rows, pairs, a row
    against blocks, blocks against rows, a 2-D grid) equals the dense product at each block's first pair, and the
    pooled GPUs the plan reads in slices of blocks equal the dense matrix product."""
    from planner.results.plan import _by_pool

    rng = np.random.default_rng(7)
    S, K, T, R = 3, 2, 40, 9
    demand = rng.integers(0, 3, (S, K, T)).astype(float)
    active = (rng.random((R, T)) > 0.5) * rng.choice([1.0, 0.5], (R, T))
    member = (rng.random((R, S)) > 0.4).astype(float)
    b = make_blocks(demand, np.zeros((1, T)), np.ones(T), np.full(S, 1 / 3), active=active, member=member)
    first = np.unique(b.of.reshape(-1), return_index=True)[1]
    s0, t0 = np.divmod(first, T)
    dense = active[:, t0] * member[:, s0]
    a = b.active
    assert not isinstance(a, np.ndarray) and a.shape == (R, b.B) and dense.any() and not dense.all()
    assert np.array_equal(a.dense(), dense) and np.array_equal(np.asarray(a), dense)
    rc, rb = rng.integers(0, R, 50), rng.integers(0, b.B, 50)
    assert np.array_equal(a[rc, rb], dense[rc, rb])
    assert np.array_equal(a[4, rb], dense[4, rb]) and np.array_equal(a[rc, 3], dense[rc, 3])
    assert np.array_equal(a[[1, 5, 6]], dense[[1, 5, 6]])
    grid = (np.array([0, 2, 8])[:, None], np.arange(2, 9)[None, :])
    assert np.array_equal(a[grid], dense[grid])
    pool, gpus = rng.integers(-1, 3, R), rng.random(R)
    assert np.allclose(_by_pool(pool, gpus, a, 3), _by_pool(pool, gpus, dense, 3))
