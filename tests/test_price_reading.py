"""A price sheet without savings plans, capacity blocks or queued capacity (flex-start) skips their checks
(planner.inputs.validate): it reads to the same validated table as the same sheet with their columns present and
blank, which takes every check."""

from __future__ import annotations

import pandas as pd
import pytest

from planner.inputs.io import read_table
from planner.inputs.validate import Collector, validate_prices
from conftest import ROOT

SHEETS = ["example", "ladder", "flex", "quotas", "pooling"]
BLOCK_AND_SPEND_COLUMNS = ("block_start", "block_days", "provider", "plan_family")
QUEUE_COLUMNS = ("queue_hours_p50", "queue_hours_p90", "max_run_hours")
OPTIONAL_COLUMNS = BLOCK_AND_SPEND_COLUMNS + QUEUE_COLUMNS


def _raw(path):
    return read_table(path, "price sheet")


@pytest.mark.parametrize("sheet", SHEETS)
def test_a_sheet_without_blocks_or_savings_plans_reads_as_with_their_columns_blank(tmp_path, sheet):
    src = ROOT / "data" / sheet / "prices.csv"
    prices = pd.read_csv(src, dtype=str, keep_default_na=False)
    assert not prices["option"].str.contains("capacity_block|savings_plan").any()
    absent = [c for c in OPTIONAL_COLUMNS if c not in prices.columns]  # a short path's case
    assert set(BLOCK_AND_SPEND_COLUMNS) <= set(absent)
    wide = prices.assign(**{c: "" for c in absent})  # the columns present: every check runs
    wide.to_csv(tmp_path / "wide.csv", index=False)
    prices.to_csv(tmp_path / "narrow.csv", index=False)
    got = {}
    for name in ("narrow", "wide"):
        bad = Collector()
        got[name] = validate_prices(_raw(tmp_path / f"{name}.csv"), bad)
        assert not bad and got[name] is not None
    pd.testing.assert_frame_equal(got["narrow"], got["wide"])
    assert got["narrow"]["block_start"].isna().all() and got["narrow"]["plan_family"].eq("").all()


@pytest.mark.parametrize("column, value, message", [
    ("provider", "aws", "provider on a row that is not a capacity_block"),
    ("max_run_hours", "4", "max_run_hours on a row that is not queued capacity"),
    ("plan_family", "compute", "plan_family on a row that is not a savings plan")])
def test_a_column_of_a_kind_the_sheet_does_not_sell_is_still_reported(tmp_path, column, value, message):
    """The short paths are taken only when none of the kind's columns is there to check: a provider (a block's),
    a max_run_hours (queued capacity's) or a plan_family (a savings plan's) on an on-demand row is an error still."""
    prices = pd.read_csv(ROOT / "data" / "example" / "prices.csv", dtype=str, keep_default_na=False)
    assert not prices["option"].str.contains("capacity_block|flex|savings_plan").any()
    prices[column] = ""
    prices.loc[0, column] = value
    prices.to_csv(tmp_path / "p.csv", index=False)
    bad = Collector()
    validate_prices(_raw(tmp_path / "p.csv"), bad)
    assert [p.message for p in bad.problems] == [message]
