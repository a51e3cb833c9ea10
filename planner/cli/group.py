"""The ``planner`` click group every command module registers on (kept apart so no module imports the package back)."""

from __future__ import annotations

import click

from planner import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="planner")
def cli():
    """GPU capacity planner: the cheapest reserved / on-demand / spot mix that meets demand.

    Example:

    \b
        planner plan                      # the bundled example
        planner plan models/q1.toml --solver cbc
    """
