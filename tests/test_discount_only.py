"""Capacity versus discount (issue 24): a commitment with guarantees_capacity = false (GCP committed use
discounts) discounts usage but reserves nothing, so its GPUs count against the pool's on-demand cap; an
on-demand capacity reservation is a reserved row at the on-demand price (capacity, no discount)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from planner.cli import cli
from conftest import price, solve_case, write_case

H = 24


def case(folder: Path, guarantees: str | None, cap: float = 10.0, demand: float = 12.0) -> Path:
    cud = price(option="reserved_1y", hourly=1.0, term_months=12)
    if guarantees is not None:
        cud["guarantees_capacity"] = guarantees
    rows = [price(hourly=2.0, max_gpus=cap), cud]
    m = write_case(folder, {"c": [demand] * H}, rows, {"c": {}}, solver={"shortfall_penalty_usd_per_gpu_hour": 50})
    pd.DataFrame(rows).to_csv(folder / "prices.csv", index=False)
    return m


def test_a_reservation_adds_capacity_beyond_the_on_demand_cap(tmp_path):
    plan = solve_case(case(tmp_path, None))
    assert plan.purchases["instances"].sum() == 12 and plan.shortfall_gpu_hours == 0
    assert plan.cost["total"] == pytest.approx(12 * 1.0 * H)


def test_a_discount_only_commitment_counts_against_the_on_demand_cap(tmp_path):
    plan = solve_case(case(tmp_path, "false"))
    # by hand: CUD GPUs + on-demand GPUs <= 10; the CUD at 1.0 beats on-demand at 2.0; 2 GPUs go short
    assert plan.purchases["instances"].sum() == 10
    assert plan.shortfall_gpu_hours == pytest.approx(2 * H)
    assert plan.cost["total"] == pytest.approx(10 * 1.0 * H)
    below = solve_case(case(tmp_path / "fits", "false", demand=8.0))
    assert below.purchases["instances"].sum() == 8 and below.shortfall_gpu_hours == 0


@pytest.mark.parametrize("value,message", [
    ("maybe", "column 'guarantees_capacity': not true or false (got 'maybe')"),
])
def test_bad_guarantees_capacity_exits_2(tmp_path, value, message):
    r = CliRunner().invoke(cli, ["validate", str(case(tmp_path, value))])
    assert r.exit_code == 2 and message in r.output, r.output


def test_guarantees_capacity_on_an_on_demand_row_exits_2(tmp_path):
    m = case(tmp_path, None)
    df = pd.read_csv(tmp_path / "prices.csv")
    df["guarantees_capacity"] = ["false", ""]
    df.to_csv(tmp_path / "prices.csv", index=False)
    r = CliRunner().invoke(cli, ["validate", str(m)])
    assert r.exit_code == 2 and "guarantees_capacity on a row that is not reserved" in r.output, r.output
