"""The recipe: model file -> validated inputs -> model -> solve -> plan -> outputs.

Each step is a call into its own module; nothing here models or formats.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from . import io, validate
from .config import ModelConfig, load_model
from .inputs import PlanInputs, build_inputs
from .model import build_model
from .results import Plan, extract_plan, register_writers
from .risk import risk_view
from .solve import solve


def _register_writers() -> None:
    """The report functions a Plan's methods call: registered here, so results never imports report."""
    from .report import plan_json, summary_text, write_workbook

    register_writers(summary=summary_text, json=plan_json, workbook=write_workbook)


_register_writers()


def load_inputs(model: str | Path | ModelConfig, *, demand: str | Path | None = None,
                prices: str | Path | None = None) -> PlanInputs:
    """Read and validate everything a plan needs; raises InputError listing every problem."""
    config = model if isinstance(model, ModelConfig) else load_model(model)
    if demand is not None or prices is not None:
        config = config.with_overrides(demand=Path(demand) if demand else None,
                                       prices=Path(prices) if prices else None)
    tables = validate.validate(
        config,
        io.read_table(config.demand, "demand"),
        io.read_table(config.prices, "price sheet"),
        io.read_table(config.inventory, "inventory") if config.inventory else None,
        io.read_table(config.availability, "availability") if config.availability else None,
    )
    return build_inputs(config, tables)


def make_plan(inp: PlanInputs, *, backend: str | None = None, time_limit_s: float | None = None,
              mip_gap: float | None = None, timings: dict | None = None,
              fixed_reserved=None, risk: bool = True, extend=None, write_model: str | Path | None = None,
              shadow: bool | None = None, progress: bool = False, executor=None, warm: dict | None = None) -> Plan:
    """Build, solve and extract one plan.

    ``backend``, ``time_limit_s`` and ``mip_gap`` override the model file's ``[solver]`` settings;
    ``fixed_reserved`` (instances per row of ``inp.reserved``) fixes the purchases. ``extend(model)`` is
    called on the built :class:`~planner.model.PlanModel` before solving: add rows and columns there (both
    backends solve them); with it, the exact reductions (merged periods, dominated options) are off, so
    every (class, pool, period) column exists for your rows. ``write_model`` writes the model solved
    (``.lp`` or ``.mps``). ``risk`` (scenario inputs only) also solves the 2 + S extra MILPs of the
    risk view (EVPI, VSS, worst case); pass ``risk=False`` to skip them. ``shadow`` (default: when the
    model file sets a ``[budget]``) adds the shadow prices (:mod:`planner.duals`, one more LP solve).
    ``progress`` draws a bar of the Benders iterations (bound, incumbent, gap) on stderr when it is a terminal.
    ``executor`` (:mod:`planner.executors`): where the decomposition prices its batches (worker processes or
    a Dask cluster; default here). Long horizons with the purchases fixed are priced batch by batch too,
    warm from ``warm`` (a decomposed plan's ``recourse``: its batches' last bases) when given.
    """
    s = inp.config.solver
    timings = dict(timings or {})
    b = inp.config.budget
    if shadow is None:
        shadow = b.max_total_usd is not None or b.monthly
    if fixed_reserved is None and extend is None and _use_benders(inp, backend or s.backend):
        plan = _benders_plan(inp, backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap, timings=timings,
                             risk=risk, write_model=write_model, progress=progress, executor=executor)
        plan = _with_exit_value(plan, inp, backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap)
        return _with_shadow(plan, shadow)
    if fixed_reserved is not None and extend is None and _use_benders(inp, backend or s.backend):
        return _with_shadow(_fixed_plan(inp, np.asarray(fixed_reserved, float), timings, risk, write_model,
                                        executor, time_limit_s, mip_gap, warm), shadow)
    reduce = None if extend is None else False
    model = build_model(inp, fixed_reserved=fixed_reserved, merge_periods=reduce,
                        dominance=extend is None)
    if extend is not None:
        extend(model)
    timings["build"] = model.seconds
    note = None if fixed_reserved is not None else _monolithic_note(inp, backend or s.backend, extend is None)
    if write_model is not None:
        model.write(write_model)
    result = solve(model, backend or s.backend, time_limit_s if time_limit_s is not None else s.time_limit_s,
                   s.mip_gap if mip_gap is None else mip_gap, s.threads)
    timings["solve"] = result.seconds
    t0 = time.perf_counter()
    plan = extract_plan(inp, model, result, timings)
    plan.timings["extract"] = time.perf_counter() - t0
    if result.row_duals is not None and extend is None:  # the LP that made the plan left its duals
        from .duals import family_sums

        plan.dual_sums = family_sums(model, inp, result.row_duals)
    if note:
        plan.notes.append(note)
    if risk and len(inp.scenarios) > 1 and plan.status.has_plan:
        t0 = time.perf_counter()
        sub = lambda i, fixed_reserved=None: make_plan(  # noqa: E731
            i, backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap, fixed_reserved=fixed_reserved,
            risk=False, extend=extend, shadow=False)
        plan.risk = risk_view(plan, sub)
        plan.timings["risk"] = time.perf_counter() - t0
    if fixed_reserved is None and extend is None:
        plan = _with_exit_value(plan, inp, backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap)
    return _with_shadow(plan, shadow and extend is None)


def with_memo(plan: Plan, *, executor=None, backend: str | None = None, time_limit_s: float | None = None,
              mip_gap: float | None = None) -> Plan:
    """The plan with its purchase memo (:mod:`planner.memo`: each tranche's own utilisation, the downside
    with demand 20 % and 30 % lower, the commitment curve, the next-best plan, cash by year): a few LPs
    with the purchases fixed, mapped over ``executor`` (local processes by default)."""
    if not plan.status.has_plan:
        return plan
    from .memo import build_memo

    from .errors import PlannerError

    t0 = time.perf_counter()
    try:
        plan.memo = build_memo(plan, executor=executor, backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap)
    except PlannerError as exc:  # the plan stands without its memo's re-solves: say why, never lose the plan
        plan.notes.append(f"the purchase memo's re-solves were not computed ({exc}); the plan itself is unaffected")
    plan.timings["memo"] = time.perf_counter() - t0
    return plan


def _with_exit_value(plan: Plan, inp: PlanInputs, **solve) -> Plan:
    """Where terms may be resold: what that option is worth, the plan's objective without it less with it
    (``commitments["exit_value_usd"]``, one more solve)."""
    from .commitments import has_exits, without_exits

    if not has_exits(inp) or not plan.status.has_plan:
        return plan
    t0 = time.perf_counter()
    bare = make_plan(without_exits(inp), risk=False, shadow=False, **solve)
    if bare.status.has_plan:
        plan.commitments["exit_value_usd"] = float(bare.objective - plan.objective)
        plan.commitments["cost_without_exits_usd"] = float(bare.cost["total"])
    plan.timings["exit_value"] = time.perf_counter() - t0
    return plan


def _with_shadow(plan: Plan, shadow: bool) -> Plan:
    """The plan with its shadow prices (purchases fixed, LP duals) when asked and there is a plan."""
    if shadow and plan.status.has_plan:
        from .duals import shadow_prices

        t0 = time.perf_counter()
        plan.shadow_prices = shadow_prices(plan)
        plan.timings["shadow_prices"] = time.perf_counter() - t0
    return plan


BENDERS_AUTO_CELLS = 15_000  # periods x classes x scenarios above which "auto" decomposes (measured end to end on an
# idle machine: M, 17,472 cells, 9.2 s against 12.0 s monolithic; L, 43,680, 2x faster; benchmarks/README.md)


def _use_benders(inp: PlanInputs, backend: str) -> bool:
    """Benders when asked, or with "auto" above ``BENDERS_AUTO_CELLS`` (HiGHS, no backfill, no budget).

    The per-period multi-cut decomposition is faster than the monolithic model on long horizons with one
    purchase date or several; below the threshold the monolithic model (HiGHS's own branch and bound) is.
    """
    from .decompose import applicable

    method = inp.config.solver.method
    if method == "monolithic" or not applicable(inp):
        return False  # a linking family (a budget, backfill, discount-only commitments) ties the periods
    if method == "benders":
        return backend == "highs"  # the decomposition keeps its chunk LPs in HiGHS; --solver cbc solves monolithic
    return backend == "highs" and inp.T * inp.K * len(inp.scenarios) > BENDERS_AUTO_CELLS


def _monolithic_note(inp: PlanInputs, backend: str, free: bool) -> str | None:
    """Why a model file that asks for ``method = "benders"`` is solved as one model (None otherwise);
    ``free`` is False when an extension is added (the decomposition cannot see its rows)."""
    from .model.stages import linking

    if inp.config.solver.method != "benders":
        return None
    links = dict(linking(inp))  # the linking families present, and why each stops the decomposition
    if not free:
        why = "the model is extended (extend=), and the decomposition cannot see the added rows"
    elif backend != "highs":
        why = f"--solver {backend}: the decomposition runs on HiGHS only"
    elif "budget" in links:
        why = links["budget"]
    elif not len(inp.reserved):
        why = ("there is nothing to buy ahead (no reserved, capacity-block or savings-plan rows in the price sheet): "
               "the model is one LP, solved whole")
    elif links:
        why = "the decomposition does not apply to this model: " + next(iter(links.values()))
    else:
        return None
    return f'method = "benders" was asked, but the model was solved whole (monolithic): {why}'


def _benders_plan(inp: PlanInputs, *, backend, time_limit_s, mip_gap, timings, risk, write_model,
                  progress: bool = False, executor=None) -> Plan:
    """Purchases by Benders decomposition (proven gap); the plan read from the batches' last pricing."""
    from .decompose import solve_benders
    from .progress import BendersProgress

    s = inp.config.solver
    gap = s.mip_gap if mip_gap is None else mip_gap
    limit = s.time_limit_s if time_limit_s is None else time_limit_s
    t0 = time.perf_counter()
    bar = BendersProgress(enabled=progress)
    try:
        bd = solve_benders(inp, chunk="week", mip_gap=gap, time_limit_s=limit, threads=s.threads, progress=bar,
                           executor=executor)
    finally:
        bar.close()
    timings["benders"] = time.perf_counter() - t0
    plan = _plan_from_batches(inp, bd, gap, limit, timings, write_model)
    plan.stats["benders"] = {"chunks": bd.chunks, "thetas": bd.chunks, "cut_by": bd.cut_by, "batches": bd.batches,
                             "integer_master_solves": bd.integer_master, "cuts": bd.cuts,
                             "workers": bd.workers, "pricer": bd.pricer, "worker_restarts": bd.restarts,
                             "phases_s": {k: v for k, v in bd.phases.items() if k != "rounding_gap"},
                             "iterations": bd.iterations, "lower_usd": _finite(bd.lower),
                             "upper_usd": _finite(bd.upper), "gap": _finite(bd.gap),
                             "log": [{"iteration": i, "bound_usd": _finite(lo), "incumbent_usd": _finite(up),
                                      "seconds": round(sec, 3)} for i, lo, up, sec in bd.history]}
    if risk and len(inp.scenarios) > 1 and plan.status.has_plan:
        t1 = time.perf_counter()
        sub = _sub_executor(executor)
        plan.risk = risk_view(plan, lambda i, fixed_reserved=None: make_plan(
            i, backend="highs", time_limit_s=time_limit_s, mip_gap=mip_gap, fixed_reserved=fixed_reserved, risk=False,
            shadow=False, executor=sub))
        plan.timings["risk"] = time.perf_counter() - t1
    return plan


def _sub_executor(executor):
    """Where the risk view's sub-plans price their batches: the same Dask cluster (its workers stay up), but in
    this process rather than a new pool of local processes for every sub-plan (their start-up cost more)."""
    from .executors import DaskExecutor

    return executor if isinstance(executor, DaskExecutor) else None


def _fixed_plan(inp: PlanInputs, n: np.ndarray, timings: dict, risk: bool, write_model, executor,
                time_limit_s, mip_gap, warm: dict | None = None) -> Plan:
    """The plan of the purchases ``n`` on a long horizon: every batch priced once at ``n`` (here, on worker
    processes or on Dask) and read into the whole model's columns; the same LP as the whole model's, solved
    apart (the recourse separates by period)."""
    from .decompose import chunk_index, cut_groups
    from .recourse_workers import make_pricer

    t0 = time.perf_counter()
    chunks = chunk_index(inp, "week")
    cut_by = cut_groups(inp)
    pricer = make_pricer(inp, chunks, cut_by, executor)
    try:
        priced = pricer.price(n, warm_bases(warm, chunks, pricer), solution=True)
    finally:
        pricer.close()
    plan = plan_from_priced(inp, n, priced, pricer, chunks, cut_by, time.perf_counter() - t0, timings, write_model,
                            time_limit_s)
    if risk and len(inp.scenarios) > 1 and plan.status.has_plan:
        sub = _sub_executor(executor)
        plan.risk = risk_view(plan, lambda i, fixed_reserved=None: make_plan(
            i, backend="highs", time_limit_s=time_limit_s, mip_gap=mip_gap, fixed_reserved=fixed_reserved, risk=False,
            shadow=False, executor=sub))
    return plan


def plan_from_priced(inp: PlanInputs, n: np.ndarray, priced: list, pricer, chunks: list, cut_by: str,
                     seconds: float, timings: dict | None = None, write_model=None, time_limit_s=None,
                     allocation: bool = True) -> Plan:
    """The plan of the purchases ``n`` from every batch's pricing at them (``pricer``'s batches of ``chunks``);
    ``allocation=False``: without the per-class allocation table (:func:`planner.results.extract_plan`)."""
    from types import SimpleNamespace

    from .decompose import _row_counts

    upper = float(sum(r.values.sum() for r in priced))
    bd = SimpleNamespace(n=n, fixed=True, status="optimal", gap=0.0, lower=upper, seconds=seconds,
                         chunks=sum(pricer.groups),
                         cut_by=cut_by, iterations=1, workers=pricer.workers, pricer=pricer.name,
                         chunk_periods=chunks, keys=pricer.keys(), priced=priced, row_counts=_row_counts(pricer))
    plan = _plan_from_batches(inp, bd, 0.0, time_limit_s, dict(timings or {}), write_model, allocation)
    plan.solve = replace(plan.solve, message=f"purchases fixed; the recourse priced in {len(chunks)} weekly batches "
                                             f"({pricer.workers} worker(s), {pricer.name})")
    return plan


def warm_bases(warm: dict | None, chunks: list, pricer) -> list:
    """Per batch, the basis in ``warm`` (a plan's ``recourse``) when it was made for the same batches, else None
    (a cold start): a basis of another batching would not fit its LP."""
    if not warm or len(warm.get("chunks", [])) != len(chunks) or \
            any(not np.array_equal(a, b) for a, b in zip(warm["chunks"], chunks)):
        return [None] * len(chunks)
    sizes = getattr(pricer, "sizes", None)
    bases = list(warm["bases"])
    if sizes is not None:  # a batch whose LP differs in size (the demand pattern changed) starts cold
        bases = [b if b is not None and (len(b[0]), len(b[1])) == tuple(sz) else None for b, sz in zip(bases, sizes)]
    return bases


def _finite(x):
    """``x``, or None where it is not a finite number (a bound not yet known: JSON has no infinity)."""
    return float(x) if x is not None and np.isfinite(x) else None


def _plan_from_batches(inp: PlanInputs, bd, gap: float, limit, timings: dict, write_model=None,
                       allocation: bool = True) -> Plan:
    """The plan of the purchases ``bd.n`` from every batch's pricing at them (:mod:`planner.recourse`): the
    whole model is built with the purchases fixed (its columns, for the plan's tables), never solved."""
    from .duals import sums_from_codes  # noqa: F401  (the sums are added per batch below)
    from .recourse import assemble
    from .solve import SolveResult, Status

    t0 = time.perf_counter()
    if write_model is not None:  # the MILP the decomposition solved (purchases free), or the LP of fixed ones
        build_model(inp, fixed_reserved=bd.n if getattr(bd, "fixed", False) else None).write(write_model)
    model = build_model(inp, fixed_reserved=bd.n, rows=False)  # its columns: the plan's tables are read from them
    model.rows = dict(bd.row_counts or {})  # the rows the batches solved, for the plan's statistics
    values = assemble(inp, model, bd.chunk_periods, [(k, b, r.solution) for (k, b), r in zip(bd.keys, bd.priced)],
                      bd.n)
    status = Status.optimal if bd.status == "optimal" else Status.feasible
    what = "proven" if status is Status.optimal else "not proven (time limit)"
    bound = _finite(bd.lower)
    result = SolveResult(status=status, values=values, objective=float(model.cost @ values), mip_gap=_finite(bd.gap),
                         best_bound=bound, seconds=bd.seconds, backend="highs", time_limit_s=limit,
                         mip_gap_limit=gap,
                         message=f"Benders decomposition, {bd.chunks} cuts per iteration (one per {bd.cut_by}), "
                                 f"{bd.iterations} iterations, {bd.workers} pricing worker(s) ({bd.pricer}): every "
                                 f"purchase plan priced on the full hourly model, "
                                 + (f"bound {bound:,.2f} USD, gap {what}" if bound is not None else
                                    "no bound yet (the time limit came before the first master solve): not proven"))
    timings["build"] = model.seconds
    timings["solve"] = bd.seconds
    plan = extract_plan(inp, model, result, timings, allocation=allocation)
    plan.timings["extract"] = time.perf_counter() - t0
    plan.dual_sums = _summed_duals(bd.priced)
    from .recourse import portable_basis

    plan.recourse = {"chunks": bd.chunk_periods, "cut_by": bd.cut_by, "units": np.asarray(bd.n, float),
                     "bases": [portable_basis(r.basis) for r in bd.priced]}
    return plan


def _summed_duals(priced: list) -> dict:
    """The shadow-price sums over every batch (sums over disjoint periods add up)."""
    out: dict = {"budget": {}}
    for r in priced:
        for name, arr in (r.dual_sums or {}).items():
            out[name] = out[name] + arr if name in out else arr.copy()
    return out


OUTPUTS = ("plan.xlsx", "plan.json", "allocation.csv", "fleet.csv")  # what ``planner plan`` writes


def write_outputs(plan: Plan, out_dir: str | Path) -> dict[str, Path]:
    """Write plan.json, plan.xlsx and the per-period tables (allocation.csv, fleet.csv) as one publication:
    all from this run, or the old ones stay.

    plan.json and the workbook carry the same ``run_id`` (plan.json key, workbook Assumptions note). The
    CSVs hold every period (the workbook sums long horizons to days, weeks or months).
    """
    import uuid

    from .atomic import publish_together
    from .report import plan_json, write_workbook

    from .results import _now_utc

    plan.run_id = uuid.uuid4().hex
    plan.created_utc = _now_utc()
    t0 = time.perf_counter()

    def xlsx(path):
        write_workbook(plan, path)
        plan.timings["write_xlsx"] = time.perf_counter() - t0

    found = publish_together(out_dir, {"plan.xlsx": xlsx,
                                       "plan.json": lambda path: path.write_text(plan_json(plan), encoding="utf-8"),
                                       "allocation.csv": lambda path: period_csv(plan.allocation, path),
                                       "fleet.csv": lambda path: period_csv(plan.fleet, path)})
    return {"xlsx": found["plan.xlsx"], "json": found["plan.json"], "allocation": found["allocation.csv"],
            "fleet": found["fleet.csv"]}


def period_csv(frame, path: Path) -> None:
    """A per-period table as CSV: ISO periods, text made inert for spreadsheets (:mod:`planner.csvsafe`)."""
    from .csvsafe import inert_frame

    out = frame.copy()
    out["period"] = out["period"].dt.strftime("%Y-%m-%dT%H:%M")
    inert_frame(out).to_csv(path, index=False, float_format="%.10g")


def run(model: str | Path, out_dir: str | Path | None = None, **options) -> Plan:
    """Plan ``model`` end to end and write its outputs; returns the Plan."""
    t0 = time.perf_counter()
    inp = load_inputs(model, demand=options.pop("demand", None), prices=options.pop("prices", None))
    memo = options.pop("memo", True)
    plan = make_plan(inp, timings={"read_validate": time.perf_counter() - t0}, **options)
    if memo:
        plan = with_memo(plan, backend=options.get("backend"), time_limit_s=options.get("time_limit_s"),
                         mip_gap=options.get("mip_gap"))
    write_outputs(plan, out_dir or default_out_dir(inp.config))
    return plan


def default_out_dir(config: ModelConfig, suffix: str = "") -> Path:
    """outputs/<model name><suffix>, the name made safe for a folder (suffix e.g. "-sweep")."""
    import re

    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", config.name).strip("-.") or "plan"  # never "." or ".."
    return Path("outputs") / (slug + suffix)
