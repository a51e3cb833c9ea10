"""Seeded multi-year hourly demand traces from the real traces' daily and weekly shapes.

No public GPU trace is long enough to test a 1- or 3-year commitment (the longest, Philly, is 73 days). This
generator keeps what the real traces do know, the shape of a week, and supplies what they cannot, years of
level: growth, a plateau, a regime change and a decline.

Per class, hour h of the trace is

    demand[h] = level(month of h) x weekly_shape[h mod 168] x day_noise[day of h] x hour_noise[h]

- ``weekly_shape`` (168 values, mean 1): the hour-of-week mean of a real trace, over its whole length, divided
  by its overall mean. Inference takes Alibaba OpenB 2023's latency-sensitive class (``qos=LS``, 825 h),
  training takes Microsoft Philly 2017 (GPU nodes active, 1,762 h), both from ``../shared/data/real``. Without
  that folder (CI on a machine without it) a stated stand-in is used: inference 1 + 0.25 sin(daily) with
  weekends at 85 %, training 1 + 0.1 sin(daily) (``shape_source`` says which).
- ``level``: a piecewise path in months (:data:`SCENARIOS`); each segment multiplies the level by ``rate`` per
  month (growth above 1, decline below) and a ``step`` at its start (the regime change: a product retired, a
  workload moved to another cloud).
- ``day_noise``: exp of an AR(1) in days (coefficient 0.9, innovation sd ``day_sd``): weeks that run hot or cold;
  ``hour_noise``: exp(normal(0, ``hour_sd``)) per hour. Both from ``numpy.random.default_rng(seed)``: the same
  seed gives the same trace, byte for byte.

    python benchmarks/traces.py --scenario growth_then_cut --years 5 --seed 1 --out demand.csv

writes the long-form demand file the planner reads (``period, workload_class, gpus``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "data" / "real"
HOURS_PER_MONTH = 730.0
WEEK = 168


@dataclass(frozen=True)
class Segment:
    """From ``month`` on, the level is multiplied by ``rate`` every month, after a one-off ``step``."""
    month: float
    rate: float = 1.0
    step: float = 1.0


@dataclass(frozen=True)
class ClassSpec:
    """One class of a scenario: its starting level (GPUs), its shape and its level path."""
    name: str
    start_gpus: float
    shape: str  # "inference" or "training"
    path: tuple  # of Segment, by month
    day_sd: float = 0.03
    hour_sd: float = 0.04


SCENARIOS = {
    # inference grows 4 %/month for 18 months, holds a year, loses 35 % at month 30 (a model retired), then
    # declines 1 %/month; training bursts around a flat level, grows 2 %/month from month 12, halves at month 24
    "growth_then_cut": (
        ClassSpec("inference", 100.0, "inference",
                  (Segment(0, 1.04), Segment(18, 1.0), Segment(30, 0.99, step=0.65))),
        ClassSpec("training", 60.0, "training",
                  (Segment(0, 1.0), Segment(12, 1.02), Segment(24, 1.0, step=0.5)), day_sd=0.08, hour_sd=0.08)),
    # steady growth, no regime change: the case for buying early and long
    "steady_growth": (
        ClassSpec("inference", 100.0, "inference", (Segment(0, 1.025),)),
        ClassSpec("training", 60.0, "training", (Segment(0, 1.01),), day_sd=0.08, hour_sd=0.08)),
    # decline from the start: the case for waiting and for short terms
    "decline": (
        ClassSpec("inference", 200.0, "inference", (Segment(0, 0.98),)),
        ClassSpec("training", 80.0, "training", (Segment(0, 0.985),), day_sd=0.08, hour_sd=0.08)),
}


def _hour_of_week(times: pd.Series, values: pd.Series) -> np.ndarray:
    """168 hour-of-week means of ``values`` (mean 1), weeks starting Monday 00:00."""
    how = (times.dt.day_of_week * 24 + times.dt.hour).to_numpy()
    sums = np.bincount(how, weights=values.to_numpy(float), minlength=WEEK)
    counts = np.bincount(how, minlength=WEEK)
    prof = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    prof = pd.Series(prof).interpolate(limit_direction="both").to_numpy()
    return prof / prof.mean()


def real_shapes(real: Path = REAL) -> dict[str, np.ndarray] | None:
    """The weekly shapes of the real traces (None when ``real`` is absent)."""
    openb, philly = real / "demand_alibaba_openb2023_hourly.csv", real / "demand_philly2017_nodes_hourly.csv"
    if not (openb.exists() and philly.exists()):
        return None
    o = pd.read_csv(openb)
    o = o[o["workload_class"] == "qos=LS"]
    # OpenB has no absolute date: hour 0 of the trace is taken as a Monday 00:00
    t = pd.Timestamp("2024-01-01") + pd.to_timedelta(o["trace_time_h"] - o["trace_time_h"].min(), unit="h")
    p = pd.read_csv(philly)
    return {"inference": _hour_of_week(t.reset_index(drop=True), o["gpus_demanded"].reset_index(drop=True)),
            "training": _hour_of_week(pd.to_datetime(p["timestamp"]), p["gpu_nodes_active"])}


def stand_in_shapes() -> dict[str, np.ndarray]:
    """Shapes used when the real traces are absent (stated in ``shape_source``)."""
    h = np.arange(WEEK)
    day = np.sin(2 * np.pi * (h % 24 - 8) / 24)
    weekend = np.where(h // 24 >= 5, 0.85, 1.0)
    inference = (1 + 0.25 * day) * weekend
    training = 1 + 0.1 * day
    return {"inference": inference / inference.mean(), "training": training / training.mean()}


def level_path(spec: ClassSpec, months: np.ndarray) -> np.ndarray:
    """The level (GPUs) at fractional ``months`` from the start, from the class's segments."""
    edges = np.array([s.month for s in spec.path] + [np.inf])
    log = np.zeros_like(months, dtype=float)
    for i, s in enumerate(spec.path):
        inside = np.clip(months - s.month, 0.0, edges[i + 1] - s.month)
        log += inside * np.log(s.rate) + np.where(months >= s.month, np.log(s.step), 0.0)
    return spec.start_gpus * np.exp(log)


def generate(scenario: str = "growth_then_cut", years: float = 5.0, seed: int = 0,
             start: str = "2027-01-04", real: Path = REAL) -> tuple[pd.DataFrame, str]:
    """(long-form hourly demand ``period, workload_class, gpus``, the source of the shapes)."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}: expected one of {', '.join(SCENARIOS)}")
    shapes = real_shapes(real)
    source = "real traces (OpenB qos=LS, Philly)" if shapes is not None else "stand-in (no ../shared/data/real)"
    shapes = shapes or stand_in_shapes()
    hours = int(round(years * 8760))
    rng = np.random.default_rng(seed)
    h = np.arange(hours)
    months = h / HOURS_PER_MONTH
    days = hours // 24 + 1
    t0 = pd.Timestamp(start)
    offset = int(t0.day_of_week * 24 + t0.hour)  # the shape is indexed by hour of the week
    frames = []
    for spec in SCENARIOS[scenario]:
        e = rng.normal(0.0, spec.day_sd, days)
        ar = np.zeros(days)
        for d in range(1, days):  # an AR(1) over days (days, not hours: a short loop)
            ar[d] = 0.9 * ar[d - 1] + e[d]
        noise = np.exp(ar[h // 24] + rng.normal(0.0, spec.hour_sd, hours))
        gpus = level_path(spec, months) * shapes[spec.shape][(h + offset) % WEEK] * noise
        frames.append(pd.DataFrame({"period": t0 + pd.to_timedelta(h, unit="h"), "workload_class": spec.name,
                                    "gpus": np.round(gpus, 3)}))
    return pd.concat(frames, ignore_index=True), source


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="growth_then_cut", choices=sorted(SCENARIOS))
    ap.add_argument("--years", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", default="2027-01-04")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    demand, source = generate(args.scenario, args.years, args.seed, args.start)
    demand.assign(period=demand["period"].dt.strftime("%Y-%m-%dT%H:%M")).to_csv(args.out, index=False)
    print(f"wrote {args.out}: {len(demand):,} rows, shapes from {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
