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
    for col in out.columns:
        s = out[col]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            continue
        try:
            uniques = pd.unique(s.to_numpy(dtype=object, na_value=None) if s.dtype != object else s.to_numpy())
        except TypeError:  # a value that cannot be hashed (a list): every cell read
            uniques = s.to_numpy(dtype=object)
        if any(inert_text(u) is not u for u in uniques):
            out[col] = s.map(inert_text)
    return out
