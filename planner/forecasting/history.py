"""The demand history a forecast learns from: read like a demand file, then one scenario, contiguous
periods of one length, numbers everywhere (every problem is an InputError naming file, row and column)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from planner.core.errors import Collector, InputError, Problem


@dataclass(frozen=True)
class History:
    """A checked history: ``values`` (K classes, T periods, oldest first) of GPUs, periods ``step_hours`` long."""

    classes: list
    periods: pd.DatetimeIndex
    step_hours: float
    values: np.ndarray
    source: str

    @property
    def end(self) -> pd.Timestamp:
        """Where the history ends (the start of the first forecast period)."""
        return self.periods[-1] + pd.Timedelta(hours=self.step_hours)


def read_history(path: str | Path, classes=None) -> History:
    """Read a history file (long or wide demand form, .csv or .xlsx); ``classes`` (names) restricts and checks
    the classes it may hold (the model file's), default: every class in the file."""
    from planner.inputs.io import read_table

    return _checked(read_table(path, "history"), classes)


def history_from_frame(frame: pd.DataFrame, classes=None) -> History:
    """:func:`read_history` for a DataFrame in memory (messages name ``<history DataFrame>`` and its rows)."""
    from planner.inputs.io import table_from_frame

    return _checked(table_from_frame(frame, "history"), classes)


def _class_names(raw) -> list:
    d = raw.data
    if "workload_class" in d.columns:
        return [c for c in dict.fromkeys(d["workload_class"]) if c != ""]
    return [c for c in d.columns if c not in ("period", "hours", "scenario")]


def _checked(raw, classes) -> History:
    from planner.inputs.validate import validate_demand

    bad = Collector()
    names = list(classes) if classes is not None else _class_names(raw)
    config = SimpleNamespace(classes={c: None for c in names}, scenarios={})
    long = validate_demand(raw, config, bad)
    bad.raise_if_any()
    if long["scenario"].nunique() > 1:
        raise InputError(Problem(raw.file, "a history is one series per class, not scenarios", column="scenario",
                                 value=", ".join(map(str, long["scenario"].unique()[:3])),
                                 hint="give the demand that happened (one scenario, or no scenario column)"))
    periods = pd.DatetimeIndex(np.sort(long["period"].unique()))
    hours = long.drop_duplicates("period").set_index("period")["hours"].reindex(periods).to_numpy(float)
    step = float(np.median(hours))
    if not np.allclose(hours, step):
        raise InputError(Problem(raw.file, "a history needs periods of one length", column="hours",
                                 value=f"{hours.min():g} to {hours.max():g} h"))
    if len(periods) > 1:
        gaps = np.flatnonzero(np.diff(periods.asi8) != int(round(step * 3600e9)))
        if len(gaps):
            raise InputError(Problem(raw.file, "a history needs contiguous periods (each starting where the last "
                                     "ends)", column="period", value=str(periods[gaps[0] + 1]),
                                     expected=str(periods[gaps[0]] + pd.Timedelta(hours=step)),
                                     hint="fill the missing periods (0 GPUs where nothing ran)"))
    wide = long.pivot(index="period", columns="workload_class", values="gpus").reindex(index=periods, columns=names)
    return History(classes=names, periods=periods, step_hours=step, values=wide.to_numpy(float).T,
                   source=raw.file)
