"""The workbook's building blocks: formats, the sheet writer (values, formulas with cached values, text),
header-name cell references, and the constants every sheet shares."""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
import numpy as np
import pandas as pd
import xlsxwriter
from xlsxwriter.utility import xl_col_to_name

from planner.report.workbook import bulk


USD = '"$"#,##0.00'


USD0 = '"$"#,##0'


RATE = '"$"#,##0.0000'


NUM = "#,##0.00"


INT = "#,##0"


PCT = "0.0%"


DATE = "yyyy-mm-dd hh:mm"
DAY = "yyyy-mm-dd"  # where a day is meant (purchase and end dates)
MONTH = "yyyy-mm"  # a calendar month (its first day)


# the finance print pack first (what a finance reader prints and signs: FINANCE_PACK), then the rest
FINANCE_PACK = ("Summary", "Cash by year", "Tranches", "Downside", "Term downside", "Purchases")
SHEETS = FINANCE_PACK + ("Allocation", "Costs", "Spot economics", "Prices", "Demand", "Assumptions", "Fleet",
                         "Scenarios", "Shortfall", "Latency", "Backfill", "Showback", "Cash flow", "Inventory",
                         "Shadow prices", "Baseline", "Showback by month", "Savings plans", "Commitment curve",
                         "Chargeback")
FONT_PT = 11.0  # the workbook's font (Calibri 11, xlsxwriter's default)
MIN_PRINT_PT = 8.2  # the finance pack prints at this size or more (8 pt, a margin kept): pages wide enough for it
# LibreOffice lays a column of Excel width w out wider than Excel's (w x 7 + 5) px (Carlito for Calibri, the
# table's header row): measured on the example's PDF, 1.35x (3 columns) to 1.48x (25 columns) wider than that
PRINT_WIDTH_FACTOR = 1.5
HEAD_CAP = 16  # characters a line of a finance-pack number column's wrapped header
SIDE_MARGIN_IN = 0.25  # the finance pack's left and right margins (inches)
PRINTABLE_PT = {"portrait": (8.27 - 2 * SIDE_MARGIN_IN) * 72,
                "landscape": (11.69 - 2 * SIDE_MARGIN_IN) * 72}  # A4 less the finance pack's side margins


NAMES = ("total_cost_usd", "reserved_cost_usd", "on_demand_cost_usd", "spot_cost_usd",
         "all_on_demand_usd", "savings_usd", "horizon_hours", "already_committed_usd", "bill_usd", "discount_rate",
         "npv_usd")


WIDE = {"Allocation", "Purchases", "Spot economics", "Prices", "Assumptions", "Backfill", "Latency", "Cash flow",
        "Inventory", "Shadow prices", "Showback", "Demand", "Costs", "Shortfall"}  # printed landscape


UNITS = {  # header notes: what a column holds, with its unit
    "hourly_usd": "USD per GPU-hour (per GPU, not per instance; for reserved: the recurring part)",
    "upfront_usd": "USD per GPU, paid on the purchase date (reserved only)",
    "effective_usd_per_gpu_hour": "USD per GPU-hour: hourly + (upfront - residual) / (term x 730 h)",
    "gpus_per_instance": "GPUs in one instance: purchases are whole instances",
    "term_months": "months of the commitment (730 h each)", "max_gpus": "GPUs at most at once (cap)",
    "residual_usd": "USD per GPU returned at the end of the term", "lead_time_months": "months from purchase to use",
    "gpus": "GPUs", "instances": "instances (whole)", "horizon_cost_usd": "USD, amortised over the horizon hours",
    "commitment_usd": "USD, the whole term's liability", "usd_per_gpu_hour": "USD per GPU-hour",
    "gpu_hours": "GPU-hours", "expected_gpu_hours": "GPU-hours weighted by the scenario's probability",
    "expected_cost_usd": "USD weighted by the scenario's probability", "cost_usd": "USD over the horizon",
    "npv_usd": "USD today: the whole term's cash discounted at [finance] discount_rate, monthly from the first month",
    "payment_options": "the NPV of the same GPUs under each payment option of this pool, term and date (* = chosen)",
    "branch": "the scenarios this purchase is made in: all, or one branch of the tree (a purchase that waits for "
              "what is known at its date)",
    "probability": "of its branch: the Costs sheet counts the purchase at this share (expected cost)",
    "spot_usd_per_useful_gpu_hour": "USD per useful GPU-hour on spot in this pool: the spot price (Prices) / the "
                                    "best goodput of a class on the pool",
    "break_even_vs_spot": "utilisation below which serving the hours it serves on spot would cost less",
    "break_even_vs_nothing": "utilisation below which buying nothing (the cheaper of on-demand and spot for the "
                             "same hours) would cost less",
    "block_start": "capacity blocks: the window's first hour (UTC)", "block_days": "capacity blocks: days in the window",
    "provider": "capacity blocks: the provider whose rules were checked (aws, gcp)",
    "discount_factor": "(1 + discount_rate)^(-m/12), m = months from the first", "discounted_usd": "total_usd x factor",
}
# the same column name holds totals on the other sheets: their own notes
SHEET_UNITS = {
    "Purchases": {"upfront_usd": "USD, the row's whole upfront (GPUs x the Prices sheet's upfront per GPU), paid on "
                                 "the purchase date",
                  "residual_usd": "USD, the row's whole residual value, returned at the end of the term"},
    "Cash flow": {"upfront_usd": "USD paid this month as upfronts; negative: residual value returned at a term's end"},
    "Cash by year": {"upfront_usd": "USD paid in the period as upfronts; negative: residual value returned at a "
                                    "term's end",
                     "reserved_recurring_usd": "USD: the monthly fees of the commitments bought",
                     "owned_fees_usd": "USD: the fees of the commitments already owned (Inventory)",
                     "total_with_owned_usd": "USD: total_usd + owned_fees_usd, the cash out",
                     "total_usd": "USD: what this plan decides (upfronts, fees, on-demand, spot)"},
}


class F(str):
    """A formula this module wrote, with the value it computes (cached in the file). Any other string is text."""

    value: object = None

    def __new__(cls, text: str, value=None):
        obj = super().__new__(cls, text)
        obj.value = value
        return obj


@dataclass
class _Styled:
    """A value written with its own number format (and bold/red font)."""
    value: object
    fmt: str | None = None
    red: bool = False


@dataclass
class _Text:
    """Input text: always a string cell, never a formula, whatever it starts with."""
    value: object


# functions every Excel since 2007 knows by their own names: a formula calling only these needs none of
# xlsxwriter's ~30 ``_xlfn.`` rewrites (one regex pass each, per formula: a third of an hourly workbook's time)
_PLAIN_FUNCTIONS = frozenset({"ABS", "AND", "AVERAGE", "COUNT", "COUNTIF", "COUNTIFS", "DATE", "EXACT", "IF", "IFERROR",
                              "INDEX", "MATCH", "MAX", "MIN", "NOT", "NPV", "OR", "POWER", "ROUND", "SUM", "SUMIFS",
                              "SUMPRODUCT", "TEXT", "VLOOKUP", "YEAR"})
_CALLS = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\(")


class _Worksheet(xlsxwriter.worksheet.Worksheet):
    """xlsxwriter's worksheet, with formulas that call only `_PLAIN_FUNCTIONS` passed as written (the same XML:
    the rewrites it skips change nothing in them); any other formula goes through xlsxwriter's own rewrites. Rows
    given in bulk (:meth:`_Sheet.extend`) are written by :mod:`planner.report.workbook.bulk`."""

    def _write_rows(self):
        if self.__dict__.get("planner_blocks"):
            bulk.write_rows(self)
        else:
            super()._write_rows()

    def _prepare_formula(self, formula, expand_future_functions=False):
        if self.use_future_functions or expand_future_functions or formula.startswith("{") or formula.endswith("}"):
            return super()._prepare_formula(formula, expand_future_functions)
        if not _PLAIN_FUNCTIONS.issuperset(m.upper() for m in _CALLS.findall(formula)):
            return super()._prepare_formula(formula, expand_future_functions)
        return formula[1:] if formula.startswith("=") else formula


class _Book:
    """The xlsxwriter workbook and its formats (one Format object per distinct style)."""

    def __init__(self, path):
        self.wb = xlsxwriter.Workbook(str(path), {"strings_to_formulas": False, "strings_to_urls": False,
                                                  "strings_to_numbers": False})
        self._formats: dict = {}

    def fmt(self, num: str | None = None, bold: bool = False, red: bool = False, head: bool = False,
            wrap: bool = False, right: bool = False):
        key = (num, bold, red, head, wrap, right)
        if key not in self._formats:
            spec = {"valign": "top"}  # rows whose note wraps read from the top
            if wrap:
                spec["text_wrap"] = True
            if num:
                spec["num_format"] = num
            if bold or head or red:
                spec["bold"] = True
            if red:
                spec["font_color"] = "#C00000"
            if head:
                spec.update({"bg_color": "#DDEBF7", "text_wrap": True, "valign": "top"})
            if right:  # a number column's header over its right-aligned figures
                spec["align"] = "right"
            self._formats[key] = self.wb.add_format(spec) if spec else None
        return self._formats[key]

    def sheet(self, name: str):
        ws = self.wb.add_worksheet(name, worksheet_class=_Worksheet)
        ws.planner_book = self
        ws.set_paper(9)  # A4
        ws.fit_to_pages(1, 0)  # fit to the page width, as many pages down as needed
        ws.repeat_rows(0)  # the header row on every printed page
        if name in WIDE:
            ws.set_landscape()
        ws.set_footer("&L&A&RPage &P of &N")
        side = SIDE_MARGIN_IN if name in FINANCE_PACK else 0.4  # the pack's pages as wide as A4 prints safely
        ws.set_margins(left=side, right=side, top=0.5, bottom=0.6)
        return ws


def print_readable(ws, width_pt: float) -> None:
    """Print a finance-pack sheet at ``MIN_PRINT_PT`` or more: portrait, fit to the page's width, if it fits there
    at that size (``width_pt`` errs wide: the scale is then >= that size); else landscape at that size exactly (a
    print scale: as many pages wide and down as it needs, no page printed larger than it must be, which a
    fit-to-N-pages estimated from the widths did: at 100 %, on more pages)."""
    scale = MIN_PRINT_PT / FONT_PT
    if width_pt * scale <= PRINTABLE_PT["portrait"]:
        ws.set_portrait()
        ws.fit_to_pages(1, 0)
    else:
        ws.set_landscape()
        ws.set_print_scale(int(np.ceil(100 * scale)))


def _number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


@dataclass
class _Sheet:
    """A sheet written row by row that knows its columns, formats and row count."""

    ws: object
    columns: list[str]
    formats: dict[str, str] = field(default_factory=dict)
    rows: int = 0
    omitted: int = 0  # rows not written: past Excel's row limit
    wrap: tuple = ()  # columns whose text wraps (the row heights are the writer's)
    shown: dict = field(default_factory=dict)  # finance pack: per column, the widest value as displayed (characters)
    widths_given: dict | None = None  # the caller's widths (kept as given)
    _pack: bool | None = None  # see pack

    @property
    def book(self) -> _Book:
        return self.ws.planner_book

    def cell(self, value, fmt: str | None = None, font=None):
        return _Styled(value, fmt, red=font is RED)

    def text(self, value):
        """Input text: always a string cell, never a formula, whatever it starts with."""
        return _Text(value)

    def _width(self, name: str, widths: dict[str, int] | None) -> int:
        """A column's width in characters: the caller's, else its values' format and its header. On a finance-pack
        sheet a number column is as wide as its values (the header wraps over :data:`HEAD_CAP` characters a
        line): its pages print fewer and larger."""
        fmt = self.formats.get(name)
        if self.ws.get_name() in FINANCE_PACK and fmt is not None:
            return max(_FORMAT_WIDTH.get(fmt, 12), min(len(name) + 1, HEAD_CAP))
        return (widths or {}).get(name, max(_FORMAT_WIDTH.get(fmt, 12), min(len(name) + 3, 40)))

    def header(self, widths: dict[str, int] | None = None):
        self.widths_given = widths
        for i, name in enumerate(self.columns):
            self.ws.write_string(0, i, name, self._head(name))
            note = SHEET_UNITS.get(self.ws.get_name(), {}).get(name, UNITS.get(name))
            if note:
                self.ws.write_comment(0, i, note, {"x_scale": 2})
        self.ws.freeze_panes(1, 0)
        self.rows = 1
        self._lay_out([self._width(n, widths) for n in self.columns])

    def _head(self, name: str):
        """The header cell's format: right-aligned over a number or date column, as its figures are."""
        return self.book.fmt(head=True, right=self.formats.get(name) is not None)

    def _fit(self) -> None:
        """A finance-pack sheet's columns as wide as the widest value each shows (at least 8 characters and a
        header wrapped to 3 lines; the caller's widths kept), then its print laid out again: fewer pages."""
        if self.ws.get_name() not in FINANCE_PACK or self.ws.get_name() == "Summary" or not self.shown:
            return  # the Summary's three columns are laid out by its writer
        given = self.widths_given or {}
        chars = []
        for n in self.columns:
            if n in given and (n in self.wrap or n not in self.shown):
                chars.append(given[n])
                continue
            word = max((len(w) for w in n.replace("_", "_ ").split()), default=1)
            head = max(int(np.ceil(len(n) / 3)) + 1, min(word + 1, HEAD_CAP), 8)
            chars.append(max(self.shown.get(n, 0) + 1, head) if n in self.shown else self._width(n, given))
        self._lay_out(chars)

    def _lay_out(self, chars: list[int]) -> None:
        """Set the columns' widths, the header row's height and the print layout from ``chars``."""
        for i, w in enumerate(chars):
            self.ws.set_column(i, i, w)
        lines = max((int(np.ceil(len(n) / max(w - 1, 1))) for n, w in zip(self.columns, chars)), default=1)
        self.ws.set_row(0, 15.0 * lines)  # a wrapped header: as tall as its lines (Excel does not fit it on opening)
        self.width_pt = sum((w * 7 + 5) * 0.75 for w in chars) * PRINT_WIDTH_FACTOR  # column widths as points
        self.chars = sum(chars)  # the table's width in characters (a note wraps to it)
        if self.ws.get_name() in FINANCE_PACK:
            self.ws.repeat_col_range = ""  # laid out again from the values: no columns repeated unless it is wide
            print_readable(self.ws, self.width_pt)
            if self.width_pt * MIN_PRINT_PT / FONT_PT > PRINTABLE_PT["portrait"]:  # several pages wide: each page
                # repeats the leading label columns (gpu_type, region, option; a period) that say which row is which
                labels = 0
                for name in self.columns[:3]:
                    if self.formats.get(name) is not None and labels:
                        break
                    labels += 1
                self.ws.repeat_columns(0, max(labels, 1) - 1)
                # a note below the table (column A, repeated on every page) wraps to one page's width: its text
                # overflowing onto the next page's columns printed over the repeated copy there (garbled lines)
                page_pt = PRINTABLE_PT["landscape"] * FONT_PT / MIN_PRINT_PT / PRINT_WIDTH_FACTOR
                self.chars = min(self.chars, int((page_pt / 0.75 - 5) / 7 * 0.9))

    @property
    def pack(self) -> bool:
        """True on a finance-pack sheet (whole dollars and GPU-hours shown; widths from the values)."""
        if self._pack is None:
            self._pack = self.ws.get_name() in FINANCE_PACK
        return self._pack

    def _measure(self, j: int, v, num: str | None) -> None:
        """Remember the widest value column ``j`` shows (finance pack only: its widths come from its values)."""
        if j >= len(self.columns) or not self.pack:
            return
        name = self.columns[j]
        if name in self.wrap:
            return
        n = _shown_len(v, num)
        if n > self.shown.get(name, 0):
            self.shown[name] = n

    def _write(self, r: int, j: int, v, num: str | None, red: bool = False):
        if isinstance(v, _Styled):
            return self._write(r, j, v.value, v.fmt or num, v.red)
        if self.pack:  # the finance pack shows whole dollars and GPU-hours (the cells hold every digit): narrower
            num = USD0 if num == USD else INT if num == NUM else num  # pages
            self._measure(j, v.value if isinstance(v, (F, _Text)) else v, num)
        wrap = bool(self.wrap) and j < len(self.columns) and self.columns[j] in self.wrap
        ws, book = self.ws, self.ws.planner_book
        if isinstance(v, F):
            value = v.value
            if value is not None and _number(value) and not math.isfinite(float(value)):
                value = None
            ws.write_formula(r, j, str(v), book.fmt(num, red=red, wrap=wrap), float(value) if _number(value) else
                             ("" if value is None else value))
        elif isinstance(v, str):
            ws.write_string(r, j, v, book.fmt(None, red=red, wrap=wrap))
        elif isinstance(v, _Text):
            if v.value is not None:
                ws.write_string(r, j, str(v.value), book.fmt(None, red=red, wrap=wrap))
        elif v is None:
            return
        elif isinstance(v, (bool, np.bool_)):
            ws.write_boolean(r, j, bool(v))
        elif isinstance(v, (dt.datetime, pd.Timestamp)):
            if pd.isna(v):
                return
            ws.write_datetime(r, j, pd.Timestamp(v).to_pydatetime(), book.fmt(num or DATE))
        elif _number(v):
            if math.isfinite(float(v)):
                ws.write_number(r, j, float(v), book.fmt(num, red=red, wrap=wrap))
        else:
            ws.write_string(r, j, str(v))

    def append(self, values: list):
        if self.rows >= EXCEL_MAX_ROWS - 1:  # Excel's limit: keep the last row for the note that says so
            self.omitted += 1
            return
        r = self.rows
        fast = self._fast()
        if fast is None:
            for j, (name, v) in enumerate(zip(self.columns, values)):
                self._write(r, j, v, self.formats.get(name))
        else:  # the common cells (numbers, formulas, text) written as _write writes them, formats looked up once
            ws, text_fmt = self.ws, fast[1]
            for j, (num, v) in enumerate(zip(fast[0], values)):
                t = type(v)
                if t is float or t is np.float64 or t is int:
                    if math.isfinite(v):
                        ws.write_number(r, j, float(v), num[1])
                elif t is F:
                    value = v.value
                    if value is not None and _number(value) and not math.isfinite(float(value)):
                        value = None
                    ws.write_formula(r, j, str(v), num[1], float(value) if _number(value) else
                                     ("" if value is None else value))
                elif t is str:
                    ws.write_string(r, j, v, text_fmt)
                else:
                    self._write(r, j, v, num[0])
        self.rows += 1

    def extend(self, columns: list) -> None:
        """Rows given as columns, one :mod:`~planner.report.workbook.bulk` spec (Text, Number, Date, Formula) per
        column of the sheet: the cells :meth:`append` writes row by row, the same file byte for byte, written in bulk
        where they can be (a data table of thousands of rows: seconds less) and row by row where not."""
        if len(columns) != len(self.columns):
            raise ValueError(f"{self.ws.get_name()}: {len(columns)} columns given for its {len(self.columns)}")
        lengths = [len(bulk.values_of(c)) for c in columns] + [len(c.values) for c in columns
                                                                if isinstance(c, bulk.Formula)]
        n = lengths[0] if lengths else 0
        if any(k != n for k in lengths):
            raise ValueError(f"{self.ws.get_name()}: every column needs one value per row ({lengths})")
        fast = self._fast()
        if BULK and n and fast is not None and self.rows + n < EXCEL_MAX_ROWS - 1:
            nums, text_fmt = fast
            formats = [text_fmt if isinstance(c, bulk.Text) else self.book.fmt(nums[j][0] or DATE)
                       if isinstance(c, bulk.Date) else nums[j][1] for j, c in enumerate(columns)]
            try:
                bulk.add(self.ws, self.rows, columns, formats)
                self.rows += n
                return
            except bulk.Unsupported:  # (nothing was written: row by row instead)
                pass
        for row in zip(*(_cell_values(c) for c in columns)):
            self.append(list(row))

    def _fast(self):
        """Per column (number format, its format object) and the text format, where every cell of this sheet is
        written with them (no finance-pack widths to measure, no wrapped column); else None."""
        if "_fast_formats" not in self.__dict__:  # (columns, formats and wrap are set before the first row)
            book = self.book
            self.__dict__["_fast_formats"] = None if self.pack or self.wrap else (
                [(self.formats.get(n), book.fmt(self.formats.get(n))) for n in self.columns], book.fmt(None))
        return self.__dict__["_fast_formats"]

    def note(self, text: str = ""):
        """A line of text below the table (column A). On a finance-pack sheet a long note is broken into lines no
        wider than the table: text running past the table's last column would widen what prints (LibreOffice prints
        the overflow), and the sheet would print below 8 pt."""
        lines = [text]
        if text and self.ws.get_name() in FINANCE_PACK and getattr(self, "chars", 0):
            import textwrap

            lines = textwrap.wrap(text, width=max(40, int(self.chars))) or [text]
        for line in lines:
            if line:
                self.ws.write_string(self.rows, 0, line)
            self.rows += 1

    def col(self, name: str) -> str:
        return xl_col_to_name(self.columns.index(name))

    def ref(self, name: str, row: int, absolute: bool = True) -> str:
        c = self.col(name)
        return f"${c}${row}" if absolute else f"{c}{row}"

    def table(self, display: str):
        self._fit()
        if self.rows == 1:  # a table needs a data row
            self.rows += 1
        self.ws.add_table(0, 0, self.rows - 1, len(self.columns) - 1, {
            "name": display, "style": "Table Style Medium 2", "autofilter": True,
            "columns": [{"header": c, "header_format": self._head(c)} for c in self.columns]})
        name = self.ws.get_name()
        if name in DATA_SHEETS and self.rows > PRINT_ROWS:  # a data sheet prints its first rows, not thousands
            self.ws.print_area(0, 0, PRINT_ROWS - 1, len(self.columns) - 1)
            self.ws.set_footer(f"&L&A: the first {PRINT_ROWS - 1} of {self.rows - 1:,} rows are printed (the whole "
                               "table is in the file)&RPage &P of &N")
        if self.omitted:  # said on the sheet itself, below the table
            self.ws.write_string(self.rows, 0, f"{self.omitted:,} more rows omitted: Excel holds {EXCEL_MAX_ROWS:,} "
                                              "rows per sheet; plan.json has them all", self.book.fmt(red=True))
            self.rows += 1


RED = object()  # marker for the red, bold font of a warning value
# the sheets of per-period or per-row data: printing them whole would be hundreds of pages, so only their first
# rows are in the print area (on screen and to formulas every row is there)
DATA_SHEETS = {"Allocation", "Demand", "Fleet", "Costs", "Showback by month", "Latency", "Shortfall", "Backfill",
               "Shadow prices"}
PRINT_ROWS = 31  # the header and 30 rows (a landscape page's worth at the width's scale)
def _shown_len(v, num: str | None) -> int:
    """Characters value ``v`` shows in format ``num`` (about: what a column must hold so it never prints ###)."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return 0
    if isinstance(v, (dt.datetime, pd.Timestamp, dt.date)):
        return len(num or DATE)
    if _number(v):
        x = float(v)
        sign = 1 if x < 0 else 0
        if num == USD:
            return len(f"${abs(x):,.2f}") + sign
        if num == USD0:
            return len(f"${abs(x):,.0f}") + sign
        if num == RATE:
            return len(f"${abs(x):,.4f}") + sign
        if num == PCT:
            return len(f"{100 * x:.1f}%")
        if num == INT:
            return len(f"{x:,.0f}")
        if num == NUM:
            return len(f"{x:,.2f}")
        if num in (DATE, DAY, MONTH):
            return len(num)
        return len(f"{x:,.2f}") if num else len(repr(x))
    if isinstance(v, (bool, np.bool_)):
        return 5
    return len(str(v))


_FORMAT_WIDTH = {DATE: 17, DAY: 11, MONTH: 9, USD: 17, USD0: 15, RATE: 12}  # wide enough that no value prints as ###


BOLD = None


def _q(sheet: str) -> str:
    return f"'{sheet}'" if " " in sheet else sheet


BULK = True  # rows given in bulk are written in bulk (False: row by row, the reference the tests compare them to)


def _cell_values(c) -> list:
    """A bulk column's cells as :meth:`_Sheet.append` takes them."""
    if isinstance(c, bulk.Text):
        return list(c.values)
    if isinstance(c, bulk.Number):
        return np.asarray(c.values, float).tolist()
    if isinstance(c, bulk.Date):
        return [None if x is None or pd.isna(x) else _date(x) for x in c.values]
    return [v if t is None else F(t, v) for t, v in zip(c.texts, np.asarray(c.values, float).tolist())]


def _date(ts) -> dt.datetime:
    return pd.Timestamp(ts).to_pydatetime()


EXCEL_MAX_ROWS = 1_048_576  # rows per sheet in Excel; the per-period sheets are aggregated long before this


VALUED_KINDS = ("spend", "exit")  # commitments-table rows the workbook carries as values (no Prices row)


def _plus(value: float) -> str:
    """``+value`` for a formula (savings plans' figures, which have no Purchases row), or nothing at 0."""
    return f"+{value!r}" if value else ""


# The columns of every sheet another sheet's formulas read, by header name: a formula refers to a cell as
# (sheet, header, row) and the letter comes from here, so adding or moving a column never shifts a formula
# (tests/test_workbook_refs.py checks every reference of a written workbook against the headers it names).
COLUMNS: dict[str, tuple[str, ...]] = {
    "Prices": ("gpu_type", "region", "option", "hourly_usd", "upfront_usd", "term_months",
               "effective_usd_per_gpu_hour", "gpus_per_instance", "max_gpus", "interruptions_per_hour",
               "valid_from", "lead_time_months", "residual_usd", "block_start", "block_days", "provider", "scenario"),
    "Purchases": ("gpu_type", "region", "option", "term_months", "instances", "gpus_per_instance", "gpus",
                  "effective_usd_per_gpu_hour", "horizon_cost_usd", "commitment_usd", "pool_reserved_utilisation",
                  "purchase_date", "active_from", "end_date", "firm", "hours_active",
                  "liability_past_horizon_usd", "upfront_usd", "monthly_recurring_usd", "on_demand_usd_per_gpu_hour",
                  "min_utilisation", "avg_utilisation", "max_utilisation", "break_even_utilisation",
                  "monthly_savings_usd", "monthly_savings_pct", "break_even_months", "npv_usd", "payment_options",
                  "branch", "probability", "spot_usd_per_useful_gpu_hour", "break_even_vs_spot",
                  "break_even_vs_nothing"),
    "Costs": ("cost_kind", "gpu_type", "region", "option", "quantity", "unit", "gpu_hours", "usd_per_gpu_hour",
              "cost_usd"),
    "Allocation": ("scenario", "period", "hours", "workload_class", "gpu_type", "region", "option", "gpus",
                   "gpu_hours", "probability", "expected_gpu_hours", "usd_per_gpu_hour", "expected_cost_usd"),
    "Inventory": ("gpu_type", "region", "option", "gpus", "start", "end", "term_months",
                  "effective_usd_per_gpu_hour", "hours_in_horizon", "horizon_cost_usd", "hours_after_horizon",
                  "recurring_after_horizon_usd", "expires_in_horizon", "priced"),
    "Baseline": ("workload_class", "demand_gpu_hours", "cheapest_usd_per_gpu_hour", "baseline_usd", "pools_compared"),
    "Summary": ("item", "value", "note"),
    "Cash by year": ("period", "from", "to", "upfront_usd", "reserved_recurring_usd", "on_demand_usd", "spot_usd",
                     "total_usd", "discounted_usd", "owned_fees_usd", "total_with_owned_usd"),
}


def letter(sheet: str, name: str) -> str:
    """The column letter of header ``name`` on ``sheet`` (from :data:`COLUMNS`)."""
    return xl_col_to_name(COLUMNS[sheet].index(name))


def ref(sheet: str, name: str, row: int) -> str:
    """``Sheet!$C$row``: the cell of header ``name`` in ``row`` of ``sheet``, absolute."""
    return f"{_q(sheet)}!${letter(sheet, name)}${row}"


def span(sheet: str, name: str, first: int, last: int) -> str:
    """``Sheet!$C$first:$C$last``: the column of header ``name`` over rows ``first``..``last``."""
    c = letter(sheet, name)
    return f"{_q(sheet)}!${c}${first}:${c}${last}"


def cell(columns, name: str, row: int) -> str:
    """``C7``: the relative cell of header ``name`` in ``row`` of the sheet being written (its ``columns``)."""
    return f"{xl_col_to_name(list(columns).index(name))}{row}"
