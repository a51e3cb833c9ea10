"""Seconds for `planner spares` at 16,384 GPUs and for serving sizing of 100 classes (no asserts).

    python benchmarks/sizing.py
"""

from __future__ import annotations

import time

import numpy as np

from planner.sizing import serving as sv
from planner.sizing.spares import size_spares


def main() -> None:
    t = time.perf_counter()
    r = size_spares(16384, 8, 48, 0.999, gpu_mtbf_hours=50_000, price_per_gpu_hour=2.5, checkpoint_minutes=5,
                    restart_minutes=20)
    print(f"spares, 16,384 GPUs: {time.perf_counter() - t:.4f} s ({r.spare_instances} spare instances)")
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
    total = sum(sv.plan(s, gpus)["mix_usd_per_hour"] for s in services)
    print(f"serving sizing, 100 classes x 3 buckets x 4 GPU types: {time.perf_counter() - t:.2f} s "
          f"(${total:,.0f}/h in all)")


if __name__ == "__main__":
    main()
