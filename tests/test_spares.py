"""planner spares: the Poisson quantile by hand, a seeded simulation of failures and repairs, the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.sizing.spares import job_mtbi_from_table, size_spares, spare_quantile


def _hand_cdf(k: int, m: float) -> float:
    return sum(math.exp(-m) * m ** i / math.factorial(i) for i in range(k + 1))


def test_hand_case_two_instances():
    # 16 GPUs on 8-GPU instances = 2 instances; per-GPU MTBF 800 h -> instance MTBF 100 h;
    # job rate 2/100 = 0.02/h; repair 50 h -> mean down m = 1.
    # Poisson(1) cdf: 0.3679, 0.7358, 0.9197, 0.9810, 0.99634, 0.99941.
    r = size_spares(16, 8, 50, 0.99, gpu_mtbf_hours=800, price_per_gpu_hour=2.0)
    assert r.mean_down_instances == pytest.approx(1.0)
    assert r.spare_instances == 4  # cdf(3) = 0.981 < 0.99 <= cdf(4) = 0.9963
    assert r.probability_by_count[3] == pytest.approx(_hand_cdf(3, 1.0))
    assert r.probability_by_count[4] == pytest.approx(_hand_cdf(4, 1.0))
    assert sorted(r.probability_by_count) == [2, 3, 4, 5, 6]
    assert r.cost_usd_per_hour == pytest.approx(4 * 8 * 2.0)
    assert size_spares(16, 8, 50, 0.999, gpu_mtbf_hours=800).spare_instances == 5


@pytest.mark.parametrize("m,target", [(0.3, 0.9), (1.0, 0.999), (6.7, 0.95), (40.0, 0.999)])
def test_quantile_is_smallest_count_reaching_target(m, target):
    s = spare_quantile(m, target)
    assert _hand_cdf(s, m) >= target
    assert s == 0 or _hand_cdf(s - 1, m) < target


def _simulated_fraction_whole(lam, repair_sampler, spares, horizon, seed):
    """Time fraction with at most `spares` instances down: failures Poisson(lam), each out for a repair."""
    rng = np.random.default_rng(seed)
    n = rng.poisson(lam * horizon)
    start = np.sort(rng.uniform(0, horizon, n))
    end = start + repair_sampler(rng, n)
    times = np.concatenate([start, end])
    step = np.concatenate([np.ones(n), -np.ones(n)])
    order = np.argsort(times, kind="stable")
    times, down = times[order], np.cumsum(step[order])
    warm = times > 5 * repair_sampler(rng, 1).max() + 200  # skip the empty start
    keep = warm & (times < horizon)
    t, d = times[keep], down[keep]
    dt = np.diff(t)
    return float(dt[d[:-1] <= spares].sum() / dt.sum())


@pytest.mark.parametrize("repair", ["fixed", "exponential"])
def test_simulation_matches_poisson(repair):
    # 64 instances of 8 GPUs (512 GPUs), GPU MTBF 4,000 h -> instance MTBF 500 h; repair 48 h: m = 6.144.
    r = size_spares(512, 8, 48, 0.99, gpu_mtbf_hours=4000)
    assert r.mean_down_instances == pytest.approx(64 * 48 / 500)
    sampler = ((lambda rng, n: np.full(n, 48.0)) if repair == "fixed"
               else (lambda rng, n: rng.exponential(48.0, n)))
    for s, p in r.probability_by_count.items():
        sim = _simulated_fraction_whole(r.job_failures_per_hour, sampler, s, 400_000, seed=7 + s)
        assert sim == pytest.approx(p, abs=0.01), (s, sim, p)


def test_goodput_closed_form_without_checkpoint_cost():
    # With free checkpoints the optimal interval is 0 and goodput = exp(-lam * restart):
    # without spares the restart includes the repair wait, with spares only the swap and restart.
    r = size_spares(1024, 8, 24, 0.999, gpu_mtbf_hours=50_000, checkpoint_minutes=0, restart_minutes=30,
                    swap_minutes=6)
    lam = 1024 / 50_000
    assert r.goodput_without_spares == pytest.approx(math.exp(-lam * (24 + 0.5)), rel=1e-6)
    assert r.goodput_with_spares == pytest.approx(math.exp(-lam * 0.6), rel=1e-6)


def test_mtbi_table_interpolates_log_log():
    g, h = np.array([1000.0, 10000.0]), np.array([100.0, 10.0])
    assert job_mtbi_from_table(1000, g, h) == pytest.approx(100)
    assert job_mtbi_from_table(10 ** 3.5, g, h) == pytest.approx(10 ** 1.5)
    assert job_mtbi_from_table(100_000, g, h) == pytest.approx(1.0)  # slope extended
    assert job_mtbi_from_table(2000, [1000.0], [100.0]) == pytest.approx(50)  # constant per-GPU rate
    r = size_spares(10000, 8, 2, 0.9, job_mtbi_hours=10.0)
    assert r.mean_down_instances == pytest.approx(0.2)


def test_cli_json_keys_and_table(tmp_path):
    runner = CliRunner()
    res = runner.invoke(cli, ["spares", "--gpus", "16", "--gpus-per-instance", "8", "--gpu-mtbf-hours", "800",
                              "--repair-hours", "50", "--target", "0.99", "--price", "2", "--checkpoint-minutes",
                              "5", "--restart-minutes", "10", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    for key in ("spare_instances", "mean_down_instances", "probability_by_count", "cost_usd_per_hour",
                "goodput_with_spares", "goodput_without_spares"):
        assert key in doc
    assert doc["spare_instances"] == 4 and doc["cost_usd_per_hour"] == 64
    assert doc["goodput_with_spares"] > doc["goodput_without_spares"]
    table = tmp_path / "mtbi.csv"
    table.write_text("gpus,mtbi_hours\n1000,100\n10000,10\n")
    res = runner.invoke(cli, ["spares", "--gpus", "10000", "--gpus-per-instance", "8", "--mtbi-table", str(table),
                              "--repair-hours", "2", "--target", "0.9", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["mean_down_instances"] == pytest.approx(0.2)


def test_cli_bad_inputs_exit_2(tmp_path):
    runner = CliRunner()
    bad = tmp_path / "bad.csv"
    bad.write_text("gpus,mtbi_hours\n1000,100\n2000,-3\n")
    res = runner.invoke(cli, ["spares", "--gpus", "1000", "--gpus-per-instance", "8", "--mtbi-table", str(bad),
                              "--repair-hours", "2", "--target", "0.9"])
    assert res.exit_code == 2
    assert "row 3" in res.output and "mtbi_hours" in res.output
    res = runner.invoke(cli, ["spares", "--gpus", "1000", "--gpus-per-instance", "8", "--repair-hours", "2",
                              "--target", "0.9"])
    assert res.exit_code == 2 and "--gpu-mtbf-hours" in res.output
