"""``planner pooling``, ``quotas`` and ``export``: how one fleet is shared."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from planner.cli.group import cli
from planner.core.errors import InputError, Problem
from planner.cli.common import (default_model, echo_json, EXIT_ERROR, EXIT_NOT_MET, EXIT_OK, Finite, handle_errors,
                     json_option, model_argument, out_option, solve_options, solver_option)


def _quota_options(fn):
    for opt in reversed([
        click.option("--plan", "plan_file", type=click.Path(path_type=Path), default=None,
                     help="Share the fleet of this plan.json's purchases (default: plan MODEL now)."),
        click.option("--total-gpus", default=None, metavar="N|TYPE=N,...",
                     help="Share a fixed fleet instead of a plan's: N GPUs (a model on one GPU type), or a total "
                          "per GPU type (H100=1024,A100=512) or per type and region (H100@us-east-1=512); "
                          "one flavor each, never added across types."),
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
@out_option("quotas.json and quotas.xlsx", "-quotas")
@json_option
@handle_errors
def quotas(model, plan_file, total_gpus, percentile, gamer, inflate, solver, out_dir, as_json):
    """Quotas and fair-sharing weights per team, replayed hour by hour, and how teams could game them.

    Teams are the classes' `team` (a class is its own team by default); [teams.<name>] sets
    fair_share_weight and guaranteed_gpus. See docs/quotas.md.

    Example:

    \b
        planner quotas models/quotas.toml --total-gpus 1024
        planner quotas MODEL --total-gpus H100=1024,A100=512
        planner quotas models/example.toml --plan outputs/example-q1-2027/plan.json --json
    """
    from planner.pipeline.run import default_out_dir
    from planner.api import quota_result
    from planner.report.quotas_report import quotas_dict, quotas_text, write_quotas

    from planner.inputs.config import load_model
    from planner.cli.common import config_inputs, refuse_overwrite_in

    model = model or default_model("quotas")
    config = load_model(model)
    target = out_dir or default_out_dir(config, "-quotas")
    refuse_overwrite_in(target, ("quotas.json", "quotas.xlsx"), {**config_inputs(config), "--plan": plan_file})
    result = quota_result(model, plan_file, total_gpus, percentile, gamer, inflate, solver)
    paths = write_quotas(result, target)
    if as_json:
        echo_json(quotas_dict(result))
    else:
        click.echo(quotas_text(result))
        click.echo(f"wrote {paths['json']} and {paths['xlsx']}")


@cli.command(name="export")
@click.argument("kind", type=click.Choice(["kueue", "volcano", "slurm", "focus"]))
@model_argument
@_quota_options
@click.option("--out", "out_dir", type=click.Path(path_type=Path), required=True,
              help="Output folder for the generated files (focus: the CSV file to write).")
@click.option("--provider", default="unspecified", show_default=True,
              help="focus: ProviderName / InvoiceIssuerName / PublisherName of the charges.")
@click.option("--billing-account", default="planned", show_default=True, help="focus: BillingAccountId.")
@click.option("--sub-account", default=None, help="focus: SubAccountId (e.g. the project or subscription).")
@click.option("--granularity", type=click.Choice(["month", "period"]), default="month", show_default=True,
              help="focus: usage rows per calendar month, or per period of the plan (from the fleet.csv beside "
                   "plan.json: hourly for an hourly plan; what `planner history import` reads back).")
@click.option("--gpu-hour-budgets", "budget_slack", type=Finite(min=0, max=1000, min_open=True), default=None,
              metavar="SLACK", help="slurm: GPU-hour budgets (GrpTRESMins) at SLACK x each team's GPU-hours under "
                                    "its quota, and budgets.csv, their replay (docs/quotas.md).")
@click.option("--focus10-names", is_flag=True, help="focus: the columns outside FOCUS 1.2 under their FOCUS 1.0/1.3 "
              "names (ChargeType, ResourceID, ServiceProviderName, ...) instead of x_-prefixed, for 1.0 validators.")
@handle_errors
def export_cmd(kind, model, plan_file, total_gpus, percentile, gamer, inflate, solver, out_dir, provider,
               billing_account, sub_account, granularity, focus10_names, budget_slack=None):
    """Write the quota policy as Kueue or Volcano manifests (YAML) or Slurm sacctmgr commands,
    or a plan's projected charges as a FinOps FOCUS 1.2 CSV (MODEL is then the plan.json).

    Example:

    \b
        planner export kueue models/quotas.toml --total-gpus 1024 --out outputs/kueue
        planner export slurm models/quotas.toml --total-gpus 1024 --out outputs/slurm
        planner export focus outputs/example-q1-2027/plan.json --out outputs/focus.csv
    """
    if kind == "focus":
        from planner.export.focus import write_focus

        if model is None:
            raise InputError(Problem("PLAN_JSON", "the FOCUS export reads a plan.json",
                                     expected="planner export focus PATH/plan.json --out FILE.csv"))
        from planner.cli.common import refuse_overwriting_inputs

        refuse_overwriting_inputs({"--out": out_dir}, {"PLAN_JSON": model, **{n: Path(model).with_name(n) for n in
                                                                     ("fleet.csv", "plan.xlsx", "allocation.csv")}})
        path, rows = write_focus(model, out_dir, granularity=granularity, provider=provider,
                                 billing_account=billing_account, sub_account=sub_account,
                                 focus10_names=focus10_names)
        click.echo(f"wrote {path} ({rows} FOCUS 1.2 rows)")
        return
    from planner.export import write_export
    from planner.api import quota_result

    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(Problem("--out", "is a file", value=str(out_dir), expected="a folder for the manifests"))
    model = model or default_model("quotas")
    result = quota_result(model, plan_file, total_gpus, percentile, gamer, inflate, solver)
    for path in write_export(kind, result, out_dir, budget_slack=budget_slack):
        click.echo(f"wrote {path}")


@cli.command()
@model_argument
@out_option("pooling.json and pooling.xlsx", "-pooling")
@solve_options
@json_option
@handle_errors
def pooling(model, out_dir, solver, time_limit, mip_gap, as_json):
    """Separate pools, or one pool where training backfills what inference leaves idle?

    Plans MODEL twice: the classes with priority (no backfill) and the backfill classes each on a
    fleet of their own, and all together with backfill preempted when the priority classes need their
    GPUs back. Prints both costs, the inference latency, what training loses, and a recommendation.
    Purchases are judged as `planner plan` judges them: over their whole term by default ([term]).

    Example:

    \b
        planner pooling models/pooling.toml --out outputs/pooling
    """
    from planner.pipeline.run import default_out_dir, load_inputs, make_plan
    from planner.pipeline.whole_term import plan_over_term
    from planner.pooling import compare_pooling
    from planner.report.pooling_report import pooling_dict, pooling_text, write_pooling

    if model is None:
        model = default_model("pooling")
    inp = load_inputs(model)
    # each arrangement's purchases judged as `planner plan` judges them (over their whole term by default)
    result = compare_pooling(inp, lambda i: plan_over_term(i, make_plan, backend=solver, time_limit_s=time_limit,
                                                           mip_gap=mip_gap, risk=False))
    bad = [p for p in result.separate + [result.pooled] if not p.status.has_plan]
    if bad:
        click.secho(f"Error: a plan could not be solved: {bad[0].solve.message}", fg="red", err=True)
        sys.exit(EXIT_ERROR)
    paths = write_pooling(result, out_dir or default_out_dir(inp.config, "-pooling"))
    if as_json:
        click.echo(json.dumps(pooling_dict(result), indent=2))
    else:
        click.echo(pooling_text(result))
        click.echo(f"wrote {paths['json']} and {paths['xlsx']}")
    proven = all(p.status.proven and p.demand_met for p in result.separate + [result.pooled])
    sys.exit(EXIT_OK if proven else EXIT_NOT_MET)


