"""A class with spares_target: the plan buys its spares as reserved GPUs (hand-solved)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from planner import cli as cli_mod
from planner.sizing.spares import spare_gpus
from conftest import price, solve_case, write_case

SPARES = {"spares_target": 0.99, "gpus_per_instance": 8, "gpu_mtbf_hours": 800, "repair_hours": 50}


def test_spare_gpus_by_hand():
    # 16 GPUs = 2 instances of 8; m = 16 x 50 / 800 = 1; Poisson(1): cdf(3) = 0.981 < 0.99 <= cdf(4): 4 instances
    assert spare_gpus(np.array([16.0, 0.0, 9.0]), 0.99, 8, 800, 50).tolist() == [32.0, 0.0, 32.0]
    # 9 GPUs round up to 2 instances: the same spares as 16


def test_plan_buys_the_spares_reserved(tmp_path):
    # Demand 16 GPUs in the first of 4 hours. On-demand 10 $/h, reserved 4 $/h for every hour.
    # Without spares: 16 on-demand for one hour = 160 $.
    # With spares (32 GPUs, reserved only): 32 reserved x 4 h x 4 $ = 512 $ + 16 on-demand x 10 $ = 160 $:
    # 672 $; were the spares allowed on-demand they would cost 320 $ (480 in all), so the row binds.
    prices = [price(hourly=10.0), price(option="reserved_1y", hourly=4.0)]
    plain = solve_case(write_case(tmp_path / "a", {"train": [16, 0, 0, 0]}, prices, {"train": {}}))
    assert plain.cost["total"] == pytest.approx(160)
    m = write_case(tmp_path / "b", {"train": [16, 0, 0, 0]}, prices, {"train": dict(SPARES)})
    plan = solve_case(m)
    assert int(plan.purchases["instances"].sum()) == 32
    assert plan.cost["reserved"] == pytest.approx(512)
    assert plan.cost["on_demand"] == pytest.approx(160)
    assert plan.cost["total"] == pytest.approx(672)


def test_spares_keys_are_checked(tmp_path):
    m = write_case(tmp_path, {"train": [16]}, [price(hourly=10.0)],
                   {"train": {"spares_target": 1.5, "repair_hours": 50}})
    r = CliRunner().invoke(cli_mod.cli, ["plan", str(m), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    assert "spares_target" in r.output and "gpu_mtbf_hours" in r.output


def test_spares_need_a_class_in_one_pool(tmp_path):
    """Review of issue 36: spares are whole instances of the pool the gang runs on: a class allowed in two regions
    cannot say where they go (it bought them in the cheaper region, where no failed instance can be swapped)."""
    prices = [price(region="r1", hourly=10.0), price(region="r2", hourly=100.0),
              price(region="r2", option="reserved_1y", hourly=4.0)]
    m = write_case(tmp_path, {"train": [16, 0, 0, 0]}, prices, {"train": dict(SPARES)})
    r = CliRunner().invoke(cli_mod.cli, ["plan", str(m), "--out", str(tmp_path / "o"), "--no-memo"])
    assert r.exit_code == 2 and "spares_target" in r.output and "2 pools" in r.output, r.output


def test_spares_are_instances_of_the_pools_own_gpus(tmp_path):
    """A type twice as fast: 16 reference GPUs are 8 of its GPUs, one instance; m = 8 x 50 / 800 = 0.5 and
    Poisson(0.5): cdf(2) = 0.986 < 0.99 <= cdf(3) = 0.998: 3 spare instances, 24 GPUs, all reserved."""
    prices = [price(gpu_type="B", hourly=10.0), price(gpu_type="B", option="reserved_1y", hourly=5.0)]
    m = write_case(tmp_path, {"train": [16, 16, 16, 16]}, prices, {"train": dict(SPARES, gpu_types={"B": 2.0})})
    plan = solve_case(m)
    assert int(plan.purchases["gpus"].sum()) == 8 + 24  # the gang's 8 GPUs and its 24 spares
