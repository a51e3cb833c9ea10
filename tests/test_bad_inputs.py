"""A catalogue of bad inputs: every one must end in a clear message and exit 2, never a traceback.

Layout of ``tests/bad_inputs/``:

- ``base/`` is a small, valid model (model.toml, demand.csv, prices.csv, inventory.csv).
- Every other folder is one case. It holds only the files that differ from ``base/``; the test
  copies ``base/`` into a temporary folder, then lays the case's files over it, so the relative
  paths in model.toml keep working. Control files, not copied:

  - ``expected.txt``: lines that must each appear verbatim in the CLI output (from the file name
    on, never the temporary folder).
  - ``xfail.txt`` (optional): the planner is known to get this case wrong; the text is the reason
    (what it does today). The case is a strict xfail until planner/ is fixed.
  - ``model_path.txt`` (optional): the model path to pass instead of model.toml, relative to the
    temporary folder (a missing file, a directory...).
  - ``unreadable.txt`` (optional): a file to ``chmod 000`` after copying (skipped as root, who can
    read it anyway).

- A case whose name ends in ``_valid`` is an awkward but valid input: validate must exit 0 and
  plan must write a plan.

Each case runs both ``planner validate MODEL`` and ``planner plan MODEL --out DIR`` in-process.
A bad case must exit 2 with every expected line in the output and must not create DIR.
"""

from __future__ import annotations

import filecmp
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import cli

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = Path(__file__).resolve().parent / "bad_inputs"
BASE = CATALOGUE / "base"
CONTROL_FILES = {"expected.txt", "xfail.txt", "model_path.txt", "unreadable.txt"}

CASES = sorted(p.name for p in CATALOGUE.iterdir() if p.is_dir() and p.name != "base")
VALID_CASES = [c for c in CASES if c.endswith("_valid")]
BAD_CASES = [c for c in CASES if not c.endswith("_valid")]
KNOWN_WRONG = [c for c in CASES if (CATALOGUE / c / "xfail.txt").exists()]
MIN_BAD_CASES = 40
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _param(name: str):
    folder = CATALOGUE / name
    marks = []
    if (folder / "xfail.txt").exists():
        reason = (folder / "xfail.txt").read_text(encoding="utf-8").strip()
        marks.append(pytest.mark.xfail(strict=True, reason=reason))
    if (folder / "unreadable.txt").exists() and IS_ROOT:
        marks.append(pytest.mark.skip(reason="running as root: chmod 000 does not stop root reading the file"))
    if name.endswith("_valid"):  # whole valid workbooks and encodings: read in full, kept out of the quick loop
        marks.append(pytest.mark.slow)
    return pytest.param(name, marks=marks, id=name)


PARAMS = [_param(c) for c in CASES]


def _workspace(name: str, tmp_path: Path) -> Path:
    """Copy base/, overlay the case's files; return the model path to give the CLI."""
    work = tmp_path / "inputs"
    shutil.copytree(BASE, work)
    folder = CATALOGUE / name
    for src in sorted(folder.rglob("*")):
        rel = src.relative_to(folder)
        if src.is_dir() or rel.as_posix() in CONTROL_FILES:
            continue
        dst = work / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    model = work / "model.toml"
    if (folder / "model_path.txt").exists():
        model = work / (folder / "model_path.txt").read_text(encoding="utf-8").strip()
    if (folder / "unreadable.txt").exists():
        (work / (folder / "unreadable.txt").read_text(encoding="utf-8").strip()).chmod(0)
    return model


def _expected(name: str) -> list[str]:
    text = (CATALOGUE / name / "expected.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def _assert_no_crash(result) -> None:
    assert "Traceback" not in result.output, result.output
    assert "Internal error" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


def _assert_lines(name: str, output: str) -> None:
    missing = [line for line in _expected(name) if line not in output]
    assert not missing, f"expected lines not in the output: {missing}\n--- output:\n{output}"


# ---------------------------------------------------------------------------- the catalogue itself

def test_base_case_is_valid(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(cli, ["validate", "tests/bad_inputs/base/model.toml"])
    _assert_no_crash(result)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("OK: 'bad-inputs-base': 6 periods (6 h) x 3 classes x 4 pools"), result.output


@pytest.mark.parametrize("count", [len(BAD_CASES)], ids=[f"{len(BAD_CASES)}_bad_cases"])
def test_catalogue_size(count):
    print(f"\nbad-input catalogue: {count} bad cases, {len(VALID_CASES)} valid, "
          f"{len(KNOWN_WRONG)} known wrong (xfail)")
    assert count >= MIN_BAD_CASES, f"only {count} bad cases in {CATALOGUE}, want >= {MIN_BAD_CASES}"


@pytest.mark.parametrize("name", CASES)
def test_case_folder_is_well_formed(name):
    folder = CATALOGUE / name
    assert _expected(name), f"{name}/expected.txt is missing or empty"
    if name.endswith("_valid"):
        assert all(line.startswith("OK") for line in _expected(name)), "a _valid case expects the OK line"
    payload = [p for p in folder.rglob("*") if p.is_file() and p.relative_to(folder).as_posix() not in CONTROL_FILES]
    assert payload or (folder / "model_path.txt").exists() or (folder / "unreadable.txt").exists(), \
        f"{name} changes nothing"
    for p in payload:  # only the files that differ from base/
        twin = BASE / p.relative_to(folder)
        assert not (twin.is_file() and filecmp.cmp(p, twin, shallow=False)), f"{p} is a copy of {twin}"


# ---------------------------------------------------------------------------- the CLI on each case

@pytest.mark.parametrize("name", PARAMS)
def test_validate(name, tmp_path):
    model = _workspace(name, tmp_path)
    result = CliRunner().invoke(cli, ["validate", str(model)])
    _assert_no_crash(result)
    assert result.exit_code == (0 if name in VALID_CASES else 2), result.output
    _assert_lines(name, result.output)


@pytest.mark.slow
@pytest.mark.parametrize("name", PARAMS)
def test_plan(name, tmp_path):
    model = _workspace(name, tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["plan", str(model), "--out", str(out)])
    _assert_no_crash(result)
    if name in VALID_CASES:
        assert result.exit_code == 0, result.output
        assert (out / "plan.json").is_file() and (out / "plan.xlsx").is_file()
    else:
        assert result.exit_code == 2, result.output
        _assert_lines(name, result.output)
        assert not out.exists(), "plan wrote outputs for a bad input"
