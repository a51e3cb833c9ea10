"""Add a family of constraint rows to a PuLP problem from sparse (row, column, coefficient) arrays.

This is the one loop the model cannot avoid: PuLP stores a constraint as a
Python dict, so each row is made once, from slices of sorted arrays.
"""

from __future__ import annotations

import numpy as np
from pulp import LpAffineExpression, LpConstraint, LpProblem


def add_rows(prob: LpProblem, variables: list, row_names: list[str], rows: np.ndarray,
             cols: np.ndarray, coefs: np.ndarray, sense: int, rhs: np.ndarray) -> int:
    """Add ``len(row_names)`` constraints ``sum_j coefs * variables[cols] (sense) rhs``.

    ``rows[i]`` is the row (0 .. len(row_names)-1) of term ``i``. Returns the number of rows.
    """
    if not len(row_names):
        return 0
    order = np.argsort(rows, kind="stable")
    rows, cols, coefs = rows[order], cols[order], coefs[order].astype(float)
    bounds = np.searchsorted(rows, np.arange(len(row_names) + 1))
    col_list, coef_list, rhs_list = cols.tolist(), coefs.tolist(), np.asarray(rhs, float).tolist()
    terms = [variables[c] for c in col_list]
    for r, name in enumerate(row_names):
        a, b = bounds[r], bounds[r + 1]
        expr = LpAffineExpression(zip(terms[a:b], coef_list[a:b]))
        prob.addConstraint(LpConstraint(expr, sense, name, rhs_list[r]))
    return len(row_names)
