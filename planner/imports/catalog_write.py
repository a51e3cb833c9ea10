"""Publishing an imported price sheet: checked by the planner's own validation, written atomically with its
provenance note (``<out>.notes.md``: the price sheet has no column for sources or assumptions)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from planner.core.csvsafe import inert_frame
from planner.core.errors import Collector, InputError, Problem
from planner.inputs.io import read_table
from planner.inputs.validate import validate_prices
from planner.imports.catalog import ImportResult
from planner.imports.guards import publish

NOTE_HEAD = "# Provenance of "

SIZES_HEADING = "## GPUs of every instance type read"


def notes_path(out: str | Path) -> Path:
    """Where the provenance note of price sheet ``out`` goes: beside it, ``<name>.notes.md``."""
    out = Path(out)
    return out.with_name(out.name + ".notes.md")


def sheet_text(result: ImportResult) -> str:
    """The price sheet as CSV text (blank cells for missing values, prices to 10 significant digits)."""
    return inert_frame(result.prices).to_csv(index=False, float_format="%.10g", lineterminator="\n")


def notes_text(result: ImportResult, out: str | Path, command: str = "") -> str:
    """The provenance note: the command, the files read (sha256), every assumption, and a table of each
    sheet row's instance type, source rows and basis (the row numbers are those of the sheet)."""
    lines = [f"# Provenance of {Path(out).name}", "",
             f"Written by `planner prices import --from {result.fmt}` at {result.made_at}."
             + (f" Command: `{command}`" if command else ""), "", "## Files read", ""]
    lines += [f"- `{p}` (sha256 `{h}`)" for p, h in result.inputs]
    lines += ["", "## Assumptions and rules", ""] + [f"- {n}" for n in result.notes]
    lines += ["", "## Rows", "", "| row | gpu_type | region | option | instance_type | gpus_per_instance | source | basis |",
              "|---|---|---|---|---|---|---|---|"]
    p = result.provenance.reset_index(drop=True)
    body = ("| " + (p.index + 2).astype(str) + " | " + p["gpu_type"] + " | " + p["region"] + " | " + p["option"]
            + " | " + p["instance_type"] + " | " + p["gpus_per_instance"].map("{:g}".format) + " | "
            + p["source"].str.replace("|", "/") + " | " + p["basis"].str.replace("|", "/") + " |")
    sizes = result.instance_sizes
    tail = ["", SIZES_HEADING, "",
            "The GPUs of each instance type the files price, kept in the sheet or not: `planner history import` "
            "sizes a bill's instances from this table (the price per GPU is the pool's).", "",
            "| instance_type | gpu_type | gpus_per_instance | in the sheet |", "|---|---|---|---|"]
    tail += [f"| {i} | {g} | {n:g} | {'yes' if k else 'no'} |"
             for i, g, n, k in sizes[["instance_type", "gpu_type", "gpus_per_instance", "in_sheet"]]
             .itertuples(index=False)]
    return "\n".join(lines + body.tolist() + tail) + "\n"


def check(path: Path, shown_as: str) -> None:
    """Run the planner's price-sheet validation on ``path``; exit 2 (naming ``shown_as``) if it fails."""
    import dataclasses

    bad = Collector()
    try:
        raw = read_table(path, "price sheet")
    except InputError as exc:  # name the sheet the user asked for, never our temporary file
        raise InputError([dataclasses.replace(p, file=shown_as) for p in exc.problems]) from None
    validate_prices(raw, bad)
    if bad:
        raise InputError([Problem(shown_as, "the imported sheet fails the planner's validation: " + p.message,
                                  row=p.row, column=p.column, value=p.value, expected=p.expected)
                          for p in bad.problems])


def note_replaces(out: str | Path) -> bool:
    """True when ``<out>.notes.md`` exists and is a note this command wrote (it will be replaced: say so);
    exit 2 when something else is there (a folder, a link, or a file that is not such a note: the user's)."""
    note = notes_path(out)
    if not note.exists() and not note.is_symlink():
        return False
    ours = note.is_file() and not note.is_symlink()
    if ours:
        with open(note, encoding="utf-8", errors="replace") as f:
            ours = f.read(len(NOTE_HEAD)) == NOTE_HEAD
    if not ours:
        raise InputError(Problem(str(note), "--out's note is there but is not a provenance note of `planner prices "
                                 "import`, so it is not replaced",
                                 expected="no file there, or one this command wrote (it starts with "
                                          f"'{NOTE_HEAD.strip()}'): move it, or give --out another name"))
    return True


def write(result: ImportResult, out: str | Path, command: str = "") -> tuple[Path, Path]:
    """Write the sheet to ``out`` and its note beside it, published together or not at all, the sheet validated
    first."""
    out = Path(out)
    note = notes_path(out)

    def sheet(tmp: Path) -> None:
        tmp.write_text(sheet_text(result), encoding="utf-8")
        check(tmp, str(out))

    publish({out: sheet, note: lambda tmp: tmp.write_text(notes_text(result, out, command), encoding="utf-8")})
    return out, note


def summary(result: ImportResult) -> str:
    """A few lines for stderr: rows per option and the assumptions."""
    counts = result.prices.groupby("option").size()
    pools = result.prices[["gpu_type", "region"]].drop_duplicates()
    head = (f"{len(result.prices)} price rows, {len(pools)} pools ({result.prices['gpu_type'].nunique()} GPU types x "
            f"{result.prices['region'].nunique()} regions): "
            + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return "\n".join([head, "assumptions:"] + [f"  - {n}" for n in result.notes])


def frame(result: ImportResult) -> pd.DataFrame:
    """The sheet as a DataFrame (what ``planner.inputs_from_frames`` takes as prices)."""
    return result.prices.copy()
