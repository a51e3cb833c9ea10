"""Progress bars on stderr (tqdm): tasks of a sweep, compare or backtest, Benders iterations.

A bar is shown only when stderr is a terminal and the caller did not ask for quiet (``-q``); in a log
file or a pipe nothing is printed, so scripted runs keep clean stderr.
"""

from __future__ import annotations

import sys

DEFAULT_COLUMNS = 100  # the bar's width when the terminal reports none


def shown(enabled: bool = True) -> bool:
    """True when a bar would be drawn: asked for, and stderr is a terminal."""
    try:
        return bool(enabled) and sys.stderr.isatty()
    except (AttributeError, ValueError):  # stderr replaced or closed
        return False


def bar(total: int | None, desc: str, *, enabled: bool = True, unit: str = "task"):
    """A tqdm bar on stderr (``total=None``: a counter with no end); disabled unless :func:`shown`."""
    from tqdm import tqdm

    dynamic = _columns() > 0  # a terminal reporting 0 columns: tqdm's dynamic width would draw nothing
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not shown(enabled),
                dynamic_ncols=dynamic, ncols=None if dynamic else DEFAULT_COLUMNS, leave=False, mininterval=0.5)


def _columns() -> int:
    import shutil

    try:
        return int(shutil.get_terminal_size((0, 0)).columns)
    except (OSError, ValueError):
        return 0


class BendersProgress:
    """``Benders: 12 it [00:40, bound 399,318,274, incumbent 399,325,773, gap 1.9e-05]``; a callable
    ``progress(iteration, bound, incumbent)`` for :func:`planner.solve.decompose.solve_benders`."""

    def __init__(self, enabled: bool = True):
        self.bar = bar(None, "Benders", enabled=enabled, unit="it")

    def __call__(self, iteration: int, bound: float, incumbent: float) -> None:
        gap = (incumbent - bound) / abs(incumbent) if incumbent not in (0.0, float("inf")) else float("nan")
        self.bar.set_postfix_str(f"bound {bound:,.0f}, incumbent {incumbent:,.0f}, gap {gap:.1e}", refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        """Remove the bar."""
        self.bar.close()
