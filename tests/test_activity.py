"""The activity held as spans (planner.inputs.activity) reads exactly as the dense array it stands for."""

import numpy as np
import pandas as pd
import pytest

from planner.inputs.activity import Spans, compact, matvec, spans_of, take_periods, take_rows


def _random_dense(rng, R, T):
    """Rows of the spans' form: a share of a first period, 1 between, a share of a last (some never active,
    some one period long, some running past either end)."""
    out = np.zeros((R, T))
    for r in range(R):
        lo, hi = sorted(rng.integers(-3, T + 3, size=2))
        if rng.random() < 0.1:
            continue  # never active
        for t in range(max(lo, 0), min(hi, T - 1) + 1):
            out[r, t] = 1.0
        if 0 <= lo < T:
            out[r, lo] = rng.choice([1.0, rng.random(), 1 / 3])
        if 0 <= hi < T and hi != lo:
            out[r, hi] = rng.choice([1.0, rng.random(), 2 / 3])
    return out


@pytest.mark.parametrize("seed", range(6))
def test_spans_read_as_the_array_reads_on_every_indexing_the_planner_uses(seed):
    rng = np.random.default_rng(seed)
    R, T = int(rng.integers(1, 30)), int(rng.integers(1, 40))
    dense = _random_dense(rng, R, T)
    a = spans_of(dense)
    assert a is not None and a.shape == dense.shape and len(a) == R
    rows = rng.integers(0, R, size=7)
    cols = rng.integers(0, T, size=7)
    mask_r, mask_t = rng.random(R) < 0.5, rng.random(T) < 0.5
    keys = [slice(None), 0, -1, rows, mask_r, (slice(None), cols), (rows, cols), (rows[0], cols), (rows, cols[0]),
            (slice(None), slice(2, 9)), (rows, slice(None)), (slice(1, None, 2), -1), (slice(None), mask_t),
            (rows[:, None], cols[None, :]), (int(rows[0]), int(cols[0])), (mask_r, slice(None)),
            (slice(None), np.arange(T)[::3])]
    for key in keys:
        want = dense[key]
        got = a[key]
        assert np.shape(got) == np.shape(want), key
        assert np.array_equal(got, want), key
    one = a[int(rows[0]), int(cols[0])]
    assert type(one) is type(dense[int(rows[0]), int(cols[0])]) and f"{one:.3f}" == f"{dense[rows[0], cols[0]]:.3f}"
    v = rng.random(T)
    assert np.array_equal(a @ v, dense @ v)
    assert np.array_equal(matvec(a, v), matvec(dense, v))
    assert np.array_equal(np.asarray(a), dense) and np.array_equal(a.astype(float), dense)
    assert np.array_equal(take_rows(a, rows).dense(), dense[rows])
    assert np.array_equal(take_rows(a, mask_r).dense(), dense[mask_r])
    lo, hi = sorted(rng.integers(0, T + 1, size=2))
    w = take_periods(a, np.arange(lo, hi))
    assert isinstance(w, Spans) and np.array_equal(w.dense(), dense[:, lo:hi])
    assert np.array_equal(take_periods(a, np.arange(0, T, 2)), dense[:, ::2])


def test_an_activity_not_of_the_spans_form_stays_the_array_it_was():
    dense = np.array([[0.0, 0.5, 1.0, 0.5, 1.0]])  # a share strictly inside: not a span
    assert spans_of(dense) is None and compact(dense) is dense
    assert isinstance(compact(np.array([[0.0, 0.25, 1.0, 1.0, 0.5]])), Spans)
    assert Spans.full(3, 4).equals(np.ones((3, 4)))
    for R, T in [(0, 5), (3, 0), (0, 0)]:  # no rows, no periods
        empty = compact(np.zeros((R, T)))
        assert isinstance(empty, Spans) and np.asarray(empty).shape == (R, T) and (empty @ np.ones(T)).shape == (R,)
    assert not Spans.full(3, 4).equals(np.ones((3, 5)))


def test_spans_refuse_indexing_they_do_not_stand_for_and_are_small():
    a = Spans.full(1700, 26280)
    with pytest.raises(TypeError):
        a[..., 0]
    with pytest.raises(IndexError):
        a[1700]
    assert a.nbytes == 1700 * 32  # four numbers a row, not 1700 x 26280 floats (357 MB)


def test_the_commitments_table_of_a_three_year_ladder_holds_its_activity_as_spans():
    """A monthly ladder of 1- and 3-year terms with a lead time and a capacity block: the table's activity is
    spans, equal value for value to the overlap of each row's dates with the periods."""
    from planner.inputs import commitments, ladder

    periods = pd.date_range("2027-01-01", periods=3 * 8760 // 24, freq="24h")
    hours = np.full(len(periods), 24.0)
    options = pd.DataFrame({
        "pool": [0, 0, 0], "option": ["1y", "3y", "blk"], "kind": ["instance", "instance", "window"],
        "gpu_type": "H100", "region": "r", "term_months": [12.0, 36.0, 0.5], "hourly_usd": [2.0, 1.5, 3.0],
        "upfront_usd": 0.0, "residual_usd": 0.0, "r": [2.0, 1.5, 3.0], "m": 8.0, "gpus_per_instance": 8.0,
        "lead_time_months": [0.0, 1.5, 0.0], "valid_from": pd.NaT,
        "block_start": [pd.NaT, pd.NaT, pd.Timestamp("2027-03-10 12:00")], "block_days": [np.nan, np.nan, 14.0],
        "max_gpus": [np.nan, np.nan, 64.0], "provider": "aws", "resale_haircut": np.nan, "plan_family": "",
    })
    dates = ladder.purchase_periods(periods, "monthly", None)
    try:
        table, active = commitments.purchase_table(options, periods, hours, dates, strict=False)
    except (KeyError, ValueError) as exc:  # the option table's typed columns are the module's to say
        pytest.skip(f"hand-made option table not accepted here: {exc}")
    assert isinstance(active, Spans)
    want = ladder.overlap_hours(table["active_from"], table["end_date"], periods, hours) / hours[None, :]
    want = np.where(want > 1 - 1e-12, 1.0, np.where(want < 1e-12, 0.0, want))
    assert np.array_equal(active.dense(), want)


def test_reads_in_blocks_of_rows_cover_every_row(monkeypatch):
    """``@`` and ``equals`` read in blocks of rows: every block is read (the last one too), and a difference in
    the last row is seen; non-consecutive periods are never taken for a window."""
    import planner.inputs.activity as activity

    monkeypatch.setattr(activity, "ROWS_PER_READ", 10)  # two rows a block at T = 5
    dense = _random_dense(np.random.default_rng(7), 9, 5)
    a = spans_of(dense)
    v = np.arange(1.0, 6.0)
    assert np.allclose(a @ v, dense @ v, rtol=0, atol=1e-12) and (a @ v).shape == (9,)
    off = dense.copy()
    off[-1, 2] = 0.5 if off[-1, 2] != 0.5 else 0.25
    assert a.equals(dense) and not a.equals(off)
    assert spans_of(np.vstack([dense[:-1], [[0.0, 0.5, 1.0, 0.5, 1.0]]])) is None
    shuffled = take_periods(a, np.array([0, 2, 1, 3]))
    assert not isinstance(shuffled, Spans) and np.array_equal(shuffled, dense[:, [0, 2, 1, 3]])
    assert np.array_equal(a > 0, dense > 0) and np.array_equal(a == 0, dense == 0)
    with pytest.raises(ValueError):
        bool(a)
    with pytest.raises(TypeError):
        take_rows(a, 1)
