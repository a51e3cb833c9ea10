"""The ``planner`` command line: parse, call the library, print. No modelling here.

One module per family of commands (``plan``, ``whatif``, ``jobs``, ``fleet``); what they share
(exit codes, error handling, every option) is defined once in ``common``. Exit codes
(spec/contracts.md): 0 plan found and demand met; 1 internal or solver error; 2 bad input;
3 solved but demand not met or not proven optimal.
"""

from __future__ import annotations

import click

from .. import __version__
from .common import EXIT_ERROR, EXIT_INPUT, EXIT_NOT_MET, EXIT_OK  # noqa: F401  (re-exported for scripts)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="planner")
def cli():
    """GPU capacity planner: the cheapest reserved / on-demand / spot mix that meets demand.

    Example:

    \b
        planner plan                      # the bundled example
        planner plan models/q1.toml --solver cbc
    """


from . import fleet, forecast_cmd, history_cmd, jobs, plan, prices_cmd, report_cmd, sizing_cmd, whatif  # noqa: E402,F401  (each registers its commands on `cli`)


def main():  # console script entry point
    """Run the command line (``planner ...``)."""
    cli(prog_name="planner")


if __name__ == "__main__":  # pragma: no cover
    main()
