"""CSV cells holding a NUL byte, found with Python's own CSV reader.

pandas 2's CSV reader ends a cell at a NUL byte (``us-e\\0ast-1`` read as ``us-e``, silently); pandas 3 keeps
it. A reader that must refuse such a cell on both scans the text here: rows numbered as pandas numbers them
(header = 1, lines before it skipped), a quoted cell over several lines one cell of its own row.
"""

from __future__ import annotations

from typing import TextIO

from planner.core.errors import InputError, Problem

NUL_EXPECTED = "text without NUL bytes (a damaged or binary file?)"


def refuse_nul_text(text: TextIO, file: str, skip: int = 0, delimiter: str = ",") -> None:
    """Exit 2 naming ``file``, row and column of every data cell of ``text`` (an open text file, cells split at
    ``delimiter``) holding a NUL byte, at most 20; the ``skip`` lines before the header are not read."""
    import csv

    problems, header, k = [], [], 0
    for _ in range(skip):
        text.readline()
    try:
        for k, cells in enumerate(csv.reader(text, delimiter=delimiter), start=1):
            if k == 1:
                header = [c.strip() for c in cells]
                continue
            for j, cell in enumerate(cells):
                if "\x00" in cell:
                    problems.append(Problem(file, "a NUL byte in the cell", row=skip + k,
                                            column=header[j] if j < len(header) else f"column {j + 1}", value=cell,
                                            expected=NUL_EXPECTED))
            if len(problems) >= 20:
                break
    except csv.Error as exc:  # (a cell past the CSV module's size limit: the file is no table to read)
        problems.append(Problem(file, f"not a readable CSV file ({exc})", row=skip + k + 1,
                                expected="a CSV table: " + NUL_EXPECTED))
    if problems:
        raise InputError(problems[:20])
