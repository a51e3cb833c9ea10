"""Read input files (CSV or .xlsx) into tables of text, keeping the user's row numbers.

No business rules here: every cell stays a string (blank = ""), so ``validate``
can quote the exact value the user typed. CSVs saved by Excel are understood:
a byte-order mark, ``;`` as the separator, and then ``,`` as the decimal mark.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import hashlib
import io as _io
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from planner.core.csvscan import refuse_nul_text
from planner.core.errors import InputError, Problem


@dataclass(frozen=True)
class RawTable:
    """A table as read: text cells, header names stripped, spreadsheet row numbers."""

    file: str
    data: pd.DataFrame  # all str, "" for blank
    rows: pd.Series  # spreadsheet row number of each data row (header = 1)
    decimal_comma: bool = False
    sha256: str = ""


def sha256_of(path: Path) -> str:
    """SHA-256 of a file's bytes (hex), for provenance in plan.json and the workbook."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _check_path(path: Path, what: str) -> None:
    file = str(path)
    if not path.exists():
        raise InputError(Problem(file, f"{what} file not found",
                                 hint="check the path in the model file (paths are relative to it)"))
    if path.is_dir():
        raise InputError(Problem(file, f"is a directory, expected a {what} file (.csv or .xlsx)"))
    if not path.is_file():  # a FIFO, a device such as /dev/zero, a socket: reading could hang or never end
        raise InputError(Problem(file, f"is not a regular file, expected a {what} file (.csv or .xlsx)"))
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise InputError(Problem(file, f"cannot be read ({exc.strerror})",
                                 hint="check the file's permissions")) from None


def read_table(path: str | Path, what: str) -> RawTable:
    """Read ``path`` (.csv, .txt or .xlsx) as text; ``what`` names the table in messages."""
    path = Path(path)
    _check_path(path, what)
    suffix = path.suffix.lower()
    if suffix in (".xlsx", ".xlsm"):
        df = _read_xlsx(path, what)
        decimal_comma, lead = False, 0
    elif suffix in (".xls", ".ods"):
        raise InputError(Problem(str(path), f"unsupported {what} file format '{suffix}'",
                                 expected=".csv or .xlsx", hint="save it as .xlsx or .csv"))
    else:
        df, decimal_comma, lead = _read_csv(path, what)
    df.columns = [str(c).strip() for c in df.columns]
    df = df.apply(lambda s: s.str.strip()) if len(df.columns) else df
    names = list(df.columns)
    unnamed = [i for i, c in enumerate(names) if c == "" or c.startswith("Unnamed:")]
    lost = [i + 1 for i in unnamed if df.iloc[:, i].ne("").any()]
    if lost:
        raise InputError([Problem(str(path), f"column {i} has values but no header", row=1 + lead,
                                  hint="give the column a name or delete it") for i in lost])
    df = df.iloc[:, [i for i in range(len(names)) if i not in unnamed]]  # Excel's leftover blank columns
    dupes = sorted({c for c in df.columns if list(df.columns).count(c) > 1})
    if dupes:
        raise InputError([Problem(str(path), "duplicate column", row=1 + lead, column=c,
                                  hint="keep one column of each name") for c in dupes])
    rows = pd.Series(range(2 + lead, len(df) + 2 + lead), index=df.index)
    # rows left fully blank (Excel often keeps a few) are not data
    filled = df.ne("").any(axis=1) if len(df.columns) else pd.Series(False, index=df.index)
    df, rows = df[filled], rows[filled]
    return RawTable(file=str(path), data=df.reset_index(drop=True), rows=rows.reset_index(drop=True),
                    decimal_comma=decimal_comma, sha256=sha256_of(path))


def _read_csv(path: Path, what: str) -> tuple[pd.DataFrame, bool, int]:
    file = str(path)
    raw = path.read_bytes()
    if not raw.strip():
        raise InputError(Problem(file, f"the {what} file is empty", expected="a header row and data rows"))
    if raw[:4] == b"PK\x03\x04":
        raise InputError(Problem(file, "looks like an Excel workbook saved with a .csv name",
                                 hint="rename it to .xlsx or save it as CSV"))
    text = None
    encodings = ("utf-16",) if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else ("utf-8-sig", "cp1252")
    for enc in encodings:
        try:
            text = raw.decode(enc)
            break
        except UnicodeDecodeError:
            continue
    if text is None or text.count("\x00") * 100 > len(text):  # (a few NULs in cells are named below)
        raise InputError(Problem(file, f"the {what} file is not text (it cannot be decoded as UTF-8 or UTF-16)",
                                 hint="save it as 'CSV UTF-8 (comma delimited)' or as .xlsx"))
    lines = text.splitlines()
    lead = next(i for i, line in enumerate(lines) if line.strip())  # blank lines above the header
    text = "\n".join(lines[lead:])
    header = lines[lead]
    sep = ","
    if header.count(";") > header.count(",") and header.count(";") >= 1:
        sep = ";"
    elif header.count("\t") > header.count(","):
        sep = "\t"
    if "\x00" in text:  # a NUL byte in a cell: named by row and column (pandas 2 would end the cell there), rows
        refuse_nul_text(_io.StringIO("\n".join(lines)), file, skip=lead, delimiter=sep)  # counted from the file's top
    try:
        table = pd.read_csv(_io.StringIO(text), sep=sep, dtype=str, keep_default_na=False,
                            header=None, skipinitialspace=True, skip_blank_lines=False,
                            quoting=csv.QUOTE_MINIMAL)
    except pd.errors.ParserError as exc:
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if m:
            raise InputError(Problem(file, f"row has {m.group(3)} fields but the header has {m.group(1)}",
                                     row=int(m.group(2)) + lead, hint="remove the extra separator, or quote "
                                     "a value that contains one")) from None
        raise InputError(Problem(file, "cannot be parsed as CSV: " + " ".join(str(exc).split()),
                                 hint="every row needs as many fields as the header")) from None
    except pd.errors.EmptyDataError:
        raise InputError(Problem(file, f"the {what} file is empty")) from None
    # header=None keeps duplicate column names as the user wrote them (pandas would mangle them)
    df = table.iloc[1:].reset_index(drop=True)
    df.columns = [str(c) for c in table.iloc[0]]
    return df, sep == ";", lead


MAX_CELLS = 12_000_000  # text cells read from one sheet (a 2M-row, 6-column table)
MAX_COLUMNS = 2_000


def _sheet_rows(ws, file: str, what: str) -> list[list[str]]:
    """The sheet's rows as text, trailing blanks cut, memory bounded by the cells actually there.

    The sheet's stated dimensions are ignored (a stray cell at XFD1048576 would claim 17 billion);
    reading stops with an input error past MAX_CELLS cells or a value beyond MAX_COLUMNS columns.
    """
    with contextlib.suppress(AttributeError):
        ws.reset_dimensions()
    rows, cells = [], 0
    for r, row in enumerate(ws.iter_rows(values_only=True), start=1):
        texts = [_cell_text(v) for v in row]
        while texts and not texts[-1]:
            texts.pop()
        if len(texts) > MAX_COLUMNS:
            raise InputError(Problem(file, f"a value far to the right of the {what} table", row=r,
                                     column=f"column {len(texts)}", value=texts[-1][:40],
                                     expected=f"data within the first {MAX_COLUMNS:,} columns",
                                     hint="delete stray cells right of the table (Ctrl+End shows the used range)"))
        cells += len(texts)
        if cells > MAX_CELLS:
            raise InputError(Problem(file, f"the {what} sheet holds more than {MAX_CELLS:,} cells", row=r,
                                     expected="a demand or price table of at most about 2 million rows",
                                     hint="split the file, or aggregate the periods"))
        rows.append(texts)
    return rows


def table_from_frame(frame: pd.DataFrame, what: str) -> RawTable:
    """A DataFrame given in memory as a table of text, as if read from a file named ``<what> DataFrame``.

    Values are written as the reader would see them in a CSV (timestamps in ISO 8601, NaN/None blank),
    so in-memory inputs pass exactly the checks files do; rows are numbered from 2, as in a sheet.
    """
    if not isinstance(frame, pd.DataFrame):
        raise InputError(Problem(f"<{what} DataFrame>", f"expected a pandas DataFrame for the {what}",
                                 value=type(frame).__name__))
    file = f"<{what} DataFrame>"
    df = frame.reset_index(drop=True)
    df.columns = [str(c).strip() for c in df.columns]
    dupes = sorted({c for c in df.columns if list(df.columns).count(c) > 1})
    if dupes:
        raise InputError([Problem(file, "duplicate column", row=1, column=c) for c in dupes])
    text = pd.DataFrame({c: [_cell_text(v.item() if hasattr(v, "item") and not isinstance(v, pd.Timestamp) else v)
                             for v in df[c].tolist()] for c in df.columns}, dtype=object)
    text = text.apply(lambda s: s.str.strip()) if len(text.columns) else text
    digest = hashlib.sha256(text.to_csv(index=False).encode("utf-8")).hexdigest()
    return RawTable(file=file, data=text, rows=pd.Series(range(2, len(df) + 2)), sha256=digest)


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value != value:
        return ""
    if value is pd.NaT or value is pd.NA:
        return ""
    if isinstance(value, (dt.datetime, pd.Timestamp)):
        return pd.Timestamp(value).isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _read_xlsx(path: Path, what: str) -> pd.DataFrame:
    file = str(path)
    try:
        from openpyxl import load_workbook

        wb = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many types for a corrupt file
        raise InputError(Problem(file, f"is not a readable .xlsx workbook ({type(exc).__name__})",
                                 hint="open it in Excel and save it again as .xlsx")) from None
    try:
        ws = wb.active or wb.worksheets[0]  # the sheet shown when the file was saved
        if getattr(ws, "sheet_state", "visible") != "visible":
            raise InputError(Problem(file, f"the active sheet '{ws.title}' of the {what} workbook is hidden",
                                     expected="the data on the visible sheet shown when the file is opened",
                                     hint="unhide the sheet or make the data sheet the active one, then save"))
        rows = _sheet_rows(ws, file, what)
    finally:
        wb.close()
    while rows and not any(rows[-1]):
        rows.pop()
    if not rows:
        raise InputError(Problem(file, f"the active sheet of the {what} workbook is empty",
                                 expected="a header row and data rows"))
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    return pd.DataFrame(rows[1:], columns=rows[0], dtype=str)
