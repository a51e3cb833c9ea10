"""Shared fixtures: tiny models written to disk, a solver parametrised over the installed backends."""

from __future__ import annotations

import compileall
import json
import shutil
import textwrap
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
# The planner's modules compiled once, before any test imports them: the suite starts `python -m planner` some
# two hundred times and each xdist worker imports it; on a machine that sets PYTHONDONTWRITEBYTECODE each start
# would compile every module again (about 0.3 s). An up-to-date file is only looked at (a worker's call is cheap).
compileall.compile_dir(str(ROOT / "planner"), quiet=2)

from planner import load_inputs, make_plan  # noqa: E402
from planner.solve.monolithic import available_backends  # noqa: E402

SHARED = ROOT.parent / "shared"
BACKENDS = available_backends()


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, dict):
        return "{ " + ", ".join(f'"{k}" = {_toml_value(x)}' for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return repr(float(v)) if isinstance(v, float) else str(v)


def write_case(folder: Path, demand: dict[str, list[float]], prices: list[dict], classes: dict[str, dict],
               inventory: list[dict] | None = None, hours: float = 1.0, solver: dict | None = None,
               start: str = "2027-01-04T00:00", name: str = "case", extra_top: str = "") -> Path:
    """Write demand.csv, prices.csv (and inventory.csv) and model.toml; return the model path."""
    folder.mkdir(parents=True, exist_ok=True)
    n = len(next(iter(demand.values())))
    periods = pd.date_range(start, periods=n, freq=pd.Timedelta(hours=hours))
    rows = [{"period": p.strftime("%Y-%m-%dT%H:%M"), "workload_class": k, "gpus": v[i]}
            | ({"hours": hours} if n == 1 else {})  # one period: its length must be given
            for i, p in enumerate(periods) for k, v in demand.items()]
    pd.DataFrame(rows).to_csv(folder / "demand.csv", index=False)
    cols = ["gpu_type", "region", "option", "hourly_usd", "upfront_usd", "term_months", "max_gpus",
            "interruptions_per_hour", "gpus_per_instance"]
    cols += [c for c in ("valid_from", "scenario", "lead_time_months", "residual_usd", "queue_hours_p50", "queue_hours_p90",
                         "max_run_hours") if any(c in r for r in prices)]
    pd.DataFrame(prices).reindex(columns=cols).to_csv(folder / "prices.csv", index=False)
    lines = [f'name = "{name}"', 'demand = "demand.csv"', 'prices = "prices.csv"']
    if inventory:
        pd.DataFrame(inventory).to_csv(folder / "inventory.csv", index=False)
        lines.append('inventory = "inventory.csv"')
    lines.append(extra_top)
    settings = {"backend": "highs", "mip_gap": 0.0, "time_limit_s": 60}
    settings.update(solver or {})
    lines.append("[solver]")
    lines += [f"{k} = {_toml_value(v)}" for k, v in settings.items()]
    for cname, opts in classes.items():
        lines.append(f"[classes.{json.dumps(cname, ensure_ascii=False)}]".replace("\x7f", "\\u007f"))
        lines += [f"{k} = {_toml_value(v)}" for k, v in opts.items()]
    path = folder / "model.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def solve_case(path: Path, backend: str = "highs", **kw):
    return make_plan(load_inputs(path), backend=backend, mip_gap=0.0, **kw)


def price(gpu_type="A", region="r1", option="on_demand", hourly=1.0, **extra):
    row = {"gpu_type": gpu_type, "region": region, "option": option, "hourly_usd": hourly}
    row.update(extra)
    return row


@pytest.fixture(scope="session")
def example_plan(tmp_path_factory):
    """The bundled example, planned once per session (HiGHS, the default), outputs written."""
    from planner.pipeline.run import write_outputs

    plan = make_plan(load_inputs(ROOT / "models" / "example.toml"))
    out = tmp_path_factory.mktemp("example")
    paths = write_outputs(plan, out)
    return plan, paths


_BOOKS: dict = {}  # (path, size, mtime, data_only) -> the workbook loaded whole, for tests that only read it
BOOKS_KEPT = 4


def book(path: Path, *, data_only: bool = False):
    """The workbook at ``path`` loaded whole by openpyxl, shared by the tests of this process that only read it
    (a load of the example's is 2-3 s, and a dozen tests read it). Keyed by the file's path, size and modification
    time, and ``data_only``; the last ``BOOKS_KEPT`` kept. Never edit what it returns: a test that edits a
    workbook loads its own copy with ``openpyxl.load_workbook``."""
    from openpyxl import load_workbook

    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, data_only)
    if key not in _BOOKS:
        while len(_BOOKS) >= BOOKS_KEPT:
            _BOOKS.pop(next(iter(_BOOKS)))
        _BOOKS[key] = load_workbook(path, data_only=data_only)
    return _BOOKS[key]


def soffice() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def lo_convert(src: Path | list[Path], outdir: Path, to: str, profile: Path, *, calc: bool = False,
               attempts: int = 3) -> Path | list[Path]:
    """Convert ``src`` (a file, or a list of files with distinct names: one LibreOffice start for all) with
    LibreOffice headless into ``outdir``; return the converted file (or their list, in ``src``'s order).

    LibreOffice headless sometimes aborts at start-up (SIGABRT, exit 134) when several instances start at once
    on a loaded machine, before it has read the file. Such a crash is retried with a fresh user profile, at
    most ``attempts`` times; any other failure, or a converted file that does not appear, fails the test.
    """
    import subprocess

    sources = list(src) if isinstance(src, (list, tuple)) else [src]
    assert len({s.stem for s in sources}) == len(sources), "sources converted together need distinct names"
    targets = [outdir / f"{s.stem}.{to}" for s in sources]
    for attempt in range(attempts):
        run_profile = profile if attempt == 0 else profile.with_name(f"{profile.name}-retry{attempt}")
        done = subprocess.run([soffice(), f"-env:UserInstallation=file://{run_profile}", "--headless",
                               *(["--calc"] if calc else []), "--convert-to", to, "--outdir", str(outdir),
                               *map(str, sources)], capture_output=True, timeout=240 * len(sources))
        crashed = done.returncode < 0 or done.returncode in (134, 139)
        if done.returncode == 0 and all(t.exists() for t in targets):
            return targets if isinstance(src, (list, tuple)) else targets[0]
        if not crashed or attempt == attempts - 1:
            raise AssertionError(f"LibreOffice exited {done.returncode} converting {src} to {to}:\n"
                                 f"{done.stdout.decode(errors='replace')}\n{done.stderr.decode(errors='replace')}")
    raise AssertionError("unreachable")


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip()


def pytest_collection_modifyitems(config, items):
    """The test files holding a test marked ``slow`` first, each file's tests together and in order (its
    module-scoped fixtures are set up once): under pytest-xdist a long test scheduled last keeps the suite waiting
    on one core while the other is idle (the slowest take 20-30 s)."""
    def file(item) -> str:
        return item.nodeid.split("::")[0]

    slow = {file(item) for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: file(item) not in slow)


def edit_numbers(src: Path, dst: Path, edits: dict[str, dict[str, float]]) -> Path:
    """Copy the workbook ``src`` to ``dst`` with the numbers typed in given cells changed, as a reader typing over
    them: ``edits`` maps a sheet's name to {cell reference: new number}. Only that sheet's XML is rewritten (each
    cell must hold a plain number, no formula, no text: anything else fails here); every other part stays byte for
    byte (loading and saving the example's workbook with openpyxl to make the same edit takes 5-6 s). Formulas keep
    their stored values (stale after the edit): a recomputation takes them out first (``formulas_only``)."""
    import re
    import zipfile

    with zipfile.ZipFile(src) as z:
        book_xml = z.read("xl/workbook.xml").decode()
        rels = z.read("xl/_rels/workbook.xml.rels").decode()
    target = {}
    for name, rid in re.findall(r'<sheet name="([^"]*)"[^>]*? r:id="([^"]+)"', book_xml):
        (part,) = re.findall(rf'<Relationship Id="{rid}" [^>]*?Target="([^"]+)"', rels)
        target[name] = "xl/" + part.lstrip("/").removeprefix("xl/")
    parts = {target[sheet]: cells for sheet, cells in edits.items()}
    assert len(parts) == len(edits), f"sheets not in {src.name}: {set(edits) - set(target)}"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename in parts:
                text = data.decode()
                for ref, value in parts[item.filename].items():
                    found = re.findall(rf'<c r="{ref}"(?: s="\d+")?><v>[^<]*</v></c>', text)
                    assert len(found) == 1, f"{item.filename}!{ref} is not one plain number: {found}"
                    style = re.search(r' s="\d+"', found[0])
                    text = text.replace(found[0], f'<c r="{ref}"{style.group(0) if style else ""}><v>{float(value)!r}</v></c>')
                data = text.encode()
            zout.writestr(item, data)
    return dst
