"""``planner history import``: a billing export (FOCUS) or a Prometheus range query -> a demand history."""

from __future__ import annotations

from pathlib import Path

import click

from planner.cli.group import cli
from planner.core.errors import InputError, Problem
from planner.cli.common import handle_errors, quiet_option


@cli.group()
def history():
    """Demand histories from the files you hold (billing exports, metrics): see docs/imports.md.

    Example:

    \b
        planner history import --focus bill.csv --prices prices.csv --out history.csv
    """


@history.command(name="import")
@click.option("--focus", "focus_file", type=click.Path(path_type=Path), default=None,
              help="FOCUS 1.0-1.2 cost-and-usage file (.csv, .csv.gz or .parquet).")
@click.option("--prices", type=click.Path(path_type=Path), default=None,
              help="Price sheet naming the pools (with --focus; its instance types from an instance_type column "
                   "or its .notes.md).")
@click.option("--inventory", "inventory_out", type=click.Path(path_type=Path), default=None,
              help="With --focus: write the bill's GPU commitments as an inventory file here.")
@click.option("--class-by", default="pool", show_default=True, metavar="pool|tag:KEY",
              help="With --focus: one class per pool (<gpu_type>@<region>) or per value of a key of Tags.")
@click.option("--prometheus", "prom_file", type=click.Path(path_type=Path), default=None,
              help="Prometheus /api/v1/query_range answer (JSON) of a GPU-requests metric.")
@click.option("--label", default=None, help="With --prometheus: the metric label whose value names the class.")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="History CSV to write (long form).")
@quiet_option
@handle_errors
def history_import(focus_file, prices, inventory_out, class_by, prom_file, label, out, quiet):
    """Write an hourly demand history (period, workload_class, gpus) from a bill or from metrics.

    Example:

    \b
        planner history import --focus billing.csv.gz --prices prices.csv --out history.csv --inventory owned.csv
        planner history import --focus billing.parquet --prices prices.csv --class-by tag:team --out history.csv
        planner history import --prometheus gpu_requests.json --label namespace --out history.csv
    """
    from planner.imports.history_write import write_history
    from planner.imports.guards import refuse_folders
    from planner.cli.common import refuse_overwriting_inputs

    if (focus_file is None) == (prom_file is None):
        raise InputError(Problem("command line", "give one of --focus or --prometheus",
                                 expected="--focus FILE --prices SHEET, or --prometheus FILE --label LABEL"))
    if out.suffix.lower() != ".csv":
        raise InputError(Problem("--out", "the history is one CSV file", value=str(out), expected="a path ending in .csv"))
    refuse_folders({"--out": out, "--inventory": inventory_out})
    refuse_overwriting_inputs({"--out": out, "--inventory": inventory_out},
                              {"--focus": focus_file, "--prices": prices, "--prometheus": prom_file,
                               "--prices' note": None if prices is None else Path(str(prices) + ".notes.md")})
    if focus_file is not None:
        from planner.imports.focus_history import import_focus

        if prices is None:
            raise InputError(Problem("command line", "--prices is required with --focus",
                                     expected="the price sheet whose pools (gpu_type, region) the usage is of"))
        result = import_focus(focus_file, prices, class_by, progress=not quiet)
    else:
        from planner.imports.prometheus import import_prometheus

        if inventory_out is not None:
            raise InputError(Problem("command line", "--inventory needs --focus (metrics show no commitments)"))
        result = import_prometheus(prom_file, label)
    say = (lambda *a, **k: None) if quiet else click.echo  # noqa: E731 (-q: errors only)
    say(", ".join(f"{k}: {v:,}" for k, v in result.counts.items()))
    h = result.history
    say(f"history: {h['workload_class'].nunique()} classes x {h['period'].nunique()} hours"
        + (f" ({h['period'].min()} .. {h['period'].max()})" if len(h) else ""))
    if len(result.notes):
        say("notes:", err=True)
        for n in result.notes:
            say(f"  - {n}", err=True)
    written = write_history(result, out, inventory_out)
    if inventory_out is not None and len(written) == 1:
        say(f"no GPU commitment in the bill: {inventory_out} not written", err=True)
    say("wrote " + " and ".join(str(p) for p in written))
