"""The checks every importer shares at its edges: dates the planner can hold, quantities that are numbers a fleet
could have, class names the planner will accept later, currencies converted only at a rate the user gave, and
outputs that are files (not folders) published together or not at all."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core import atomic
from planner.core.errors import InputError, Problem

# dates a bill or a metric can hold: before 1970 or after 2200 a date is a typo or a wrapped value (pandas'
# nanosecond timestamps hold 1677-09-21 .. 2262-04-11 only, and a charge period of centuries is millions of hours)
DATE_MIN = pd.Timestamp("1970-01-01")
DATE_MAX = pd.Timestamp("2200-01-01")
DATE_RANGE_TEXT = "a date between 1970-01-01 and 2200-01-01 (a bill's or a metric's dates)"
MAX_QUANTITY = 1e12  # hours or GPU-hours in one bill row: a trillion is no fleet's
MAX_GPUS = 1e9  # GPUs in one sample or hour: a billion is no fleet's
# control characters, line and paragraph separators, bidi overrides: never in a class name
CONTROL = r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"


def out_of_range(stamps: pd.Series) -> pd.Series:
    """True where a parsed date (naive UTC, or tz-aware) lies outside ``DATE_MIN .. DATE_MAX`` (NaT: False)."""
    s = stamps.dt.tz_convert(None) if getattr(stamps.dt, "tz", None) is not None else stamps
    return s.notna() & ((s < DATE_MIN) | (s > DATE_MAX))


def outside_range(values: pd.Series, parsed: pd.Series) -> pd.Series:
    """True where the text ``values`` (parsed into ``parsed``) is a date outside ``DATE_MIN .. DATE_MAX``: parsed
    there, or one pandas could not hold at all (its nanosecond timestamps end at 1677 and 2262: pandas 2 reads
    "1500-09-01" or "Jan 1 2300" as missing, where pandas 3 parses them), so it is named as out of range and never
    taken as missing."""
    far = out_of_range(parsed).to_numpy(bool).copy()
    lost = (parsed.isna() & values.notna()).to_numpy(bool)
    if lost.any():
        far[lost] = np.array([_far_date(v) for v in values.to_numpy(dtype=object)[lost]], dtype=bool)
    return pd.Series(far, index=values.index)


def _far_date(text) -> bool:
    """True when ``text`` reads as a date (dateutil's parser, years 1-9999) outside ``DATE_MIN .. DATE_MAX``."""
    from dateutil import parser

    try:
        when = parser.parse(str(text).strip())
    except (ValueError, OverflowError):
        return False
    when = when.replace(tzinfo=None) - (when.utcoffset() or pd.Timedelta(0)) if when.tzinfo else when
    return not (DATE_MIN.to_pydatetime() <= when <= DATE_MAX.to_pydatetime())


def bad_class_names(names: pd.Series) -> pd.Series:
    """Why each class name would be refused later ("" where it is fine): a control character (newline, NUL,
    tab...), or text that is a JSON object (the planner reads such a cell as a table of values)."""
    text = names.astype(str)
    why = pd.Series("", index=names.index, dtype=object)
    ctrl = text.str.contains(CONTROL, regex=True)
    why[ctrl] = "a control character (newline, NUL, tab, ...)"
    maybe = ~ctrl & text.str.strip().str.startswith("{")

    def is_object(t: str) -> bool:
        try:
            return isinstance(json.loads(t), dict)
        except (ValueError, RecursionError):
            return False

    uniq = pd.Series(text[maybe].unique(), dtype=object)
    objects = set(uniq[uniq.map(is_object)]) if len(uniq) else set()
    why[maybe & text.isin(objects)] = "a JSON object"
    return why


def same_but_case(names: pd.Series) -> list[tuple[str, str]]:
    """Pairs (first seen, other) of distinct class names that differ only in case or spaces, which the model
    file cannot tell apart (planner.inputs.config refuses them): ``LLM`` and ``llm``, ``llm `` and ``llm``."""
    uniq = pd.Series(pd.unique(names.dropna().astype(str)), dtype=object)
    folded = uniq.str.strip().str.casefold()  # as planner.inputs.config folds class names
    first = uniq.groupby(folded).transform("first")
    return [(a, b) for a, b in zip(first, uniq) if a != b]


def refuse_folders(paths: dict) -> None:
    """Exit 2 naming every output (option -> path) that exists and is not a regular file (a folder, a device such
    as /dev/null, a FIFO), before anything is written: a rename would replace it."""
    problems = [Problem(str(p), f"{flag} is a folder, not a file" if Path(p).is_dir() else
                        f"{flag} is not a regular file (a device, a FIFO or a socket): it would be replaced",
                        expected="the path of a file to write (e.g. one inside that folder)")
                for flag, p in paths.items() if p is not None and Path(p).exists() and not Path(p).is_file()]
    if problems:
        raise InputError(problems)


def parse_fx(values) -> dict[str, float]:
    """``--fx CUR=RATE`` options -> {CUR: USD per unit of CUR}; exit 2 naming a malformed one."""
    out: dict[str, float] = {}
    for text in values or ():
        m = re.fullmatch(r"\s*([A-Za-z]{3})\s*=\s*(\S+)\s*", text)
        rate = np.nan
        if m:
            try:
                rate = float(m.group(2))
            except ValueError:
                pass
        if not m or not np.isfinite(rate) or rate <= 0:
            raise InputError(Problem("--fx", "not a currency and its rate", value=text,
                                     expected="CUR=RATE, RATE the USD one unit of CUR is worth (> 0), "
                                              "e.g. --fx JPY=0.0067 or --fx EUR=1.08"))
        cur = m.group(1).upper()
        if not 1e-6 <= rate <= 1e6:  # no currency is worth a millionth of a cent or a million dollars
            raise InputError(Problem("--fx", "the rate is implausible", value=text,
                                     expected="USD per unit of the currency, between 1e-6 and 1e6 "
                                              "(e.g. JPY=0.0067, EUR=1.08)"))
        if cur == "USD" and rate != 1:
            raise InputError(Problem("--fx", "USD is the sheet's currency: its rate is 1", value=text,
                                     expected="a rate for another currency"))
        if cur in out and out[cur] != rate:
            raise InputError(Problem("--fx", f"two rates for {cur}", value=text, expected="one rate per currency"))
        out[cur] = rate
    return out


def publish(writers: dict) -> list[Path]:
    """Write ``writers`` ({path: function(temporary path)}) and publish them together or not at all.

    Each file is first written whole to a temporary name beside its destination (a writer that raises, or a
    disk that fills, leaves nothing new). Then they are renamed into place one after the other; if a rename
    fails, those already renamed are put back as they were (the previous file restored, or the new one
    removed), so a reader never sees one new output beside an old one after the command ends.
    """
    temps: dict[Path, Path] = {}
    backups: list[tuple[Path, Path | None]] = []
    try:
        for path, write in writers.items():
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic.remove_stale(path.parent, [path.name])
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{atomic.run_tag()}.", suffix=".tmp", dir=path.parent)
            except OSError as exc:  # name the file the user asked for, not our temporary one
                raise OSError(exc.errno, exc.strerror, str(path)) from None
            os.close(fd)
            temps[path] = Path(tmp)
            write(Path(tmp))
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~atomic.current_umask())
        try:
            for path, tmp in temps.items():
                backup = _keep_old(path)
                backups.append((path, backup))
                try:
                    os.replace(tmp, path)
                except OSError as exc:
                    if backup is None:  # nothing of ours got there: nothing to undo for this one
                        backups.pop()
                    raise OSError(exc.errno, exc.strerror, str(path)) from None
        except BaseException:
            for path, backup in reversed(backups):
                with contextlib.suppress(OSError):
                    if backup is not None:
                        os.replace(backup, path)
                    else:
                        path.unlink(missing_ok=True)
            raise
    finally:
        for tmp in temps.values():
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        for _, backup in backups:
            if backup is not None:
                with contextlib.suppress(OSError):
                    backup.unlink(missing_ok=True)
    return list(temps)


def _keep_old(path: Path) -> Path | None:
    """A second name for the file now at ``path`` (a hard link, else a copy), to restore it; None if none."""
    if not path.is_file():
        return None
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.{atomic.run_tag()}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    backup = Path(name)
    backup.unlink()
    try:
        os.link(path, backup)
    except OSError:
        shutil.copy2(path, backup)
    return backup


def usd_rates(currency: pd.Series, fx: dict, file: pd.Series, row: pd.Series, column: pd.Series | str,
              notes, what: str) -> pd.Series:
    """USD per unit of each row's ``currency`` (blank or USD: 1; others from ``fx``, the ``--fx`` options);
    exit 2 naming the file, row, field and currency of every row whose currency has no rate (at most 20).
    The rates used are stated in ``notes`` (``what``: the rows' name, e.g. "Azure items")."""
    cur = currency.fillna("").astype(str).str.strip().str.upper().replace("", "USD")
    known = {"USD": 1.0, **{k.upper(): float(v) for k, v in fx.items()}}
    rate = cur.map(known)
    missing = rate.isna()
    if missing.any():
        col = column if isinstance(column, pd.Series) else pd.Series(column, index=currency.index)
        idx = np.flatnonzero(missing.to_numpy())
        problems = [Problem(str(file.iat[i]), f"a price in {cur.iat[i]}, not USD", row=int(row.iat[i]),
                            column=str(col.iat[i]), value=currency.iat[i],
                            expected=f"USD, or give its rate: --fx {cur.iat[i]}=<USD per {cur.iat[i]}>")
                    for i in idx[:20]]
        if len(idx) > 20:
            problems.append(Problem(str(file.iat[idx[20]]), f"{len(idx) - 20} more rows not in USD"))
        raise InputError(problems)
    used = cur[cur.ne("USD")].value_counts()
    for c, n in used.items():
        notes.add(f"{n} {what} priced in {c}: converted to USD at --fx {c}={known[c]:g} (USD per {c}, the rate "
                  "you gave; the note keeps it so the sheet can be re-made at another rate).")
    for c in sorted(set(known) - set(cur) - {"USD"}):
        notes.add(f"--fx {c}={known[c]:g} given, but no price was in {c}: not used.")
    return rate.astype(float)
