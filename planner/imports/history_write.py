"""The imported history as the planner's long-form demand file (``period, workload_class, gpus``), and the
commitments found as an inventory file; published together or not at all."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from planner.core.csvsafe import inert_frame
from planner.imports.guards import publish

HISTORY_COLUMNS = ["period", "workload_class", "gpus"]
INVENTORY_COLUMNS = ["gpu_type", "region", "option", "gpus", "start", "end"]


@dataclass
class HistoryResult:
    """What an import found: the hourly demand (long form), the commitments as inventory rows, the counts of
    rows read and kept (label -> number, in order) and every assumption or loss, one line each."""

    history: pd.DataFrame
    inventory: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=INVENTORY_COLUMNS))
    counts: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def hourly_grid(spread: pd.DataFrame, span: tuple | None = None) -> pd.DataFrame:
    """``period, key, gpus`` -> the long-form history: every hour from the first to the last (or of ``span``,
    (first hour, last hour), where wider: a bill's charge periods, its hours without GPU usage 0), every class in
    each (0 where a class had no usage), ``period`` as ``YYYY-MM-DDTHH:MM``."""
    if not len(spread):
        return pd.DataFrame(columns=HISTORY_COLUMNS)
    first, last = spread["period"].min(), spread["period"].max()
    if span is not None:
        first, last = min(first, span[0]), max(last, span[1])
    hours = pd.date_range(first, last, freq="h")
    classes = sorted(spread["key"].unique())
    full = pd.MultiIndex.from_product([hours, classes], names=["period", "key"])
    g = spread.groupby(["period", "key"])["gpus"].sum().reindex(full, fill_value=0.0).reset_index()
    return pd.DataFrame({"period": g["period"].dt.strftime("%Y-%m-%dT%H:%M"), "workload_class": g["key"],
                         "gpus": g["gpus"].clip(lower=0.0).round(6)})


def write_history(result: HistoryResult, out: str | Path, inventory_out: str | Path | None = None) -> list[Path]:
    """Write the history CSV to ``out`` (and the inventory CSV to ``inventory_out`` when given and there is a
    commitment to write), published together or not at all, text cells inert (planner.core.csvsafe); the paths
    written."""
    writers = {Path(out): lambda tmp: inert_frame(result.history.reindex(columns=HISTORY_COLUMNS)).to_csv(
        tmp, index=False, float_format="%.6f", lineterminator="\n")}
    if inventory_out is not None and len(result.inventory):
        writers[Path(inventory_out)] = lambda tmp: inert_frame(result.inventory.reindex(columns=INVENTORY_COLUMNS)) \
            .to_csv(tmp, index=False, float_format="%.6g", lineterminator="\n")
    return publish(writers)
