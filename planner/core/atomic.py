"""Write outputs so that a failed or interrupted run never leaves a partial file.

Every file is written to a temporary name in the destination folder, flushed
and fsynced, then renamed over the old file in one step (``os.replace``).
Files that belong together (plan.xlsx and plan.json) are published together:
written into a new sibling folder that is then exchanged with the output
folder in one step (Linux ``renameat2(RENAME_EXCHANGE)``), so a reader sees the
old pair or the new pair, never one of each, even if the planner is killed.
Temporary files and folders carry the writer's host and process id; the next write
removes those of writers on this host that are gone, and nothing that is not
exactly such a name (see ``remove_stale``). A folder that holds anything but a
previous pair, or that is the working directory or holds it, is never exchanged.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside ``path``; rename it into place on success, delete it on failure.

    ``path`` must name a file: an existing folder there raises IsADirectoryError naming it, before anything
    is written.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(21, "is a folder, not a file: give the path of a file (one inside it, say)",
                                str(path))
    if path.exists() and not path.is_file():  # /dev/null, a FIFO: a rename would replace the device itself
        raise IsADirectoryError(21, "is not a regular file (a device, a FIFO or a socket): it would be replaced",
                                str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path.parent, [path.name])
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{run_tag()}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes 0600; outputs get the usual permissions
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_writable(out_dir: str | Path, names=()) -> None:
    """Raise OSError early (before a long solve) when ``out_dir`` cannot take outputs ``names``."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(20, "the output folder is a file", str(out_dir))
    for name in names:
        path = out_dir / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise IsADirectoryError(21, "is a folder or a link, not a previous output; remove or rename it",
                                    str(path))
    probe = out_dir if out_dir.is_dir() else next((p for p in out_dir.parents if p.exists()), Path("."))
    if not os.access(probe, os.W_OK | os.X_OK):
        raise PermissionError(13, "permission denied", str(probe))


def _host() -> str:
    """This machine's name as it goes into temporary names (a process id means nothing on another host)."""
    import re
    import socket

    return re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname())[:32] or "host"


def run_tag() -> str:
    """This host and process, for the names of temp files (a killed run's leftovers are told apart)."""
    return f"{_host()}-{os.getpid()}"


def remove_stale(folder: Path, names) -> None:
    """Remove the temporary files and folders that planner writers killed on this host left in ``folder``.

    Only the planner's own exact names are touched: ``.<name>.new-<host>-<pid>-<8 chars>`` (a folder) and
    ``.<name>.<host>-<pid>.<8 chars>.tmp`` (a file), for ``name`` in ``names`` (the outputs being written
    there), of this host, whose process is gone; a folder only while it holds nothing but output files.
    """
    import re

    if not folder.is_dir():
        return
    host = _host()
    wanted = set(names)
    folder_rx = re.compile(r"^\.(?P<name>.+)\.new-(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)-[a-z0-9_]{8}$")
    file_rx = re.compile(r"^\.(?P<name>.+)\.(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)\.[a-z0-9_]{8}\.tmp$")
    for entry in folder.iterdir():
        if not entry.name.startswith("."):
            continue
        is_dir = entry.is_dir() and not entry.is_symlink()
        m = (folder_rx if is_dir else file_rx).match(entry.name)
        if not m or m.group("name") not in wanted or m.group("host") != host:
            continue
        pid = int(m.group("pid"))
        if pid == os.getpid() or _alive(pid):
            continue
        if is_dir:
            _remove_outputs_folder(entry, None)
        elif entry.is_file() and not entry.is_symlink():
            with contextlib.suppress(OSError):
                entry.unlink()


def _remove_outputs_folder(folder: Path, names) -> None:
    """Remove a planner temporary folder, but only while it holds nothing but regular output files
    (``names``, or any non-hidden regular file when None); anything else in it is left where it is."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    ours = [e for e in entries if e.is_file() and not e.is_symlink()
            and (e.name in names if names is not None else not e.name.startswith("."))]
    if len(ours) != len(entries):
        return
    for entry in ours:
        with contextlib.suppress(OSError):
            entry.unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    import ctypes
    import sys

    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), exchange) != 0:
        return False
    return True


def publish_together(out_dir: str | Path, writers: dict) -> dict[str, Path]:
    """Write ``writers`` ({file name: function(path)}) into ``out_dir`` as one publication.

    Where ``out_dir`` holds nothing but regular files with these names (the usual outputs/<name>/), the
    files are written into a new sibling folder, which is then exchanged with ``out_dir`` in one step;
    otherwise (anything else lives there, dot-files and folders included, or the system cannot
    exchange) each file is replaced atomically, in order, and nothing else in the folder is touched.
    An entry with an output's name that is a folder or a link is refused (IsADirectoryError).
    """

    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out_dir.parent, [out_dir.name])
    if out_dir.is_dir():
        remove_stale(out_dir, list(writers))
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(20, "the output folder is a file", str(out_dir))
    paths = {name: out_dir / name for name in writers}
    for path in paths.values():  # never replace a user's folder (or a link) that has an output's name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise IsADirectoryError(21, "is a folder or a link, not a previous output; remove or rename it",
                                    str(path))
    if only_previous_outputs(out_dir, writers) and not _holds_cwd(out_dir):
        try:
            new = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-{run_tag()}-", dir=out_dir.parent))
        except OSError as exc:  # name the folder the user gave, not our temporary one
            raise OSError(exc.errno, exc.strerror, str(out_dir)) from None
        try:
            for name, write in writers.items():
                write(new / name)
                with open(new / name, "rb+") as f:
                    os.fsync(f.fileno())
                os.chmod(new / name, 0o666 & ~current_umask())
            os.chmod(new, 0o777 & ~current_umask())
            if not out_dir.exists():
                with contextlib.suppress(OSError):
                    os.rename(new, out_dir)
                    return paths
            if only_previous_outputs(out_dir, writers) and _exchange(new, out_dir):
                return paths  # ``new`` now holds the old outputs: removed below
        finally:
            _remove_outputs_folder(new, writers)
    done: list[str] = []
    try:
        for name, write in writers.items():  # fallback: file by file, each atomic
            with atomic_path(paths[name]) as tmp:
                write(tmp)
            done.append(name)
    except BaseException as exc:  # an interrupt (or an error) part way: which outputs are the new run's now
        if done:
            exc.replaced_outputs = list(done)  # (read by the CLI: its message must not say "no outputs were changed")
        raise
    return paths


def _holds_cwd(out_dir: Path) -> bool:
    """True when the working directory is ``out_dir`` or inside it (exchanging it would strand the shell)."""
    try:
        return Path.cwd().resolve().is_relative_to(out_dir.resolve())
    except OSError:
        return True


def only_previous_outputs(out_dir: Path, names) -> bool:
    """True when ``out_dir`` is missing, or a real folder (not a link) holding nothing but regular files
    named in ``names``: the one case where the whole folder may be exchanged for a new one.

    Anything else in it (a dot-file, ``.git``, a folder, a link, another program's file) means the folder is
    the user's: the outputs are then replaced one by one inside it and nothing else is touched.
    """
    if not out_dir.exists() and not out_dir.is_symlink():
        return True
    if out_dir.is_symlink() or not out_dir.is_dir():
        return False
    return all(entry.name in names and entry.is_file() and not entry.is_symlink()
               for entry in out_dir.iterdir())


def write_workbook_and_json(wb, xlsx_path: str | Path, json_path: str | Path, text: str) -> None:
    """Save openpyxl workbook ``wb`` and ``text`` (JSON) atomically: both are complete, or the old ones stay."""
    with atomic_path(xlsx_path) as tmp_x:
        wb.save(tmp_x)
        with atomic_path(json_path) as tmp_j:
            tmp_j.write_text(text, encoding="utf-8")


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temporary file renamed into place)."""
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")


def current_umask() -> int:
    """The process's umask (read by setting it and back: the one portable way)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask
