"""A quota policy in other systems' formats: Kueue and Volcano manifests, Slurm accounting commands."""

from pathlib import Path


def write_export(kind: str, result, out_dir: Path) -> list[Path]:
    """Write the ``kind`` (kueue, volcano, slurm) files into ``out_dir`` atomically; returns their paths."""
    import yaml

    from ..atomic import atomic_path
    from . import kueue, slurm, volcano

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
