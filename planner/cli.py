"""The ``planner`` command line: parse, call the library, print. No modelling here.

Exit codes (spec/contracts.md): 0 plan found and demand met; 1 internal or
solver error; 2 bad input; 3 solved but demand not met or not proven optimal.
"""

from __future__ import annotations

import functools
import json
import sys
import time
import traceback
from pathlib import Path

import click

from . import __version__
import numpy as np

from .errors import InputError, PlannerError, Problem

EXAMPLE_MODEL = Path(__file__).resolve().parent.parent / "models" / "example.toml"

EXIT_OK, EXIT_ERROR, EXIT_INPUT, EXIT_NOT_MET = 0, 1, 2, 3


class Finite(click.FloatRange):
    """A number in a range that is finite: nan and inf are refused (exit 2, naming the option)."""

    def convert(self, value, param, ctx):
        import math

        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def _default_model() -> Path:
    local = Path("models") / "example.toml"
    return local if local.exists() else EXAMPLE_MODEL


def handle_errors(fn):
    """PlannerError -> short message and its exit code; anything else -> exit 1 (traceback with --debug)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        debug = kwargs.pop("debug", False)
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            click.secho(f"Error: {exc}", fg="red", err=True)
            sys.exit(EXIT_INPUT)
        except PlannerError as exc:
            click.secho(f"Error: {exc}", fg="red", err=True)
            sys.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            click.secho("Interrupted: no outputs were changed.", fg="red", err=True)
            sys.exit(EXIT_ERROR)
        except BrokenPipeError:  # the reader went away (e.g. `| head`): outputs are already written
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(EXIT_OK)
        except OSError as exc:  # the output folder cannot be written (read-only, a file, no such device...)
            where = exc.filename or ""
            click.secho(f"Error: cannot write {where}: {exc.strerror or exc}", fg="red", err=True)
            sys.exit(EXIT_ERROR)
        except Exception as exc:  # a bug: say so briefly
            if debug:
                traceback.print_exc()
            click.secho(f"Internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
                        fg="red", err=True)
            sys.exit(EXIT_ERROR)

    return click.option("--debug", is_flag=True, help="Show the full traceback of internal errors.")(wrapper)


model_argument = click.argument("model", required=False, type=click.Path(path_type=Path))
solver_option = click.option("--solver", type=click.Choice(["cbc", "highs"]), default=None,
                             help="Solver backend (default: the model file's, else highs).")
time_limit_option = click.option("--time-limit", type=Finite(min=0, min_open=True), default=None,
                                 help="Solver time limit in seconds (overrides the model file).")
gap_option = click.option("--mip-gap", type=Finite(0, 1, max_open=True), default=None,
                          help="Relative MIP gap at which the solver may stop (overrides the model file).")
prices_option = click.option("--prices", type=click.Path(path_type=Path), default=None,
                             help="Price sheet to use instead of the model file's.")
demand_option = click.option("--demand", type=click.Path(path_type=Path), default=None,
                             help="Demand forecast to use instead of the model file's.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="planner")
def cli():
    """GPU capacity planner: the cheapest reserved / on-demand / spot mix that meets demand.

    Example:

    \b
        planner plan                      # the bundled example
        planner plan models/q1.toml --solver highs
    """


@cli.command()
@model_argument
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Output folder (default outputs/<model name>/).")
@solver_option
@time_limit_option
@gap_option
@prices_option
@demand_option
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
@handle_errors
def plan(model, out_dir, solver, time_limit, mip_gap, prices, demand, quiet):
    """Solve MODEL (a .toml model file) and write plan.xlsx and plan.json.

    MODEL defaults to the bundled example, models/example.toml.

    Exit codes: 0 demand met at a proven optimum; 2 bad input (nothing written);
    3 plan written but demand not met or optimality not proven; 1 solver or
    internal error.

    Example:

    \b
        planner plan models/example.toml --out outputs/q1 --solver highs --time-limit 120
    """
    from .pipeline import default_out_dir, load_inputs, make_plan, write_outputs
    from .report import summary_text

    from .atomic import check_writable

    t0 = time.perf_counter()
    inp = load_inputs(model or _default_model(), demand=demand, prices=prices)
    check_writable(out_dir or default_out_dir(inp.config))  # before the solve, not after
    result = make_plan(inp, backend=solver, time_limit_s=time_limit, mip_gap=mip_gap,
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
        click.echo(summary_text(result))
        click.echo(f"  wrote {paths['xlsx']} and {paths['json']}")
    if result.status.value != "optimal" or not result.demand_met:
        why = []
        if result.status.value != "optimal":
            why.append(f"status {result.status.value} (gap {result.solve.mip_gap})")
        if not result.demand_met:
            why.append(f"{result.shortfall_gpu_hours:,.1f} GPU-hours of demand not met")
        click.secho("Warning: " + "; ".join(why), fg="yellow", err=True)
        sys.exit(EXIT_NOT_MET)


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
    from .pipeline import load_inputs

    inp = load_inputs(model or _default_model(), demand=demand, prices=prices)
    click.echo(f"OK: '{inp.config.name}': {inp.T} periods ({inp.horizon_hours:g} h) x {inp.K} classes x "
               f"{inp.P} pools, {len(inp.reserved)} reserved options, {len(inp.scenarios)} scenario(s).")


@cli.command()
@click.option("--interruptions-per-hour", type=Finite(min=0), default=None,
              help="Spot preemptions per instance-hour.")
@click.option("--mtbi-hours", type=Finite(min=0, min_open=True), default=None,
              help="Mean time between interruptions of one instance, in hours (instead of the rate).")
@click.option("--job-mtbi-hours", type=Finite(min=0, min_open=True), default=None,
              help="Mean time between interruptions of the whole job, in hours (e.g. a large training run).")
@click.option("--checkpoint-minutes", type=Finite(min=0), default=5.0, show_default=True,
              help="Time to write one checkpoint.")
@click.option("--restart-minutes", type=Finite(min=0), default=10.0, show_default=True,
              help="Time to restart after an interruption (reschedule, reload).")
@click.option("--interval-minutes", type=Finite(min=0, min_open=True), default=None,
              help="Fixed checkpoint interval (default: the optimal one).")
@click.option("--job-gpus", type=Finite(min=0, min_open=True), default=None,
              help="GPUs the gang-scheduled job spans (default: one instance).")
@click.option("--gpus-per-instance", type=Finite(min=0, min_open=True), default=1.0, show_default=True)
@click.option("--failure-rate-per-gpu-hour", type=Finite(min=0), default=0.0, show_default=True,
              help="Hardware failures per GPU-hour (hit every purchase option).")
@click.option("--spot-price", type=Finite(min=0), default=None, help="Spot USD per GPU-hour.")
@click.option("--on-demand-price", type=Finite(min=0), default=None, help="On-demand USD per GPU-hour.")
@click.option("--reserved-price", type=Finite(min=0), default=None,
              help="Effective reserved USD per GPU-hour, to compare spot against too.")
@click.option("--sweep", type=click.Choice(["interruptions", "job-gpus"]), default=None,
              help="Print the curve over interruption rates or gang sizes.")
@click.option("--sweep-values", default=None,
              help="Comma-separated points of the sweep (default: a log-spaced range).")
@click.option("--xlsx", "xlsx_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the sweep with a chart to this workbook.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@handle_errors
def spot(**opts):
    """Checkpoint interval, goodput and break-even of spot for one job.

    Example: fine-tunes preempted about once every four hours, 2-minute
    checkpoints, 5-minute restarts, 16-GPU jobs on 8-GPU instances:

    \b
        planner spot --mtbi-hours 4 --checkpoint-minutes 2 --restart-minutes 5 \\
            --job-gpus 16 --gpus-per-instance 8 --spot-price 4.5 --on-demand-price 11
    """
    from .spotcli import run_spot

    run_spot(**opts)


def _quota_options(fn):
    for opt in reversed([
        click.option("--plan", "plan_file", type=click.Path(path_type=Path), default=None,
                     help="Share the fleet of this plan.json's purchases (default: plan MODEL now)."),
        click.option("--total-gpus", type=click.IntRange(min=1, max=10_000_000), default=None,
                     help="Share a fixed number of GPUs instead of a plan's fleet."),
        click.option("--percentile", type=Finite(0, 100), default=50.0, show_default=True,
                     help="Percentile of a team's hourly demand that sets its nominal quota."),
        click.option("--gamer", default=None, help="Team that games the policy (default: the one that waits most)."),
        click.option("--inflate", type=Finite(1, 100), default=1.5, show_default=True,
                     help="Factor by which the gamer inflates its requests."),
        solver_option,
    ]):
        fn = opt(fn)
    return fn


@cli.command()
@model_argument
@_quota_options
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Output folder for quotas.json and quotas.xlsx (default outputs/<model name>-quotas/).")
@click.option("--json", "as_json", is_flag=True, help="Print quotas.json instead of the tables.")
@handle_errors
def quotas(model, plan_file, total_gpus, percentile, gamer, inflate, solver, out_dir, as_json):
    """Quotas and fair-sharing weights per team, replayed hour by hour, and how teams could game them.

    Teams are the classes' `team` (a class is its own team by default); [teams.<name>] sets
    fair_share_weight and guaranteed_gpus. See docs/quotas.md.

    Example:

    \b
        planner quotas models/quotas.toml --total-gpus 1024
        planner quotas models/example.toml --plan outputs/example-q1-2027/plan.json --json
    """
    from .pipeline import default_out_dir
    from .quotascli import echo_json, quota_result
    from .report.quotas_report import quotas_dict, quotas_text, write_quotas

    model = model or Path(__file__).resolve().parent.parent / "models" / "quotas.toml"
    result = quota_result(model, plan_file, total_gpus, percentile, gamer, inflate, solver)
    from .config import load_model

    paths = write_quotas(result, out_dir or default_out_dir(load_model(model), "-quotas"))
    if as_json:
        echo_json(quotas_dict(result))
    else:
        click.echo(quotas_text(result))
        click.echo(f"wrote {paths['json']} and {paths['xlsx']}")


@cli.command(name="export")
@click.argument("kind", type=click.Choice(["kueue", "volcano", "slurm"]))
@model_argument
@_quota_options
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), required=True,
              help="Folder for the generated files.")
@handle_errors
def export_cmd(kind, model, plan_file, total_gpus, percentile, gamer, inflate, solver, out_dir):
    """Write the quota policy as Kueue or Volcano manifests (YAML) or Slurm sacctmgr commands.

    Example:

    \b
        planner export kueue models/quotas.toml --total-gpus 1024 --out outputs/kueue
        planner export slurm models/quotas.toml --total-gpus 1024 --out outputs/slurm
    """
    from .quotascli import quota_result, write_export

    model = model or Path(__file__).resolve().parent.parent / "models" / "quotas.toml"
    result = quota_result(model, plan_file, total_gpus, percentile, gamer, inflate, solver)
    for path in write_export(kind, result, out_dir):
        click.echo(f"wrote {path}")


@cli.command()
@model_argument
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Output folder for pooling.json and pooling.xlsx (default outputs/<model name>-pooling/).")
@solver_option
@time_limit_option
@gap_option
@click.option("--json", "as_json", is_flag=True, help="Print pooling.json instead of the table.")
@handle_errors
def pooling(model, out_dir, solver, time_limit, mip_gap, as_json):
    """Separate pools, or one pool where training backfills what inference leaves idle?

    Plans MODEL twice: the classes with priority (no backfill) and the backfill classes each on a
    fleet of their own, and all together with backfill preempted when the priority classes need their
    GPUs back. Prints both costs, the inference latency, what training loses, and a recommendation.

    Example:

    \b
        planner pooling models/pooling.toml --out outputs/pooling
    """
    from .pipeline import default_out_dir, load_inputs, make_plan
    from .pooling import compare_pooling
    from .report.pooling_report import pooling_dict, pooling_text, write_pooling

    if model is None:
        model = Path(__file__).resolve().parent.parent / "models" / "pooling.toml"
    inp = load_inputs(model)
    result = compare_pooling(inp, lambda i: make_plan(i, backend=solver, time_limit_s=time_limit,
                                                      mip_gap=mip_gap, risk=False))
    bad = [p for p in result.separate + [result.pooled] if p.status.value in ("infeasible", "error")]
    if bad:
        click.secho(f"Error: a plan could not be solved: {bad[0].solve.message}", fg="red", err=True)
        sys.exit(EXIT_ERROR)
    paths = write_pooling(result, out_dir or default_out_dir(inp.config, "-pooling"))
    if as_json:
        click.echo(json.dumps(pooling_dict(result), indent=2))
    else:
        click.echo(pooling_text(result))
        click.echo(f"wrote {paths['json']} and {paths['xlsx']}")
    proven = all(p.status.value == "optimal" and p.demand_met for p in result.separate + [result.pooled])
    sys.exit(EXIT_OK if proven else EXIT_NOT_MET)


@cli.command()
@click.option("--requests-per-s", type=Finite(min=0), required=True, help="Arrival rate of requests.")
@click.option("--service-ms", type=Finite(min=0, min_open=True), default=None,
              help="Mean service time of one request on one replica (ms).")
@click.option("--requests-per-s-per-replica", type=Finite(min=0, min_open=True), default=None,
              help="Service rate of one replica (instead of --service-ms).")
@click.option("--slo-ms", type=Finite(min=0, min_open=True), required=True,
              help="Latency target (queueing wait + service), ms.")
@click.option("--percentile", type=Finite(0, 100, min_open=True, max_open=True), default=99.0, show_default=True,
              help="Share of requests (percent) that must meet the target.")
@click.option("--gpus-per-replica", type=Finite(min=0, min_open=True), default=1.0, show_default=True)
@click.option("--service-cv", type=Finite(0, 10), default=1.0, show_default=True,
              help="Coefficient of variation of the service time (1 = exponential, M/M/c; else Allen-Cunneen).")
@click.option("--sweep", type=click.Choice(["requests"]), default=None,
              help="Print the replica staircase over a range of loads.")
@click.option("--sweep-values", default=None,
              help="Comma-separated loads of the sweep (default: 20 from a tenth to twice --requests-per-s).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@handle_errors
def slo(**opts):
    """Replicas and GPUs an inference service needs to meet a latency SLO (M/M/c, Erlang C).

    Example: 40 requests per second, 500 ms per request, p99 latency within 3 s:

    \b
        planner slo --requests-per-s 40 --service-ms 500 --slo-ms 3000 --percentile 99
        planner slo --requests-per-s 40 --service-ms 500 --slo-ms 3000 --sweep requests
    """
    from .slocli import run_slo

    run_slo(**opts)


@cli.command()
@model_argument
@click.option("--plan", "plan_file", required=True, type=click.Path(path_type=Path),
              help="plan.json whose reserved purchases are evaluated.")
@click.option("--demand", required=True, type=click.Path(path_type=Path), help="The demand that really came.")
@prices_option
@solver_option
@time_limit_option
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Folder for evaluation.xlsx and evaluation.json (default outputs/<name>-evaluate/).")
@click.option("--json", "as_json", is_flag=True, help="Print the evaluation as JSON.")
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
    from .atomic import atomic_path
    from .evaluate import evaluate as run_evaluation, read_plan_purchases
    from .pipeline import default_out_dir, load_inputs, make_plan
    from .report import write_workbook

    inp = load_inputs(model or _default_model(), demand=demand, prices=prices)
    purchases = read_plan_purchases(plan_file, inp)
    solve = functools.partial(make_plan, backend=solver, time_limit_s=time_limit)
    ev = run_evaluation(inp, purchases, solve, plan_file=str(plan_file))
    if ev.realised.status.value not in ("optimal", "feasible"):
        click.secho(f"Error: the plan's purchases cannot be run on these inputs (status "
                    f"{ev.realised.status.value}: {ev.realised.solve.message}). A reserved cap (max_gpus) below "
                    f"the purchases, or purchases of an option the price sheet no longer has, make it infeasible; "
                    f"no cost is reported and nothing was written.", fg="red", err=True)
        sys.exit(EXIT_NOT_MET)
    data = ev.to_dict()
    target = out_dir or default_out_dir(inp.config, "-evaluate")
    with atomic_path(Path(target) / "evaluation.xlsx") as tmp:
        write_workbook(ev.realised, tmp)
    with atomic_path(Path(target) / "evaluation.json") as tmp:
        tmp.write_text(json.dumps(data, indent=2, default=float) + "\n", encoding="utf-8")
    if as_json:
        click.echo(json.dumps(data, indent=2, default=float))
    else:
        c = data["cost_usd"]
        click.echo(f"Realised cost ${c['total']:,.0f} (reserved ${c['reserved']:,.0f}, on-demand "
                   f"${c['on_demand']:,.0f}, spot ${c['spot']:,.0f}); shortfall {data['shortfall_gpu_hours']:,.1f} "
                   f"GPU-hours; reserved utilisation {100 * data['reserved_utilisation']:.1f} %; regret "
                   f"${data['regret_usd']:,.0f} against hindsight (${data['hindsight']['objective_usd']:,.0f})")
        click.echo(f"  wrote {Path(target) / 'evaluation.xlsx'} and {Path(target) / 'evaluation.json'}")


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
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Folder for backtest.csv and backtest.json (default outputs/<name>-backtest/).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@handle_errors
def backtest(model, history, train_hours, test_hours, step_hours, solver, out_dir, as_json):
    """Plan on a window of history, evaluate on the next, roll forward; regret per strategy.

    Strategies: the stochastic plan, the point-forecast plan and the percentile
    rule (reserve the level exceeded in the break-even share of hours).

    Example:

    \b
        planner backtest models/example.toml --train-hours 336 --test-hours 336
    """
    from .atomic import atomic_path
    from .backtest import backtest as run_backtest
    from .pipeline import default_out_dir, load_inputs, make_plan

    inp = load_inputs(model or _default_model(), demand=history)
    if len(inp.scenarios) > 1:
        raise InputError(Problem(str(history or inp.config.demand), "a backtest needs one demand history, "
                                 "not scenarios", column="scenario"))
    step = float(np.median(inp.hours))
    train, test = int(round(train_hours / step)), int(round(test_hours / step))
    if train + test > inp.T:
        raise InputError(Problem(str(history or inp.config.demand), f"history too short: {inp.T} periods of "
                                 f"{step:g} h for a {train_hours:g} h + {test_hours:g} h window",
                                 hint="shorten --train-hours or --test-hours"))
    result = run_backtest(inp, train, test, functools.partial(make_plan, backend=solver),
                          step_periods=int(round((step_hours or test_hours) / step)))
    target = Path(out_dir or default_out_dir(inp.config, "-backtest"))
    with atomic_path(target / "backtest.csv") as tmp:
        result.to_csv(tmp, index=False)
    records = json.loads(result.to_json(orient="records", date_format="iso"))
    with atomic_path(target / "backtest.json") as tmp:
        tmp.write_text(json.dumps({"windows": records}, indent=2) + "\n", encoding="utf-8")
    if as_json:
        click.echo(json.dumps({"windows": records}, indent=2))
    else:
        table = result.pivot(index="window", columns="strategy", values="regret_pct")[list(STRATEGY_ORDER)]
        click.echo("Regret against hindsight, % of the hindsight cost, per test window:")
        click.echo(table.round(2).to_string())
        click.echo("  mean: " + ", ".join(f"{s} {table[s].mean():.2f} %" for s in STRATEGY_ORDER))
        click.echo(f"  wrote {target / 'backtest.csv'} and {target / 'backtest.json'}")


STRATEGY_ORDER = ("stochastic", "point", "percentile")

from . import cli_whatif  # noqa: E402,F401  (registers `compare` and `sweep`)


def main():  # console script entry point
    cli(prog_name="planner")


if __name__ == "__main__":  # pragma: no cover
    main()
