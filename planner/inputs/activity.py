"""The (R, T) activity of the commitments table held as each row's span, not as R x T floats.

A purchase row is active from its start to its end: the share of each period it is active is 0 before its
first period, a share of its first period (``head``), 1 in every period strictly between, a share of its last
period (``tail``), and 0 after (a term starting or ending inside a period holds its GPUs for that share of it;
:func:`planner.inputs.ladder.purchase_rows`, capacity blocks and resales are all of that form). A three-year
hourly model's 1,700 rows held 358 MB of activity for the horizon, the whole term's 3,266 (split by its tree)
692 MB; as spans each row holds four numbers.

:class:`Spans` is read as numpy reads the array it stands for (``a[rows]``, ``a[r, t]`` paired, ``a[:, t]``,
``a[rows][:, cols]``, ``a @ v``, ``np.asarray(a)``): every read returns exactly the values of the dense array,
so plans do not change; ``@`` alone sums in blocks of rows (a product over the whole array is what a spans
form avoids), so its last bit may differ from one BLAS product over all rows (every plan compared was
identical). :func:`compact` turns a dense activity into spans when (and only when) every row is of
that form, checking it value for value; an activity that is not stays the array it was.
"""

from __future__ import annotations

import numpy as np

ROWS_PER_READ = 1 << 22  # values a whole read (``@``, ``np.asarray``) makes at once: a few MB at a time


class Spans:
    """(R, T) activity held as each row's span: ``lo``, ``hi`` (its first and last period, possibly outside
    ``0..T-1``; ``hi < lo``: never active), ``head`` and ``tail`` (its share of them: equal when ``lo == hi``),
    1 strictly between. Read-only; indexed like the array (see the module's docstring); comparisons give the
    array's. It is not an ndarray otherwise: ``T`` is the number of periods (not the transpose), and
    arithmetic and reductions need ``dense()`` first."""

    __slots__ = ("lo", "hi", "head", "tail", "T")
    ndim = 2
    dtype = np.dtype(float)

    def __init__(self, lo: np.ndarray, hi: np.ndarray, head: np.ndarray, tail: np.ndarray, T: int):
        self.lo, self.hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
        self.head, self.tail = np.asarray(head, float), np.asarray(tail, float)
        self.T = int(T)

    @classmethod
    def full(cls, R: int, T: int) -> "Spans":
        """R rows active in every one of T periods (all 1)."""
        return cls(np.full(R, -1), np.full(R, T), np.ones(R), np.ones(R), T)

    @property
    def shape(self) -> tuple[int, int]:
        """(R, T)."""
        return (len(self.lo), self.T)

    @property
    def size(self) -> int:
        """R x T: the values it stands for."""
        return len(self.lo) * self.T

    @property
    def nbytes(self) -> int:
        """The bytes it holds (four numbers a row)."""
        return self.lo.nbytes + self.hi.nbytes + self.head.nbytes + self.tail.nbytes

    def __len__(self) -> int:
        """R: the purchase rows."""
        return len(self.lo)

    def __repr__(self) -> str:
        return f"Spans(R={len(self)}, T={self.T})"

    def at(self, r, t) -> np.ndarray:
        """The values at rows ``r`` and periods ``t`` (non-negative integer arrays, broadcast against each
        other as numpy broadcasts them)."""
        lo, hi, head, tail = self.lo[r], self.hi[r], self.head[r], self.tail[r]
        out = ((t > lo) & (t < hi)).astype(float)
        out = np.where(t == lo, head, np.where(t == hi, tail, out))
        return out[()] if out.ndim == 0 else out  # one value: a numpy float, as the array's element is

    def rows(self, index) -> "Spans":
        """The rows ``index`` (an integer array, a mask or a slice), still as spans."""
        index = np.arange(len(self))[index]
        if index.ndim != 1:
            raise TypeError("Spans.rows takes an array of rows, a mask or a slice (one row: a[r])")
        return Spans(self.lo[index], self.hi[index], self.head[index], self.tail[index], self.T)

    def window(self, start: int, stop: int) -> "Spans":
        """The periods ``start`` to ``stop - 1``, still as spans (each row's span moved, not cut: a row
        starting before the window reads 1 in its first period, as the array's slice does)."""
        start, stop = max(0, int(start)), min(self.T, int(stop))
        return Spans(self.lo - start, self.hi - start, self.head, self.tail, max(0, stop - start))

    def __getitem__(self, key):
        r, t = key if isinstance(key, tuple) else (key, slice(None))
        if isinstance(r, tuple) or isinstance(t, tuple) or r is Ellipsis or t is Ellipsis or r is None or t is None:
            raise TypeError("Spans is indexed by rows and periods only (integers, arrays, masks or slices)")
        ri, ti = np.arange(len(self))[r], np.arange(self.T)[t]  # numpy's own checks and normal form
        if isinstance(r, slice) or isinstance(t, slice):  # a slice: rows against periods (outer)
            return self.at(ri.reshape(ri.shape + (1,) * ti.ndim), ti)
        return self.at(ri, ti)  # both indices: paired, broadcast

    def __eq__(self, other):
        return np.asarray(self) == other

    def __ne__(self, other):
        return np.asarray(self) != other

    def __lt__(self, other):
        return np.asarray(self) < other

    def __le__(self, other):
        return np.asarray(self) <= other

    def __gt__(self, other):
        return np.asarray(self) > other

    def __ge__(self, other):
        return np.asarray(self) >= other

    __hash__ = None  # compared value by value, as an array: not hashable

    def __bool__(self):
        raise ValueError("the truth value of an activity is ambiguous (as an array's is): use .dense().any()")

    def dense(self) -> np.ndarray:
        """The whole (R, T) array."""
        return self[:]

    def __array__(self, dtype=None, copy=None):
        out = self.dense()
        return out if dtype is None else out.astype(dtype)

    def astype(self, dtype) -> np.ndarray:
        """The whole array, as ``dtype``."""
        return self.dense().astype(dtype)

    def __matmul__(self, other) -> np.ndarray:
        """``a @ v``: read in slices of rows, each multiplied as the array's rows are."""
        other = np.asarray(other)
        R = len(self)
        step = max(1, ROWS_PER_READ // max(self.T, 1))
        parts = [self[a:min(a + step, R)] @ other for a in range(0, R, step)]
        if not parts:
            return np.zeros((0,) + other.shape[1:])
        return np.concatenate(parts, axis=0)

    def equals(self, dense: np.ndarray) -> bool:
        """Whether it stands for exactly ``dense`` (read in slices of rows)."""
        dense = np.asarray(dense)
        if dense.shape != self.shape:
            return False
        step = max(1, ROWS_PER_READ // max(self.T, 1))
        return all(np.array_equal(self[a:a + step], dense[a:a + step]) for a in range(0, len(self), step))


def spans_of(dense: np.ndarray) -> Spans | None:
    """The spans of a dense (R, T) activity, or None when a row is not of that form (values between its first
    and last non-zero periods that are not exactly 1)."""
    dense = np.asarray(dense, float)
    R, T = dense.shape
    if T == 0:  # no periods: every row never active
        return Spans(np.zeros(R), np.full(R, -1), np.zeros(R), np.zeros(R), 0)
    on = dense != 0
    any_on = on.any(axis=1)
    lo = np.where(any_on, on.argmax(axis=1), T)
    hi = np.where(any_on, T - 1 - on[:, ::-1].argmax(axis=1), -1)
    rows = np.arange(R)
    head = np.where(any_on, dense[rows, np.minimum(lo, T - 1)], 0.0)
    tail = np.where(any_on, dense[rows, np.maximum(hi, 0)], 0.0)
    spans = Spans(lo, hi, head, tail, T)
    return spans if spans.equals(dense) else None


def compact(active):
    """``active`` as :class:`Spans` when every row is a span (checked value for value), else as it was."""
    if active is None or isinstance(active, Spans) or np.ndim(active) != 2:
        return active
    spans = spans_of(active)
    return active if spans is None else spans


def take_rows(active, index):
    """The rows ``index`` of an activity (spans stay spans; an array is indexed)."""
    return active.rows(index) if isinstance(active, Spans) else active[index]


def take_periods(active, index):
    """The periods ``index`` of an activity: spans stay spans over a run of consecutive periods; otherwise
    the (R, len(index)) array."""
    if isinstance(active, Spans):
        index = np.arange(active.T)[index]
        if index.ndim != 1:
            raise TypeError("take_periods takes an array of periods, a mask or a slice")
        if len(index) and np.array_equal(index, np.arange(index[0], index[0] + len(index))):
            return active.window(int(index[0]), int(index[0]) + len(index))
        return active[:, index]
    return active[:, index]


def matvec(active, v) -> np.ndarray:
    """``active @ v`` (R,) for spans or any array-like activity (made float, as the array's product is)."""
    v = np.asarray(v, float)
    return active @ v if isinstance(active, Spans) else np.asarray(active, float) @ v
