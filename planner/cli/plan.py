"""``planner plan``, ``validate``, ``evaluate`` and ``backtest``: one plan, its check, its test against what came."""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

import click

from planner.cli.group import cli
from planner.cli.common import (default_model, demand_option, echo_json, executor_from, EXIT_ERROR, EXIT_NOT_MET,
                     exit_not_proven, Finite, handle_errors, json_option, model_argument, not_proven_reasons,
                     out_option, prices_option, quiet_option, scale_options, solve_options, solver_option,
                     time_limit_option)
from planner.core.errors import InputError
from planner.core.options import PlanOptions

# planner.backtest.run.STRATEGIES, spelled here so that `planner --help` imports no pandas (a test keeps them equal)
STRATEGY_NAMES = ("stochastic", "point", "percentile_fleet", "recommender", "spot_aware", "coverage_ladder",
                  "all_on_demand", "tree", "default")


def _default_pricing(inp):
    """Where ``planner plan`` prices a decomposition's batches when not told: local processes on every core
    above ``BATCH_PROCESS_CELLS`` periods x classes x scenarios, else here on every core's threads (the processes'
    start-up and the inputs sent to them cost more than they save on smaller horizons: M is faster in one process,
    L on two; threads start at once and share the batches: :class:`planner.solve.workers.LocalPricer`)."""
    from planner.core.executors import LocalExecutor
    from planner.memo.resolve import BATCH_PROCESS_CELLS

    return LocalExecutor() if inp.T * inp.K * len(inp.scenarios) > BATCH_PROCESS_CELLS else None


@cli.command()
@model_argument
@out_option("plan.xlsx and plan.json")
@solve_options
@prices_option
@demand_option
@click.option("--write-lp", "write_lp", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write the model solved, as CPLEX LP (.lp) or MPS (.mps): the whole-term model where "
                   "the purchases are judged over their terms ([term] judge = \"term\", the default).")
@click.option("--memo/--no-memo", default=True, show_default=True,
              help="Also compute the purchase memo: each tranche's own utilisation, the cost with demand 20 % and "
                   "30 % lower, the commitment curve and the next-best plan (a few LPs, purchases fixed).")
@click.option("--history", "history", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="A demand history (long form: period, workload_class, gpus) to forecast the rest of each "
                   "term from; overrides the model file's history. Without either, demand past the horizon is "
                   "held flat under [term] drift_per_year.")
@scale_options
@quiet_option
@handle_errors
def plan(model, out_dir, solver, time_limit, mip_gap, prices, demand, write_lp, memo, history, jobs, executor,
         scheduler, quiet):
    """Solve MODEL (a .toml model file) and write plan.xlsx and plan.json.

    MODEL defaults to the bundled example, models/example.toml.

    Exit codes: 0 demand met at a proven optimum; 2 bad input (nothing written);
    3 plan written but demand not met or optimality not proven; 1 solver or
    internal error.

    Example:

    \b
        planner plan models/example.toml --out outputs/q1 --time-limit 120 --write-lp outputs/q1/model.lp
        planner plan models/ladder.toml --jobs 2               # a long horizon's pricing on 2 processes
        planner plan big.toml --scheduler tcp://10.0.0.5:8786  # ... on a Dask cluster

    A long horizon is decomposed (Benders): its weekly recourse LPs are priced on --jobs local processes
    (default: every core above 30,000 periods x classes x scenarios, else in this process on every core's
    threads; --jobs 1: in this process on one) or on Dask (--executor dask, --scheduler); the answer is the same
    on any.
    """
    from planner.core.executors import sigterm_raises
    from planner.pipeline.run import OUTPUTS, default_out_dir, load_inputs, make_plan, with_memo, write_outputs
    from planner.pipeline.whole_term import plan_over_term
    from planner.solve.workers import keep_pricers
    from planner.cli.common import check_outputs, config_inputs, refuse_overwriting_inputs, refuse_overwrite_in
    from planner.solve.monolithic import Status

    t0 = time.perf_counter()
    inp = load_inputs(model or default_model(), demand=demand, prices=prices)
    target = out_dir or default_out_dir(inp.config)
    check_outputs(target, OUTPUTS)  # before the solve: a folder where a file goes is bad input (exit 2)
    refuse_overwrite_in(target, OUTPUTS, config_inputs(inp.config))
    if history is not None:  # --history: an input too (its file is read, never written)
        refuse_overwrite_in(target, OUTPUTS, {"--history": history})
    if write_lp:
        refuse_overwriting_inputs({"--write-lp": write_lp}, config_inputs(inp.config) | (
            {"--history": history} if history is not None else {}))
    pool = executor_from(executor, scheduler, jobs) if (executor == "dask" or scheduler or jobs) else None
    # SIGTERM raises (Terminated, handled as Ctrl-C) from here to the last output written: the finally below
    # closes the workers or the Dask cluster, and an output half written is removed (no temporary file left)
    with sigterm_raises():
        try:
            # the horizon's batches are built once for the plan, its comparison and the memo's re-solves
            # (keep_pricers)
            with keep_pricers(inp):
                options = PlanOptions(backend=solver, time_limit_s=time_limit, mip_gap=mip_gap, write_model=write_lp,
                                      timings={"read_validate": time.perf_counter() - t0}, shadow=True,
                                      progress=not quiet, executor=pool or _default_pricing(inp))
                result = plan_over_term(inp, make_plan, options, history=history)
                if not result.status.has_plan:
                    hint = (" The model is infeasible." if result.status is Status.infeasible else
                            f" Hint: no plan was found within the time limit ({inp.config.solver.time_limit_s if time_limit is None else time_limit} s); raise --time-limit.")
                    click.secho(f"Error: the solver found no plan ({result.status.value}"
                                f"{': ' + result.solve.message if result.solve.message else ''}); nothing was written.{hint}",
                                fg="red", err=True)
                    sys.exit(EXIT_ERROR)
                if memo:  # the memo's re-solves where the plan's were asked to run (default: by the model's size)
                    result = with_memo(result, executor=pool, **options.solve_settings())
        finally:
            if pool is not None:
                pool.close()
        paths = write_outputs(result, target)
    if not quiet:
        click.echo(result.summary())
        click.echo(f"  wrote {paths['xlsx']} and {paths['json']} (every period: allocation.csv, fleet.csv)"
                   + (f" and {write_lp}" if write_lp else ""))
    exit_not_proven(not_proven_reasons([("", result)]))


def _objective_basis(inp) -> str:
    """What the plans' objective (the regret's basis) is: cost, or its NPV, with unmet demand at the penalty."""
    f = inp.config.finance
    what = f"the NPV at {100 * f.discount_rate:g} %" if f.npv else "cost"
    return f"{what} + unmet GPU-hours at the shortfall penalty"


@cli.command()
@model_argument
@prices_option
@demand_option
@handle_errors
def validate(model, prices, demand):
    """Check MODEL and its input files without solving.

    Exit code 0 when every input is valid, 2 with every problem listed otherwise.

    Example:

    \b
        planner validate models/example.toml
    """
    from planner.pipeline.run import load_inputs

    inp = load_inputs(model or default_model(), demand=demand, prices=prices)
    if inp.config.history is not None:  # the history whole terms are forecast from: checked like the demand
        from planner.forecasting.history import read_history

        read_history(inp.config.history, inp.classes)
    click.echo(f"OK: '{inp.config.name}': {inp.T} periods ({inp.horizon_hours:g} h) x {inp.K} classes x "
               f"{inp.P} pools, {len(inp.commitments)} reserved options, {len(inp.scenarios)} scenario(s)"
               + (f", history {inp.config.history.name}" if inp.config.history is not None else "") + ".")



def _forecast_of(model, prices, plan_file):
    """The model's own forecast (its demand file), when the plan branches over a scenario tree; else None."""
    try:
        tree = json.loads(Path(plan_file).read_text(encoding="utf-8")).get("tree")
    except (OSError, ValueError, AttributeError):
        return None  # read_plan_purchases reports the file
    if not tree:
        return None
    from planner.pipeline.run import load_inputs

    return load_inputs(model, prices=prices)


@cli.command()
@model_argument
@click.option("--plan", "plan_file", required=True, type=click.Path(path_type=Path),
              help="plan.json whose reserved purchases are evaluated.")
@click.option("--demand", required=True, type=click.Path(path_type=Path), help="The demand that really came.")
@prices_option
@solver_option
@time_limit_option
@out_option("evaluation.xlsx and evaluation.json", "-evaluate")
@json_option
@click.option("--scenario", default=None, metavar="NAME",
              help="A plan over a scenario tree: evaluate the purchases of this scenario's branch (default: at "
                   "each date the branch whose forecast is nearest the demand that came before it). With price "
                   "paths, this scenario's prices are the ones that came (default: the sheet's own rows).")
@handle_errors
def evaluate(model, plan_file, demand, prices, solver, time_limit, out_dir, as_json, scenario):
    """Fix a plan's reserved purchases and price the cheapest recourse for the actual demand.

    Reports the realised cost, shortfall, reserved utilisation and the regret
    against the plan made with hindsight on the same demand.

    Example:

    \b
        planner evaluate models/example.toml --plan outputs/example-q1-2027/plan.json \\
            --demand data/actual_q1.csv --json
    """
    from planner.whatif.evaluate import evaluate as run_evaluation, read_plan_purchases, write_evaluation
    from planner.pipeline.run import default_out_dir, load_inputs, make_plan

    from dataclasses import replace

    from planner.inputs.config import load_model

    # the demand that came is one history: the model's [scenarios] (its forecast's) do not apply to it
    inp = load_inputs(replace(load_model(model or default_model()), scenarios={}), demand=demand, prices=prices)
    if scenario is not None and inp.price_paths is not None:  # the prices that came: that scenario's price path
        from planner.core.errors import InputError, Problem
        from planner.inputs.arrays import retree

        if scenario not in inp.config.price_scenarios:
            raise InputError(Problem("--scenario", "not a scenario of the model", value=scenario,
                                     expected="one of " + ", ".join(inp.config.price_scenarios)))

        inp = retree(replace(inp, price_names=(scenario,) * len(inp.scenarios)))
    from planner.cli.common import config_inputs, refuse_overwrite_in

    refuse_overwrite_in(out_dir or default_out_dir(inp.config, "-evaluate"), ("evaluation.json", "evaluation.xlsx"),
                        {**config_inputs(inp.config), "--plan": plan_file})
    forecast = _forecast_of(model or default_model(), prices, plan_file)
    followed: list = []
    purchases = read_plan_purchases(plan_file, inp, forecast, scenario, followed_out=followed)
    from planner.core.executors import sigterm_raises

    with sigterm_raises():  # SIGTERM as Ctrl-C: the solves stop, a half-written output is removed
        ev = run_evaluation(inp, purchases, functools.partial(make_plan, backend=solver, time_limit_s=time_limit),
                            plan_file=str(plan_file))
        ev.branches = followed
        if not ev.realised.status.has_plan:
            click.secho(f"Error: the plan's purchases cannot be run on these inputs (status "
                        f"{ev.realised.status.value}: {ev.realised.solve.message}). A reserved cap (max_gpus) below "
                        f"the purchases, or purchases of an option the price sheet no longer has, make it infeasible; "
                        f"no cost is reported and nothing was written.", fg="red", err=True)
            sys.exit(EXIT_NOT_MET)
        data = ev.to_dict()
        paths = write_evaluation(ev, out_dir or default_out_dir(inp.config, "-evaluate"))
    if as_json:
        click.echo(json.dumps(data, indent=2, default=float))
    else:
        c = data["cost_usd"]
        click.echo(f"Realised cost ${c['total']:,.0f} (reserved ${c['reserved']:,.0f}, on-demand "
                   f"${c['on_demand']:,.0f}, spot ${c['spot']:,.0f}); shortfall {data['shortfall_gpu_hours']:,.1f} "
                   f"GPU-hours; reserved utilisation "
                   + (f"{100 * data['reserved_utilisation']:.1f} %" if data["reserved_utilisation"] is not None
                      else "n/a (no reserved GPUs)") + "; regret "
                   f"${data['regret_usd']:,.0f} against hindsight, on the objective ({_objective_basis(inp)}: "
                   f"${data['objective_usd']:,.0f} realised, ${data['hindsight']['objective_usd']:,.0f} in hindsight)")
        turns = [(d, b) for i, (d, b) in enumerate(followed) if b != "all" and (i == 0 or followed[i - 1][1] != b)]
        if turns:
            click.echo("  the plan's scenario tree, followed: " + "; ".join(f"from {d} {b}" for d, b in turns))
        click.echo(f"  wrote {paths['xlsx']} and {paths['json']}")


@cli.command()
@model_argument
@click.option("--demand", "history", type=click.Path(path_type=Path), default=None,
              help="Demand history to backtest on (default: the model file's demand).")
@click.option("--train-hours", type=Finite(min=1), default=672, show_default=True,
              help="History before the first cut-off.")
@click.option("--test-hours", type=Finite(min=1), default=672, show_default=True,
              help="Length of each evaluation window.")
@click.option("--step-hours", type=Finite(min=1), default=None, help="Between cut-offs (default: test).")
@click.option("--horizon-hours", type=Finite(min=1), default=None,
              help="What the planner's forecast covers at each cut-off (default: train).")
@click.option("--forecaster", default="weekly", show_default=True,
              help="latest | weekly | trend | weekly_trend | module:function | file.py:function (docs/scenarios.md).")
@click.option("--lookback-hours", type=Finite(min=1), default=None,
              help="Usage the recommender looks back on (default: 720, or all the history before the cut-off).")
@click.option("--strategies", default=",".join(s for s in STRATEGY_NAMES if s not in ("tree", "default")), show_default=True,
              help="Comma-separated strategies to run (also: tree, a scenario tree over the term with later "
                   "purchases allowed: a MILP per cut-off, slow on long horizons; default, what `planner plan` "
                   "buys at each cut-off: the point forecast with every term judged over its whole term).")
@click.option("--decide-hours", type=Finite(min=1), default=None,
              help="Cut-offs buy only in the first HOURS after the history; later windows judge what was bought "
                   "(leave the longest term after them and every term lies inside the span).")
@click.option("--ladder-share", type=Finite(0, 1, min_open=True), default=0.8, show_default=True,
              help="coverage_ladder: the share of the trailing minimum committed, in four quarterly tranches.")
@click.option("--penalty-multipliers", default="2,10,50", show_default=True,
              help="Re-rank the strategies with the shortfall at these multiples of the dearest on-demand price.")
@click.option("--seed", type=int, default=0, show_default=True, help="The bootstrap's seed (90 % intervals).")
@solver_option
@out_option("backtest.csv, backtest_monthly.csv and backtest.json", "-backtest")
@json_option
@scale_options
@quiet_option
@handle_errors
def backtest(model, history, train_hours, test_hours, step_hours, horizon_hours, forecaster, lookback_hours,
             strategies, decide_hours, ladder_share, penalty_multipliers, seed, solver, out_dir, as_json, jobs,
             executor, scheduler, quiet):
    """Roll cut-offs over a demand history; each strategy's purchases are carried as dated inventory.

    At every cut-off each strategy sees only the demand before it and decides what
    to buy; all purchases are then fixed on the demand that came and compared with
    the hindsight optimum of the whole period (same purchase dates). Strategies:
    stochastic (forecast-error or, over a term, level scenarios), point,
    percentile_fleet, recommender, spot_aware (the break-even rule on non-spot
    demand), coverage_ladder (a share of the trailing minimum, quarterly),
    all_on_demand; tree (opt-in: a scenario tree over the term, later purchases
    allowed, today's made). Strategies run in parallel (--jobs, --executor dask).

    The three output files are written together at the end, or not at all. A
    forecaster of your own runs contained: what it prints goes to stderr, and
    an exception, sys.exit() or os._exit() in it is a bad input (exit 2). -q
    prints nothing but errors (--json still prints its document).

    Example:

    \b
        planner backtest models/example.toml --train-hours 168 --test-hours 24 --json
    """
    from planner.core.atomic import check_writable
    from planner.backtest.run import backtest_hours, write_backtest
    from planner.core.errors import Problem
    from planner.forecasting.point import resolve
    from planner.pipeline.run import default_out_dir, load_inputs

    chosen = tuple(s.strip() for s in strategies.split(",") if s.strip())
    bad = [s for s in chosen if s not in STRATEGY_NAMES]
    if bad or not chosen:
        raise InputError(Problem("--strategies", "unknown strategy", value=",".join(bad) or strategies,
                                 expected="some of " + ", ".join(STRATEGY_NAMES)))
    try:
        resolve(forecaster)
    except ValueError as exc:
        raise InputError(Problem("--forecaster", str(exc), value=forecaster)) from None
    try:
        multipliers = tuple(float(x) for x in penalty_multipliers.split(",") if x.strip())
    except ValueError:
        raise InputError(Problem("--penalty-multipliers", "not a list of numbers", value=penalty_multipliers,
                                 expected="e.g. 2,10,50")) from None
    if not multipliers:
        raise InputError(Problem("--penalty-multipliers", "empty", value=penalty_multipliers, expected="e.g. 2,10,50"))
    inp = load_inputs(model or default_model(), demand=history)
    check_writable(out_dir or default_out_dir(inp.config, "-backtest"),  # before the run, not after
                   ("backtest.csv", "backtest_monthly.csv", "backtest.json"))
    from planner.cli.common import config_inputs, refuse_overwrite_in

    refuse_overwrite_in(out_dir or default_out_dir(inp.config, "-backtest"),
                        ("backtest.csv", "backtest_monthly.csv", "backtest.json"), config_inputs(inp.config))
    with executor_from(executor, scheduler, jobs) as ex:
        result = backtest_hours(inp, train_hours, test_hours, step_hours, horizon_hours=horizon_hours,
                                backend=solver, executor=ex, progress=not quiet and not as_json,
                                source=str(history or inp.config.demand), forecaster=forecaster,
                                lookback_hours=lookback_hours, strategies=chosen, decide_hours=decide_hours,
                                ladder_share=ladder_share, multipliers=multipliers, seed=seed)
    paths = write_backtest(result, out_dir or default_out_dir(inp.config, "-backtest"))
    if as_json:
        echo_json(json.loads(paths["json"].read_text(encoding="utf-8")))
    elif not quiet:
        table = result.windows.pivot(index="window", columns="strategy", values="regret_pct")[
            list(dict.fromkeys(chosen))].astype(float)
        if len(table) > 12:
            click.echo(f"{len(table)} windows; regret per window in {paths['csv']}")
        else:
            click.echo("Regret against the hindsight optimum, % of its cost + shortfall at the penalty, per test window:")
            click.echo(table.round(2).to_string())
        click.echo(f"Whole period ({result.windows['test_start'].min()[:16]} to "
                   f"{result.windows['test_end'].max()[:16]}), hindsight optimum: cost "
                   f"${result.hindsight_total_usd:,.0f}, cost + shortfall ${result.hindsight_objective_usd:,.0f} "
                   f"({result.hindsight_status}):")
        from planner.backtest.report import strategy_table

        click.echo(strategy_table(result))
        for note in result.notes:
            click.echo(f"  note: {note}")
        click.echo(f"  wrote {paths['csv']}, {paths['monthly']} and {paths['json']}")
    if not result.proven:
        click.secho("the hindsight optimum is not proven (time limit): regrets are upper bounds", err=True)
        sys.exit(EXIT_NOT_MET)
