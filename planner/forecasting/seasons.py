"""Which seasonalities a history can carry: a season of m periods needs two full cycles (2m periods)."""

from __future__ import annotations

from planner.core.errors import InputError, Problem

DEFAULT_SEASONALITY_HOURS = (24.0, 168.0)  # daily and weekly
CYCLES = 2  # full cycles of a season the history must hold before the season is fitted


def season_periods(step_hours: float, hours) -> list[int]:
    """Season lengths in periods for seasonalities in hours (those of one period or less vanish)."""
    out = []
    for h in hours:
        m = int(round(float(h) / step_hours))
        if m > 1 and m not in out:
            out.append(m)
    return out


def fitting(T: int, step_hours: float, asked=None, classes=(), source: str = "history") -> tuple[list[int], list]:
    """(season lengths in periods that ``T`` periods can carry, notes on the ones dropped).

    ``asked`` None: the daily and weekly seasonalities, each dropped when the history is shorter than two
    cycles of it (said in the notes). ``asked`` given (hours): every one must fit, else an InputError naming each
    class and the length needed.
    """
    hours = DEFAULT_SEASONALITY_HOURS if asked is None else tuple(asked)
    for h in hours:
        if asked is not None and (float(h) / step_hours < 1.5 or abs(float(h) / step_hours - round(float(h) / step_hours)) > 1e-9):
            raise InputError(Problem("--seasonality", "a seasonality must be a whole number of periods, at least 2",
                                     value=f"{h:g} h", expected=f"a multiple of the history's {step_hours:g} h "
                                     f"periods, at least {2 * step_hours:g} h"))
    seasons = season_periods(step_hours, hours)
    keep = [m for m in seasons if T >= CYCLES * m]
    dropped = [m for m in seasons if m not in keep]
    if asked is not None and dropped:
        m = max(dropped)
        raise InputError([Problem(source, f"history too short for the {m * step_hours:g} h seasonality asked: class "
                                  f"{c!r} has {T} periods of {step_hours:g} h; it needs at least {CYCLES * m} "
                                  f"({CYCLES} full cycles, {CYCLES * m * step_hours:g} h)", column="period",
                                  hint="give a longer history or drop that seasonality from --seasonality")
                          for c in classes] or [Problem(source, f"history too short: {T} periods; the "
                                                        f"{m * step_hours:g} h seasonality needs {CYCLES * m}")])
    notes = [f"the {m * step_hours:g} h seasonality was dropped: the history has {T} periods of {step_hours:g} h, "
             f"fewer than the {CYCLES * m} ({CYCLES} cycles) it needs" for m in dropped]
    return keep, notes
