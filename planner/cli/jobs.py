"""``planner spot`` and ``planner slo``: one job's checkpoint economics, one service's replicas."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
import numpy as np

from planner.sizing import economics as eco
from planner.sizing import queueing
from planner.core.errors import ConfigError, Problem
from planner.report.json_export import jsonable
from planner.report.spot_report import write_spot_sweep
from planner.core.units import usd
from planner.cli.group import cli
from planner.cli.common import (Finite, fmt, handle_errors, json_option, number_list)


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
@click.option("--gpu-price", type=Finite(min=0), default=None,
              help="For failures (--job-mtbi-hours, or a failure rate without spot): USD per GPU-hour the job's "
                   "GPUs cost, to price the goodput lost.")
@click.option("--goodput-target", type=Finite(0, 1, min_open=True, max_open=True), default=0.9, show_default=True,
              help="For failures: report the MTBI at which goodput falls to this level.")
@click.option("--sweep", type=click.Choice(["interruptions", "job-gpus", "checkpoint-minutes"]), default=None,
              help="Print the curve over interruption rates, gang sizes or checkpoint write times.")
@click.option("--sweep-values", default=None,
              help="Comma-separated points of the sweep (default: a log-spaced range).")
@click.option("--xlsx", "xlsx_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the sweep with a chart to this workbook.")
@json_option
@handle_errors
def spot(**opts):
    """Checkpoint interval, goodput and break-even of spot for one job, or of a job that fails.

    Example: fine-tunes preempted about once every four hours, 2-minute
    checkpoints, 5-minute restarts, 16-GPU jobs on 8-GPU instances:

    \b
        planner spot --mtbi-hours 4 --checkpoint-minutes 2 --restart-minutes 5 \\
            --job-gpus 16 --gpus-per-instance 8 --spot-price 4.5 --on-demand-price 11

    Hardware failures (--job-mtbi-hours, or --failure-rate-per-gpu-hour without
    spot) hit every purchase option alike: the report gives the MTBI that keeps
    goodput at --goodput-target and, with --gpu-price, what the lost goodput costs:

    \b
        planner spot --job-mtbi-hours 3 --job-gpus 16384 --checkpoint-minutes 5 \\
            --restart-minutes 20 --gpu-price 2.5 --sweep checkpoint-minutes
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
@click.option("--percentile", type=Finite(0, queueing.MAX_PERCENTILE, min_open=True), default=99.0,
              show_default=True,
              help=f"Share of requests (percent) that must meet the target, above 0 and at most "
                   f"{queueing.MAX_PERCENTILE:.10g} (a tail of 1e-9): closer to 100, the tail 1 - p/100 is lost "
                   "in the rounding of p to a double.")
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


_FAILURE_LABELS = [
    ("job_interruptions_per_hour", "job failures per hour"),
    ("job_mtbi_hours", "job mean time between failures (h)"),
    ("gpu_mtbf_hours", "each GPU's mean time between failures (h)"),
    ("young_interval_minutes", "Young's interval sqrt(2 C MTBI) (min)"),
    ("optimal_interval_minutes", "optimal checkpoint interval (min)"),
    ("interval_minutes", "interval used (min)"),
    ("goodput", "goodput (useful share of paid GPU-hours)"),
    ("expected_lost_minutes_per_interruption", "expected work lost per failure (min)"),
    ("lost_gpu_hours_per_hour", "GPU-hours lost per hour, GPUs x (1 - goodput)"),
    ("job_mtbi_for_goodput_target_hours", "job MTBI at which goodput falls to {target} (h)"),
    ("gpu_mtbf_for_goodput_target_hours", "each GPU's MTBF for goodput {target} (h)"),
    ("effective_usd_per_useful_gpu_hour", "USD per useful GPU-hour"),
    ("lost_usd_per_hour", "goodput lost, USD per hour"),
    ("lost_usd_per_month", "goodput lost, USD per month (730 h)"),
]
#: the sweep's columns and headers: spot runs, and failure runs (``planner spot --job-mtbi-hours``)
_SWEEP_KEYS = {"interruptions": ("interruptions_per_instance_hour", "rate/inst-h"),
               "job-gpus": ("job_gpus", "job GPUs"), "checkpoint-minutes": ("checkpoint_minutes", "checkpoint min")}
_SPOT_SWEEP_COLUMNS = [("job_interruptions_per_hour", "job rate/h"), ("interval_minutes", "interval min"),
                       ("goodput", "goodput"), ("effective_usd_per_useful_gpu_hour", "USD/useful h"),
                       ("spot_pays", "spot pays")]
_FAILURE_SWEEP_COLUMNS = [("job_interruptions_per_hour", "job failures/h"), ("interval_minutes", "interval min"),
                          ("goodput", "goodput"), ("lost_gpu_hours_per_hour", "lost GPU-h/h")]
_FAILURE_PRICE_COLUMNS = [("effective_usd_per_useful_gpu_hour", "USD/useful h"), ("lost_usd_per_hour", "lost USD/h"),
                          ("lost_usd_per_month", "lost USD/month")]


#: lines of a failure run left out when no --gpu-price is given (rather than printed as "-")
_PRICED = {"effective_usd_per_useful_gpu_hour", "lost_usd_per_hour", "lost_usd_per_month"}


def _spot_table(result: dict, labels=None) -> str:
    lines = []
    target = fmt(result.get("goodput_target"))
    failures = labels is _FAILURE_LABELS
    for key, label in labels or _SPOT_LABELS:
        if key in result and not (failures and key in _PRICED and result[key] is None):
            lines.append(f"  {label.format(target=target):<46} {_cell(key, result[key])}")
    return "\n".join(lines)


def _cell(key: str, value) -> str:
    """Dollars as whole dollars (``$8,965,489``), hours from 10,000 as whole hours, the rest by :func:`fmt`."""
    if key.startswith("lost_usd") and value is not None:
        return usd(value)
    if key.endswith("_for_goodput_target_hours") and value is None:
        return "any (no checkpoint or restart cost)"
    if key.startswith("break_even") and isinstance(value, (int, float)) and value == 0:
        return "never (spot costs as much or more even without interruptions)"
    if key == "max_paying_job_gpus" and isinstance(value, (int, float)) and value == 0:
        return "none (not even 1 GPU)"
    if (key.startswith("break_even") or key == "max_paying_job_gpus") and value == math.inf:
        return "any"
    if key.endswith("_hours") and isinstance(value, float) and math.isfinite(value) and 1e4 <= value < 1e12:
        return f"{value:,.0f}"  # a GPU's MTBF: 49,152 rather than 4.915e+04 (not 300 digits of 1e300)
    return fmt(value)


def _run_spot(interruptions_per_hour, mtbi_hours, checkpoint_minutes, restart_minutes, interval_minutes, job_gpus,
             gpus_per_instance, failure_rate_per_gpu_hour, spot_price, on_demand_price, reserved_price, sweep,
             sweep_values, xlsx_path, as_json, job_mtbi_hours=None, gpu_price=None, goodput_target=0.9):
    given = [x is not None for x in (interruptions_per_hour, mtbi_hours, job_mtbi_hours)]
    if sum(given) > 1:
        raise ConfigError(Problem("command line", "give only one of --interruptions-per-hour, --mtbi-hours "
                                  "and --job-mtbi-hours"))
    if not any(given) and failure_rate_per_gpu_hour == 0:
        raise ConfigError(Problem("command line", "no interruption rate given",
                                  expected="--interruptions-per-hour, --mtbi-hours or --job-mtbi-hours",
                                  hint="e.g. --mtbi-hours 4 for a preemption every four hours"))
    if job_mtbi_hours is not None and sweep in ("interruptions", "job-gpus"):
        raise ConfigError(Problem("command line", f"--sweep {sweep} needs a per-instance rate",
                                  expected="--interruptions-per-hour, --mtbi-hours or --failure-rate-per-gpu-hour "
                                           f"with --sweep {sweep} (--job-mtbi-hours sweeps checkpoint-minutes only)",
                                  hint="a job-level MTBI cannot be rescaled to other gang sizes or rates"))
    conversion = None
    if job_mtbi_hours is not None and any(p is not None for p in (spot_price, on_demand_price, reserved_price)):
        # preemptions measured per job, asked about spot: a gang of k instances is stopped by a preemption of any
        # one, so one instance is preempted k times less often than the job (independent preemptions)
        k = math.ceil((job_gpus if job_gpus is not None else gpus_per_instance) / gpus_per_instance - 1e-9)
        mtbi_hours, job_mtbi_hours = job_mtbi_hours * k, None
        conversion = (f"--job-mtbi-hours {_fmt_hours(mtbi_hours / k)} over the job's {k} instance"
                      f"{'s' if k != 1 else ''} = one preemption every {_fmt_hours(mtbi_hours)} h per instance "
                      f"(the same as --mtbi-hours {_fmt_hours(mtbi_hours)}): a preemption of any one stops the gang")
        if sweep is not None and not as_json:
            click.echo(f"note: {conversion}", err=True)
    rate = interruptions_per_hour if interruptions_per_hour is not None else (
        1.0 / mtbi_hours if mtbi_hours is not None else 0.0)
    job_rate = 1.0 / job_mtbi_hours if job_mtbi_hours is not None else None
    if not math.isfinite(rate) or (job_rate is not None and not math.isfinite(job_rate)):
        raise ConfigError(Problem("command line", "the interruption rate is not a finite number",
                                  value=mtbi_hours if mtbi_hours is not None else job_mtbi_hours,
                                  expected="a mean time between interruptions above 1e-300 hours"))
    # failures of the job, not spot preemptions: a job MTBI, or no preemption rate and no spot price
    failures = job_rate is not None or (rate == 0 and spot_price is None and sweep != "interruptions")
    _check_prices(failures, job_mtbi_hours is not None, spot_price, on_demand_price, reserved_price, gpu_price)
    m = gpus_per_instance
    job = job_gpus if job_gpus is not None else m
    C, R = checkpoint_minutes / 60, restart_minutes / 60
    tau = interval_minutes / 60 if interval_minutes is not None else None

    def one(c_h=C, gpus=job, per_instance=rate):
        if failures:
            lam = job_rate if job_rate is not None else float(eco.job_interruption_rate(
                0.0, gpus, m, failure_rate_per_gpu_hour))
            return eco.analyse_failures(lam, c_h, R, gpus, interval_h=tau, gpu_price=gpu_price,
                                        goodput_target=goodput_target)
        return eco.analyse_job(per_instance, job_gpus=gpus, m=m, checkpoint_h=c_h, restart_h=R, interval_h=tau,
                               failure=failure_rate_per_gpu_hour, spot_price=spot_price,
                               on_demand_price=on_demand_price, reserved_price=reserved_price, job_rate=job_rate)

    if sweep is None:
        result = one()
        if conversion is not None:
            result = {"per_instance_mtbi_hours": mtbi_hours, "conversion": conversion} | result
        if as_json:
            click.echo(json.dumps({k: jsonable(v) if not isinstance(v, str) else v for k, v in result.items()},
                                  indent=2))
        else:
            if conversion is not None:
                click.echo(f"note: {conversion}")
            click.echo(_spot_table(result, _FAILURE_LABELS if failures else _SPOT_LABELS))
        return

    key, key_header = _SWEEP_KEYS[sweep]
    if sweep == "interruptions":
        base = rate if rate > 0 else 0.01
        points = number_list(sweep_values) or list(np.geomspace(base / 10, base * 10, 13))
        rows = [one(per_instance=float(x)) for x in points]
    elif sweep == "job-gpus":
        points = number_list(sweep_values) or [m * 2 ** i for i in range(0, 16) if m * 2 ** i <= 16384]
        rows = [one(gpus=float(x)) for x in points]
    else:  # what a faster (asynchronous, in-memory) checkpoint buys
        base = checkpoint_minutes if checkpoint_minutes > 0 else 5.0
        points = number_list(sweep_values) or [base * f for f in (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)]
        rows = [one(c_h=float(x) / 60) for x in points]
    columns = (_FAILURE_SWEEP_COLUMNS + (_FAILURE_PRICE_COLUMNS if gpu_price is not None else [])
               if failures else _SPOT_SWEEP_COLUMNS)
    cols = [key] + [c for c, _ in columns]
    if as_json:
        click.echo(json.dumps([{c: jsonable(r[c]) for c in cols} for r in rows], indent=2))
    else:
        click.echo("  ".join(f"{h:>18}" for h in [key_header] + [h for _, h in columns]))
        for r in rows:
            click.echo("  ".join(f"{_cell(c, r[c]):>18}" for c in cols))
    if xlsx_path:
        write_spot_sweep(xlsx_path, rows, cols, key)
        click.echo(f"wrote {xlsx_path}")


def _fmt_hours(h: float) -> str:
    return f"{h:,.6g}"


def _check_prices(failures: bool, job_mtbi: bool, spot_price, on_demand_price, reserved_price, gpu_price) -> None:
    """Failures hit every purchase option alike: they take one fleet price, spot runs the option prices."""
    if failures:
        for flag, value in (("--spot-price", spot_price), ("--on-demand-price", on_demand_price),
                            ("--reserved-price", reserved_price)):
            if value is not None:
                what = ("--job-mtbi-hours gives failures of the job, not spot preemptions" if job_mtbi else
                        "no spot preemption rate is given: the run prices hardware failures")
                raise ConfigError(Problem(
                    "command line", f"{flag} compares purchase options, but {what}", value=value,
                    expected="--gpu-price USD per GPU-hour for the fleet the job runs on",
                    hint="failures hit reserved, on-demand and spot GPUs alike; for spot, give the preemption "
                         "rate per instance (--mtbi-hours or --interruptions-per-hour)"))
    elif gpu_price is not None:
        raise ConfigError(Problem("command line", "--gpu-price prices a job's failures, but this run is spot",
                                  value=gpu_price, expected="--spot-price (and --on-demand-price, --reserved-price)",
                                  hint="--gpu-price goes with --job-mtbi-hours, or --failure-rate-per-gpu-hour "
                                       "without a preemption rate"))


def _percent_text(percentile: float) -> str:
    """A percentile as typed: the shortest decimal reading back as the same double (``99``, ``99.9999999``)."""
    text = repr(float(percentile))
    return text[:-2] if text.endswith(".0") else text


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
    if not 0 < percentile <= queueing.MAX_PERCENTILE:
        raise ConfigError(Problem("command line", "--percentile out of range", value=percentile,
                                  expected=f"a percentile above 0 and at most {queueing.MAX_PERCENTILE:.10g}, e.g. 99",
                                  hint="closer to 100, the share of requests over the target (1 - p/100) is "
                                       "below what the percentile's floating-point rounding resolves"))
    pct = _percent_text(percentile)
    if not queueing.slo_feasible(service / 1000.0, slo_ms / 1000.0, percentile, service_cv):
        floor = queueing.latency_percentile(percentile, 0.0, service / 1000.0, 1, service_cv) * 1000.0
        raise ConfigError(Problem("command line", f"no number of replicas meets p{pct} <= {slo_ms:g} ms",
                                  value=f"--service-ms {service:g}",
                                  expected=f"--slo-ms >= {floor:.0f} (p{pct} of the service time alone)"
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
            click.echo(f"  {requests_per_s:g} requests/s, {service:g} ms service, p{pct} <= {slo_ms:g} ms")
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
                                              f"p{pct} ms")))
    for r in rows:
        click.echo("  ".join([f"{r['requests_per_s']:>14.4g}", f"{r['replicas']:>14d}", f"{r['gpus']:>14g}",
                              f"{r['utilisation']:>14.1%}", f"{r['p_latency_above_slo']:>14.4f}",
                              f"{r['latency_at_percentile_ms']:>14.0f}"]))
