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
    from ..pipeline import OUTPUTS
    from ..report.html import write_html
    from .common import refuse_overwrite

    siblings = {n: Path(plan_json).with_name(n) for n in OUTPUTS}  # the plan's own files beside it
    refuse_overwrite({"--html": html_out}, {"PLAN_JSON": plan_json, **siblings})
    _check_json(plan_json)
    try:
        rep = write_html(plan_json, html_out)
    except (RecursionError, OverflowError) as exc:  # numbers or nesting past what a plan.json holds
        raise _malformed(plan_json, f"{type(exc).__name__}: {exc}") from None
    for note in rep.notes:
        click.secho(f"Note: {note}", fg="yellow", err=True)
    click.echo(f"wrote {rep.path} ({rep.figures} figures, {rep.bytes / 1e6:.2f} MB)")


def _malformed(path, why):
    from ..errors import InputError, Problem

    return InputError(Problem(str(path), f"is not a plan.json the planner can read ({why})",
                              expected="the plan.json `planner plan` wrote"))


def _check_json(path) -> None:
    """Exit 2 naming the file when PLAN_JSON is nested past what Python's parser takes (the rest: write_html)."""
    import json

    try:
        text = Path(path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return  # write_html names a missing or unreadable file itself
    try:
        json.loads(text)
    except RecursionError:
        raise _malformed(path, "nested too deeply") from None
    except ValueError:
        return  # write_html reports the line and column (and a document that is not an object)
