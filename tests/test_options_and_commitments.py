"""Issue 33 items 3 and 6: the typed, always complete commitments table, and make_plan's one options object."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner import load_inputs, make_plan
from planner.core.options import PlanOptions
from planner.inputs import commitments
from conftest import price, write_case


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """One pool, flat demand of 8 GPUs for 4 weeks; on-demand 2.0, a 1-year reservation at 1.0 (8 per instance)."""
    folder = tmp_path_factory.mktemp("opts")
    model = write_case(folder, {"train": [8.0] * (24 * 28)},
                       [price(hourly=2.0, gpus_per_instance=8), price(option="reserved_1y", hourly=1.0, term_months=12, gpus_per_instance=8)],
                       {"train": {"spot": False}})
    return load_inputs(model)


def test_a_table_missing_columns_is_completed_and_typed(case):
    bare = case.commitments.drop(columns=["kind", "max_units", "parent", "guarantees_capacity", "site", "kw_per_gpu",
                                       "integer"])
    done = commitments.complete(bare)
    assert list(done["kind"]) == ["instance"] * len(done)
    assert done["max_units"].dtype == float and np.isinf(done["max_units"]).all()
    assert done["parent"].dtype.kind == "i" and (done["parent"] == -1).all()
    assert done["guarantees_capacity"].dtype == bool and done["guarantees_capacity"].all()
    assert done["integer"].dtype == bool and done["integer"].all()  # instances are bought whole
    assert (done["site"] == "").all() and (done["kw_per_gpu"] == 0.0).all()
    assert "kind" not in bare  # the caller's table is not changed


def test_blank_cells_take_their_defaults_and_a_relaxed_integer_is_kept(case):
    t = case.commitments.copy()
    t.attrs.clear()
    t["max_units"] = np.nan
    t["site"] = np.nan
    t["integer"] = False  # a backtest relaxes later purchases: complete() must not undo it
    done = commitments.complete(t)
    assert np.isinf(done["max_units"]).all() and (done["site"] == "").all()
    assert not done["integer"].any()


def test_plan_inputs_always_hold_a_complete_table(case):
    bare = case.commitments.drop(columns=["kind", "max_units"])
    again = dataclasses.replace(case, commitments=bare)
    assert {"kind", "max_units", "parent", "integer"} <= set(again.commitments.columns)
    assert again.commitments is again.commitments
    assert make_plan(again, mip_gap=0.0, risk=False).objective == pytest.approx(
        make_plan(case, mip_gap=0.0, risk=False).objective, rel=1e-12)


def test_options_object_and_keywords_make_the_same_plan(case):
    by_kw = make_plan(case, mip_gap=0.0, risk=False)
    by_obj = make_plan(case, PlanOptions(mip_gap=0.0, risk=False))
    assert by_obj.objective == pytest.approx(by_kw.objective, rel=1e-12)
    # 8 GPUs flat for 4 weeks: one instance of 8 at 1.0/GPU-hour beats on-demand at 2.0: 8 x 1.0 x 672 h
    assert by_obj.objective == pytest.approx(8 * 1.0 * 672, rel=1e-9)


def test_keyword_overrides_apply_on_top_of_the_options(case):
    opts = PlanOptions(mip_gap=0.0, risk=False)
    fixed = make_plan(case, opts, fixed_reserved=np.zeros(len(case.commitments)))  # nothing bought: all on-demand
    assert fixed.objective == pytest.approx(8 * 2.0 * 672, rel=1e-9)
    assert opts.fixed_reserved is None  # the caller's options are not changed


def test_an_unknown_option_is_refused():
    with pytest.raises(TypeError, match="unknown plan option"):
        PlanOptions.of(mip_gpa=0.0)


def test_a_missing_or_blank_kind_comes_from_the_option_and_an_unknown_kind_is_refused(case):
    t = case.commitments.copy()
    t["option"] = ["capacity_block"] * len(t)  # (only the name matters here)
    done = commitments.complete(t.drop(columns="kind"))
    assert set(done["kind"]) == {"window"}  # not silently an instance (review of issue 33)
    t["kind"] = None
    assert set(commitments.complete(t)["kind"]) == {"window"}
    t["kind"] = "leasehold"
    with pytest.raises(ValueError, match="'leasehold'.*not a supply kind"):
        commitments.complete(t)


def test_an_edited_table_is_completed_again_not_trusted(case):
    again = dataclasses.replace(case, commitments=case.commitments.drop(columns="integer"))
    assert again.commitments["integer"].dtype == bool and again.commitments["integer"].all()
    assert make_plan(again, mip_gap=0.0, risk=False).objective == pytest.approx(8 * 1.0 * 672, rel=1e-9)
