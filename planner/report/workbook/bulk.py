"""A data sheet's rows in bulk: thousands of rows written as xlsxwriter writes them cell by cell, byte for byte,
without a cell object per cell.

xlsxwriter keeps one object per cell and writes each one's XML at close: on an hourly month's Allocation sheet
(18,500 rows x 13 columns) that was 2.3 s of a 7 s plan, a third of the run. Here a table's rows are given as
columns (:class:`Text`, :class:`Number`, :class:`Date`, :class:`Formula`), their shared strings taken in at once
in the order cell-by-cell writes take them, and their XML made at close from the columns (a few list
comprehensions). ``tests/test_workbook_bulk.py`` writes the same rows both ways and compares every part of the
two files, byte for byte.

This reaches into xlsxwriter's worksheet (its ``_write_rows``, its shared-string table, its cell XML; each row's
start tag is its own ``_write_row``'s), so the version is bounded in pyproject.toml and the byte-for-byte tests are
the guard. Rows this module cannot write as xlsxwriter would (rows already holding cells, a string that may pass
Excel's length, an array formula) are refused when given (:class:`Unsupported`: nothing taken in) and written
cell by cell instead. Bulk rows hold no cells a chart could read its cached values from: a sheet behind a chart
(Fleet) is written cell by cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
from xlsxwriter.utility import xl_col_to_name
try:  # how xlsxwriter tells a dynamic-array formula (write_formula writes those another way): a function from 3.3.4
    from xlsxwriter.worksheet import _has_dynamic_function
except ImportError:  # before 3.3.4: a pattern
    from xlsxwriter.worksheet import re_dynamic_function

    def _has_dynamic_function(formula: str) -> bool:
        return re_dynamic_function.search(formula) is not None


class Unsupported(Exception):
    """These rows are not written in bulk (the caller writes them cell by cell): why."""


@dataclass
class Text:
    """Text cells (a shared string each); None: no cell."""
    values: Sequence


@dataclass
class Number:
    """Number cells; a value that is not finite: no cell."""
    values: np.ndarray


@dataclass
class Date:
    """Dates and times (datetime.datetime each, as xlsxwriter takes them); None: no cell."""
    values: Sequence


@dataclass
class Formula:
    """Formula cells with their cached values (``values``; not finite: cached empty). Where ``texts`` is None
    the cell is a number (``values``, no cell where not finite) instead of a formula."""
    texts: Sequence
    values: np.ndarray


STRMAX = 32767 // 2  # a string longer than this may pass Excel's limit (xlsxwriter truncates it): not in bulk


@dataclass
class Block:
    """Rows ``first`` .. ``first + n - 1`` of a worksheet, written at close by :func:`write_rows`."""
    first: int
    n: int
    columns: list  # per column: the spec
    formats: list  # per column: its cell format (xlsxwriter Format or None)
    cells: list  # per column, per row: what xlsxwriter's cell would hold (a string's index, a number, a date's serial
    # number, a formula as prepared and its cached value); None where no cell
    present: np.ndarray  # n x columns: where a cell is written


def add(ws, first: int, columns: list, formats: list) -> Block:
    """Rows from ``first`` (0-based) on ``ws``: ``columns`` (one spec per column, from column A), each with its
    cell format. Their shared strings are taken in now, row by row, as cell-by-cell writes take them (the
    workbook's sharedStrings part is the same); the rows' XML is made at close. Raises :class:`Unsupported` (nothing
    taken in) where these rows cannot be written as xlsxwriter would write them."""
    n = len(values_of(columns[0])) if columns else 0
    if any(len(values_of(c)) != n or (isinstance(c, Formula) and len(c.values) != n) for c in columns):
        raise ValueError("every column needs one value per row")
    if ws.constant_memory or first + n > ws.xls_rowmax or len(columns) > ws.xls_colmax:
        raise Unsupported("constant-memory mode, or past the sheet's limits")
    if any(first <= r < first + n for r, cells in ws.table.items() if cells):
        raise Unsupported("these rows already hold cells")
    present = np.zeros((n, len(columns)), bool)
    cells: list = [None] * len(columns)
    texts = []
    for j, c in enumerate(columns):
        if isinstance(c, Text):
            v = list(c.values)
            if any(x is not None and type(x) is not str for x in v):
                raise Unsupported("a text cell that is not a string")
            if any(x is not None and len(x) > STRMAX for x in v):
                raise Unsupported("a string that may pass Excel's length")
            present[:, j] = [x is not None for x in v]
            texts.append((j, v))
        elif isinstance(c, Number):
            x = np.asarray(c.values, float)
            present[:, j] = np.isfinite(x)
            cells[j] = x.tolist()
        elif isinstance(c, Date):
            v = list(c.values)
            # each distinct time read once (text such as "" or "NaT" reads as no time: no cell, as cell by cell) and
            # converted once, by xlsxwriter itself (as write_datetime converts it)
            stamp = {x: pd.Timestamp(x) for x in set(v) if x is not None and not pd.isna(x)}
            serial = {x: ws._convert_date_time(t.to_pydatetime()) for x, t in stamp.items() if not pd.isna(t)}
            present[:, j] = [x in serial for x in v]
            cells[j] = [serial.get(x) for x in v]
        elif isinstance(c, Formula):
            t = list(c.texts)
            given = [f for f in t if f is not None]
            joined = "\n".join(given)
            if any(f == "" for f in given) or any(_has_dynamic_function(f) for f in set(given)) or any(
                    f.startswith("{") and f.endswith("}") for f in given):
                raise Unsupported("a formula xlsxwriter writes another way (empty, dynamic array, array)")
            if any(ch in joined for ch in "({}") or "_xlfn." in joined:  # as write_formula prepares each
                ready = {f: ws._prepare_formula(f) for f in given}
            else:  # (no call, brace or prefix: only the leading "=" goes)
                ready = {f: f[1:] if f.startswith("=") else f for f in given}
            x = np.asarray(c.values, float)
            ok = np.isfinite(x).tolist()
            present[:, j] = [f is not None or k for f, k in zip(t, ok)]
            # a formula: (as prepared, its cached value: "" where not finite, as _Sheet.append writes it); else a number
            cells[j] = [(ready[f], a if k else "") if f is not None else a for f, a, k in zip(t, x.tolist(), ok)]
        else:
            raise TypeError(f"not a column spec: {type(c).__name__}")
    if texts:  # the shared strings, in the order cell-by-cell writes meet them (row by row, left to right)
        table = ws.str_table
        flat = np.array([v for _, v in texts], dtype=object).T.ravel()
        flat = flat[np.array([x is not None for x in flat], bool)] if len(flat) else flat
        distinct = pd.unique(flat)
        for s in distinct:
            table._get_shared_string_index(s)
        table.count += len(flat) - len(distinct)
        index = table.string_table
        for j, v in texts:
            cells[j] = [index[x] if x is not None else None for x in v]
    if present.any():  # the sheet's dimensions, as each cell's write sets them
        rows = np.flatnonzero(present.any(axis=1))
        cols = np.flatnonzero(present.any(axis=0))
        ws._check_dimensions(first + int(rows[0]), int(cols[0]))
        ws._check_dimensions(first + int(rows[-1]), int(cols[-1]))
    block = Block(first, n, list(columns), list(formats), cells, present)
    ws.__dict__.setdefault("planner_blocks", []).append(block)
    return block


def values_of(c) -> Sequence:
    """A column spec's values, one per row."""
    return c.texts if isinstance(c, Formula) else c.values


def write_rows(ws) -> None:
    """The worksheet's ``<row>`` elements, as xlsxwriter's ``_write_rows`` writes them, its bulk rows among them."""
    blocks = sorted(ws.__dict__.get("planner_blocks", ()), key=lambda b: b.first)
    if ws.dim_rowmin is None:
        return
    spans = _spans(ws, blocks)
    lo, hi = ws.dim_rowmin, ws.dim_rowmax
    others = sorted(r for r in set(ws.table) | set(ws.row_info) | set(ws.comments) if lo <= r <= hi)
    inside = [r for b in blocks for r in others if b.first <= r < b.first + b.n and ws.table.get(r)]
    if inside:  # (a programming error: _Sheet writes past its bulk rows, never into them)
        raise RuntimeError(f"{ws.get_name()}: cells written into rows given in bulk (row {inside[0] + 1})")
    # a bulk row given a format of its own (set_row after the rows): xlsxwriter gives that format its index between
    # the row's cells' and styles the row's unformatted cells with it: that block's cells go to xlsxwriter's table
    own = [b for b in blocks if any(b.first <= r < b.first + b.n and info.row_format is not None
                                    for r, info in ws.row_info.items())]
    for b in own:
        _hand_over(ws, b)
    blocks = [b for b in blocks if b not in own]
    if own:
        others = sorted(r for r in set(ws.table) | set(ws.row_info) | set(ws.comments) if lo <= r <= hi)
    k = 0
    for b in blocks:
        while k < len(others) and others[k] < b.first:
            _write_row(ws, others[k], spans)
            k += 1
        while k < len(others) and others[k] < b.first + b.n:  # a height or a comment of a bulk row: _render's
            k += 1
        ws.fh.write(_render(ws, b, spans))
    for r in others[k:]:
        _write_row(ws, r, spans)


def _hand_over(ws, b: Block) -> None:
    """Block ``b``'s cells put in xlsxwriter's table, as its ``write_*`` calls would have put them."""
    from xlsxwriter.worksheet import CellDatetimeTuple, CellFormulaTuple, CellNumberTuple, CellStringTuple

    for j, (c, fmt, cells) in enumerate(zip(b.columns, b.formats, b.cells)):
        for i in np.flatnonzero(b.present[:, j]).tolist():
            v = cells[i]
            if isinstance(c, Text):
                cell = CellStringTuple(v, fmt)
            elif isinstance(c, Date):
                cell = CellDatetimeTuple(v, fmt)
            elif isinstance(c, Formula) and isinstance(v, tuple):
                cell = CellFormulaTuple(v[0], fmt, v[1])
            else:
                cell = CellNumberTuple(v, fmt)
            ws.table[b.first + i][j] = cell


def _write_row(ws, row: int, spans: dict) -> None:
    """One row of xlsxwriter's own cells (its loop's body)."""
    span = spans.get(row // 16)
    info = ws.row_info.get(row)
    if ws.table.get(row):
        ws._write_row(row, span, info)
        cells = ws.table[row]
        for col in range(ws.dim_colmin, ws.dim_colmax + 1):
            if col in cells:
                ws._write_cell(row, col, cells[col])
        ws._xml_end_tag("row")
    elif row in ws.comments or info is not None:
        ws._write_empty_row(row, span, info)


def _spans(ws, blocks: list) -> dict:
    """Per 16 rows: the ``spans`` attribute of their ``<row>`` elements (the first and last column holding a cell or
    a comment, 1-based), as xlsxwriter's ``_calculate_spans`` makes it."""
    lo, hi = ws.dim_rowmin, ws.dim_rowmax
    c0, c1 = ws.dim_colmin, ws.dim_colmax
    low: dict = {}
    high: dict = {}

    def take(group: int, a: int, b: int) -> None:
        low[group] = min(low.get(group, a), a)
        high[group] = max(high.get(group, b), b)

    for source in (ws.table, ws.comments):
        for r, cells in source.items():
            if lo <= r <= hi:
                cols = [c for c in cells if c0 <= c <= c1]
                if cols:
                    take(r // 16, min(cols), max(cols))
    for b in blocks:
        p = b.present
        rows = np.flatnonzero(p.any(axis=1))
        if not len(rows):
            continue
        k = p.shape[1]
        first = p[rows].argmax(axis=1)
        last = k - 1 - p[rows][:, ::-1].argmax(axis=1)
        frame = pd.DataFrame({"g": (b.first + rows) // 16, "a": first, "b": last}).groupby("g").agg(
            a=("a", "min"), b=("b", "max"))
        for g, a, z in zip(frame.index.tolist(), frame["a"].tolist(), frame["b"].tolist()):
            take(int(g), int(a), int(z))
    return {g: f"{low[g] + 1}:{high[g] + 1}" for g in low}


def _escape(text: str) -> str:
    """A formula's text as the cell XML escapes it (xlsxwriter's ``_escape_data``)."""
    if "&" in text or "<" in text or ">" in text:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text


def _style(ws, fmt, col: int) -> str:
    """A block cell's ``s`` attribute: its format's, else its column's, as xlsxwriter picks it (a rendered block has no
    row of its own format: :func:`write_rows`; a format's index is given when it is first written: :func:`_render`
    asks in the order cells are written)."""
    if fmt:
        return f' s="{fmt._get_xf_index()}"'
    info = ws.col_info.get(col)
    if info is not None and info.column_format is not None:
        return f' s="{info.column_format._get_xf_index()}"'
    return ""


def _tag(ws, row: int, span, empty: bool = False) -> str:
    """Row ``row``'s ``<row ...>`` start tag (or its empty ``<row .../>``), made by xlsxwriter's own writer: its
    height, format, outline and the sheet's row settings (a default height, Excel 2010's descent) as it writes them."""
    import io

    fh, ws.fh = ws.fh, io.StringIO()
    try:
        if empty:
            ws._write_empty_row(row, span, ws.row_info.get(row))
        else:
            ws._write_row(row, span, ws.row_info.get(row))
        return ws.fh.getvalue()
    finally:
        ws.fh = fh


def _render(ws, b: Block, spans: dict) -> str:
    """The block's rows as XML (at close: the sheet's settings are final then, and the formats' indices are given
    in the order their cells are written, row by row, left to right)."""
    rows = [str(b.first + 1 + i) for i in range(b.n)]
    p = b.present
    seen = p.any(axis=0)
    first_row = np.where(seen, p.argmax(axis=0), b.n)
    style = [""] * len(b.columns)
    for j in sorted(np.flatnonzero(seen).tolist(), key=lambda j: (int(first_row[j]), j)):
        style[j] = _style(ws, b.formats[j], j)
    parts = []
    for j, (c, cells) in enumerate(zip(b.columns, b.cells)):
        letter, s = xl_col_to_name(j), style[j]
        on = p[:, j].tolist()
        if isinstance(c, Text):
            out = [f'<c r="{letter}{r}"{s} t="s"><v>{v}</v></c>' if k else "" for r, v, k in zip(rows, cells, on)]
        elif isinstance(c, Formula):
            out = [(f'<c r="{letter}{r}"{s}><f>{_escape(v[0])}</f><v>{v[1]}</v></c>' if type(v) is tuple else
                    f'<c r="{letter}{r}"{s}><v>{v:.16G}</v></c>') if k else "" for r, v, k in zip(rows, cells, on)]
        else:
            out = [f'<c r="{letter}{r}"{s}><v>{v:.16G}</v></c>' if k else "" for r, v, k in zip(rows, cells, on)]
        parts.append(out)
    any_cell = p.any(axis=1).tolist()
    first = b.first
    own = {r - first for r in set(ws.row_info) | set(ws.comments) if first <= r < first + b.n}  # their own tag
    rest: dict = {}  # per span: a plain row's tag after its r attribute (xlsxwriter's, made once)
    text = []
    for i, cells in enumerate(zip(*parts)):
        row = first + i
        span = spans.get(row // 16)
        if not any_cell[i]:
            if i in own:  # no cell, but a height or a comment: xlsxwriter's empty row
                text.append(_tag(ws, row, span, empty=True))
            continue
        if i in own:
            head = _tag(ws, row, span)
        else:
            if span not in rest:
                made = _tag(ws, row, span)
                rest[span] = made[len(f'<row r="{row + 1}"'):]
            head = f'<row r="{rows[i]}"{rest[span]}'
        text.append(head + "".join(cells) + "</row>")
    return "".join(text)
