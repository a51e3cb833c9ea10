"""A large table written as CSV: the text ``pandas.DataFrame.to_csv`` writes, nearly four times faster.

``frame.to_csv(path, index=False, float_format="%.10g")`` formats every float through a Python call per cell
(with a missing-value check each): 2.42 s for the 533,222 rows of an hourly year's allocation.csv (50 classes, 24
pools), where this writer takes 0.65 s, and 1.17 s against 0.30 s for its fleet.csv (``benchmarks/outputs.py``,
medians of three, alternating). Here each column is formatted at once (floats by ``float_format % v`` over
the column's values, text through each distinct value, a per-period table repeating a few labels over hundreds
of thousands of rows) and the rows joined, in chunks that bound the memory.

The text is the same, byte for byte (``tests/test_csvwrite.py`` checks it against pandas on awkward tables):
the header, ``float_format`` on float columns (missing values empty, infinities ``inf``), integers and
booleans as ``str`` writes them, text quoted as Python's ``csv`` module quotes it (``QUOTE_MINIMAL``) and
missing text empty, ``os.linesep`` after every line. A table this writer does not cover (another dtype, an object
column holding anything but text, a single column, columns of several levels, a ``float_format`` other than one
printf conversion) is written by pandas itself.
"""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.csvsafe import inert_frame, inert_text

CHUNK_ROWS = 100_000  # rows formatted and joined at a time (a few tens of MB of text at most)


def write_csv(frame: pd.DataFrame, path: str | Path, *, float_format="%.10g", inert: bool = False,
              chunk_rows: int = CHUNK_ROWS) -> None:
    """Write ``frame`` (its index left out) to ``path`` as ``frame.to_csv(path, index=False,
    float_format=float_format)`` does; ``inert``: as :func:`planner.core.csvsafe.inert_frame` of it (text a
    spreadsheet would run as a formula gets a leading apostrophe)."""
    columns = _columns(frame, inert_text if inert else None) if _plain_format(float_format) else None
    if columns is None:
        (inert_frame(frame) if inert else frame).to_csv(path, index=False, float_format=float_format)
        return
    end = os.linesep
    head = frame.iloc[:0].to_csv(index=False, lineterminator=end)  # the header line as pandas writes it
    fmt = float_format.__mod__
    step = max(1, int(chunk_rows))
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(head)
        for lo in range(0, len(frame), step):
            cells = [_cells(kind, values, lo, lo + step, fmt) for kind, values in columns]
            f.write(end.join(map(",".join, zip(*cells))))
            f.write(end)


_PRINTF = re.compile(r"%[-+ #0]*\d*(\.\d+)?[eEfFgG]")


def _plain_format(float_format) -> bool:
    """True for one printf conversion of a float alone (``%.10g``, ``%.3f``): its text never needs quoting. Anything
    else (a callable, None, text around the conversion) is left to pandas."""
    return isinstance(float_format, str) and _PRINTF.fullmatch(float_format) is not None


def _columns(frame: pd.DataFrame, text) -> list | None:
    """Per column (kind, values): ("float", array), ("str", array: ints and booleans as ``str`` writes them),
    ("text", (codes, quoted distinct values with "" last for missing)); None when a column is not one of these
    (or the frame has one column or several header levels: pandas writes those)."""
    if frame.shape[1] < 2 or isinstance(frame.columns, pd.MultiIndex):
        return None
    out = []
    for at in range(frame.shape[1]):
        s = frame.iloc[:, at]
        dtype = s.dtype
        if dtype == np.float64:
            out.append(("float", s.to_numpy()))
        elif isinstance(dtype, np.dtype) and dtype.kind in "biu":  # numpy booleans and integers (not pandas' nullable)
            out.append(("str", s.to_numpy()))
        elif pd.api.types.is_string_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype):
            try:
                codes, uniques = pd.factorize(s, use_na_sentinel=True)
            except TypeError:  # a cell that cannot be hashed (a list): pandas writes its text
                return None
            values = list(uniques)
            if not all(type(v) is str for v in values):  # numbers held as objects: pandas decides their text
                return None
            values = [text(v) for v in values] if text is not None else values
            out.append(("text", (codes, np.array(_quoted(values) + [""], dtype=object))))
        else:
            return None
    return out


def _cells(kind: str, values, lo: int, hi: int, fmt) -> list[str]:
    if kind == "text":
        codes, quoted = values
        return quoted[codes[lo:hi]].tolist()  # missing: code -1, the "" last
    part = values[lo:hi]
    if kind == "str":
        return list(map(str, part.tolist()))
    cells = list(map(fmt, part.tolist()))
    for i in np.flatnonzero(np.isnan(part)):  # missing: empty, as pandas' na_rep
        cells[i] = ""
    return cells


def _quoted(values: list[str]) -> list[str]:
    """Each value as a cell of a row of several that ``csv.writer`` writes (QUOTE_MINIMAL, the line end pandas
    uses): quoted where it holds a comma, a quote or a line break."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=os.linesep)
    out = []
    for v in values:
        buf.seek(0)
        buf.truncate()
        w.writerow([v, ""])  # a second (empty) cell: alone, an empty value would be written as ""
        out.append(buf.getvalue()[:-len(os.linesep) - 1])
    return out
