"""The supply registry: every kind's behaviour declared once, and the questions callers ask of it."""

import numpy as np
import pandas as pd
import pytest

from planner.inputs import commitments
from planner.inputs import supply


def test_examples_spell_their_kind_and_buckets_name_a_supply():
    for s in supply.SUPPLIES:
        if s.pattern:
            assert supply.kind_of_name(s.example) == s.name
    assert supply.get("reserved").name == "instance"  # the allocation frames' cost bucket
    assert supply.get("reserved_3y").name == "instance" and supply.get("capacity_block").name == "window"
    with pytest.raises(KeyError):
        supply.get("leased")


def test_behaviour_queries():
    assert supply.RENTED == ("on_demand", "spot", "flex_start")
    assert supply.BUCKETS == ("reserved", "on_demand", "spot", "flex_start")
    assert supply.names(stage="first") == ("instance", "window", "spend", "exit")
    assert supply.names(adds_capacity=True) == ("instance", "window")
    assert supply.names(preemptible=True) == ("spot",)
    assert [supply.get(k).availability_index for k in supply.RENTED] == [0, 1, -1]  # flex-start: no file rows
    kinds = pd.Series(["spend", None, "window", "exit", "instance"])
    assert supply.mask(kinds, unit="usd_per_hour").tolist() == [True, False, False, False, False]
    assert supply.mask(kinds, dated_by="term", unit="instance").tolist() == [False, True, False, False, True]
    assert supply.option_mask(pd.Series(["reserved_1y", "bogus", "spot"]), stage="first").tolist() == [
        True, False, False]


def test_commitment_table_accessors_default_to_term_instances():
    table = pd.DataFrame({"pool": [0, 1]})  # no kind column: term commitments of whole instances
    assert commitments.is_term_row(table).all() and not commitments.is_spend(table).any()
    table["kind"] = ["spend", "exit"]
    assert commitments.is_spend(table).tolist() == [True, False]
    assert commitments.is_exit(table).tolist() == [False, True]
    assert not commitments.holds_gpus(table).any()
    assert np.array_equal(commitments.is_commitment(pd.Series(["on_demand", "reserved", "savings_plan_1y"])),
                          [False, True, True])
