"""``planner plan``, ``validate``, ``evaluate`` and ``backtest``: one plan, its check, its test against what came."""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

import click

from . import cli
from .common import (default_model, demand_option, echo_json, executor_from, EXIT_ERROR, EXIT_NOT_MET,
                     exit_not_proven, Finite, handle_errors, json_option, model_argument, not_proven_reasons,
                     out_option, prices_option, quiet_option, scale_options, solve_options, solver_option,
                     time_limit_option)


@cli.command()
@model_argument
@out_option("plan.xlsx and plan.json")
@solve_options
@prices_option
@demand_option
@click.option("--write-lp", "write_lp", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write the model solved, as CPLEX LP (.lp) or MPS (.mps).")
@quiet_option
@handle_errors
def plan(model, out_dir, solver, time_limit, mip_gap, prices, demand, write_lp, quiet):
    """Solve MODEL (a .toml model file) and write plan.xlsx and plan.json.

    MODEL defaults to the bundled example, models/example.toml.

    Exit codes: 0 demand met at a proven optimum; 2 bad input (nothing written);
    3 plan written but demand not met or optimality not proven; 1 solver or
    internal error.

    Example:

    \b
        planner plan models/example.toml --out outputs/q1 --time-limit 120 --write-lp outputs/q1/model.lp
    """
    from ..atomic import check_writable
    from ..pipeline import default_out_dir, load_inputs, make_plan, write_outputs

    t0 = time.perf_counter()
    inp = load_inputs(model or default_model(), demand=demand, prices=prices)
    check_writable(out_dir or default_out_dir(inp.config))  # before the solve, not after
    result = make_plan(inp, backend=solver, time_limit_s=time_limit, mip_gap=mip_gap, write_model=write_lp,
                       timings={"read_validate": time.perf_counter() - t0})
    if result.status.value in ("infeasible", "error"):
        hint = (" The model is infeasible." if result.status.value == "infeasible" else
                f" Hint: no plan was found within the time limit ({inp.config.solver.time_limit_s if time_limit is None else time_limit} s); raise --time-limit.")
        click.secho(f"Error: the solver found no plan ({result.status.value}"
                    f"{': ' + result.solve.message if result.solve.message else ''}); nothing was written.{hint}",
                    fg="red", err=True)
        sys.exit(EXIT_ERROR)
    target = out_dir or default_out_dir(inp.config)
    paths = write_outputs(result, target)
    if not quiet:
        click.echo(result.summary())
        click.echo(f"  wrote {paths['xlsx']} and {paths['json']}" + (f" and {write_lp}" if write_lp else ""))
    exit_not_proven(not_proven_reasons([("", result)]))


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
    from ..pipeline import load_inputs

    inp = load_inputs(model or default_model(), demand=demand, prices=prices)
    click.echo(f"OK: '{inp.config.name}': {inp.T} periods ({inp.horizon_hours:g} h) x {inp.K} classes x "
               f"{inp.P} pools, {len(inp.reserved)} reserved options, {len(inp.scenarios)} scenario(s).")



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
@handle_errors
def evaluate(model, plan_file, demand, prices, solver, time_limit, out_dir, as_json):
    """Fix a plan's reserved purchases and price the cheapest recourse for the actual demand.

    Reports the realised cost, shortfall, reserved utilisation and the regret
    against the plan made with hindsight on the same demand.

    Example:

    \b
        planner evaluate models/example.toml --plan outputs/example-q1-2027/plan.json \\
            --demand data/actual_q1.csv --json
    """
    from ..evaluate import evaluate as run_evaluation, read_plan_purchases, write_evaluation
    from ..pipeline import default_out_dir, load_inputs, make_plan

    inp = load_inputs(model or default_model(), demand=demand, prices=prices)
    purchases = read_plan_purchases(plan_file, inp)
    ev = run_evaluation(inp, purchases, functools.partial(make_plan, backend=solver, time_limit_s=time_limit),
                        plan_file=str(plan_file))
    if ev.realised.status.value not in ("optimal", "feasible"):
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
                   f"GPU-hours; reserved utilisation {100 * data['reserved_utilisation']:.1f} %; regret "
                   f"${data['regret_usd']:,.0f} against hindsight (${data['hindsight']['objective_usd']:,.0f})")
        click.echo(f"  wrote {paths['xlsx']} and {paths['json']}")


@cli.command()
@model_argument
@click.option("--demand", "history", type=click.Path(path_type=Path), default=None,
              help="Demand history to backtest on (default: the model file's demand).")
@click.option("--train-hours", type=Finite(min=1), default=672, show_default=True,
              help="Length of each planning window.")
@click.option("--test-hours", type=Finite(min=1), default=672, show_default=True,
              help="Length of each evaluation window.")
@click.option("--step-hours", type=Finite(min=1), default=None, help="Roll forward by (default: test).")
@solver_option
@out_option("backtest.csv and backtest.json", "-backtest")
@json_option
@scale_options
@quiet_option
@handle_errors
def backtest(model, history, train_hours, test_hours, step_hours, solver, out_dir, as_json, jobs, executor,
             scheduler, quiet):
    """Plan on a window of history, evaluate on the next, roll forward; regret per strategy.

    Strategies: the stochastic plan, the point-forecast plan and the percentile
    rule (reserve the level exceeded in the break-even share of hours). Windows
    run in parallel (--jobs, --executor dask).

    Example:

    \b
        planner backtest models/example.toml --train-hours 336 --test-hours 336
    """
    from ..backtest import STRATEGIES, backtest_hours, write_backtest
    from ..pipeline import default_out_dir, load_inputs

    inp = load_inputs(model or default_model(), demand=history)
    with executor_from(executor, scheduler, jobs) as ex:
        result = backtest_hours(inp, train_hours, test_hours, step_hours, backend=solver, executor=ex,
                                progress=not quiet and not as_json, source=str(history or inp.config.demand))
    paths = write_backtest(result, out_dir or default_out_dir(inp.config, "-backtest"))
    if as_json:
        echo_json(json.loads(paths["json"].read_text(encoding="utf-8")))
    else:
        table = result.pivot(index="window", columns="strategy", values="regret_pct")[list(STRATEGIES)]
        click.echo("Regret against hindsight, % of the hindsight cost, per test window:")
        click.echo(table.round(2).to_string())
        click.echo("  mean: " + ", ".join(f"{s} {table[s].mean():.2f} %" for s in STRATEGIES))
        click.echo(f"  wrote {paths['csv']} and {paths['json']}")
