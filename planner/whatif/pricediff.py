"""What changed between two price sheets: rows added, rows removed, and prices moved by how much.

Sheets are compared after validation (option names normalised, defaults such as
``term_months`` filled), so ``Reserved-1Y`` and ``reserved_1y`` are the same row
and a blank ``upfront_usd`` equals 0. A row is identified by
``(gpu_type, region, option)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from planner.core.units import effective_rate
from planner.inputs import commitments

KEY = ("gpu_type", "region", "option")
FIELDS = ("hourly_usd", "upfront_usd", "term_months", "max_gpus", "interruptions_per_hour", "gpus_per_instance")
DERIVED = "effective_usd_per_gpu_hour"  # reserved only: hourly + upfront / (term x 730)


def _num(x) -> float | None:
    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _effective(row) -> float | None:
    if commitments.kind_of_name(str(row["option"])) not in commitments.COMMITMENT_KINDS:
        return None
    h, u, t = _num(row.get("hourly_usd")), _num(row.get("upfront_usd")) or 0.0, _num(row.get("term_months"))
    if h is None or not t:
        return None
    return effective_rate(h, u, t)


@dataclass
class PriceDiff:
    """Rows added and removed (whole rows) and one entry per field that moved in a row present in both."""

    added: list[dict] = field(default_factory=list)
    removed: list[dict] = field(default_factory=list)
    changed: list[dict] = field(default_factory=list)  # gpu_type, region, option, field, old, new, delta, delta_pct

    @property
    def empty(self) -> bool:
        """True when the two price sheets agree on every row."""
        return not (self.added or self.removed or self.changed)

    def to_dict(self) -> dict:
        """The differences as plain data (comparison.json)."""
        return {"added": self.added, "removed": self.removed, "changed": self.changed}

    def summary(self, limit: int = 4) -> str:
        """One line for the terminal: counts, then the largest moves."""
        if self.empty:
            return "no price changes"
        parts = []
        if self.changed:
            rows = {tuple(c[k] for k in KEY) for c in self.changed}
            parts.append(f"{len(rows)} row{'s' if len(rows) != 1 else ''} changed")
        if self.added:
            parts.append(f"{len(self.added)} added")
        if self.removed:
            parts.append(f"{len(self.removed)} removed")
        moves = sorted((c for c in self.changed if c["field"] != DERIVED),
                       key=lambda c: -abs(c["delta_pct"] if c["delta_pct"] is not None else 0.0))
        shown = [f"{c['gpu_type']}/{c['region']} {c['option']} {c['field']} {_show(c['old'])} -> {_show(c['new'])}"
                 + (f" ({c['delta_pct']:+.1f} %)" if c["delta_pct"] is not None else "")
                 for c in moves[:limit]]
        more = len(moves) - limit
        return ", ".join(parts) + (": " + "; ".join(shown) if shown else "") + (f"; and {more} more" if more > 0 else "")


def _show(x) -> str:
    return "blank" if x is None else f"{x:g}"


def _rows(df: pd.DataFrame) -> dict[tuple, dict]:
    """Price rows by (gpu_type, region, option), a capacity block's window start and length, a dated price's
    ``valid_from`` and a scenario's name appended to its option (two rows of one pool differ only there; a moved
    window or date is a removed and an added row)."""
    out = {}
    for rec in df.to_dict("records"):
        key = [str(rec[k]) for k in KEY]
        start = rec.get("block_start")
        if start is not None and not pd.isna(start):
            key[2] += f" {pd.Timestamp(start):%Y-%m-%dT%H:%M} {float(rec.get('block_days') or 0):g}d"
        since = rec.get("valid_from")
        if since is not None and not pd.isna(since):  # a dated price (forward curve): its own row
            key[2] += f" from {pd.Timestamp(since):%Y-%m-%d}"
        if rec.get("scenario"):  # a scenario's price path
            key[2] += f" [{rec['scenario']}]"
        out[tuple(key)] = rec
    return out


def _row_dict(rec: dict) -> dict:
    out = dict(zip(KEY, next(iter(_rows(pd.DataFrame([rec]))))))
    for f in FIELDS:
        out[f] = _num(rec.get(f))
    out[DERIVED] = _effective(rec)
    if "row" in rec and _num(rec["row"]) is not None:
        out["row"] = int(rec["row"])
    return out


def diff_prices(old: pd.DataFrame, new: pd.DataFrame) -> PriceDiff:
    """Compare two validated price tables (``PlanInputs.tables.prices``); rows sorted by pool and option."""
    a, b = _rows(old), _rows(new)
    diff = PriceDiff()
    for key in sorted(b.keys() - a.keys()):
        diff.added.append(_row_dict(b[key]))
    for key in sorted(a.keys() - b.keys()):
        diff.removed.append(_row_dict(a[key]))
    for key in sorted(a.keys() & b.keys()):
        ra, rb = a[key], b[key]
        moved = False
        for f in FIELDS:
            x, y = _num(ra.get(f)), _num(rb.get(f))
            if x == y or (x is not None and y is not None and math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12)):
                continue
            moved = True
            diff.changed.append(_change(key, f, x, y, rb))
        if moved:
            x, y = _effective(ra), _effective(rb)
            if x is not None and y is not None and not math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12):
                diff.changed.append(_change(key, DERIVED, x, y, rb))
    return diff


def _change(key: tuple, f: str, x: float | None, y: float | None, rec: dict) -> dict:
    delta = y - x if x is not None and y is not None else None
    pct = 100.0 * delta / x if delta is not None and x else None
    out = dict(zip(KEY, key)) | {"field": f, "old": x, "new": y, "delta": delta, "delta_pct": pct}
    if "row" in rec and _num(rec["row"]) is not None:
        out["row"] = int(rec["row"])
    return out


def read_price_sheet(path: str | Path) -> pd.DataFrame:
    """Read and validate one price sheet on its own (raises InputError naming file, row and column)."""
    from planner.inputs import io
    from planner.core.errors import Collector
    from planner.inputs.validate import validate_prices

    raw = io.read_table(Path(path), "price sheet")
    bad = Collector()
    prices = validate_prices(raw, bad)
    bad.raise_if_any()
    return prices


def diff_price_files(old: str | Path, new: str | Path) -> PriceDiff:
    """The differences between two price-sheet files (read and validated)."""
    return diff_prices(read_price_sheet(old), read_price_sheet(new))
