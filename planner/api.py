"""The Python API: plans from model files or from DataFrames in memory, as the CLI makes them.

    >>> import planner
    >>> p = planner.plan("models/example.toml")            # doctest: +SKIP
    >>> p                                                    # a one-line summary
    >>> p.purchases, p.allocation, p.cost                    # DataFrames and a dict
    >>> p.to_excel("plan.xlsx"); p.to_json("plan.json")

``inputs_from_frames`` runs the same checks as the files (a bad value raises ``InputError`` naming the
DataFrame, row and column), so a notebook and the CLI can never disagree about what a valid input is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from planner.inputs import io
from planner.inputs import validate
from planner.inputs.config import ModelConfig, load_model, parse_model
from planner.inputs.arrays import PlanInputs, build_inputs
from planner.core.options import PlanOptions
from planner.pipeline.run import load_inputs, make_plan
from planner.results.plan import Plan


def inputs_from_frames(demand: pd.DataFrame, prices: pd.DataFrame, classes: dict, *,
                       inventory: pd.DataFrame | None = None, name: str = "plan", solver: dict | None = None,
                       scenarios: dict | None = None, teams: dict | None = None,
                       failure_rate_per_gpu_hour: float = 0.0) -> PlanInputs:
    """Validated plan inputs from DataFrames: the same checks and the same model as a model file.

    ``demand``, ``prices`` and ``inventory`` have the columns of the files (docs/inputs.md): e.g. demand
    with ``period`` and one column per class (or long: ``period, workload_class, gpus``), prices with
    ``gpu_type, region, option, hourly_usd, ...``. Timestamps may be pandas datetimes or ISO text.
    ``classes`` maps each class to its ``[classes.<name>]`` table as a dict (``{"chat": {"spot": False,
    "headroom": 0.15, "gpu_types": {"H100": 1.0}}}``); ``solver``, ``scenarios`` and ``teams`` are the
    model file's tables of those names. Raises :class:`~planner.core.errors.InputError` (every problem at once).
    """
    raw = {"name": name, "demand": "<demand DataFrame>", "prices": "<prices DataFrame>",
           "classes": _plain(classes), "solver": _plain(dict(solver or {})),
           "failure_rate_per_gpu_hour": _plain(failure_rate_per_gpu_hour)}
    if scenarios:
        raw["scenarios"] = _plain(scenarios)
    if teams:
        raw["teams"] = _plain(teams)
    config = parse_model(raw, None)
    tables = validate.validate(config, io.table_from_frame(demand, "demand"), io.table_from_frame(prices, "prices"),
                               io.table_from_frame(inventory, "inventory") if inventory is not None else None)
    return build_inputs(config, tables)


def _plain(x):
    """numpy scalars and arrays in a classes/solver table as the Python values a TOML file would give."""
    import numpy as np

    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_plain(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    return x


def plan(source: str | Path | ModelConfig | PlanInputs, *, demand: str | Path | None = None,
         prices: str | Path | None = None, backend: str | None = None, time_limit_s: float | None = None,
         mip_gap: float | None = None, risk: bool = True,
         extend: Callable | None = None, write_model: str | Path | None = None,
         shadow_prices: bool | None = None, history: str | Path | None = None) -> Plan:
    """Solve one plan and return it (nothing is written unless you ask: ``plan.to_excel(...)``).

    ``source`` is a model file, a parsed :class:`~planner.inputs.config.ModelConfig` or inputs already built
    (:func:`inputs_from_frames`, :func:`~planner.pipeline.run.load_inputs`). ``demand``/``prices`` replace the
    model file's (like ``--demand``/``--prices``). ``backend`` ("highs" or "cbc"), ``time_limit_s`` and
    ``mip_gap`` override its ``[solver]``. ``extend(model)`` adds your own rows and columns to the
    :class:`~planner.model.PlanModel` before it is solved (see docs/api.md); ``write_model`` writes the
    model (.lp or .mps). ``risk=False`` skips the extra solves of the risk view for scenario inputs.
    ``shadow_prices=True`` adds ``plan.shadow_prices`` (one more LP; default: only with a ``[budget]``).
    As ``planner plan``, a commitment whose term outlives the demand is judged over its whole term
    (``[term]``, :mod:`planner.pipeline.whole_term`; ``history`` overrides the model file's); ``plan.term``
    says how. :func:`~planner.pipeline.run.make_plan` solves the one model given, on its horizon.
    """
    if isinstance(source, PlanInputs):
        if demand is not None or prices is not None:
            raise TypeError("demand= and prices= replace a model file's tables; inputs are already built")
        inp = source
    else:
        config = source if isinstance(source, ModelConfig) else load_model(source)
        inp = load_inputs(config, demand=demand, prices=prices)
    _check_overrides(backend, time_limit_s, mip_gap)
    from planner.pipeline.whole_term import plan_over_term

    result = plan_over_term(inp, make_plan, PlanOptions(backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap,
                                                        risk=risk, extend=extend, write_model=write_model,
                                                        shadow=shadow_prices), history=history)
    if not result.ok:  # as the CLI: no plan, no plan object that looks like one
        from planner.core.errors import SolverError

        raise SolverError(f"the solver found no plan ({result.status.value}"
                          + (f": {result.solve.message}" if result.solve.message else "") + ")"
                          + (" — an extension may make the model infeasible or unbounded" if extend else ""))
    return result


def _check_overrides(backend, time_limit_s, mip_gap) -> None:
    """The CLI's checks on --solver, --time-limit and --mip-gap, for keyword arguments."""
    import math

    from planner.inputs.config import BACKENDS
    from planner.core.errors import ConfigError, Problem

    bad = []
    if backend is not None and str(backend).lower() not in BACKENDS:
        bad.append(Problem("plan()", "unknown backend", value=backend, expected=" or ".join(BACKENDS)))
    if time_limit_s is not None and not (isinstance(time_limit_s, (int, float)) and math.isfinite(time_limit_s)
                                         and time_limit_s > 0):
        bad.append(Problem("plan()", "time_limit_s out of range", value=time_limit_s, expected="seconds > 0"))
    if mip_gap is not None and not (isinstance(mip_gap, (int, float)) and 0 <= mip_gap < 1):
        bad.append(Problem("plan()", "mip_gap out of range", value=mip_gap, expected="0 <= mip_gap < 1"))
    if bad:
        raise ConfigError(bad)


def quota_result(model, plan_file=None, total_gpus=None, percentile=50.0, gamer=None, inflate=1.5, solver=None):
    """The QuotaResult for ``model``: on a fixed fleet ``total_gpus`` (N, or per GPU type and region:
    :mod:`planner.quotas.totals`), on a plan.json's purchases, or on a fresh plan."""
    from planner.core.errors import ConfigError, Problem
    from planner.quotas.build import from_plan, from_total
    from planner.quotas.run import analyse

    inp = load_inputs(model)
    if plan_file is not None and total_gpus is not None:
        raise ConfigError(Problem("command line", "give --plan or --total-gpus, not both"))
    if gamer is not None and gamer not in inp.config.teams:
        raise ConfigError(Problem("command line", "--gamer is not a team of the model", value=gamer,
                                  expected="one of " + ", ".join(inp.config.teams)))
    if total_gpus is not None:
        data = from_total(inp, total_gpus)
    else:
        fixed = None
        if plan_file is not None:
            from planner.whatif.evaluate import read_plan_purchases

            fixed = read_plan_purchases(plan_file, inp)
        if fixed is None:  # a fresh plan: the fleet `planner plan` buys (every term judged whole)
            from planner.pipeline.whole_term import plan_over_term

            plan = plan_over_term(inp, make_plan, backend=solver, risk=False)
        else:
            plan = make_plan(inp, backend=solver, fixed_reserved=fixed, risk=False)
        if not plan.status.has_plan:
            raise ConfigError(Problem(str(plan_file or model), "no plan to take the fleet from",
                                      value=plan.status.value, hint="use --total-gpus N (or TYPE=N,... per GPU type)"))
        data = from_plan(plan)
    if not len(data.flavors):
        raise ConfigError(Problem(str(model), "the fleet has no GPUs to share",
                                  hint="use --total-gpus N (or TYPE=N,... per GPU type)"))
    guaranteed = int(data.flavors.loc[~data.flavors["preemptible"].astype(bool), "capacity_gpus"].sum())
    if data.floors.sum() > guaranteed:
        raise ConfigError(Problem(str(model), "the teams' guaranteed_gpus add up to more than the fleet",
                                  value=f"{data.floors.sum():g} GPUs guaranteed",
                                  expected=f"at most {guaranteed:,} (the GPUs that are not preemptible)",
                                  hint="lower [teams.<name>] guaranteed_gpus or share more GPUs"))
    result = analyse(data, percentile=percentile, gamer=gamer, inflate=inflate)
    result.model = str(model)
    return result
