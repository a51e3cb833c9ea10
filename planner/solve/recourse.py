"""The decomposition's recourse: per-batch LPs with the purchases fixed, priced at any purchases.

A *batch* is the recourse LP of a run of consecutive periods (a calendar week by default, consecutive short weeks
joined up to the longest one's periods: :func:`planner.solve.chunks.chunk_index`; every scenario of those
periods), built once from the inputs and kept as numpy arrays: compact and picklable, so that it can live on
a worker process or a Dask worker. Every pricing makes a fresh HiGHS from the arrays, sets the batch's last
optimal basis and re-solves warm (measured on XL: as fast as re-solving a live HiGHS, which holds ten times
the memory). The basis is a batch's only state and travels with every call: what a batch returns depends on
its arrays, the purchases and that basis only, never on the worker that priced it, so one worker, many, a
Dask cluster, or a worker replaced after it died, all give the same numbers.

A pricing returns, per cut group of the batch (a block, day or week: one theta of the master), its recourse
value and its subgradient in the purchases (from the duals of the rows the purchases appear in); at the
plan's purchases it also returns the column values (for the plan) and the shadow-price sums of the row duals
(:func:`planner.solve.duals.family_sums`), so the plan needs no solve of the whole model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.inputs.arrays import PlanInputs

EXTRACT_FAMILIES = ("x", "r", "u", "v")  # the recourse families a plan is read from (keys + local block)


@dataclass
class Batch:
    """One batch's recourse LP as arrays, and what maps its solution to cut groups and to the whole model."""

    periods: np.ndarray  # positions of its periods in the horizon
    G: int  # cut groups (thetas) in the batch
    R: int  # purchase rows (first-stage columns)
    # the LP (row-wise), purchases' columns fixed at each pricing
    start: np.ndarray
    index: np.ndarray
    value: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    cost: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    ncols: np.ndarray  # the purchases' columns (R,)
    # per cut group: the cost of its columns, and the purchases' coefficients in its rows
    cost_cols: np.ndarray
    cost_vals: np.ndarray
    cost_group: np.ndarray
    e_row: np.ndarray
    e_c: np.ndarray
    e_coef: np.ndarray
    e_group: np.ndarray
    # the plan: every recourse column's family keys with the batch's own block numbers
    keys: dict
    block_of: np.ndarray  # (S, periods) the batch's block of each (scenario, period)
    # shadow prices: each row's family code, key (class or pool) and weight (see planner.solve.duals.family_sums)
    row_code: np.ndarray
    row_key: np.ndarray
    row_weight: np.ndarray
    classes_pools: tuple  # (K, P) of the inputs
    row_counts: dict  # rows per constraint family (the whole model's are their sums over the batches)
    # a decision's costs (price(..., solution="costs")): rented prices per block, each scenario's hours per block
    block_price: np.ndarray | None = None  # (J, P, B)
    block_hours: np.ndarray | None = None  # (S, B)
    tie: tuple = (np.zeros(0, np.int32), np.zeros(0))  # (columns, coefficients) of the objective's tie-breaks within
    # ``cost`` (planner.model.objective.tie_breaks: not costs; a pricing's values less them are costs)
    owned: tuple = (np.zeros(0, np.int32), np.zeros(0))  # their owned-GPU part (planner.model.objective.owned_tie):
    # in a plan's pricing (``solution=True``), left out of a decision's (cuts, costs)
    plan_scale: tuple | None = None  # (per column, per row) float32: each block's objective over its probability in
    # a plan's LP (:func:`plan_scale`); None where every block's is 1 (one scenario) or a row spans blocks
    parts: tuple | None = None  # (per column, per row) int16: the part of the LP each lies in, solved as LPs of their
    # own (:func:`split_parts`; -1: a purchase column); None: one LP

    @property
    def shape(self) -> tuple[int, int]:
        """(columns, rows) of the LP: a basis fits only an LP of its shape."""
        return len(self.cost), len(self.row_lower)

    @property
    def size(self) -> int:
        """Non-zeros of the LP (the work a pricing takes, for balancing batches over workers)."""
        return int(len(self.value) + len(self.cost))


def column_blocks(model) -> np.ndarray:
    """Each column's block in ``model`` (a :class:`~planner.model.PlanModel`): its family's ``b``; -1 for the
    purchases (``n``) and any column of a family without blocks."""
    colblock = np.full(model.n_variables, -1, dtype=np.int64)
    for name, frame in model.families.items():
        if name != "n" and "b" in frame and len(frame):
            colblock[frame["col"].to_numpy()] = frame["b"].to_numpy()
    return colblock


def build_batch(inp: PlanInputs, periods: np.ndarray, cut_by: str) -> Batch:
    """The batch of ``inp``'s periods at positions ``periods`` (all scenarios), cut into ``cut_by`` groups."""
    from planner.solve.chunks import chunk_inputs
    from planner.solve.duals import row_codes
    from planner.model import build_model

    sub = chunk_inputs(inp, periods)
    R = len(inp.commitments)
    model = build_model(sub, fixed_reserved=np.zeros(R))
    ncol = model.families["n"]["col"].to_numpy()
    cost = model.cost.copy()
    cost[ncol] = 0.0  # purchases are paid in the master
    colblock = column_blocks(model)
    B = model.blocks.B
    if cut_by == "block":
        block_group = np.arange(B)
    else:  # the day or week (and scenario) of each block's first (scenario, period)
        flat = model.blocks.of.reshape(-1)
        _, first = np.unique(flat, return_index=True)
        s, t = np.divmod(first, model.blocks.of.shape[1])
        key = sub.periods.to_period({"day": "D", "week": "W"}[cut_by]).asi8[t]
        _, block_group = np.unique(np.stack([s, key], axis=1), axis=0, return_inverse=True)
        block_group = block_group.reshape(-1)
    G = int(block_group.max()) + 1 if B else 0
    colgroup = np.where(colblock >= 0, block_group[np.clip(colblock, 0, None)], -1)
    live = np.flatnonzero((colgroup >= 0) & (cost != 0))
    start, index, value, row_lower, row_upper = model.constraints.to_csr()
    row_of = np.repeat(np.arange(len(start) - 1), np.diff(start))
    rowgroup = np.full(len(start) - 1, -1, dtype=np.int64)
    np.maximum.at(rowgroup, row_of, colgroup[index])  # every recourse entry of a row is in one group
    n_of_col = np.full(model.n_variables, -1, dtype=np.int64)
    n_of_col[ncol] = np.arange(R)
    hit = np.flatnonzero((n_of_col[index] >= 0) & (rowgroup[row_of] >= 0))
    e_row = row_of[hit]
    keys = {}
    for name in EXTRACT_FAMILIES:
        frame = model.families.get(name)
        if frame is not None and len(frame):
            keys[name] = {c: frame[c].to_numpy().astype(np.int32) for c in frame.columns if c in ("j", "k", "p", "b", "c")}
            keys[name]["col"] = frame["col"].to_numpy().astype(np.int32)
    code, rkey, weight = row_codes(model, sub)
    from planner.model.blocks import block_prices, scenario_hours

    block_price = np.ascontiguousarray(block_prices(sub, model.blocks), dtype=float)
    block_hours = scenario_hours(model.blocks, sub.hours)
    rowblock = row_blocks(colblock, ncol, row_of, index, len(start) - 1)
    scaled = _plan_scale(block_hours, sub.probability, colblock, rowblock) if len(model.owned[0]) else None
    # infinite bounds stay np.inf: highspy's kHighsInf is IEEE infinity (HiGHS reads anything >= 1e20 so)
    return Batch(periods=np.asarray(periods), G=G, R=R,
                 start=start.astype(np.int32), index=index.astype(np.int32), value=value.astype(float),
                 col_lower=model.lower.copy(), col_upper=model.upper.copy(), cost=cost,
                 row_lower=row_lower, row_upper=row_upper, ncols=ncol.astype(np.int32),
                 cost_cols=live.astype(np.int32), cost_vals=cost[live], cost_group=colgroup[live].astype(np.int32),
                 e_row=e_row.astype(np.int32), e_c=n_of_col[index[hit]].astype(np.int32), e_coef=value[hit],
                 e_group=rowgroup[e_row].astype(np.int32), keys=keys,
                 block_of=model.blocks.of.astype(np.int32), row_code=code, row_key=rkey, row_weight=weight,
                 classes_pools=(inp.K, inp.P), row_counts=dict(model.rows), block_price=block_price,
                 block_hours=block_hours, tie=(model.tie[0].astype(np.int32), model.tie[1].astype(float)),
                 owned=(model.owned[0].astype(np.int32), model.owned[1].astype(float)), plan_scale=scaled,
                 parts=split_parts(colblock, ncol, rowblock))


PLAN_SCALE_MAX = 1e30  # a block's factor at most: a scenario of probability below 1e-30 is scaled by this only (its
# tie-break's differences then shrink again, as they did unscaled)


def in_no_block(colblock: np.ndarray, fixed) -> np.ndarray:
    """Per column: in no block and not a purchase (``fixed``): such a column could link blocks."""
    loose = colblock < 0
    loose[np.asarray(fixed, dtype=np.int64)] = False
    return loose


def row_blocks(colblock: np.ndarray, fixed: np.ndarray, row_of: np.ndarray, index: np.ndarray, rows: int
               ) -> np.ndarray | None:
    """Each row's block (-1: a row with no recourse column) when a batch's LP, its purchases fixed, is the direct sum of
    its blocks' LPs: every row's recourse columns in one block. None where some row holds columns of two blocks, or a
    column in no block that is not a purchase (it could link blocks). ``colblock``: each column's block (-1: none),
    ``fixed``: the purchases' columns, ``row_of``/``index``: each entry's row and column of ``rows``."""
    if in_no_block(colblock, fixed)[index].any():
        return None  # a column in no block (not a purchase) in some row: it could link blocks
    block_of_entry = colblock[index]
    live = block_of_entry >= 0
    high = np.full(rows, -1, dtype=np.int64)
    np.maximum.at(high, row_of[live], block_of_entry[live])
    if (high[row_of[live]] != block_of_entry[live]).any():
        return None  # a row across blocks: the LP does not separate by block (no such row is built today)
    return high


def plan_scale(block_hours: np.ndarray, probability: np.ndarray, colblock: np.ndarray, fixed: np.ndarray,
               row_of: np.ndarray, index: np.ndarray, rows: int) -> tuple | None:
    """(per column, per row) factors, float32, that multiply a plan's LP's objective block by block (and divide its row
    duals back): each block's hours over its probability-weighted hours (at most :data:`PLAN_SCALE_MAX`), the inverse of
    the mean probability of its (scenario, period) cells: a block of one scenario of probability ``p`` is priced as if
    ``p`` were 1, a block the scenarios share before a branch as if each were (:func:`lp_options`: the owned-GPU
    tie-break's differences then do not shrink with the number of scenarios). Exact: with the purchases fixed the
    batch's LP is the direct sum of its blocks' LPs (each row's columns lie in one block, :func:`row_blocks`), and a
    positive factor on one block's objective leaves its optimal solutions as they are. ``colblock``: each column's
    block (-1: none), ``fixed``: the purchases' columns (fixed at each pricing; in no block), ``row_of``/``index``: each
    entry's row and column of ``rows``. None where every factor is 1 (one scenario, or every block's probability 1),
    or the LP does not separate by block (then nothing is scaled)."""
    return _plan_scale(block_hours, probability, colblock, row_blocks(colblock, fixed, row_of, index, rows))


def _plan_scale(block_hours: np.ndarray, probability: np.ndarray, colblock: np.ndarray, rowblock: np.ndarray | None
                ) -> tuple | None:
    """:func:`plan_scale` with each row's block given (``rowblock``, :func:`row_blocks`)."""
    hours = block_hours.sum(axis=0)
    weighted = np.asarray(probability, float) @ block_hours
    with np.errstate(over="ignore"):  # (a probability below 1e-308: inf, capped next)
        factor = np.divide(hours, weighted, out=np.ones_like(hours), where=weighted > 0)
    factor = np.minimum(factor, PLAN_SCALE_MAX)  # (any positive factor is exact; float32 ends near 3.4e38)
    if not len(factor) or np.allclose(factor, 1.0, rtol=0.0, atol=1e-12) or rowblock is None:
        return None
    cols = np.where(colblock >= 0, factor[np.clip(colblock, 0, None)], 1.0).astype(np.float32)
    return cols, np.where(rowblock >= 0, factor[np.clip(rowblock, 0, None)], 1.0).astype(np.float32)


PART_COLUMNS = 12_000  # a batch's LP above about this many columns is solved in parts of about as many (split_parts)


def split_parts(colblock: np.ndarray, fixed: np.ndarray, rowblock: np.ndarray | None, columns: int | None = None
                ) -> tuple | None:
    """(per column, per row) int16: the part of a batch's LP each column and row lies in, runs of whole blocks of
    about ``columns`` (default :data:`PART_COLUMNS`) columns each (-1: the purchases' columns, fixed at each pricing;
    a row with no recourse column goes to part 0); None where the LP is one part (at most 1.5 x ``columns``
    columns), does not separate by block (``rowblock`` None, :func:`row_blocks`) or has a column in no block that is
    not a purchase (``fixed``).

    The parts are solved as LPs of their own (:func:`_run_parts`): with the purchases fixed the batch's LP is their
    direct sum, so its optimal value is theirs, and where its optimum is unique so is its solution (where several
    optima tie, the parts may end on another of them, as the whole LP warm and cold already do). The simplex's work per
    iteration grows with the LP's rows, its iterations about stay: four of XL's weekly batches (77,000-80,000 columns
    each; demand 20 % lower from the plan's bases, 25,465 iterations whole, 25,464 in parts) took 0.98 s as one LP each
    and 0.66 s in parts; built as batches of a day, 0.69-0.81 s (benchmarks/README.md, issue 37, twenty-second
    round)."""
    if rowblock is None or in_no_block(colblock, fixed).any():
        return None
    inside = colblock >= 0
    columns = PART_COLUMNS if columns is None else int(columns)
    total = int(inside.sum())
    n = -(-total // columns) if total else 0
    if total <= 1.5 * columns or n < 2:
        return None
    per_block = np.bincount(colblock[inside], minlength=int(colblock.max()) + 1)
    before = np.cumsum(per_block) - per_block  # columns in the blocks before each
    part_of_block = np.minimum(before * n // total, n - 1)  # runs of whole blocks, about total / n columns each
    part_of_block = np.unique(part_of_block, return_inverse=True)[1].reshape(-1)  # (numbered densely: a block
    # larger than a part skips a number)
    col = np.where(inside, part_of_block[np.clip(colblock, 0, None)], -1).astype(np.int16)
    row = np.where(rowblock >= 0, part_of_block[np.clip(rowblock, 0, None)], 0).astype(np.int16)
    return col, row


@dataclass
class Priced:
    """One batch priced at some purchases."""

    values: np.ndarray  # (G,) each cut group's recourse cost
    group: np.ndarray  # subgradient entries: cut group, purchase row, coefficient
    row: np.ndarray
    coef: np.ndarray
    basis: tuple  # (column status, row status) as int8: the warm start of the next pricing
    iterations: int = 0
    solution: np.ndarray | None = None  # column values (asked for the plan)
    dual_sums: dict | None = None  # shadow-price sums of the row duals (asked for the plan)
    costs: dict | None = None  # per scenario: rented USD by kind, USD savings plans paid, shortfall GPU-hours by
    # class (asked for a decision: :func:`scenario_costs`)
    fell_back: bool = False  # a plan's LP priced again at HiGHS's defaults: its tighter settings (lp_options) did not
    # end optimal, so which idle GPUs ran the work may follow the solve path in this batch (the plan says so)
    cut: "Priced | None" = None  # ``solution="plan+cuts"``: the decision's pricing at the same purchases, whose
    # values and duals are the Benders cuts there (the plan's own LP holds the owned-GPU tie-break; the loop's not)


def price(batch: Batch, n: np.ndarray, basis=None, solution: bool = False, portable: bool = True,
          scale: float = 1.0) -> Priced:
    """Solve ``batch`` with the purchases at ``n``, warm from ``basis``; see :class:`Priced`.

    ``solution``: True returns the column values and the shadow-price sums (a plan is read from them), ``"costs"``
    only each scenario's costs (:func:`scenario_costs`: a decision, read without the whole model).

    ``scale``: every class's demand multiplied by it (the demand and spot-share rows' bounds are linear in the
    demand, and no column exists or not by its size: the same LP as the batch of the scaled inputs, for
    classes sized in GPUs; the memo's downside).

    ``basis``: None (cold), a (column status, row status) pair of int8 arrays, or a ``highspy.HighsBasis`` or
    :class:`PartBases` (in the process that made it). The basis returned is int8 arrays when ``portable`` (to travel
    between processes), else HiGHS's own (no conversion: a pricer in one process keeps them so): a HighsBasis, or a
    :class:`PartBases` for a batch solved in parts (``batch.parts``, :func:`split_parts`).

    A plan's pricing (``solution=True``) holds the owned-GPU tie-break (:func:`planner.model.objective.owned_tie`:
    which idle GPUs run the work, one answer whatever the path); a decision's (cuts, ``"costs"``) leaves it out.
    ``solution="plan+cuts"``: both, the plan's first, then the decision's from its basis (``.cut``: exact Benders
    cuts at ``n``).
    """
    if solution == "plan+cuts":
        if _decision_cost(batch) is None:  # no owned-GPU tie-break here: the plan's LP is the decision's
            return _price(batch, n, basis, True, portable, scale, cuts=True)
        out = _price(batch, n, basis, True, False, scale, cuts=False)  # the plan's LP first; the decision's from its
        out.cut = _price(batch, n, out.basis, False, None, scale)  # basis (the plan's optimum is one of its own)
        if portable:  # (HiGHS's own basis between the two: no conversion)
            out.basis = portable_basis(out.basis)
        return out
    return _price(batch, n, basis, solution, portable, scale, cuts=solution is not True)


def _price(batch: Batch, n: np.ndarray, basis, solution, portable: bool, scale: float,
           cuts: bool = True) -> Priced:
    """:func:`price` of one LP; ``cuts=False``: without the subgradient (a plan's read needs none: its entries,
    one per group and purchase row in its rows, are most of a pricing's bytes at three years); ``portable=None``:
    without the basis (the decision's LP of ``"plan+cuts"``, its cuts only: a basis per batch held twice took three
    years' peak over 4 GB)."""
    import highspy

    from planner.solve.duals import sums_from_codes
    from planner.core.errors import SolverError

    cost = _decision_cost(batch) if solution is not True else None  # a plan's pricing holds the owned-GPU tie
    options = lp_options(batch, solution)
    scaled = getattr(batch, "plan_scale", None) if options else None  # a plan's LP: each block's objective over
    lp_cost = batch.cost * scaled[0] if scaled is not None else cost  # its probability (:func:`plan_scale`)
    r = _run(batch, n, basis, scale, lp_cost, options, highspy)
    fell_back = bool(options) and not r.optimal
    if fell_back:  # the tighter settings did not end optimal: HiGHS's defaults, as a decision's LP
        r = _run(batch, n, basis, scale, lp_cost, {}, highspy)
    if not r.optimal:
        raise SolverError(f"a batch's recourse LP did not solve: {r.status}")
    x, y = r.x, r.y
    if scaled is not None:
        y /= scaled[1]  # the duals of the LP as built (each block's objective back at its probability)
    vals = batch.cost_vals if cost is None else cost[batch.cost_cols]
    values = np.bincount(batch.cost_group, weights=vals * x[batch.cost_cols], minlength=batch.G)
    if cuts:
        key = batch.e_group.astype(np.int64) * batch.R + batch.e_c
        uniq, inv = np.unique(key, return_inverse=True)
        d = np.bincount(inv.reshape(-1), weights=-batch.e_coef * y[batch.e_row], minlength=len(uniq))
        keep = np.abs(d) > 1e-12
    else:
        uniq, d, keep = np.zeros(0, np.int64), np.zeros(0), np.zeros(0, bool)
    return Priced(values=values, group=uniq[keep] // batch.R, row=uniq[keep] % batch.R, coef=d[keep],
                  fell_back=fell_back, iterations=r.iterations,
                  basis=None if portable is None else portable_basis(r.basis) if portable else r.basis,
                  solution=x if solution is True else None,
                  dual_sums=sums_from_codes(batch.row_code, batch.row_key, _weights(batch, scale), y,
                                            *batch.classes_pools) if solution is True else None,
                  costs=scenario_costs(batch, x) if solution == "costs" else None)


@dataclass
class _Solved:
    """One batch's LP run: whether it ended optimal (HiGHS's status otherwise), its column values and row duals,
    its basis (HiGHS's own object, or :class:`PartBases` for an LP solved in parts) and simplex iterations."""

    optimal: bool
    status: str
    x: np.ndarray
    y: np.ndarray
    basis: object
    iterations: int


@dataclass
class PartBases:
    """The basis of a batch's LP solved in parts (:func:`split_parts`), kept as HiGHS's own objects, one per part (no
    conversion between pricings in one process); :func:`portable_basis` reads it as the batch's int8 arrays."""

    bases: list  # a highspy.HighsBasis per part
    cols: list  # each part's columns in the batch (int32)
    rows: list  # each part's rows
    shape: tuple  # the batch's (columns, rows)


def _run(batch: Batch, n: np.ndarray, basis, scale: float, cost, options: dict, highspy) -> _Solved:
    """``batch``'s LP at ``n`` (``options`` set; warm from ``basis``), run: as one LP, or where it separates into
    parts (``batch.parts``, :func:`split_parts`) as one LP per part, side by side."""
    lower, upper = batch.col_lower.copy(), batch.col_upper.copy()
    lower[batch.ncols] = upper[batch.ncols] = n
    row_lower, row_upper = batch.row_lower, batch.row_upper
    if scale != 1.0:
        from planner.solve.duals import CODES

        linear = np.isin(batch.row_code, (CODES["demand"], CODES["spot_share"]))
        row_lower, row_upper = np.where(linear, row_lower * scale, row_lower), np.where(linear, row_upper * scale,
                                                                                         row_upper)
    cost = batch.cost if cost is None else cost
    parts = getattr(batch, "parts", None)
    if parts is None:
        h = _highs(options, highspy)
        _pass(h, highspy, cost, lower, upper, row_lower, row_upper, batch.start, batch.index, batch.value)
        if basis is not None:
            h.setBasis(basis if isinstance(basis, highspy.HighsBasis) else _highs_basis(portable_basis(basis), highspy))
        h.run()
        status = h.getModelStatus()
        sol = h.getSolution()
        return _Solved(status == highspy.HighsModelStatus.kOptimal, h.modelStatusToString(status),
                       np.asarray(sol.col_value, dtype=float), np.asarray(sol.row_dual, dtype=float), h.getBasis(),
                       int(h.getInfo().simplex_iteration_count))
    return _run_parts(batch, parts, lower, upper, row_lower, row_upper, cost, basis, options, highspy)


def _run_parts(batch: Batch, parts: tuple, lower, upper, row_lower, row_upper, cost, basis, options: dict,
               highspy) -> _Solved:
    """:func:`_run` of a batch's LP in its parts: the purchases' columns (fixed) moved into the rows' bounds, each
    part's rows and columns an LP of its own, warm from its share of ``basis`` (cold where that share is not a basis:
    its basic count is not its rows'); the values, duals and bases put back in the batch's order (the purchases'
    columns at their bound, nonbasic)."""
    col_part, row_part = parts
    rows = len(row_lower)
    fixed = np.flatnonzero(col_part[batch.index] < 0)  # entries of the purchases' columns: constants once fixed
    fixed_row = np.searchsorted(batch.start, fixed, side="right") - 1
    moved = np.bincount(fixed_row, weights=batch.value[fixed] * lower[batch.index[fixed]], minlength=rows)
    row_lower, row_upper = row_lower - moved, row_upper - moved  # (an infinite bound stays so)
    entry_part = np.repeat(row_part, np.diff(batch.start))  # each entry's part (its row's), -1 for the purchases'
    entry_part[fixed] = -1
    count = np.diff(batch.start) - np.bincount(fixed_row, minlength=rows)  # each row's entries in its part's LP
    k = int(col_part.max()) + 1  # (every part holds columns: runs of whole blocks)
    cols = [np.flatnonzero(col_part == q).astype(np.int32) for q in range(k)]
    rowsof = [np.flatnonzero(row_part == q).astype(np.int32) for q in range(k)]
    col_local = np.empty(len(col_part), dtype=np.int32)
    for c in cols:
        col_local[c] = np.arange(len(c), dtype=np.int32)
    native = isinstance(basis, PartBases) and basis.shape == batch.shape and len(basis.bases) == len(cols)
    arrays = None if basis is None or native else portable_basis(basis)
    if arrays is not None and (len(arrays[0]), len(arrays[1])) != batch.shape:
        arrays = None  # another LP's basis: cold, as HiGHS starts the whole LP given one
    x = np.zeros(len(col_part))
    x[batch.ncols] = lower[batch.ncols]
    y = np.zeros(rows)
    kept, optimal, status, iterations = [], True, "Optimal", 0
    for q, (c, r) in enumerate(zip(cols, rowsof)):
        e = np.flatnonzero(entry_part == q)  # its entries, in row order
        start = np.concatenate([[0], np.cumsum(count[r])])
        h = _highs(options, highspy)
        _pass(h, highspy, cost[c], lower[c], upper[c], row_lower[r], row_upper[r], start, col_local[batch.index[e]],
              batch.value[e])
        if native:
            h.setBasis(basis.bases[q])
        elif arrays is not None:
            cs, rs = arrays[0][c], arrays[1][r]
            if int((cs == 1).sum() + (rs == 1).sum()) == len(r):  # (kBasic: 1) a basis of this part
                h.setBasis(_highs_basis((cs, rs), highspy))
        h.run()
        s = h.getModelStatus()
        if s != highspy.HighsModelStatus.kOptimal and optimal:
            optimal, status = False, h.modelStatusToString(s)
        sol = h.getSolution()
        x[c] = np.asarray(sol.col_value, dtype=float)
        y[r] = np.asarray(sol.row_dual, dtype=float)
        kept.append(h.getBasis())
        iterations += int(h.getInfo().simplex_iteration_count)
    return _Solved(optimal, status, x, y, PartBases(kept, cols, rowsof, batch.shape), iterations)


def _highs(options: dict, highspy):
    """A quiet HiGHS with the planner's options and ``options``."""
    from planner.core.errors import SolverError
    from planner.solve.monolithic import new_highs

    h = new_highs(highspy, None, 0.0, None)
    for option, value in options.items():
        if h.setOptionValue(option, value) != highspy.HighsStatus.kOk:  # a renamed option is said, not lost
            raise SolverError(f"HiGHS refused option {option}={value!r}")
    return h


PLAN_LP_OPTIONS = {"dual_simplex_cost_perturbation_multiplier": 0.0, "dual_feasibility_tolerance": 1e-9,
                   "primal_feasibility_tolerance": 1e-9}  # a plan's LP (the owned-GPU tie-break in): lp_options


def lp_options(batch: Batch, solution) -> dict:
    """HiGHS options of one pricing's LP beyond :func:`~planner.solve.monolithic.new_highs`'s: a plan's LP that holds
    the owned-GPU tie-break (``solution=True``) runs without HiGHS's cost perturbation and at feasibility tolerances of
    1e-9 (:data:`PLAN_LP_OPTIONS`); where that does not end optimal, it is run again at HiGHS's defaults
    (:func:`_price`).

    The tie-break (:data:`planner.model.objective.OWNED_TIE_USD`, 1e-5 to 4e-5 USD per GPU-hour, times the block's
    weight: a scenario's probability x its hours) tells apart choices that differ by far less than itself: a class's
    work moving to the next pool by about 1e-5 / (P + 1) x probability per GPU-hour, two classes trading two pools by
    about 1e-5 / ((P + 1)(K + 1)) x probability (second order: 1.6e-9 at XL's 24 pools and 50 classes in a five-scenario
    tree). Below HiGHS's default dual feasibility tolerance (1e-7) the solve path picked the vertex (a tree's stranded
    dollars 0.4-0.7 % apart between two settings). At 1e-9 the answer is one down to differences of about that size: the
    memo's re-solves of a one-year five-scenario tree and of XL give the same figures warm or cold (to 3e-9), and so
    does a batch of 8 pools, 20 classes and 10 scenarios (a review; at the defaults warm and cold moved 25,321 of 47,839
    GPU-hours). A tree's blocks are also priced over their probability (:func:`plan_scale`), so the differences do not
    shrink with the number of scenarios: 12 pools, 40 classes and 20 scenarios over a day (9.4e-10 weighed by
    probability) moved 28.5 % of the owned GPU-hours warm against cold at 1e-9 unscaled, none scaled; the limit left is
    the model's size and its periods' length (docs/formulation.md). HiGHS's cost perturbation (pseudo-random, on a scale
    set by the largest cost and each column's own) is larger than those differences; the dual simplex works on the
    perturbed costs, then removes them and cleans up. Measured on the memo's re-solves, warm as they run
    (benchmarks/README.md, issue 37, nineteenth round): the tree's 152.8 s became 86.3 s (78.8 s without the
    perturbation alone, at the default tolerances), XL's 33.0 s 33.2 s. The costs are the same. A decision's LP (cuts,
    ``"costs"``), priced warm in the Benders loop, keeps HiGHS's defaults: its purchases are decided on costs, not on
    the tie-break."""
    return dict(PLAN_LP_OPTIONS) if solution is True and len(getattr(batch, "owned", ((),))[0]) else {}


def _decision_cost(batch: Batch) -> np.ndarray | None:
    """The batch's objective without the owned-GPU tie-break (None when it has none): a decision's pricing."""
    cols, coefs = getattr(batch, "owned", (np.zeros(0, np.int32), np.zeros(0)))
    if not len(cols):
        return None
    cost = batch.cost.copy()
    np.subtract.at(cost, cols, coefs)
    return cost


def tie_amount(batch: Batch, x: np.ndarray, owned: bool = True) -> float:
    """What the objective's tie-breaks add at the column values ``x`` (in the batch's objective: a value less it
    is what the columns cost); ``owned=False``: without the owned-GPU tie-break (a decision's pricing)."""
    cols, coefs = getattr(batch, "tie", (np.zeros(0, np.int32), np.zeros(0)))
    out = float(coefs @ np.asarray(x, float)[cols]) if len(cols) else 0.0
    if not owned:
        cols, coefs = getattr(batch, "owned", (np.zeros(0, np.int32), np.zeros(0)))
        out -= float(coefs @ np.asarray(x, float)[cols]) if len(cols) else 0.0
    return out


def scenario_costs(batch: Batch, x: np.ndarray) -> dict:
    """The batch's costs per scenario at the column values ``x``, as the plan reads them from the whole model's
    (:func:`planner.results.plan.extract_plan`): ``rented`` (S, J) USD by rented kind at each block's prices,
    ``covered`` (S,) the on-demand USD savings plans paid, ``short`` (S, K) shortfall GPU-hours by class. A block's
    quantity counts in every scenario whose periods it holds, for that scenario's hours (summed over the batches:
    the horizon's)."""
    from planner.core.units import EPS

    J, P, B = batch.block_price.shape
    H = batch.block_hours
    K = batch.classes_pools[0]
    out = {"rented": np.zeros((len(H), J)), "covered": np.zeros(len(H)), "short": np.zeros((len(H), K)),
           "tie": tie_amount(batch, x, owned=False)}  # (priced as a decision: without the owned-GPU tie-break)
    r, u, v = (batch.keys.get(f) for f in ("r", "u", "v"))
    if r is not None and len(r["col"]):
        q = x[r["col"]]
        q = np.where(q < EPS, 0.0, q)
        per = np.zeros((J, B))
        np.add.at(per, (r["j"], r["b"]), q * batch.block_price[r["j"], r["p"], r["b"]])
        out["rented"] = H @ per.T
    if v is not None and len(v["col"]):
        from planner.inputs import rented

        q = np.clip(x[v["col"]], 0.0, None)
        per = np.bincount(v["b"], weights=q * batch.block_price[rented.index("on_demand"), v["p"], v["b"]], minlength=B)
        out["covered"] = H @ per
    if u is not None and len(u["col"]):
        q = x[u["col"]]
        q = np.where(q < EPS, 0.0, q)
        per = np.zeros((K, B))
        np.add.at(per, (u["k"], u["b"]), q)
        out["short"] = H @ per.T
    return out


def _weights(batch: Batch, scale: float) -> np.ndarray:
    """The rows' shadow-price weights with the demand scaled (demand and spot-share rows weigh the demand)."""
    if scale == 1.0:
        return batch.row_weight
    from planner.solve.duals import CODES

    return np.where(np.isin(batch.row_code, (CODES["demand"], CODES["spot_share"])), batch.row_weight * scale,
                    batch.row_weight)


def portable_basis(basis, batch_shape: tuple | None = None):
    """Any basis :func:`price` returns, as int8 arrays (None stays None). A reference to a basis a worker kept
    (:class:`planner.solve.workers.Kept`) has nothing here to read: a TypeError (ask for ``portable`` bases)."""
    if basis is None or isinstance(basis, tuple):
        return basis
    if isinstance(basis, PartBases):  # a batch's LP solved in parts: each part's statuses in its place
        col, row = np.zeros(basis.shape[0], dtype=np.int8), np.zeros(basis.shape[1], dtype=np.int8)  # (purchases:
        for b, c, r in zip(basis.bases, basis.cols, basis.rows):  # kLower, 0: nonbasic at their fixed value)
            col[c] = np.fromiter(map(int, b.col_status), dtype=np.int8, count=len(c))
            row[r] = np.fromiter(map(int, b.row_status), dtype=np.int8, count=len(r))
        return col, row
    if not hasattr(basis, "col_status"):
        raise TypeError(f"not a basis that can be read here: {type(basis).__name__} (a basis kept on a worker "
                        "comes back as arrays only from a pricing with portable=True)")
    return (np.fromiter(map(int, basis.col_status), dtype=np.int8),
            np.fromiter(map(int, basis.row_status), dtype=np.int8))


_ENUMS: list = []


def _highs_basis(basis: tuple, highspy):
    """(column status, row status) int8 arrays as a HighsBasis."""
    if not _ENUMS:
        members = {int(s): s for s in highspy.HighsBasisStatus.__members__.values()}
        _ENUMS.append(np.array([members.get(i, members[0]) for i in range(max(members) + 1)], dtype=object))
    table = _ENUMS[0]
    b = highspy.HighsBasis()
    b.col_status = table[basis[0].astype(np.intp)].tolist()
    b.row_status = table[basis[1].astype(np.intp)].tolist()
    b.valid = True
    return b


def _pass(h, highspy, cost, lower, upper, row_lower, row_upper, start, index, value):
    """Hand ``h`` an LP (a batch's, or a part of it) as row-wise arrays; a SolverError where HiGHS rejects it."""
    from planner.core.errors import SolverError
    from planner.solve.monolithic import pass_arrays

    if pass_arrays(h, highspy, cost, lower, upper, row_lower, row_upper, start, index,
                   value) == highspy.HighsStatus.kError:
        raise SolverError("HiGHS rejected a batch's recourse LP")


def assemble(inp: PlanInputs, model, chunks: list[np.ndarray], batches_keys: list[tuple], n: np.ndarray,
             reuse: dict | None = None) -> np.ndarray:
    """The whole model's column values from every batch's solution at the purchases ``n``.

    ``model`` is the whole model (built with ``n`` fixed); ``batches_keys[j]`` is (keys, block_of, solution) of
    the batch of periods ``chunks[j]``. A block of the whole model takes the values of the batch block of its
    first (scenario, period): periods merge only where their data are equal, so that batch block's optimal
    recourse is optimal for every period of the merged block (the recourse separates by period).

    ``reuse``: a dict the caller keeps for several reads of the same columns (``model.families``) from the same
    batches (the same key objects): which batch column each whole-model column reads (:func:`column_map`) is
    worked out once (the memo's points: 0.8 s a read saved at XL).
    """
    v = np.zeros(model.n_variables)
    v[model.families["n"]["col"].to_numpy()] = n
    keys = [k for k, _b, _x in batches_keys]
    blocks_of = [b for _k, b, _x in batches_keys]
    held = None if reuse is None else reuse.get("map")
    mine = (model.families, model.blocks, *chunks, *keys, *blocks_of)  # what the map is worked out from
    if held is not None and len(held[0]) == len(mine) and all(a is b for a, b in zip(held[0], mine)):
        dst, batch, local = held[1]
    else:
        dst, batch, local = column_map(model, chunks, keys, blocks_of)
        if reuse is not None:  # the objects are held with the map: their ids cannot be reused while it is kept
            reuse["map"] = (mine, (dst, batch, local))
    if len(dst):
        xs = [np.asarray(x, float) for _k, _b, x in batches_keys]
        offset = np.concatenate([[0], np.cumsum([len(x) for x in xs])[:-1]]).astype(np.int64)
        v[dst] = np.concatenate(xs)[offset[batch] + local]  # (int64 + int32: int64 positions)
    return v


def column_map(model, chunks: list[np.ndarray], keys: list[dict], blocks_of: list[np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(whole-model columns ``dst``, their batches ``batch``, columns within them ``local``): the whole model's
    column ``dst[i]`` takes batch ``batch[i]``'s column ``local[i]`` (see :func:`assemble`; a column no batch holds
    is left out)."""
    S, T = model.blocks.of.shape
    flat = model.blocks.of.reshape(-1)
    _, first = np.unique(flat, return_index=True)
    s0, t0 = np.divmod(first, T)  # per whole-model block: its first (scenario, period)
    chunk_of = np.empty(T, dtype=np.int64)
    local = np.empty(T, dtype=np.int64)
    for j, idx in enumerate(chunks):
        chunk_of[idx] = j
        local[idx] = np.arange(len(idx))
    cj = chunk_of[t0]
    bb = np.empty(len(first), dtype=np.int64)  # per whole-model block: its batch block
    for j, block_of in enumerate(blocks_of):
        hit = np.flatnonzero(cj == j)
        bb[hit] = block_of[s0[hit], local[t0[hit]]]
    nb = len(keys)
    dsts, batches, locals_ = [], [], []
    for name in EXTRACT_FAMILIES:
        frame = model.families.get(name)
        if frame is None or not len(frame):
            continue
        cols = [c for c in ("c", "j", "k", "p") if c in frame]
        fb = frame["b"].to_numpy()
        radix = [nb] + [int(frame[c].max()) + 1 for c in cols]
        tail = max([int(bb.max()) + 1 if len(bb) else 1] +
                   [int(k[name]["b"].max()) + 1 for k in keys if name in k and len(k[name]["b"])])
        target = _mixed([cj[fb]] + [frame[c].to_numpy() for c in cols] + [bb[fb]], radix + [tail])
        src, at, of = [], [], []
        for j, k in enumerate(keys):
            k = k.get(name)
            if k is None or not len(k["col"]):
                continue
            inside = np.ones(len(k["col"]), dtype=bool)
            for c, base in zip(cols, radix[1:]):  # a batch column the whole model lacks (dominance) is left out
                inside &= k[c] < base
            src.append(_mixed([np.full(int(inside.sum()), j)] + [k[c][inside] for c in cols] + [k["b"][inside]],
                              radix + [tail]))
            at.append(k["col"][inside].astype(np.int64))
            of.append(np.full(len(at[-1]), j, dtype=np.int32))
        if not src:
            continue
        src, at, of = np.concatenate(src), np.concatenate(at), np.concatenate(of)
        order = np.argsort(src)
        src, at, of = src[order], at[order], of[order]
        del order
        pos = np.clip(np.searchsorted(src, target), 0, len(src) - 1)
        found = src[pos] == target
        pos = pos[found]
        dsts.append(frame["col"].to_numpy()[found])
        batches.append(of[pos])
        locals_.append(at[pos])
    if not dsts:
        return np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32)
    small = np.int32 if model.n_variables < 2**31 else np.int64  # kept across reads: 10 bytes a column, not 20
    return (np.concatenate(dsts).astype(small), np.concatenate(batches),
            np.concatenate(locals_).astype(np.int32))


def _mixed(columns: list, radix: list) -> np.ndarray:
    """Columns of small non-negative integers as one sortable int64 each (mixed radix ``radix``)."""
    out = np.zeros(len(columns[0]), dtype=np.int64)
    for col, base in zip(columns, radix):
        out *= int(base)
        out += np.asarray(col, dtype=np.int64)
    return out
