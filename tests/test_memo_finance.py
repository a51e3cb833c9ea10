"""Issue 35: a memo finance can edit and still sign. Each tranche's own figures on Purchases against a hand
stack, payment options placed on their own row (savings plans present) and their break-even rate, sign-now
lines carrying the whole commitment."""

from __future__ import annotations

import pandas as pd
import pytest
from openpyxl import load_workbook

from planner import load_inputs, make_plan
from planner.pipeline import write_outputs

from test_memo import H, two_tranches


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory):
    folder = tmp_path_factory.mktemp("memo_finance")
    plan = make_plan(load_inputs(two_tranches(folder)), mip_gap=0.0)
    return plan, write_outputs(plan, folder / "out")


def sheet(path, name: str) -> pd.DataFrame:
    ws = load_workbook(path, data_only=True)[name]
    rows = list(ws.iter_rows(values_only=True))
    return pd.DataFrame(rows[1:], columns=rows[0]).dropna(how="all")


def test_purchases_show_each_tranches_own_use_against_a_hand_stack(tiny_book):
    # stacked by hand (tests/test_memo.py): 4 owned GPUs first, then tranche 1 (Jan 25), then tranche 2 (Feb 1):
    # tranche 1 uses 100 of 112 GPU-days (lowest day 50 %), tranche 2 44 of 56 (lowest 50 %, highest 100 %);
    # the pool's own figure, 144 / 168 for both, is what the sheet showed before
    plan, paths = tiny_book
    p = sheet(paths["xlsx"], "Purchases")
    p = p[p["instances"] > 0].reset_index(drop=True)
    assert len(p) == 2
    assert list(p["avg_utilisation"]) == pytest.approx([100 / 112, 44 / 56])
    assert list(p["min_utilisation"]) == pytest.approx([0.5, 0.5])
    assert list(p["max_utilisation"]) == pytest.approx([1.0, 1.0])
    od, eff, gpus = 10.0, 2.0, 8
    assert list(p["monthly_savings_usd"]) == pytest.approx([(u * od - eff) * gpus * 730 for u in (100 / 112, 44 / 56)])
    assert list(p["break_even_utilisation"]) == pytest.approx([0.2, 0.2])
    # no spot in this pool: buying nothing rents on demand, so its break-even is the on-demand one
    assert list(p["break_even_vs_nothing"]) == pytest.approx([0.2, 0.2])
    assert p["break_even_vs_spot"].isna().all()
