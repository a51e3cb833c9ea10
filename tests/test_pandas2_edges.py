"""What pandas 2 reads differently from pandas 3, which the planner must refuse alike on both (the forecast extra,
statsforecast, needs pandas < 3): a NUL byte ends a cell in pandas 2's CSV reader, and a date past its nanosecond
range (1677-2262) parses as missing. The checks are exercised here directly, whatever pandas runs the suite."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.core.errors import InputError
from planner.imports import catalog_read
from planner.imports.guards import outside_range


def test_a_nul_byte_is_found_in_the_data_naming_row_and_column_as_pandas_numbers_them(tmp_path):
    src = tmp_path / "c.csv"
    src.write_text("note \x00 in a preamble line, not read\nInstanceType,Re\x00gion,Price\nx,us-e\x00ast-1,1.5\n"
                   'y,"e\nu\x00",2\nz,eu,3\x00\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        catalog_read.refuse_nul_cells(src, skip=1)
    problems = err.value.problems
    assert [(p.row, p.column) for p in problems] == [(3, "Re\x00gion"), (4, "Re\x00gion"), (5, "Price")]
    assert problems[1].value == "e\nu\x00"  # a quoted cell over two lines: its own row, its whole value
    clean = tmp_path / "d.csv"
    clean.write_text("InstanceType,Region\nx,us-east-1\n", encoding="utf-8")
    catalog_read.refuse_nul_cells(clean)  # nothing to refuse: returns


def test_a_date_pandas_cannot_hold_is_out_of_range_not_missing():
    values = pd.Series(["1500-09-01 00:00:00", "2400-01-01T00:00:00Z", "2024-09-01T00:00:00Z", "not a date", None,
                        "1600/01/01", "Jan 1 2300", "2024-W36-1", "2024-13-01"])
    parsed = pd.Series(pd.to_datetime(["NaT", "NaT", "2024-09-01"] + ["NaT"] * 6, utc=True))  # as pandas 2 reads them
    assert outside_range(values, parsed).tolist() == [True, True, False, False, False, True, True, False, False]
    inside = pd.Series(pd.to_datetime(["1960-01-01", "2024-01-01"], utc=True))
    assert outside_range(pd.Series(["1960-01-01", "2024-01-01"]), inside).tolist() == [True, False]
    assert outside_range(pd.Series([], dtype=object), pd.Series([], dtype="datetime64[ns, UTC]")).dtype == np.bool_
