"""The options of one plan: how to solve it (solver, limits), what is fixed or added, where the work runs.

One object that the command line, the Python API, the memo's re-solves and the backtest all build, instead of a
dozen keyword arguments passed down by hand (``planner.pipeline.run.make_plan(inp, options)``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class PlanOptions:
    """How one plan is made. Every field defaults to the model file's settings or the planner's default.

    - ``backend`` (``"highs"`` or ``"cbc"``), ``time_limit_s``, ``mip_gap``: override the model file's ``[solver]``.
    - ``fixed_reserved``: instances per row of the commitments table, fixed (the recourse is re-solved).
    - ``risk``: with scenarios, also the risk view (EVPI, VSS, worst case: 2 + S more solves).
    - ``extend(model)``: called on the built model before it is solved (add rows and columns; no decomposition).
    - ``write_model``: write the model solved (``.lp`` or ``.mps``).
    - ``shadow``: shadow prices (default: when the model file sets a ``[budget]``).
    - ``progress``: a bar of the Benders iterations on stderr (a terminal only).
    - ``executor``: where the decomposition prices its batches (:mod:`planner.core.executors`; default here).
    - ``warm``: a decomposed plan's ``recourse`` (its batches' last bases), a warm start for fixed purchases.
    - ``keep_cuts``: with ``fixed_reserved`` on a decomposed model, keep that pricing as Benders cuts in the plan's
      ``recourse`` (``"cuts"``): a decomposed solve of the very same inputs given that ``recourse`` as ``warm``
      starts its master with them and with those purchases as its first incumbent (the horizon-only comparison).
      Without ``fixed_reserved``, a decomposed solve keeps every pricing's cuts in the plan's ``recourse``
      (``"prior"``): a later decomposed solve of the very same inputs given ``{"prior": ...}`` in ``warm`` starts its
      master with them (the risk view's first-stage plan, after the comparison).
    - ``common``: on a scenario tree, every purchase common to all scenarios (the plan that cannot wait for
      information; the risk view's first-stage plan): the plan of the first-stage inputs; a decomposed decision
      prices them on the tree's own batches (:mod:`planner.solve.tied`), the tree's ``warm`` bases and cuts its start.
    - ``timings``: seconds already spent (e.g. reading), carried into the plan's timings.
    - ``decision``: only what deciding the purchases needs (the whole-term decision, the horizon-only comparison):
      the purchases, costs, objective and per-scenario costs, without the exit value's extra solve; a decomposed
      solve reads them from its batches' costs without building the whole model (its per-period tables are then
      empty), a solve of the whole model without its per-class allocation table.
    """

    backend: str | None = None
    time_limit_s: float | None = None
    mip_gap: float | None = None
    fixed_reserved: Any = None
    risk: bool = True
    extend: Callable | None = None
    write_model: str | Path | None = None
    shadow: bool | None = None
    progress: bool = False
    executor: Any = None
    warm: dict | None = None
    timings: dict | None = None
    decision: bool = False
    keep_cuts: bool = False
    common: bool = False

    @classmethod
    def of(cls, options: "PlanOptions | None" = None, **overrides) -> "PlanOptions":
        """``options`` (default: all defaults) with ``overrides`` applied; an unknown name is a TypeError."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"unknown plan option(s) {unknown}; expected some of {sorted(known)}")
        base = options if options is not None else cls()
        return replace(base, **overrides) if overrides else base

    def solve_settings(self) -> dict:
        """The solver settings alone (``backend``, ``time_limit_s``, ``mip_gap``), for re-solves."""
        return {"backend": self.backend, "time_limit_s": self.time_limit_s, "mip_gap": self.mip_gap}
