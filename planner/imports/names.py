"""Class names taken from users' files (bill tags, metric labels): refused at import when the planner would
refuse them later, so a history the import writes always plans."""

from __future__ import annotations

import json

import pandas as pd

from ..config import RESERVED_NAMES, _invisible
from ..errors import InputError, Problem


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a workload class, or None when it can."""
    if not name.strip():
        return "is empty or blank"
    if any(ord(ch) < 32 or _invisible(ch) for ch in name):
        return "has a control character (a newline, NUL, tab, bidi override...)"
    if name.strip().lower() in RESERVED_NAMES:
        return "is a column name of the demand file"
    if name.lstrip()[:1] in "{[":
        try:
            json.loads(name)
        except ValueError:
            return None
        return "is a JSON object or list, not a name (a tag's value should be text)"
    return None


def check_class_names(names: pd.Series, rows: pd.Series, file: str, column: str) -> None:
    """InputError (exit 2) naming the first rows whose class name (``names``, one per row, NaN skipped) cannot be
    a workload class; ``rows``: the row numbers as the user's file numbers them (or JSON paths)."""
    uniq = pd.Series(names.dropna().unique())
    why = dict(zip(uniq, uniq.map(name_problem)))
    bad = names.map(why).notna() & names.notna()
    if bad.any():
        raise InputError([Problem(file, f"class name {why[n]}", row=r if isinstance(r, int) else None,
                                  column=column if isinstance(r, int) else f"{r}",
                                  value=repr(n), expected="printable text naming a workload class")
                          for r, n in zip(rows[bad].head(20).tolist(), names[bad].head(20).tolist())])
