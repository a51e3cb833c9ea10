"""A price sheet without savings plans or capacity blocks skips their checks (planner.inputs.validate): it reads to
the same validated table as the same sheet with their columns present and blank, which takes every check."""

from __future__ import annotations

import pandas as pd
import pytest

from planner.inputs.io import read_table
from planner.inputs.validate import Collector, validate_prices
from conftest import ROOT

SHEETS = ["example", "ladder", "flex", "quotas", "pooling"]
BLOCK_AND_SPEND_COLUMNS = ("block_start", "block_days", "provider", "plan_family")


def _raw(path):
    return read_table(path, "price sheet")


@pytest.mark.parametrize("sheet", SHEETS)
def test_a_sheet_without_blocks_or_savings_plans_reads_as_with_their_columns_blank(tmp_path, sheet):
    src = ROOT / "data" / sheet / "prices.csv"
    prices = pd.read_csv(src, dtype=str, keep_default_na=False)
    assert not prices["option"].str.contains("capacity_block|savings_plan").any()
    assert not set(BLOCK_AND_SPEND_COLUMNS) & set(prices.columns)  # the short path's case
    wide = prices.assign(**{c: "" for c in BLOCK_AND_SPEND_COLUMNS})  # the columns present: every check runs
    wide.to_csv(tmp_path / "wide.csv", index=False)
    prices.to_csv(tmp_path / "narrow.csv", index=False)
    got = {}
    for name in ("narrow", "wide"):
        bad = Collector()
        got[name] = validate_prices(_raw(tmp_path / f"{name}.csv"), bad)
        assert not bad and got[name] is not None
    pd.testing.assert_frame_equal(got["narrow"], got["wide"])
    assert got["narrow"]["block_start"].isna().all() and got["narrow"]["plan_family"].eq("").all()


def test_a_block_column_on_a_sheet_without_blocks_is_still_reported(tmp_path):
    """The short path is taken only when no block column is there to check: a provider on an on-demand row is an
    error still."""
    prices = pd.read_csv(ROOT / "data" / "example" / "prices.csv", dtype=str, keep_default_na=False)
    prices["provider"] = ""
    prices.loc[0, "provider"] = "aws"
    prices.to_csv(tmp_path / "p.csv", index=False)
    bad = Collector()
    validate_prices(_raw(tmp_path / "p.csv"), bad)
    assert [p.message for p in bad.problems] == ["provider on a row that is not a capacity_block"]

