"""Constraint rows held as sparse arrays, one family at a time; turned into PuLP or HiGHS on demand.

Each family is stored as (row, column, coefficient) triples with its sense and
right-hand side. ``to_pulp`` makes the PuLP constraints (one loop per row: PuLP
stores a constraint as a dict); ``to_csr`` gives the row-wise matrix HiGHS takes
whole, with no Python loop at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pulp import LpAffineExpression, LpConstraint, LpConstraintEQ, LpConstraintGE, LpConstraintLE, LpProblem

from planner.model import naming

GE, LE, EQ = LpConstraintGE, LpConstraintLE, LpConstraintEQ


@dataclass(frozen=True)
class RowFamily:
    """One constraint family as sparse triples, with its sense, right-hand sides and key arrays."""
    name: str
    keys: tuple  # integer key arrays naming each row (see naming.FAMILIES)
    rows: np.ndarray  # row (0 .. n-1) of each term
    cols: np.ndarray  # column of each term
    coefs: np.ndarray
    sense: int  # GE, LE or EQ
    rhs: np.ndarray  # (n,)
    labels: tuple | None = None  # row names given by the user (extensions); else made by ``naming``

    @property
    def n(self) -> int:
        """Number of rows in the family."""
        return len(self.rhs)


@dataclass
class Rows:
    """Every constraint family of a model, in order."""
    families: list[RowFamily] = field(default_factory=list)

    def add(self, name: str, keys: tuple, rows, cols, coefs, sense: int, rhs, labels=None) -> int:
        """Append a family of ``len(rhs)`` rows from (row, column, coefficient) triples; returns its row count."""
        rhs = np.asarray(rhs, float)
        if len(rhs):
            self.families.append(RowFamily(name, tuple(np.asarray(k) for k in keys), np.asarray(rows, np.int64),
                                           np.asarray(cols, np.int64), np.asarray(coefs, float), sense, rhs,
                                           tuple(labels) if labels is not None else None))
        return len(rhs)

    @property
    def n_rows(self) -> int:
        """Number of rows over all families."""
        return sum(f.n for f in self.families)

    @property
    def nonzeros(self) -> int:
        """Number of coefficients over all families."""
        return sum(len(f.coefs) for f in self.families)

    def to_pulp(self, prob: LpProblem, variables: list) -> None:
        """Add every row to ``prob`` over ``variables`` (PuLP variables in column order)."""
        for f in self.families:
            names = list(f.labels) if f.labels is not None else naming.names(f.name, *f.keys)
            _add_pulp_rows(prob, variables, names, f.rows, f.cols, f.coefs, f.sense, f.rhs)

    def to_csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(start, index, value, lower, upper) of all rows, families in order."""
        offset, rows, cols, vals, lower, upper = 0, [], [], [], [], []
        for f in self.families:
            rows.append(f.rows + offset)
            cols.append(f.cols)
            vals.append(f.coefs)
            lower.append(f.rhs if f.sense in (GE, EQ) else np.full(f.n, -np.inf))
            upper.append(f.rhs if f.sense in (LE, EQ) else np.full(f.n, np.inf))
            offset += f.n
        if not rows:
            return np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
        r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
        order = np.lexsort((c, r))
        r, c, v = r[order], c[order], v[order]
        start = np.searchsorted(r, np.arange(offset + 1))
        return start, c, v, np.concatenate(lower), np.concatenate(upper)


def _add_pulp_rows(prob: LpProblem, variables: list, row_names: list[str], rows: np.ndarray,
                   cols: np.ndarray, coefs: np.ndarray, sense: int, rhs: np.ndarray) -> None:
    order = np.argsort(rows, kind="stable")
    rows, cols, coefs = rows[order], cols[order], coefs[order]
    bounds = np.searchsorted(rows, np.arange(len(row_names) + 1))
    coef_list, rhs_list = coefs.tolist(), rhs.tolist()
    terms = [variables[c] for c in cols.tolist()]
    for r, name in enumerate(row_names):
        a, b = bounds[r], bounds[r + 1]
        expr = LpAffineExpression(zip(terms[a:b], coef_list[a:b]))
        prob.addConstraint(LpConstraint(expr, sense, name, rhs_list[r]))


@dataclass(frozen=True)
class FirstStageRows:
    """Rows ``sum_i coefs[r][i] * n[members[r][i]] <= rhs[r]`` over the purchase rows; ``keys`` label them
    (a tuple of arrays, one per key of the family's row names)."""

    keys: tuple
    members: list
    coefs: list
    rhs: np.ndarray

    def __len__(self) -> int:
        return len(self.rhs)
