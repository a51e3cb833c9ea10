"""docs/api.md is executed: every ```python block, in order, in one namespace, from the repository root."""

from __future__ import annotations

import os
import re

import pytest

from conftest import ROOT


def _blocks() -> list[str]:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.slow
def test_the_api_walkthrough_runs_as_written(capsys):
    blocks = _blocks()
    assert len(blocks) >= 5
    namespace: dict = {"__name__": "docs_api"}
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for i, code in enumerate(blocks):
            try:
                exec(compile(code, f"docs/api.md block {i + 1}", "exec"), namespace)
            except Exception as exc:  # name the block that broke
                pytest.fail(f"docs/api.md block {i + 1} failed: {type(exc).__name__}: {exc}")
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "<Plan 'example-q1-2027': optimal" in out
    assert "not a number (got 'ten')" in out
    assert namespace["capped"].purchases["instances"].sum() <= 10
