"""Issue 27 #16, #18 and question 4: `planner slo` near p100, `planner spot` for failures (not spot) at scale.

Oracles: Daly's optimum solved independently (scipy's brentq on ``1 - exp(-(x + c)) = x``) and the
textbook goodput formula; at the optimum ``g = (1 - x) exp(-lam R)`` (substitute ``exp(x + c) = 1 / (1 - x)``
into Daly's g), so the job rate for a goodput target is closed with ``R = 0``,
``lam = (G - 1 - ln G) / C``, and parametric in x otherwise; the M/M/1 latency tail ``exp(-(mu - lam) t)``.
"""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from openpyxl import load_workbook
from scipy.optimize import brentq

from planner.sizing import economics as eco
from planner.cli import cli

MIN = 1 / 60
Q4 = ["--job-mtbi-hours", "3", "--job-gpus", "16384", "--gpus-per-instance", "8", "--checkpoint-minutes", "5",
      "--restart-minutes", "20"]


def run(*args):
    return CliRunner().invoke(cli, list(args))


def ok_json(*args):
    r = run(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def daly(lam, c_h, r_h):
    """(optimal interval h, goodput) by an independent root finder and the textbook formula."""
    x = brentq(lambda x: 1 - math.exp(-(x + lam * c_h)) - x, 1e-300, 1 - 1e-16, xtol=1e-300, rtol=1e-15)
    tau = x / lam
    g = lam * tau * math.exp(-lam * r_h) / (math.exp(lam * (tau + c_h)) - 1)
    assert g == pytest.approx((1 - x) * math.exp(-lam * r_h), rel=1e-12)  # the identity the docstring uses
    return tau, g


def no_spot_anywhere(text: str):
    assert "spot" not in text.lower(), text


# --------------------------------------------------------------------------- economics: pure functions

@pytest.mark.parametrize("target", [0.5, 0.9, 0.99])
def test_rate_for_goodput_is_closed_without_restart(target):
    c = 5 * MIN
    assert eco.rate_for_goodput(target, c, 0.0) == pytest.approx((target - 1 - math.log(target)) / c, rel=1e-12)


def test_rate_for_goodput_hand_solved_with_restart():
    # x = 0.2, C = 5 min: lam = (-ln 0.8 - 0.2) / C = 0.277722615770516 / h; R = 20 min: G = 0.8 exp(-lam / 3)
    c, r = 5 * MIN, 20 * MIN
    lam = (-math.log(0.8) - 0.2) / c
    assert lam == pytest.approx(0.2777226157705, rel=1e-12)
    target = 0.8 * math.exp(-lam * r)
    assert target == pytest.approx(0.729265, abs=1e-6)
    assert eco.rate_for_goodput(target, c, r) == pytest.approx(lam, rel=1e-12)
    # vectorised: the same answers elementwise
    both = eco.rate_for_goodput([target, 0.9], [c, c], [r, 0.0])
    assert both[0] == pytest.approx(lam, rel=1e-12)
    assert both[1] == pytest.approx((0.9 - 1 - math.log(0.9)) / c, rel=1e-12)


def test_rate_for_goodput_edges():
    assert eco.rate_for_goodput(0.9, 0.0, 1 / 3) == pytest.approx(-math.log(0.9) * 3, rel=1e-12)  # g = e^-lam R
    assert eco.rate_for_goodput(0.9, 0.0, 0.0) == math.inf  # nothing is ever lost
    # a fixed interval of 10 C spends 1/11 > 5 % on checkpoints alone: 0.95 is out of reach at any MTBI
    assert eco.rate_for_goodput(0.95, 5 * MIN, 0.3, 50 * MIN) == 0.0
    with pytest.raises(ValueError, match="target_goodput"):
        eco.rate_for_goodput(1.0, 5 * MIN, 0.3)


def test_goodput_lost_usd_hand_case():
    assert eco.goodput_lost_usd(16384, 2.5, 0.7) == pytest.approx(16384 * 2.5 * 0.3)  # $12,288 an hour
    assert eco.goodput_lost_usd(16384, 2.5, 0.7, 730) == pytest.approx(12288 * 730)
    with pytest.raises(ValueError):
        eco.goodput_lost_usd(8, 2.5, 1.5)


# --------------------------------------------------------------------------- #18: failures are not spot

def test_job_mtbi_run_gives_break_evens_and_never_says_spot():
    r = run("spot", "--job-mtbi-hours", "1.5", "--restart-minutes", "20", "--job-gpus", "512")
    assert r.exit_code == 0, r.output
    no_spot_anywhere(r.output)
    assert not [line for line in r.output.splitlines() if line.rstrip().endswith(" -")], r.output
    # the job MTBI at which goodput falls to 0.9 (C = 5 min, R = 20 min), and per GPU x 512
    lam = eco.rate_for_goodput(0.9, 5 * MIN, 20 * MIN)
    tau, g = daly(float(lam), 5 * MIN, 20 * MIN)
    assert g == pytest.approx(0.9, rel=1e-9)
    assert f"job MTBI at which goodput falls to 0.9 (h)     {1 / lam:.4g}" in r.output
    out = ok_json("spot", "--job-mtbi-hours", "1.5", "--restart-minutes", "20", "--job-gpus", "512")
    no_spot_anywhere(json.dumps(out))
    assert out["job_mtbi_for_goodput_target_hours"] == pytest.approx(1 / lam, rel=1e-12)
    assert out["gpu_mtbf_for_goodput_target_hours"] == pytest.approx(512 / lam, rel=1e-12)
    assert out["gpu_mtbf_hours"] == pytest.approx(512 * 1.5)
    assert out["goodput"] == pytest.approx(daly(1 / 1.5, 5 * MIN, 20 * MIN)[1], rel=1e-12)


def test_goodput_target_option_moves_the_break_even():
    out = ok_json("spot", *Q4, "--restart-minutes", "0", "--goodput-target", "0.8")
    assert out["job_mtbi_for_goodput_target_hours"] == pytest.approx((5 * MIN) / (0.8 - 1 - math.log(0.8)),
                                                                      rel=1e-12)


def test_failure_rate_run_is_not_labelled_spot():
    args = ["spot", "--interruptions-per-hour", "0", "--failure-rate-per-gpu-hour", "0.0000203450520833",
            "--job-gpus", "16384", "--gpus-per-instance", "8", "--checkpoint-minutes", "5", "--restart-minutes", "20"]
    r = run(*args)
    assert r.exit_code == 0, r.output
    no_spot_anywhere(r.output)
    sweep = run(*args, "--sweep", "job-gpus", "--sweep-values", "8,16384")
    assert sweep.exit_code == 0, sweep.output
    no_spot_anywhere(sweep.output)
    # with a spot price it is a spot run (never preempted, hardware failures on top) and says so
    priced = run(*args, "--spot-price", "4.54", "--on-demand-price", "11.07")
    assert priced.exit_code == 0 and "spot pays against on-demand" in priced.output, priced.output


def test_option_prices_with_failures_exit_2_naming_the_option():
    for flag in ("--spot-price", "--on-demand-price", "--reserved-price"):
        # a job-level MTBI with an option price: the job's spot preemptions, converted per instance (issue 32)
        r = run("spot", *Q4, flag, "3")
        assert r.exit_code == 0 and "one preemption every 6,144 h per instance" in r.output, r.output
    for flag in ("--on-demand-price", "--reserved-price"):  # hardware failures alone: one fleet price
        r = run("spot", "--failure-rate-per-gpu-hour", "1e-5", "--job-gpus", "16384", flag, "3")
        assert r.exit_code == 2, r.output
        assert f"{flag} compares purchase options" in r.output and "--gpu-price" in r.output, r.output
    r = run("spot", "--mtbi-hours", "4", "--gpu-price", "3")
    assert r.exit_code == 2 and "--gpu-price prices a job's failures" in r.output, r.output
    r = run("spot", *Q4, "--sweep", "job-gpus")
    assert r.exit_code == 2 and "--sweep job-gpus needs a per-instance rate" in r.output, r.output


# --------------------------------------------------------------------------- question 4: dollars and the C sweep

def test_goodput_lost_in_dollars_at_the_fleets_price():
    out = ok_json("spot", *Q4, "--gpu-price", "2.5")
    no_spot_anywhere(json.dumps(out))
    tau, g = daly(1 / 3, 5 * MIN, 20 * MIN)
    assert out["goodput"] == pytest.approx(g, rel=1e-12)
    assert out["lost_usd_per_hour"] == pytest.approx(16384 * 2.5 * (1 - g), rel=1e-12)
    assert out["lost_usd_per_month"] == pytest.approx(16384 * 730 * 2.5 * (1 - g), rel=1e-12)
    assert out["effective_usd_per_useful_gpu_hour"] == pytest.approx(2.5 / g, rel=1e-12)
    r = run("spot", *Q4, "--gpu-price", "2.5")
    assert f"goodput lost, USD per month (730 h)            ${16384 * 730 * 2.5 * (1 - g):,.0f}" in r.output, \
        r.output


def test_checkpoint_minutes_sweep_shows_what_a_faster_checkpoint_buys(tmp_path):
    values = [0.5, 1, 2, 5, 10]
    rows = ok_json("spot", *Q4, "--gpu-price", "2.5", "--sweep", "checkpoint-minutes",
                   "--sweep-values", ",".join(map(str, values)))
    assert [r["checkpoint_minutes"] for r in rows] == pytest.approx(values)
    for c_min, row in zip(values, rows):
        tau, g = daly(1 / 3, c_min * MIN, 20 * MIN)
        assert row["interval_minutes"] == pytest.approx(tau * 60, rel=1e-10)
        assert row["goodput"] == pytest.approx(g, rel=1e-12)
        assert row["lost_usd_per_month"] == pytest.approx(16384 * 730 * 2.5 * (1 - g), rel=1e-12)
    assert all(a["goodput"] > b["goodput"] for a, b in zip(rows, rows[1:]))
    no_spot_anywhere(json.dumps(rows))
    # a checkpoint that costs nothing leaves only the restarts: g -> exp(-lam R)
    free = ok_json("spot", *Q4, "--sweep", "checkpoint-minutes", "--sweep-values", "0")
    assert free[0]["goodput"] == pytest.approx(math.exp(-20 / 60 / 3), rel=1e-12)
    # terminal and workbook: no spot column, the loss charted
    path = tmp_path / "c.xlsx"
    r = run("spot", *Q4, "--gpu-price", "2.5", "--sweep", "checkpoint-minutes", "--sweep-values", "0.5,5",
            "--xlsx", str(path))
    assert r.exit_code == 0, r.output
    no_spot_anywhere(r.output.replace(str(path), ""))
    ws = load_workbook(path)["Sweep"]
    cells = [str(c.value) for row in ws.iter_rows() for c in row]
    no_spot_anywhere(" ".join(cells))
    header = [c.value for c in ws[1]]
    assert header[0] == "checkpoint_minutes" and "lost_usd_per_month" in header
    assert len(ws._charts) == 2


def test_spot_run_can_sweep_checkpoint_minutes_too():
    rows = ok_json("spot", "--mtbi-hours", "4", "--job-gpus", "16", "--gpus-per-instance", "8",
                   "--restart-minutes", "5", "--spot-price", "4.54", "--on-demand-price", "11.07",
                   "--sweep", "checkpoint-minutes", "--sweep-values", "1,2")
    for c_min, row in zip((1, 2), rows):
        tau, g = daly(0.5, c_min * MIN, 5 * MIN)
        assert row["goodput"] == pytest.approx(g, rel=1e-12)
        assert row["spot_pays"] is (4.54 < 11.07 * g)


# --------------------------------------------------------------------------- #16: percentiles near 100

def test_slo_reports_the_percentile_given_with_all_its_digits():
    r = run("slo", "--requests-per-s", "1", "--service-ms", "500", "--slo-ms", "30000", "--percentile", "99.9999999")
    assert r.exit_code == 0, r.output
    assert "p99.9999999 <= 30000 ms" in r.output and "p100" not in r.output, r.output
    out = ok_json("slo", "--requests-per-s", "1", "--service-ms", "500", "--slo-ms", "30000",
                  "--percentile", "99.9999999")
    # M/M/1 (mu = 2, lam = 1): latency ~ Exp(1), so its 1 - 1e-9 quantile is ln(1e9) s
    assert out["replicas"] == 1
    assert out["latency_at_percentile_ms"] == pytest.approx(1000 * math.log(1e9), rel=1e-6)
    sweep = run("slo", "--requests-per-s", "1", "--service-ms", "500", "--slo-ms", "30000",
                "--percentile", "99.9999999", "--sweep", "requests", "--sweep-values", "1")
    assert sweep.exit_code == 0 and "p99.9999999 ms" in sweep.output, sweep.output
    short = run("slo", "--requests-per-s", "1", "--service-ms", "500", "--slo-ms", "3000", "--percentile", "99.9999999")
    assert short.exit_code == 2 and "no number of replicas meets p99.9999999 <= 3000 ms" in short.output


@pytest.mark.parametrize("slo_ms", ["3000", "30000"])
def test_slo_percentile_too_close_to_100_exits_2_with_the_range(slo_ms):
    r = run("slo", "--requests-per-s", "40", "--service-ms", "500", "--slo-ms", slo_ms,
            "--percentile", "99.9999999999")
    assert r.exit_code == 2, r.output
    assert "99.9999999999" in r.output and "0<x<=99.9999999" in r.output and "p100" not in r.output, r.output
    assert "at most 99.9999999" in run("slo", "--help").output


def test_spot_economics_doc_shows_real_output():
    import re
    import shlex
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "spot-economics.md").read_text(encoding="utf-8")
    blocks = [b.splitlines() for b in re.findall(r"```console\n(.*?)```", doc, re.S)]
    blocks = [b for b in blocks if b[0].startswith("$ planner spot ") and "  ..." not in b]
    assert any("--sweep checkpoint-minutes" in b[0] and "--job-mtbi-hours 3" in b[0] for b in blocks)
    for lines in blocks:
        r = run(*shlex.split(lines[0])[2:])
        assert r.exit_code == 0, r.output
        assert r.output.rstrip("\n") == "\n".join(lines[1:]), lines[0]


def test_a_free_checkpoint_and_restart_meet_any_goodput_target_at_any_mtbi():
    from click.testing import CliRunner

    from planner.cli import cli

    args = ["spot", "--job-mtbi-hours", "1.5", "--job-gpus", "512", "--checkpoint-minutes", "0",
            "--restart-minutes", "0"]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert "job MTBI at which goodput falls to 0.9 (h)     any" in r.output
    d = json.loads(CliRunner().invoke(cli, args + ["--json"]).output)
    assert d["job_mtbi_for_goodput_target_hours"] is None and d["gpu_mtbf_for_goodput_target_hours"] is None
    assert d["goodput"] == 1.0


def test_free_or_dearer_spot_says_any_or_never_not_a_numerical_limit():
    # spot at 0 USD pays at every finite rate (goodput > 0): the break-even and the largest job are unbounded, not
    # where goodput underflows (2,977 per instance-hour, 11,906 GPUs); spot dearer than on-demand never pays
    from planner.sizing.economics import break_even_rate, max_paying_job_gpus

    assert break_even_rate(0.0, 11.0, 5 / 60, 10 / 60, 8, 8) == math.inf
    assert max_paying_job_gpus(0.0, 11.0, 0.25, 5 / 60, 10 / 60, 8) == math.inf
    assert break_even_rate(12.0, 11.0, 5 / 60, 10 / 60, 8, 8) == 0.0
    free = CliRunner().invoke(cli, ["spot", "--mtbi-hours", "4", "--spot-price", "0", "--on-demand-price", "11"])
    assert free.exit_code == 0, free.output
    assert "break-even interruptions per instance-hour     any" in free.output
    assert "largest job (GPUs) for which spot pays         any" in free.output
    dear = CliRunner().invoke(cli, ["spot", "--mtbi-hours", "4", "--spot-price", "12", "--on-demand-price", "11"])
    assert "never (spot costs as much or more even without interruptions)" in dear.output
    assert "none (not even 1 GPU)" in dear.output
    vast = CliRunner().invoke(cli, ["spot", "--mtbi-hours", "1e300", "--spot-price", "3", "--on-demand-price", "11"])
    assert "job mean time between interruptions (h)        1e+300" in vast.output
