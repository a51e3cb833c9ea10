"""``planner report``: a plan.json as one self-contained HTML page (figures readable offline)."""

from __future__ import annotations

from pathlib import Path

import click

from . import cli
from .common import handle_errors


@cli.command()
@click.argument("plan_json", type=click.Path(path_type=Path))
@click.option("--html", "html_out", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="The HTML file to write (one file, plotly.js inlined: no network needed to read it).")
@handle_errors
def report(plan_json, html_out):
    """Draw a plan: load-duration curves with the break-even line per pool, the fleet mix over time, the
    ladder of GPUs owned by purchase date, cash by month and the purchases, in one offline HTML file.

    PLAN_JSON is a plan.json written by `planner plan`; the fleet.csv beside it gives the hourly
    curves (without it they are of monthly means). See docs/report.md.

    Example:

    \b
        planner report outputs/example-q1-2027/plan.json --html outputs/example-report.html
    """
    from ..report.html import write_html

    rep = write_html(plan_json, html_out)
    for note in rep.notes:
        click.secho(f"Note: {note}", fg="yellow", err=True)
    click.echo(f"wrote {rep.path} ({rep.figures} figures, {rep.bytes / 1e6:.2f} MB)")
