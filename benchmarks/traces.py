"""Seeded multi-year hourly demand traces built from real days.

No public GPU trace is long enough to test a 1- or 3-year commitment (the longest, Philly, is 73 days). This
generator keeps what the real traces do know, how real days vary, and supplies what they cannot, years of
level: growth, a plateau, a boom and a bust, a season, a regime change, a migration away.

Per class, hour h of day d of the trace is

    demand[h] = level(month of h) x season(month of h) x day_d[hour of day]

- ``day_d`` (24 values): a **real day**, drawn with replacement (``numpy.random.default_rng(seed)``) among the
  real trace's days of the same weekday, divided by that trace's mean: inference from Alibaba OpenB 2023's
  latency-sensitive class (``qos=LS``, 825 h), training from Microsoft Philly 2017 (GPU nodes active, 1,762 h),
  both from ``../shared/data/real``. The trace then varies from day to day, and hour to hour, as real demand
  does (:func:`replay_error`: a week's replay of the week before misses by about what it misses on the real
  traces: 17 % and 16 % hour by hour on inference and training against 21 % and 16 % on OpenB LS and Philly).
  Without that folder (CI on a
  machine without it) a stated stand-in is used: a weekly shape (inference 1 + 0.25 sin(daily) with weekends at
  85 %, training 1 + 0.1 sin(daily)) times AR(1) day noise (0.9, ``day_sd``) and hour noise (``hour_sd``);
  ``source`` says which.
- ``level``: a piecewise path in months (:data:`SCENARIOS`); each segment multiplies the level by ``rate`` per
  month (growth above 1, decline below) and a ``step`` at its start (the regime change: a product retired, a
  workload moved to another cloud). ``season``: 1 + ``season`` x sin(2 pi month / 12) (an annual cycle).

The same seed gives the same trace, byte for byte.

    python benchmarks/traces.py --scenario boom_then_bust --years 5 --seed 1 --out demand.csv

writes the long-form demand file the planner reads (``period, workload_class, gpus``) and prints the replay
error of the synthetic and the real traces.
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
    season: float = 0.0  # amplitude of an annual cycle (0.2: +-20 %)


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
    # a boom: inference 6 %/month for a year, flat for three months, then 5 %/month down; training doubles at
    # month 6 (a new model family) and loses 70 % at month 20 (the project ends)
    "boom_then_bust": (
        ClassSpec("inference", 100.0, "inference", (Segment(0, 1.06), Segment(12, 1.0), Segment(15, 0.95))),
        ClassSpec("training", 60.0, "training", (Segment(0, 1.0), Segment(6, 1.0, step=2.0),
                                                 Segment(20, 1.0, step=0.3)), day_sd=0.08, hour_sd=0.08)),
    # growth that saturates: 5 %/month for a year, 2 % the next, 0.5 % after
    "saturating_growth": (
        ClassSpec("inference", 100.0, "inference", (Segment(0, 1.05), Segment(12, 1.02), Segment(24, 1.005))),
        ClassSpec("training", 60.0, "training", (Segment(0, 1.03), Segment(12, 1.01), Segment(24, 1.0)),
                  day_sd=0.08, hour_sd=0.08)),
    # a flat level with an annual season (+-25 % inference, +-15 % training): the case for short terms at peaks
    "seasonal_cycle": (
        ClassSpec("inference", 150.0, "inference", (Segment(0, 1.0),), season=0.25),
        ClassSpec("training", 70.0, "training", (Segment(0, 1.0),), day_sd=0.08, hour_sd=0.08, season=0.15)),
    # a migration away: growth 2 %/month, then half the inference moves to another cloud at month 18 and the
    # rest follows at 4 %/month; training moves whole at month 24 (a tenth stays)
    "migration_away": (
        ClassSpec("inference", 120.0, "inference", (Segment(0, 1.02), Segment(18, 0.96, step=0.5))),
        ClassSpec("training", 60.0, "training", (Segment(0, 1.02), Segment(24, 1.0, step=0.1)),
                  day_sd=0.08, hour_sd=0.08)),
}


def _days(times: pd.Series, values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(days (D, 24) of hourly values over the trace's mean, weekday (D,)): the trace's whole days only."""
    frame = pd.DataFrame({"t": pd.to_datetime(times).dt.floor("h").to_numpy(), "v": values.to_numpy(float)})
    frame = frame.groupby("t")["v"].mean()
    frame = frame.reindex(pd.date_range(frame.index.min().normalize(), frame.index.max(), freq="h"))
    full = frame.groupby(frame.index.normalize()).count() == 24
    keep = frame[frame.index.normalize().isin(full[full].index)]
    days = keep.to_numpy(float).reshape(-1, 24)
    weekday = keep.index[::24].day_of_week.to_numpy()
    return days / days.mean(), weekday


def real_days(real: Path = REAL) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
    """The real traces' whole days, each over its trace's mean, with their weekdays (None when absent)."""
    openb, philly = real / "demand_alibaba_openb2023_hourly.csv", real / "demand_philly2017_nodes_hourly.csv"
    if not (openb.exists() and philly.exists()):
        return None
    o = pd.read_csv(openb)
    o = o[o["workload_class"] == "qos=LS"]
    t = pd.Timestamp("2024-01-01") + pd.to_timedelta(o["trace_time_h"] - o["trace_time_h"].min(), unit="h")
    p = pd.read_csv(philly)
    return {"inference": _days(t.reset_index(drop=True), o["gpus_demanded"].reset_index(drop=True)),
            "training": _days(pd.to_datetime(p["timestamp"]), p["gpu_nodes_active"])}


def replay_error(gpus: np.ndarray) -> float:
    """How far a week's replay of the week before misses, hour by hour: sum |d[t] - d[t - 168]| / sum d[t] over
    every hour after the first week (a weighted absolute percentage error, %)."""
    g = np.asarray(gpus, float)
    return float(100 * np.abs(g[WEEK:] - g[:-WEEK]).sum() / max(g[WEEK:].sum(), 1e-12))


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
    """(long-form hourly demand ``period, workload_class, gpus``, the source of the days)."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}: expected one of {', '.join(SCENARIOS)}")
    days_real = real_days(real)
    source = ("real days, weekday-matched (OpenB qos=LS, Philly)" if days_real is not None
              else "stand-in shapes and AR(1) noise (no ../shared/data/real)")
    shapes = stand_in_shapes()
    hours = int(round(years * 8760))
    rng = np.random.default_rng(seed)
    h = np.arange(hours)
    months = h / HOURS_PER_MONTH
    t0 = pd.Timestamp(start)
    first = t0.normalize()
    n_days = (t0 + pd.Timedelta(hours=hours - 1)).normalize() - first
    n_days = n_days.days + 1
    day_of = (t0.hour + h) // 24  # the calendar day (from start's) of every hour
    weekday = (first.day_of_week + np.arange(n_days)) % 7
    offset = int(t0.day_of_week * 24 + t0.hour)  # the stand-in shape is indexed by hour of the week
    frames = []
    for spec in SCENARIOS[scenario]:
        level = level_path(spec, months) * (1 + spec.season * np.sin(2 * np.pi * months / 12))
        if days_real is not None:
            pool, wd = days_real[spec.shape]
            pick = np.empty(n_days, dtype=np.int64)
            for w in range(7):  # a real day of the same weekday, drawn with replacement
                mine = np.flatnonzero(weekday == w)
                same = np.flatnonzero(wd == w)
                pick[mine] = rng.choice(same if len(same) else np.arange(len(wd)), size=len(mine))
            rel = pool[pick[day_of], (t0.hour + h) % 24]
        else:
            e = rng.normal(0.0, spec.day_sd, n_days)
            ar = np.zeros(n_days)
            for d in range(1, n_days):  # an AR(1) over days (days, not hours: a short loop)
                ar[d] = 0.9 * ar[d - 1] + e[d]
            rel = shapes[spec.shape][(h + offset) % WEEK] * np.exp(ar[day_of] + rng.normal(0.0, spec.hour_sd, hours))
        gpus = level * rel
        frames.append(pd.DataFrame({"period": t0 + pd.to_timedelta(h, unit="h"), "workload_class": spec.name,
                                    "gpus": np.round(gpus, 3)}))
    return pd.concat(frames, ignore_index=True), source


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="growth_then_cut", choices=sorted(SCENARIOS))  # noqa: the scenarios above
    ap.add_argument("--years", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", default="2027-01-04")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    demand, source = generate(args.scenario, args.years, args.seed, args.start)
    demand.assign(period=demand["period"].dt.strftime("%Y-%m-%dT%H:%M")).to_csv(args.out, index=False)
    print(f"wrote {args.out}: {len(demand):,} rows, days from {source}")
    for cls, g in demand.groupby("workload_class", sort=False):
        print(f"  {cls}: a week's replay misses by {replay_error(g['gpus'].to_numpy()):.1f} % (WAPE, hourly)")
    days = real_days()
    if days is not None:
        for shape, (pool, _) in days.items():
            print(f"  real {shape} trace: {replay_error(pool.reshape(-1)):.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
