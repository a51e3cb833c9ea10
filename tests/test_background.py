"""planner.core.background: tasks on one low-priority process, claimed one at a time, the rest taken back.

Oracles: the tasks' own answers computed here; the worker's priority and out-of-memory score read from /proc by the
task itself; which tasks were begun, pinned by tasks that wait on files the test writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from planner.core.background import NICE, Background


def square(x):
    return x * x


def niceness_and_oom(_):
    with open("/proc/self/oom_score_adj", encoding="ascii") as f:
        return os.nice(0), int(f.read()), os.getpid()


def wait_for(path):
    """Begin, say so (a file named ``path`` + ".begun"), then wait until ``path`` exists; return the path."""
    Path(path + ".begun").write_text("")
    for _ in range(3000):
        if os.path.exists(path):
            return path
        time.sleep(0.01)
    raise TimeoutError(path)


def fails(x):
    if x == 1:
        raise ValueError("task one is bad")
    return x


def dies(x):
    if x == 1:
        os._exit(3)
    return x


def _until(predicate, seconds=30.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_every_task_is_run_in_order_when_none_is_taken_back():
    bg = Background(square, [3, 4, 5])
    assert _until(lambda: not bg.process.is_alive())  # it ends once every task is done
    out = bg.results()
    assert sorted(out) == [0, 1, 2]
    assert [out[i].value for i in range(3)] == [9, 16, 25] and all(o.ok for o in out.values())
    assert bg.stop() == []  # nothing was left to take back


def test_the_worker_runs_at_the_lowest_priority_first_to_go_out_of_memory():
    before = os.nice(0)
    bg = Background(niceness_and_oom, [None])
    assert _until(lambda: not bg.process.is_alive())  # (results() would take back a task not yet begun)
    (nice, oom, pid), = [o.value for o in bg.results().values()]
    assert nice == NICE == 19 and oom == 1000
    assert pid != os.getpid()
    assert os.nice(0) == before  # (this process is left as it was)


def test_stop_hands_back_the_tasks_not_begun_and_results_waits_for_the_one_in_hand(tmp_path):
    files = [str(tmp_path / f"go{i}") for i in range(4)]
    bg = Background(wait_for, files)
    assert _until(lambda: os.path.exists(files[1] + ".begun") or os.path.exists(files[0] + ".begun"))
    Path(files[0]).write_text("")  # the first may end; the second begins and waits
    assert _until(lambda: os.path.exists(files[1] + ".begun"))
    assert bg.stop() == [2, 3]  # the third and fourth are the caller's
    assert bg.stop() == [2, 3]  # (asked again: the same answer)
    Path(files[1]).write_text("")
    out = bg.results()
    assert sorted(out) == [0, 1] and [out[0].value, out[1].value] == files[:2]
    time.sleep(0.3)
    assert not os.path.exists(files[2] + ".begun")  # never begun there
    assert not bg.process.is_alive()


def test_stopped_before_it_begins_anything_every_task_is_handed_back(tmp_path):
    files = [str(tmp_path / f"go{i}") for i in range(3)]
    bg = Background(wait_for, files)
    left = bg.stop()  # (the worker may have claimed the first already: it is then its)
    assert left in ([0, 1, 2], [1, 2])
    for f in files:
        Path(f).write_text("")
    assert sorted(bg.results()) == [i for i in range(3) if i not in left]


def test_a_task_that_raises_is_an_outcome_not_an_error_and_the_next_goes_on():
    bg = Background(fails, [0, 1, 2])
    assert _until(lambda: not bg.process.is_alive())
    out = bg.results()
    assert [out[i].ok for i in range(3)] == [True, False, True]
    assert "ValueError: task one is bad" in out[1].error and out[2].value == 2


def test_a_worker_that_dies_leaves_its_task_out_and_the_rest_to_the_caller():
    bg = Background(dies, [0, 1, 2])
    assert _until(lambda: not bg.process.is_alive())
    left = bg.stop()
    out = bg.results()
    assert left == [2]  # the worker had claimed 0 and 1
    assert sorted(out) == [0] and out[0].value == 0  # task 1 is missing: the caller does it


def test_close_kills_a_worker_in_the_middle_of_a_task(tmp_path):
    bg = Background(wait_for, [str(tmp_path / "never")])
    assert _until(lambda: os.path.exists(str(tmp_path / "never") + ".begun"))
    t0 = time.monotonic()
    bg.close()
    assert not bg.process.is_alive() and time.monotonic() - t0 < 5
    bg.close()  # (again: a no-op)


@pytest.mark.slow
def test_the_worker_dies_with_its_parent_however_the_parent_ends(tmp_path):
    root = Path(__file__).resolve().parents[1]
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path[:0] = [{str(root)!r}, {str(Path(__file__).parent)!r}]
        from planner.core.background import Background
        from test_background import wait_for
        bg = Background(wait_for, [{str(tmp_path / "never")!r}])
        print(bg.process.pid, flush=True)
        time.sleep(120)
    """))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert _until(lambda: os.path.exists(str(tmp_path / "never") + ".begun"))
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)

        def gone():
            try:
                with open(f"/proc/{child}/stat", encoding="ascii") as f:
                    return f.read().split(")")[1].split()[0] == "Z"
            except FileNotFoundError:
                return True

        assert _until(gone, 10), "the background worker outlived its parent"
    finally:
        parent.kill()
        parent.wait(timeout=10)
        parent.stdout.close()
