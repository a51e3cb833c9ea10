"""``planner quotas`` and ``planner export``: load, build the team demand, analyse, write. No modelling here."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .errors import ConfigError, Problem


def quota_result(model, plan_file=None, total_gpus=None, percentile=50.0, gamer=None, inflate=1.5, solver=None):
    """The QuotaResult for ``model``: on ``total_gpus`` GPUs, on a plan.json's purchases, or on a fresh plan."""
    from .pipeline import load_inputs, make_plan
    from .quotas.build import from_plan, from_total
    from .quotas.run import analyse

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
            from .evaluate import read_plan_purchases

            fixed = read_plan_purchases(plan_file, inp)
        plan = make_plan(inp, backend=solver, fixed_reserved=fixed, risk=False)
        if plan.status.value not in ("optimal", "feasible"):
            raise ConfigError(Problem(str(plan_file or model), "no plan to take the fleet from",
                                      value=plan.status.value, hint="use --total-gpus N"))
        data = from_plan(plan)
    if not len(data.flavors):
        raise ConfigError(Problem(str(model), "the fleet has no GPUs to share", hint="use --total-gpus N"))
    guaranteed = int(data.flavors.loc[~data.flavors["preemptible"].astype(bool), "capacity_gpus"].sum())
    if data.floors.sum() > guaranteed:
        raise ConfigError(Problem(str(model), "the teams' guaranteed_gpus add up to more than the fleet",
                                  value=f"{data.floors.sum():g} GPUs guaranteed",
                                  expected=f"at most {guaranteed:,} (the GPUs that are not preemptible)",
                                  hint="lower [teams.<name>] guaranteed_gpus or share more GPUs"))
    return analyse(data, percentile=percentile, gamer=gamer, inflate=inflate)


def write_export(kind: str, result, out_dir: Path) -> list[Path]:
    """Write the ``kind`` (kueue, volcano, slurm) files into ``out_dir`` atomically; returns their paths."""
    import yaml

    from .atomic import atomic_path
    from .export import kueue, slurm, volcano

    out_dir = Path(out_dir)
    if kind == "slurm":
        texts = slurm.files(result)
    else:
        docs = (kueue if kind == "kueue" else volcano).manifests(result)
        texts = {name: yaml.safe_dump_all(objs, sort_keys=False, explicit_start=True) for name, objs in docs.items()}
    paths = []
    for name, text in texts.items():
        path = out_dir / name
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def echo_json(doc: dict) -> None:
    click.echo(json.dumps(doc, indent=2))
