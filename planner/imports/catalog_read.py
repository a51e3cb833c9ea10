"""Reading the catalogs' files as text, and turning their cells into numbers with every bad cell named.

Each reader of ``planner prices import`` reads through here, so a bad file is reported the planner's way
(:class:`~planner.core.errors.InputError`: file, row, column, value, expected; exit 2): rows are numbered as the
file's lines are (a CSV's header line is its own number, the first data row the next), JSON list entries
from 1. A file whose name ends in ``.gz`` is read through gzip (every format); one that is not gzip data, or
is damaged, exits 2 "not a gzip file" naming it.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.csvscan import NUL_EXPECTED, refuse_nul_text
from planner.core.errors import Collector, InputError, Problem

MAX_PER_CHECK = 10
GZIP_MAGIC = b"\x1f\x8b"
GZIP_ERRORS = (gzip.BadGzipFile, zlib.error, EOFError)


def is_gzip_name(path: str | Path) -> bool:
    """True when ``path`` is named as a gzip file (``.gz``)."""
    return str(path).lower().endswith(".gz")


def not_gzip(path: str | Path, detail: str = "") -> InputError:
    """The error for a ``.gz`` file that is not (whole) gzip data."""
    return InputError(Problem(str(path), "not a gzip file" + (f" ({detail})" if detail else ""),
                              expected="gzip-compressed data (the name ends in .gz), or the plain file without .gz"))


def check_gzip(path: str | Path) -> None:
    """Exit 2 "not a gzip file" when ``path`` is named ``.gz`` but does not start with the gzip magic bytes."""
    if is_gzip_name(path):
        with open(path, "rb") as f:
            head = f.read(2)
        if head != GZIP_MAGIC:
            raise not_gzip(path, "it does not start with the gzip signature 1f 8b")


def open_text(path: str | Path):
    """``path`` opened as UTF-8 text (a BOM dropped), through gzip when it is named ``.gz``."""
    check_gzip(path)
    if is_gzip_name(path):
        return gzip.open(path, "rt", encoding="utf-8-sig", errors="replace")
    return open(path, encoding="utf-8-sig", errors="replace")


def read_csv(path: str | Path, skip: int = 0, usecols=None, chunksize: int | None = None, keep=None) -> pd.DataFrame:
    """A CSV as text ("" for blank), with a ``_row`` column: the line number of each row in the file.

    ``skip`` lines come before the header (the AWS Price List has 5). ``usecols`` limits the columns read;
    ``keep(frame) -> mask`` filters each chunk of ``chunksize`` rows as it is read (a Price List is gigabytes).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(Problem(str(path), "no such file", expected="a catalog file"))
    check_gzip(path)
    if not PANDAS_KEEPS_NUL:
        refuse_nul_cells(path, skip)
    try:
        reader = pd.read_csv(path, skiprows=skip, compression="infer", dtype=str, keep_default_na=False, skip_blank_lines=False,
                             usecols=(lambda c: c in usecols) if usecols else None, chunksize=chunksize or 10**9,
                             encoding="utf-8-sig")
        parts, start = [], skip + 2
        with reader:
            for chunk in reader:
                chunk.columns = [str(c).strip() for c in chunk.columns]
                chunk["_row"] = np.arange(start, start + len(chunk))
                start += len(chunk)
                chunk = chunk[chunk.drop(columns="_row").ne("").any(axis=1)]
                _refuse_nul(chunk, path)
                parts.append(chunk[keep(chunk)] if keep is not None else chunk)
    except GZIP_ERRORS as exc:
        raise not_gzip(path, f"damaged: {exc}") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(Problem(str(path), f"not a readable CSV file: {exc}", row=None,
                                 expected="a CSV file with one header line")) from None
    if not parts:
        raise InputError(Problem(str(path), "the file is empty", row=1, expected="a header line and data rows"))
    return pd.concat(parts, ignore_index=True)


def _refuse_nul(chunk: pd.DataFrame, path: Path) -> None:
    """Exit 2 naming file, row and column of every cell holding a NUL byte (at most 20)."""
    problems = []
    for col in chunk.columns.drop("_row"):
        hit = chunk[col].str.contains("\x00", regex=False).fillna(False).to_numpy(bool)
        problems += [Problem(str(path), "a NUL byte in the cell", row=int(r), column=col, value=v,
                             expected=NUL_EXPECTED)
                     for r, v in zip(chunk.loc[hit, "_row"].head(20), chunk.loc[hit, col].head(20))]
    if problems:
        raise InputError(problems[:20])


def _keeps_nul() -> bool:
    """Whether pandas' CSV reader keeps a NUL byte in a cell (pandas 3) or ends the cell there (pandas 2: "us-e\\0ast-1"
    read as "us-e", silently)."""
    import io

    return pd.read_csv(io.StringIO("a\nx\x00y\n"), dtype=str)["a"].iat[0] == "x\x00y"


PANDAS_KEEPS_NUL = _keeps_nul()


def refuse_nul_cells(path: Path, skip: int = 0) -> None:
    """Exit 2 naming file, row and column of every data cell holding a NUL byte (at most 20), read with Python's
    own CSV reader (:func:`planner.core.csvscan.refuse_nul_text`: a quoted cell may span lines; rows numbered as
    pandas' are, the ``skip`` lines before the header not read): where pandas would cut the cell at it
    (:data:`PANDAS_KEEPS_NUL`), so both pandas refuse alike."""
    with open_text(path) as f:
        refuse_nul_text(f, str(path), skip)


def header_line(path: str | Path, skip: int = 0) -> list[str]:
    """The column names on line ``skip + 1`` of a CSV (to check them before reading a large file)."""
    try:
        with open_text(path) as f:
            for _ in range(skip):
                f.readline()
            line = f.readline()
    except GZIP_ERRORS as exc:
        raise not_gzip(path, f"damaged: {exc}") from None
    return [c.strip().strip('"') for c in line.rstrip("\r\n").split(",")]


def require_columns(file: str, columns, needed, header_row: int) -> None:
    """Exit 2 naming every column of ``needed`` that ``columns`` lacks."""
    missing = [c for c in needed if c not in set(columns)]
    if missing:
        raise InputError([Problem(file, f"missing column '{c}'", row=header_row, column=c,
                                  expected="columns " + ", ".join(needed)) for c in missing])


def numbers(frame: pd.DataFrame, col: str, file: str, bad: Collector, *, blank_ok: bool, low: float = 0.0,
            strictly_above: bool = False, expected: str = "a number", mask=None) -> pd.Series:
    """Column ``col`` as floats (NaN where blank); every other non-number, or value at or below ``low``
    (below it unless ``strictly_above``), is reported to ``bad`` with its row. ``mask`` limits the rows checked."""
    text = frame[col].astype(str).str.strip().str.lstrip("$") if col in frame else pd.Series("", index=frame.index)
    value = pd.to_numeric(text, errors="coerce").astype(float)
    check = pd.Series(True, index=frame.index) if mask is None else mask
    out_of_range = value.le(low) if strictly_above else value.lt(low)
    wrong = check & ((text.ne("") & (value.isna() | ~np.isfinite(value) | out_of_range)) | (text.eq("") & (not blank_ok)))
    for i in np.flatnonzero(wrong.to_numpy())[:MAX_PER_CHECK]:
        cell = text.iloc[i]
        bad.add(file, "blank cell" if cell == "" else "not a valid number", row=_row(frame, i), column=col,
                value=cell if cell != "" else None, expected=expected)
    if wrong.sum() > MAX_PER_CHECK:
        bad.add(file, f"{int(wrong.sum()) - MAX_PER_CHECK} more rows with the same problem", column=col)
    return value.where(~wrong)


def _row(frame: pd.DataFrame, i: int):
    return int(frame["_row"].iloc[i]) if "_row" in frame else i + 1


def load_json(path: str | Path):
    """A JSON file's content; exit 2 naming the file and line when it is missing or not JSON."""
    path = Path(path)
    if not path.is_file():
        raise InputError(Problem(str(path), "no such file", expected="a JSON file"))
    check_gzip(path)
    try:
        if is_gzip_name(path):
            with gzip.open(path, "rb") as f:
                raw = f.read()
        else:
            raw = path.read_bytes()
    except GZIP_ERRORS as exc:
        raise not_gzip(path, f"damaged: {exc}") from None
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise InputError(Problem(str(path), f"not valid JSON: {exc.msg}", row=exc.lineno,
                                 expected="a JSON document as the API returns it")) from None
    except UnicodeDecodeError:
        raise InputError(Problem(str(path), "not UTF-8 text", expected="a JSON document")) from None
    except RecursionError:
        raise InputError(Problem(str(path), "JSON nested too deeply to read",
                                 expected="a JSON document as the API returns it (a few levels deep)")) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise InputError(Problem(str(path), f"not readable JSON: {exc}",
                                 expected="a JSON document as the API returns it")) from None
