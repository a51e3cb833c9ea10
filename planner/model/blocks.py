"""Exact period reduction: (scenario, period) pairs with identical data become one block.

Periods are linked only through the reserved fleet ``N``, so two periods (in any
scenarios) with the same demand vector and the same inventory vector have the
same optimal recourse; solving one block weighted by their summed
``probability x hours`` is exact, not an approximation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.inputs.activity import Spans, take_rows


@dataclass(frozen=True)
class Blocks:
    """(scenario, period) pairs grouped into blocks with identical demand and inventory."""
    of: np.ndarray  # (S, T) block index of each (scenario, period)
    weight: np.ndarray  # (B,) sum of probability x hours
    demand: np.ndarray  # (K, B)
    inventory: np.ndarray  # (P, B)
    active: "Activity | np.ndarray | None" = None  # (R, B) share of the block's periods each purchase row is active
    npv_weight: np.ndarray | None = None  # (B,) sum of probability x hours x discount factor (None = weight)
    caps: np.ndarray | None = None  # (2P, B) on-demand then spot caps per block (an availability file; NaN = none)
    price: np.ndarray | None = None  # (J, P, B) rented prices per block (a forward curve or price paths; None = fixed)

    @property
    def B(self) -> int:
        """Number of blocks."""
        return len(self.weight)


def make_blocks(demand: np.ndarray, inventory: np.ndarray, hours: np.ndarray,
                probability: np.ndarray, merge: bool = True, active: np.ndarray | None = None,
                discount: np.ndarray | None = None, caps: np.ndarray | None = None,
                member: np.ndarray | None = None, prices: np.ndarray | None = None) -> Blocks:
    """``demand`` (S, K, T), ``inventory`` (P, T), ``hours`` (T,), ``probability`` (S,), ``active`` (R, T).

    Periods merge only when the same purchases are active in them (their reserved fleet is the same).
    ``discount`` (T,): each period's discount factor; a block's ``npv_weight`` sums probability x hours x
    factor over its periods (merging stays exact: a positive factor scales a period's cost, not its argmin).
    ``caps`` (C, T): per-period caps (an availability file); periods merge only when their caps are equal.
    ``member`` (R, S): the scenarios each purchase row serves (a scenario tree): a row is active in (s, t) only
    for its own scenarios.
    ``prices`` (S, J, P, T): rented prices per scenario and period (:mod:`planner.inputs.price_paths`): pairs merge
    only where their prices are equal, so a block's cost is its weight times its one price (exact).
    """
    S, K, T = demand.shape
    P = inventory.shape[0]
    active = np.ones((0, T)) if active is None else active if isinstance(active, Spans) else np.asarray(active, float)
    R = active.shape[0]
    C = 0 if caps is None else caps.shape[0]
    capkey = np.zeros((0, T)) if caps is None else np.where(np.isnan(caps), -1.0, caps)  # NaN never equals itself
    # the purchases active in (s, t) enter the signature as a label of their distinct activity columns (exact:
    # equal labels only for equal columns), not as R columns: a three-year plan's (R, T) activity is not copied
    if member is None:
        act_label = np.broadcast_to(_column_labels(R, T, lambda j: active[:, j]), (S, T))
    else:  # a tree: row r is active in (s, t) as active[r, t] x member[r, s]
        act_label = _tree_labels(active, np.asarray(member), S, T)
    if prices is not None:  # the prices enter the signature as a label of their distinct (J * P) columns
        flat = np.nan_to_num(np.asarray(prices, float), nan=-1.0).reshape(S, -1, T)
        price_label = _column_labels(flat.shape[1], S * T, lambda j: flat[j // T, :, j % T].T).reshape(S, T)
        act_label = np.asarray(act_label, float) * (price_label.max() + 1) + price_label
    rows = np.concatenate([demand.transpose(0, 2, 1).reshape(S * T, K),
                           np.broadcast_to(inventory.T, (S, T, P)).reshape(S * T, P),
                           np.asarray(act_label, float).reshape(S * T, 1),
                           np.broadcast_to(capkey.T, (S, T, C)).reshape(S * T, C)], axis=1)
    w = (probability[:, None] * hours[None, :]).reshape(S * T)
    if merge:
        uniq, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        # number blocks in order of first appearance, so block 0 is the first period
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        inverse = rank[inverse.reshape(-1)]
        uniq = uniq[order]
        first_pair = first[order]  # each block's first (scenario, period)
    else:
        uniq, inverse = rows, np.arange(S * T)
        first_pair = inverse
    weight = np.bincount(inverse, weights=w, minlength=len(uniq))
    npv_weight = None if discount is None else np.bincount(
        inverse, weights=(probability[:, None] * (hours * discount)[None, :]).reshape(S * T), minlength=len(uniq))
    # each block's activity: its first (scenario, period)'s (a block's pairs share it, by the signature), held as
    # its factors (the (R, T) activity and the (R, S) membership) and read where it is used: a three-year tree of
    # 15 scenarios has 15,594 rows x 125,900 blocks (14.6 GiB whole)
    s_of, t_of = np.divmod(np.asarray(first_pair, dtype=np.int64), T)
    as_is = member is None and len(t_of) == T and np.array_equal(t_of, np.arange(T))  # every period its own block
    block_active = active if as_is else Activity(active, t_of, None if member is None else np.asarray(member, float),
                                                 s_of)
    price = None
    if prices is not None:
        price = np.asarray(prices, float)[s_of, :, :, t_of].transpose(1, 2, 0)  # (J, P, B)
    return Blocks(of=inverse.reshape(S, T), weight=weight, npv_weight=npv_weight, price=price,
                  demand=np.ascontiguousarray(uniq[:, :K].T), inventory=np.ascontiguousarray(uniq[:, K:K + P].T),
                  active=block_active,
                  caps=None if caps is None else np.where(uniq[:, K + P + 1:].T < 0, np.nan, uniq[:, K + P + 1:].T))


class Activity:
    """(R, B) the share of each block's periods each purchase row is active, read from its factors: the (R, T)
    activity of the block's first period, times (a scenario tree) the (R, S) membership of its first scenario.

    Indexed like the array it stands for where the model reads it: ``a[rows]`` (those rows, dense),
    ``a[r, b]`` (element-wise, broadcast like numpy's), ``a[:, b]``; ``dense()`` (or ``np.asarray``) makes it whole.
    It is not an array otherwise: arithmetic, comparisons and reductions raise (read rows or make it whole first)."""

    def __init__(self, by_period: np.ndarray, t_of: np.ndarray, member: np.ndarray | None, s_of: np.ndarray):
        self.by_period, self.t_of, self.member, self.s_of = by_period, t_of, member, s_of

    @property
    def shape(self) -> tuple:
        """(R, B)."""
        return (self.by_period.shape[0], len(self.t_of))

    def __len__(self) -> int:
        """R: the purchase rows."""
        return self.by_period.shape[0]

    def __getitem__(self, key):
        r, b = key if isinstance(key, tuple) else (key, slice(None))
        t, s = self.t_of[b], self.s_of[b]
        pairs = not isinstance(r, slice) and not isinstance(b, slice) and np.ndim(r) > 0 and np.ndim(t) > 0
        if pairs:  # rows and blocks paired element-wise (broadcast)
            out = self.by_period[r, t]
            return out if self.member is None else out * self.member[r, s]
        if isinstance(self.by_period, Spans):  # rows against blocks, read from the spans (never made whole)
            ri = np.arange(len(self))[r]
            out = self.by_period.at(ri.reshape(ri.shape + (1,) * np.ndim(t)), t)
        else:
            out = self.by_period[r][..., t]  # rows (one, some or all) against blocks
        return out if self.member is None else out * self.member[r][..., s]

    def dense(self) -> np.ndarray:
        """The whole (R, B) array."""
        return self[:]

    def __array__(self, dtype=None, copy=None):
        out = self.dense()
        return out if dtype is None else out.astype(dtype)


def _column_labels(rows: int, cols: int, column, keys: np.ndarray | None = None) -> np.ndarray:
    """(cols,) a label per column of a (rows, cols) matrix given by ``column(positions)`` (its columns at those
    positions): equal labels exactly for equal columns, the matrix never made whole.

    Candidate groups come from two 64-bit hashes of each column's values (their bits times random odd keys,
    summed modulo 2**64: integer arithmetic, so equal columns hash equal whatever the order of the sums, the
    BLAS or its threads); every column is then compared with its group's first column and, where one differs
    (a hash collision), the differing columns are labelled apart by their contents. ``keys`` (2, rows): the
    multipliers (tests force collisions with them)."""
    if cols == 0 or rows == 0:
        return np.zeros(cols, dtype=np.int64)
    if keys is None:
        keys = np.random.default_rng(12345).integers(1, 2 ** 63, size=(2, rows), dtype=np.uint64) | np.uint64(1)
    step = max(1, (1 << 22) // rows)  # slices of a few MB

    def hashes(j):
        bits = (np.asarray(column(j), dtype=np.float64) + 0.0).view(np.uint64)  # + 0.0: -0.0 hashes as 0.0
        return np.stack([(bits * k[:, None]).sum(axis=0, dtype=np.uint64) for k in keys])

    slices = [np.arange(a0, min(cols, a0 + step)) for a0 in range(0, cols, step)]
    proj = np.concatenate([hashes(j) for j in slices], axis=1)  # (2, cols)
    _, first, label = np.unique(proj.T, axis=0, return_index=True, return_inverse=True)
    label = label.reshape(-1).astype(np.int64)
    rep = first[label]  # each column's group representative
    bad = np.concatenate([j[(column(j) != column(rep[j])).any(axis=0)] for j in slices])
    if len(bad):  # a hash collision: those columns labelled by their exact contents, all together
        _, exact = np.unique(column(bad).T, axis=0, return_inverse=True)
        label[bad] = label.max() + 1 + exact.reshape(-1)
    return label


def _tree_labels(active, member: np.ndarray, S: int, T: int) -> np.ndarray:
    """(S, T) a label per (scenario, period) of the column ``active[:, t] * member[:, s]``: equal labels exactly for
    equal columns, as :func:`_column_labels` of those S x T columns of R rows gives, read from far less.

    With a 0/1 membership the rows fall into groups of one membership pattern (a tree's nodes: 21 patterns over
    15,594 rows at three years x 15 scenarios), and a column restricted to group ``g`` is either zero (``g`` not in
    scenario ``s``) or ``active[g's rows, t]``. So the periods' columns are labelled within each group (0 for a zero
    column), and a (scenario, period)'s label is that of its (groups, S) vector of those labels times the
    membership: equal exactly when every group's part is equal, that is when the columns are. (R x T values read
    and G x S x T labelled, where the columns themselves are R x S x T: a weekly batch's build spent 40 % of its
    time there.) A membership of shares (not 0/1), more patterns than a tree's nested nodes make (2S), or an activity
    that is not finite (NaN x 0 is not 0) labels the columns themselves."""
    R = active.shape[0]
    mem = np.asarray(member, float)

    def whole():  # the columns themselves (R x S x T values, read a few MB at a time)
        return _column_labels(R, S * T, lambda j: active[:, j % T] * mem[:, j // T]).reshape(S, T)

    if member.shape[0] != R or not np.isin(member, (0, 1)).all():
        return whole()
    if T == 0 or R == 0:
        return np.zeros((S, T), dtype=np.int64)
    patterns, group = unique_columns(np.asarray(member, bool).T)  # the tree's nodes' membership patterns
    if len(patterns) > 2 * S:  # more than a tree's nested nodes can make (at most 2S - 1 and none): whole columns
        return whole()
    label = np.zeros((len(patterns), T))
    for g in range(len(patterns)):  # one per membership pattern (a tree node's scenarios), not per period
        part = take_rows(active, np.flatnonzero(group == g))
        n = int((group == g).sum())
        step = max(1, (1 << 22) // max(n, 1))
        nonzero = np.zeros(T, dtype=bool)
        for a in range(0, T, step):
            piece = np.asarray(part[:, a:a + step], float)
            if not np.isfinite(piece).all():  # NaN x 0 is NaN, not 0: only the columns themselves say what is equal
                return whole()
            nonzero[a:a + step] = (piece != 0).any(axis=0)
        lab = _column_labels(n, T, lambda j: part[:, j]).astype(float)
        label[g] = np.where(nonzero, lab + 1.0, 0.0)  # 0: the group is zero in that period, whatever its scenarios
    mem = patterns.astype(float)  # (G, S)
    return _column_labels(len(patterns), S * T, lambda j: label[:, j % T] * mem[:, j // T]).reshape(S, T)


def unique_columns(on: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(on.T, axis=0, return_inverse=True)`` of a boolean (rows, cols) matrix, its columns compared
    as packed bits (8 rows a byte: a weekly batch's columns of a three-year tree sorted an eighth of the bytes).
    The same patterns in the same order: bits packed first row first compare bytewise as the booleans do."""
    if on.dtype != bool:
        raise TypeError(f"unique_columns compares boolean columns, not {on.dtype}")
    rows = on.shape[0]
    if rows == 0 or on.shape[1] == 0:
        pattern, which = np.unique(on.T, axis=0, return_inverse=True)
        return pattern, which.reshape(-1)
    packed = np.ascontiguousarray(np.packbits(on, axis=0).T)  # (cols, ceil(rows / 8)) uint8
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).reshape(-1)
    uniq, first, which = np.unique(keys, return_index=True, return_inverse=True)
    return np.ascontiguousarray(on.T[first]), which.reshape(-1)


def block_prices(inp, blocks: Blocks) -> np.ndarray:
    """(J, P, B) each rented kind's price per pool and block: the block's own where a forward curve or price paths
    date it, else the sheet's."""
    if blocks.price is not None:
        return np.nan_to_num(blocks.price)
    return np.broadcast_to(np.nan_to_num(inp.rented_price)[:, :, None], inp.rented_price.shape + (blocks.B,))


def scenario_hours(blocks: Blocks, hours: np.ndarray) -> np.ndarray:
    """(S, B) the hours of each scenario's periods in each block (a block may hold periods of several scenarios:
    its weight is the probability-weighted sum of these rows)."""
    S, T = blocks.of.shape
    cell = (np.arange(S)[:, None] * blocks.B + blocks.of).reshape(-1)  # (scenario, block) of each (s, t)
    return np.bincount(cell, weights=np.tile(np.asarray(hours, float), S), minlength=S * blocks.B).reshape(S, blocks.B)
