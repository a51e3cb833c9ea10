"""Per-period multi-cut Benders (L-shaped) decomposition: the purchases are the only link between periods.

Given the purchases ``n`` (whole instances per purchase row), the rest of the model separates by period
(by block: the exactly merged periods of :mod:`planner.model.blocks`; with scenarios, by (scenario, period)).
The recourse cost is a sum of convex piecewise-linear functions ``Q_g(n)``, one per *cut group* ``g``: a
block, or on very long horizons the blocks of one day or week (chosen by size, ``cut=``). The master is the
purchase problem (its cost, the reserved caps, the exit links) plus one ``theta_g`` per group and cuts

    theta_g >= Q_g(n_bar) + sum_c d_gc (n_c - n_bar_c),   d_gc = - sum_{rows r of g} a_rc y_r

with ``y`` the duals of the recourse rows (demand, shares, caps) at ``n_bar``: the subgradient of each group's
own LP. The recourse is priced in a few *batched* HiGHS LPs (a calendar month of periods each, ``chunk=``)
kept alive and re-solved warm with the purchases' column bounds changed; each group's value and subgradient
come out of one batch's solution by grouping its columns and rows by block with numpy (no Python loop per
period). Because a batch's LP is the direct sum of its blocks' LPs, its optimal duals restricted to a block
are optimal duals of that block, so every cut is valid.

The loop: a warm start from an aggregate LP (every k-th period weighted by the hours it stands for; its
bound is never used), then the master's LP relaxation cut to convergence (cuts slack for many iterations
are dropped), then the integer purchases: the relaxation's rounded, priced exactly on every period; when
that leaves a gap above ``mip_gap``, an integer master with the accumulated cuts. The lower bound is always
a master's bound (a relaxation of the full model) and the upper bound the exact cost of an integer plan
priced on every period, so the gap is proven on the full hourly model, never on an aggregate.

Not for models with backfill classes or discount-only commitments (they link every period; the planner then
solves the monolithic model, see :func:`applicable`). The monolithic model is the oracle in tests.
``multicut=False`` runs the previous scheme (one aggregated cut per chunk, :mod:`planner.solve.decompose_monthly`).
"""

from __future__ import annotations

import time

import numpy as np

from planner.inputs.arrays import PlanInputs
from planner.model import build_model, unit_bounds, unit_integer
from planner.model import stages
from planner.model.objective import first_stage_cost
from planner.solve.chunks import aggregate_inputs, chunk_index, chunk_inputs  # noqa: F401  (re-exported)
from planner.solve.master import (  # noqa: F401  (re-exported)
    ABS_TOL, REL_TOL, BendersResult, add_first_stage_rows, check_master, first_stage_feasible)

MAX_GROUPS = 10_000  # "auto" cuts: one theta per block up to this many, else per day, else per week
AGGREGATE_PERIODS = 384  # the warm start's aggregate keeps about this many periods
DROP_AFTER = 1  # a cut slack at the master's last solve leaves it (LP phase); it waits in the pool (every cut this
# solve priced, and an earlier solve's), and goes back in when the master's point violates it (POOL_ROUNDS). XLh's
# master kept 43,804 rows at its sixth solve, 38,138 of them slack (1.9 s); so, 14,690 (0.2-0.5 s a solve, the same bound)
INTEGER_THETA = "group"  # the integer master's thetas: the LP phase's ("group") or one per batch ("batch": summed cuts)
PRUNE_BEFORE_INTEGER = True  # drop the LP phase's cuts slack at the relaxation's optimum before the integer master
MASTER_GAP = 0.9  # the integer master's relative gap, as a share of the gap asked for (it starts from the best plan)
PRIOR_PER_GROUP = 3  # of an earlier solve's cuts (warm["prior"]), the master starts with this many per group: those
# highest at the earlier solve's purchases (all of them at once, 14 pricings x 5,475 groups at 3Y x 5, made a cold
# master LP of minutes); the rest wait in a pool, each added when the master's point violates it
POOL_ROUNDS = 50  # at most this many re-solves of the master for pooled cuts per solve (each adds one per group)
EARLY_ROUND = 1.0  # the LP phase tries its master's point rounded once the relaxation's own gap is within this many
# gaps asked for; after a try that did not close, once the relaxation's gap plus what that rounding cost above the
# relaxation fits in the gap. A plan within the gap ends the loop there (benchmarks/README, fourteenth round)
IN_OUT = 0.5  # in-out stabilisation of the LP phase: price n_in + IN_OUT (n_master - n_in); 1.0 = off (Kelley).
# benchmarks/master.py, fresh processes, idle: three hourly years 12 iterations / 150 s against 16 / 196 s; a year 7 / 38 s
# against 6 / 38 s


def applicable(inp: PlanInputs) -> bool:
    """True when the decomposition is exact for ``inp``: purchases to decide and no linking constraint family
    (:func:`planner.model.stages.linking`: a budget, backfill classes, discount-only commitments)."""
    return len(inp.commitments) > 0 and not stages.linking(inp)


def cut_groups(inp: PlanInputs, cut: str = "auto") -> str:
    """What one theta stands for: ``"block"`` (a period, or identical periods merged), ``"day"`` or
    ``"week"``; ``"auto"`` picks the finest with at most ``MAX_GROUPS`` thetas."""
    if cut != "auto":
        return cut
    S = len(inp.scenarios)
    if inp.T * S <= MAX_GROUPS:
        return "block"
    days = len(np.unique(inp.periods.to_period("D").asi8))
    return "day" if days * S <= MAX_GROUPS else "week"


def row_counts(pricer) -> dict:
    """Rows per constraint family summed over the pricer's batches."""
    out: dict = {}
    for counts in pricer.row_counts:
        for name, n in counts.items():
            out[name] = out.get(name, 0) + int(n)
    return out


def _aggregate_start(inp: PlanInputs, highspy, threads) -> np.ndarray | None:
    """The purchases of the aggregate model's LP relaxation (None when the horizon is short or it fails)."""
    from planner.solve.monolithic import new_highs, pass_model

    k = inp.T // AGGREGATE_PERIODS
    if k < 2:
        return None
    model = build_model(aggregate_inputs(inp, k), owned_tie=False)  # a decision's LP (objective.tie_breaks)
    h = new_highs(highspy, None, 0.0, threads)
    pass_model(h, model, highspy, integer=False)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    x = np.asarray(h.getSolution().col_value, dtype=float)
    return np.clip(x[model.families["n"]["col"].to_numpy()], 0.0, None)


def _cut_rows(g: np.ndarray, c: np.ndarray, d: np.ndarray, G: int, R: int, thetas: np.ndarray | None = None):
    """The CSR rows ``theta_g - d_g . n >= rhs_g`` of one pricing's cuts (entries sorted by group ``g``, purchase
    columns ``c`` first, thetas after the ``R`` purchases): (starts, index, coef) for ``Highs.addRows``.
    ``thetas``: row ``g``'s theta when the ``G`` rows are some groups only (default: theta ``g``)."""
    starts = np.searchsorted(g, np.arange(G)) + np.arange(G)  # each row: its d entries then its theta
    index = np.empty(len(g) + G, dtype=np.int32)
    coef = np.empty(len(g) + G)
    pos = np.arange(len(g)) + g  # entry i of group g sits after g theta entries
    index[pos], coef[pos] = c, -d
    tpos = np.searchsorted(g, np.arange(G), side="right") + np.arange(G)
    index[tpos], coef[tpos] = R + (np.arange(G) if thetas is None else thetas), 1.0
    return starts.astype(np.int32), index, coef


def _logged(g: np.ndarray, c: np.ndarray, d: np.ndarray, rhs: np.ndarray, G: int, R: int) -> tuple:
    """One pricing's cuts as the loop keeps them (every pricing's, to the end): per group its entries' count
    instead of a group per entry, purchase columns in the narrowest integer type; half the bytes of (g, c, d)."""
    return np.bincount(g, minlength=G).astype(np.int32), c.astype(_column_width(R)), d, rhs


def _column_width(R: int):
    """The narrowest integer type that numbers ``R`` purchase columns (the kept cuts' columns)."""
    return np.int16 if R <= np.iinfo(np.int16).max else np.int32


def _unlogged(entry: tuple) -> tuple:
    """(g, c, d, rhs) of a kept pricing's cuts (:func:`_logged`)."""
    counts, c, d, rhs = entry
    return np.repeat(np.arange(len(counts)), counts), c.astype(np.int64), d, rhs


def _assemble(results: list, offsets: np.ndarray, n: np.ndarray, G: int) -> tuple:
    """One pricing's cuts from every batch's :class:`~planner.solve.recourse.Priced` at purchases ``n``: each
    group's value, and the cut entries (group, purchase column, coefficient; sorted by group, then column) with
    each group's right-hand side ``Q_g(n) - d_g . n``."""
    values = np.concatenate([r.values for r in results])
    g = np.concatenate([r.group + off for r, off in zip(results, offsets)])
    c = np.concatenate([r.row for r in results])
    d = np.concatenate([r.coef for r in results])
    order = np.lexsort((c, g))
    g, c, d = g[order], c[order], d[order]
    rhs = values - np.bincount(g, weights=d * n[c], minlength=G)
    return values, g, c, d, rhs


def point_cuts(inp: PlanInputs, n: np.ndarray, priced: list, groups: list[int]) -> dict:
    """Every batch priced at purchases ``n`` (``priced``, of a pricer whose batches have ``groups`` cut groups
    each) as the Benders loop's cuts there: one per group, exact at ``n`` and valid everywhere for ``inp``
    (a batch's duals at ``n`` bound its LP's value at any purchases). ``solve_benders`` of the very same ``inp``
    object on the same batches, given them in ``warm["cuts"]``, starts its master with them and with ``n`` as
    its first incumbent (:func:`solve_benders`); for other inputs they prove nothing and are not used."""
    n = np.asarray(n, float)
    offsets = np.cumsum([0] + list(groups))
    G, R = int(offsets[-1]), len(n)
    values, g, c, d, rhs = _assemble([r.cut if r.cut is not None else r for r in priced], offsets, n, G)
    return {"inputs": inp, "units": n.copy(), "groups": [int(x) for x in groups], "values": values,
            "cuts": _logged(g, c, d, rhs, G, R)}


def _seed(warm: dict | None, inp: PlanInputs, chunks: list, groups: list[int], R: int) -> dict | None:
    """``warm["cuts"]`` (:func:`point_cuts`) when they were made for this very ``inp`` on the same batches and
    cut groups, else None."""
    cuts = (warm or {}).get("cuts")
    if cuts is None or cuts.get("inputs") is not inp or len(cuts["units"]) != R:
        return None
    same = (len(warm.get("chunks", [])) == len(chunks) and list(cuts["groups"]) == [int(x) for x in groups]
            and all(np.array_equal(a, b) for a, b in zip(warm["chunks"], chunks)))
    return cuts if same else None


def misread_start(info, sol: np.ndarray, cost: np.ndarray) -> bool:
    """Whether an integer master solved from a MIP start came back misread: "optimal" at an objective that is not
    the cost of the point it returns (``cost`` of the purchases, then every theta at 1). With HiGHS 1.16 and presolve
    on, a start can end the run at once with the start itself and a lower objective and bound than the master's own
    LP relaxation (helper-71: a tree's first-stage plan stopped "feasible", 0.16 % above the optimum, where the same
    master solved without the start proves it); the monolithic path gives HiGHS no start for the same reason
    (:mod:`planner.solve.monolithic`). A correct run's objective is its point's cost to about 1e-15 of the terms'
    magnitudes; misreads were found from 5e-6 down to 1.6e-8 of it (helper-72), so the test is at 1e-9."""
    if not info.primal_solution_status or len(sol) < len(cost):
        return False
    n, theta = sol[:len(cost)], sol[len(cost):]
    at = float(cost @ n + theta.sum())
    scale = float(np.abs(cost) @ np.abs(n) + np.abs(theta).sum())
    return abs(float(info.objective_function_value) - at) > 1e-9 * max(1.0, scale)


def _prior_matches(log: dict | None, inp: PlanInputs, chunks: list, cut_by: str | None = None) -> bool:
    """Whether ``log`` (a :attr:`BendersResult.cut_log`) has cuts and was made for this very ``inp`` on the same
    batches (and cut groups, ``cut_by``, when the log says)."""
    if not log or not log.get("entries") or log.get("inputs") is not inp:
        return False
    if cut_by is not None and log.get("cut_by", cut_by) != cut_by:
        return False
    return len(log.get("chunks", [])) == len(chunks) and all(np.array_equal(a, b) for a, b in zip(log["chunks"], chunks))


def _prior(warm: dict | None, inp: PlanInputs, chunks: list, groups: list[int], cut_by: str | None = None) -> list:
    """``warm["prior"]`` (a :attr:`BendersResult.cut_log`: every pricing's cuts of an earlier solve) when it was
    made for this very ``inp`` on the same batches and cut groups (:func:`_prior_matches`, and the same groups per
    batch), else []. Its cuts bound these batches' recourse at any purchases."""
    log = (warm or {}).get("prior")
    if not _prior_matches(log, inp, chunks, cut_by) or list(log["groups"]) != [int(x) for x in groups]:
        return []
    return list(log["entries"])


def _values(cuts: list, x: np.ndarray, G: int) -> np.ndarray:
    """(E, G): each of ``cuts`` (unlogged entries, one cut per group each) at purchases ``x``, per group."""
    return np.stack([rhs + np.bincount(g, weights=d * x[c], minlength=G) for g, c, d, rhs in cuts])


def _gather(cuts: list, pick: np.ndarray) -> tuple:
    """Per group ``j``, the entries of cut ``pick[j]`` of ``cuts`` (none where it is -1): (g, c, d) sorted by group;
    within a group, one cut's columns, sorted already."""
    parts = [(g[m], c[m], d[m]) for i, (g, c, d, _) in enumerate(cuts) for m in [pick[g] == i]]
    g, c, d = (np.concatenate([p[j] for p in parts]) for j in range(3))
    order = np.argsort(g, kind="stable")
    return g[order], c[order], d[order]


def _select(entries: list, x: np.ndarray, G: int, R: int, k: int = PRIOR_PER_GROUP, picks: bool = False):
    """Of ``entries`` (logged pricings' cuts, one per group each: :func:`_logged`), the ``k`` highest at purchases
    ``x`` in each group, as ``k`` logged entries of one cut per group: the cuts that bound the recourse tightest near
    ``x`` (any subset of valid cuts is valid). ``picks``: and which (a bool (len(entries), G): entry e's cut of group
    g was taken)."""
    if len(entries) <= k:
        return (list(entries), np.ones((len(entries), G), bool)) if picks else list(entries)
    cuts = [_unlogged(e) for e in entries]
    rank = np.argsort(-_values(cuts, x, G), axis=0, kind="stable")[:k]  # (k, G): per group, its k highest cuts
    rhs_all = np.stack([cut[3] for cut in cuts])
    out = [_logged(*_gather(cuts, pick), rhs_all[pick, np.arange(G)], G, R) for pick in rank]
    if not picks:
        return out
    taken = np.zeros((len(entries), G), bool)
    taken[rank, np.arange(G)] = True
    return out, taken


def _violated(pool: list, x: np.ndarray, theta: np.ndarray, G: int, which: bool = False) -> tuple:
    """Per group, the cut of ``pool`` (unlogged entries, one cut per group each) highest at purchases ``x``, where
    it is above the group's ``theta`` (beyond noise): (groups, and their cuts' g, c, d, rhs; sorted by group);
    ``which``: and each group's entry of ``pool`` (None where nothing is violated)."""
    value = _values(pool, x, G)
    best = value.argmax(axis=0)
    top = value[best, np.arange(G)]
    groups = np.flatnonzero(top - theta > 1e-6 * np.maximum(1.0, np.abs(top)))  # (above the solver's tolerance)
    if not len(groups):
        return (groups, None, None) if which else (groups, None)
    pick = np.full(G, -1)
    pick[groups] = best[groups]
    g, c, d = _gather(pool, pick)
    rhs = np.stack([e[3] for e in pool])[best[groups], groups]
    out = (groups, (np.searchsorted(groups, g), c, d, rhs))
    return out + (best[groups],) if which else out


def _light(g: np.ndarray, c: np.ndarray, d: np.ndarray, rhs: np.ndarray, R: int) -> tuple:
    """One pricing's cuts (unlogged: g, c, d, rhs) for the pool, in narrower integers (groups int32, purchase
    columns as :func:`_logged` keeps them): what :func:`_values`, :func:`_gather` and :func:`_cut_rows` read."""
    return g.astype(np.int32), c.astype(_column_width(R)), d, rhs


def _aggregate_master(inp, cost, ubound, pricer, cut_log, highspy, new_highs, mip_gap, threads) -> dict:
    """An integer master with one theta per batch (a week): every logged pricing's cuts summed over the batch's
    groups, a valid cut on the batch's theta (a sum of valid cuts); weaker than the groups' own, far smaller."""
    R = len(cost)
    of = np.repeat(np.arange(len(pricer.groups)), np.asarray(pricer.groups, dtype=np.int64))
    B = len(pricer.groups)
    inf = highspy.kHighsInf
    h = new_highs(highspy, None, mip_gap, threads)
    h.addVars(R + B, np.zeros(R + B), np.r_[np.where(np.isfinite(ubound), ubound, inf), np.full(B, inf)])
    h.changeColsCost(R + B, np.arange(R + B, dtype=np.int32), np.r_[cost, np.ones(B)])
    add_first_stage_rows(h, inp, inf)
    fixed = h.getNumRow()

    def add(entry):
        g, c, d, rhs = entry
        D = np.zeros((B, R))
        np.add.at(D, (of[g], c), d)
        rb = np.bincount(of, rhs, B)
        rows, cols = np.nonzero(D)  # row-major: sorted by batch
        starts, index, coef = _cut_rows(rows, cols, D[rows, cols], B, R)
        h.addRows(B, rb, np.full(B, inf), len(index), starts, index, coef)
    for entry in cut_log:
        add(_unlogged(entry))
    return {"highs": h, "B": B, "of": of, "add": add, "fixed": fixed}


def solve_benders(inp: PlanInputs, *, chunk: str | int = "month", mip_gap: float = 1e-4,
                  time_limit_s: float | None = None, threads: int | None = None, max_iterations: int = 500,
                  progress=None, cut: str = "auto", multicut: bool = True, executor=None,
                  pricer=None, start: np.ndarray | None = None, warm: dict | None = None,
                  final: bool | str = True, keep_log: bool = False) -> BendersResult:
    """Decide the purchases of ``inp`` by per-period multi-cut Benders decomposition (see the module).

    ``chunk``: the periods of one batched recourse LP (calendar ``"month"``, ``"week"``, ``"day"`` or N
    periods); ``cut``: what one theta stands for (``"auto"``, ``"block"``, ``"day"``, ``"week"``);
    ``progress(iteration, bound, incumbent)`` is called after every master solve. ``multicut=False`` runs
    the previous one-cut-per-chunk scheme. The gap of the result is proven on the full model. The batches are
    priced where ``executor`` says (:func:`planner.solve.workers.make_pricer`: here, local worker processes
    or a Dask cluster; the same answer on any), or by ``pricer`` when one is given (made with the same chunks
    and cut groups; it is not closed here). The result carries every batch's pricing at the plan's purchases
    (column values and dual sums), so the plan needs no solve of the whole model.

    ``start``: purchases to price first instead of the aggregate LP's (a close plan's), used when they are one finite
    value >= 0 per purchase row and satisfy the first-stage rows (else ignored); ``warm``: a plan's
    ``recourse`` on the same batches (their bases: the first pricing starts from them). Both change where the
    loop starts, not what it proves. ``final``: what the last pricing at the plan's purchases returns (``True``:
    every column's value and the dual sums; ``"costs"``: each scenario's costs only, a decision's:
    :func:`planner.solve.recourse.scenario_costs`).

    ``warm["prior"]``: an earlier solve's :attr:`~planner.solve.master.BendersResult.cut_log` on the very same inputs
    and batches (or one made for them: :func:`planner.solve.tied.first_stage_log`), whose cuts the master starts
    with, a few per group, the rest added where its point violates them (its first point is then the master's own,
    not the aggregate's). ``keep_log``: the result carries this solve's ``cut_log`` for such a later solve.
    """
    if not multicut:
        from planner.solve.decompose_monthly import solve_benders as monthly

        return monthly(inp, chunk=chunk, mip_gap=mip_gap, time_limit_s=time_limit_s, threads=threads,
                       max_iterations=max_iterations, progress=progress)
    import highspy

    from planner.solve.monolithic import new_highs

    t0 = time.perf_counter()
    phases = {"build": 0.0, "aggregate": 0.0, "pricing": 0.0, "master": 0.0}
    whole = unit_integer(inp)  # instances are whole; savings plans' USD per hour are continuous
    ubound = unit_bounds(inp)

    def rounded(x):
        return np.minimum(np.where(whole, np.round(x), np.clip(x, 0.0, None)), ubound) + 0.0  # (-0.0 is 0.0)

    def elapsed():
        return time.perf_counter() - t0

    def out_of_time():
        return time_limit_s is not None and elapsed() > time_limit_s

    cost = first_stage_cost(inp)  # cost, or NPV under [finance] objective = "npv" (the batches discount alike)
    cut_by = cut_groups(inp, cut)
    chunks = chunk_index(inp, chunk)
    own = pricer is None
    if own:
        from planner.solve.workers import make_pricer

        pricer = make_pricer(inp, chunks, cut_by, executor)
    try:
        from planner.solve.workers import warm_bases

        return _loop(inp, pricer, chunks, cut_by, cost, whole, ubound, rounded, elapsed, out_of_time, phases,
                     mip_gap, time_limit_s, threads, max_iterations, progress, highspy, new_highs, t0,
                     start, warm_bases(warm, chunks, pricer), final, warm, keep_log)
    finally:
        if own:
            pricer.close()


def _loop(inp, pricer, chunks, cut_by, cost, whole, ubound, rounded, elapsed, out_of_time, phases, mip_gap,
          time_limit_s, threads, max_iterations, progress, highspy, new_highs, t0, given=None,
          bases=None, final=True, warm=None, keep_log=False) -> BendersResult:
    """The Benders iterations of :func:`solve_benders` over ``pricer``'s batches (from ``given`` purchases and
    ``bases`` when given; with ``warm``'s cuts when they were made for ``inp``: :func:`_seed`)."""
    from planner.model.stages import first_stage_rows
    from planner.solve.monolithic import time_left

    R = len(inp.commitments)
    n0 = np.zeros(R)
    fams = first_stage_rows(inp)  # the first-stage families' own rows (reserved caps, exit links, sites)

    def feasible(x):
        """Whether purchases ``x`` satisfy the master's own rows (every first-stage family)."""
        return first_stage_feasible(fams, x)

    # 1. warm start: the purchases given, else the aggregate LP's (bound not used), else buy nothing. Worked out
    # while the pricing workers build their batches (a ProcessPricer's build is in flight until first used)
    t = time.perf_counter()
    start = None
    if given is not None:  # a start is used when it is R finite purchases >= 0 that keep every first-stage row
        g = np.asarray(given, float).reshape(-1)
        start = rounded(g) if len(g) == R and np.isfinite(g).all() and (g >= 0).all() else None
    has_prior = _prior_matches((warm or {}).get("prior"), inp, chunks, cut_by)  # an earlier solve's cuts for these
    if (start is None or not feasible(start)) and not has_prior:  # (with prior cuts: the master's own point)
        start = _aggregate_start(inp, highspy, threads)
    if start is not None and not feasible(start):  # the aggregate sees every k-th period only: its purchases may
        start = None  # break a first-stage row of the periods it skipped (a site's power cap): start from nothing
    phases["aggregate"] = time.perf_counter() - t
    lost0 = getattr(pricer, "bases_lost", 0)  # kept bases a replaced worker took with it (this solve's)
    offsets = np.cumsum([0] + list(pricer.groups))  # (waits for the batches built)
    G = int(offsets[-1])
    bases: list = list(bases) if bases is not None else [None] * len(chunks)
    phases["build"] = elapsed() - phases["aggregate"]  # the batches' build past what the aggregate start overlapped

    inf = highspy.kHighsInf
    master = new_highs(highspy, None, mip_gap / 4, threads)
    master.setOptionValue("mip_rel_gap", max(mip_gap / 4, 1e-9))
    lower = np.zeros(R + G)  # every group's recourse costs at least 0 (savings plans only discount usage)
    upper = np.r_[np.where(np.isfinite(ubound), ubound, inf), np.full(G, inf)]
    master.addVars(R + G, lower, upper)
    master.changeColsCost(R + G, np.arange(R + G, dtype=np.int32), np.r_[cost, np.ones(G)])
    add_first_stage_rows(master, inp, inf, fams)
    fixed_rows = master.getNumRow()
    ages = np.zeros(0, dtype=np.int64)  # per cut row: consecutive master solves it was slack
    cut_lo = np.zeros(0)  # and its right-hand side
    solved_rows = [0]  # the cut rows the master's last solve had (rows added since are after them)

    last: dict = {}  # the last pricing's per-group values
    cut_log: list = []  # every pricing's cuts (:func:`_logged`: per-group counts, columns, coefficients, right-hand sides)
    cut_of: dict = {}  # a point priced -> its entry in cut_log
    agg_rows: list = []  # the batch master's cut rows, when it was used
    pool: list = []  # an earlier solve's cuts (warm["prior"]) not all in the master: added where violated
    pooled = [0]  # how many of them were
    entered = np.zeros((0, 0), bool)  # per earlier solve's cut (entry, group): whether it was in the master yet
    own: list = []  # this solve's own cuts in the LP phase (:func:`_light`), those slack gone from the master: added
    # back where violated, as the pool's
    dropped = {"slack": 0, "before_integer": 0, "returned": 0}  # cuts deleted: slack DROP_AFTER solves; slack before
    # the integer master; and the times a cut that had been in the master went back in (violated at a later point)
    costs_at: dict = {}  # a decision's integer plans priced -> each batch's costs there (the last pass reads them)

    def price(n):
        """Q(n) = sum_g Q_g(n), each group's value, and the cuts (COO) at n; adds them to the master. A decision's
        (``final="costs"``) integer plan is priced with each scenario's costs too, kept for the last pass."""
        nonlocal ages, cut_lo
        t = time.perf_counter()
        keep = final == "costs" and np.array_equal(rounded(n), n)
        results = pricer.price(n, bases, portable=False, solution="costs" if keep else False)  # each batch's basis
        # stays where it was priced: the loop hands it back next call (the final pricing below returns them as
        # arrays, for the plan to keep)
        for i, r in enumerate(results):
            bases[i] = r.basis
        if keep:  # (the same LP as a cut's: its costs at the optimum it was priced at)
            costs_at[n.tobytes()] = [r.costs for r in results]
        phases["pricing"] += time.perf_counter() - t
        # cut g: theta_g - d_g . n >= Q_g - d_g . n_bar   (rows sorted by group)
        values, g, c, d, rhs = _assemble(results, offsets, n, G)
        if not last.get("batch_master"):  # the batch master takes its summed cuts itself (below)
            add_cuts(g, c, d, rhs)
        if last.get("lp_phase", True):
            own.append(_light(g, c, d, rhs, R))
        last["values"] = values  # each group's value at n (the integer master's start when n is the best plan)
        cut_log.append(_logged(g, c, d, rhs, G, R))  # every cut priced (the aggregated integer master sums them)
        cut_of[n.tobytes()] = len(cut_log) - 1
        return float(values.sum())

    def add_cuts(g, c, d, rhs, groups=None):
        """One cut per group into the master (theta_g - d_g . n >= rhs_g; entries sorted by group); ``groups``:
        the groups of the rows when some only (``g`` then numbers them 0..len(groups)-1)."""
        nonlocal ages, cut_lo
        rows = G if groups is None else len(groups)
        starts, index, coef = _cut_rows(g, c, d, rows, R, groups)
        master.addRows(rows, rhs, np.full(rows, inf), len(index), starts, index, coef)
        ages = np.r_[ages, np.zeros(rows, dtype=np.int64)]
        cut_lo = np.r_[cut_lo, rhs]

    def solve_master(phase="master", h=None):
        """Solve the master (or ``h``); in the LP phase, while an earlier solve's pooled cut is violated at its point,
        add the most violated per group and solve again (cheap cuts before a pricing; at most ``POOL_ROUNDS`` times
        a solve, never past the time limit). The integer master is not re-solved for them: its start would be lost,
        and the plans it proposes are priced exactly anyway."""
        info, sol = _solve_master(phase, h)
        for _ in range(POOL_ROUNDS if phase == "master" and (h is None or h is master) else 0):
            if not (pool or own) or out_of_time() or not info.primal_solution_status:
                break
            t = time.perf_counter()
            groups, cuts, which = _violated(pool + own, sol[:R], sol[R:R + G], G, which=True)
            phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - t  # (the pool's scan is the master's time)
            if cuts is None:
                break
            add_cuts(*cuts, groups=groups)
            prior = which < len(pool)  # an earlier solve's cut: counted once, the first time it enters
            first = prior.copy()
            first[prior] = ~entered[which[prior], groups[prior]]
            entered[which[prior], groups[prior]] = True
            pooled[0] += int(first.sum())
            dropped["returned"] += int((~first).sum())  # (a cut that was in the master before, back again)
            info, sol = _solve_master(phase, h)
        return info, sol

    def _solve_master(phase="master", h=None):
        h = master if h is None else h
        t = time.perf_counter()
        if h.run() == highspy.HighsStatus.kError:  # (a threads setting HiGHS refuses once its scheduler runs...)
            from planner.core.errors import SolverError

            raise SolverError(f"HiGHS failed on the Benders master ({phase}): {h.getModelStatus()}; "
                              "nothing was written (a [solver] threads setting HiGHS refused is one cause)")
        phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - t
        if h is master:
            solved_rows[0] = len(cut_lo)
        check_master(h, highspy, phase)
        return h.getInfo(), np.asarray(h.getSolution().col_value, dtype=float)

    def drop_slack_cuts():
        """Delete the cuts slack in the last DROP_AFTER master solves (the active ones stay)."""
        nonlocal ages, cut_lo
        slack = slack_now(basic=True)
        slack[solved_rows[0]:] = False  # rows added since the last solve (an early rounding's cuts) wait for one
        ages = np.where(slack, ages + 1, 0)
        dropped["slack"] += delete_cuts(np.flatnonzero(ages >= DROP_AFTER))

    def slack_now(basic: bool = False) -> np.ndarray:
        """Per cut: slack at the master's last solution; ``basic``: or basic in its basis (a cut at its bound with
        no dual: the basis stays optimal without it, so the master's next solve starts where this one ended)."""
        act = np.asarray(master.getSolution().row_value, dtype=float)[fixed_rows:]
        out = act - cut_lo > 1e-7 * np.maximum(1.0, np.abs(cut_lo))
        if basic:
            status = master.getBasis().row_status[fixed_rows:]
            out |= np.fromiter(map(int, status), dtype=np.int8, count=len(out)) == int(highspy.HighsBasisStatus.kBasic)
        return out

    def delete_cuts(old: np.ndarray) -> int:
        """Delete cuts ``old`` (positions among the cuts) from the master; returns how many."""
        nonlocal ages, cut_lo
        if len(old):
            master.deleteRows(len(old), (old + fixed_rows).astype(np.int32))
            ages, cut_lo = np.delete(ages, old), np.delete(cut_lo, old)
            solved_rows[0] -= int((old < solved_rows[0]).sum())
        return len(old)

    def prune(lp_rows: int) -> int:
        """Before the integer master: the LP phase's cuts slack at the relaxation's optimum are deleted (any subset
        of valid cuts is a relaxation, so the bound stays valid; a cut the integer master needs again comes back
        from pricing its point). The rounding's cuts, exact at the plans priced, stay. Returns how many."""
        solve_master()  # the relaxation with every cut, warm from its last basis
        return delete_cuts(np.flatnonzero(slack_now() & (np.arange(len(cut_lo)) < lp_rows - fixed_rows)))

    def cuts_kept() -> int:  # the cuts of the master solved last (the batch master's rows past its own)
        return agg_rows[0] if agg_rows else len(cut_lo)

    best_n, best_upper, bound = None, np.inf, -np.inf
    priced: set = set()  # integer plans priced exactly
    history: list = []
    it = 0
    mips = 0
    status = "feasible"

    def log():
        history.append((it, bound, best_upper, elapsed()))
        if progress:
            progress(it, bound, best_upper)

    best_theta = None

    def offer(n_int, recourse):
        nonlocal best_n, best_upper, best_theta
        priced.add(n_int.tobytes())
        total = float(cost @ n_int) + recourse
        if total < best_upper:
            best_upper, best_n, best_theta = total, n_int.copy(), last.get("values")

    def closed(gap=mip_gap):
        return best_upper < np.inf and best_upper - bound <= max(gap, REL_TOL) * abs(best_upper) + ABS_TOL

    n = n0 if start is None else start
    # 2. the master's LP relaxation, cut until it closes or stalls. In-out stabilisation (Ben-Ameur and Neto
    # 2007): the cuts are taken at a point between the best priced point (n_in) and the master's (n_out), which
    # damps the master's jumps from one vertex to another; when the bound stops rising, the master's own point
    # is priced (lam = 1: Kelley), so the loop converges as plain Kelley does
    n_lp, lp_stall = n, 0
    n_in, best_lp, lam, n_out = None, np.inf, IN_OUT, None
    early = EARLY_ROUND * mip_gap  # the relaxation's gap at which its point is tried rounded
    seed = _seed(warm, inp, chunks, pricer.groups, R)
    seeded, seed_only = 0, False  # seed_only: the seed's purchases are the one integer plan priced so far
    if seed is not None:  # a pricing of these very inputs at other purchases (the plan's): its cuts go in first,
        # and its purchases, when whole and within every first-stage row, are the first incumbent (exact cost)
        entry, x = seed["cuts"], np.asarray(seed["units"], float)
        add_cuts(*_unlogged(entry))
        own.append(_light(*_unlogged(entry), R))
        seeded = G
        cut_log.append(entry)
        cut_of[x.tobytes()] = len(cut_log) - 1
        last["values"] = seed["values"]
        if np.array_equal(rounded(x), x) and feasible(x):
            offer(x, float(seed["values"].sum()))
            seed_only = True
            best_lp, n_in = float(cost @ x) + float(seed["values"].sum()), x.copy()
    prior = _prior(warm, inp, chunks, pricer.groups, cut_by)  # an earlier solve's cuts on these very batches
    if prior:  # a few per group: those tightest at the earlier solve's purchases
        x0 = np.asarray(warm["prior"].get("units", n), float)
        x0 = x0 if len(x0) == R and np.isfinite(x0).all() else n
        chosen, entered = _select(prior, np.clip(x0, 0.0, None), G, R, picks=True)
        for entry in chosen:
            add_cuts(*_unlogged(entry))  # (all of prior is in the pool below: these come back from there if dropped)
            cut_log.append(entry)
            seeded += G
        pool.extend(_unlogged(e) for e in prior)  # the rest, added where the master's point violates them
    if start is None and prior:  # the first point: the master's own, cut by the earlier solve's cuts (on small
        # trees the first-stage plan took 4-10 pricings so, 9-17 cold); a plan's single pricing (warm["cuts"]) keeps
        # the loop's own start (buy nothing where the aggregate has none)
        info, sol = solve_master()
        bound = max(bound, float(info.objective_function_value))
        n = np.clip(sol[:R], 0.0, None)
    while it < max_iterations:
        it += 1
        recourse = price(n)
        if np.allclose(n[whole], np.round(n[whole]), atol=1e-9):
            offer(rounded(n), recourse)
        lp_value = float(cost @ n) + recourse  # the relaxation's objective at n (an LP upper bound)
        if lp_value < best_lp:
            best_lp, n_in = lp_value, n.copy()
        if out_of_time():
            log()
            break
        info, sol = solve_master()
        prev = bound
        bound = max(bound, float(info.objective_function_value))
        n_prev_out, n_out = n_out, np.clip(sol[:R], 0.0, None)
        n_lp = n
        log()
        lp_gap = (best_lp - bound) / max(abs(best_lp), 1e-12)
        if lp_gap <= early and not closed() and not out_of_time():
            tried_at, early = lp_gap, lp_gap / 2  # (the next try: set below from this one's rounding when priced)
            # an integer plan near the master's point (rounded, else rounded down: rounding up can pass a cap),
            # priced on every period: its cost is an upper bound (and its cuts tighten the master too)
            cand = next((c for c in (rounded(n_out), np.where(whole, np.floor(n_out + 1e-9), n_out))
                         if c.tobytes() not in priced and feasible(c)), None)
            if cand is not None:
                it += 1
                recourse = price(cand)
                offer(cand, recourse)
                log()
                if closed():
                    n = n_out
                    break
                # what rounding added above the relaxation's best priced value: the next try waits until the
                # relaxation's gap leaves that much room in the gap asked for (and has at least halved)
                total = float(cost @ cand) + recourse
                excess = max(total - best_lp, 0.0) / max(abs(total), 1e-12)
                early = min(max(mip_gap - excess, 0.0), tried_at / 2)
        if closed() or best_lp - bound <= mip_gap / 4 * abs(best_lp) + ABS_TOL or np.allclose(n_out, n, atol=1e-9) \
                or (n_prev_out is not None and lam >= 1.0 and np.allclose(n_out, n_prev_out, atol=1e-9)):
            n = n_out
            break
        lp_stall = lp_stall + 1 if bound - prev <= 1e-7 * abs(bound) else 0
        if lp_stall >= 2:
            lam = 1.0  # the bound stalls: price the master's own point
        if lp_stall >= 5 or it >= 100:
            n = n_out
            break
        n = n_out if lam >= 1.0 else n_in + lam * (n_out - n_in)
        drop_slack_cuts()
    lp_rows = master.getNumRow()  # the rows the LP phase left (the rounding's cuts come after)
    # 3. round the relaxation's purchases and price them exactly on every period
    if not closed() and not out_of_time() and it < max_iterations:
        up = np.minimum(np.where(whole, np.ceil(n - 1e-9), n), ubound)
        for cand in (rounded(n), rounded(n_lp), np.where(whole, np.floor(n + 1e-9), n), up):
            if cand.tobytes() in priced or not feasible(cand):
                continue
            it += 1
            recourse = price(cand)
            offer(cand, recourse)
            log()
            if closed() or out_of_time():
                break
    phases["rounding_gap"] = (best_upper - bound) / abs(best_upper) \
        if np.isfinite(best_upper) and abs(best_upper) > 0 else (0.0 if best_upper == 0 else float("inf"))
    # 4. the integer master with the accumulated cuts, while rounding leaves a gap
    if not closed() and not out_of_time() and it < max_iterations:
        if PRUNE_BEFORE_INTEGER:
            if time_limit_s is not None:
                time_left(master, time_limit_s - elapsed(), 1.0)
            dropped["before_integer"] = prune(lp_rows)
        last["lp_phase"] = False  # the integer master reads no pool: the LP phase's own cuts are let go
        own.clear()
        ints = np.flatnonzero(whole).astype(np.int32)
        agg = None
        if INTEGER_THETA == "batch":  # one theta per batch: each pricing's cuts summed over the batch's groups
            agg = _aggregate_master(inp, cost, ubound, pricer, cut_log, highspy, new_highs, mip_gap, threads)
        im = agg["highs"] if agg is not None else master  # the integer master
        last["batch_master"] = agg is not None
        im.changeColsIntegrality(len(ints), ints, np.full(len(ints), highspy.HighsVarType.kInteger))
        # the master only has to prove its optimum to the gap asked for, relative to its incumbent: it starts
        # from the best plan priced (its thetas at their exact values satisfy every cut, so the start's
        # objective is that plan's exact cost), so a proof there is a proof of the plan (was mip_gap / 4)
        im.setOptionValue("mip_rel_gap", max(MASTER_GAP * mip_gap, 1e-9))
        if time_limit_s is not None:  # HiGHS's own time limit is not checked everywhere in a MIP (ERGO-Code/HiGHS
            # #885, #2226): its interrupt callback stops the master at the deadline, with its bound so far
            def deadline(e):
                if out_of_time():
                    e.interrupt()
            im.cbMipInterrupt += deadline
        restored: set = set()  # plans priced before whose cuts went back into the master
        while it < max_iterations:
            it += 1
            if time_limit_s is not None:
                im.setOptionValue("time_limit", max(time_limit_s - elapsed(), 1.0))  # a MIP's limit is per run
            started = best_n is not None and best_theta is not None and len(best_theta) == G
            if started:
                theta0 = np.bincount(agg["of"], best_theta, agg["B"]) if agg is not None else best_theta
                x0 = np.r_[best_n, theta0].astype(float)
                im.setSolution(len(x0), np.arange(len(x0), dtype=np.int32), x0)
            info, sol = solve_master("integer", im)
            if started and misread_start(info, sol, cost):  # HiGHS 1.16: see misread_start; solved again without it
                mips += 1
                im.clearSolver()
                if time_limit_s is not None:
                    im.setOptionValue("time_limit", max(time_limit_s - elapsed(), 1.0))
                info, sol = solve_master("integer", im)
            mips += 1
            dual = info.mip_dual_bound
            if np.isfinite(dual) and info.primal_solution_status:
                bound = max(bound, float(dual))
            if not info.primal_solution_status:
                log()
                break
            n = rounded(sol[:R])
            key = n.tobytes()
            if key in priced and not closed() and key in cut_of and key not in restored:
                # a plan priced before whose cuts the pruning dropped (or the master never had: the batch master
                # has all): put them back, so its cuts are exact there again, and solve once more
                restored.add(key)
                entry = _unlogged(cut_log[cut_of[key]])
                (agg["add"] if agg is not None else lambda e: add_cuts(*e))(entry)
                log()
                continue
            if key in priced:  # its cuts are exact there: the master cannot rise above that plan's cost
                log()
                if best_upper - bound <= max(mip_gap, 1e-9) * abs(best_upper) + ABS_TOL:
                    status = "optimal"
                break
            offer(n, price(n))
            if agg is not None:
                agg["add"](_unlogged(cut_log[-1]))
            log()
            if closed() or out_of_time():
                break
        if agg is not None:
            agg_rows.append(im.getNumRow() - agg["fixed"])
    if closed():
        status = "optimal"
    if best_n is None or (seed_only and len(priced) == 1):  # never priced an integer point of its own (time
        # limit): price the last one (or buy nothing); the seed alone would answer with the plan it was seeded from
        cand = rounded(n) if feasible(rounded(n)) else np.where(whole, np.floor(n + 1e-9), n)
        cand = cand if feasible(cand) else n0
        offer(cand, price(cand))
        if closed():
            status = "optimal"
    t = time.perf_counter()  # the plan: every batch at the best purchases, with its columns and duals
    held = costs_at.get(np.asarray(best_n, float).tobytes()) if final == "costs" else None
    if held is not None:  # a decision's costs at its purchases, from the loop's own pricing of them: the same LP
        # and settings as a last pass (decision_from_batches reads each batch's costs only)
        from planner.solve.recourse import Priced

        last_pass = [Priced(values=np.zeros(0), group=np.zeros(0, np.int64), row=np.zeros(0, np.int64),
                            coef=np.zeros(0), basis=None, costs=c) for c in held]
    else:
        last_pass = pricer.price(best_n, bases, solution=final)
    phases["plan_pricing"] = time.perf_counter() - t
    return BendersResult(n=best_n, upper=best_upper, lower=min(bound, best_upper), iterations=it, chunks=G,
                         seconds=elapsed(), status=status, history=history, batches=len(chunks),
                         cut_by=cut_by, phases={k: float(v) for k, v in phases.items()},
                         cuts=cuts_kept(), integer_master=mips, priced=last_pass,
                         keys=pricer.keys(), row_counts=row_counts(pricer), chunk_periods=chunks, workers=pricer.workers, pricer=pricer.name,
                         threads=getattr(pricer, "threads", 1),
                         restarts=getattr(pricer, "restarts", 0), cuts_dropped=dict(dropped),
                         bases_lost=getattr(pricer, "bases_lost", 0) - lost0, seeded_cuts=seeded + pooled[0],
                         cut_log={"inputs": inp, "chunks": list(chunks), "cut_by": cut_by,
                                  "groups": [int(x) for x in pricer.groups],
                                  "entries": list(cut_log), "units": np.asarray(best_n, float).copy()}
                         if keep_log else None)
