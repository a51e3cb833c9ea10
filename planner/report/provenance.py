"""Where a plan came from: input files (paths relative to the working folder, sha256), model file, solver used, time.

One function for plan.json's ``inputs``/``solver``/``created_utc`` and the workbook's traceability rows,
so the two can never disagree.
"""

from __future__ import annotations

import os
from pathlib import Path

from planner.inputs.io import sha256_of
from planner.results.plan import Plan


def shown_path(path) -> str:
    """A path as users see it: relative to the working folder (``../`` allowed), never absolute when avoidable."""
    if path is None:
        return ""
    p = Path(path)
    try:
        return Path(os.path.relpath(p.resolve(), Path.cwd())).as_posix()
    except ValueError:  # another drive (Windows): only the name is portable
        return p.name


def provenance(plan: Plan) -> dict:
    """``{"files": [{"role", "path", "sha256"}], "solver": {...used}, "created_utc", "run_id"}``."""
    inp = plan.inputs
    cfg = inp.config
    files = []
    if cfg.path is not None and Path(cfg.path).is_file():
        files.append({"role": "model", "path": shown_path(cfg.path), "sha256": sha256_of(Path(cfg.path))})
    for role, src in inp.tables.sources.items():
        path = src.get("path") or ""
        files.append({"role": role, "path": shown_path(path) if path and Path(path).is_file() else path,
                      "sha256": src.get("sha256", "")})
    s = plan.solve
    solver = {"backend": s.backend,
              "time_limit_s": cfg.solver.time_limit_s if s.time_limit_s is None else s.time_limit_s,
              "mip_gap_limit": cfg.solver.mip_gap if s.mip_gap_limit is None else s.mip_gap_limit,
              "model_file_backend": cfg.solver.backend, "model_file_time_limit_s": cfg.solver.time_limit_s,
              "model_file_mip_gap": cfg.solver.mip_gap}
    return {"files": files, "solver": solver, "created_utc": plan.created_utc, "run_id": plan.run_id}
