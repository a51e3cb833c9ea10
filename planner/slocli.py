"""``planner slo``: one inference service sized to its latency SLO (M/M/c), as a table, JSON or a sweep."""

from __future__ import annotations

import json

import click
import numpy as np

from . import queueing
from .errors import ConfigError, Problem
from .spotcli import _fmt, _values

_LABELS = [
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


def run_slo(requests_per_s, service_ms, requests_per_s_per_replica, slo_ms, percentile, gpus_per_replica,
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
    top = max([requests_per_s] + (_values(sweep_values) if sweep else []))
    if top * service / 1000.0 > queueing.MAX_REPLICAS / 2:
        raise ConfigError(Problem("command line", "load beyond what the planner sizes", value=f"{top:g} requests/s",
                                  expected=f"at most {queueing.MAX_REPLICAS // 2:,} Erlangs (requests/s x service s)"))
    if sweep is None:
        result = queueing.sizing(requests_per_s, **args)
        if as_json:
            click.echo(json.dumps(result, indent=2))
        else:
            click.echo(f"  {requests_per_s:g} requests/s, {service:g} ms service, p{percentile:g} <= {slo_ms:g} ms")
            for key, label in _LABELS:
                value = result[key]
                text = f"{value:.1%}" if key in ("utilisation", "p_wait", "p_latency_above_slo") else _fmt(value)
                click.echo(f"  {label:<50} {text}")
        return
    points = _values(sweep_values) or [float(v) for v in np.linspace(requests_per_s / 10, requests_per_s * 2, 20)]
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
