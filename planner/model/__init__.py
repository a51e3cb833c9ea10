"""Build the MILP of ``spec/formulation.md`` from :class:`~planner.inputs.arrays.PlanInputs`.

``build_model`` is a flat, ordered list of ``define_*`` calls: blocks, then
variables, then constraint families, then the objective. It holds no modelling
logic of its own. The model is kept as arrays (columns with bounds and costs,
rows as sparse triples); ``PlanModel.to_pulp()`` derives a PuLP problem from it
(for CBC and LP/MPS export) and ``solve`` hands the arrays to HiGHS directly. Users
extend the model through the arrays (``add_columns``, ``add_rows``), never through
the derived PuLP problem, so every backend solves the same model.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from pulp import LpContinuous, LpInteger, LpMinimize, LpProblem, LpAffineExpression

from planner.model import constraints as con
from planner.model import naming
from planner.model import stages
from planner.model.blocks import Blocks, make_blocks
from planner.model.budget import define_budget_constraints
from planner.model.objective import objective_coefficients, tie_breaks
from planner.model.objective import owned_tie as owned_tie_of
from planner.model.rows import EQ, GE, LE, Rows
from planner.model.variables import define_variables
from planner.inputs.arrays import PlanInputs
from planner.inputs import rented


def unit_integer(inp: PlanInputs) -> np.ndarray:
    """(R,) whether each commitments-table row's first-stage decision is a whole number (instances)."""
    res = inp.commitments
    return res["integer"].to_numpy(bool)


def unit_bounds(inp: PlanInputs) -> np.ndarray:
    """(R,) the upper bound of each row's first-stage decision (a capacity block's offer; inf elsewhere)."""
    res = inp.commitments
    return res["max_units"].to_numpy(float)


_SENSES = {"<=": LE, ">=": GE, "==": EQ}
_USER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
_NUMBERED = re.compile(r"_\d+$")  # generated names end in _<digits>: yours may not, so they never collide


def _indices(values, what: str) -> np.ndarray:
    """Whole-number positions as int64; a fraction, NaN or text is a ValueError (never truncated)."""
    arr = np.atleast_1d(np.asarray(values))
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    as_float = np.asarray(arr, dtype=float)
    if not np.all(np.isfinite(as_float)) or np.any(as_float != np.round(as_float)):
        raise ValueError(f"{what} must be whole numbers (got {arr[:5].tolist()} ...)")
    return as_float.astype(np.int64)


def _finite(values, what: str, allow_inf: bool = False) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if np.any(bad):
        raise ValueError(f"{what} must be finite numbers" + (" (or +/-inf)" if allow_inf else ""))
    return arr


def _summed(rows: np.ndarray, cols: np.ndarray, coefs: np.ndarray):
    """Triples with one entry per (row, column): duplicates summed, as every solver must read them."""
    if not len(rows):
        return rows, cols, coefs
    key = np.stack([rows, cols], axis=1)
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    total = np.zeros(len(uniq))
    np.add.at(total, inverse.reshape(-1), coefs)
    return uniq[:, 0], uniq[:, 1], total


@dataclass
class PlanModel:
    """The MILP as arrays: the one truth every backend solves.

    Columns are laid out by variable family (``families``: integer keys and ``col``); rows are
    sparse triples per constraint family (``constraints``). ``to_pulp()`` derives a PuLP problem
    from the arrays when one is wanted (CBC, LP/MPS export, inspection): changes made to that
    problem are not solved by anyone. To extend the model, use ``columns``, ``add_columns`` and
    ``add_rows`` / ``add_constraint``: every backend solves what they add.
    """

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
    labels: dict = field(default_factory=dict)  # names a person reads: classes, pools, options, block periods
    user_columns: dict[str, np.ndarray] = field(default_factory=dict)  # extension columns by name
    tie: tuple = (np.zeros(0, np.int64), np.zeros(0))  # (columns, coefficients) of the tie-breaks within ``cost``
    # (planner.model.objective.tie_breaks: not costs; ``untied_cost()`` is the cost without them)
    owned: tuple = (np.zeros(0, np.int64), np.zeros(0))  # the owned-GPU tie-break's part of ``tie``
    # (planner.model.objective.owned_tie: a plan is read with it, a decision's pricing leaves it out)

    def untied_cost(self) -> np.ndarray:
        """Every column's objective coefficient without the tie-breaks: what it costs (or its NPV)."""
        c = self.cost.copy()
        np.subtract.at(c, self.tie[0], self.tie[1])
        return c

    def tie_at(self, values: np.ndarray) -> float:
        """What the tie-breaks add to the objective at the column values ``values`` (the objective less it is the
        cost)."""
        cols, coefs = self.tie
        return float(coefs @ np.asarray(values, float)[cols]) if len(cols) else 0.0

    def __repr__(self) -> str:
        return (f"PlanModel({self.n_variables:,} columns ({int(self.integer.sum())} integer), "
                f"{self.n_constraints:,} rows, {self.nonzeros:,} nonzeros, {self.blocks.B} blocks"
                + (f", extensions {sorted(self.user_columns)}" if self.user_columns else "") + ")")

    @property
    def n_variables(self) -> int:
        """Number of columns."""
        return len(self.cost)

    @property
    def n_constraints(self) -> int:
        """Number of rows."""
        return sum(self.rows.values())

    @property
    def nonzeros(self) -> int:
        """Number of nonzero coefficients in the rows."""
        return self.constraints.nonzeros

    # ---- derived views -------------------------------------------------------------------------------
    def column_names(self) -> list[str]:
        """The name of every column, in column order (``naming`` for the planner's, yours for extensions)."""
        names = [""] * self.n_variables
        for family, frame in self.families.items():
            if not len(frame):
                continue
            keys = [frame["c"].to_numpy()] if family == "n" else \
                [frame[c].to_numpy() for c in frame.columns if c not in ("col", "rate")]  # v's rate is data
            for col, name in zip(frame["col"].tolist(), naming.names(family, *keys)):
                names[col] = name
        for name, cols in self.user_columns.items():
            for i, col in enumerate(cols.tolist()):
                names[col] = name if len(cols) == 1 else f"{name}_{i}"
        return names

    def to_pulp(self) -> tuple[LpProblem, list]:
        """A new PuLP problem made from the arrays, and its variables in column order.

        It is a copy: constraints added to it are not seen by the solvers (use ``add_rows``).
        """
        prob = LpProblem("fleet_plan", LpMinimize)
        variables = []
        for col, name in enumerate(self.column_names()):
            up, lo = self.upper[col], self.lower[col]
            variables.append(prob.add_variable(name, lowBound=None if np.isinf(lo) else float(lo),  # free: None
                                               upBound=None if np.isinf(up) else float(up),
                                               cat=LpInteger if self.integer[col] else LpContinuous))
        self.constraints.to_pulp(prob, variables)
        nz = np.flatnonzero(self.cost)
        prob.setObjective(LpAffineExpression(zip([variables[i] for i in nz], self.cost[nz].tolist())))
        return prob, variables

    def write(self, path: str | Path) -> Path:
        """Write the model as CPLEX LP (``.lp``) or free MPS (``.mps``), whole or not at all."""
        from planner.core.atomic import atomic_path

        path = Path(path)
        if path.suffix.lower() not in (".lp", ".mps"):
            from planner.core.errors import ConfigError, Problem

            raise ConfigError(Problem(str(path), "unknown model file format", value=path.suffix or "(none)",
                                      expected=".lp (CPLEX LP) or .mps (free MPS)"))
        prob, _ = self.to_pulp()
        try:
            with atomic_path(path) as tmp:
                if path.suffix.lower() == ".mps":
                    prob.writeMPS(str(tmp))
                else:
                    prob.writeLP(str(tmp))
        except OSError as exc:  # name the user's path, not the temporary file beside it
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        return path

    def columns(self, family: str) -> pd.DataFrame:
        """The columns of a variable family with labels a person reads, and ``col`` (its column).

        ``n``: gpu_type, region, option, term_months; ``r`` (rented: ``kind`` on_demand, spot, flex_start), ``x``,
        ``xd``: workload_class, gpu_type, region, block, scenario, period (the block's first); ``y`` / ``z``: the
        on-demand / spot rows of ``r``; ``u``: workload_class, block, ...; ``pk``: pool.
        Keys are only where the variable exists (see ``variables.py``).
        """
        if family in self.user_columns:
            return pd.DataFrame({"name": self.column_names_of(family), "col": self.user_columns[family]})
        if family in RENTED_ALIASES and "r" in self.families:  # y / z: the on-demand / spot rows of r
            whole = self.columns("r")
            return whole[whole["kind"] == RENTED_ALIASES[family]].drop(columns="kind").reset_index(drop=True)
        if family not in self.families:
            raise KeyError(f"unknown variable family {family!r}; expected one of "
                           f"{sorted(self.families) + sorted(self.user_columns)}")
        frame = self.families[family]
        out = pd.DataFrame(index=frame.index)
        lab = self.labels
        if family == "n":
            out = lab["reserved"].iloc[frame["c"].to_numpy()].reset_index(drop=True)
        if "j" in frame:
            out["kind"] = np.asarray(rented.KINDS, dtype=object)[frame["j"].to_numpy()]
        if "k" in frame:
            out["workload_class"] = np.asarray(lab["classes"], dtype=object)[frame["k"].to_numpy()]
        if "p" in frame and family != "n":
            pools = lab["pools"]
            out["gpu_type"] = pools["gpu_type"].to_numpy()[frame["p"].to_numpy()]
            out["region"] = pools["region"].to_numpy()[frame["p"].to_numpy()]
        if "b" in frame:
            b = frame["b"].to_numpy()
            out["block"] = b
            out["scenario"] = np.asarray(lab["block_scenario"], dtype=object)[b]
            out["period"] = lab["block_period"][b]
        out["col"] = frame["col"].to_numpy()
        return out.reset_index(drop=True)

    def column_names_of(self, name: str) -> list[str]:
        """The names of an extension's columns (``name`` or ``name_0 ..``)."""
        cols = self.user_columns[name]
        return [name] if len(cols) == 1 else [f"{name}_{i}" for i in range(len(cols))]

    # ---- extensions ------------------------------------------------------------------------------------
    def _check_name(self, name: str, what: str) -> None:
        if not isinstance(name, str) or not _USER_NAME.match(name):
            raise ValueError(f"{what} name {name!r}: expected a letter then letters, digits or _ (at most 64)")
        if _NUMBERED.search(name):
            raise ValueError(f"{what} name {name!r} ends in _<digits>, which generated names use; "
                             "choose a name that does not")
        if name in naming.FAMILIES or name in self.user_columns or \
                any(f.name == name for f in self.constraints.families):
            raise ValueError(f"{what} name {name!r} is taken; the planner's families are {sorted(naming.FAMILIES)}")

    def add_columns(self, name: str, n: int = 1, *, lower=0.0, upper=np.inf, cost=0.0,
                    integer: bool = False) -> np.ndarray:
        """Add ``n`` columns (named ``name`` or ``name_0 ..``); returns their column indices.

        ``cost`` is their objective coefficient (USD per unit over the horizon); bounds and cost may be
        scalars or arrays of length ``n``. Every backend solves them.
        """
        self._check_name(name, "column")
        if int(n) != n or n < 1:
            raise ValueError(f"n must be a whole number >= 1 (got {n!r})")
        lower = _finite(np.broadcast_to(lower, (int(n),)), "lower bounds", allow_inf=True)
        upper = _finite(np.broadcast_to(upper, (int(n),)), "upper bounds", allow_inf=True)
        cost = _finite(np.broadcast_to(cost, (int(n),)), "costs")
        if np.any(lower > upper):
            raise ValueError("a lower bound is above its upper bound")
        cols = np.arange(self.n_variables, self.n_variables + int(n))
        grow = lambda a, v: np.concatenate([a, np.broadcast_to(np.asarray(v, a.dtype), (int(n),))])  # noqa: E731
        self.cost, self.lower, self.upper = grow(self.cost, cost), grow(self.lower, lower), grow(self.upper, upper)
        self.integer = grow(self.integer, bool(integer))
        self.start = grow(self.start, np.clip(0.0, lower, upper))
        self.user_columns[name] = cols
        return cols

    def add_rows(self, name: str, rows, cols, coefs, sense: str, rhs) -> int:
        """Add a family of rows from triples: term i puts ``coefs[i]`` on column ``cols[i]`` in row ``rows[i]``.

        ``sense`` is ``"<="``, ``">="`` or ``"=="``; ``rhs`` has one value per row (rows are 0 .. len(rhs)-1).
        Row names are ``name_0, name_1, ..`` (``name`` for a single row). Returns the number of rows.
        """
        self._check_name(name, "row")
        if sense not in _SENSES:
            raise ValueError(f"sense {sense!r}: expected '<=', '>=' or '=='")
        rhs = np.atleast_1d(_finite(rhs, "right-hand sides"))
        rows, cols = _indices(rows, "row numbers"), _indices(cols, "column numbers")
        coefs = np.atleast_1d(_finite(coefs, "coefficients"))
        if not (len(rows) == len(cols) == len(coefs)):
            raise ValueError("rows, cols and coefs must have the same length")
        rows, cols, coefs = _summed(rows, cols, coefs)
        if len(rows) and (rows.min() < 0 or rows.max() >= len(rhs)):
            raise ValueError(f"row numbers must lie in 0 .. {len(rhs) - 1}")
        if len(cols) and (cols.min() < 0 or cols.max() >= self.n_variables):
            raise ValueError(f"column numbers must lie in 0 .. {self.n_variables - 1}")
        labels = [name] if len(rhs) == 1 else [f"{name}_{i}" for i in range(len(rhs))]
        added = self.constraints.add(name, (np.arange(len(rhs)),), rows, cols, coefs, _SENSES[sense], rhs,
                                     labels=labels)
        self.rows[name] = added
        return added

    def row_frame(self, family: str) -> pd.DataFrame:
        """The rows of a constraint family with readable labels (as ``columns``) and ``row`` (0 .. n-1)."""
        found = [f for f in self.constraints.families if f.name == family]
        if not found:
            raise KeyError(f"no rows in family {family!r}; families with rows: "
                           f"{[f.name for f in self.constraints.families]}")
        f = found[0]
        kinds = naming.FAMILIES.get(family, ("", ("row",)))[1]
        out = pd.DataFrame({"row": np.arange(f.n)})
        lab = self.labels
        for kind, key in zip(kinds, f.keys):
            key = np.asarray(key)
            if kind == "class":
                out["workload_class"] = np.asarray(lab["classes"], dtype=object)[key]
            elif kind == "pool":
                out["gpu_type"] = lab["pools"]["gpu_type"].to_numpy()[key]
                out["region"] = lab["pools"]["region"].to_numpy()[key]
            elif kind == "block":
                out["block"] = key
                out["scenario"] = np.asarray(lab["block_scenario"], dtype=object)[key]
                out["period"] = lab["block_period"][key]
        return out

    def add_terms(self, family: str, rows, cols, coefs) -> None:
        """Put coefficients of columns (yours or the planner's) into rows of an existing family.

        E.g. a column of your own that also covers demand: ``add_terms("demand", rows, [col, ..], [1.0, ..])``
        with rows from ``row_frame("demand")``.
        """
        import dataclasses

        rows, cols = _indices(rows, "row numbers"), _indices(cols, "column numbers")
        coefs = np.atleast_1d(_finite(coefs, "coefficients"))
        if not (len(rows) == len(cols) == len(coefs)):
            raise ValueError("rows, cols and coefs must have the same length")
        for i, f in enumerate(self.constraints.families):
            if f.name == family:
                if len(rows) and (rows.min() < 0 or rows.max() >= f.n):
                    raise ValueError(f"row numbers of {family!r} lie in 0 .. {f.n - 1}")
                if len(cols) and (cols.min() < 0 or cols.max() >= self.n_variables):
                    raise ValueError(f"column numbers must lie in 0 .. {self.n_variables - 1}")
                r, c, v = _summed(np.concatenate([f.rows, rows]), np.concatenate([f.cols, cols]),
                                  np.concatenate([f.coefs, coefs]))  # a coefficient on a column already there adds
                self.constraints.families[i] = dataclasses.replace(f, rows=r, cols=c, coefs=v)
                return
        raise KeyError(f"no rows in family {family!r}")

    def add_constraint(self, name: str, terms, sense: str, rhs: float) -> None:
        """One row: ``sum(coef x column) <sense> rhs`` over ``terms`` ({column: coef} or a Series)."""
        items = terms.items() if hasattr(terms, "items") else terms
        cols, coefs = zip(*items) if len(terms) else ((), ())
        self.add_rows(name, np.zeros(len(cols), np.int64), np.asarray(cols, np.int64), np.asarray(coefs, float),
                      sense, [rhs])


RENTED_ALIASES = {"y": "on_demand", "z": "spot"}  # the names the on-demand and spot columns had before one family

FAMILIES = (
    ("demand", con.define_demand_constraints),
    ("spot_share", con.define_spot_share_constraints),
    ("spares", con.define_spares_constraints),
    ("reserved_share", con.define_reserved_share_constraints),
    *((rented.cap_family(kind), con.rented_cap_family(kind)) for kind in rented.KINDS),  # od_cap, spot_cap, flex_cap
    ("reserved_cap", stages.first_stage_family("reserved_cap")),
    ("backfill_peak", con.define_backfill_peak_constraints),
    ("backfill_dedicated", con.define_backfill_dedicated_constraints),
    ("spend_usage", con.define_spend_usage_constraints),
    ("spend_commitment", con.define_spend_commitment_constraints),
    ("discount_only_cap", con.define_discount_only_constraints),
    ("exit_link", stages.first_stage_family("exit_link")),
    ("site_power", stages.first_stage_family("site_power")),
)


def families() -> tuple:
    """Every constraint family the model builds, in order: :data:`FAMILIES`, then any first-stage family of
    :data:`planner.model.stages.FIRST_STAGE` not listed there (registered there only, it is still a model family:
    the whole model and the Benders masters can never disagree on the purchases' rows)."""
    listed = {name for name, _ in FAMILIES}
    return FAMILIES + tuple((name, stages.first_stage_family(name)) for name in stages.FIRST_STAGE if name not in listed)


def build_model(inp: PlanInputs, merge_periods: bool | None = None,
                fixed_reserved: np.ndarray | None = None, dominance: bool = True, rows: bool = True,
                owned_tie: bool = True) -> PlanModel:
    """The MILP for ``inp``; ``fixed_reserved`` fixes the instances bought per reserved option (recourse only).

    ``merge_periods`` (default: the model file's) and ``dominance`` switch the exact reductions. ``rows=False``
    lays out the columns and the objective only (no constraint rows): what reading a plan from values solved
    elsewhere needs (:mod:`planner.solve.recourse`), at a fraction of the memory. ``owned_tie=False``: without
    the owned-GPU tie-break (:func:`planner.model.objective.owned_tie`): a decision's own LPs (the aggregate
    start).
    """
    t0 = time.perf_counter()
    merge = inp.config.solver.merge_periods if merge_periods is None else merge_periods
    if inp.config.budget.monthly:
        merge = False  # a block must lie in one calendar month for the monthly budget rows
    npv = inp.config.finance.npv
    caps = inp.rented_caps  # (J * P, T) with an availability file, else None
    blocks = make_blocks(inp.demand, inp.inventory, inp.hours, inp.probability, merge=merge, active=inp.active,
                         discount=inp.discount if npv else None, caps=caps, member=inp.reserved_member,
                         prices=inp.rented_price_path)
    n_cols, fam = define_variables(inp, blocks, dominance=dominance)
    out = Rows()
    with_rows = rows
    rows = {name: define(out, inp, blocks, fam) for name, define in families()} if with_rows else {}
    cost = objective_coefficients(inp, blocks, fam, n_cols, ties=False)
    if with_rows:  # budgets cap cost, not NPV, and not the objective's tie-breaks
        rows["budget"] = define_budget_constraints(out, inp, blocks, fam, cost)
    if npv:
        cost = objective_coefficients(inp, blocks, fam, n_cols, npv=True, ties=False)
    owned = owned_tie_of(inp, blocks, fam, npv) if owned_tie else (np.zeros(0, np.int64), np.zeros(0))
    rest = tie_breaks(inp, blocks, fam, npv, owned=False)
    tie = (np.concatenate([owned[0], rest[0]]), np.concatenate([owned[1], rest[1]]))
    np.add.at(cost, tie[0], tie[1])
    lower, upper = np.zeros(n_cols), np.full(n_cols, np.inf)
    integer = np.zeros(n_cols, dtype=bool)
    n_cols_res = fam["n"]["col"].to_numpy()
    integer[n_cols_res] = unit_integer(inp)
    upper[n_cols_res] = unit_bounds(inp)
    start = np.zeros(n_cols)
    if fixed_reserved is not None:
        lower[n_cols_res] = upper[n_cols_res] = start[n_cols_res] = np.asarray(fixed_reserved, float)
    upper[fam["r"]["col"].to_numpy()] = rented_bounds(inp, blocks, fam["r"])
    u = fam["u"]
    start[u["col"].to_numpy()] = (1 + inp.headroom[u["k"].to_numpy()]) * blocks.demand[u["k"], u["b"]]
    return PlanModel(families=fam, blocks=blocks, cost=cost, lower=lower, upper=upper, integer=integer,
                     start=start, constraints=out, rows=rows, seconds=time.perf_counter() - t0,
                     labels=_labels(inp, blocks), tie=tie, owned=owned)


def rented_bounds(inp: PlanInputs, blocks, r) -> np.ndarray:
    """Upper bound of every rented column: r[j,k,p,b] <= i[j,k,p] (1 + eta_k) d[k,b] / u[j,k,p] where kind j serves
    only the share i of a class's demand (queued capacity: the share granted within its start delay,
    :mod:`planner.inputs.rented`); no bound (inf) elsewhere."""
    j, k, p, b = (r[c].to_numpy() for c in ("j", "k", "p", "b"))
    share = inp.rented_in_time[j, k, p]
    bounded = share < 1
    out = np.full(len(r), np.inf)
    if bounded.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            out[bounded] = (share * (1 + inp.headroom[k]) * blocks.demand[k, b] / inp.rented_useful[j, k, p])[bounded]
    return out


def _labels(inp: PlanInputs, blocks: Blocks) -> dict:
    """What ``PlanModel.columns`` shows: class names, pools, reserved options and each block's first period."""
    flat = blocks.of.reshape(-1)
    _, first = np.unique(flat, return_index=True)
    s, t = np.divmod(first, blocks.of.shape[1])
    return {"classes": list(inp.classes), "pools": inp.pools[["gpu_type", "region"]].reset_index(drop=True),
            "reserved": inp.commitments[[c for c in ("gpu_type", "region", "option", "term_months", "purchase_date")
                                      if c in inp.commitments]].reset_index(drop=True),
            "block_scenario": [inp.scenarios[i] for i in s], "block_period": np.asarray(inp.periods)[t]}
