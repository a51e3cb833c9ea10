"""The ``planner`` command line: parse, call the library, print. No modelling here.

One module per family of commands (``plan``, ``whatif``, ``jobs``, ``fleet``); what they share
(exit codes, error handling, every option) is defined once in ``common``. Exit codes
(spec/contracts.md): 0 plan found and demand met; 1 internal or solver error; 2 bad input;
3 solved but demand not met or not proven optimal.
"""

from __future__ import annotations

from planner.cli.common import EXIT_ERROR, EXIT_INPUT, EXIT_NOT_MET, EXIT_OK  # noqa: F401  (re-exported for scripts)


from planner.cli.group import cli  # noqa: F401  (the group; each module below registers its commands on it)
from planner.cli import fleet, forecast_cmd, history_cmd, jobs, plan, prices_cmd, report_cmd, sizing_cmd, whatif  # noqa: E402,F401  (each registers its commands on `cli`)


def main():  # console script entry point
    """Run the command line (``planner ...``)."""
    cli(prog_name="planner")


if __name__ == "__main__":  # pragma: no cover
    main()
