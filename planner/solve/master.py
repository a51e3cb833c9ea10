"""The Benders master's shared parts: its tolerances, the result it returns, and the first-stage rows it adds
(every family of :data:`planner.model.stages.FIRST_STAGE`), used by both masters (daily/weekly cuts and monthly)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planner.inputs.arrays import PlanInputs
from planner.model import stages

REL_TOL = 1e-9  # floating-point noise between the master's bound and the priced plan, relative
ABS_TOL = 1e-6  # and absolute (USD)


@dataclass
class BendersResult:
    """The purchases found, the bounds that prove them, and how the loop went."""

    n: np.ndarray  # instances per purchase row (the best integer plan found)
    upper: float  # its exact cost on the full model (purchases + every period's recourse)
    lower: float  # the master's bound
    iterations: int
    chunks: int  # number of thetas (cut groups); with multicut=False, of monthly chunks
    seconds: float
    status: str  # "optimal" (gap proven) or "feasible" (time limit)
    history: list  # (iteration, lower, upper, seconds) per iteration
    batches: int = 0  # batched recourse LPs priced per pass
    cut_by: str = "month"  # what one theta stands for: "block", "day", "week" (or the old "month" chunks)
    phases: dict = field(default_factory=dict)  # seconds per phase (aggregate, lp, rounding, integer, pricing)
    cuts: int = 0  # cuts in the master at the end
    integer_master: int = 0  # integer master solves (0: the rounded relaxation closed the gap)
    priced: list | None = None  # per batch, its pricing at ``n`` with the column values and dual sums (the plan)
    keys: list | None = None  # per batch, (family keys, block_of): how its columns map onto the whole model
    row_counts: dict | None = None  # rows per constraint family over all batches
    chunk_periods: list | None = None  # per batch, its period positions
    workers: int = 1  # processes (or Dask actors) that priced the batches
    pricer: str = "here"  # "here", "local" (worker processes) or "dask"
    threads: int = 1  # "here": the threads that priced the batches side by side (planner.solve.workers.LocalPricer)
    restarts: int = 0  # workers replaced after they died
    bases_lost: int = 0  # batches priced cold because the worker that kept their basis had died (this solve)
    cuts_dropped: dict = field(default_factory=dict)  # cuts deleted from the master, by why (slack; before integer),
    # and of the slack ones how many went back in (returned)
    seeded_cuts: int = 0  # cuts from an earlier solve: a plan's pricing (``warm["cuts"]``), a solve's log (``warm["prior"]``)
    cut_log: dict | None = None  # every pricing's cuts (``keep_log=True``): a later solve's ``warm["prior"]``

    @property
    def gap(self) -> float:
        """Proven relative gap (upper - lower) / upper."""
        return max(self.upper - self.lower, 0.0) / max(abs(self.upper), 1e-9)


def add_first_stage_rows(master, inp: PlanInputs, inf: float, fams: dict | None = None) -> dict:
    """Add every first-stage family's rows (:data:`planner.model.stages.FIRST_STAGE`) to a HiGHS master whose
    first columns are the purchases ``n``; returns them by family (for :func:`first_stage_feasible`). ``fams``:
    those rows when already read (:func:`planner.model.stages.first_stage_rows`)."""
    fams = stages.first_stage_rows(inp) if fams is None else fams
    for f in fams.values():
        for cols, coefs, rhs in zip(f.members, f.coefs, f.rhs):
            master.addRow(-inf, float(rhs), len(cols), np.asarray(cols, np.int32), np.asarray(coefs, float))
    return fams


def first_stage_feasible(fams: dict, x: np.ndarray) -> bool:
    """Whether purchases ``x`` satisfy every first-stage family's rows."""
    return all(coefs @ x[cols] <= rhs + 1e-6 * max(1.0, abs(rhs))
               for f in fams.values() for cols, coefs, rhs in zip(f.members, f.coefs, f.rhs))


def check_master(h, highspy, phase: str = "master") -> None:
    """Raise a SolverError when a Benders master's LP or MIP (HiGHS ``h``, just run) is unbounded or infeasible:
    its column values then say nothing, and pricing them would fail far from the cause."""
    status = h.getModelStatus()
    if status in (highspy.HighsModelStatus.kUnbounded, highspy.HighsModelStatus.kUnboundedOrInfeasible,
                  highspy.HighsModelStatus.kInfeasible):
        from planner.core.errors import SolverError

        raise SolverError(f"the Benders master ({phase}) is {h.modelStatusToString(status)}: some purchases pay "
                          "back more than they cost (a resale credited more than its term?) or the first-stage rows "
                          "contradict each other; nothing was written")
