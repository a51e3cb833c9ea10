"""Where many independent solves run: local processes, or a Dask cluster.

Sweeps, comparisons and backtests hand a list of tasks to an executor:
``executor.map(fn, tasks, initializer=..., initargs=...)`` runs ``fn(task)`` for
every task and returns one :class:`Outcome` per task, in task order. A task that
raises is reported as failed (its error text kept) and the others go on.
``initializer(*initargs)`` loads what every task shares (the validated inputs)
once per worker, not once per task.

- :class:`LocalExecutor`: ``jobs`` processes on this machine (``jobs=1`` runs here, no pool).
- :class:`DaskExecutor`: Dask distributed, on the cluster at ``scheduler`` (``tcp://host:8786``) or on a
  ``LocalCluster`` of ``jobs`` worker processes (``processes=False``: threads in this process, for quick tests).
  The shared arguments are scattered to every worker once; progress is shown as tasks finish.

Dask is imported only when a Dask executor is made.

Stopping: SIGTERM (``kill PID``) to the process running ``map`` is handled as Ctrl-C is: the workers
are terminated, the queue is dropped and :class:`Terminated` (a KeyboardInterrupt, so the CLI says
"Interrupted", changes no output and exits 1) is raised. Local workers also die with their parent
however it ends (Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, set in every worker before its initializer),
so that even ``kill -9`` of the parent leaves no worker solving under init.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable



def default_jobs() -> int:
    """Every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


_IN_WORKER: dict = {"process": False}  # set in a local executor's worker process: its siblings use the other cores
_IN_TASK = threading.local()  # .dask set while a Dask task runs on this thread (a worker's thread, or this process's
# own under DaskExecutor(processes=False): set for the task only)


def threads_here() -> int:
    """How many threads one piece of work here may run side by side (the in-process pricing's,
    :class:`planner.solve.workers.LocalPricer`): every core in a process of its own (or the one worker of a pool of
    one), one in a worker process of a pool of several or in a Dask task (a sweep's or a backtest's: the other
    workers use the other cores)."""
    return 1 if _IN_WORKER["process"] or getattr(_IN_TASK, "dask", False) else default_jobs()


@dataclass
class Outcome:
    """One task's result: ``value`` when ``ok``, else ``error`` ("ErrorType: message")."""

    index: int
    ok: bool
    value: Any = None
    error: str = ""
    seconds: float = 0.0


def _guarded(fn: Callable, task) -> tuple[bool, Any, float]:
    t0 = time.perf_counter()
    try:
        return True, fn(task), time.perf_counter() - t0
    except Exception as exc:  # reported per task; the run goes on
        from planner.core.errors import PlannerError

        text = str(exc) if isinstance(exc, PlannerError) else f"{type(exc).__name__}: {exc}"
        return False, text, time.perf_counter() - t0


class Progress:
    """A tqdm bar on stderr over the tasks (``12/50 [00:30<01:35]  <what just finished>``), drawn only when
    stderr is a terminal and progress was asked for (see :mod:`planner.core.progress`)."""

    def __init__(self, total: int, enabled: bool = True, width: int = 20):
        from planner.core.progress import bar

        self.total, self.enabled = total, enabled
        self.done = 0
        self.bar = bar(total, "solves", enabled=enabled)

    def step(self, text: str = "") -> None:
        """Count one finished task and move the bar (when shown)."""
        self.done += 1
        if text:
            self.bar.set_postfix_str(text[:60], refresh=False)
        self.bar.update(1)
        if self.done >= self.total:
            self.bar.close()


class _Recorder:
    def __init__(self, n: int, progress: bool, describe):
        self.outcomes: list[Outcome | None] = [None] * n
        self.bar = Progress(n, enabled=progress)
        self.describe = describe

    def __call__(self, i: int, ok: bool, value, seconds: float) -> None:
        out = Outcome(i, ok, value if ok else None, "" if ok else str(value), seconds)
        self.outcomes[i] = out
        self.bar.step(self.describe(out) if self.describe else "")


class Executor:
    """Runs ``fn(task)`` for many tasks; see the module docstring."""

    name = "executor"
    workers = 1

    def map(self, fn: Callable, tasks: list, *, initializer: Callable | None = None, initargs: tuple = (),
            progress: bool = True, describe: Callable[[Outcome], str] | None = None) -> list[Outcome]:
        """``fn(task)`` for every task; one :class:`Outcome` per task, in task order."""
        raise NotImplementedError

    def close(self) -> None:
        """Release workers (a no-op for local processes, which live only for one ``map``)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived while tasks ran: the workers were stopped (handled as Ctrl-C)."""


def die_with_parent(parent: int | None = None) -> None:
    """In a child process: die (SIGKILL) when the parent process ends, however it ends (Linux; else a no-op).

    ``parent`` is the pid the parent had (``os.getpid()`` there): when it is gone by the time this runs
    (the child was adopted and would live on), the child ends at once.
    """
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def _worker_start(parent: int, initializer, initargs, workers: int) -> None:
    """First thing in every local worker: default SIGTERM (a forked worker inherits the parent's handler),
    die with the parent, say whether it has siblings (``workers`` in its pool: :func:`threads_here`), then the
    caller's initializer."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(parent)
    _IN_WORKER["process"] = workers > 1  # (a pool of one: no sibling uses the other cores)
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def sigterm_raises():
    """While tasks run in this (main) thread: SIGTERM raises :class:`Terminated` (once), so that the ``except
    BaseException`` around the pool stops the workers before the process ends. The old handler comes back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = []

    def handler(signum, frame):
        if not fired:
            fired.append(signum)
            raise Terminated(f"signal {signum}")

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):  # not the main thread of the interpreter, or no signals here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def fork_context():
    """The fork context where forking is safe (see :func:`_context`), else None."""
    ctx = _context()
    return ctx if ctx.get_start_method() == "fork" else None


def _context():
    """fork where it is safe, else spawn.

    Safe means Linux, one Python thread, and no solver library loaded yet: HiGHS keeps a pool of native
    threads once it has solved, and a child forked from such a process waits forever for threads that were
    not copied (a notebook that plans, then sweeps). Forked workers inherit the loaded inputs for free.
    """
    methods = multiprocessing.get_all_start_methods()
    solver = sys.modules.get("planner.solve.monolithic")  # where HIGHS_RAN is kept (a lookup of "planner.core.solve"
    # never found it)
    highs_ran = bool(getattr(solver, "HIGHS_RAN", False))
    if sys.platform.startswith("linux") and "fork" in methods and threading.active_count() == 1 and not highs_ran:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


class LocalExecutor(Executor):
    """``jobs`` worker processes on this machine (``jobs=1``: in this process, which a debugger wants, unless
    ``isolate``: then in one worker process, so that a task that ends its process ends only its worker)."""

    name = "local"

    def __init__(self, jobs: int | None = None, isolate: bool = False):
        self.workers = max(1, jobs or default_jobs())
        self.isolate = isolate

    def __repr__(self) -> str:
        return f"LocalExecutor(jobs={self.workers}" + (", isolate=True)" if self.isolate else ")")

    def map(self, fn, tasks, *, initializer=None, initargs=(), progress=True, describe=None):
        """``fn(task)`` for every task on ``jobs`` processes; see :meth:`Executor.map`."""
        record = _Recorder(len(tasks), progress, describe)
        jobs = max(1, min(self.workers, len(tasks)))
        if jobs == 1 and not self.isolate:
            if initializer:
                initializer(*initargs)
            for i, task in enumerate(tasks):
                record(i, *_guarded(fn, task))
            return record.outcomes  # type: ignore[return-value]
        # a worker that dies breaks the whole pool: every task it took down gets one more try, each in a pool
        # of its own, so that only the task that really kills its worker fails (and not its neighbours again)
        with sigterm_raises():
            retry = self._round(fn, tasks, list(range(len(tasks))), jobs, initializer, initargs, record,
                                retry=True)
            for i in retry:
                self._round(fn, tasks, [i], 1, initializer, initargs, record, retry=False)
        return record.outcomes  # type: ignore[return-value]

    @staticmethod
    def _round(fn, tasks, todo, jobs, initializer, initargs, record, retry: bool) -> list[int]:
        """Run ``todo`` on a pool of ``jobs``; returns the tasks a broken pool took down (when ``retry``)."""
        workers = min(jobs, len(todo))
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=_context(),
                                   initializer=_worker_start, initargs=(os.getpid(), initializer, initargs, workers))
        again = []
        try:
            pending = {pool.submit(_guarded, fn, tasks[i]): i for i in todo}
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    i = pending.pop(fut)
                    try:
                        ok, value, seconds = fut.result()
                    except BrokenProcessPool as exc:
                        if retry:
                            again.append(i)
                            continue
                        ok, value, seconds = False, f"worker process died: {exc}", 0.0
                    except Exception as exc:  # e.g. a result that cannot be pickled back
                        ok, value, seconds = False, f"{type(exc).__name__}: {exc}", 0.0
                    record(i, ok, value, seconds)
        except BaseException:  # Ctrl-C or an error here: stop the workers now, not when their solves end
            _terminate(pool)
            raise
        pool.shutdown(wait=True)
        return sorted(again)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Kill a pool's worker processes and drop its queue (concurrent.futures keeps no public handle)."""
    for proc in list(getattr(pool, "_processes", {}).values()):
        try:
            proc.terminate()
        except Exception:  # already gone
            pass
    pool.shutdown(wait=False, cancel_futures=True)


_INITIALISED: dict[str, bool] = {}  # per Dask worker process: which runs' initializers have run here
_INIT_LOCK = threading.Lock()


def _dask_task(fn, task, run: str, initializer, initargs):
    """On a Dask worker: run this run's initializer once per worker process, then the task (one pricing thread:
    :func:`threads_here`)."""
    before = getattr(_IN_TASK, "dask", False)
    _IN_TASK.dask = True
    try:
        if initializer is not None:
            with _INIT_LOCK:
                if not _INITIALISED.get(run):
                    initializer(*initargs)
                    _INITIALISED.clear()  # one run's state at a time per worker
                    _INITIALISED[run] = True
        return _guarded(fn, task)
    finally:
        _IN_TASK.dask = before


DASK_TRIM_DEFAULT = 65536  # distributed's own MALLOC_TRIM_THRESHOLD_ for the workers its nannies start


@contextlib.contextmanager
def _glibc_trim_left_alone():
    """Dask's nannies start their workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (``distributed.nanny.pre-spawn-
    environ``): glibc then hands freed memory back to the system at once, and takes it again page by page. A
    pricing worker makes and frees a HiGHS model per batch: measured on XL, 1.6 s a pass against 1.0 s in a local
    process, the same 1.0 s without it. The LocalCluster started here leaves glibc's default (a user's own
    setting, any other value, is kept; the nannies read it once, so a worker they start again has it too)."""
    import dask

    env = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    if env.get("MALLOC_TRIM_THRESHOLD_") not in (DASK_TRIM_DEFAULT, str(DASK_TRIM_DEFAULT)):
        yield
        return
    env.pop("MALLOC_TRIM_THRESHOLD_")
    with dask.config.set({"distributed.nanny.pre-spawn-environ": env}):
        yield


CLUSTER_STARTS = 3  # tries at a LocalCluster whose event loop did not come up


def _local_cluster(local_cluster, **kwargs):
    """``local_cluster(**kwargs)``, tried again when distributed's event loop did not start.

    distributed waits 10 s for the thread that runs a new cluster's event loop, then fails with a bare
    AssertionError (``LoopRunner._start_unlocked``); on a loaded machine that thread can be late (CI saw it
    beside LibreOffice and worker processes). Nothing was started then: the half-built cluster is dropped
    quietly (its ``__del__`` would warn of an unclosed cluster: ignored while it is dropped) and the start tried again, at most
    ``CLUSTER_STARTS`` times; after that, a SolverError that says what to do."""
    import gc
    import warnings

    late = None
    for _ in range(CLUSTER_STARTS):
        with warnings.catch_warnings():  # the failed start's cluster is freed as its exception is
            warnings.simplefilter("ignore", ResourceWarning)
            try:
                return local_cluster(**kwargs)
            except AssertionError as exc:  # the event loop was late (only that: any other assertion is raised)
                if not _loop_was_late(exc):
                    raise
                late = exc.with_traceback(None)
            gc.collect()  # and, if held in a cycle, collected here
    from planner.core.errors import SolverError

    raise SolverError(f"the local Dask cluster's event loop did not start within distributed's 10 s, "
                      f"{CLUSTER_STARTS} times: the machine is overloaded; try again, or run with "
                      f"--executor local") from late


_NO_GC = {"lock": threading.RLock(), "depth": 0, "was": True}  # the guards open now, and the collector before them


@contextlib.contextmanager
def _no_collection_while_loops_start():
    """No garbage collection while distributed starts or stops an event loop: a forgotten ``Client`` collected then
    closes itself from its ``__del__`` and takes ``LoopRunner``'s class-wide lock, which the start (or stop) already
    holds in this thread: a deadlock (seen once in the test suite: a cluster's start waited forever). Garbage is
    collected first; the collector is switched back on when the last guard open (in any thread: it is one per
    process) ends, if it was on when the first began (the start's processes are spawned: theirs is on)."""
    import gc

    gc.collect()  # (outside the lock: a finalizer it runs may close an executor, and so open a guard)
    with _NO_GC["lock"]:
        if _NO_GC["depth"] == 0:
            _NO_GC["was"] = gc.isenabled()
            gc.disable()
        _NO_GC["depth"] += 1
    try:
        yield
    finally:
        with _NO_GC["lock"]:
            _NO_GC["depth"] -= 1
            if _NO_GC["depth"] == 0 and _NO_GC["was"]:
                gc.enable()


def _loop_was_late(exc: AssertionError) -> bool:
    """Whether ``exc`` is distributed's own failure to see a new event loop start (its ``LoopRunner``)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_name == "_start_unlocked"


class DaskExecutor(Executor):
    """Dask distributed: a cluster's scheduler address, or a LocalCluster started here (closed by ``close``)."""

    name = "dask"

    def __init__(self, scheduler: str | None = None, jobs: int | None = None, processes: bool = True):
        try:
            from distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - dask is a dependency
            from planner.core.errors import SolverError

            raise SolverError("Dask is not installed: pip install 'dask[distributed]'") from None
        self.cluster = None
        if scheduler:
            try:
                with _no_collection_while_loops_start():
                    self.client = Client(scheduler, timeout="30s")
            except (OSError, ValueError, TypeError) as exc:  # unreachable, or not an address
                from planner.core.errors import ConfigError, Problem

                raise ConfigError(Problem("command line", f"cannot reach the Dask scheduler ({exc})",
                                          value=scheduler, expected="--scheduler tcp://HOST:PORT of a running "
                                          "`dask scheduler`")) from None
        else:
            n = max(1, min(jobs or default_jobs(), default_jobs()))  # more workers than cores: memory, no speed
            # a SIGTERM while the cluster starts is held, then acted on once it is up (closed, then Terminated):
            # raised mid-start it would leave worker processes no one closes
            held: list[int] = []
            prior = _hold_sigterm(held)
            try:
                with _glibc_trim_left_alone(), _no_collection_while_loops_start():
                    self.cluster = _local_cluster(LocalCluster, n_workers=n, threads_per_worker=1,
                                                  processes=processes, dashboard_address=":0",
                                                  silence_logs=50)  # a lost worker is retried
                    self.client = Client(self.cluster)
            except BaseException:
                if prior is not None:
                    with contextlib.suppress(ValueError, OSError):
                        signal.signal(signal.SIGTERM, prior)
                raise
            _raise_on_sigterm()  # a `kill` now closes the cluster (no orphans, no leaked semaphores)
            self._old_sigterm = prior  # put back by close
            if held:
                self.close()
                raise Terminated(f"signal {held[0]}")
        self.workers = max(1, len(self.client.scheduler_info().get("workers", {})) or (jobs or 1))

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client.scheduler.address}, workers={self.workers})"

    def map(self, fn, tasks, *, initializer=None, initargs=(), progress=True, describe=None):
        """``fn(task)`` for every task on the Dask workers (shared arguments scattered once)."""
        from distributed import as_completed

        record = _Recorder(len(tasks), progress, describe)
        if not tasks:
            return []
        run = uuid.uuid4().hex
        shared = self.client.scatter(list(initargs), broadcast=True) if initargs else []
        futures = [self.client.submit(_dask_task, fn, task, run, initializer, *([shared] if initargs else [()]),
                                      pure=False, key=f"planner-{run}-{i}")
                   for i, task in enumerate(tasks)]
        index = {f.key: i for i, f in enumerate(futures)}
        try:
            with sigterm_raises():
                self._collect(as_completed(futures), index, record)
        except BaseException:
            self.client.cancel(futures)
            raise
        return record.outcomes  # type: ignore[return-value]

    @staticmethod
    def _collect(finished, index, record) -> None:
        """Record every future as it finishes."""
        for fut in finished:
            i = index[fut.key]
            try:
                ok, value, seconds = fut.result()
            except Exception as exc:  # the worker died, or the result could not come back
                ok, value, seconds = False, f"{type(exc).__name__}: {exc}", 0.0
            record(i, ok, value, seconds)

    def close(self) -> None:
        """Close the client, and the LocalCluster when this executor started one (SIGTERM's handler restored)."""
        with _no_collection_while_loops_start():  # (a stop holds LoopRunner's class-wide lock too)
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
        if self.cluster is not None:
            old, self._old_sigterm = getattr(self, "_old_sigterm", None), None
            if old is not None:
                with contextlib.suppress(ValueError, OSError):
                    signal.signal(signal.SIGTERM, old)


def _hold_sigterm(held: list):
    """In the main thread: SIGTERM is recorded in ``held`` instead of acted on; the previous handler is returned
    (None elsewhere, where nothing is changed)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        return signal.signal(signal.SIGTERM, lambda signum, frame: held.append(signum))
    except (ValueError, OSError):
        return None


def _raise_on_sigterm():
    """In the main thread: SIGTERM raises :class:`Terminated` (handled as Ctrl-C: the ``finally`` that closes a
    LocalCluster runs) until the previous handler, returned, is put back; None elsewhere."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the shutdown itself is not interrupted
        raise Terminated(f"signal {signum}")

    try:
        return signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):
        return None


def make_executor(kind: str = "local", *, jobs: int | None = None, scheduler: str | None = None,
                  processes: bool = True) -> Executor:
    """``"local"`` (processes here) or ``"dask"`` (``scheduler``'s cluster, else a LocalCluster of ``jobs``)."""
    if kind == "local":
        return LocalExecutor(jobs)
    if kind == "dask":
        return DaskExecutor(scheduler=scheduler, jobs=jobs, processes=processes)
    raise ValueError(f"unknown executor {kind!r}; expected 'local' or 'dask'")
