"""The risk view's independent sub-plans solved at once, one per local worker process.

A plan over scenarios reports EVPI and VSS (:mod:`planner.results.risk`): besides the plan, the mean forecast's plan,
each scenario's plan alone and, on a tree, the first-stage plan. Each is a whole plan of its own (a Benders loop on a
long horizon), independent of the others; in one process they ran one after another, each pricing its batches in
that process. Here they run side by side on ``jobs`` local processes, each sub-plan priced in its own process as it
was before, so every figure is the one the serial run gives (the same inputs, the same solver calls: a test compares
them to the last digit). The first-stage plan, which prices every scenario and outlasts the others together, prices
on ``jobs`` processes of its own inside its worker, which start at once and share the cores with the other
sub-plans.

Only where it pays: a local executor of two jobs or more, and sub-plans of more than ``SUB_PLAN_CELLS`` periods x
classes (a worker's start, about a second with its inputs, against a sub-plan of seconds to minutes); and no more
at once than the memory available holds (:func:`need`: a process's base and its batches, the first-stage plan's
for every scenario, on as many processes of its own as run side by side). A Dask executor keeps pricing each
sub-plan's batches on its cluster, one sub-plan after another; a model extended by rows of the caller's own
(``extend=``) keeps them in the plan's process (its function need not pickle).

Begun early: the mean plan and each scenario alone depend on the inputs only, so a whole-term plan begins them
before it decides its purchases (:func:`start_early`), one after another on one process of the lowest CPU priority
(:mod:`planner.core.background`), where the decision and the plan's own read leave a core idle. When the view comes
it takes back those not begun and solves them as above, beside the first-stage plan; the early process finishes the
one in hand. Only an answer that ended optimal is read: the sub-plans' time limit is wall-clock, and the early
process gets only the cycles left over, so one stopped by its limit there is solved again in the view, as it would
have been without the early start (helper-84: a mean plan stopped early bought nothing, and VSS came out $768 k for
$6.9 k). The same inputs and settings, the same solver calls: the same figures to the last digit.
"""

from __future__ import annotations

from planner.results.risk import SubPlan, solve_sub, solve_sub_ended, sub_problems

SUB_PLAN_CELLS = 30_000  # periods x classes of one sub-plan above which the sub-plans run on worker processes
SUB_PLAN_BASE_BYTES = 1 << 30  # a sub-plan's process before its batches: Python, the plan's inputs sent to it
SUB_PLAN_BYTES_PER_CELL = 2_200  # and its batches, per period x class x scenario it prices (measured at three
# years: one scenario's sub-plan 2.1 GB at its peak in a process of its own, the first-stage plan of 5 scenarios 6-7 GB)
FIRST_SPLIT_FACTOR = 1.25  # the first-stage plan priced on processes of its own: each holds a base, and its batches
# and their bases (split between them) with the reads in its parent take a quarter more (measured at three years x 5
# scenarios: 3.0 GB in its process and 3.5-3.6 GB in each of its two pricing processes, 10.2 GB against 6.8 counted)

_STATE: dict = {}  # in a worker: the plan's inputs and the sub-plans' solve settings (sent once per worker)


def _start(inp, settings: dict, make_plan, first_jobs: int = 1) -> None:
    _STATE["inp"], _STATE["settings"], _STATE["make_plan"] = inp, settings, make_plan
    _STATE["first_jobs"] = first_jobs


def _solve(task):
    settings, make_plan = _STATE["settings"], _STATE["make_plan"]
    if task.kind == "first" and _STATE.get("first_jobs", 1) > 1 and settings.get("executor") is None:
        # the first-stage plan prices every scenario: the long pole (3Y x 5: longer than the mean plan and every
        # scenario alone one after another). Its batches are priced on processes of its own, beside the other
        # sub-plans (the same numbers: a pricer's answer does not depend on where)
        from planner.core.executors import LocalExecutor

        settings = settings | {"executor": LocalExecutor(jobs=_STATE["first_jobs"])}
    return solve_sub(lambda i: make_plan(i, **settings), _STATE["inp"], task)


def _solve_early(task):
    """A sub-plan begun early (:func:`start_early`): its answer and how its solve ended. It runs under the sub-plans'
    wall-clock time limit on a core the run may leave it little of: only an answer proven optimal is read; one
    stopped by its limit is solved again in the view, where it would have been solved without the early start."""
    settings, make_plan = _STATE["settings"], _STATE["make_plan"]
    return solve_sub_ended(lambda i: make_plan(i, **settings), _STATE["inp"], task)


def many_solver(executor, inp, settings: dict, make_plan, early: "Early | None" = None):
    """A ``solve_many(inp, tasks)`` for :func:`planner.results.risk.risk_view` that solves ``tasks`` on the local
    processes of ``executor``, each as ``make_plan(sub_inputs, **settings)`` would here (``make_plan``: the
    pipeline's, a module-level function: it is sent to the workers by name); None where the sub-plans should be
    solved one by one in this process (see the module docstring).

    ``early`` (:func:`start_early`, started for these very inputs and settings): the sub-plans it has begun are
    its; the rest are solved here as without it, then its answers are read (one whose process died is solved
    here). Given for other inputs or settings, it is closed and not read."""
    if early is not None and not early.serves(inp, settings):
        early.close()
        early = None
    if not on_processes(executor, inp) or (early is None and side_by_side(inp, executor.workers) < 2):
        if early is not None:
            early.close()
        return None  # (never more at once than this machine's memory holds)

    def solve_many(inp, tasks):
        if early is None:
            return _values(inp, tasks, _on_processes(executor, inp, settings, make_plan, tasks))
        try:
            theirs = early.begun_of(tasks)
            mine = [t for t in tasks if t not in theirs]
            outcomes = dict(zip(mine, _on_processes(executor, inp, settings, make_plan, mine))) if mine else {}
            got = early.results()
            again = [t for t in theirs if t not in got or not got[t].ok]  # its process died, or the task failed
            # there: solved here, as it would have been without it (an error here is the sub-plan's own)
            outcomes |= {t: got[t] for t in theirs if t not in again}
            if again:
                outcomes |= dict(zip(again, _on_processes(executor, inp, settings, make_plan, again)))
        finally:
            early.close()
        return _values(inp, tasks, [outcomes[t] for t in tasks])

    return solve_many


def _on_processes(executor, inp, settings: dict, make_plan, tasks: list) -> list:
    """The outcomes of ``tasks``, as many side by side on worker processes as the memory holds (one: here, the
    first-stage plan priced on processes of its own where they fit)."""
    from planner.core.executors import LocalExecutor

    jobs, first_jobs = jobs_for(inp, executor.workers, tasks)
    try:
        return LocalExecutor(jobs=min(jobs, len(tasks))).map(_solve, tasks, initializer=_start,
                                                             initargs=(inp, dict(settings), make_plan, first_jobs),
                                                             progress=False)
    finally:
        if jobs < 2:
            _STATE.clear()  # (solved here: the inputs are not held past them)


def _values(inp, tasks: list, outcomes: list) -> list:
    """Each task's value, or a SolverError naming the first that failed."""
    from planner.core.errors import SolverError

    failed = [(t, o) for t, o in zip(tasks, outcomes) if not o.ok]
    if failed:
        task, out = failed[0]
        what = (f"scenario {inp.scenarios[task.scenario]} alone" if task.kind == "ws" else
                "the first-stage plan" if task.kind == "first" else f"the {task.kind} plan")
        raise SolverError(f"the risk view's sub-plan ({what}) failed on a worker process: {out.error}")
    return [o.value for o in outcomes]


def jobs_for(inp, workers: int, tasks: list, available: int | None = None) -> tuple[int, int]:
    """How ``tasks`` are solved: (sub-plans side by side, the first-stage plan's own pricing processes). Side by side
    as :func:`side_by_side` says; one at a time (in the plan's process), the first-stage plan is still priced on
    ``workers`` processes of its own where they fit in the memory."""
    jobs = side_by_side(inp, workers, available, tasks)
    if jobs >= 2:
        return jobs, jobs
    first = [t for t in tasks if t.kind == "first"]
    if first and workers >= 2 and fits([need(inp, first[0], first_jobs=workers)], available) >= 1:
        return 1, workers
    return 1, 1


class Early:
    """The risk view's sub-plans begun before the plan is made (:func:`start_early`): for the inputs and settings
    it was started with."""

    def __init__(self, inp, settings: dict, background):
        self.inp, self.settings, self.background = inp, dict(settings), background

    def serves(self, inp, settings: dict) -> bool:
        """Whether it was started for ``inp`` (the very object) and ``settings``."""
        return inp is self.inp and dict(settings) == self.settings

    def begun_of(self, tasks: list) -> list:
        """Stop its claiming; which of ``tasks`` it has begun (its to finish)."""
        left = set(self.background.stop())
        mine = [t for k, t in enumerate(self.background.tasks) if k not in left]
        return [t for t in tasks if t in mine]

    def done(self) -> dict:
        """Its outcomes so far by task, without waiting (:meth:`results`)."""
        return self._read(self.background.done())

    def results(self) -> dict:
        """Its outcomes by task (:class:`~planner.results.risk.SubPlan`), once those begun have ended: each sub-plan's
        answer where its solve ended optimal; one that did not (stopped by its time limit: :func:`_solve_early`) is
        a failed outcome, solved again in the view."""
        return self._read(self.background.results())

    def _read(self, outcomes: dict) -> dict:
        from planner.core.executors import Outcome

        out = {}
        for i, o in outcomes.items():
            if o.ok:
                value, ended = o.value
                o = (Outcome(o.index, True, value, "", o.seconds) if ended == "optimal" else
                     Outcome(o.index, False, None, f"ended {ended} (its time limit, on a core left idle)", o.seconds))
            out[self.background.tasks[i]] = o
        return out

    def close(self) -> None:
        """Stop it now (its process killed; an answer not read is lost)."""
        self.background.close()


def start_early(executor, inp, settings: dict, make_plan) -> Early | None:
    """Start the risk view's mean plan and each scenario alone now, one after another on one process of the lowest
    CPU priority (:class:`planner.core.background.Background`), for :func:`many_solver` to read when the view
    comes: they depend on the inputs only, and the stages before the view (the whole-term decision's masters, the
    plan's build and read) leave a core idle for minutes. None where the view's sub-plans would not run on
    processes (:func:`on_processes`), where two would not fit side by side in the memory, or where the largest
    would not fit beside the run's own processes, counted at all the scenarios' batches on the executor's processes
    (:func:`need` of the first-stage plan: 10.2 GB at three years x 5 scenarios, where the whole-term decision was
    measured at 10.5 GB). The first-stage plan (all the scenarios) is left to the view. Should the machine run out
    of memory all the same, the kernel ends the early process first (its sub-plans are then solved in the view)."""
    from planner.core.background import Background

    if not on_processes(executor, inp) or side_by_side(inp, executor.workers) < 2:
        return None
    tasks = [t for t in sub_problems(inp) if t.kind != "first"]
    run = need(inp, SubPlan("first"), first_jobs=executor.workers)
    if fits([run, max(need(inp, t) for t in tasks)]) < 2:
        return None
    return Early(inp, settings, Background(_solve_early, tasks, initializer=_start,
                                           initargs=(inp, dict(settings), make_plan, 1)))


def on_processes(executor, inp) -> bool:
    """Whether ``inp``'s sub-plans may run on local processes of their own (:func:`many_solver`; then as many at once
    as the memory holds): a local executor of two jobs or more, sub-plans over ``SUB_PLAN_CELLS``, a safe
    ``__main__``."""
    from planner.core.executors import LocalExecutor

    return (isinstance(executor, LocalExecutor) and executor.workers >= 2 and inp.T * inp.K > SUB_PLAN_CELLS
            and main_is_safe())  # (a spawned worker would run an unguarded script again)


def main_is_safe() -> bool:
    """Whether a spawned worker may import this program's ``__main__``: run with ``-m`` (the ``planner`` command,
    pytest), interactive or ``-c``, or a script that guards its work with ``if __name__ == "__main__"``. A script
    without that guard would run again in every worker (which then fails; the parent waited for ever): its sub-plans
    are solved one by one in its own process instead, as before."""
    import sys

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or getattr(main, "__spec__", None) is not None or not path:
        return True
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    return "__main__" in text and "__name__" in text


def need(inp, task, first_jobs: int = 1) -> int:
    """The bytes ``task`` (a :class:`~planner.results.risk.SubPlan`) is counted at in a process of its own: the first-
    stage plan prices every scenario, the others one; ``first_jobs`` > 1: the first-stage plan's batches are priced
    on that many processes of its own (each a base more, the batches and the reads a quarter more)."""
    if task.kind != "first":
        return SUB_PLAN_BASE_BYTES + inp.T * inp.K * SUB_PLAN_BYTES_PER_CELL
    batches = inp.T * inp.K * len(inp.scenarios) * SUB_PLAN_BYTES_PER_CELL
    if first_jobs <= 1:
        return SUB_PLAN_BASE_BYTES + batches
    return (1 + first_jobs) * SUB_PLAN_BASE_BYTES + int(batches * FIRST_SPLIT_FACTOR)


def side_by_side(inp, workers: int, available: int | None = None, tasks: list | None = None) -> int:
    """How many sub-plans run at once on ``workers`` processes: the most, ``j``, whose ``j`` largest fit in the memory
    available (:func:`fits`; where it cannot be read, ``workers``), the first-stage plan counted priced on ``j``
    processes of its own (:func:`_solve`); 1 where no two fit (then one by one, in the plan's process)."""
    if available is None:
        available = _available_bytes()
    tasks = sub_problems(inp) if tasks is None else tasks  # (default: every sub-plan of the view)
    for j in range(min(workers, len(tasks)), 1, -1):
        if fits([need(inp, t, first_jobs=j) for t in tasks], available) >= j:
            return j
    return 1


def fits(needs: list[int], available: int | None = None) -> int:
    """How many of the sub-plans that need ``needs`` bytes each may run side by side in the memory available now
    (``/proc/meminfo`` MemAvailable, or ``available`` bytes): the most whose largest together fit (where the memory
    cannot be read, all of them)."""
    if available is None:
        available = _available_bytes()
        if available is None:
            return len(needs)
    total, k = 0, 0
    for n in sorted(needs, reverse=True):
        total += n
        if total > available:
            break
        k += 1
    return k


def _available_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
