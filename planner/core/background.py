"""Work done on a core the rest of the run leaves idle: tasks run one after another on one worker process at the
lowest CPU priority (nice 19), claimed one at a time, so that whoever started them can take back the ones not begun.

A plan's later stages need work that does not depend on its earlier ones (the risk view's sub-plans depend on the
inputs only), while those earlier stages leave a core idle for minutes (a Benders master, a model's build and read,
a worker's start). :class:`Background` starts such tasks at once on a process of its own: under contention the
kernel gives it the cycles the run's own processes leave (a nice-19 process gets about 1.5 % of a core that a
nice-0 one wants), so the run is hardly slowed (the cores share their cache and memory: a three-year decision took
3 % longer beside it), and every task begun there is one the run need not do later. Its tasks get only the cycles
left over: a task with a wall-clock limit may reach it there where it would not have in the run's own time (the
caller judges such an answer: :func:`planner.pipeline.sub_plans._solve_early`).

- ``Background(fn, tasks, initializer=..., initargs=...)`` starts the worker (forked where that is safe, else
  spawned, as :class:`~planner.core.executors.LocalExecutor`'s); ``fn`` and ``initializer`` must be module-level
  functions (a spawned worker imports them by name).
- :meth:`Background.stop` ends the claiming: it returns the indices of the tasks not begun, which are the caller's
  now; the worker finishes the one it runs, if any, and ends.
- :meth:`Background.done` returns the outcomes sent so far without waiting.
- :meth:`Background.results` waits for the tasks begun and returns their :class:`~planner.core.executors.Outcome`
  by index. A worker that died (killed, out of memory) leaves its tasks out: the caller does them itself.
- :meth:`Background.close` kills the worker at once (an interrupt, an error, a plan that needs no results).

The worker dies with its parent however the parent ends (``prctl(PR_SET_PDEATHSIG)``), takes SIGTERM as its
default (a forked child inherits the parent's handler otherwise), and is the first process the kernel ends when the
machine runs out of memory (``oom_score_adj`` 1000, Linux): its tasks then fall back to the caller, not the run.
"""

from __future__ import annotations

import contextlib
import os

from planner.core.executors import Outcome, _context, _guarded, _worker_start

NICE = 19  # the lowest priority: the worker runs only where the run's own processes leave a core idle


def _main(parent: int, fn, tasks: list, claim, conn, initializer, initargs) -> None:
    """The worker: its start as a local executor's worker (one pricing thread: the run's own processes use the
    other cores), the lowest priority, then each task claimed in turn until none is left or claiming has stopped
    (``claim``: the next task's index; negative once stopped)."""
    _worker_start(parent, initializer, initargs, 2)
    with contextlib.suppress(OSError):
        os.nice(NICE)
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w", encoding="ascii") as f:
        f.write("1000")  # out of memory, the kernel ends this process first: its tasks fall back to the caller
    try:
        while True:
            with claim.get_lock():
                i = claim.value
                if i < 0 or i >= len(tasks):
                    return
                claim.value = i + 1
            conn.send((i, *_guarded(fn, tasks[i])))
    finally:
        conn.close()


class Background:
    """``fn(task)`` for ``tasks``, one after another on one low-priority worker process (module docstring)."""

    def __init__(self, fn, tasks: list, *, initializer=None, initargs: tuple = ()):
        ctx = _context()
        self.tasks = list(tasks)
        self.claim = ctx.Value("i", 0)
        self._read, write = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=_main, args=(os.getpid(), fn, self.tasks, self.claim, write, initializer,
                                                       initargs), daemon=True, name="planner-background")
        self.process.start()
        write.close()  # (the worker's end: once it ends, a read here sees EOF)
        self.begun: int | None = None  # set by stop(): the tasks [0, begun) are the worker's
        self._got: dict[int, Outcome] = {}  # the outcomes read so far

    def stop(self) -> list[int]:
        """End the claiming; the indices of the tasks not begun (the caller's to do now)."""
        if self.begun is None:
            with self.claim.get_lock():
                self.begun = min(self.claim.value, len(self.tasks)) if self.claim.value >= 0 else 0
                self.claim.value = -1
        return list(range(self.begun, len(self.tasks)))

    def done(self) -> dict[int, Outcome]:
        """The outcomes the worker has sent so far, by index, without waiting (claiming goes on)."""
        try:
            while not self._read.closed and self._read.poll(0):
                self._take()
        except (EOFError, OSError):  # the worker died: what it sent before stands
            pass
        return dict(self._got)

    def results(self) -> dict[int, Outcome]:
        """Stop (:meth:`stop`), wait for the tasks begun and return their outcomes by index; those of a worker
        that died are missing."""
        self.stop()
        try:
            while len(self._got) < self.begun and not self._read.closed:
                if self._read.poll(1.0):
                    self._take()
                elif not self.process.is_alive():  # (ended without a word: what it sent is read, then no more)
                    while self._read.poll(0):
                        self._take()
                    break
        except (EOFError, OSError):  # the worker died: its task in hand is missing
            pass
        self.close()
        return dict(self._got)

    def _take(self) -> None:
        i, ok, value, seconds = self._read.recv()
        self._got[i] = Outcome(i, ok, value if ok else None, "" if ok else str(value), seconds)

    def close(self) -> None:
        """Kill the worker (a no-op once it has ended) and release its pipe."""
        with contextlib.suppress(Exception):
            if self.process.is_alive():
                self.process.kill()
            self.process.join(timeout=10)
        with contextlib.suppress(Exception):
            self._read.close()
        if self.begun is None:
            self.begun = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
