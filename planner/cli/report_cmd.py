"""``planner report``: a plan.json as one self-contained HTML page (figures readable offline)."""

from __future__ import annotations

from pathlib import Path

import click

from planner.cli.group import cli
from planner.cli.common import handle_errors

PLAN_FILES = ("plan.json", "plan.xlsx", "allocation.csv", "fleet.csv")  # what `planner plan` publishes together


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
    from planner.core.errors import InputError, PlannerError, Problem
    from planner.report.html import write_html
    from planner.cli.common import refuse_overwriting_inputs

    # the plan's own files beside plan.json (published together by `planner plan`) are inputs too
    # beside the plan.json a link points at, too (links resolved): the files `planner plan` wrote with it
    beside = {Path(plan_json).with_name(name) for name in PLAN_FILES} | \
        {Path(plan_json).resolve().with_name(name) for name in PLAN_FILES}
    refuse_overwriting_inputs({"--html": html_out}, {"PLAN_JSON": plan_json} | {
        f"{p.name} beside PLAN_JSON ({p.parent})": p for p in sorted(beside)})
    try:
        rep = write_html(plan_json, html_out)
    except PlannerError:
        raise
    except (RecursionError, ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError) as exc:
        # a plan.json of the right top-level shape whose contents are not what `planner plan` writes
        # (a number of 400 digits, nesting thousands deep, a string where a table's row goes): bad input
        what = "nested too deeply" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {exc}"[:200]
        raise InputError(Problem(str(plan_json), f"cannot be read as a plan ({what})",
                                 expected="a plan.json written by `planner plan`")) from None
    for note in rep.notes:
        click.secho(f"Note: {note}", fg="yellow", err=True)
    click.echo(f"wrote {rep.path} ({rep.figures} figures, {rep.bytes / 1e6:.2f} MB)")
