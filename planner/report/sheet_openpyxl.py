"""An openpyxl write-only sheet helper for the smaller workbooks (comparison, sweep): columns, formats, tables.

plan.xlsx is written with xlsxwriter (:mod:`planner.report.workbook`: formulas with cached values); these
workbooks keep openpyxl, whose write-only mode they were built on. Text is never a formula.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.filters import AutoFilter
from openpyxl.worksheet.table import Table, TableColumn, TableStyleInfo

from planner.report.workbook.book import INT, NUM, PCT, RATE, USD, USD0

__all__ = ["BOLD", "F", "INT", "NUM", "PCT", "RATE", "USD", "USD0", "_Sheet"]  # the number formats: the same

BOLD = Font(bold=True)
HEAD_FILL = PatternFill("solid", fgColor="DDEBF7")


class F(str):
    """A formula this module wrote. Any other string is written as text, whatever it starts with."""


@dataclass
class _Sheet:
    """A write-only sheet that knows its columns, formats and row count."""

    ws: object
    columns: list[str]
    formats: dict[str, str] = field(default_factory=dict)
    rows: int = 1

    def cell(self, value, fmt: str | None = None, font=None):
        c = WriteOnlyCell(self.ws, value=value)
        if fmt:
            c.number_format = fmt
        if font:
            c.font = font
        return c

    def text(self, value):
        """Input text: always a string cell, never a formula, whatever it starts with."""
        c = WriteOnlyCell(self.ws, value=None if value is None else str(value))
        if value is not None:
            c.data_type = "s"
        return c

    def header(self, widths: dict[str, int] | None = None):
        for i, name in enumerate(self.columns, 1):
            self.ws.column_dimensions[get_column_letter(i)].width = (widths or {}).get(name, max(12, len(name) + 3))
        self.ws.freeze_panes = "A2"
        head = []
        for c in self.columns:  # headers can be class names: text, never formulas
            cell = self.text(c)
            cell.font = BOLD
            head.append(cell)
        self.ws.append(head)

    def append(self, values: list):
        row = []
        for name, v in zip(self.columns, values):
            if hasattr(v, "data_type"):
                row.append(v)
            elif isinstance(v, F):
                row.append(self.cell(str(v), self.formats.get(name)))
            elif isinstance(v, str):
                # openpyxl stores a plain str as text unless it starts with "=": only those need forcing
                row.append(self.text(v) if v.startswith("=") else v)
            elif v is None or (isinstance(v, float) and not np.isfinite(v)):
                row.append(None)
            else:
                row.append(self.cell(v, self.formats.get(name)))
        self.ws.append(row)
        self.rows += 1

    def col(self, name: str) -> str:
        return get_column_letter(self.columns.index(name) + 1)

    def ref(self, name: str, row: int, absolute: bool = True) -> str:
        c = self.col(name)
        return f"${c}${row}" if absolute else f"{c}{row}"

    def table(self, display: str):
        if self.rows == 1:  # a table needs a data row
            self.ws.append([None] * len(self.columns))
            self.rows += 1
        last = get_column_letter(len(self.columns))
        ref = f"A1:{last}{self.rows}"
        t = Table(displayName=display, ref=ref, autoFilter=AutoFilter(ref=ref))
        # write-only sheets cannot read their header back: name the columns here
        t.tableColumns = [TableColumn(id=i, name=c) for i, c in enumerate(self.columns, 1)]
        t.tableStyleInfo = TableStyleInfo(name="TableStyleMedium2", showRowStripes=True)
        with warnings.catch_warnings():  # openpyxl warns that write-only tables need the columns we just gave
            warnings.simplefilter("ignore", UserWarning)
            self.ws.add_table(t)
