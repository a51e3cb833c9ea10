"""The table helpers the outputs read large per-period tables through (planner.core.frames), inert CSV text read
through its distinct values (planner.core.csvsafe), and the showback tables computed once per write
(planner.report.showback.kept). Oracles: the plain per-row pandas operations they replace."""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.core.csvsafe import inert_frame, inert_text
from planner.core.frames import lookup, time_text


def test_time_text_is_strftime_row_by_row_with_missing_kept():
    t = pd.Series(pd.to_datetime(["2027-01-04 00:00", "2027-02-01 13:00", None, "2027-01-04 00:00"]))
    got = time_text(t, "%Y-%m-%dT%H:%M")
    want = t.dt.strftime("%Y-%m-%dT%H:%M")
    assert got[[0, 1, 3]].tolist() == want[[0, 1, 3]].tolist() == ["2027-01-04T00:00", "2027-02-01T13:00",
                                                                   "2027-01-04T00:00"]
    assert pd.isna(got[2]) and pd.isna(want[2])
    assert time_text(pd.DatetimeIndex(t.dropna()), "%Y-%m").tolist() == ["2027-01", "2027-02", "2027-01"]


def test_lookup_is_map_as_floats_with_nan_for_the_unknown():
    s = pd.Series(["base", "high", "base", "other", None], dtype="string")
    got = lookup(s, {"base": 0.25, "high": 0.75})
    want = s.astype(object).map({"base": 0.25, "high": 0.75}).astype(float).to_numpy()
    assert np.array_equal(got, want, equal_nan=True)
    assert got.tolist()[:3] == [0.25, 0.75, 0.25] and np.isnan(got[3]) and np.isnan(got[4])


def test_inert_frame_is_the_row_by_row_rule_and_leaves_harmless_columns_alone():
    f = pd.DataFrame({"a": ["x", "=cmd", None, "x"], "b": [1.0, 2.0, 3.0, 4.0],
                      "c": pd.Series(["u", "v", "w", "u"], dtype="string"),
                      "d": pd.Series(["-1", "+v", None, "@x"], dtype="string"), "e": [pd.Timestamp("2027-01-01"), "x", 3, "\tz"]})
    got = inert_frame(f)

    def cells(s):
        return [None if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA else v for v in s]

    for col in f.columns:
        want = f[col] if col == "b" else f[col].map(inert_text)
        assert cells(got[col]) == cells(want), col
    assert got["a"].tolist()[1] == "'=cmd" and got["d"].tolist()[0] == "'-1" and got["e"].tolist()[3] == "'\tz"
    assert cells(got["c"]) == ["u", "v", "w", "u"]
    assert f["a"].tolist()[1] == "=cmd"  # the caller's frame is not changed


def test_showback_is_computed_once_inside_kept_and_afresh_outside(example_plan):
    from planner.report import showback

    plan, _paths = example_plan
    calls = []
    real = showback._by_class

    def counting(p, owned):
        calls.append(owned)
        return real(p, owned)

    showback._by_class = counting
    try:
        with showback.kept(plan):
            a, b = showback.by_class(plan), showback.by_class(plan)
            c = showback.by_class(plan, owned=True)
            a.loc[0, "total_usd"] = -1.0  # a caller's copy: the kept table is not changed
            assert showback.by_class(plan).loc[0, "total_usd"] == b.loc[0, "total_usd"] != -1.0
        assert calls == [False, True]
        showback.by_class(plan)
        showback.by_class(plan)
        assert calls == [False, True, False, False]  # outside a block: every call computes
        assert len(c) >= len(b)
    finally:
        showback._by_class = real


def test_inert_frame_writes_the_csv_the_row_by_row_rule_writes():
    def old(frame):  # the rule before it read distinct values: every text column mapped cell by cell
        out = frame.copy()
        for col in out.columns:
            if not (pd.api.types.is_numeric_dtype(out[col]) or pd.api.types.is_bool_dtype(out[col])):
                out[col] = out[col].map(inert_text)
        return out

    f = pd.DataFrame({"num_obj": pd.Series([0.1 + 0.2, 1.0, 2.5], dtype=object),
                      "mixed": pd.Series([0.1 + 0.2, "x", None], dtype=object),
                      "text_obj": pd.Series(["a", "b", "a"], dtype=object),
                      "text_nan": pd.Series(["a", None, "=b"], dtype=object),
                      "nan_obj": pd.Series([None, None, None], dtype=object),
                      "string": pd.Series(["u", None, "v"], dtype="string"),
                      "when": pd.to_datetime(["2027-01-04", None, "2027-01-05"]),
                      "cat": pd.Categorical(["p", "q", "p"]), "x": [0.1 + 0.2, 1.0, 2.0]})
    got = inert_frame(f).to_csv(index=False, float_format="%.10g")
    assert got == old(f).to_csv(index=False, float_format="%.10g")
    assert "0.3," in got.splitlines()[1] and "'=b" in got  # numbers held as objects formatted; formulas inert


def test_inert_frame_reads_columns_by_position_so_two_may_share_a_name():
    f = pd.DataFrame([["=a", "b", 1.0], ["c", "+d", 2.0]], columns=["x", "x", "y"])
    got = inert_frame(f)
    assert got.columns.tolist() == ["x", "x", "y"]
    assert got.values.tolist() == [["'=a", "b", 1.0], ["c", "'+d", 2.0]]
    assert f.values.tolist() == [["=a", "b", 1.0], ["c", "+d", 2.0]]  # the caller's frame unchanged
    assert got.to_csv(index=False, float_format="%.10g") == "x,x,y\n'=a,b,1\nc,'+d,2\n"
