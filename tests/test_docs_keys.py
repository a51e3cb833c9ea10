"""Every model-file key the config accepts and every input column is documented in docs/inputs.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.inputs import config
from planner.inputs import schema

DOC = (Path(__file__).resolve().parent.parent / "docs" / "inputs.md").read_text(encoding="utf-8")

KEY_TABLES = {"top level": config._TOP_KEYS, "[solver]": config._SOLVER_KEYS, "[classes.<name>]": config._CLASS_KEYS,
              "replicas": config._REPLICA_KEYS, "[commitments]": config._COMMITMENT_KEYS,
              "[budget]": config._BUDGET_KEYS, "[teams.<name>]": config._TEAM_KEYS,
              "[finance]": config._FINANCE_KEYS}


@pytest.mark.parametrize("table", list(KEY_TABLES))
def test_every_accepted_key_is_documented(table):
    missing = [k for k in KEY_TABLES[table] if f"`{k}`" not in DOC and f"`[{k}" not in DOC]
    assert not missing, f"{table} keys accepted by planner/inputs/config.py but not in docs/inputs.md: {missing}"


@pytest.mark.parametrize("name", ["DEMAND", "PRICES", "INVENTORY"])
def test_every_input_column_is_in_its_table(name):
    rows = [c.name for c in getattr(schema, name)]
    missing = [c for c in rows if f"| `{c}` |" not in DOC]
    assert not missing, f"{name} columns not in a docs/inputs.md table row: {missing}"
