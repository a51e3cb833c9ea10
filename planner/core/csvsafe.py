"""CSV cells that a spreadsheet would run as formulas, made inert.

Excel, LibreOffice and Google Sheets treat a CSV cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or
a carriage return as a formula (CSV injection). Text cells that start so are written with a leading
apostrophe (the OWASP rule): spreadsheets show the text, scripts see one extra character at the start.
Numbers are never touched: only text columns are.
"""

from __future__ import annotations

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert_text(value):
    """``value`` with an apostrophe in front when it is text a spreadsheet would run as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def inert_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells are inert (see :func:`inert_text`); numeric columns unchanged.

    Each text column is read through its distinct values (a per-period table repeats a few labels over
    hundreds of thousands of rows): a column none of whose values would run is kept as it is."""
    out = frame.copy(deep=False)
    for at in range(out.shape[1]):  # by position: two columns may share a name
        s = out.iloc[:, at]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            continue
        if s.dtype == object:  # kept only when every cell is harmless text: a map could change nothing then, not
            # even the dtype pandas infers (numbers held as objects become a number column, which a CSV's
            # float_format then formats)
            try:
                uniques = pd.unique(s.to_numpy())
            except TypeError:  # a value that cannot be hashed (a list)
                uniques = [None]
            if not all(isinstance(u, str) for u in uniques) or any(u.startswith(FORMULA_STARTS) for u in uniques):
                out.isetitem(at, s.map(inert_text))
        elif any(inert_text(u) is not u for u in pd.unique(s.to_numpy(dtype=object, na_value=None))):
            out.isetitem(at, s.map(inert_text))  # a string column (missing values stay missing)
    return out
