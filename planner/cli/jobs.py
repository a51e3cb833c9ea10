"""``planner spot`` and ``planner slo``: one job's checkpoint economics, one service's replicas."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
import numpy as np

from .. import economics as eco
from .. import queueing
from ..errors import ConfigError, Problem
from ..report.json_export import jsonable
from ..report.spot_report import write_spot_sweep
from . import cli
from .common import (Finite, fmt, handle_errors, json_option, number_list)


@cli.command()
@click.option("--interruptions-per-hour", type=Finite(min=0), default=None,
              help="Spot preemptions per instance-hour.")
@click.option("--mtbi-hours", type=Finite(min=0, min_open=True), default=None,
              help="Mean time between interruptions of one instance, in hours (instead of the rate).")
@click.option("--job-mtbi-hours", type=Finite(min=0, min_open=True), default=None,
              help="Mean time between interruptions of the whole job, in hours (e.g. a large training run).")
@click.option("--checkpoint-minutes", type=Finite(min=0), default=5.0, show_default=True,
              help="Time to write one checkpoint.")
@click.option("--restart-minutes", type=Finite(min=0), default=10.0, show_default=True,
              help="Time to restart after an interruption (reschedule, reload).")
@click.option("--interval-minutes", type=Finite(min=0, min_open=True), default=None,
              help="Fixed checkpoint interval (default: the optimal one).")
@click.option("--job-gpus", type=Finite(min=0, min_open=True), default=None,
              help="GPUs the gang-scheduled job spans (default: one instance).")
@click.option("--gpus-per-instance", type=Finite(min=0, min_open=True), default=1.0, show_default=True)
@click.option("--failure-rate-per-gpu-hour", type=Finite(min=0), default=0.0, show_default=True,
              help="Hardware failures per GPU-hour (hit every purchase option).")
@click.option("--spot-price", type=Finite(min=0), default=None, help="Spot USD per GPU-hour.")
@click.option("--on-demand-price", type=Finite(min=0), default=None, help="On-demand USD per GPU-hour.")
@click.option("--reserved-price", type=Finite(min=0), default=None,
              help="Effective reserved USD per GPU-hour, to compare spot against too.")
@click.option("--sweep", type=click.Choice(["interruptions", "job-gpus"]), default=None,
              help="Print the curve over interruption rates or gang sizes.")
@click.option("--sweep-values", default=None,
              help="Comma-separated points of the sweep (default: a log-spaced range).")
@click.option("--xlsx", "xlsx_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the sweep with a chart to this workbook.")
@json_option
@handle_errors
def spot(**opts):
    """Checkpoint interval, goodput and break-even of spot for one job.

    Example: fine-tunes preempted about once every four hours, 2-minute
    checkpoints, 5-minute restarts, 16-GPU jobs on 8-GPU instances:

    \b
        planner spot --mtbi-hours 4 --checkpoint-minutes 2 --restart-minutes 5 \\
            --job-gpus 16 --gpus-per-instance 8 --spot-price 4.5 --on-demand-price 11
    """
    _run_spot(**opts)



@cli.command()
@click.option("--requests-per-s", type=Finite(min=0), required=True, help="Arrival rate of requests.")
@click.option("--service-ms", type=Finite(min=0, min_open=True), default=None,
              help="Mean service time of one request on one replica (ms).")
@click.option("--requests-per-s-per-replica", type=Finite(min=0, min_open=True), default=None,
              help="Service rate of one replica (instead of --service-ms).")
@click.option("--slo-ms", type=Finite(min=0, min_open=True), required=True,
              help="Latency target (queueing wait + service), ms.")
@click.option("--percentile", type=Finite(0, 100, min_open=True, max_open=True), default=99.0, show_default=True,
              help="Share of requests (percent) that must meet the target.")
@click.option("--gpus-per-replica", type=Finite(min=0, min_open=True), default=1.0, show_default=True)
@click.option("--service-cv", type=Finite(0, 10), default=1.0, show_default=True,
              help="Coefficient of variation of the service time (1 = exponential, M/M/c; else Allen-Cunneen).")
@click.option("--sweep", type=click.Choice(["requests"]), default=None,
              help="Print the replica staircase over a range of loads.")
@click.option("--sweep-values", default=None,
              help="Comma-separated loads of the sweep (default: 20 from a tenth to twice --requests-per-s).")
@json_option
@handle_errors
def slo(**opts):
    """Replicas and GPUs an inference service needs to meet a latency SLO (M/M/c, Erlang C).

    Example: 40 requests per second, 500 ms per request, p99 latency within 3 s:

    \b
        planner slo --requests-per-s 40 --service-ms 500 --slo-ms 3000 --percentile 99
        planner slo --requests-per-s 40 --service-ms 500 --slo-ms 3000 --sweep requests
    """
    _run_slo(**opts)


_SPOT_LABELS = [
    ("job_interruptions_per_hour", "job interruptions per hour"),
    ("job_mtbi_hours", "job mean time between interruptions (h)"),
    ("instances_per_job", "instances per job (gang)"),
    ("young_interval_minutes", "Young's interval sqrt(2 C MTBI) (min)"),
    ("optimal_interval_minutes", "optimal checkpoint interval (min)"),
    ("interval_minutes", "interval used (min)"),
    ("goodput", "goodput (useful share of paid GPU-hours)"),
    ("expected_lost_minutes_per_interruption", "expected work lost per interruption (min)"),
    ("effective_usd_per_useful_gpu_hour", "effective spot USD per useful GPU-hour"),
    ("spot_pays", "spot pays against on-demand"),
    ("break_even_interruptions_per_hour", "break-even interruptions per instance-hour"),
    ("max_paying_job_gpus", "largest job (GPUs) for which spot pays"),
    ("spot_beats_reserved", "spot beats reserved"),
    ("break_even_vs_reserved_interruptions_per_hour", "break-even vs reserved (per instance-hour)"),
]


def _spot_table(result: dict) -> str:
    lines = []
    for key, label in _SPOT_LABELS:
        if key in result:
            lines.append(f"  {label:<46} {fmt(result[key])}")
    return "\n".join(lines)


def _run_spot(interruptions_per_hour, mtbi_hours, checkpoint_minutes, restart_minutes, interval_minutes, job_gpus,
             gpus_per_instance, failure_rate_per_gpu_hour, spot_price, on_demand_price, reserved_price, sweep,
             sweep_values, xlsx_path, as_json, job_mtbi_hours=None):
    given = [x is not None for x in (interruptions_per_hour, mtbi_hours, job_mtbi_hours)]
    if sum(given) > 1:
        raise ConfigError(Problem("command line", "give only one of --interruptions-per-hour, --mtbi-hours "
                                  "and --job-mtbi-hours"))
    if not any(given) and failure_rate_per_gpu_hour == 0:
        raise ConfigError(Problem("command line", "no interruption rate given",
                                  expected="--interruptions-per-hour, --mtbi-hours or --job-mtbi-hours",
                                  hint="e.g. --mtbi-hours 4 for a preemption every four hours"))
    if job_mtbi_hours is not None and sweep is not None:
        raise ConfigError(Problem("command line", "--sweep needs a per-instance rate",
                                  expected="--interruptions-per-hour or --mtbi-hours with --sweep",
                                  hint="a job-level MTBI cannot be rescaled to other gang sizes or rates"))
    rate = interruptions_per_hour if interruptions_per_hour is not None else (
        1.0 / mtbi_hours if mtbi_hours is not None else 0.0)
    job_rate = 1.0 / job_mtbi_hours if job_mtbi_hours is not None else None
    if not math.isfinite(rate) or (job_rate is not None and not math.isfinite(job_rate)):
        raise ConfigError(Problem("command line", "the interruption rate is not a finite number",
                                  value=mtbi_hours if mtbi_hours is not None else job_mtbi_hours,
                                  expected="a mean time between interruptions above 1e-300 hours"))
    m = gpus_per_instance
    job = job_gpus if job_gpus is not None else m
    C, R = checkpoint_minutes / 60, restart_minutes / 60
    tau = interval_minutes / 60 if interval_minutes is not None else None
    args = dict(checkpoint_h=C, restart_h=R, interval_h=tau, failure=failure_rate_per_gpu_hour,
                spot_price=spot_price, on_demand_price=on_demand_price, reserved_price=reserved_price)

    if sweep is None:
        result = eco.analyse_job(rate, job_gpus=job, m=m, job_rate=job_rate, **args)
        if as_json:
            click.echo(json.dumps({k: jsonable(v) if not isinstance(v, str) else v for k, v in result.items()},
                                  indent=2))
        else:
            click.echo(_spot_table(result))
        return

    if sweep == "interruptions":
        base = rate if rate > 0 else 0.01
        points = number_list(sweep_values) or list(np.geomspace(base / 10, base * 10, 13))
        rows = [eco.analyse_job(float(x), job_gpus=job, m=m, **args) for x in points]
        key = "interruptions_per_instance_hour"
    else:
        points = number_list(sweep_values) or [m * 2 ** i for i in range(0, 16) if m * 2 ** i <= 16384]
        rows = [eco.analyse_job(rate, job_gpus=float(x), m=m, job_rate=None, **args) for x in points]
        key = "job_gpus"
    cols = [key, "job_interruptions_per_hour", "interval_minutes", "goodput", "effective_usd_per_useful_gpu_hour",
            "spot_pays"]
    if as_json:
        click.echo(json.dumps([{c: jsonable(r[c]) for c in cols} for r in rows], indent=2))
    else:
        click.echo("  ".join(f"{c:>18}" for c in ("rate/inst-h" if key.startswith("interr") else "job GPUs",
                                                  "job rate/h", "interval min", "goodput", "USD/useful h",
                                                  "spot pays")))
        for r in rows:
            click.echo("  ".join(f"{fmt(r[c]):>18}" for c in cols))
    if xlsx_path:
        write_spot_sweep(xlsx_path, rows, cols, key)
        click.echo(f"wrote {xlsx_path}")


_SLO_LABELS = [
    ("offered_load_erlangs", "offered load (Erlangs = requests/s x service s)"),
    ("replicas", "replicas needed"),
    ("gpus", "GPUs"),
    ("utilisation", "utilisation of the replicas"),
    ("p_wait", "share of requests that queue (Erlang C)"),
    ("p_latency_above_slo", "share of requests over the SLO"),
    ("latency_at_percentile_ms", "latency at the percentile (ms)"),
    ("max_requests_per_s_at_these_replicas", "most requests/s these replicas serve in SLO"),
]
SWEEP_COLUMNS = ["requests_per_s", "replicas", "gpus", "utilisation", "p_latency_above_slo",
                 "latency_at_percentile_ms"]


def _run_slo(requests_per_s, service_ms, requests_per_s_per_replica, slo_ms, percentile, gpus_per_replica,
            service_cv, sweep, sweep_values, as_json) -> None:
    """Check the arguments, size the service (or sweep the load) and print."""
    import math

    for flag, value in (("--requests-per-s", requests_per_s), ("--service-ms", service_ms),
                        ("--requests-per-s-per-replica", requests_per_s_per_replica), ("--slo-ms", slo_ms),
                        ("--percentile", percentile), ("--gpus-per-replica", gpus_per_replica),
                        ("--service-cv", service_cv)):
        if value is not None and not math.isfinite(value):
            raise ConfigError(Problem("command line", f"{flag} must be a finite number", value=value))
    if (service_ms is None) == (requests_per_s_per_replica is None):
        raise ConfigError(Problem("command line", "give exactly one of --service-ms and "
                                  "--requests-per-s-per-replica", expected="the mean service time of one request"))
    service = service_ms if service_ms is not None else 1000.0 / requests_per_s_per_replica
    if not 1e-3 <= service <= 1e9:
        raise ConfigError(Problem("command line", "service time out of range", value=f"{service:g} ms",
                                  expected="between 0.001 ms and 1e9 ms"))
    if not 0 < percentile < 100:
        raise ConfigError(Problem("command line", "--percentile out of range", value=percentile,
                                  expected="a percentile strictly between 0 and 100, e.g. 99"))
    if not queueing.slo_feasible(service / 1000.0, slo_ms / 1000.0, percentile, service_cv):
        floor = queueing.latency_percentile(percentile, 0.0, service / 1000.0, 1, service_cv) * 1000.0
        raise ConfigError(Problem("command line", f"no number of replicas meets p{percentile:.10g} <= {slo_ms:g} ms",
                                  value=f"--service-ms {service:g}",
                                  expected=f"--slo-ms >= {floor:.0f} (p{percentile:.10g} of the service time alone)"
                                           " or a faster replica"))
    args = dict(service_ms=service, slo_ms=slo_ms, percentile=percentile, gpus_per_replica=gpus_per_replica,
                cv=service_cv)
    top = max([requests_per_s] + (number_list(sweep_values) if sweep else []))
    if top * service / 1000.0 > queueing.MAX_REPLICAS / 2:
        raise ConfigError(Problem("command line", "load beyond what the planner sizes", value=f"{top:g} requests/s",
                                  expected=f"at most {queueing.MAX_REPLICAS // 2:,} Erlangs (requests/s x service s)"))
    if sweep is None:
        result = queueing.sizing(requests_per_s, **args)
        if as_json:
            click.echo(json.dumps(result, indent=2))
        else:
            click.echo(f"  {requests_per_s:g} requests/s, {service:g} ms service, p{percentile:g} <= {slo_ms:g} ms")
            for key, label in _SLO_LABELS:
                value = result[key]
                text = f"{value:.1%}" if key in ("utilisation", "p_wait", "p_latency_above_slo") else fmt(value)
                click.echo(f"  {label:<50} {text}")
        return
    points = number_list(sweep_values) or [float(v) for v in np.linspace(requests_per_s / 10, requests_per_s * 2, 20)]
    rows = [queueing.sizing(x, **args) for x in points]
    if as_json:
        click.echo(json.dumps([{c: r[c] for c in SWEEP_COLUMNS} for r in rows], indent=2))
        return
    click.echo("  ".join(f"{h:>14}" for h in ("requests/s", "replicas", "GPUs", "utilisation", "P(>SLO)",
                                              f"p{percentile:g} ms")))
    for r in rows:
        click.echo("  ".join([f"{r['requests_per_s']:>14.4g}", f"{r['replicas']:>14d}", f"{r['gpus']:>14g}",
                              f"{r['utilisation']:>14.1%}", f"{r['p_latency_above_slo']:>14.4f}",
                              f"{r['latency_at_percentile_ms']:>14.0f}"]))
