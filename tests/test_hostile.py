"""Hostile inputs (issue 17): each attack that is fixed gets its test here."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner import cli as cli_mod
from planner.inputs.config import load_model
from planner.pipeline.run import default_out_dir
from conftest import price, write_case


@pytest.mark.parametrize("classes,message", [
    ({"chat": {}, "Chat": {}}, "classes 'chat' and 'Chat' differ only in case or spaces"),
    ({"hours": {}}, "class name 'hours' is a column name of the demand file"),
])
def test_class_names_that_would_collide_in_the_workbook_exit_2(tmp_path, classes, message):
    m = write_case(tmp_path, {c: [1.0, 2.0] for c in classes}, [price()], classes)
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2 and message in r.output, r.output


@pytest.mark.parametrize("name", [".", "..", "...", "-.-"])
def test_default_output_folder_is_always_a_child_of_outputs(tmp_path, name):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price()], {"a": {}}, name=name)
    out = default_out_dir(load_model(m))
    assert out.parent == Path("outputs") and out.name not in (".", "..", "")


def test_more_solver_threads_than_cpus_are_capped(tmp_path):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price()], {"a": {}}, solver={"threads": 100000})
    with pytest.warns(RuntimeWarning, match="more than this machine's"):
        cfg = load_model(m)
    assert cfg.solver.threads == (os.cpu_count() or 1)


@pytest.mark.parametrize("args", [
    ["spot", "--interruptions-per-hour", "nan"], ["spot", "--interruptions-per-hour", "inf"],
    ["spot", "--mtbi-hours", "1e-320"], ["backtest", "--train-hours", "inf"], ["backtest", "--train-hours", "nan"],
    ["sweep", "--spot-price", "0:1:400000000"],
])
def test_absurd_numbers_on_the_command_line_exit_2(args):
    r = CliRunner().invoke(cli_mod.cli, args)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output


def test_control_characters_in_table_cells_exit_2_before_solving(tmp_path):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price(region="us-east4\x01")], {"a": {"regions": ["us-east4\x01"]}})
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2, r.output
    assert "row 2, column 'region': control character U+0001" in r.output


def test_control_characters_in_the_model_file_exit_2(tmp_path):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price()], {"a": {"description": "x\u000by"}})
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2 and "key 'classes.a.description' has a control character" in r.output, r.output


@pytest.mark.parametrize("option", ["reserved_999y", "reserved_0y"])
def test_absurd_terms_in_option_names_exit_2(tmp_path, option):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price(hourly=3.0), price(option=option, hourly=1.0)], {"a": {}})
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2 and "the term in the option's name is out of range" in r.output, r.output


def test_a_fifo_is_not_read(tmp_path):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price()], {"a": {}})
    (tmp_path / "demand.csv").unlink()
    os.mkfifo(tmp_path / "demand.csv")
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2 and "is not a regular file" in r.output, r.output


@pytest.mark.slow
def test_evaluating_a_plan_the_inputs_cannot_hold_is_never_a_cost(tmp_path):
    import json

    res = price(option="reserved_1y", hourly=1.0, term_months=12)
    m = write_case(tmp_path / "a", {"a": [4.0, 4.0]}, [price(hourly=3.0), res], {"a": {}})
    out = tmp_path / "plan"
    assert CliRunner().invoke(cli_mod.cli, ["plan", str(m), "--out", str(out)]).exit_code == 0
    capped = write_case(tmp_path / "b", {"a": [4.0, 4.0]}, [price(hourly=3.0), dict(res, max_gpus=1)], {"a": {}})
    r = CliRunner().invoke(cli_mod.cli, ["evaluate", str(capped), "--plan", str(out / "plan.json"),
                                         "--demand", str(tmp_path / "b" / "demand.csv"), "--out", str(tmp_path / "e")])
    assert r.exit_code == 3, r.output
    assert "cannot be run on these inputs" in r.output and "Realised cost" not in r.output
    assert not (tmp_path / "e").exists()
    plan = json.loads((out / "plan.json").read_text())
    plan["reserved_purchases"][0]["instances"] = 1e300
    (out / "huge.json").write_text(json.dumps(plan))
    r = CliRunner().invoke(cli_mod.cli, ["evaluate", str(m), "--plan", str(out / "huge.json"),
                                         "--demand", str(tmp_path / "a" / "demand.csv")])
    assert r.exit_code == 2 and "instances out of range" in r.output, r.output


def test_prices_below_the_solver_tolerance_exit_2(tmp_path):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price(hourly=1e-9)], {"a": {}})
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2 and "price below what the solver can tell from zero" in r.output, r.output


def _demand_case(tmp_path, rows, decimal_comma=False):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price()], {"a": {}})
    sep = ";" if decimal_comma else ","
    (tmp_path / "demand.csv").write_text(sep.join(["period", "workload_class", "gpus"]) + "\n"
                                         + "\n".join(sep.join(r) for r in rows) + "\n")
    return CliRunner().invoke(cli_mod.cli, ["validate", str(m)])


@pytest.mark.parametrize("rows,message", [
    ([("2261-12-31T00:00", "a", "1"), ("2261-12-31T01:00", "a", "2")], "date out of range"),
    ([("2027-01-01T00:00:00.000000000", "a", "1"), ("2027-01-01T00:00:00.000000001", "a", "2")],
     "periods are"),
    ([("2027-01-01T00:00", "a", "1.234"), ("2027-01-01T01:00", "a", "32,5")], "ambiguous number"),
])
def test_absurd_dates_and_ambiguous_numbers_exit_2(tmp_path, rows, message):
    r = _demand_case(tmp_path, rows, decimal_comma=any("," in x for row in rows for x in row))
    assert r.exit_code == 2 and message in r.output, r.output
    assert "Internal error" not in r.output


def test_a_term_of_almost_nothing_exits_2(tmp_path):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price(hourly=3.0),
                                                 price(option="reserved_x", hourly=1.0, term_months=5e-324)],
                   {"a": {}})
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2 and "term shorter than a day" in r.output, r.output


def test_xlsx_reads_the_active_sheet_not_a_hidden_first_one(tmp_path):
    from openpyxl import Workbook

    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price()], {"a": {}})
    wb = Workbook()
    stale = wb.active
    stale.title = "old"
    stale.append(["period", "workload_class", "gpus"])
    stale.append(["2027-01-04T00:00", "a", 100.0])
    stale.append(["2027-01-04T01:00", "a", 200.0])
    stale.sheet_state = "hidden"
    cur = wb.create_sheet("current")
    cur.append(["period", "workload_class", "gpus"])
    cur.append(["2027-01-04T00:00", "a", 1.0])
    cur.append(["2027-01-04T01:00", "a", 2.0])
    wb.active = 1
    wb.save(tmp_path / "demand.xlsx")
    m.write_text(m.read_text().replace('demand = "demand.csv"', 'demand = "demand.xlsx"'))
    from planner.pipeline.run import load_inputs

    assert load_inputs(m).demand[0, 0].tolist() == [1.0, 2.0]  # the current data, not the hidden first sheet


def _example_week(folder: Path) -> Path:
    """The bundled example's first week of demand (its six classes), as a demand file in ``folder``."""
    import pandas as pd

    root = Path(__file__).resolve().parent.parent
    demand = pd.read_csv(root / "data" / "example" / "demand.csv")
    week = demand[demand["period"].isin(sorted(demand["period"].unique())[:168])]
    assert week["workload_class"].nunique() == 6 and len(week) == 168 * 6
    folder.mkdir(parents=True, exist_ok=True)
    week.to_csv(folder / "week.csv", index=False)
    return folder / "week.csv"


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM", "SIGINT"])
def test_a_killed_planner_leaves_no_cbc_process_or_files(tmp_path, sig):
    """The bundled example on its first week of demand, solved by CBC (its first CBC solve starts about 2 s in;
    the whole quarter's, 6-12 s in): the planner killed while CBC runs (CBC stopped first, so that it cannot end
    on its own) leaves no CBC process, and its CBC folder is removed by the next CBC solve."""
    import glob
    import signal
    import subprocess
    import sys
    import tempfile
    import time

    from planner.solve import monolithic as solve

    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "planner", "plan", str(root / "models" / "example.toml"),
                             "--demand", str(_example_week(tmp_path)), "--solver", "cbc",
                             "--out", str(tmp_path / "out")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            # SIGINT at its default in the planner even where pytest runs with it ignored (nohup, a
                            # script's `&`): else it never sees the signal and waits on the stopped CBC (helper-82)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    launcher = {os.path.realpath(p) for p in ("/bin/sh", shutil.which("setpriv") or "/bin/sh")}

    def is_cbc(pid):  # past the launcher's shell and setpriv (its death signal set): CBC (or a wrapper of it)
        try:
            return os.path.realpath(f"/proc/{pid}/exe") not in launcher
        except OSError:
            return False

    folder = None
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:  # wait until CBC runs
        hits = glob.glob(os.path.join(tempfile.gettempdir(), f"planner-cbc-{proc.pid}-*"))
        kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        if hits and kids and all(is_cbc(k) for k in kids):  # stopped inside the launcher, it would never reach
            folder = hits[0]  # CBC: test_a_planner_killed_inside_the_launcher_starts_no_cbc covers that window
            break
        time.sleep(0.02)
    if folder is None:
        proc.kill()
        pytest.skip("the solve ended before CBC could be caught running")
    cbc = [int(k) for k in kids]
    for pid in cbc:  # stopped, CBC cannot end on its own (its first solve here lasts about 2 s): only the planner's
        try:  # end can end it (the kernel's SIGKILL ends a stopped process too)
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:  # it ended between the look and the stop
            proc.kill()
            pytest.skip("CBC ended before it could be stopped")
    alive = cbc
    try:
        os.kill(proc.pid, getattr(signal, sig))
        try:  # what matters is that nothing outlives it; on a loaded machine the interrupted run took over 30 s
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        deadline = time.time() + 5
        while time.time() < deadline and alive:
            alive = [p for p in cbc if os.path.exists(f"/proc/{p}")
                     and Path(f"/proc/{p}/stat").read_text().split()[2] != "Z"]
            time.sleep(0.05)
        assert not alive, "CBC outlived the planner"
    finally:
        for pid in alive:  # a failed run: no stopped CBC left behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    solve._remove_stale_cbc_folders()  # what the next CBC solve does first
    assert not os.path.exists(folder)


def test_a_planner_killed_inside_the_launcher_starts_no_cbc(tmp_path):
    """A planner killed between its fork and setpriv's death signal: the launcher, continued once the planner is
    gone, exits instead of running the program (here ``sleep 30``, in place of CBC). A live planner's launcher
    runs it."""
    import signal
    import subprocess
    import sys
    import time

    from planner.solve.monolithic import _dies_with_us

    if _dies_with_us("/bin/echo") == "/bin/echo":
        pytest.skip("no setpriv here: CBC is run without a launcher")
    ran = subprocess.run([_dies_with_us("/bin/echo"), "ran"], capture_output=True, text=True)
    assert (ran.returncode, ran.stdout) == (0, "ran\n")
    planner = (  # a process that forks, stops its child before the exec, prints its id and dies
        "import os, signal, sys\n"
        "from planner.solve.monolithic import _dies_with_us\n"
        "launcher = _dies_with_us('/bin/sleep')\n"
        "kid = os.fork()\n"
        "if kid == 0:\n"
        "    null = os.open(os.devnull, os.O_WRONLY)\n"  # the pipes closed, so that the run below can return
        "    os.dup2(null, 1)\n"
        "    os.dup2(null, 2)\n"
        "    os.kill(os.getpid(), signal.SIGSTOP)\n"
        "    os.execv(launcher, [launcher, '30'])\n"
        "while open(f'/proc/{kid}/stat').read().split()[2] != 'T':\n"
        "    pass\n"
        "print(kid, launcher, flush=True)\n"
        "os._exit(0)\n")
    out = subprocess.run([sys.executable, "-c", planner], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parent.parent)
    kid, launcher = out.stdout.split(maxsplit=1)
    kid = int(kid)
    try:
        os.kill(kid, signal.SIGCONT)
        deadline = time.time() + 10
        alive = True
        while alive and time.time() < deadline:
            try:
                alive = Path(f"/proc/{kid}/stat").read_text().split()[2] != "Z"
            except OSError:
                alive = False
            time.sleep(0.02)
        assert not alive, "the launcher ran its program for a planner that was gone"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(kid, signal.SIGKILL)
        shutil.rmtree(os.path.dirname(launcher.strip()), ignore_errors=True)  # (its process ended without atexit)


def test_the_launcher_runs_a_program_whose_path_the_shell_would_read(tmp_path):
    """A CBC in a folder whose name holds a space, quotes, ``$``, a backtick and a backslash: the launcher runs that
    very program (the path quoted for the shell), and nothing the name spells is run."""
    import subprocess

    from planner.solve.monolithic import _dies_with_us

    folder = tmp_path / "a b'c\"d $HOME `touch pwned` \\e"
    folder.mkdir()
    program = folder / "cbc"
    program.write_text("#!/bin/sh\necho ran \"$@\"\n")
    program.chmod(0o700)
    launcher = _dies_with_us(str(program))
    if launcher == str(program):
        pytest.skip("no setpriv here: CBC is run without a launcher")
    ran = subprocess.run([launcher, "x y", "$HOME"], capture_output=True, text=True, cwd=tmp_path)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "ran x y $HOME\n", "")
    assert not (tmp_path / "pwned").exists()


def _workbook_run_id(path: Path) -> str:
    from openpyxl import load_workbook

    wb = load_workbook(path, read_only=True)
    try:
        for row in wb["Assumptions"].iter_rows(values_only=True):
            if row and isinstance(row[0], str) and row[0].startswith("Run id: "):
                return row[0].split()[2]
    finally:
        wb.close()
    return ""


def _write_started(folder: Path, pid: int) -> bool:
    """True once the planner process ``pid`` has begun its write under ``folder``: its new output folder
    (``.out.new-<host>-<pid>-<8 chars>``) or a temporary file in the output folder (``.plan.xlsx.<host>-<pid>.<8
    chars>.tmp``, where the outputs are replaced one by one) is there (:mod:`planner.core.atomic`)."""
    import re

    mine = re.compile(rf"^\..*-{pid}[.-][a-z0-9_]{{8}}(\.tmp)?$")
    return any(mine.match(p.name) for p in list(folder.iterdir()) + list((folder / "out").glob(".*")))


@pytest.mark.slow
def test_kills_during_the_write_leave_a_pair_from_one_run_and_no_temp_files(tmp_path):
    """Four runs, each SIGKILLed inside its write: once its first temporary folder or file is there, at a random
    point of one quarter of the write's length (measured on a first, whole run; the four quarters in turn). The
    pair left is always from one run, and the next run leaves no temporary file or folder behind."""
    import json
    import random
    import signal
    import subprocess
    import sys
    import time

    import numpy as np

    rng = np.random.default_rng(7)
    demand = {c: list(rng.uniform(0, 50, 600).round(1)) for c in ("a", "b", "c")}
    m = write_case(tmp_path, demand, [price(hourly=3.0), price(option="reserved_1y", hourly=1.0, term_months=12)],
                   {c: {} for c in demand}, solver={"backend": "highs"},
                   extra_top='[term]\njudge = "horizon"')  # the write is the point: no whole-term solves before it
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "planner", "plan", str(m), "--out", str(out), "-q", "--no-memo"]

    def start_writing():
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not _write_started(tmp_path, proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before its write was seen"
            time.sleep(0.005)
        return proc, time.monotonic()

    proc, t0 = start_writing()
    assert proc.wait(timeout=120) == 0
    write = time.monotonic() - t0  # the write and the process's exit
    random.seed(3)
    mid_write = 0
    for quarter in range(4):
        proc, _ = start_writing()
        time.sleep(random.uniform(quarter / 4, (quarter + 1) / 4) * 0.9 * write)
        mid_write += proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        run_id = json.loads((out / "plan.json").read_text())["run_id"]
        assert _workbook_run_id(out / "plan.xlsx") == run_id, "plan.json and plan.xlsx from different runs"
    assert mid_write >= 2, "the kills came after the runs had ended"
    subprocess.run(cmd, check=True)  # the next run removes what killed runs left
    leftovers = [p.name for p in list(out.iterdir()) + list(tmp_path.iterdir()) if p.name.startswith(".")]
    assert leftovers == []


@pytest.mark.slow
def test_a_stray_cell_far_away_in_an_xlsx_is_an_input_error_not_a_memory_bomb(tmp_path):
    from openpyxl import Workbook

    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price()], {"a": {}})
    wb = Workbook()
    ws = wb.active
    for row in (["period", "workload_class", "gpus"], ["2027-01-04T00:00", "a", 1.0], ["2027-01-04T01:00", "a", 2.0]):
        ws.append(row)
    ws["XFD1048576"] = "x"
    wb.save(tmp_path / "demand.xlsx")
    m.write_text(m.read_text().replace('demand = "demand.csv"', 'demand = "demand.xlsx"'))
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2 and "a value far to the right of the demand table" in r.output, r.output


def _names():
    from hypothesis import strategies as st

    return st.text(alphabet=st.characters(exclude_categories=("Cs",)), min_size=1, max_size=10)


@pytest.mark.slow
def test_names_from_all_of_unicode_never_crash_and_stay_text(tmp_path_factory):
    """Class, GPU type and region names drawn from all of Unicode (control and formula characters too):
    the planner plans (exit 0 or 3) with the names written as text, or refuses them (exit 2, naming a
    file); never an internal error."""
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                      HealthCheck.too_slow])
    @given(cls=_names(), gpu=_names(), region=_names())
    def check(cls, gpu, region):
        from openpyxl import load_workbook

        tmp = tmp_path_factory.mktemp("uni")
        m = write_case(tmp, {cls: [2.0, 3.0]}, [price(gpu_type=gpu, region=region, hourly=2.0)], {cls: {}},
                       solver={"backend": "highs"})
        r = CliRunner().invoke(cli_mod.cli, ["plan", str(m), "--out", str(tmp / "out"), "-q"])
        assert "Internal error" not in r.output and "Traceback" not in r.output, r.output
        assert r.exit_code in (0, 2, 3), r.output
        if r.exit_code == 2:
            assert str(tmp) in r.output  # the message names the file
            return
        wb = load_workbook(tmp / "out" / "plan.xlsx")
        alloc = wb["Allocation"]
        assert alloc["D2"].data_type == "s" and alloc["E2"].data_type == "s"
        assert (alloc["D2"].value, alloc["E2"].value, alloc["F2"].value) == (cls.strip(), gpu.strip(), region.strip())

    check()


def test_deep_toml_and_huge_integers_exit_2(tmp_path):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price()], {"a": {}})
    text = m.read_text()
    m.write_text(text.replace('name = "case"', 'name = "case"\nx = ' + "[" * 20000 + "]" * 20000))
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2 and "nested too deeply" in r.output, r.output
    m.write_text(text + "job_gpus = " + "9" * 400 + "\n")
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2 and "'classes.a.job_gpus' is an absurdly large number" in r.output, r.output
    m.write_text(text + "gpu_types = { A = " + "9" * 400 + " }\n")
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2 and "Internal error" not in r.output, r.output


def test_a_plan_file_with_a_list_where_a_name_belongs_exits_2(tmp_path):
    import json

    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price()], {"a": {}})
    (tmp_path / "bad.json").write_text(json.dumps({"reserved_purchases": [
        {"gpu_type": ["A"], "region": "r1", "option": "reserved_1y", "instances": 1}]}))
    r = CliRunner().invoke(cli_mod.cli, ["evaluate", str(m), "--plan", str(tmp_path / "bad.json"),
                                         "--demand", str(tmp_path / "demand.csv")])
    assert r.exit_code == 2 and "lacks gpu_type, region, option or instances" in r.output, r.output


@pytest.mark.parametrize("year", ["2300", "2263", "1677"])
def test_dates_past_the_nanosecond_range_exit_2(tmp_path, year):
    r = _demand_case(tmp_path, [(f"{year}-01-04T00:00", "a", "1"), (f"{year}-01-04T01:00", "a", "2")])
    assert r.exit_code == 2 and "date out of range" in r.output, r.output


@pytest.mark.parametrize("args", [["--service-cv", "1e-300"], ["--service-ms", "5e-324"]])
def test_slo_with_vanishing_numbers(args):
    base = {"--requests-per-s": "100", "--service-ms": "50", "--slo-ms": "200"}
    base.update(dict(zip(args[::2], args[1::2])))
    r = CliRunner().invoke(cli_mod.cli, ["slo", "--json"] + [x for kv in base.items() for x in kv])
    assert "Internal error" not in r.output and r.exit_code in (0, 2), r.output
    if args[0] == "--service-cv":  # a vanishing cv is deterministic service, as cv = 0
        import json

        zero = CliRunner().invoke(cli_mod.cli, ["slo", "--json", "--requests-per-s", "100", "--service-ms", "50",
                                                "--slo-ms", "200", "--service-cv", "0"])
        assert json.loads(r.output) == json.loads(zero.output) | {"service_cv": json.loads(r.output)["service_cv"]}


@pytest.mark.parametrize("text", ["a\x85b", "a\u2028b", "a\u202eb"])
def test_invisible_characters_are_refused_too(tmp_path, text):
    m = write_case(tmp_path, {"a": [1.0, 2.0]}, [price()], {"a": {"description": text}})
    r = CliRunner().invoke(cli_mod.cli, ["validate", str(m)])
    assert r.exit_code == 2 and "has a control character" in r.output, r.output


def test_evaluate_refuses_purchases_that_cannot_run_without_solving_the_hindsight_plan(tmp_path):
    """Purchases over a reserved cap have no realised plan: the evaluation stops there. The hindsight MILP (the
    costliest solve of an evaluation) was solved first and thrown away."""
    import numpy as np

    from planner import load_inputs, make_plan
    from planner.whatif.evaluate import evaluate

    res = price(option="reserved_1y", hourly=1.0, term_months=12, max_gpus=1)
    inp = load_inputs(write_case(tmp_path, {"a": [4.0, 4.0]}, [price(hourly=3.0), res], {"a": {}}))
    calls = []

    def counted(i, **kw):
        calls.append(kw.get("fixed_reserved") is not None)
        return make_plan(i, **kw)

    ev = evaluate(inp, np.array([4.0]), counted)
    assert not ev.realised.status.has_plan and calls == [True]
    ok = evaluate(inp, np.array([1.0]), counted)  # purchases that run: the hindsight plan is solved beside them
    assert ok.realised.status.has_plan and ok.hindsight.status.has_plan and calls == [True, True, False]
