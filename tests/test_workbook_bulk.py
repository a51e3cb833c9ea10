"""Rows written in bulk (planner.report.workbook.bulk) are the rows xlsxwriter writes cell by cell: the same file,
every part byte for byte (the oracle is xlsxwriter itself, writing the same rows one cell at a time)."""

from __future__ import annotations

import math
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from planner.report.workbook import book as B
from planner.report.workbook import bulk


def _parts(path: Path) -> dict:
    """Every part of the .xlsx at ``path`` (its creation time taken out: the one part that differs by when)."""
    with zipfile.ZipFile(path) as z:
        out = {n: z.read(n) for n in z.namelist()}
    out["docProps/core.xml"] = re.sub(rb"<dcterms:(created|modified)[^<]*</dcterms:\w+>", b"", out["docProps/core.xml"])
    return out


def _same(a: Path, b: Path) -> None:
    pa, pb = _parts(a), _parts(b)
    assert list(pa) == list(pb)
    differ = [n for n in pa if pa[n] != pb[n]]
    assert differ == [], f"parts that differ: {differ}"


def _both(tmp_path: Path, write, monkeypatch, taken: list | None = None) -> tuple[Path, Path]:
    """``write(path)`` run with rows in bulk and again cell by cell: the two files. ``taken``: filled with the
    sheets whose rows went in bulk (so that a test also fails where nothing did)."""
    fast, slow = tmp_path / "bulk.xlsx", tmp_path / "cells.xlsx"
    add = bulk.add

    def spy(ws, *a, **k):
        out = add(ws, *a, **k)
        if taken is not None:
            taken.append(ws.get_name())
        return out

    monkeypatch.setattr(bulk, "add", spy)
    monkeypatch.setattr(B, "BULK", True)
    write(fast)
    monkeypatch.setattr(B, "BULK", False)
    write(slow)
    monkeypatch.setattr(bulk, "add", add)
    return fast, slow


def _synthetic(path: Path, blocks: list, long_text: bool = False) -> list:
    """A workbook of two sheets: rows before, between and after bulk rows, strings shared across the sheets,
    every kind of cell and every kind of missing cell. Returns what each extend wrote to (blocks kept)."""
    bk = B._Book(path)
    kept = []
    for name in ("Allocation", "Demand"):
        ws = bk.sheet(name)
        s = B._Sheet(ws, ["who", "when", "n", "formula", "price", "note"],
                     {"when": B.DATE, "n": B.NUM, "formula": B.USD, "price": B.RATE})
        s.header({"when": 18})
        s.append(["first row, cell by cell", B._date("2026-01-01"), 1.5, B.F("=C2*2", 3.0), 0, "x"])
        for cols in blocks:
            s.extend(cols)
            kept.append(list(ws.__dict__.get("planner_blocks", [])))
        s.append(["after", None, float("nan"), B.F("=C3+1", float("inf")), 2.25, None])
        if long_text:
            s.extend([bulk.Text(["y" * 20000]), bulk.Date([None]), bulk.Number([1.0]), bulk.Formula([None], [1.0]),
                      bulk.Formula([None], [2.0]), bulk.Text(["z"])])
        s.note("a note below the table")
        s.table(name.replace(" ", "_"))
    bk.wb.close()
    return kept


def _columns(n: int, start: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    rows = np.arange(start, start + n)
    who = [None if i % 7 == 3 else f"team-{i % 5}" for i in range(n)]  # repeats, and missing cells
    when = [None if i % 11 == 5 else B._date(f"2026-01-{1 + i % 28:02d} {i % 24:02d}:00") for i in range(n)]
    num = rng.normal(size=n) * 1e3
    num[::9] = np.nan  # no cell
    num[1::13] = np.inf
    num[2::17] = 0.1 + 0.2  # a float whose shortest repr has many digits
    val = rng.random(n) * 1e6
    val[::5] = np.nan  # cached empty
    texts = [f"=IF(C{r}>0,C{r}*2,0)" if i % 3 else f"=C{r}&\"<&>\"" for i, r in enumerate(rows)]
    price_text = [None if i % 4 == 0 else f"=Prices!$E${2 + i % 6}" for i in range(n)]
    price_val = rng.random(n)
    price_val[::8] = math.nan
    note = ["" if i % 10 == 0 else "n<&>\"q\"" for i in range(n)]
    return [bulk.Text(who), bulk.Date(when), bulk.Number(num), bulk.Formula(texts, val),
            bulk.Formula(price_text, price_val), bulk.Text(note)]


def test_bulk_rows_are_the_cells_xlsxwriter_writes_byte_for_byte(tmp_path, monkeypatch):
    """Two blocks per sheet (one of 40 rows, one of 3: rows of one 16-row span shared by a block, rows written
    cell by cell and a comment row), numbers not finite (no cell), missing text and dates, formulas calling IF with
    characters to escape, cached values missing, a number where a formula column has none, strings repeated
    across sheets (the shared-string table's order and counts): the same file both ways."""
    blocks = [_columns(40, 3, 1), _columns(3, 43, 2)]
    taken: list = []
    fast, slow = _both(tmp_path, lambda p: _synthetic(p, blocks), monkeypatch, taken)
    _same(fast, slow)
    assert taken == ["Allocation", "Allocation", "Demand", "Demand"]  # every block went in bulk
    with zipfile.ZipFile(fast) as z:
        sheet = z.read("xl/worksheets/sheet1.xml").decode()
    assert '<row r="20" spans="1:6">' in sheet and "IF(C20&gt;0,C20*2,0)" in sheet


def test_formats_first_met_in_bulk_rows_and_sheet_settings_made_after_them_are_written_as_cell_by_cell(
        tmp_path, monkeypatch):
    """A format's index is given when its first cell is written (row by row, left to right): bulk rows whose first
    row has no cell in a column, or a column with no cell at all, give them in the same order (and give none to an
    unused one). Settings made after the rows were given are read at close: a default row height, one bulk row's
    own height and a comment on another, Excel 2010's data bars (their rows carry a descent): the same file."""
    def write(path: Path) -> None:
        bk = B._Book(path)
        ws = bk.sheet("Allocation")
        s = B._Sheet(ws, ["a", "b", "c", "d"], {"a": B.NUM, "b": B.USD, "c": B.PCT, "d": B.RATE})
        s.extend([bulk.Number([math.nan, 1.0, 2.0]), bulk.Number([2.0, 3.0, math.nan]),
                  bulk.Number([math.nan] * 3), bulk.Formula([None, "=A2*2", None], [math.nan, 2.0, 0.5])])
        ws.set_default_row(20)
        ws.set_row(1, 30)
        ws.write_comment(2, 1, "a comment on a bulk row")
        ws.conditional_format(0, 0, 2, 0, {"type": "data_bar", "data_bar_2010": True})
        other = bk.sheet("Demand")  # a sheet of its own rows, with a row of no cell but a height
        t = B._Sheet(other, ["x"], {"x": B.INT})
        t.extend([bulk.Number([math.nan, 4.0])])
        other.set_row(0, 25)
        bk.wb.close()

    taken: list = []
    fast, slow = _both(tmp_path, write, monkeypatch, taken)
    assert taken == ["Allocation", "Demand"]
    _same(fast, slow)


@pytest.mark.parametrize("row", [1, 2])
def test_a_bulk_row_given_a_format_of_its_own_is_written_as_cell_by_cell(tmp_path, monkeypatch, row):
    """set_row with a format on a bulk row (the first, or one whose next row starts a column's cells): xlsxwriter
    gives the row's format its index before that row's cells', and styles the row's unformatted cells with it. The
    block (numbers, text, dates, formulas) is then handed to xlsxwriter's own table: the same file, formats' indices
    and all."""
    def write(path: Path) -> None:
        bk = B._Book(path)
        ws = bk.sheet("Allocation")
        s = B._Sheet(ws, ["a", "b", "t", "d", "f"], {"a": B.NUM, "b": B.USD, "d": B.DATE, "f": B.RATE})
        s.extend(columns)
        ws.set_row(row, 18, bk.wb.add_format({"italic": True}))
        bulk.add(ws, 5, [bulk.Number([0.0, 1.0]), bulk.Number([3.0, 4.0])], [None, None])  # cells of no format
        ws.set_row(6, None, bk.wb.add_format({"bold": True}))
        bk.wb.close()

    columns = [bulk.Number([0.0, 1.0, 2.0]), bulk.Number([math.nan, math.nan, 5.0]), bulk.Text(["x", None, "y&<"]),
               bulk.Date([B._date("2026-01-01 05:00"), "NaT", ""]),  # text read as no time: no cell
               bulk.Formula(['=IF(A2>0,"a&b",A2)', None, "=A4*2"], [1.0, 2.0, math.inf])]

    def write_cells(path: Path) -> None:  # the reference for the rows given to bulk.add directly: write_number
        bk = B._Book(path)
        ws = bk.sheet("Allocation")
        s = B._Sheet(ws, ["a", "b", "t", "d", "f"], {"a": B.NUM, "b": B.USD, "d": B.DATE, "f": B.RATE})
        s.extend(columns)
        ws.set_row(row, 18, bk.wb.add_format({"italic": True}))
        for r, (a, b) in enumerate([(0.0, 3.0), (1.0, 4.0)], start=5):
            ws.write_number(r, 0, a)
            ws.write_number(r, 1, b)
        ws.set_row(6, None, bk.wb.add_format({"bold": True}))
        bk.wb.close()

    monkeypatch.setattr(B, "BULK", True)
    write(tmp_path / "bulk.xlsx")
    monkeypatch.setattr(B, "BULK", False)
    write_cells(tmp_path / "cells.xlsx")
    _same(tmp_path / "bulk.xlsx", tmp_path / "cells.xlsx")


def test_rows_bulk_cannot_write_as_xlsxwriter_does_are_written_cell_by_cell(tmp_path, monkeypatch):
    """A string that may pass Excel's length (xlsxwriter truncates it, with a warning) is refused in bulk and written
    cell by cell: the same file, and nothing of the refused rows taken in (shared strings, dimensions)."""
    monkeypatch.setattr(B, "BULK", True)
    kept = _synthetic(tmp_path / "a.xlsx", [_columns(5, 3, 3)], long_text=True)
    assert len(kept[0]) == 1  # the first extend went in bulk
    bk = B._Book(tmp_path / "c.xlsx")
    ws = bk.sheet("Allocation")
    before = (dict(ws.str_table.string_table), ws.str_table.count, ws.dim_rowmax)
    with pytest.raises(bulk.Unsupported):
        bulk.add(ws, 1, [bulk.Text(["ok", "y" * 20000])], [None])
    assert (dict(ws.str_table.string_table), ws.str_table.count, ws.dim_rowmax) == before
    assert "planner_blocks" not in ws.__dict__
    bk.wb.close()
    fast, slow = _both(tmp_path, lambda p: _synthetic(p, [_columns(5, 3, 3)], long_text=True), monkeypatch)
    _same(fast, slow)


def test_cells_written_into_bulk_rows_are_refused_at_close(tmp_path):
    """A cell written into a row already given in bulk (a programming error: _Sheet writes past them) is refused
    when the sheet is written, not written twice."""
    import io

    ws = B._Book(tmp_path / "x.xlsx").sheet("Allocation")
    bulk.add(ws, 1, [bulk.Number(np.arange(3.0))], [None])
    ws.write_number(2, 0, 5.0)
    ws.fh = io.StringIO()
    with pytest.raises(RuntimeError, match="rows given in bulk"):
        bulk.write_rows(ws)


@pytest.mark.parametrize("model", ["example.toml", "price-paths.toml"])
def test_the_plan_workbook_is_the_same_file_with_rows_in_bulk(tmp_path, monkeypatch, request, model):
    """The planner's own workbook (Allocation and Demand in bulk; the price path's rows priced from their Prices
    rows), and the price-path model's again with Allocation summed to days (its rows priced at their mean) and Demand
    averaged: every part the same as written cell by cell."""
    from planner.pipeline.run import load_inputs, make_plan
    from planner.report import write_workbook
    from planner.report.workbook import periods

    if model == "example.toml":
        plan = request.getfixturevalue("example_plan")[0]  # (planned once for the session's tests)
    else:
        root = Path(__file__).resolve().parents[1]
        plan = make_plan(load_inputs(root / "models" / model), risk=False, shadow=False)  # (seconds less: its risk
        # view and shadow prices change no bulk row)
    taken: list = []
    fast, slow = _both(tmp_path, lambda p: write_workbook(plan, p), monkeypatch, taken)
    _same(fast, slow)
    assert taken == ["Allocation"] + ["Demand"] * len(plan.inputs.scenarios)  # both long sheets went in bulk
    if model == "example.toml":  # (the suite's time: the summed sheets once, on the model of two scenarios)
        return
    monkeypatch.setattr(periods, "MAX_SHEET_ROWS", 50)  # Allocation summed to days (or coarser)
    monkeypatch.setattr(periods, "MAX_PERIOD_ROWS", 20)  # Demand and Fleet averaged
    (tmp_path / "coarse").mkdir()
    taken.clear()
    fast, slow = _both(tmp_path / "coarse", lambda p: write_workbook(plan, p), monkeypatch, taken)
    _same(fast, slow)
    assert taken == ["Allocation"] + ["Demand"] * len(plan.inputs.scenarios)
    with zipfile.ZipFile(fast) as z:
        assert b"summed to" in b"".join(z.read(n) for n in z.namelist() if n.startswith("xl/sharedStrings"))


@pytest.mark.parametrize("fast", [True, False])
def test_columns_of_different_lengths_are_refused_both_ways(tmp_path, monkeypatch, fast):
    """Rows given as columns of 3 and 2 values: refused (no row of them written), in bulk or cell by cell alike."""
    monkeypatch.setattr(B, "BULK", fast)
    ws = B._Book(tmp_path / "x.xlsx").sheet("Allocation")
    s = B._Sheet(ws, ["a", "b"], {"a": B.NUM, "b": B.NUM})
    for cols, why in (([bulk.Number([1.0, 2.0, 3.0]), bulk.Number([1.0, 2.0])], "one value per row"),
                      ([bulk.Number([1.0, 2.0, 3.0]), bulk.Formula(["=1", "=2", "=3"], [1.0, 2.0])], "one value per row"),
                      ([bulk.Number([1.0, 2.0]), bulk.Formula(["=1", "=2"], [1.0, 2.0, 3.0])], "one value per row"),
                      ([bulk.Number([1.0]), bulk.Number([1.0]), bulk.Text(["p"])], "3 columns given for its 2")):
        with pytest.raises(ValueError, match=why):
            s.extend(cols)
    assert s.rows == 0 and not any(ws.table.values()) and "planner_blocks" not in ws.__dict__

