"""Issue 27, the core defects: nothing a user owns is deleted, threads do not race, $0 plans, CSV
injection, latency on the type that serves, errors that name the value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import planner
from planner.sizing import queueing
from planner.core.atomic import publish_together
from planner.cli import cli
from conftest import ROOT, price, solve_case, write_case


def _tiny(tmp_path: Path) -> Path:
    return write_case(tmp_path / "model", {"c": [5, 6]}, [price(hourly=1.0)], {"c": {}})


def _run_plan(model: Path, out: Path):
    return CliRunner().invoke(cli, ["plan", str(model), "--out", str(out), "-q"])


# ---- 1: --out never deletes what the folder holds --------------------------------------------------
@pytest.mark.parametrize("owned", [
    {".git/config": "x", ".env": "S=1"},  # only dot-files: used to be exchanged away
    {".env": "S=1"},
    {"notes/readme.txt": "mine"},
])
def test_out_folder_with_user_files_keeps_them(tmp_path, owned):
    out = tmp_path / "proj"
    for rel, text in owned.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    for _ in range(2):  # a second run over a previous pair plus the user's files
        r = _run_plan(_tiny(tmp_path), out)
        assert r.exit_code == 0, r.output
        for rel, text in owned.items():
            assert (out / rel).read_text() == text, f"{rel} was lost"
    assert json.loads((out / "plan.json").read_text())["cost_usd"]["total"] == pytest.approx(11.0)
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(
        {"plan.json", "plan.xlsx", "allocation.csv", "fleet.csv"} | {rel.split("/")[0] for rel in owned
                                                                     if not rel.startswith(".")})


@pytest.mark.parametrize("entry", ["plan.json", "plan.xlsx"])
def test_a_folder_named_like_an_output_is_refused_and_kept(tmp_path, entry):
    out = tmp_path / "proj"
    (out / entry).mkdir(parents=True)
    (out / entry / "precious.txt").write_text("keep")
    r = _run_plan(_tiny(tmp_path), out)
    assert r.exit_code == 2  # bad input (issue 32 item 8; was 1)
    assert "is a folder or a link, not a previous output" in r.output
    assert (out / entry / "precious.txt").read_text() == "keep"
    assert not any(p.name.startswith("plan.") and p.is_file() for p in out.iterdir())


def test_a_link_named_like_an_output_is_refused_and_its_target_kept(tmp_path):
    out = tmp_path / "proj"
    out.mkdir()
    target = tmp_path / "elsewhere.json"
    target.write_text("mine")
    (out / "plan.json").symlink_to(target)
    r = _run_plan(_tiny(tmp_path), out)
    assert r.exit_code == 2  # bad input, nothing written (issue 32 item 8; was 1)
    assert target.read_text() == "mine" and (out / "plan.json").is_symlink()


def test_a_previous_pair_alone_is_still_exchanged_whole(tmp_path):
    out = tmp_path / "out"
    assert _run_plan(_tiny(tmp_path), out).exit_code == 0
    ino = out.stat().st_ino
    assert _run_plan(_tiny(tmp_path), out).exit_code == 0
    if sys.platform == "linux":
        assert out.stat().st_ino != ino  # a new folder, swapped in one step
    assert not [p for p in tmp_path.iterdir() if ".new-" in p.name]


def test_an_output_folder_that_is_a_link_is_written_through_not_replaced(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    publish_together(link, {"plan.json": lambda p: p.write_text("{}")})
    assert link.is_symlink() and (real / "plan.json").read_text() == "{}"


def test_stale_temporary_folders_holding_user_files_are_left(tmp_path):
    from planner.core.atomic import _host

    stale = tmp_path / f".out.new-{_host()}-999999-abcdefgh"  # a dead pid, our naming
    (stale / "sub").mkdir(parents=True)
    (stale / "sub" / "x").write_text("keep")
    publish_together(tmp_path / "out", {"plan.json": lambda p: p.write_text("{}")})
    assert (stale / "sub" / "x").read_text() == "keep"
    plain = tmp_path / f".out.new-{_host()}-999998-abcdefgh"  # a killed run's outputs only: cleaned
    plain.mkdir()
    (plain / "plan.json").write_text("{}")
    other_host = tmp_path / ".out.new-otherhost-999997-abcdefgh"  # another machine's (NFS): never ours to judge
    other_host.mkdir()
    (other_host / "plan.json").write_text("{}")
    publish_together(tmp_path / "out", {"plan.json": lambda p: p.write_text("{}")})
    assert not plain.exists() and other_host.exists()


@pytest.mark.parametrize("name", [".photos.new-2023-summer", ".notes.new-2023-x", ".app.12345.cache.tmp",
                                  ".plan.json.12345.abcdefgh.tmp", ".out.new-12345-abcdefgh"])
def test_names_that_only_look_like_temporary_ones_are_never_removed(tmp_path, name):
    target = tmp_path / name
    if "photos" in name or name.endswith("abcdefgh"):
        target.mkdir()
        (target / "a.jpg").write_text("j")
    else:
        target.write_text("n")
    r = _run_plan(_tiny(tmp_path), tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert target.exists()
    publish_together(tmp_path / "out", {"plan.json": lambda p: p.write_text("{}")})
    CliRunner().invoke(cli, ["export", "focus", str(tmp_path / "out" / "plan.json"), "--out", str(tmp_path / "f.csv")])
    assert target.exists()


def test_an_output_folder_holding_the_working_directory_is_not_swapped(tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert _run_plan(_tiny(tmp_path), out).exit_code == 0
    monkeypatch.chdir(out)
    ino = out.stat().st_ino
    assert _run_plan(_tiny(tmp_path), out).exit_code == 0
    assert out.stat().st_ino == ino and Path.cwd() == out.resolve() and (out / "plan.json").is_file()


# ---- 3 and 8: threads ----------------------------------------------------------------------------------
def test_cbc_from_threads_does_not_change_the_working_directory(tmp_path):
    if "cbc" not in planner.solve.monolithic.available_backends():
        pytest.skip("CBC not installed")
    inp = planner.load_inputs(write_case(tmp_path / "m", {"c": [5, 6, 7]},
                                         [price(hourly=2.0), price(option="reserved_1y", hourly=1.0)], {"c": {}},
                                         extra_top='[term]\njudge = "horizon"'))
    cwd = os.getcwd()
    errors, seen = [], set()

    def work():
        try:
            for _ in range(3):
                p = planner.plan(inp, backend="cbc")
                seen.add(round(p.cost["total"], 6))
                seen.add(os.getcwd())
        except Exception as exc:  # noqa: BLE001 - the test reports it
            errors.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert os.getcwd() == cwd
    assert seen == {cwd, 20.0}  # 6 reserved x 3 h + 1 h on demand at 2


QUIET_SCRIPT = r"""
import sys, threading
sys.path.insert(0, sys.argv[1])
import planner
from conftest import price, write_case
from pathlib import Path
inp = planner.load_inputs(write_case(Path(sys.argv[2]), {"c": [5, 6, 7]},
                                     [price(hourly=2.0), price(option="reserved_1y", hourly=1.0)], {"c": {}}))
ts = [threading.Thread(target=lambda: [planner.plan(inp) for _ in range(5)]) for _ in range(3)]
[t.start() for t in ts]
[t.join() for t in ts]
print("still-visible", flush=True)
"""


def test_highs_from_threads_leaves_stdout_working(tmp_path):
    out = subprocess.run([sys.executable, "-c", QUIET_SCRIPT, str(ROOT / "tests"), str(tmp_path / "m")],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "still-visible" in out.stdout


def test_quiet_stdout_nests_and_restores_fd1(tmp_path):
    script = ("import os\nfrom planner.solve.monolithic import quiet_stdout\n"
              "with quiet_stdout():\n    with quiet_stdout():\n        os.write(1, b'hidden')\n"
              "    os.write(1, b'hidden2')\nos.write(1, b'shown')\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=ROOT, timeout=60)
    assert out.stdout == b"shown"


def test_quiet_stdout_from_many_threads_at_once_restores_fd1_and_leaks_nothing():
    """Eight threads entering and leaving the silencer (some nested) 3,000 times each, Python's lock handed over
    every microsecond: fd 1 is written to afterwards and no descriptor is left open. Without the silencer's lock
    a save and a restore of two threads interleave: fd 1 left on /dev/null, or descriptors leaked (3 of 3 runs)."""
    script = ("import os, random, sys, threading\nsys.setswitchinterval(1e-6)\n"
              "from planner.solve.monolithic import quiet_stdout\n"
              "before = len(os.listdir('/proc/self/fd'))\nerrors = []\n"
              "def work(seed):\n    rng = random.Random(seed)\n    try:\n        for _ in range(3000):\n"
              "            with quiet_stdout():\n                if rng.random() < 0.3:\n"
              "                    with quiet_stdout():\n                        os.write(1, b'')\n"
              "    except Exception as exc:\n        errors.append(repr(exc))\n"
              "ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]\n"
              "[t.start() for t in ts]\n[t.join() for t in ts]\nos.write(1, b'shown')\n"
              "os.write(2, f'{before} {len(os.listdir(\"/proc/self/fd\"))} {len(errors)}'.encode())\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=ROOT, timeout=120)
    before, after, errors = out.stderr.decode().split()[-3:]
    assert (out.returncode, out.stdout, before, errors) == (0, b"shown", after, "0"), out.stderr


# ---- 5: a $0 plan (inventory covers everything) -----------------------------------------------------------
def test_inventory_that_covers_all_demand_plans_at_zero(tmp_path):
    m = write_case(tmp_path / "m", {"train": [2, 3, 1, 2]},
                   [price(hourly=3.0), price(option="reserved_1y", hourly=1.5, term_months=12)],
                   {"train": {"spot": False}},
                   inventory=[{"gpu_type": "A", "region": "r1", "option": "reserved_1y", "gpus": 8,
                               "start": "2026-06-01", "end": "2027-06-01"}])
    out = tmp_path / "out"
    r = _run_plan(m, out)
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "plan.json").read_text())
    assert doc["cost_usd"]["total"] == 0.0
    assert doc["bill_usd"]["already_committed_usd"] == pytest.approx(8 * 1.5 * 4)
    assert doc["showback_by_month"] == []
    assert doc["cost_by_class_usd"] == {"train": 0.0}


# ---- 6: FOCUS CSV cells a spreadsheet would run -----------------------------------------------------
def test_focus_text_that_looks_like_a_formula_is_inert(tmp_path):
    out = tmp_path / "out"
    assert _run_plan(_tiny(tmp_path), out).exit_code == 0
    csv = tmp_path / "f.csv"
    evil = '=HYPERLINK("http://x/","p")'
    r = CliRunner().invoke(cli, ["export", "focus", str(out / "plan.json"), "--out", str(csv),
                                 "--provider", evil, "--billing-account", "+1", "--sub-account", "@SUM(A1)"])
    assert r.exit_code == 0, r.output
    frame = pd.read_csv(csv, dtype=str, keep_default_na=False)
    text = frame  # every cell as read (dtype=str)
    for col in text.columns:
        starts = text[col].str[:1]
        assert not starts.isin(["=", "+", "@", "\t", "\r"]).any(), col
        assert not (starts.eq("-") & pd.to_numeric(text[col], errors="coerce").isna()).any(), col
    assert set(frame["ProviderName"]) == {"'" + evil}
    assert set(frame["BillingAccountId"]) == {"'+1"}
    assert float(pd.to_numeric(frame["BilledCost"]).sum()) == pytest.approx(11.0)  # numbers untouched


# ---- 12: latency on the type that serves ------------------------------------------------------------------
def test_latency_is_queued_on_the_gpu_type_the_plan_uses(tmp_path):
    m = write_case(tmp_path / "m", {"chat": [20.0, 40.0, 30.0]},
                   [price("H100", hourly=10.0), price("A100", hourly=2.0)],
                   {"chat": {"spot": False, "demand_unit": "requests_per_s", "latency_slo_ms": 1000,
                             "slo_percentile": 99,
                             "replicas": {"H100": {"service_ms": 150}, "A100": {"service_ms": 200}}}})
    plan = solve_case(m)
    lat = plan.latency
    assert set(plan.allocation.loc[plan.allocation["gpus"] > 0, "gpu_type"]) == {"A100"}
    assert set(lat["serving_gpu_types"]) == {"A100"}
    want = queueing.latency_percentile(99, lat["requests_per_s"].to_numpy(), 0.2, lat["replicas"].to_numpy()) * 1000
    assert lat["latency_at_percentile_ms"].to_numpy() == pytest.approx(want, rel=1e-9)
    ref = queueing.latency_percentile(99, lat["requests_per_s"].to_numpy(), 0.15, lat["replicas"].to_numpy()) * 1000
    assert (lat["latency_at_percentile_ms"].to_numpy() > ref + 100).all()  # the H100 figure it used to give


def test_mixed_types_latency_is_the_mixture_of_split_queues():
    from types import SimpleNamespace

    from planner.results.plan import _mixed_latency

    spec = SimpleNamespace(latency_slo_ms=800.0, percentile=99.0, service_cv=1.0)
    lam = np.array([30.0])
    c = np.array([[4], [6]])
    service = np.array([0.1, 0.2])
    pct, above = _mixed_latency(lam, c, service, spec)
    cap = c[:, 0] / service
    share = cap / cap.sum()
    tail = lambda x: sum(share[j] * queueing.p_latency_above(x, lam[0] * share[j], service[j], c[j, 0])  # noqa: E731
                         for j in range(2))
    assert tail(pct[0]) == pytest.approx(0.01, rel=1e-6)
    assert above[0] == pytest.approx(tail(0.8), rel=1e-9)
    own = [queueing.latency_percentile(99, lam[0] * share[j], service[j], c[j, 0]) for j in range(2)]
    assert min(own) <= pct[0] <= max(own)


# ---- 17: to_excel on a folder ------------------------------------------------------------------------------
def test_to_excel_on_a_folder_names_it(tmp_path):
    plan = solve_case(_tiny(tmp_path))
    folder = tmp_path / "outputs"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as err:
        plan.to_excel(folder)
    assert str(folder) in str(err.value) and ".tmp" not in str(err.value)
    assert list(folder.iterdir()) == []


# ---- benders asked, cbc used -------------------------------------------------------------------------
def test_benders_with_cbc_says_it_solved_whole(tmp_path):
    if "cbc" not in planner.solve.monolithic.available_backends():
        pytest.skip("CBC not installed")
    m = write_case(tmp_path / "m", {"c": [5, 6]}, [price(hourly=2.0), price(option="reserved_1y", hourly=1.0)],
                   {"c": {}}, solver={"method": "benders"})
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(out), "--solver", "cbc"])
    assert r.exit_code == 0, r.output
    assert 'method = "benders" was asked, but the model was solved whole (monolithic): --solver cbc' in r.output
    assert json.loads((out / "plan.json").read_text())["notes"][0].startswith('method = "benders" was asked')
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(out)])  # HiGHS: decomposed, no note
    assert r.exit_code == 0 and "solved whole" not in r.output


OTHER_THREAD_SCRIPT = r"""
import os, sys, threading, time
sys.path.insert(0, sys.argv[1])
import planner
from conftest import price, write_case
from pathlib import Path
n = 24 * 60
inp = planner.load_inputs(write_case(Path(sys.argv[2]), {"a": [5 + (i % 17) for i in range(n)],
                                                          "b": [3 + (i % 11) for i in range(n)]},
                                     [price(hourly=2.0), price(option="reserved_1y", hourly=1.0),
                                      price("B", hourly=2.5), price("B", option="reserved_1y", hourly=1.1)],
                                     {"a": {}, "b": {}}, solver={"merge_periods": False}))
stop = threading.Event()
count = [0]
def talk():
    while not stop.is_set():
        os.write(1, b"tick\n")
        count[0] += 1
        time.sleep(0.002)
t = threading.Thread(target=talk)
t.start()
planner.plan(inp)  # whole-term judging: several HiGHS objects made, their solves most of the time the thread talks
stop.set()
t.join()
os.write(2, f"{count[0]}\n".encode())
"""


def test_another_threads_output_is_not_lost_while_highs_solves(tmp_path):
    out = subprocess.run([sys.executable, "-c", OTHER_THREAD_SCRIPT, str(ROOT / "tests"), str(tmp_path / "m")],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    sent = int(out.stderr.strip().splitlines()[-1])
    got = out.stdout.count("tick")
    assert sent > 50 and got >= 0.97 * sent, (got, sent)  # only the instant a HiGHS object is made is silenced
    # (fd 1 silenced for each whole solve instead, about 90 % of the ticks are lost: 76-113 of 892-941 arrived)


def test_an_slo_class_that_misses_on_mixed_gpu_types_says_so_and_exits_3(tmp_path):
    # H100 400 ms, A100 550 ms capped at 20 GPUs: the plan mixes them and the split queues miss p99 <= 3 s
    demand = [30.0 + 60.0 * (i % 24) / 23 for i in range(24)]
    m = write_case(tmp_path / "m", {"chat": demand},
                   [price("H100", hourly=10.0), price("A100", hourly=2.0, max_gpus=20)],
                   {"chat": {"spot": False, "demand_unit": "requests_per_s", "latency_slo_ms": 3000,
                             "slo_percentile": 99,
                             "replicas": {"H100": {"service_ms": 400}, "A100": {"service_ms": 550}}}})
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["plan", str(m), "--out", str(out)])
    plan = solve_case(m)
    misses = plan.slo_misses
    assert len(misses) == 1 and misses["periods_missed"].iat[0] > 0
    assert "SLO MISSED: chat misses p99 <= 3000 ms" in r.output
    assert r.exit_code == 3, r.output
    doc = json.loads((out / "plan.json").read_text())
    assert doc["slo"][0]["periods_missing_slo"] == int(misses["periods_missed"].iat[0])
    assert {p["serving_gpu_types"] for p in doc["slo"][0]["periods"]} >= {"H100+A100"}
    # served on one type only, the same class meets its SLO in every period and exits 0
    m1 = write_case(tmp_path / "one", {"chat": demand}, [price("H100", hourly=10.0)],
                    {"chat": {"spot": False, "demand_unit": "requests_per_s", "latency_slo_ms": 3000,
                              "slo_percentile": 99, "replicas": {"H100": {"service_ms": 400}}}})
    r1 = CliRunner().invoke(cli, ["plan", str(m1), "--out", str(tmp_path / "o1")])
    assert r1.exit_code == 0 and "SLO MISSED" not in r1.output


def test_an_interrupt_while_outputs_are_replaced_one_by_one_says_which_are_new(tmp_path):
    """A folder holding another file takes the outputs one by one. Interrupted after the first, the exception says
    which are the new run's (the CLI said "no outputs were changed" while plan.json was already replaced); in a
    folder of outputs only (exchanged whole) nothing is replaced and nothing is said."""
    import pytest

    from planner.core.atomic import publish_together

    def writers(stop_at):
        def make(name):
            def write(path):
                if name == stop_at:
                    raise KeyboardInterrupt
                path.write_text("new " + name)
            return write
        return {name: make(name) for name in ("plan.json", "plan.xlsx", "fleet.csv")}

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "notes.txt").write_text("mine")
    for name in ("plan.json", "plan.xlsx", "fleet.csv"):
        (mixed / name).write_text("old " + name)
    with pytest.raises(KeyboardInterrupt) as info:
        publish_together(mixed, writers("plan.xlsx"))
    assert info.value.replaced_outputs == ["plan.json"]
    assert (mixed / "plan.json").read_text() == "new plan.json" and (mixed / "plan.xlsx").read_text() == "old plan.xlsx"
    assert sorted(p.name for p in mixed.iterdir()) == ["fleet.csv", "notes.txt", "plan.json", "plan.xlsx"]
    only = tmp_path / "only"
    only.mkdir()
    for name in ("plan.json", "plan.xlsx", "fleet.csv"):
        (only / name).write_text("old " + name)
    with pytest.raises(KeyboardInterrupt) as info:
        publish_together(only, writers("plan.xlsx"))
    assert not hasattr(info.value, "replaced_outputs")
    assert {p.name: p.read_text() for p in only.iterdir()} == {n: "old " + n for n in ("plan.json", "plan.xlsx",
                                                                                      "fleet.csv")}
