"""Spare instances that keep a gang-scheduled job whole while failed instances are repaired.

Instances fail as a Poisson stream (rate ``lambda_job`` for the whole gang) and each failed
instance is out for the repair time ``R``. The instances down at any moment are the busy
servers of an M/G/inf queue: Poisson with mean ``m = lambda_job * R`` whatever the repair
time's distribution. With ``s`` spares the gang runs whole while at most ``s`` are down, so
``spare_instances`` is the smallest ``s`` with ``P(Poisson(m) <= s) >= target``.

The job's failure rate comes either from a per-GPU MTBF (``lambda_job = N / MTBF_gpu``: an
instance of ``K`` GPUs fails ``K`` times as often as one GPU) or from a table of job MTBI by
job size (``gpus, mtbi_hours``), interpolated log-log (see docs/spot-economics.md for the
published anchors).

Goodput uses the Young/Daly machinery of :mod:`planner.sizing.economics`: every failure loses the
work since the last checkpoint and costs a restart. Without spares the gang cannot run until
the failed instance is repaired, so a failure's restart is ``R + restart``; with spares it is a
swap to a spare and a restart (``swap + restart``). The rare moments when more than ``s``
instances are down at once (probability ``1 - target``) are not charged.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.sizing import economics as eco
from planner.core.errors import InputError, Problem


def _poisson():
    """scipy.stats.poisson, imported when spares are sized (scipy.stats costs 0.6 s of every run's start)."""
    from scipy.stats import poisson

    return poisson

#: Counts around the quantile reported in ``probability_by_count``.
AROUND = 2


def read_mtbi_table(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``gpus`` and ``mtbi_hours`` columns of a CSV, sorted by gpus; bad rows named (exit 2)."""
    name = str(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise InputError(Problem(name, f"cannot read the MTBI table: {exc.strerror}")) from None
    if not rows or {"gpus", "mtbi_hours"} - set(rows[0]):
        raise InputError(Problem(name, "the MTBI table needs the columns gpus and mtbi_hours",
                                 expected="a header row 'gpus,mtbi_hours' and at least one row"))
    problems, gpus, mtbi = [], [], []
    for i, row in enumerate(rows, start=2):
        for col, out in (("gpus", gpus), ("mtbi_hours", mtbi)):
            raw = (row.get(col) or "").strip()
            try:
                v = float(raw)
            except ValueError:
                v = math.nan
            if not (math.isfinite(v) and v > 0):
                problems.append(Problem(name, "not a positive number", row=i, column=col, value=raw,
                                        expected="a number > 0"))
            out.append(v)
    if problems:
        raise InputError(problems)
    g, h = np.asarray(gpus), np.asarray(mtbi)
    order = np.argsort(g)
    g, h = g[order], h[order]
    dup = np.flatnonzero(np.diff(g) == 0)
    if dup.size:
        raise InputError(Problem(name, "the same job size appears twice", column="gpus", value=g[dup[0]],
                                 expected="one row per job size"))
    return g, h


def job_mtbi_from_table(gpus: float, table_gpus, table_mtbi) -> float:
    """Job MTBI (hours) at ``gpus``, interpolated linearly in log(gpus)-log(mtbi).

    Outside the table the nearest two points' slope is extended (one point: MTBI scales as
    1 / gpus, i.e. a constant per-GPU rate).
    """
    g = np.log(np.asarray(table_gpus, float))
    h = np.log(np.asarray(table_mtbi, float))
    x = math.log(gpus)
    if g.size == 1:
        return float(math.exp(h[0] - (x - g[0])))
    i = int(np.clip(np.searchsorted(g, x) - 1, 0, g.size - 2))
    slope = (h[i + 1] - h[i]) / (g[i + 1] - g[i])
    return float(math.exp(h[i] + slope * (x - g[i])))


def spare_quantile(mean_down: float, target: float) -> int:
    """Smallest s with P(Poisson(mean_down) <= s) >= target."""
    if mean_down <= 0:
        return 0
    s = int(_poisson().ppf(target, mean_down))
    while s > 0 and _poisson().cdf(s - 1, mean_down) >= target:  # guard ppf's rounding
        s -= 1
    while _poisson().cdf(s, mean_down) < target:
        s += 1
    return s


@dataclass(frozen=True)
class SparesResult:
    """What ``planner spares`` reports (JSON keys as in spec/contracts.md)."""

    instances: int
    gpus_per_instance: int
    job_failures_per_hour: float
    mean_down_instances: float
    spare_instances: int
    probability_by_count: dict[int, float]
    cost_usd_per_hour: float | None
    goodput_with_spares: float | None
    goodput_without_spares: float | None

    def as_dict(self) -> dict:
        """Plain JSON-ready dictionary (``probability_by_count`` keyed by the count as text)."""
        return {
            "instances": self.instances,
            "gpus_per_instance": self.gpus_per_instance,
            "job_failures_per_hour": self.job_failures_per_hour,
            "job_mtbi_hours": (1.0 / self.job_failures_per_hour if self.job_failures_per_hour > 0
                               else None),
            "mean_down_instances": self.mean_down_instances,
            "spare_instances": self.spare_instances,
            "spare_gpus": self.spare_instances * self.gpus_per_instance,
            "probability_by_count": {str(k): v for k, v in self.probability_by_count.items()},
            "cost_usd_per_hour": self.cost_usd_per_hour,
            "goodput_with_spares": self.goodput_with_spares,
            "goodput_without_spares": self.goodput_without_spares,
        }


def size_spares(gpus: float, gpus_per_instance: int, repair_hours: float, target: float,
                gpu_mtbf_hours: float | None = None, job_mtbi_hours: float | None = None,
                price_per_gpu_hour: float | None = None, checkpoint_minutes: float | None = None,
                restart_minutes: float | None = None, swap_minutes: float = 0.0) -> SparesResult:
    """Spare instances for a gang of ``gpus`` GPUs (see the module docstring for the model).

    Give exactly one of ``gpu_mtbf_hours`` (per GPU) and ``job_mtbi_hours`` (the whole job's,
    e.g. read off :func:`job_mtbi_from_table`). Goodputs are computed when both
    ``checkpoint_minutes`` and ``restart_minutes`` are given.
    """
    k = int(gpus_per_instance)
    n_inst = math.ceil(gpus / k)
    if (gpu_mtbf_hours is None) == (job_mtbi_hours is None):
        raise ValueError("give exactly one of gpu_mtbf_hours and job_mtbi_hours")
    if job_mtbi_hours is not None:
        lam = 1.0 / job_mtbi_hours
    else:
        lam = n_inst / (gpu_mtbf_hours / k)  # instances x per-instance rate (an instance fails K x as often)
    m = lam * repair_hours
    s = spare_quantile(m, target)
    counts = np.arange(max(0, s - AROUND), s + AROUND + 1)
    probs = _poisson().cdf(counts, m) if m > 0 else np.ones(counts.size)
    cost = None if price_per_gpu_hour is None else s * k * float(price_per_gpu_hour)
    with_s = without_s = None
    if checkpoint_minutes is not None and restart_minutes is not None:
        c = checkpoint_minutes / 60.0
        r_with = (swap_minutes + restart_minutes) / 60.0
        r_without = repair_hours + restart_minutes / 60.0
        with_s = float(eco.goodput(lam, eco.optimal_interval(lam, c), c, r_with))
        without_s = float(eco.goodput(lam, eco.optimal_interval(lam, c), c, r_without))
    return SparesResult(n_inst, k, float(lam), float(m), int(s),
                        {int(c_): float(p) for c_, p in zip(counts, probs)}, cost, with_s, without_s)


def spare_gpus(demand, target: float, gpus_per_instance: float, gpu_mtbf_hours: float, repair_hours: float):
    """Spare GPUs (whole instances) for gangs of ``demand`` GPUs (an array), 0 where demand is 0.

    Per element: ``n = ceil(demand / K)`` instances, ``m = n K repair / MTBF_gpu`` instances down on
    average, spares = K x the smallest s with ``P(Poisson(m) <= s) >= target``.
    """
    d = np.asarray(demand, float)
    k = float(gpus_per_instance)
    inst = np.ceil(np.round(d / k, 9))
    m = inst * k * repair_hours / gpu_mtbf_hours
    s = np.where(m > 0, _poisson().ppf(target, np.where(m > 0, m, 1.0)), 0.0)
    s = np.where((s > 0) & (_poisson().cdf(s - 1, np.where(m > 0, m, 1.0)) >= target), s - 1, s)  # ppf rounding
    return np.where(d > 0, s * k, 0.0)


def class_spares(classes: list[str], policies: dict, demand: np.ndarray) -> np.ndarray | None:
    """(K, ...) spare GPUs per class for ``demand`` (K, ...), from each class's ``spares_target``; None when
    no class asks for spares. The plan adds them to the class's demand and serves them from reserved GPUs."""
    if not any(policies[c].spares is not None for c in classes):
        return None
    out = np.zeros(np.shape(demand))
    for k, c in enumerate(classes):  # a handful of classes: the work is vectorised over blocks
        if policies[c].spares is not None:
            out[k] = spare_gpus(demand[k], *policies[c].spares)
    return out
