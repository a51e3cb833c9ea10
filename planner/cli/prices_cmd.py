"""``planner prices import``: a cloud's price catalog -> a price sheet the planner validates (docs/imports.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from planner.cli.group import cli
from planner.cli.common import Finite, handle_errors, quiet_option, refuse_overwriting_inputs


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(t.strip() for t in (text or "").split(",") if t.strip())


@cli.group()
def prices():
    """Price sheets: import a cloud's catalog (docs/imports.md).

    Example:

    \b
        planner prices import --from skypilot vms.csv --regions eastus --out prices.csv
    """


@prices.command(name="import")
@click.option("--from", "fmt", required=True,
              type=click.Choice(["skypilot", "wide", "aws-pricelist", "azure-retail", "gcp-skus"]),
              help="Format of the FILEs.")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="Price sheet to write (CSV); its provenance note goes beside it as OUT.notes.md.")
@click.option("--regions", default=None, metavar="R1,R2", help="Keep only these regions.")
@click.option("--gpu-types", default=None, metavar="T1,T2", help="Keep only these GPU types (planner names).")
@click.option("--instance-types", default=None, metavar="I1,I2", help="Keep only these instance types.")
@click.option("--pick", type=click.Choice(["largest", "smallest", "cheapest"]), default="largest", show_default=True,
              help="Which instance type prices a pool sold as several: most GPUs, fewest, or cheapest per GPU.")
@click.option("--zones", type=click.Choice(["median", "min", "max"]), default="median", show_default=True,
              help="skypilot (AWS/GCP catalogs): how a region's availability-zone prices collapse to one.")
@click.option("--interruption-rule", type=click.Choice(["low", "mid", "high"]), default="mid", show_default=True,
              help="AWS Spot Advisor bucket -> % interrupted a month (<5% -> 0/2.5/5, ..., >20% -> 20/30/50), / 730 h.")
@click.option("--spot-interruptions-per-hour", type=Finite(0, 100), default=None,
              help="Interruptions per instance-hour for spot rows whose source publishes none.")
@click.option("--ri-class", type=click.Choice(["standard", "convertible", "all"]), default="standard",
              show_default=True, help="aws-pricelist: which Reserved Instance offering classes.")
@click.option("--payment", default="all_upfront,partial_upfront,no_upfront", show_default=True,
              help="Payment options kept (aws-pricelist, azure-retail).")
@click.option("--catalog", type=click.Path(path_type=Path), default=None,
              help="azure-retail: a SkyPilot Azure catalog giving each VM size's GPUs (else the built-in table).")
@click.option("--vm-hourly-usd-per-gpu", type=Finite(0, 1e5), default=0.0, show_default=True,
              help="gcp-skus: the VM's vCPU/RAM price per GPU-hour, added to every row (GPU SKUs price the GPU alone).")
@click.option("--all-locations", is_flag=True, help="wide: keep Local/Wavelength zones too (default: regions only).")
@click.option("--fx", "fx", multiple=True, metavar="CUR=RATE",
              help="azure-retail, gcp-skus: convert prices in CUR at RATE USD per unit of CUR (repeatable), "
                   "e.g. --fx JPY=0.0067; without it a non-USD price exits 2.")
@quiet_option
@handle_errors
def import_cmd(fmt, files, out, regions, gpu_types, instance_types, pick, zones, interruption_rule,
               spot_interruptions_per_hour, ri_class, payment, catalog, vm_hourly_usd_per_gpu, all_locations, fx, quiet):
    """Write a price sheet from a cloud's price catalog FILEs, every assumption in OUT.notes.md and on stderr.

    Example:

    \b
        planner prices import --from wide ../shared/data/real/prices_gcp.csv --regions us-central1 --out prices.csv
        planner prices import --from skypilot vms.csv --gpu-types H100-80GB,A100-80GB --out prices.csv
    """
    from planner.core.errors import InputError, Problem
    from planner.imports.catalog import PAYMENTS, ImportOptions, import_prices
    from planner.imports.catalog_write import note_replaces, notes_path, summary, write
    from planner.imports.guards import parse_fx, refuse_folders

    inputs = {f"FILE {f}": f for f in files}
    inputs["--catalog"] = catalog
    refuse_folders({"--out": out, "--out's note": notes_path(out)})
    refuse_overwriting_inputs({"--out": out, "--out's note": notes_path(out)}, inputs)
    replaces_note = note_replaces(out)
    payments = _names(payment)
    wrong = [p for p in payments if p not in PAYMENTS]
    if wrong or not payments:
        raise InputError([Problem("--payment", "unknown payment option", value=w, expected=", ".join(PAYMENTS))
                          for w in wrong or ["(none)"]])
    opts = ImportOptions(regions=_names(regions), gpu_types=_names(gpu_types), instance_types=_names(instance_types),
                         pick=pick, zones=zones, interruption_rule=interruption_rule,
                         spot_interruptions_per_hour=spot_interruptions_per_hour, ri_class=ri_class,
                         payments=payments, catalog=catalog, vm_hourly_usd_per_gpu=vm_hourly_usd_per_gpu,
                         all_locations=all_locations, fx=parse_fx(fx))
    result = import_prices(fmt, files, opts)
    command = "planner " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    sheet, note = write(result, out, command)
    if replaces_note and not quiet:
        click.echo(f"replaced the previous note {note} (written by an earlier import)", err=True)
    if not quiet:
        click.echo(summary(result), err=True)
        click.echo(f"wrote {sheet} and {note}")
