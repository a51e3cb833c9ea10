"""Build the MILP of ``spec/formulation.md`` from :class:`~planner.inputs.PlanInputs`.

``build_model`` is a flat, ordered list of ``define_*`` calls: blocks, then
variables, then constraint families, then the objective. It holds no modelling
logic of its own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from pulp import LpMinimize, LpProblem

from . import constraints as con
from .blocks import Blocks, make_blocks
from .objective import define_objective, objective_coefficients
from .variables import define_variables
from ..inputs import PlanInputs


@dataclass
class PlanModel:
    prob: LpProblem
    variables: list
    families: dict[str, pd.DataFrame]
    blocks: Blocks
    cost: np.ndarray  # objective coefficient of every variable
    start: np.ndarray  # a feasible start: buy nothing, leave all demand unmet (the solver's first incumbent)
    rows: dict[str, int] = field(default_factory=dict)  # constraint rows per family
    seconds: float = 0.0

    @property
    def n_variables(self) -> int:
        return len(self.variables)

    @property
    def n_constraints(self) -> int:
        return sum(self.rows.values())


FAMILIES = (
    ("demand", con.define_demand_constraints),
    ("spot_share", con.define_spot_share_constraints),
    ("reserved_share", con.define_reserved_share_constraints),
    ("od_cap", con.define_on_demand_cap_constraints),
    ("spot_cap", con.define_spot_cap_constraints),
    ("reserved_cap", con.define_reserved_cap_constraints),
)


def build_model(inp: PlanInputs, merge_periods: bool | None = None,
                fixed_reserved: np.ndarray | None = None) -> PlanModel:
    """The MILP for ``inp``; ``fixed_reserved`` fixes the instances bought per reserved option (recourse only)."""
    t0 = time.perf_counter()
    merge = inp.config.solver.merge_periods if merge_periods is None else merge_periods
    blocks = make_blocks(inp.demand, inp.inventory, inp.hours, inp.probability, merge=merge)
    prob = LpProblem("fleet_plan", LpMinimize)
    variables, fam = define_variables(prob, inp, blocks, fixed_reserved)
    rows = {name: define(prob, variables, inp, blocks, fam) for name, define in FAMILIES}
    cost = objective_coefficients(inp, blocks, fam, len(variables))
    define_objective(prob, variables, cost)
    start = np.zeros(len(variables))
    if fixed_reserved is not None:
        start[fam["n"]["col"].to_numpy()] = fixed_reserved
    u = fam["u"]
    start[u["col"].to_numpy()] = (1 + inp.headroom[u["k"].to_numpy()]) * blocks.demand[u["k"], u["b"]]
    return PlanModel(prob=prob, variables=variables, families=fam, blocks=blocks, cost=cost, start=start,
                     rows=rows, seconds=time.perf_counter() - t0)
