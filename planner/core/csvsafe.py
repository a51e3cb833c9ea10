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
    """A copy of ``frame`` whose text cells are inert (see :func:`inert_text`); numeric columns unchanged."""
    out = frame.copy()
    for col in out.columns:
        if not (pd.api.types.is_numeric_dtype(out[col]) or pd.api.types.is_bool_dtype(out[col])):
            out[col] = out[col].map(inert_text)
    return out
