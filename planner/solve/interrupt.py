"""HiGHS solves that Ctrl-C and SIGTERM stop at once: the whole model's (planner.solve.monolithic).

``Highs.run()`` holds the calling thread in native code until the solve ends: a signal's Python handler (Ctrl-C's
KeyboardInterrupt, SIGTERM's :class:`planner.core.executors.Terminated`) runs only after it. :func:`run` solves on a
thread made for the solves while the main thread waits, so the handler runs and its exception is raised here within
a fraction of a second. The solve is told to stop (HiGHS's user interrupt, ``cancelSolve``: within milliseconds)
and waited for, so that a library caller (a notebook's Ctrl-C) is not left with a solve running beside its next one.
Measured: a 10.8 s LP, interrupted 2.7 s in, left the process in 0.04 s (8 s run out before); a 16.9 s whole-model
solve stopped in 0.1 s; the same LP took 10.7 s on that thread.

Used for the whole model's solves only. The Benders masters, the aggregate start and the duals LP run on the main
thread as before: run off it, three years' peak memory went from 3,888 MB to 4,463 MB (one thread for them) and to
5,421 MB with the interrupt callbacks (the 4 GB target). A Ctrl-C in a master LP waits for it, as it did.

Every solve runs on one thread made for them (:func:`_solver`), one after another, as they ran on the main thread.
Off the main thread (a worker's own thread, a test's), or where no Python handler is installed, it is
``Highs.run()`` itself.
"""

from __future__ import annotations

import queue
import signal
import threading

POLL_S = 0.25  # how often the waiting thread lets a signal's handler run (a join returns at once when the solve ends)
STOP_S = 5.0  # how long an interrupted solve is waited for once told to stop (it stops within milliseconds)


def run(h):
    """``h.run()``, its status returned; raises what a signal's handler raises while it runs (the solve stopped)."""
    if threading.current_thread() is not threading.main_thread() or not _handled():
        return h.run()
    box: dict = {}
    done = threading.Event()
    if not h.HandleUserInterrupt:  # cancelSolve() then stops the solve within milliseconds (its interrupt callbacks:
        h.HandleUserInterrupt = True  # no measurable cost, 3.42 s against 3.39 s on an LP of 22,000 pivots)
    _solver(h.getOptionValue("threads")).put((h, box, done))
    try:
        while not done.wait(POLL_S):  # a signal's handler runs here (KeyboardInterrupt, Terminated): raised to
            pass  # the caller
    except BaseException:
        h.cancelSolve()  # the solve stops (a library caller's next solve does not compete with it for minutes)
        done.wait(STOP_S)  # (an Event: a Thread.join interrupted once returns at once after, the thread alive)
        raise
    if "error" in box:
        raise box["error"]
    return box["status"]


def solving() -> bool:
    """Whether a solve :func:`run` stopped is still running (it did not stop within ``STOP_S``): a process that ends
    now should leave with ``os._exit``, as HiGHS's threads abort the interpreter's normal exit."""
    return bool(_SOLVER.get("busy"))


_SOLVER: dict = {}  # the one thread that runs this process's solves (made when first needed, again after a fork)


def _solver(threads=None):
    """The queue of the thread that runs every solve :func:`run` is given, one after another. One thread for them
    all, as when they ran on the main thread: HiGHS keeps its task scheduler (and the allocator its arenas) per
    thread, and a thread per solve took three years' peak from 3,888 MB to 4,478 MB. A solve asking for another
    ``threads`` than the thread's scheduler was made with gets a new thread (HiGHS refuses the change on a running
    scheduler: "HiGHS failed: Not Set"); the old one ends."""
    t = _SOLVER.get("thread")
    if t is not None and t.is_alive() and threads is not None and _SOLVER.get("threads") not in (None, threads):
        _SOLVER["queue"].put(None)  # the old thread ends (its scheduler with it)
        t = None
    if t is None or not t.is_alive():
        q = queue.SimpleQueue()
        t = threading.Thread(target=_serve, args=(q,), name="highs-run", daemon=True)
        _SOLVER.update(queue=q, thread=t, busy=False, threads=None)
        t.start()
    if threads is not None:
        _SOLVER["threads"] = threads
    return _SOLVER["queue"]


def _serve(q) -> None:
    """The solving thread: each (HiGHS object, answer, done) from ``q`` run, its status or error in the answer."""
    while True:
        job = q.get()
        if job is None:  # replaced (another threads setting)
            return
        h, box, done = job
        _SOLVER["busy"] = True
        try:
            box["status"] = h.run()
        except BaseException as exc:  # noqa: BLE001 (raised again in the caller's thread)
            box["error"] = exc
        finally:
            _SOLVER["busy"] = False
            done.set()


def _handled() -> bool:
    """True where Ctrl-C or SIGTERM has a Python handler (else no signal can be raised here: run in place)."""
    return any(callable(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM))
