"""The periods of a decomposition's batches: calendar chunks, the inputs of one chunk, the aggregate a warm
start solves."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.inputs.activity import take_periods
from planner.inputs.arrays import PlanInputs


def chunk_index(inp: PlanInputs, chunk: str | int = "month") -> list[np.ndarray]:
    """Period positions of each chunk: calendar months (``"month"``), weeks (``"week"``) or days (``"day"``),
    consecutive short ones joined up to the longest one's periods (:func:`_merged`); or runs of N periods (an int)."""
    if isinstance(chunk, int):
        return [np.arange(a, min(a + chunk, inp.T)) for a in range(0, inp.T, chunk)]
    code = {"month": "M", "week": "W", "day": "D"}[chunk]
    key = inp.periods.to_period(code).asi8
    cuts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    return [np.arange(a, b) for a, b in zip(*_merged(cuts, inp.T))]


def _merged(starts: np.ndarray, T: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the calendar chunks beginning at ``starts`` (of ``T`` periods), consecutive chunks joined while
    the joined one holds no more periods than the longest calendar chunk: a whole-term tree's tail of 4-5-day
    periods is a few batches, not a week's batch of one or two periods each (every batch's LP, build and pricing
    carry a fixed cost). What one theta stands for (:func:`planner.solve.decompose.cut_groups`: a block, a day or a
    week) does not change, but identical periods of the joined chunks become one block, as within one: a model whose
    thetas are blocks has fewer of them (the bundled ladder 1,948 -> 1,748), and its master takes another path to the
    same optimum within the gap."""
    ends = np.r_[starts[1:], T]
    if len(starts) < 2:
        return starts, ends
    most = int((ends - starts).max())
    keep = [0]
    size = int(ends[0] - starts[0])
    for i in range(1, len(starts)):
        n = int(ends[i] - starts[i])
        if size + n <= most:
            size += n
        else:
            keep.append(i)
            size = n
    keep = np.asarray(keep)
    return starts[keep], np.r_[starts[keep][1:], T]


def chunk_inputs(inp: PlanInputs, index: np.ndarray) -> PlanInputs:
    """``inp`` on the periods ``index``, with every purchase row kept (its activity sliced) and the backfill
    economics of the whole horizon (not re-estimated on the chunk). A chunk's rows are the whole model's, never
    split again: the tree's rows before the split (``reserved_source``)
    are not carried (a batch sent to a worker is a third of the bytes). The chunk's activity is made whole
    (R x its periods): the model reads it once per purchase row, and a gather is faster than reading spans."""
    return replace(inp, periods=inp.periods[index], hours=inp.hours[index], demand=inp.demand[:, :, index],
                   inventory=inp.inventory[:, index], reserved_active=np.asarray(take_periods(inp.active, index)),
                   reserved_source=None,
                   availability=None if inp.availability is None else inp.availability[:, :, index],
                   requests=None if inp.requests is None else inp.requests[:, :, index])


def aggregate_inputs(inp: PlanInputs, k: int) -> PlanInputs:
    """Every ``k``-th period of ``inp``, each weighted by the hours of the ``k`` periods it stands for: a
    small model whose LP optimum is a good first purchase plan (a warm start; its bound proves nothing)."""
    idx = np.arange(0, inp.T, k)
    agg = chunk_inputs(inp, idx)
    return replace(agg, hours=np.add.reduceat(np.asarray(inp.hours, float), idx))
