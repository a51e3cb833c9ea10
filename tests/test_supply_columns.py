"""The supply registry's declared price-sheet columns hold: for every kind a price-sheet option spells, a row that
fills a column its kind forbids, or leaves blank one it requires, is refused (exit 2) naming that column.

The registry declares (``Supply.required`` / ``Supply.forbidden``); the validator enforces. This test is the
contract between the two: a new kind, or a new column on a kind, that the validator does not enforce fails here.
"""

from __future__ import annotations

import pandas as pd
import pytest

from planner import load_inputs
from planner.core.errors import InputError
from planner.inputs import supply
from conftest import write_case

# a value each column accepts on the kinds that may carry it
VALUE = {"hourly_usd": 1.5, "upfront_usd": 100.0, "term_months": 12, "interruptions_per_hour": 0.05,
         "valid_from": "2027-01-01", "lead_time_months": 1, "residual_usd": 10.0, "resale_haircut": 0.1,
         "guarantees_capacity": "false", "block_start": "2027-01-04T00:00", "block_days": 1, "provider": "aws",
         "queue_hours_p50": 2.0, "queue_hours_p90": 4.0, "scenario": "base"}
# a complete row of each kind (its required columns and what it needs besides)
ROW = {"on_demand": dict(option="on_demand", hourly_usd=3.0),
       "spot": dict(option="spot", hourly_usd=1.0, interruptions_per_hour=0.05),
       "flex_start": dict(option="flex_start", hourly_usd=1.5, queue_hours_p50=2.0, queue_hours_p90=4.0),
       "instance": dict(option="reserved", hourly_usd=1.8, term_months=12),
       "window": dict(option="capacity_block", hourly_usd=2.0, block_start="2027-01-04T00:00", block_days=1),
       "spend": dict(option="savings_plan", hourly_usd=2.0, term_months=12)}
KINDS = [s for s in supply.SUPPLIES if s.pattern]


def _sheet(tmp_path, row: dict) -> pd.DataFrame:
    base = dict(gpu_type="A", region="r1")
    rows = [dict(base, option="on_demand", hourly_usd=3.0)] if row["option"] != "on_demand" else []
    return pd.DataFrame(rows + [dict(base, **row)])


def _load(tmp_path, sheet: pd.DataFrame):
    path = write_case(tmp_path, {"k": [1.0] * 48}, [dict(gpu_type="A", region="r1", option="on_demand",
                                                          hourly_usd=3.0)], {"k": {"max_start_delay_hours": 4.0}})
    sheet.to_csv(tmp_path / "prices.csv", index=False)  # every column, as given
    return load_inputs(path)


def test_every_kind_has_a_complete_row_here():
    assert set(ROW) == {s.name for s in KINDS}


@pytest.mark.parametrize("kind", [s.name for s in KINDS])
def test_a_complete_row_of_each_kind_loads(tmp_path, kind):
    inp = _load(tmp_path, _sheet(tmp_path, ROW[kind]))
    assert inp.P == 1


def _refused(sheet: pd.DataFrame) -> list:
    """The problems the price-sheet validator reports for ``sheet`` (the check a file goes through, in memory)."""
    from planner.core.errors import Collector
    from planner.inputs.io import table_from_frame
    from planner.inputs.validate import validate_prices

    bad = Collector()
    validate_prices(table_from_frame(sheet, "prices"), bad)
    return bad.problems


def test_the_in_memory_check_passes_every_complete_row():
    for kind in ROW:
        assert _refused(_sheet(None, ROW[kind])) == [], kind


@pytest.mark.parametrize("kind,column", [(s.name, c) for s in KINDS for c in s.forbidden if c in VALUE])
def test_a_forbidden_column_is_refused(kind, column):
    row = dict(ROW[kind], **{column: VALUE[column]})
    problems = _refused(_sheet(None, row))
    assert any(p.column == column or f"'{column}'" in str(p) for p in problems), [str(p) for p in problems]


@pytest.mark.parametrize("kind,column", [(s.name, c) for s in KINDS for c in s.required if c in ROW[s.name]])
def test_a_required_column_left_blank_is_refused(kind, column):
    row = {k: v for k, v in ROW[kind].items() if k != column}  # option names carry no term: term_months is its source
    problems = _refused(_sheet(None, row))
    assert any(p.column == column or f"'{column}'" in str(p) for p in problems), [str(p) for p in problems]


def test_a_refusal_reaches_the_user_as_exit_2_naming_the_file(tmp_path):
    """End to end once: a forbidden column on a spot row stops `load_inputs` (the CLI's exit 2) naming the file."""
    with pytest.raises(InputError) as err:
        _load(tmp_path, _sheet(tmp_path, dict(ROW["spot"], upfront_usd=100.0)))
    assert "prices.csv" in str(err.value) and "upfront_usd" in str(err.value)
