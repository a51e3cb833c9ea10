"""Build the MILP of ``spec/formulation.md`` from :class:`~planner.inputs.PlanInputs`.

``build_model`` is a flat, ordered list of ``define_*`` calls: blocks, then
variables, then constraint families, then the objective. It holds no modelling
logic of its own. The model is kept as arrays (columns with bounds and costs,
rows as sparse triples); ``PlanModel.pulp()`` materialises it as a PuLP problem
(for CBC and LP/MPS export) and ``solve`` hands the arrays to HiGHS directly.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from pulp import LpContinuous, LpInteger, LpMinimize, LpProblem, LpAffineExpression

from . import constraints as con
from . import naming
from .blocks import Blocks, make_blocks
from .objective import objective_coefficients
from .rows import Rows
from .variables import define_variables
from ..inputs import PlanInputs


@dataclass
class PlanModel:
    families: dict[str, pd.DataFrame]  # variable families: keys and column
    blocks: Blocks
    cost: np.ndarray  # objective coefficient of every column
    lower: np.ndarray  # column bounds
    upper: np.ndarray
    integer: np.ndarray  # bool per column
    start: np.ndarray  # a feasible start: buy nothing, leave all demand unmet (the solver's first incumbent)
    constraints: Rows
    rows: dict[str, int] = field(default_factory=dict)  # constraint rows per family
    seconds: float = 0.0
    _pulp: tuple | None = None

    @property
    def n_variables(self) -> int:
        return len(self.cost)

    @property
    def n_constraints(self) -> int:
        return sum(self.rows.values())

    @property
    def nonzeros(self) -> int:
        return self.constraints.nonzeros

    def pulp(self) -> tuple[LpProblem, list]:
        """The model as a PuLP problem and its variables in column order (made once, on first use)."""
        if self._pulp is None:
            prob = LpProblem("fleet_plan", LpMinimize)
            variables = [None] * self.n_variables
            for family, frame in self.families.items():
                keys = [frame["c"].to_numpy()] if family == "n" else \
                    [frame[c].to_numpy() for c in frame.columns if c != "col"]
                cat = LpInteger if family == "n" else LpContinuous
                for col, name in zip(frame["col"].tolist(), naming.names(family, *keys) if len(frame) else []):
                    up = self.upper[col]
                    variables[col] = prob.add_variable(name, lowBound=float(self.lower[col]),
                                                       upBound=None if np.isinf(up) else float(up), cat=cat)
            self.constraints.to_pulp(prob, variables)
            nz = np.flatnonzero(self.cost)
            prob.setObjective(LpAffineExpression(zip([variables[i] for i in nz], self.cost[nz].tolist())))
            self._pulp = (prob, variables)
        return self._pulp

    @property
    def prob(self) -> LpProblem:
        return self.pulp()[0]

    @property
    def variables(self) -> list:
        return self.pulp()[1]


FAMILIES = (
    ("demand", con.define_demand_constraints),
    ("spot_share", con.define_spot_share_constraints),
    ("reserved_share", con.define_reserved_share_constraints),
    ("od_cap", con.define_on_demand_cap_constraints),
    ("spot_cap", con.define_spot_cap_constraints),
    ("reserved_cap", con.define_reserved_cap_constraints),
    ("backfill_peak", con.define_backfill_peak_constraints),
    ("backfill_dedicated", con.define_backfill_dedicated_constraints),
)


def build_model(inp: PlanInputs, merge_periods: bool | None = None,
                fixed_reserved: np.ndarray | None = None, dominance: bool = True) -> PlanModel:
    """The MILP for ``inp``; ``fixed_reserved`` fixes the instances bought per reserved option (recourse only).

    ``merge_periods`` (default: the model file's) and ``dominance`` switch the exact reductions.
    """
    t0 = time.perf_counter()
    merge = inp.config.solver.merge_periods if merge_periods is None else merge_periods
    blocks = make_blocks(inp.demand, inp.inventory, inp.hours, inp.probability, merge=merge)
    n_cols, fam = define_variables(inp, blocks, dominance=dominance)
    out = Rows()
    rows = {name: define(out, inp, blocks, fam) for name, define in FAMILIES}
    cost = objective_coefficients(inp, blocks, fam, n_cols)
    lower, upper = np.zeros(n_cols), np.full(n_cols, np.inf)
    integer = np.zeros(n_cols, dtype=bool)
    n_cols_res = fam["n"]["col"].to_numpy()
    integer[n_cols_res] = True
    start = np.zeros(n_cols)
    if fixed_reserved is not None:
        lower[n_cols_res] = upper[n_cols_res] = start[n_cols_res] = np.asarray(fixed_reserved, float)
    u = fam["u"]
    start[u["col"].to_numpy()] = (1 + inp.headroom[u["k"].to_numpy()]) * blocks.demand[u["k"], u["b"]]
    return PlanModel(families=fam, blocks=blocks, cost=cost, lower=lower, upper=upper, integer=integer,
                     start=start, constraints=out, rows=rows, seconds=time.perf_counter() - t0)
