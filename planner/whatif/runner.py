"""Run independent solves across processes, with a progress bar and an estimate of time left.

A task that raises is reported as failed (its error text kept) and the others go
on. ``jobs=1`` runs in this process (no pool), which is also what a debugger wants.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable

import click


def default_jobs() -> int:
    """Every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass
class Outcome:
    index: int
    ok: bool
    value: Any = None  # the task function's return value when ok
    error: str = ""  # "ErrorType: message" when not ok
    seconds: float = 0.0


def _guarded(fn: Callable, task) -> tuple[bool, Any, float]:
    t0 = time.perf_counter()
    try:
        return True, fn(task), time.perf_counter() - t0
    except Exception as exc:  # reported per task; the run goes on
        from ..errors import PlannerError

        text = str(exc) if isinstance(exc, PlannerError) else f"{type(exc).__name__}: {exc}"
        return False, text, time.perf_counter() - t0


def _context():
    """fork where it is safe (Linux, one thread: workers inherit the loaded inputs for free), else spawn."""
    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _fmt_s(s: float) -> str:
    if s < 100:
        return f"{s:.0f} s"
    m, sec = divmod(int(round(s)), 60)
    return f"{m} min {sec:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


class Progress:
    """``[#####-----] 12/50  24 %  elapsed 30 s, ~95 s left  <what just finished>`` on stderr."""

    def __init__(self, total: int, enabled: bool = True, width: int = 20):
        self.total, self.enabled, self.width = total, enabled, width
        self.done = 0
        self.t0 = time.perf_counter()

    def step(self, text: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.t0
        frac = self.done / self.total if self.total else 1.0
        fill = int(round(frac * self.width))
        bar = "#" * fill + "-" * (self.width - fill)
        left = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        eta = "done" if self.done == self.total else f"~{_fmt_s(left)} left"
        click.echo(f"[{bar}] {self.done}/{self.total} {100 * frac:3.0f} %  elapsed {_fmt_s(elapsed)}, {eta}"
                   + (f"  {text}" if text else ""), err=True)


def run_tasks(fn: Callable, tasks: list, *, jobs: int, initializer: Callable | None = None, initargs: tuple = (),
              progress: bool = True, describe: Callable[[Outcome], str] | None = None) -> list[Outcome]:
    """``fn(task)`` for every task, ``jobs`` at a time; outcomes in task order.

    ``initializer(*initargs)`` runs once per worker process (or once here when
    ``jobs == 1``): load shared state there, not in every task.
    """
    bar = Progress(len(tasks), enabled=progress)
    outcomes: list[Outcome | None] = [None] * len(tasks)

    def record(i: int, ok: bool, value, seconds: float) -> None:
        out = Outcome(i, ok, value if ok else None, "" if ok else str(value), seconds)
        outcomes[i] = out
        bar.step(describe(out) if describe else "")

    jobs = max(1, min(jobs, len(tasks)))
    if jobs == 1:
        if initializer:
            initializer(*initargs)
        for i, task in enumerate(tasks):
            record(i, *_guarded(fn, task))
        return outcomes  # type: ignore[return-value]

    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=_context(), initializer=initializer, initargs=initargs)
    try:
        pending = {pool.submit(_guarded, fn, task): i for i, task in enumerate(tasks)}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                i = pending.pop(fut)
                try:
                    ok, value, seconds = fut.result()
                except BrokenProcessPool as exc:
                    ok, value, seconds = False, f"worker process died: {exc}", 0.0
                except Exception as exc:  # e.g. a result that cannot be pickled back
                    ok, value, seconds = False, f"{type(exc).__name__}: {exc}", 0.0
                record(i, ok, value, seconds)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return outcomes  # type: ignore[return-value]
