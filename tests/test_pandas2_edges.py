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


def test_a_nul_byte_is_found_in_the_text_naming_line_and_column(tmp_path):
    src = tmp_path / "c.csv"
    src.write_text("note\nInstanceType,Region,Price\nx,us-e\x00ast-1,1.5\ny,eu,2\nz,eu,3\x00\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        catalog_read._refuse_nul_lines(src, skip=1)
    text = str(err.value)
    assert f"{src}, row 3, column 'Region'" in text and f"{src}, row 5, column 'Price'" in text
    assert "NUL" in text and "row 4" not in text
    clean = tmp_path / "d.csv"
    clean.write_text("InstanceType,Region\nx,us-east-1\n", encoding="utf-8")
    catalog_read._refuse_nul_lines(clean, skip=0)  # nothing to refuse: returns


def test_a_date_pandas_cannot_hold_is_out_of_range_not_missing():
    values = pd.Series(["1500-09-01 00:00:00", "2400-01-01T00:00:00Z", "2024-09-01T00:00:00Z", "not a date", None])
    parsed = pd.Series(pd.to_datetime(["NaT", "NaT", "2024-09-01", "NaT", "NaT"], utc=True))  # as pandas 2 reads them
    assert outside_range(values, parsed).tolist() == [True, True, False, False, False]
    inside = pd.Series(pd.to_datetime(["1960-01-01", "2024-01-01"], utc=True))
    assert outside_range(pd.Series(["1960-01-01", "2024-01-01"]), inside).tolist() == [True, False]
    assert outside_range(pd.Series([], dtype=object), pd.Series([], dtype="datetime64[ns, UTC]")).dtype == np.bool_
