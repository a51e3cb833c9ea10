"""Write outputs so that a failed or interrupted run never leaves a partial file.

Every file is written to a temporary name in the destination folder, flushed
and fsynced, then renamed over the old file in one step (``os.replace``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside ``path``; rename it into place on success, delete it on failure."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual permissions
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_workbook_and_json(wb, xlsx_path: str | Path, json_path: str | Path, text: str) -> None:
    """Save openpyxl workbook ``wb`` and ``text`` (JSON) atomically: both are complete, or the old ones stay."""
    with atomic_path(xlsx_path) as tmp_x:
        wb.save(tmp_x)
        with atomic_path(json_path) as tmp_j:
            tmp_j.write_text(text, encoding="utf-8")


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
