"""``planner spot``: the checkpoint and spot economics of one job, as a table, JSON, a sweep or a workbook."""

from __future__ import annotations

import json
import math

import click
import numpy as np

from . import economics as eco
from .atomic import atomic_path
from .errors import ConfigError, Problem


def _finite(x):
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    x = float(x)
    return x if math.isfinite(x) else None


def analyse(rate: float, checkpoint_h: float, restart_h: float, job_gpus: float, m: float,
            interval_h: float | None = None, failure: float = 0.0, spot_price: float | None = None,
            on_demand_price: float | None = None, reserved_price: float | None = None,
            job_rate: float | None = None) -> dict:
    """Everything ``planner spot`` reports for one job; ``job_rate`` fixes the job's interruption rate."""
    lam = float(job_rate) if job_rate is not None else float(eco.job_interruption_rate(rate, job_gpus, m, failure))
    opt = float(eco.optimal_interval(lam, checkpoint_h))
    tau = opt if interval_h is None else interval_h
    g = float(eco.goodput(lam, tau, checkpoint_h, restart_h))
    out = {
        "interruptions_per_instance_hour": rate if job_rate is None else None,
        "instances_per_job": float(eco.instances_spanned(job_gpus, m)),
        "job_gpus": job_gpus, "gpus_per_instance": m,
        "job_interruptions_per_hour": lam,
        "job_mtbi_hours": 1 / lam if lam > 0 else None,
        "checkpoint_minutes": checkpoint_h * 60, "restart_minutes": restart_h * 60,
        "young_interval_minutes": float(eco.young_interval(lam, checkpoint_h)) * 60 if lam > 0 else None,
        "optimal_interval_minutes": opt * 60,
        "interval_minutes": tau * 60,
        "goodput": g,
        "expected_lost_minutes_per_interruption": float(eco.expected_lost_hours(lam, tau, checkpoint_h, restart_h)) * 60,
        "effective_usd_per_useful_gpu_hour": None, "spot_pays": None,
        "break_even_interruptions_per_hour": None, "max_paying_job_gpus": None,
    }
    if spot_price is not None:
        out["effective_usd_per_useful_gpu_hour"] = float(eco.effective_price(spot_price, g)) if g > 0 else math.inf
    if spot_price is not None and on_demand_price is not None:
        out["spot_pays"] = bool(spot_price < on_demand_price * g)
        if job_rate is None:
            out["break_even_interruptions_per_hour"] = float(eco.break_even_rate(
                spot_price, on_demand_price, checkpoint_h, restart_h, job_gpus, m, interval_h, failure))
            out["max_paying_job_gpus"] = float(eco.max_paying_job_gpus(
                spot_price, on_demand_price, rate, checkpoint_h, restart_h, m, interval_h, failure))
    if spot_price is not None and reserved_price is not None:
        out["spot_beats_reserved"] = bool(spot_price < reserved_price * g)
        if job_rate is None:
            out["break_even_vs_reserved_interruptions_per_hour"] = float(eco.break_even_rate(
                spot_price, reserved_price, checkpoint_h, restart_h, job_gpus, m, interval_h, failure))
    return out


def run_spot(interruptions_per_hour, mtbi_hours, checkpoint_minutes, restart_minutes, interval_minutes, job_gpus,
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
        result = analyse(rate, job_gpus=job, m=m, job_rate=job_rate, **args)
        if as_json:
            click.echo(json.dumps({k: _finite(v) if not isinstance(v, str) else v for k, v in result.items()},
                                  indent=2))
        else:
            click.echo(_table(result))
        return

    if sweep == "interruptions":
        base = rate if rate > 0 else 0.01
        points = _values(sweep_values) or list(np.geomspace(base / 10, base * 10, 13))
        rows = [analyse(float(x), job_gpus=job, m=m, **args) for x in points]
        key = "interruptions_per_instance_hour"
    else:
        points = _values(sweep_values) or [m * 2 ** i for i in range(0, 16) if m * 2 ** i <= 16384]
        rows = [analyse(rate, job_gpus=float(x), m=m, job_rate=None, **args) for x in points]
        key = "job_gpus"
    cols = [key, "job_interruptions_per_hour", "interval_minutes", "goodput", "effective_usd_per_useful_gpu_hour",
            "spot_pays"]
    if as_json:
        click.echo(json.dumps([{c: _finite(r[c]) for c in cols} for r in rows], indent=2))
    else:
        click.echo("  ".join(f"{c:>18}" for c in ("rate/inst-h" if key.startswith("interr") else "job GPUs",
                                                  "job rate/h", "interval min", "goodput", "USD/useful h",
                                                  "spot pays")))
        for r in rows:
            click.echo("  ".join(f"{_fmt(r[c]):>18}" for c in cols))
    if xlsx_path:
        _write_sweep(xlsx_path, rows, cols, key)
        click.echo(f"wrote {xlsx_path}")


def _values(text: str | None) -> list[float]:
    if not text:
        return []
    try:
        vals = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(Problem("command line", "--sweep-values must be comma-separated numbers",
                                  value=text)) from None
    if any(v < 0 or not math.isfinite(v) for v in vals):
        raise ConfigError(Problem("command line", "--sweep-values must be finite numbers >= 0", value=text))
    return vals


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and not math.isfinite(v):
        return "inf"
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e9:
        return f"{int(v)}"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


_LABELS = [
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


def _table(result: dict) -> str:
    lines = []
    for key, label in _LABELS:
        if key in result:
            lines.append(f"  {label:<46} {_fmt(result[key])}")
    return "\n".join(lines)


def _write_sweep(path, rows, cols, key) -> None:
    from openpyxl import Workbook
    from openpyxl.chart import LineChart, Reference

    wb = Workbook()
    ws = wb.active
    ws.title = "Sweep"
    ws.append(cols)
    for r in rows:
        ws.append([("yes" if r[c] else "no") if isinstance(r[c], bool) else _finite(r[c]) for c in cols])
    n = len(rows) + 1
    chart = LineChart()
    chart.title = f"Goodput against {key.replace('_', ' ')}"
    chart.add_data(Reference(ws, min_col=4, min_row=1, max_row=n), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n))
    ws.add_chart(chart, "H2")
    price = LineChart()
    price.title = "Effective USD per useful GPU-hour"
    price.add_data(Reference(ws, min_col=5, min_row=1, max_row=n), titles_from_data=True)
    price.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n))
    ws.add_chart(price, "H20")
    with atomic_path(path) as tmp:
        wb.save(tmp)
