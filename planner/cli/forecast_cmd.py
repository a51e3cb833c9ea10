"""``planner forecast``: a demand forecast over the term from history (docs/forecasting.md)."""

from __future__ import annotations

from pathlib import Path

import click

from planner.cli.group import cli
from planner.core.errors import InputError, Problem
from planner.cli.common import Finite, handle_errors, model_argument


def _seasonality(text):
    """--seasonality "24,168" as hours (None when not given)."""
    if text is None:
        return None
    try:
        hours = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(Problem("--seasonality", "not a list of hours", value=text, expected="e.g. 24,168")) from None
    if not hours:
        raise InputError(Problem("--seasonality", "empty", expected="hours, e.g. 24,168"))
    return hours


@cli.command()
@model_argument
@click.option("--history", "history_file", type=click.Path(path_type=Path), required=True,
              help="Demand history (long or wide demand form, one scenario, contiguous periods of one length).")
@click.option("--horizon-months", type=click.IntRange(1, 120), required=True, help="Calendar months to forecast.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), required=True,
              help="Output folder for forecast.csv, scenarios.toml and forecast.json.")
@click.option("--period-hours", type=Finite(min=0, min_open=True), default=None,
              help="Aggregate to periods of this many hours (mean GPUs, with an hours column).")
@click.option("--scenarios", "n_scenarios", type=click.IntRange(1, 49), default=3, show_default=True,
              help="Quantile paths (3: p10/p50/p90 weighted 0.3/0.4/0.3).")
@click.option("--method", type=click.Choice(["mstl", "autoets", "autoarima", "auto", "weekly", "latest", "trend"]),
              default=None, help="Forecasting method (auto: per class, by held-back error). Default: mstl with "
                                 "statsforecast installed (pip install 'planner[forecast]'), else trend.")
@click.option("--seasonality", default=None, metavar="HOURS[,HOURS]",
              help="Seasonalities to fit, required (default 24,168, each dropped when the history is too short).")
@click.option("--quantiles", "quantile_form", is_flag=True,
              help="Write forecast.csv in the quantile form (p10, p50, p90 columns) instead of a scenario column.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Classes fitted at once (default: every core).")
@click.option("--tree", type=click.Choice(["quarter", "month"]), default=None,
              help="A scenario tree instead of quantile paths: it branches at the first period of every calendar "
                   "quarter / month after the first, each of which must be a purchase date of MODEL.")
@click.option("--branches", type=click.IntRange(2, 5), default=None,
              help="With --tree: children of every node at each branch date (default 2; at most 243 leaves).")
@handle_errors
def forecast(model, history_file, horizon_months, out_dir, period_hours, n_scenarios, method, seasonality,
             quantile_form, jobs, tree, branches):
    """Forecast demand from history over the term: per class daily and weekly seasonality, trend and
    uncertainty (statsforecast MSTL / AutoETS / AutoARIMA), as quantile-path scenarios the planner reads.

    Writes DIR/forecast.csv, DIR/scenarios.toml and DIR/forecast.json together. See docs/forecasting.md.

    Example:

    \b
        planner forecast models/example.toml --history history.csv --horizon-months 3 --out fc/
        planner forecast MODEL --history h.csv --horizon-months 12 --period-hours 24 --method auto --out fc/
        planner forecast MODEL --history h.csv --horizon-months 6 --period-hours 24 --tree quarter --branches 3 --out fc/
    """
    import time

    from planner.inputs.config import load_model
    from planner.forecasting.engine import forecast_demand, forecast_periods
    from planner.forecasting.history import read_history
    from planner.forecasting.output import FORECAST_FILES, write_forecast
    from planner.forecasting.tree import check_tree_dates, option_problems
    from planner.cli.common import default_model, refuse_overwriting_inputs

    asked = click.get_current_context().get_parameter_source("n_scenarios") != click.core.ParameterSource.DEFAULT
    conflicts = option_problems(tree, branches, n_scenarios if asked else None, quantile_form)
    if conflicts:
        raise InputError(conflicts)
    model_path = model or default_model()
    refuse_overwriting_inputs({f"--out ({name})": Path(out_dir) / name for name in FORECAST_FILES},
                              {"--history": history_file, "MODEL": model_path})
    config = load_model(model_path)
    hist = read_history(history_file, list(config.classes))
    if tree:  # the branch dates against MODEL's purchase dates before any fit (forecast_demand checks the size)
        check_tree_dates(config, forecast_periods(hist, horizon_months, period_hours=period_hours), tree)
    t0 = time.perf_counter()
    result = forecast_demand(hist, horizon_months, period_hours=period_hours, scenarios=None if tree else n_scenarios,
                             method=method, seasonality=_seasonality(seasonality), jobs=jobs, tree=tree,
                             branches=branches)
    elapsed = time.perf_counter() - t0
    paths = write_forecast(result, out_dir, quantile_form=quantile_form)
    rep = result.report
    click.echo(f"forecast: {len(hist.classes)} classes, {rep['history']['periods']} periods of history -> "
               f"{rep['horizon']['periods']} periods ({rep['horizon']['start']} to {rep['horizon']['end']}), "
               f"{len(result.scenarios)} scenarios, {elapsed:.1f} s")
    click.echo(f"{'class':<24} {'method':<10} {'MAPE %':>8} {'pinball':>9} {'cover80':>8}")
    for c in hist.classes:
        s = rep["holdout"][c] or {}
        mape = "-" if s.get("mape") is None else f"{s['mape']:.1f}"
        pin = "-" if s.get("pinball") is None else f"{s['pinball']:.3f}"
        cov = "-" if s.get("coverage_80") is None else f"{s['coverage_80']:.2f}"
        click.echo(f"{c[:24]:<24} {rep['method'][c]:<10} {mape:>8} {pin:>9} {cov:>8}")
    if result.tree is not None:
        t = rep["tree"]
        click.echo(f"tree: by {t['by']}, {t['branches']} branches at {', '.join(t['dates'])}: {t['leaves']} leaves")
    for note in rep["notes"]:
        click.echo(f"note: {note}")
    click.echo("wrote " + ", ".join(str(p) for p in paths.values()))
