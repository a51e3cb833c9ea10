"""Seconds for spares and serving sizing at scale (issue 36): printed, never asserted.

    python benchmarks/sizing.py [--plan-hours 672]

- `planner spares` at 16,384 GPUs (the closed form: a Poisson quantile and the goodputs);
- the plan's spares sizing, `spare_gpus`, over a year of hourly gang sizes around 16,384 GPUs (one quantile each);
- a plan whose class asks for spares: 16,384 GPUs an hour for --plan-hours hours on one pool, planned, then its
  memo (every re-solve a whole model: spares are re-sized at each demand level);
- LLM serving sizing of 100 classes x 3 size buckets x 4 GPU types (one Erlang C search per bucket and type),
  the profile's load check included.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from planner.sizing import serving as sv
from planner.sizing.spares import size_spares, spare_gpus

GPUS = 16_384


def _spares_plan(folder: Path, hours: int) -> Path:
    """A model of one gang class (16,384 GPUs +-3 % an hour) asking for spares, one pool with reserved and on-demand."""
    rng = np.random.default_rng(0)
    periods = pd.date_range("2027-01-04", periods=hours, freq="h")
    demand = np.round(GPUS * (1 + 0.03 * rng.standard_normal(hours)) / 8) * 8
    pd.DataFrame({"period": periods.strftime("%Y-%m-%dT%H:%M"), "workload_class": "pretrain",
                  "gpus": demand}).to_csv(folder / "demand.csv", index=False)
    pd.DataFrame([{"gpu_type": "H100", "region": "r1", "option": "on_demand", "hourly_usd": 6.0, "gpus_per_instance": 8},
                  {"gpu_type": "H100", "region": "r1", "option": "reserved_1y", "hourly_usd": 3.5,
                   "gpus_per_instance": 8}]).to_csv(folder / "prices.csv", index=False)
    (folder / "model.toml").write_text(
        'name = "spares-16k"\ndemand = "demand.csv"\nprices = "prices.csv"\n[solver]\nbackend = "highs"\n'
        '[classes.pretrain]\nspares_target = 0.999\ngpus_per_instance = 8\ngpu_mtbf_hours = 50000\n'
        'repair_hours = 48\n')
    return folder / "model.toml"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan-hours", type=int, default=672, help="hours of the spares plan (default 4 weeks)")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    r = size_spares(GPUS, 8, 48, 0.999, gpu_mtbf_hours=50_000, price_per_gpu_hour=2.5, checkpoint_minutes=5,
                    restart_minutes=20)
    print(f"spares, 16,384 GPUs (closed form): {time.perf_counter() - t:.4f} s ({r.spare_instances} spare instances)")

    sizes = np.round(GPUS * (1 + 0.05 * np.random.default_rng(1).standard_normal(8760)))
    t = time.perf_counter()
    s = spare_gpus(sizes, 0.999, 8, 50_000, 48)
    print(f"spares of 8,760 hourly gang sizes around 16,384 GPUs: {time.perf_counter() - t:.4f} s "
          f"({s.min():,.0f} to {s.max():,.0f} spare GPUs)")

    from planner.pipeline.run import load_inputs, make_plan, with_memo

    with tempfile.TemporaryDirectory() as tmp:
        model = _spares_plan(Path(tmp), args.plan_hours)
        t = time.perf_counter()
        plan = make_plan(load_inputs(model))
        t_plan = time.perf_counter() - t
        t = time.perf_counter()
        plan = with_memo(plan)
        t_memo = time.perf_counter() - t
        print(f"plan with spares, 16,384 GPUs x {args.plan_hours} h: plan {t_plan:.2f} s, memo {t_memo:.2f} s "
              f"(reserved {plan.purchases['gpus'].sum():,.0f} GPUs, spares held at most {plan.spares_peak_gpus:,.0f}, "
              f"working-fleet utilisation {100 * plan.reserved_utilisation:.1f} %, "
              f"{len(plan.memo.curve) if plan.memo is not None else 0} curve points)")

    rng = np.random.default_rng(0)
    gpus = [sv.GpuProfile("L40S", 0.9, 96, 70, 163840, 3500, 35, 0.5, 2),
            sv.GpuProfile("A100-80GB", 2.0, 160, 140, 327680, 6000, 30, 0.35, 2),
            sv.GpuProfile("H100", 4.5, 160, 140, 327680, 15000, 14, 0.15, 2),
            sv.GpuProfile("H200", 6.5, 141, 70, 163840, 9000, 16, 0.2, 1)]
    services = []
    for i in range(100):
        shares = rng.dirichlet(np.ones(3))
        services.append(sv.Service(f"s{i}", float(rng.uniform(1, 200)), ttft_ms=float(rng.uniform(1500, 4000)),
                                   tpot_ms=float(rng.uniform(40, 100)),
                                   buckets=tuple(sv.Bucket(n, float(s), float(i_), float(o)) for n, s, i_, o in
                                                 zip(("short", "medium", "long"), shares, (300, 2000, 8000),
                                                     (150, 400, 800)))))
    t = time.perf_counter()
    total = 0.0
    for svc in services:
        sv.check_load(svc, gpus)
        total += sv.plan(svc, gpus)["mix_usd_per_hour"]
    print(f"serving sizing, 100 classes x 3 buckets x 4 GPU types: {time.perf_counter() - t:.2f} s "
          f"(${total:,.0f}/h in all)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
