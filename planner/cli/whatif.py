"""``planner compare`` and ``planner sweep``: many solves of variants of one model."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from planner.cli.group import cli
from planner.cli.common import (default_model, demand_option, executor_from, EXIT_ERROR, exit_not_proven, handle_errors,
                     model_argument, not_proven_reasons, out_option, prices_option, quiet_option, scale_options,
                     solve_options)


@cli.command()
@model_argument
@click.option("--prices", "prices_list", multiple=True, type=click.Path(path_type=Path),
              help="A price sheet: one scenario each (repeat the option).")
@click.option("--demand", "demand_list", multiple=True, type=click.Path(path_type=Path),
              help="A demand forecast: one scenario each (repeat the option).")
@click.option("--model", "model_list", multiple=True, type=click.Path(path_type=Path),
              help="Another model file: one scenario each (repeat the option).")
@click.option("--label", "labels", multiple=True,
              help="Name of each scenario, in the same order (default: the file names that differ).")
@click.option("--with-base", is_flag=True,
              help="Put MODEL as it is first, labelled 'base' (automatic with a single variant).")
@out_option("comparison.xlsx, comparison.json and each scenario's plan", "-compare")
@solve_options
@scale_options
@quiet_option
@handle_errors
def compare(model, prices_list, demand_list, model_list, labels, with_base, out_dir, solver, time_limit, mip_gap,
            jobs, executor, scheduler, quiet):
    """Solve variants of MODEL side by side: comparison.xlsx and comparison.json.

    Each --prices, --demand or --model value is one scenario; lists given
    together are read in parallel (scenario i takes the i-th of each; a list
    given once applies to all). The first scenario is the base of the deltas;
    with a single variant, MODEL as it is comes first as 'base'. Each
    scenario's own plan.xlsx / plan.json go to scenarios/<n>-<label>/ and are
    linked from the comparison.

    Exit codes: 0 every scenario optimal with demand met; 2 bad input in any
    scenario (nothing written); 3 written, but some scenario has a shortfall or
    is not proven optimal; 1 a scenario has no plan (nothing written).

    Example:

    \b
        planner compare models/example.toml --prices data/example/prices.csv \\
            --prices offer.csv --label today --label offer --out outputs/offer
    """
    from planner.pipeline.run import default_out_dir
    from planner.whatif import compare as cmp

    t0 = time.perf_counter()
    variants = cmp.resolve_variants(model or default_model(), list(model_list), list(prices_list),
                                    list(demand_list), list(labels), with_base)
    inputs = cmp.load_variants(variants)
    target = out_dir or default_out_dir(inputs[0].config, "-compare")
    from planner.cli.common import config_inputs, refuse_overwrite_in

    for i, inp_i in enumerate(inputs):  # before any solve: no output may overwrite a variant's input
        refuse_overwrite_in(target, ("comparison.json", "comparison.xlsx"),
                            {f"{k} ({variants[i].label})": v for k, v in config_inputs(inp_i.config).items()})
    if not quiet:
        click.echo(f"Comparing {len(variants)} scenarios (base '{variants[0].label}'):", err=True)
        for v in variants:
            click.echo(f"  {v.label}: {v.describe()}", err=True)
    with executor_from(executor, scheduler, jobs) as ex:
        plans = cmp.solve_variants(variants, inputs, backend=solver, time_limit_s=time_limit, mip_gap=mip_gap,
                                   executor=ex, progress=not quiet)
    comparison = cmp.build_comparison(variants, plans)
    paths = cmp.write_comparison(variants, plans, comparison, target)
    if not quiet:
        for line in cmp.summary_lines(comparison):
            click.echo(line)
        click.echo(f"  wrote {paths['xlsx']} and {paths['json']} ({len(plans)} scenario plans under "
                   f"{Path(target) / 'scenarios'}) in {time.perf_counter() - t0:.1f} s")
    exit_not_proven(not_proven_reasons([(v.label, p) for v, p in zip(variants, plans)]))



def _factor_option(name: str, what: str):
    return click.option("--" + name.replace("_", "-"), name, default=None, metavar="LO:HI:N|A,B,..",
                        help=f"Factor on {what} (1 = as in the inputs).")


@cli.command()
@model_argument
@_factor_option("spot_price", "spot prices")
@_factor_option("on_demand_price", "on-demand prices")
@_factor_option("reserved_price", "reserved prices (hourly, upfront and residual value)")
@_factor_option("interruptions", "spot interruption rates")
@_factor_option("demand_level", "demand, every period")
@_factor_option("demand_growth", "demand growth: 1 at the first period rising linearly to the factor at the last")
@_factor_option("headroom", "every class's headroom")
@click.option("--grid", is_flag=True, help="Every combination of the factors' values (default: one at a time).")
@out_option("sweep.json, sweep.csv and sweep.xlsx", "-sweep")
@prices_option
@demand_option
@solve_options
@scale_options
@quiet_option
@handle_errors
def sweep(model, spot_price, on_demand_price, reserved_price, interruptions, demand_level, demand_growth, headroom,
          grid, out_dir, prices, demand, solver, time_limit, mip_gap, jobs, executor, scheduler, quiet):
    """Sensitivity of the plan to factors on prices, interruptions, demand and headroom.

    Each factor takes LO:HI:N (N evenly spaced values) or a comma list. By
    default each factor varies alone with the others at 1, around a base point;
    --grid solves every combination. Inputs are read once; points run in
    parallel (--jobs). Writes sweep.json, sweep.csv and sweep.xlsx (points,
    break-evens, tornado chart, a chart per factor), and prints the table,
    the break-evens where a reserved purchase or a class's spot use starts or
    stops, the wall time and points per minute. A failed point is reported and
    the others go on.

    Exit codes: 0 every point solved to a proven optimum with demand met; 3
    outputs written but some point failed, left demand unmet or is not proven
    optimal; 1 no point solved; 2 bad options or inputs (nothing written).

    Example:

    \b
        planner sweep models/example.toml --spot-price 0.5:2:16 --interruptions 0.5,1,2,4 --jobs 2
    """
    from planner.pipeline.run import default_out_dir, load_inputs
    from planner.whatif import sweep as sw
    from planner.whatif.report import write_sweep_outputs

    spec = sw.SweepSpec.from_options(dict(spot_price=spot_price, on_demand_price=on_demand_price,
                                          reserved_price=reserved_price, interruptions=interruptions,
                                          demand_level=demand_level, demand_growth=demand_growth, headroom=headroom),
                                     grid=grid)
    n_points = len(spec.points())
    t0 = time.perf_counter()
    inp = load_inputs(model or default_model(), demand=demand, prices=prices)
    read_s = time.perf_counter() - t0
    from planner.cli.common import config_inputs, refuse_overwrite_in

    refuse_overwrite_in(Path(out_dir or default_out_dir(inp.config, "-sweep")), ("sweep.csv", "sweep.json", "sweep.xlsx"),
                        config_inputs(inp.config))
    with executor_from(executor, scheduler, jobs) as ex:
        if not quiet:
            click.echo(f"Sweeping '{inp.config.name}': {n_points} points "
                       f"({'grid' if grid else 'one factor at a time'}) on {min(ex.workers, n_points)} "
                       f"{ex.name} worker(s); inputs read and validated once in {read_s:.1f} s", err=True)
        result = sw.run_sweep(inp, spec, backend=solver, time_limit_s=time_limit, mip_gap=mip_gap, executor=ex,
                              progress=not quiet)
    ok = result.ok_points
    if not ok:  # exit 1: nothing written
        click.secho("Error: no point of the sweep was solved (see the errors above); nothing was written.",
                    fg="red", err=True)
        sys.exit(EXIT_ERROR)
    target = Path(out_dir or default_out_dir(inp.config, "-sweep"))
    paths = write_sweep_outputs(result, target)
    if not quiet:
        for line in sw.summary_lines(result):
            click.echo(line)
        click.echo(f"  wrote {paths['xlsx']}, {paths['csv']} and {paths['json']}")
    why = []
    failed = len(result.points) - len(ok)
    if failed:
        why.append(f"{failed} point(s) failed")
    not_opt = sum(1 for p in ok if p["status"] != "optimal")
    if not_opt:
        why.append(f"{not_opt} point(s) not proven optimal")
    short = sum(1 for p in ok if p["shortfall_gpu_hours"] > 1e-6)
    if short:
        why.append(f"{short} point(s) leave demand unmet")
    exit_not_proven(why)
