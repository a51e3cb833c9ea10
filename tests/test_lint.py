"""The code stays clean under the ruff configuration in pyproject.toml (issue 33): run as part of the suite."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff")
    cmd = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    try:
        r = subprocess.run([*cmd, "check", "--no-cache", str(ROOT / "planner"), str(ROOT / "tests"),
                            str(ROOT / "benchmarks")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    except FileNotFoundError:
        pytest.skip("ruff not installed (pip install -e '.[test]')")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
