"""Ctrl-C and SIGTERM stop a long HiGHS solve at once (planner.solve.interrupt), not when it ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def random_lp(n: int):
    """A random covering LP of ``n`` rows and columns, presolve off: seconds of dual simplex at n = 5000."""
    import highspy
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("presolve", "off")
    h.addVars(n, np.zeros(n), np.full(n, highspy.kHighsInf))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), rng.random(n))
    A = sp.random(n, n, density=20 / n, random_state=1, format="csr")
    A.data = rng.random(len(A.data))
    h.addRows(n, np.ones(n), np.full(n, highspy.kHighsInf), A.nnz, A.indptr[:-1].astype(np.int32),
              A.indices.astype(np.int32), A.data)
    return h


CHILD = r"""
import sys, time
sys.path.insert(0, 'TESTS_DIR')
from planner.core.executors import sigterm_raises
from planner.solve.interrupt import run
from test_interrupt import random_lp

h = random_lp(5000)  # about 3 s of dual simplex on this machine's core
print("started", flush=True)
t0 = time.perf_counter()
try:
    with sigterm_raises():
        status = run(h)
except BaseException as exc:
    from planner.solve.interrupt import solving

    print("raised", type(exc).__name__, round(time.perf_counter() - t0, 2), "solving" if solving() else "stopped",
          str(h.getModelStatus()).split(".")[-1], flush=True)
    raise SystemExit(1)
print("solved", round(time.perf_counter() - t0, 2), flush=True)
""".replace("'TESTS_DIR'", repr(str(ROOT / "tests")))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_a_long_highs_solve_at_once(sig):
    """The LP takes seconds; the signal comes 0.5 s into it: the handler's exception (KeyboardInterrupt; SIGTERM's
    Terminated, a KeyboardInterrupt) is raised within a second, the solve stopped (HiGHS's interrupt status, its
    thread gone: a library caller's next solve does not run beside it) and the process ends normally (exit 1, not
    an abort). Before, ``Highs.run()`` held the main thread until the LP ended (minutes on a three-year master)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        line = child.stdout.readline()
        while line and line.strip() != "started":  # HiGHS's banner first
            line = child.stdout.readline()
        assert line.strip() == "started"
        time.sleep(0.5)
        child.send_signal(sig)
        sent = time.perf_counter()
        out, _ = child.communicate(timeout=60)
        waited = time.perf_counter() - sent
    finally:
        child.kill()
        child.stdout.close()
    if out.startswith("solved"):
        pytest.skip(f"the LP solved before the signal on this machine ({out.strip()})")
    words = out.split()  # the lines after "started"
    assert words[:2] == ["raised", "Terminated" if sig == signal.SIGTERM else "KeyboardInterrupt"], out
    assert words[3:5] == ["stopped", "kInterrupt"], out
    assert child.returncode == 1 and waited < 1.5, (out, waited)


def test_a_second_run_of_one_highs_object_gets_the_seconds_left():
    """HiGHS's time limit is measured on its own clock, which adds up over every run of the object: a second run
    given "the seconds left" (less than the first run took) stopped at once with "Time limit reached".
    ``time_left`` gives it that many seconds more than the clock shows."""
    import highspy
    import numpy as np

    from planner.solve.monolithic import time_left

    for n in (2500, 5000, 10000):  # a few tenths of a second of dual simplex here; larger on a faster machine
        h = random_lp(n)
        h.run()
        first = h.getRunTime()
        if first > 0.05:
            break
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal and first > 0.05
    x = np.asarray(h.getSolution().col_value)
    big = np.argsort(-x)[:2].astype(np.int32)  # two columns in the basis: halving their bounds takes pivots
    h.changeColsBounds(1, big[:1], np.zeros(1), x[big[:1]] / 2)
    time_left(h, first / 2)  # fewer seconds than the first run took, ample for the second
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal and h.getInfo().simplex_iteration_count > 0
    h.setOptionValue("time_limit", first / 2)  # the seconds left alone: stopped at once (what was done before)
    h.changeColsBounds(1, big[1:], np.zeros(1), x[big[1:]] / 2)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit


def test_solves_asking_for_other_threads_each_get_a_scheduler_of_their_own():
    """Every solve runs on one thread made for them; HiGHS refuses another ``threads`` on a scheduler already running
    ("HiGHS failed: Not Set" on a library's second make_plan with other [solver] threads): such a solve gets a new
    thread. Both orders, each solve optimal."""
    import highspy
    import numpy as np

    from planner.solve.interrupt import run

    def tiny(threads):
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", threads)
        h.addVars(2, np.zeros(2), np.full(2, 10.0))
        h.changeColsCost(2, np.arange(2, dtype=np.int32), np.array([1.0, 2.0]))
        h.changeColsIntegrality(2, np.arange(2, dtype=np.int32),
                                np.full(2, highspy.HighsVarType.kInteger))
        h.addRows(1, np.array([3.5]), np.array([highspy.kHighsInf]), 2, np.array([0], dtype=np.int32),
                  np.arange(2, dtype=np.int32), np.array([1.0, 1.0]))
        return h

    # the solving thread is used where Ctrl-C has a Python handler (a test worker may run with SIGINT ignored)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for threads in (1, 2, 1, 2):
            h = tiny(threads)
            assert run(h) != highspy.HighsStatus.kError
            assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
            assert h.getInfo().objective_function_value == 4.0
    finally:
        signal.signal(signal.SIGINT, old)
