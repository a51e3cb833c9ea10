"""Where the decomposition's batches are priced: here, on local worker processes, or on a Dask cluster.

Every pricer holds the batches of :mod:`planner.solve.recourse` (each built once, where it is priced, from the
inputs on that worker's own periods, sent once: :func:`share_inputs`) and answers ``price(n, bases, solution)`` with one
:class:`~planner.solve.recourse.Priced` per batch, in batch order. The caller keeps the bases and sends them with
each call, so the answer does not depend on the pricer or the number of workers. Within a decomposition's loop
(``portable=False``) a worker keeps each batch's last basis itself, as HiGHS's own object, and the caller holds a
:class:`Kept` reference to it: a basis read out of HiGHS into arrays costs as much as a third of a warm batch's
solve (its statuses cross into Python one by one), and the loop only ever hands a batch its own last basis back.

- :class:`LocalPricer`: in this process, the batches priced side by side on ``threads`` threads (HiGHS runs
  without Python's lock: every core, by default, for a pricer made without an executor; one for ``--jobs 1``).
  Each batch's LP is solved from the basis the caller sends, on whichever thread: the answer is the same on one.
- :class:`ProcessPricer`: ``jobs`` worker processes here, each with a fixed share of the batches (balanced by
  their periods). A worker that dies (killed, out of memory) is replaced: the new one builds the same batches
  and the call is retried with the same bases. Bases the dead worker kept (inside the Benders loop) are lost with
  it: its batches start that call cold, so the answer is optimal within the same gap but may differ in its last
  digits from an undisturbed run (counted: ``bases_lost``, in plan.json and the plan's notes).
- :class:`DaskPricer`: one Dask actor per worker of a cluster (``planner.core.executors.DaskExecutor``), its share
  of the inputs scattered to it; an actor lost with its worker is made again on a live worker (its share
  scattered again) and the call retried.
"""

from __future__ import annotations

import os
import pickle
import signal

from dataclasses import dataclass

import numpy as np

from planner.solve.recourse import build_batch, price

RETRIES = 2  # a call is retried this many times after a worker died
MAX_THREADS = 8  # the most threads a LocalPricer takes by default: the batches priced here are small, their Python
# between LPs takes turns on one lock, and each thread that runs HiGHS starts a task scheduler of its own


@dataclass(frozen=True)
class Kept:
    """A basis kept by the worker that made it (:class:`KeptBases`): which keeper, which of its calls, which batch."""

    keeper: str
    call: int
    batch: int


class KeptBases:
    """A worker's bases kept between calls: each batch's last, as HiGHS's own object (no conversion).

    ``resolve(i, basis)`` gives what :func:`~planner.solve.recourse.price` takes: a :class:`Kept` reference
    of this keeper to batch ``i``'s last basis becomes that basis; one it no longer has (another keeper's: a
    worker since replaced; an older call's; another batch's) becomes None, a cold start, counted in ``lost``. Any other basis
    passes as given."""

    def __init__(self):
        import uuid

        self.name, self.call, self.last, self.lost = uuid.uuid4().hex, 0, {}, 0

    def resolve(self, i: int, basis):
        """The basis :func:`~planner.solve.recourse.price` takes for batch ``i`` from what the caller sent (above)."""
        if not isinstance(basis, Kept):
            return basis
        call, native = self.last.get(i, (None, None))
        if basis.keeper == self.name and basis.call == call and basis.batch == i:
            return native
        self.lost += 1
        return None

    def price(self, batches: dict, n, todo: list, solution, scale: float, portable: bool) -> dict:
        """The batches ``todo`` ((position, basis) pairs) at ``n``; with ``portable=False`` each one's new basis
        is kept here and a :class:`Kept` reference returned in its place."""
        self.call += 1
        out = {}
        for i, basis in todo:
            r = price(batches[i], n, self.resolve(i, basis), solution, portable=portable, scale=scale)
            if not portable:
                self.last[i] = (self.call, r.basis)
                r.basis = Kept(self.name, self.call, i)
            out[i] = r
        return out


def slim(inp):
    """``inp`` without the demand table (the arrays hold the demand): what a worker needs to build batches,
    a quarter of the bytes to send."""
    from dataclasses import replace

    return replace(inp, tables=replace(inp.tables, demand=inp.tables.demand.iloc[:0]))


def _shares(chunks: list[np.ndarray], workers: int, weight: np.ndarray | None = None) -> list[list[int]]:
    """Batch positions per worker: heaviest batches first, each to the least loaded worker (deterministic). A batch
    weighs its periods, each by ``weight`` (per period; default 1): :func:`period_weights`."""
    per = None if weight is None else np.asarray(weight, float)
    size = [float(len(c)) if per is None else float(per[c].sum()) for c in chunks]
    load = [0.0] * workers
    out: list[list[int]] = [[] for _ in range(workers)]
    for i in sorted(range(len(chunks)), key=lambda i: (-size[i], i)):
        w = min(range(workers), key=lambda j: (load[j], j))
        out[w].append(i)
        load[w] += size[i]
    return [sorted(s) for s in out]


def period_weights(inp) -> np.ndarray:
    """(T,) per period, how many of its scenarios' demand columns differ: the blocks a period makes in a batch's LP
    at most (identical (scenario, period) pairs are one block), so a joined batch of a tree's tail, where the
    branches differ, weighs more than a horizon week of as many periods, where they are one (a balance of the
    workers' pricing only: which worker prices a batch never changes its answer)."""
    d = np.asarray(inp.demand, float)  # (S, K, T)
    if d.shape[0] < 2:
        return np.ones(d.shape[2])
    probe = np.random.default_rng(0).uniform(0.5, 1.5, d.shape[1])  # a demand column's fingerprint (K -> 1)
    key = np.sort(np.einsum("skt,k->st", d, probe), axis=0)
    return 1.0 + (np.diff(key, axis=0) != 0).sum(axis=0)


def share_inputs(inp, chunks: list[np.ndarray], share: list[int]) -> tuple:
    """The inputs a worker needs for the batches ``share``: ``inp`` on those batches' periods only (a three-year
    plan's (purchase rows x periods) activity is hundreds of MB: each worker holds its own part, not all of it),
    and its batches as (batch, its periods in the horizon, its periods in that part)."""
    from planner.solve.chunks import chunk_inputs

    mine = [chunks[i] for i in share]
    where = np.concatenate(mine) if mine else np.zeros(0, dtype=np.int64)
    starts = np.cumsum([0] + [len(c) for c in mine])
    items = [(i, chunks[i], np.arange(a, b)) for i, a, b in zip(share, starts[:-1], starts[1:])]
    return chunk_inputs(inp, where), items


def build_share(part, items: list, cut_by: str) -> dict:
    """The batches of ``items`` (see :func:`share_inputs`) built from ``part``, each knowing its horizon periods."""
    out = {}
    for i, idx, where in items:
        out[i] = build_batch(part, where, cut_by)
        out[i].periods = np.asarray(idx)
    return out


class LocalPricer:
    """The batches in this process, priced side by side on ``threads`` threads (default: every core up to
    ``MAX_THREADS``, one in an executor's worker process, :func:`~planner.core.executors.threads_here`; never more
    than the model file's ``[solver] threads`` nor than the batches; 1: one after the other). ``Highs.run``
    releases Python's lock, so the batches' LPs run in parallel while the rest (their arrays in and out) takes
    turns: measured on real744's five weekly batches, a pricing of 0.28 s took 0.20 s on two threads, with no
    process to start and no inputs to send. Each LP is the same whichever thread solves it (its arrays, the
    purchases and the basis sent with the call): the same answer as one thread, bit for bit."""

    workers = 1
    name = "here"
    bases_lost = 0  # its bases are HiGHS's objects here: none to lose

    def __init__(self, inp, chunks: list[np.ndarray], cut_by: str, threads: int | None = None):
        from planner.core.executors import threads_here

        self.batches = [build_batch(inp, idx, cut_by) for idx in chunks]
        self.groups = [b.G for b in self.batches]
        self._keys = [(b.keys, b.block_of) for b in self.batches]
        self.row_counts = [b.row_counts for b in self.batches]
        self.sizes = [b.shape for b in self.batches]
        most = min(threads_here(), MAX_THREADS) if threads is None else int(threads)
        asked = inp.config.solver.threads
        if asked:  # [solver] threads: the cores the model file gives the solves
            most = min(most, int(asked))
        self.threads = max(1, min(most, len(self.batches)))
        self._pool = None  # the threads, made at the first pricing and kept (HiGHS keeps its scheduler per thread)
        import threading

        self._lock = threading.Lock()

    def price(self, n: np.ndarray, bases: list, solution: bool = False, scale: float = 1.0,
              portable: bool = True, meanwhile=None) -> list:
        """Every batch at ``n`` from its basis (kept as HiGHS's own objects: one process, no conversion, whatever
        ``portable`` says); ``meanwhile()`` is called once the batches are handed to the threads, while they price
        (one thread: first); what it raises is raised once they are done. Measured on real744's memo: 1.85 s with
        the reads before the pricing, 1.5 s with the reads beside it."""
        if self.threads == 1 or not self.batches:  # (closed: no batches, nothing to price)
            _while_pricing(meanwhile)
            return [price(b, n, basis, solution, portable=False, scale=scale) for b, basis in zip(self.batches, bases)]
        from concurrent.futures import ThreadPoolExecutor, wait

        with self._lock:  # (one pool, whichever caller comes first)
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="planner-pricing")
            pool = self._pool
        futures = [pool.submit(price, b, n, basis, solution, portable=False, scale=scale)
                   for b, basis in zip(self.batches, bases)]
        try:
            late = _while_pricing(meanwhile, defer=True)  # this thread's work while they price (an error waits)
            wait(futures)  # every LP ended before anything is raised: none runs on past this call
        except BaseException:  # an interrupt (Ctrl-C, SIGTERM) here or in the work beside: the batches not begun
            for f in futures:  # are dropped, the LPs running end (milliseconds at these sizes), then it is raised
                f.cancel()
            wait(futures)
            raise
        failed = next((f.exception() for f in futures if f.exception() is not None), None)
        if failed is not None:
            if late is not None and failed.__context__ is None:
                failed.__context__ = late  # (both said: the batch's error, during which the read's)
            raise failed
        if late is not None:
            raise late
        return [f.result() for f in futures]

    def keys(self) -> list[tuple]:
        """Per batch: (family keys, block_of) for assembling the plan."""
        return self._keys

    def close(self) -> None:
        """Drop the batches (their memory is the plan's to use next) and stop the threads (after the LPs they
        run: an interrupted pricing's, milliseconds at the sizes priced here)."""
        self.batches = []
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _while_pricing(meanwhile, defer: bool = False):
    """Call ``meanwhile()`` (None: nothing); with ``defer``, return what it raised instead of raising (a caller
    with replies still to read raises it after reading them)."""
    if meanwhile is None:
        return None
    if not defer:
        meanwhile()
        return None
    try:
        meanwhile()
    except Exception as exc:
        return exc
    return None


# ---------------------------------------------------------------------------------------- local processes

def _serve(inbox, outbox, parent: int) -> None:
    """A worker process: build its batches, then price them on request until told to stop."""
    from planner.core.executors import die_with_parent

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    die_with_parent(parent)
    batches: dict[int, object] = {}
    kept = KeptBases()
    while True:
        try:
            msg = pickle.loads(inbox.recv_bytes())
        except EOFError:
            return
        op = msg[0]
        try:
            if op == "build":
                _, payload, items, cut_by, die = msg
                if die:  # a test's fault: this worker dies while it builds (as an out-of-memory kill would)
                    os.kill(os.getpid(), signal.SIGKILL)
                inp = pickle.loads(payload)
                del msg, payload  # the inputs' bytes are not kept while the batches are priced
                batches.update(build_share(inp, items, cut_by))
                del inp
                reply = {i: (batches[i].G, batches[i].keys, batches[i].block_of, batches[i].row_counts,
                             batches[i].shape) for i, _, _ in items}
            elif op == "price":
                _, n, todo, solution, die, scale, portable = msg
                if die:  # a test's fault: this worker dies in the middle of an iteration
                    os.kill(os.getpid(), signal.SIGKILL)
                lost = kept.lost
                reply = (kept.price(batches, n, todo, solution, scale, portable), kept.lost - lost)
            else:
                return
            outbox.send_bytes(pickle.dumps(("ok", reply), protocol=pickle.HIGHEST_PROTOCOL))
        except Exception as exc:  # a solver failure: the parent raises it
            outbox.send_bytes(pickle.dumps(("error", f"{type(exc).__name__}: {exc}")))


def _child_main(argv: list[str]) -> None:
    """``python -m planner.solve.workers IN OUT PARENT``: a worker on the pipes' file descriptors. Its
    standard output goes to standard error, so that nothing it prints (HiGHS) mixes with the parent's."""
    from multiprocessing.connection import Connection

    os.dup2(2, 1)
    inbox, outbox = Connection(int(argv[0]), writable=False), Connection(int(argv[1]), readable=False)
    _serve(inbox, outbox, int(argv[2]))


class ProcessPricer:
    """``jobs`` worker processes on this machine, each pricing a fixed share of the batches."""

    name = "local"

    def __init__(self, inp, chunks: list[np.ndarray], cut_by: str, jobs: int, fault_build: int | None = None):
        from planner.core.executors import default_jobs

        # more processes than cores (or batches) only add start-up and memory
        self.workers = max(1, min(int(jobs), len(chunks), default_jobs()))
        self.chunks, self.cut_by = chunks, cut_by
        self.shares = _shares(chunks, self.workers, period_weights(inp))
        self.inp = slim(inp)  # each worker is sent only its own periods of it (see _payload)
        self.procs: list = [None] * self.workers
        self.conns: list = [None] * self.workers  # (to the worker, from the worker)
        self.calls = 0
        self.fault: dict | None = None  # tests: {"call": k, "worker": w} kills worker w during price call k
        self.fault_build = fault_build  # tests: this worker kills itself on its first build
        self.restarts = 0
        self.bases_lost = 0  # kept bases a worker no longer had (replaced since): batches started cold
        self.busy = False  # a pricing's requests sent, its answers not all read (see close)
        import threading

        for w in range(self.workers):  # every process starts (imports) at once; a payload waits for its reader
            self._spawn(w)
        self._built: dict | None = None  # what the workers built: read when first needed (the build runs meanwhile)
        # the payloads are written from a thread: a pipe takes 64 KB until its worker, still importing, reads it,
        # and the caller's own work (the Benders' aggregate start) overlaps the workers' start and build
        self._send_error: BaseException | None = None
        self._sending = threading.Thread(target=self._send_builds, name="planner-build-payloads", daemon=True)
        self._sending.start()

    def _send_builds(self) -> None:
        """Every worker's build (the constructor's thread); what it raised is raised by :meth:`_wait_built`."""
        try:
            for w in range(self.workers):
                self._send_build(w)
        except BaseException as exc:  # (a payload that could not be pickled: MemoryError)
            self._send_error = exc

    def _wait_built(self) -> dict:
        """Per batch, what its worker built ((cut groups, keys, block_of, row counts, shape)): the workers' replies
        to the build, read once (a worker that died while building is replaced and builds again). The build runs
        from the constructor until this is first called: the caller's own work overlaps it (the Benders' start)."""
        if self._built is None:
            if self._send_error is not None:  # read once already, and failed: the same error (no reply is left)
                raise self._send_error
            self._sending.join()
            if self._send_error is not None:
                raise self._send_error
            built: dict = {}
            try:
                for w in range(self.workers):
                    try:
                        built.update(self._receive(w))
                    except (EOFError, OSError):  # it died while building (killed, out of memory): a new one builds
                        built.update(self._restart(w))
            except BaseException as exc:
                self._send_error = exc
                raise
            self._built = built
        return self._built

    @property
    def groups(self) -> list[int]:
        """Per batch: its cut groups (thetas)."""
        return [b[0] for _, b in sorted(self._wait_built().items())]

    @property
    def row_counts(self) -> list[dict]:
        """Per batch: its rows per family."""
        return [b[3] for _, b in sorted(self._wait_built().items())]

    @property
    def sizes(self) -> list[tuple]:
        """Per batch: its LP's (columns, rows)."""
        return [b[4] for _, b in sorted(self._wait_built().items())]

    def _start(self, w: int) -> None:
        """Start worker ``w`` and send it the inputs and its batches (:meth:`_spawn`, :meth:`_send_build`)."""
        self._spawn(w)
        self._send_build(w)

    def _spawn(self, w: int) -> None:
        """Start worker ``w``: a new Python process running this module (no fork of a process where HiGHS
        threads may run, no re-import of the caller's script), on two pipes."""
        import subprocess
        import sys
        from multiprocessing.connection import Connection

        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        self.procs[w] = subprocess.Popen([sys.executable, "-m", "planner.solve.workers", str(down_r), str(up_w),
                                          str(os.getpid())], pass_fds=(down_r, up_w), stdin=subprocess.DEVNULL,
                                         close_fds=True)
        os.close(down_r)
        os.close(up_w)
        self.conns[w] = (Connection(down_w, readable=False), Connection(up_r, writable=False))

    def _send_build(self, w: int) -> None:
        """Send worker ``w`` its inputs and batches to build (it replies once they are built)."""
        payload, items = self._payload(w)
        die = self.fault_build == w
        self.fault_build = None if die else self.fault_build
        try:
            self.conns[w][0].send_bytes(pickle.dumps(("build", payload, items, self.cut_by, die),
                                                     protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:  # (broken pipe, reset) a worker dead already is seen by _receive (EOF)
            pass

    def _payload(self, w: int) -> tuple[bytes, list]:
        """Worker ``w``'s inputs (its own periods only, see :func:`share_inputs`) pickled, and its batches."""
        part, items = share_inputs(self.inp, self.chunks, self.shares[w])
        return pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL), items

    def _receive(self, w: int) -> dict:
        status, reply = pickle.loads(self.conns[w][1].recv_bytes())
        if status != "ok":
            from planner.core.errors import SolverError

            raise SolverError(f"a pricing worker failed: {reply}")
        return reply

    def _restart(self, w: int) -> dict:
        """Replace worker ``w`` (dead) with a new one that builds the same batches; what it built. A worker that
        keeps dying while it builds is a SolverError after RETRIES more tries."""
        for attempt in range(RETRIES + 1):
            self.restarts += 1
            try:
                self.procs[w].kill()
            except Exception:
                pass
            try:
                self.procs[w].wait(timeout=5)
            except Exception:
                pass
            for conn in self.conns[w]:
                conn.close()
            try:
                self._start(w)
                return self._receive(w)
            except (EOFError, OSError):
                if attempt == RETRIES:
                    from planner.core.errors import SolverError

                    raise SolverError(f"pricing worker {w} died {RETRIES + 1} times while building its batches "
                                      "(out of memory? fewer --jobs, or a machine with more memory)") from None
        raise AssertionError("unreachable")

    def price(self, n: np.ndarray, bases: list, solution: bool = False, scale: float = 1.0,
              portable: bool = True, meanwhile=None) -> list:
        """Every batch at ``n`` from its basis, the workers' shares in parallel; a dead worker is replaced.
        ``portable=False``: each batch's new basis stays on its worker, a :class:`Kept` reference returned.
        ``meanwhile()``: called here once every worker has its share, before their answers are read (work of this
        process that overlaps the pricing); what it raises is raised once the answers are read."""
        self._wait_built()
        self.calls += 1
        out: dict = {}
        todo = list(range(self.workers))
        pending = meanwhile
        self.busy = True  # until every answer is read: a close() before then (an interrupt) stops them at once
        for attempt in range(RETRIES + 1):
            failed = []
            for w in todo:
                die = bool(self.fault and self.fault.get("call") == self.calls and self.fault.get("worker") == w
                           and attempt == 0)
                msg = ("price", n, [(i, bases[i]) for i in self.shares[w]], solution, die, scale, portable)
                try:
                    self.conns[w][0].send_bytes(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))
                except (BrokenPipeError, ConnectionResetError, OSError):
                    failed.append(w)
            late = _while_pricing(pending, defer=True)  # an error waits for the replies: none is left unread
            pending = None
            for w in todo:
                if w in failed:
                    continue
                try:
                    priced, lost = self._receive(w)
                except (EOFError, OSError):
                    failed.append(w)
                    continue
                out.update(priced)
                self.bases_lost += lost
            if late is not None:
                self.busy = False
                raise late
            if not failed:
                self.busy = False
                return [out[i] for i in range(len(self.chunks))]
            if attempt == RETRIES:
                from planner.core.errors import SolverError

                raise SolverError(f"pricing workers {failed} died {RETRIES + 1} times in one iteration")
            for w in failed:
                self._restart(w)
            todo = sorted(failed)
        raise AssertionError("unreachable")

    def keys(self) -> list[tuple]:
        """Per batch: (family keys, block_of) for assembling the plan."""
        return [(b[1], b[2]) for _, b in sorted(self._wait_built().items())]

    def pids(self) -> list[int]:
        """The worker processes' ids."""
        return [p.pid for p in self.procs]

    def close(self) -> None:
        """Stop the workers (still building, as when the caller failed before pricing, or still pricing, as after an
        interrupt: stopped at once; they answer a stop only between requests, 5-10 s later at XL)."""
        if self._built is None or self.busy:
            for proc in self.procs:  # (a payload still being written then fails: its worker is gone)
                try:
                    proc.kill()
                except Exception:
                    pass
            self._sending.join()
        for down, up in self.conns:
            try:
                down.send_bytes(pickle.dumps(("stop",)))
            except Exception:
                pass
        for proc, (down, up) in zip(self.procs, self.conns):
            try:
                proc.wait(timeout=5)
            except Exception:
                proc.kill()
                proc.wait()
            down.close()
            up.close()


# ---------------------------------------------------------------------------------------- Dask

class RecourseActor:
    """A Dask actor holding some batches (built where it lives) and pricing them on request."""

    def __init__(self, inp, items: list, cut_by: str):
        self.batches = build_share(inp, items, cut_by)
        self.kept = KeptBases()

    def built(self) -> dict:
        """Per batch: (cut groups, family keys, block_of)."""
        return {i: (b.G, b.keys, b.block_of, b.row_counts, b.shape) for i, b in self.batches.items()}

    def price(self, n, todo: list, solution: bool, scale: float = 1.0, portable: bool = True) -> tuple:
        """The batches ``todo`` ((position, basis) pairs) at ``n`` (:meth:`KeptBases.price`), and how many kept
        bases were no longer here."""
        lost = self.kept.lost
        return self.kept.price(self.batches, n, todo, solution, scale, portable), self.kept.lost - lost


def _lost(exc: BaseException) -> bool:
    """True when ``exc`` says a Dask actor was lost with its worker (cancelled, its worker killed or unreachable),
    not that its own work failed (those are raised as they are, never retried)."""
    import asyncio
    import concurrent.futures

    if isinstance(exc, (concurrent.futures.CancelledError, asyncio.CancelledError, ConnectionError, EOFError)):
        return True
    name = type(exc).__name__
    return type(exc) is OSError or name in ("FutureCancelledError", "KilledWorker", "CommClosedError") or (
        isinstance(exc, RuntimeError) and "Worker holding Actor was lost" in str(exc))


class DaskPricer:
    """One :class:`RecourseActor` per worker of a Dask cluster, each with a fixed share of the batches."""

    name = "dask"

    def __init__(self, inp, chunks: list[np.ndarray], cut_by: str, executor):
        self.client = executor.client
        self.chunks, self.cut_by = chunks, cut_by
        addresses = sorted(self.client.scheduler_info().get("workers", {}))
        self.workers = max(1, min(len(addresses) or 1, len(chunks)))
        self.shares = _shares(chunks, self.workers, period_weights(inp))
        self.inp = slim(inp)  # each actor gets only its own periods of it (share_inputs)
        self.restarts = 0
        self.bases_lost = 0  # kept bases an actor no longer had (made again since): batches started cold
        # every actor is asked for at once (each builds its batches where it lives) and read when first used: the
        # actors were made one after the other, each waiting for the last one's build. The shares are cut and
        # scattered from a thread, as a ProcessPricer's payloads are sent: the caller's own work (the Benders'
        # aggregate start) overlaps the pickling and the sending (a second at XL), not only the build
        import threading

        self._made: list = []
        self._actors: list = []
        self._built: dict | None = None
        self._send_error: BaseException | None = None
        self._closed = False  # close() was called: the thread asks for no more actors, and cancels one it just made
        self._lock = threading.Lock()  # (between the thread's adding an actor and close() cancelling them)
        self._sending = threading.Thread(target=self._submit_all, args=(addresses,), name="planner-dask-shares",
                                         daemon=True)
        self._sending.start()

    def _submit_all(self, addresses: list) -> None:
        """Every actor asked for (the constructor's thread); what it raised is raised by :meth:`_wait_built`. After
        :meth:`close` it stops, and cancels an actor it was making meanwhile (close() does not wait for it: a Ctrl-C
        or SIGTERM is not held up by the shares still to send)."""
        try:
            for w in range(self.workers):
                if self._closed:
                    return
                fut = self._submit(w, addresses[w] if w < len(addresses) else None)
                with self._lock:
                    if self._closed:
                        fut.cancel()
                        return
                    self._made.append(fut)
        except BaseException as exc:
            self._send_error = exc

    @property
    def actors(self) -> list:
        """The actors, one per share (made, their batches built)."""
        self._wait_built()
        return self._actors

    def _wait_built(self) -> dict:
        """Per batch, what its actor built ((cut groups, keys, block_of, row counts, shape)): the actors made
        and their builds read once, when first needed. An actor lost with its worker while it was made or built is
        made again on a live worker (:meth:`_remake`), as one lost while pricing is; a SolverError after RETRIES
        more losses of the same share."""
        if self._built is None:
            self._sending.join()
            if self._send_error is not None:  # (its thread's, or this read's before: the same error)
                raise self._send_error
            made, self._made = self._made, []
            try:
                self._built = self._read_builds(made)
            except BaseException as exc:  # read again (a kept pricer asked again): the same error, not an empty build
                self._send_error = exc
                raise
        return self._built

    def _read_builds(self, made: list) -> dict:
        """:meth:`_wait_built`'s reading of the actors ``made`` (their futures) and their builds."""
        from planner.core.errors import SolverError

        self._actors = [None] * len(made)
        asked: dict = {}  # per share: its build's future, or the exception that lost its actor
        for w, fut in enumerate(made):  # every actor's build asked for before any is awaited (they build at once)
            try:
                self._actors[w] = fut.result()
                asked[w] = self._actors[w].built()
            except Exception as exc:
                if not _lost(exc):  # the build itself failed (its inputs, its memory): that error, at once
                    raise
                asked[w] = exc
        built: dict = {}
        for w in range(len(made)):
            for attempt in range(RETRIES + 1):
                try:
                    if isinstance(asked[w], BaseException):
                        raise asked[w]
                    built.update(asked[w].result())
                    break
                except Exception as exc:
                    if not _lost(exc):
                        raise
                    if attempt == RETRIES:
                        raise SolverError(f"Dask pricing actor {w} was lost {RETRIES + 1} times while building "
                                          f"its batches ({type(exc).__name__}: {exc})") from None
                    self.restarts += 1
                    try:
                        self._actors[w] = self._remake(w)
                        asked[w] = self._actors[w].built()
                    except Exception as again:  # (no live worker yet: the next attempt tries again)
                        if not _lost(again):
                            raise
                        asked[w] = again
        return built

    @property
    def groups(self) -> list[int]:
        """Per batch: its cut groups (thetas)."""
        return [b[0] for _, b in sorted(self._wait_built().items())]

    @property
    def row_counts(self) -> list[dict]:
        """Per batch: its rows per family."""
        return [b[3] for _, b in sorted(self._wait_built().items())]

    @property
    def sizes(self) -> list[tuple]:
        """Per batch: its LP's (columns, rows)."""
        return [b[4] for _, b in sorted(self._wait_built().items())]

    def _submit(self, w: int, address: str | None):
        """The future of a new actor for share ``w`` (on ``address`` when given), its inputs scattered to it."""
        part, items = share_inputs(self.inp, self.chunks, self.shares[w])
        where = {"workers": [address], "allow_other_workers": True} if address else {}
        # (hash=False: a key of its own; by content, a share scattered again as a cancelled actor's is released
        # would be that key, and the new actor lost with it: "lost dependencies")
        data = self.client.scatter(part, hash=False, **({"workers": [address]} if address else {}))
        return self.client.submit(RecourseActor, data, items, self.cut_by, actor=True, pure=False, **where)

    def _actor(self, w: int, address: str | None):
        """A new actor for share ``w``, made (its batches built)."""
        return self._submit(w, address).result()

    def price(self, n: np.ndarray, bases: list, solution: bool = False, scale: float = 1.0,
              portable: bool = True, meanwhile=None) -> list:
        """Every batch at ``n`` from its basis; an actor lost with its worker is made again and retried.
        ``meanwhile()``: called once the actors have their calls, before their answers are awaited.

        A lost actor fails when called (``RuntimeError: Worker holding Actor was lost``, raised as the call is
        made once the scheduler knows) or when its answer is awaited: either way its share is priced again on
        a new actor, with the same bases; bases the lost actor kept (``portable=False``) are lost with it: those
        batches start cold (``bases_lost``), the answer optimal within the same gap, not always to the last digit."""
        from planner.core.errors import SolverError

        self._wait_built()
        out: dict = {}
        todo = list(range(self.workers))
        for attempt in range(RETRIES + 1):
            calls, failed = {}, []
            for w in todo:
                try:  # an actor whose worker is known lost refuses the call itself ("Worker holding Actor was lost")
                    calls[w] = self.actors[w].price(n, [(i, bases[i]) for i in self.shares[w]], solution, scale,
                                                    portable)
                except Exception:
                    failed.append(w)
            late = _while_pricing(meanwhile, defer=True)
            meanwhile = None
            for w, fut in calls.items():
                try:
                    priced, lost = fut.result()
                except Exception as exc:
                    if not _lost(exc):  # its own pricing failed (not its worker): that error, never retried
                        raise
                    failed.append(w)
                    continue
                out.update(priced)
                self.bases_lost += lost
            if late is not None:
                self.busy = False
                raise late
            if not failed:
                self.busy = False
                return [out[i] for i in range(len(self.chunks))]
            if attempt == RETRIES:
                raise SolverError(f"Dask pricing actors {failed} were lost {RETRIES + 1} times in one iteration")
            for w in failed:
                self.restarts += 1
                try:
                    self.actors[w] = self._remake(w)
                except Exception:  # the cluster is still replacing the worker: the next attempt tries again
                    pass
            todo = failed
        raise AssertionError("unreachable")

    def _remake(self, w: int):
        """A new actor for share ``w`` on a live worker (the scheduler may take a moment to drop a dead one)."""
        import time

        for attempt in range(RETRIES + 1):
            try:
                return self._actor(w, None)
            except Exception:
                if attempt == RETRIES:
                    raise
                time.sleep(0.5 * (attempt + 1))
        raise AssertionError("unreachable")

    def keys(self) -> list[tuple]:
        """Per batch: (family keys, block_of) for assembling the plan."""
        return [(b[1], b[2]) for _, b in sorted(self._wait_built().items())]

    def close(self) -> None:
        """Drop the actors, made or still being made (the cluster is the executor's to close): at once, without waiting
        for shares still being sent (the thread cancels what it makes after this)."""
        with self._lock:
            self._closed = True
            made, self._made = self._made, []
        for fut in made:
            fut.cancel()
        # the actors read are cancelled too, not left to their handles' release: a handle held a while longer (a
        # reference cycle, an exception's frames) kept its actor, and its share's batches, on the cluster (seen in CI)
        actors = [a for a in self._actors if a is not None]
        if actors:
            from distributed import Future

            try:
                self.client.cancel([Future(a.key, self.client) for a in actors])
            except Exception:  # (the client closed meanwhile: the actors went with its cluster)
                pass
        self._actors, self._built = [], {}


def make_pricer(inp, chunks: list[np.ndarray], cut_by: str, executor=None):
    """The pricer for ``executor``: a :class:`~planner.core.executors.DaskExecutor` gives a :class:`DaskPricer`, a
    local executor of several jobs a :class:`ProcessPricer`, anything else (None, one job) a :class:`LocalPricer`.

    Inside ``with keep_pricers(inp):`` the pricer of ``inp``'s batches (the same chunks, the same cut groups) is
    made once and lent to every caller; its ``close()`` waits for the block's end (:class:`keep_pricers`). A caller
    asking for the batches in this process takes whichever is kept (one in this process, or on workers: the same
    numbers, no slower); one asking for another kind gets a new pricer, which replaces the kept one (closed: one
    copy of the batches at a time)."""
    kept = _KEPT.get(id(inp))
    if kept is None:
        return _new_pricer(inp, chunks, cut_by, executor)
    kind = _kind(executor, chunks)
    same = [p for p in kept["pricers"] if p.cut_by == cut_by and len(p.chunks) == len(chunks)
            and all(np.array_equal(a, b) for a, b in zip(p.chunks, chunks))]
    for p in same:
        if p.kind == kind or kind == ("here",):
            return _Lent(p, kept)
    for p in same:  # another kind of the same batches: dropped, so that one copy is held
        kept["pricers"].remove(p)
        p.close()
    p = _new_pricer(inp, chunks, cut_by, executor)
    p.chunks, p.cut_by, p.kind = chunks, cut_by, kind
    kept["pricers"].append(p)
    return _Lent(p, kept)


def _kind(executor, chunks) -> tuple:
    """Which pricer ``executor`` makes (:func:`_new_pricer`): a kept one is lent only where the same would be made
    (the answer is the same on any; the time is not: one process is not two)."""
    from planner.core.executors import DaskExecutor

    if isinstance(executor, DaskExecutor):
        return ("dask", id(executor))
    jobs = getattr(executor, "workers", 1) if executor is not None else 1
    return ("local", int(jobs)) if jobs > 1 and len(chunks) > 1 else ("here",)


_KEPT: dict = {}  # id(inputs) -> {"inp": the inputs (held: their id stays theirs), "depth": n, "pricers": [...]}


class keep_pricers:
    """``with keep_pricers(inp):`` every pricer made inside for ``inp``'s batches is built once, its workers started
    once, and kept to the block's end: ``planner plan``'s plan with the purchases fixed, the horizon's own optimum
    beside it, and the memo's re-solves price the same weekly batches of the horizon. Nothing else changes: a
    batch's answer depends on its arrays, the purchases and the basis sent with the call, never on the pricer
    (the module docstring), so a lent pricer gives the numbers a new one would. Blocks for the same inputs nest."""

    def __init__(self, inp):
        self.inp = inp

    def __enter__(self):
        kept = _KEPT.setdefault(id(self.inp), {"inp": self.inp, "depth": 0, "pricers": []})
        kept["depth"] += 1
        return self

    def __exit__(self, *exc):
        kept = _KEPT[id(self.inp)]
        kept["depth"] -= 1
        if kept["depth"] == 0:
            del _KEPT[id(self.inp)]
            for p in kept["pricers"]:
                p.close()


def release_kept(inp) -> int:
    """Close the pricers kept for ``inp`` (:class:`keep_pricers`): their worker processes and batches are freed (GBs
    at three hourly years), and the next pricer asked for is built again, and kept. For work in between that holds
    memory of its own (the risk view's sub-plans on processes of their own). Returns how many were closed."""
    kept = _KEPT.get(id(inp))
    if kept is None:
        return 0
    pricers, kept["pricers"] = list(kept["pricers"]), []
    for p in pricers:
        p.close()
    return len(pricers)


class _Lent:
    """A kept pricer lent to one caller: everything but ``close()``, which the :class:`keep_pricers` block does. A
    pricing that raises drops the kept pricer (closed): a worker's unread reply would answer the next call."""

    def __init__(self, pricer, kept: dict):
        self._pricer, self._kept = pricer, kept

    def __getattr__(self, name):
        return getattr(self._pricer, name)

    def price(self, *args, **kwargs):
        try:
            return self._pricer.price(*args, **kwargs)
        except BaseException:
            if self._pricer in self._kept["pricers"]:
                self._kept["pricers"].remove(self._pricer)
                self._pricer.close()
            raise

    def close(self) -> None:
        pass


def _new_pricer(inp, chunks: list[np.ndarray], cut_by: str, executor=None):
    from planner.core.executors import DaskExecutor

    if isinstance(executor, DaskExecutor):
        return DaskPricer(inp, chunks, cut_by, executor)
    jobs = getattr(executor, "workers", 1) if executor is not None else 1
    if jobs > 1 and len(chunks) > 1:
        return ProcessPricer(inp, chunks, cut_by, jobs)
    return LocalPricer(inp, chunks, cut_by, threads=None if executor is None else 1)  # --jobs 1: one thread


if __name__ == "__main__":
    import sys

    from planner.solve import workers  # the module by its own name: what it pickles (Kept) is read as that

    workers._child_main(sys.argv[1:])


def warm_bases(warm: dict | None, chunks: list, pricer) -> list:
    """Per batch, the basis in ``warm`` (a plan's ``recourse``) when it was made for the same batches, else None
    (a cold start): a basis of another batching would not fit its LP."""
    if not warm or len(warm.get("chunks", [])) != len(chunks) or \
            any(not np.array_equal(a, b) for a, b in zip(warm["chunks"], chunks)):
        return [None] * len(chunks)
    sizes = getattr(pricer, "sizes", None)
    bases = list(warm["bases"])
    if sizes is not None:  # a batch whose LP differs in size (the demand pattern changed) starts cold
        bases = [b if b is not None and (len(b[0]), len(b[1])) == tuple(sz) else None for b, sz in zip(bases, sizes)]
    return bases
