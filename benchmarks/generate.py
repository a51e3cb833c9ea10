"""Seeded synthetic inputs for the planner: demand.csv (long form), prices.csv and model.toml.

    python benchmarks/generate.py OUT_DIR --size M            # a named size
    python benchmarks/generate.py OUT_DIR --hours 720 --classes 6 --types 3 --regions 2 --seed 7

Named sizes (``--size``); any option given explicitly overrides the size's value:

    S   168 h (1 week hourly),  4 classes,  2 types x 2 regions =  4 pools, every pool allowed
    M  2184 h (a quarter),      8 classes,  3 types x 4 regions = 12 pools, every pool allowed
    L  2184 h,                 20 classes,  6 types x 4 regions = 24 pools, 8 pools per class
    XL 8760 h (a year),        50 classes,  6 types x 4 regions = 24 pools, 8 pools per class

Demand shapes per class kind (all hourly, UTC, starting Monday 2027-01-04 00:00):

    chat-inference   diurnal (peak ~14:00) x weekday/weekend x growth trend, launch spikes;
                     spot forbidden, headroom 10-25 %
    batch-inference  base load plus a nightly window, retried on preemption (spot <= 70 %)
    pretraining      plateaus of whole gangs (256-1024 GPUs) held for weeks with pauses
    fine-tuning      bursts: Poisson arrivals of 8-64-GPU jobs lasting 2-24 h (spot <= 100 %)
    research         weekday business hours, noisy (spot allowed for some, not others)
    evaluation       nightly sweeps over fresh checkpoints (spot <= 100 %)

Prices look like cloud list prices per GPU-hour (GCP-sized figures for H100, A100, L4 ...,
region multipliers, spot at 30-60 % of on-demand with interruptions_per_hour, 1-year and 3-year
commitments, some with an upfront part), with caps on some spot, on-demand and reserved pools.

The same arguments and seed always give byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

START = pd.Timestamp("2027-01-04T00:00")  # a Monday

SIZES: dict[str, dict] = {
    "S": dict(hours=168, classes=4, types=2, regions=2, pools_per_class=None),
    "M": dict(hours=2184, classes=8, types=3, regions=4, pools_per_class=None),
    "L": dict(hours=2184, classes=20, types=6, regions=4, pools_per_class=8),
    "XL": dict(hours=8760, classes=50, types=6, regions=4, pools_per_class=8),
    # three years hourly, monthly purchases (the ladder): only when named
    "3Y": dict(hours=26280, classes=20, types=6, regions=4, pools_per_class=8, purchase_every="month"),
    # the same with five demand scenarios that branch after the first quarter (a scenario tree: purchases
    # from the fifth month on may differ between them)
    "3Y5": dict(hours=26280, classes=20, types=6, regions=4, pools_per_class=8, purchase_every="month", scenarios=5),
}
BRANCH_HOURS = 2184  # scenarios are equal for the first quarter (13 weeks), then drift apart
SCENARIO_DRIFT = 0.3  # by the horizon's end the outer scenarios are +-30 % of the base


@dataclass(frozen=True)
class GpuType:
    name: str
    od: float  # on-demand USD per GPU-hour in the base region
    m: int  # GPUs per instance
    ip: tuple[float, float]  # spot interruptions per instance-hour (low, high)
    # throughput relative to each kind's reference GPU (H100 for big models, L4 for small)
    big: float  # LLM training / serving, reference H100 = 1.0
    small: float  # small-model batch inference / evaluation, reference L4 = 1.0


# GPU types in the order sizes take them: the first two are H100 and L4, then A100-80GB, ...
TYPES = [
    GpuType("H100", 11.06, 8, (0.03, 0.08), 1.00, 12.0),
    GpuType("L4", 0.707, 1, (0.005, 0.02), 0.05, 1.0),
    GpuType("A100-80GB", 5.07, 8, (0.02, 0.05), 0.45, 6.0),
    GpuType("H200", 13.50, 8, (0.04, 0.10), 1.40, 14.0),
    GpuType("A100-40GB", 3.67, 8, (0.01, 0.04), 0.32, 4.5),
    GpuType("L40S", 1.90, 1, (0.01, 0.03), 0.20, 2.6),
    GpuType("B200", 17.00, 8, (0.05, 0.12), 2.20, 22.0),
    GpuType("T4", 0.35, 1, (0.005, 0.02), 0.015, 0.45),
]

# region, price multiplier against us-central1
REGIONS = [("us-central1", 1.00), ("us-east4", 1.00), ("europe-west4", 1.13), ("asia-southeast1", 1.18),
           ("us-west1", 1.02), ("europe-west1", 1.10), ("asia-northeast1", 1.20), ("me-west1", 1.10)]

KINDS = ["chat-inference", "pretraining", "fine-tuning", "batch-inference", "research", "evaluation"]
KIND_WEIGHTS = [0.30, 0.12, 0.16, 0.16, 0.14, 0.12]
BIG_KINDS = {"chat-inference", "pretraining", "fine-tuning", "research"}


# ---------------------------------------------------------------------------- demand shapes

def _hour_of_day(T: int) -> np.ndarray:
    return np.arange(T) % 24


def _day_of_week(T: int) -> np.ndarray:
    return (np.arange(T) // 24) % 7  # 0 = Monday


def demand_chat(rng: np.random.Generator, T: int) -> np.ndarray:
    h, dow = _hour_of_day(T), _day_of_week(T)
    base = rng.uniform(40, 600)
    peak = rng.uniform(12, 16)
    amp = rng.uniform(0.35, 0.65)
    diurnal = 1 + amp * np.cos(2 * np.pi * (h - peak) / 24)
    weekly = np.where(dow >= 5, rng.uniform(0.65, 0.85), 1.0)
    trend = 1 + rng.uniform(0.0, 0.35) * np.arange(T) / max(T, 1)
    noise = rng.lognormal(0, 0.05, T)
    d = base * diurnal * weekly * trend * noise
    for _ in range(rng.poisson(T / 24 / 30)):  # launches / incidents: a few-day spike
        a = rng.integers(0, T)
        d[a:a + rng.integers(24, 96)] *= rng.uniform(1.3, 1.8)
    return d


def demand_batch(rng: np.random.Generator, T: int) -> np.ndarray:
    h = _hour_of_day(T)
    base = rng.uniform(100, 1500)
    night = (h >= 22) | (h < 6)
    d = base * (0.4 + rng.uniform(0.5, 1.0) * night) * rng.lognormal(0, 0.08, T)
    return d


def demand_pretraining(rng: np.random.Generator, T: int) -> np.ndarray:
    gang = int(rng.choice([256, 512]))
    d = np.zeros(T)
    t = int(rng.integers(0, 72))
    while t < T:
        run = int(rng.integers(7 * 24, 28 * 24))  # a run holds for 1-4 weeks
        d[t:t + run] = gang * int(rng.integers(1, 3))
        t += run
        t += int(rng.integers(24, 7 * 24))  # pause: evaluation, data, next config
    return d


def demand_finetune(rng: np.random.Generator, T: int) -> np.ndarray:
    d = np.zeros(T)
    rate = rng.uniform(0.3, 1.5)  # jobs per hour
    for start in np.flatnonzero(rng.poisson(rate, T)):
        size = int(rng.choice([8, 16, 32, 64], p=[0.4, 0.3, 0.2, 0.1]))
        length = int(rng.integers(2, 25))
        d[start:start + length] += size
    return d


def demand_research(rng: np.random.Generator, T: int) -> np.ndarray:
    h, dow = _hour_of_day(T), _day_of_week(T)
    offset = int(rng.choice([0, 6, 15]))  # UTC offset of the team (EU, US east, APAC-ish)
    local = (h + offset) % 24
    busy = (dow < 5) & (local >= 9) & (local < 19)
    base = rng.uniform(16, 256)
    d = base * (0.15 + 0.85 * busy) * rng.lognormal(0, 0.2, T)
    return d


def demand_eval(rng: np.random.Generator, T: int) -> np.ndarray:
    h = _hour_of_day(T)
    start = int(rng.integers(0, 4))
    sweep = (h >= start) & (h < start + rng.integers(3, 6))
    d = rng.uniform(50, 800) * sweep * rng.lognormal(0, 0.15, T)
    return d


SHAPES = {"chat-inference": demand_chat, "batch-inference": demand_batch, "pretraining": demand_pretraining,
          "fine-tuning": demand_finetune, "research": demand_research, "evaluation": demand_eval}


# ---------------------------------------------------------------------------- classes

def _kinds(rng: np.random.Generator, K: int) -> list[str]:
    """Every kind appears once before the mix is drawn by weight (small sizes cover the shapes)."""
    first = ["chat-inference", "pretraining", "fine-tuning", "batch-inference", "research", "evaluation"]
    out = first[:K]
    if K > len(first):
        out += list(rng.choice(KINDS, size=K - len(first), p=KIND_WEIGHTS))
    return out


def _factor(n: int, n_types: int, n_regions: int, rng: np.random.Generator) -> tuple[int, int]:
    """(types, regions) with types * regions == n if possible, else the largest product below n."""
    best = []
    for target in range(n, 0, -1):
        best = [(a, target // a) for a in range(1, n_types + 1)
                if target % a == 0 and target // a <= n_regions]
        if best:
            break
    return best[int(rng.integers(len(best)))]


def class_policy(rng: np.random.Generator, kind: str, types: list[GpuType], regions: list[str],
                 pools_per_class: int | None) -> dict:
    big = kind in BIG_KINDS
    speed = {t.name: (t.big if big else t.small) for t in types}
    if pools_per_class is None or pools_per_class >= len(types) * len(regions):
        chosen_types, chosen_regions = [t.name for t in types], None
    else:
        nt, nr = _factor(pools_per_class, len(types), len(regions), rng)
        # prefer the types that suit the kind (cost per unit of work), with some randomness
        score = np.array([speed[t.name] / t.od for t in types]) * rng.lognormal(0, 0.5, len(types))
        chosen_types = [types[i].name for i in np.argsort(-score)[:nt]]
        chosen_regions = sorted(rng.choice(regions, size=nr, replace=False).tolist(), key=regions.index)
    policy: dict = {"description": f"synthetic {kind}"}
    if kind == "chat-inference":
        policy |= {"spot": False, "headroom": round(float(rng.uniform(0.10, 0.25)), 2)}
    elif kind == "batch-inference":
        policy |= {"spot": True, "max_spot_share": 0.7, "headroom": 0.05, "job_gpus": 1,
                   "checkpoint_minutes": 1, "restart_minutes": 3}
    elif kind == "pretraining":
        policy |= {"spot": True, "max_spot_share": round(float(rng.uniform(0.3, 0.5)), 2), "headroom": 0.0,
                   "job_gpus": int(rng.choice([256, 512])), "checkpoint_minutes": 6, "restart_minutes": 15}
    elif kind == "fine-tuning":
        policy |= {"spot": True, "max_spot_share": 1.0, "headroom": 0.0, "job_gpus": 16,
                   "checkpoint_minutes": 2, "restart_minutes": 5}
    elif kind == "research":
        spot = bool(rng.random() < 0.6)
        policy |= {"spot": spot, "headroom": 0.10}
        if spot:
            policy |= {"max_spot_share": 0.8, "job_gpus": 8, "checkpoint_minutes": 3, "restart_minutes": 10,
                       "checkpoint_interval_minutes": 30}
    else:  # evaluation
        policy |= {"spot": True, "max_spot_share": 1.0, "headroom": 0.0, "job_gpus": 1,
                   "checkpoint_minutes": 0.5, "restart_minutes": 2}
    policy["gpu_types"] = {t: speed[t] for t in chosen_types}
    if chosen_regions is not None:
        policy["regions"] = chosen_regions
    return policy


# ---------------------------------------------------------------------------- prices

def price_rows(rng: np.random.Generator, types: list[GpuType], regions: list[tuple[str, float]]) -> list[dict]:
    rows = []
    for t in types:
        for region, mult in regions:
            od = round(t.od * mult * rng.uniform(0.98, 1.03), 4)
            base = {"gpu_type": t.name, "region": region, "gpus_per_instance": t.m}
            od_cap = float(rng.choice([256, 512, 1024])) if rng.random() < 0.25 else None
            rows.append(base | {"option": "on_demand", "hourly_usd": od, "max_gpus": od_cap})
            if rng.random() < 0.9:  # a few pools sell no spot
                sp = round(od * rng.uniform(0.30, 0.60), 4)
                ip = round(float(rng.uniform(*t.ip)), 4)
                if rng.random() < 0.6:
                    cap = float(rng.choice([64, 128, 256, 512] if t.m > 1 else [100, 200, 400, 800]))
                else:
                    cap = None
                rows.append(base | {"option": "spot", "hourly_usd": sp, "max_gpus": cap,
                                    "interruptions_per_hour": ip})
            if rng.random() < 0.9:  # a few pools offer no commitment (A100-80GB on GCP, say)
                res_cap = float(rng.choice([256, 512, 1024])) if rng.random() < 0.15 else None
                r1 = round(od * rng.uniform(0.62, 0.72), 4)
                rows.append(base | {"option": "reserved_1y", "hourly_usd": r1, "upfront_usd": 0.0,
                                    "term_months": 12, "max_gpus": res_cap})
                eff3 = od * rng.uniform(0.40, 0.48)
                if rng.random() < 0.5:  # all-hourly 3-year commitment
                    rows.append(base | {"option": "reserved_3y", "hourly_usd": round(eff3, 4), "upfront_usd": 0.0,
                                        "term_months": 36, "max_gpus": res_cap})
                else:  # partial upfront: a low hourly rate plus an upfront payment per GPU
                    hourly = round(od * 0.22, 4)
                    upfront = round((eff3 - hourly) * 36 * 730, 2)
                    rows.append(base | {"option": "reserved_3y", "hourly_usd": hourly, "upfront_usd": upfront,
                                        "term_months": 36, "max_gpus": res_cap})
    return rows


# ---------------------------------------------------------------------------- writing

def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def write_model_toml(path: Path, name: str, classes: dict[str, dict], solver: dict,
                     demand: str = "demand.csv", prices: str = "prices.csv", comment: str = "",
                     purchase_every: str = "once", scenarios: dict | None = None) -> None:
    lines = [f"# {line}" for line in comment.splitlines()] if comment else []
    lines += [f"name = {json.dumps(name)}", f"demand = {json.dumps(demand)}", f"prices = {json.dumps(prices)}", ""]
    if purchase_every != "once":
        lines += ["[commitments]", f"purchase_every = {json.dumps(purchase_every)}", ""]
    if scenarios:
        lines += ["[scenarios]"] + [f"{json.dumps(k)} = {v!r}" for k, v in scenarios.items()] + [""]
    lines += ["[solver]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in solver.items()]
    for cname, opts in classes.items():
        lines += ["", f"[classes.{json.dumps(cname)}]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in opts.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


PRICE_COLUMNS = ["gpu_type", "region", "option", "hourly_usd", "upfront_usd", "term_months", "max_gpus",
                 "interruptions_per_hour", "gpus_per_instance"]


def write_demand_csv(path: Path, periods: pd.DatetimeIndex, names: list[str], demand: np.ndarray,
                     scenarios: list[str] | None = None) -> None:
    """Long form: period, workload_class, gpus[, scenario]; demand is (K, T), or (S, K, T) with ``scenarios``."""
    cubes = [demand] if scenarios is None else list(demand)
    frames = []
    for i, cube in enumerate(cubes):
        K, T = cube.shape
        f = pd.DataFrame({
            "period": np.repeat(periods.strftime("%Y-%m-%dT%H:%M").to_numpy(), K),
            "workload_class": np.tile(np.asarray(names, dtype=object), T),
            "gpus": np.round(cube.T.reshape(-1), 2),
        })
        if scenarios is not None:
            f["scenario"] = scenarios[i]
        frames.append(f)
    pd.concat(frames, ignore_index=True).to_csv(path, index=False, float_format="%.2f")


def scenario_cube(demand: np.ndarray, count: int) -> tuple[np.ndarray, list[str], dict]:
    """``count`` scenarios of ``demand`` (K, T): equal for the first ``BRANCH_HOURS``, then each drifting
    linearly to 1 + g of the base by the end, g spread evenly over +-SCENARIO_DRIFT; equal probabilities."""
    K, T = demand.shape
    g = np.linspace(-SCENARIO_DRIFT, SCENARIO_DRIFT, count)
    ramp = np.clip((np.arange(T) - BRANCH_HOURS) / max(T - BRANCH_HOURS, 1), 0.0, None)
    cube = demand[None] * (1.0 + g[:, None, None] * ramp[None, None, :])
    names = [f"s{j}" for j in range(count)]
    return cube, names, {n: round(1.0 / count, 12) for n in names[:-1]} | {names[-1]: 1.0 - round(1.0 / count, 12) * (count - 1)}


def generate(out: Path, *, hours: int, classes: int, types: int, regions: int,
             pools_per_class: int | None = None, seed: int = 0, name: str | None = None,
             backend: str = "highs", mip_gap: float = 1e-4, time_limit_s: float = 600.0,
             purchase_every: str = "once", scenarios: int = 1) -> Path:
    """Write demand.csv, prices.csv and model.toml into ``out``; return the model file's path."""
    if not 1 <= types <= len(TYPES):
        raise ValueError(f"--types must be 1..{len(TYPES)}")
    if not 1 <= regions <= len(REGIONS):
        raise ValueError(f"--regions must be 1..{len(REGIONS)}")
    if hours < 2 or classes < 1:
        raise ValueError("need --hours >= 2 and --classes >= 1")
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    gpu_types, regs = TYPES[:types], REGIONS[:regions]
    region_names = [r for r, _ in regs]

    kinds = _kinds(rng, classes)
    names = [f"{kind}-{i:02d}" for i, kind in enumerate(kinds)]
    policies = {n: class_policy(rng, kind, gpu_types, region_names, pools_per_class)
                for n, kind in zip(names, kinds)}
    demand = np.vstack([SHAPES[kind](rng, hours) for kind in kinds])
    demand = np.maximum(demand, 0.0)
    periods = pd.date_range(START, periods=hours, freq="h")
    probs = None
    if scenarios > 1:
        cube, snames, probs = scenario_cube(demand, scenarios)
        write_demand_csv(out / "demand.csv", periods, names, cube, snames)
    else:
        write_demand_csv(out / "demand.csv", periods, names, demand)

    prices = pd.DataFrame(price_rows(rng, gpu_types, regs)).reindex(columns=PRICE_COLUMNS)
    prices.to_csv(out / "prices.csv", index=False)

    name = name or f"bench-h{hours}-k{classes}-t{types}-r{regions}-p{pools_per_class or 'all'}-s{seed}"
    comment = (f"Synthetic benchmark case written by benchmarks/generate.py (seed {seed}).\n"
               f"{hours} hourly periods, {classes} classes, {types} GPU types x {regions} regions, "
               f"pools per class: {pools_per_class or 'all'}.")
    solver = {"backend": backend, "time_limit_s": float(time_limit_s), "mip_gap": mip_gap}
    write_model_toml(out / "model.toml", name, policies, solver, comment=comment, purchase_every=purchase_every,
                     scenarios=probs)
    return out / "model.toml"


def generate_size(out: Path, size: str, seed: int = 0, **overrides) -> Path:
    params = dict(SIZES[size.upper()])
    params.update({k: v for k, v in overrides.items() if v is not None})
    return generate(out, seed=seed, name=f"bench-{size.upper()}-s{seed}", **params)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="folder to write demand.csv, prices.csv and model.toml into")
    ap.add_argument("--size", choices=sorted(SIZES), help="a named size (options below override it)")
    ap.add_argument("--hours", type=int)
    ap.add_argument("--classes", type=int)
    ap.add_argument("--types", type=int, help=f"GPU types (1..{len(TYPES)})")
    ap.add_argument("--regions", type=int, help=f"regions (1..{len(REGIONS)})")
    ap.add_argument("--pools-per-class", type=int, help="allowed pools per class (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", choices=["cbc", "highs"], default="highs", help="written to model.toml")
    ap.add_argument("--mip-gap", type=float, default=1e-4, help="written to model.toml (the planner default)")
    ap.add_argument("--time-limit", type=float, default=600.0, help="written to model.toml (seconds)")
    ap.add_argument("--purchase-every", choices=["once", "quarter", "month"], default=None,
                    help="[commitments] purchase_every (default: the size's, else once)")
    ap.add_argument("--scenarios", type=int, default=None,
                    help="demand scenarios, equal for the first quarter then drifting apart (default: the size's, else 1)")
    a = ap.parse_args(argv)
    given = dict(hours=a.hours, classes=a.classes, types=a.types, regions=a.regions,
                 pools_per_class=a.pools_per_class)
    extra = dict(backend=a.backend, mip_gap=a.mip_gap, time_limit_s=a.time_limit)
    if a.purchase_every:
        extra["purchase_every"] = a.purchase_every
    if a.scenarios:
        extra["scenarios"] = a.scenarios
    try:
        if a.size:
            path = generate_size(a.out, a.size, seed=a.seed, **given, **extra)
        else:
            missing = [k for k in ("hours", "classes", "types", "regions") if given[k] is None]
            if missing:
                ap.error("without --size, give " + ", ".join("--" + m.replace("_", "-") for m in missing))
            path = generate(a.out, seed=a.seed, **given, **extra)
    except ValueError as exc:
        print(f"generate.py: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
