"""Every domain error of the planner, in one place.

The CLI maps them to exit codes: :class:`InputError` (and :class:`ConfigError`)
-> 2, :class:`SolverError` -> 1. Anything else is a bug and exits 1 with a
short message (the traceback only under ``--debug``).
"""

from __future__ import annotations

from dataclasses import dataclass


class PlannerError(Exception):
    """Base class of every error the planner raises on purpose."""

    exit_code = 1


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input, located as the user would look for it.

    ``row`` is numbered as the user's spreadsheet numbers it: the header is
    row 1, the first data row is row 2.
    """

    file: str
    message: str
    row: int | None = None
    column: str | None = None
    value: object = None
    expected: str | None = None
    hint: str | None = None

    def __str__(self) -> str:
        where = [self.file]
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column '{self.column}'")
        text = ", ".join(where) + ": " + self.message
        if self.value is not None:
            text += f" (got {_show(self.value)})"
        if self.expected:
            text += f"; expected {self.expected}"
        if self.hint:
            text += f". Hint: {self.hint}"
        return text


def _show(value: object) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


class InputError(PlannerError):
    """Bad input: one or more :class:`Problem` found, all reported at once."""

    exit_code = 2

    def __init__(self, problems: list[Problem] | Problem):
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        super().__init__(self.render())

    def render(self, limit: int = 50) -> str:
        """Every problem, one per line, as the CLI prints them."""
        lines = [str(p) for p in self.problems[:limit]]
        if len(self.problems) > limit:
            lines.append(f"... and {len(self.problems) - limit} more problems")
        head = "1 problem" if len(self.problems) == 1 else f"{len(self.problems)} problems"
        return f"{head} in the inputs:\n" + "\n".join(f"  - {line}" for line in lines)


class ConfigError(InputError):
    """A problem in the model file (TOML) or with the command-line options."""


class SolverError(PlannerError):
    """The solver is missing, crashed, or returned nothing usable."""

    exit_code = 1


class Collector:
    """Gathers problems so a check can report every one of them, then raise once."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, file: str, message: str, **where) -> None:
        """Record one problem (file, message and where/what/expected keywords of :class:`Problem`)."""
        self.problems.append(Problem(file=file, message=message, **where))

    def __bool__(self) -> bool:
        return bool(self.problems)

    def raise_if_any(self, error: type[InputError] = InputError) -> None:
        """Raise ``error_type`` with every recorded problem, if there is any."""
        if self.problems:
            raise error(self.problems)
