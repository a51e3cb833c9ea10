"""A quota policy in other systems' formats: Kueue and Volcano manifests, Slurm accounting commands."""

from pathlib import Path


def write_export(kind: str, result, out_dir: Path, budget_slack: float | None = None) -> list[Path]:
    """Write the ``kind`` (kueue, volcano, slurm) files into ``out_dir`` atomically; returns their paths.

    ``budget_slack`` (slurm): GPU-hour budgets (``GrpTRESMins``) at that multiple of each team's GPU-hours,
    and ``budgets.csv``, their replay (:mod:`planner.quotas.budgets`)."""
    import yaml

    from planner.core.atomic import atomic_path
    from planner.export import kueue, slurm, volcano

    out_dir = Path(out_dir)
    if kind == "slurm":
        budgets = None
        if budget_slack is not None:
            from planner.quotas.budgets import budget_table

            budgets = budget_table(result, budget_slack)
        texts = slurm.files(result, budgets)
        if budgets is not None:
            texts["budgets.csv"] = budgets.to_csv(index=False, float_format="%.10g")
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
