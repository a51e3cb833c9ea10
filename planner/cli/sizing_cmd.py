"""``planner spares`` and ``planner serving``: spares for a gang job, LLM replicas sized in tokens."""

from __future__ import annotations

import json
from pathlib import Path

import click

from planner.sizing import spares as sp
from planner.core.errors import ConfigError, Problem
from planner.cli.group import cli
from planner.cli.common import Finite, handle_errors, json_option


@cli.command()
@click.option("--gpus", type=Finite(min=1, max=1e8), required=True, help="GPUs the gang job spans.")
@click.option("--gpus-per-instance", type=click.IntRange(min=1, max=1024), required=True)
@click.option("--gpu-mtbf-hours", type=Finite(min=1, max=1e9), default=None,
              help="Mean time between failures of one GPU, hours (an instance of K GPUs fails K x as often).")
@click.option("--mtbi-table", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="CSV of job MTBI by job size (columns gpus, mtbi_hours), interpolated log-log "
                   "(instead of --gpu-mtbf-hours).")
@click.option("--repair-hours", type=Finite(min=0, max=8760), required=True, help="Hours a failed instance is out.")
@click.option("--target", type=Finite(0, 1, min_open=True, max_open=True), required=True,
              help="Probability that the gang is whole (at most the spares are down).")
@click.option("--price", type=Finite(min=0), default=None, help="USD per GPU-hour of the spares.")
@click.option("--checkpoint-minutes", type=Finite(min=0), default=None, help="Time to write one checkpoint.")
@click.option("--restart-minutes", type=Finite(min=0), default=None, help="Time to restart after a failure.")
@click.option("--swap-minutes", type=Finite(min=0), default=0.0, show_default=True,
              help="Time to swap a failed instance for a spare (added to the restart with spares).")
@json_option
@handle_errors
def spares(gpus, gpus_per_instance, gpu_mtbf_hours, mtbi_table, repair_hours, target, price,
           checkpoint_minutes, restart_minutes, swap_minutes, as_json):
    """Spare instances that keep a gang job whole with probability --target.

    Instances down at any time are Poisson with mean instances x repair / MTBF
    per instance (an M/G/inf queue); the spares are its --target quantile.

    Example: a 16,384-GPU gang on 8-GPU instances, GPU MTBF 50,000 h, 48 h repairs:

    \b
        planner spares --gpus 16384 --gpus-per-instance 8 --gpu-mtbf-hours 50000 \\
            --repair-hours 48 --target 0.999 --price 2.5 \\
            --checkpoint-minutes 5 --restart-minutes 20
    """
    if (gpu_mtbf_hours is None) == (mtbi_table is None):
        raise ConfigError(Problem("command line", "give exactly one of --gpu-mtbf-hours and --mtbi-table"))
    if (checkpoint_minutes is None) != (restart_minutes is None):
        raise ConfigError(Problem("command line", "goodput needs both --checkpoint-minutes and --restart-minutes"))
    job_mtbi = None
    if mtbi_table is not None:
        g, h = sp.read_mtbi_table(mtbi_table)
        job_mtbi = sp.job_mtbi_from_table(gpus, g, h)
    res = sp.size_spares(gpus, gpus_per_instance, repair_hours, target, gpu_mtbf_hours=gpu_mtbf_hours,
                         job_mtbi_hours=job_mtbi, price_per_gpu_hour=price,
                         checkpoint_minutes=checkpoint_minutes, restart_minutes=restart_minutes,
                         swap_minutes=swap_minutes)
    doc = res.as_dict()
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"  {res.instances:,} instances of {gpus_per_instance} GPUs, job MTBI "
               f"{doc['job_mtbi_hours']:.3g} h, repair {repair_hours:g} h")
    click.echo(f"  mean instances down              {res.mean_down_instances:.4g}")
    click.echo(f"  spare instances for P >= {target:g}   {res.spare_instances}  "
               f"({doc['spare_gpus']:,} GPUs)")
    for k, p in res.probability_by_count.items():
        click.echo(f"    P(at most {k:>4} down)            {p:.6f}")
    if res.cost_usd_per_hour is not None:
        click.echo(f"  spares cost                      ${res.cost_usd_per_hour:,.2f}/h")
    if res.goodput_with_spares is not None:
        click.echo(f"  goodput with spares              {res.goodput_with_spares:.4f}")
        click.echo(f"  goodput without spares           {res.goodput_without_spares:.4f}  "
                   f"(the gang waits for each repair)")


@cli.command()
@click.argument("profile", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--requests-per-s", type=Finite(min=0, max=1e6), default=None,
              help="Override the profile's arrival rate (0 to 1e6 requests per second).")
@json_option
@handle_errors
def serving(profile, requests_per_s, as_json):
    """LLM replicas sized in tokens: each size bucket on its cheapest GPU type within the SLOs.

    PROFILE is a TOML file with [service] (requests_per_s, ttft_ms, tpot_ms,
    percentile), [[buckets]] (name, share, input_tokens, output_tokens) and
    [[gpus]] (name, price_per_gpu_hour, memory_gb, weights_gb,
    kv_bytes_per_token, prefill_tokens_per_s, decode_t0_ms, decode_t1_ms,
    gpus_per_replica); see docs/slo-and-pooling.md.

    Example:

    \b
        planner serving data/serving/llama-70b.toml
    """
    import dataclasses
    import math

    from planner.sizing import serving as sv

    service, gpus = sv.read_profile(profile)
    if requests_per_s is not None:
        service = dataclasses.replace(service, requests_per_s=requests_per_s)
        sv.check_load(service, gpus, "--requests-per-s")
    res = sv.plan(service, gpus)
    if as_json:
        def rows(df):
            return [{k: (None if isinstance(v, float) and not math.isfinite(v) else
                         (v.item() if hasattr(v, "item") else v)) for k, v in r.items()}
                    for r in df.to_dict("records")]
        singles = {k: (v if math.isfinite(v) else None) for k, v in res["single_type_usd_per_hour"].items()}
        click.echo(json.dumps({"service": res["service"], "requests_per_s": service.requests_per_s,
                               "chosen": rows(res["chosen"]), "table": rows(res["table"]),
                               "mix_usd_per_hour": res["mix_usd_per_hour"],
                               "single_type_usd_per_hour": singles,
                               "best_single_type": res["best_single_type"],
                               "saving_vs_best_single": res["saving_vs_best_single"],
                               "gpus_by_type": {k: int(v) for k, v in res["gpus_by_type"].items()}}, indent=2))
        return
    click.echo(f"  {service.name}: {service.requests_per_s:g} requests/s, TTFT p{service.percentile:g} <= "
               f"{service.ttft_ms:g} ms, TPOT <= {service.tpot_ms:g} ms")
    head = ("bucket", "GPU type", "batch", "TPOT ms", "slots", "replicas", "GPUs", "USD/h", "P(TTFT>SLO)")
    click.echo("  " + "  ".join(f"{h:>11}" for h in head))
    for r in res["table"].itertuples():
        if not r.feasible:
            click.echo(f"  {r.bucket:>11}  {r.gpu_type:>11}  cannot meet the SLOs (batch by memory "
                       f"{r.batch_by_memory}, by TPOT {r.batch_by_tpot}, prefill {r.prefill_s:.2f} s)")
            continue
        click.echo(f"  {r.bucket:>11}  {r.gpu_type:>11}  {r.batch:>11d}  {r.tpot_ms:>11.1f}  {r.slots:>11d}  "
                   f"{r.replicas:>11d}  {r.gpus:>11d}  {r.usd_per_hour:>11.2f}  {r.p_ttft_above_slo:>11.4f}")
    click.echo("  cheapest type per bucket:")
    for r in res["chosen"].itertuples():
        what = (f"{r.gpu_type}: {r.replicas} replicas, {r.gpus} GPUs, ${r.usd_per_hour:,.2f}/h" if r.feasible
                else "no GPU type meets the SLOs")
        click.echo(f"    {r.bucket:<12} {what}")
    click.echo(f"  mix ${res['mix_usd_per_hour']:,.2f}/h; one type for everything:")
    for k, v in res["single_type_usd_per_hour"].items():
        click.echo(f"    {k:<12} " + (f"${v:,.2f}/h" if math.isfinite(v) else "cannot serve every bucket"))
