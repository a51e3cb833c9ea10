"""planner.core.csvwrite writes the text pandas' to_csv writes, byte for byte (the oracle: pandas itself)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.core.csvsafe import inert_frame
from planner.core.csvwrite import write_csv


def _pandas(frame, path, float_format="%.10g"):
    frame.to_csv(path, index=False, float_format=float_format)
    return path.read_bytes()


def _ours(frame, path, **kw):
    write_csv(frame, path, **kw)
    return path.read_bytes()


def _awkward(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    floats = rng.choice([0.0, -0.0, 1.0, 1 / 3, 2 / 3 * 1e15, 1e-12, 123456789.123456, np.nan, np.inf, -np.inf,
                         1e300, -5e-324, 0.1 + 0.2, 1e10, 12345678901.0], size=n)
    labels = ["plain", "with,comma", 'with "quote"', "line\nbreak", "cr\rhere", "", " spaced ", "=SUM(A1)", "-1",
              "+x", "@y", "\ttab", "naïve ✓", "a;b"]
    text = np.array(rng.choice(labels, size=n), dtype=object)
    text[rng.random(n) < 0.1] = None
    return pd.DataFrame({"f": floats, "g": rng.normal(size=n) * 10.0 ** rng.integers(-8, 12, size=n),
                         "i": rng.integers(-10**12, 10**12, size=n), "b": rng.random(n) < 0.5,
                         "t": pd.Series(text, dtype=object), "s": pd.Series(text).astype("string"), "p": pd.Series(text, dtype="str"),
                         "c": pd.Categorical(rng.choice(labels[:5], size=n)),
                         "u": rng.integers(0, 2**63, size=n, dtype=np.uint64)})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_awkward_tables_are_written_as_pandas_writes_them(tmp_path, seed):
    frame = _awkward(3_000, seed)
    assert _ours(frame, tmp_path / "a.csv", chunk_rows=700) == _pandas(frame, tmp_path / "b.csv")


def test_text_made_inert_matches_pandas_over_the_inert_frame(tmp_path):
    frame = _awkward(2_000, 5)
    ours = _ours(frame, tmp_path / "a.csv", inert=True)
    assert ours == _pandas(inert_frame(frame), tmp_path / "b.csv")
    assert b"'=SUM(A1)" in ours and b"\n=SUM" not in ours and b",=SUM" not in ours


@pytest.mark.parametrize("fmt", ["%.10g", "%.6g", "%.3f", "%g"])
def test_every_float_format(tmp_path, fmt):
    frame = _awkward(500, 9)
    assert _ours(frame, tmp_path / "a.csv", float_format=fmt) == _pandas(frame, tmp_path / "b.csv", fmt)


def test_tables_it_does_not_cover_are_written_by_pandas(tmp_path):
    mixed = pd.DataFrame({"a": pd.Series(["x", 1.5, None], dtype=object), "b": [1.0, 2.0, np.nan]})
    one = pd.DataFrame({"a": ["", "=x", "y"]})
    dates = pd.DataFrame({"d": pd.to_datetime(["2027-01-01 00:00", "2027-01-02 03:00", None]), "x": [1.0, 2.0, 3.0]})
    nullable = pd.DataFrame({"n": pd.array([1, None, 3], dtype="Int64"), "x": [1.0, 2.0, 3.0]})
    for frame in (mixed, one, dates, nullable):
        assert _ours(frame, tmp_path / "a.csv") == _pandas(frame, tmp_path / "b.csv")
    # the text rule still applies on pandas' path
    assert _ours(one, tmp_path / "a.csv", inert=True) == _pandas(inert_frame(one), tmp_path / "b.csv")
    assert b"'=x" in (tmp_path / "a.csv").read_bytes()


def test_empty_table_and_chunks_of_one_row(tmp_path):
    frame = _awkward(7, 3)
    assert _ours(frame.iloc[:0], tmp_path / "a.csv") == _pandas(frame.iloc[:0], tmp_path / "b.csv")
    assert _ours(frame, tmp_path / "a.csv", chunk_rows=1) == _pandas(frame, tmp_path / "b.csv")


def test_header_names_are_quoted_as_pandas_quotes_them(tmp_path):
    frame = pd.DataFrame([[1.0, "a", 2]], columns=["x,y", 'say "hi"', 7])
    assert _ours(frame, tmp_path / "a.csv") == _pandas(frame, tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_text().splitlines()[0] == '"x,y","say ""hi""",7'


def test_chunk_sizes_below_one_write_every_row(tmp_path):
    frame = pd.DataFrame({"f": [0.5, 1 / 3, 2.0], "t": ["a", "b", "c"]})
    for size in (0, -1):
        assert _ours(frame, tmp_path / "a.csv", chunk_rows=size) == _pandas(frame, tmp_path / "b.csv")


def test_cells_that_cannot_be_hashed_are_written_by_pandas(tmp_path):
    frame = pd.DataFrame({"t": pd.Series([[1], {"a": 2}, "=x"], dtype=object), "x": [1.0, 2.0, np.nan]})
    assert _ours(frame, tmp_path / "a.csv") == _pandas(frame, tmp_path / "b.csv")
    assert _ours(frame, tmp_path / "a.csv", inert=True) == _pandas(inert_frame(frame), tmp_path / "b.csv")


def test_missing_and_odd_column_labels_as_pandas_writes_them(tmp_path):
    frame = pd.DataFrame([[1.0, 2.0, "a", 3]], columns=[None, np.nan, 1 / 3, pd.Timestamp("2027-01-04")])
    assert _ours(frame, tmp_path / "a.csv") == _pandas(frame, tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_text().splitlines()[0].startswith(",,")


@pytest.mark.parametrize("fmt", ["%.3f,", 'x"%g', "%.2f\n", None, "{:.3f}".format, "%s", "%r"])
def test_float_formats_beyond_one_conversion_go_to_pandas(tmp_path, fmt):
    frame = pd.DataFrame({"f": [1 / 3, np.nan, 2.5], "t": ["a", "b", "c"]})
    assert _ours(frame, tmp_path / "a.csv", float_format=fmt) == _pandas(frame, tmp_path / "b.csv", fmt)
