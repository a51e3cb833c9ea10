"""Generate the bundled example inputs (demand.csv, prices.csv, inventory.csv).

Run:  python data/example/make_example.py
The CSVs are written next to this script.  The output is deterministic
(numpy ``default_rng(2027)``, fixed draw order, fixed formatting), so a re-run
gives byte-identical files.  Standard library + numpy + pandas only; nothing
outside the repository is read.

All figures are illustrative.  Prices are sized from public GCP list prices
(see README.md next to this file for the source and the arithmetic).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SEED = 2027
START = "2027-01-04T00:00"  # a Monday, UTC naive
N_HOURS = 13 * 7 * 24  # 13 weeks = 2184 hourly periods
HOURS_3Y = 36 * 730  # hours in a 36-month term at GCP's 730 h/month = 26 280

# ---------------------------------------------------------------------------
# Prices, USD per GPU-hour.  Source: Cyclenerd/google-cloud-pricing-cost-calculator
# pricing.yml @ fd66b26 (snapshot 2026-07-30), per-GPU = VM price / GPUs per VM.
# od = on-demand ("hour"), spot = "hour_spot", r1y/r3y = 1y/3y resource-based CUD
# ("month_1y"/"month_3y" / 730).  Rounded to the cent (L4: to 0.1 cent).
# ---------------------------------------------------------------------------
GPUS_PER_INSTANCE = {"H100": 8, "A100-80GB": 8, "L4": 1}

# (gpu_type, region): (on_demand, spot, reserved_1y, reserved_3y_effective); None = no offer
LIST_PRICES = {
    # H100: a3-highgpu-8g (8x H100 80GB), VM price / 8
    ("H100", "us-central1"): (11.06,   # od   11.0612
                              6.33,    # spot  6.32619
                              7.67,    # 1y    7.67296
                              4.86),   # 3y    4.85805
    ("H100", "us-east4"): (11.07,      # od   11.0695
                           4.54,       # spot  4.5401
                           7.68,       # 1y    7.67814
                           4.86),      # 3y    4.86175
    ("H100", "europe-west4"): (14.07,  # od   14.0676
                               5.51,   # spot  5.51485
                               9.76,   # 1y    9.7589
                               6.18),  # 3y    6.17777
    # A100-80GB: a2-ultragpu-8g (8x A100 80GB), VM price / 8.  The snapshot has no CUD
    # for a2-ultragpu; 1y/3y = on-demand x the a2-highgpu-8g CUD ratio of the same region.
    ("A100-80GB", "us-central1"): (5.07,   # od   5.0688
                                   2.76,   # spot 2.75955
                                   3.19,   # 1y   5.0688 x 2.31421/3.67339 (0.6300) = 3.1933
                                   1.77),  # 3y   5.0688 x 1.28571/3.67339 (0.3500) = 1.7741
    ("A100-80GB", "us-east4"): (5.71,      # od   5.70773
                                2.37,      # spot 2.36725
                                3.56,      # 1y   5.70773 x 2.45701/3.93435 (0.6245) = 3.5645
                                2.01),     # 3y   5.70773 x 1.38256/3.93435 (0.3514) = 2.0057
    ("A100-80GB", "europe-west4"): (5.58,  # od   5.58092
                                    2.95,  # spot 2.94521
                                    None,  # no reserved offer in this pool (example choice)
                                    None),
    # L4: g2-standard-4 (1x L4, 4 vCPU, 16 GB), the smallest L4 VM
    ("L4", "us-central1"): (0.707,   # od   0.706832
                            0.397,   # spot 0.397336
                            0.445,   # 1y   0.445304
                            0.318),  # 3y   0.318075
    ("L4", "us-east4"): (0.705,      # od   0.704518
                         0.311,      # spot 0.310596
                         0.444,      # 1y   0.443846
                         0.317),     # 3y   0.317033
    ("L4", "europe-west4"): (0.743,  # od   0.742916
                             0.390,  # spot 0.38986
                             None,   # no reserved offer in this pool (example choice)
                             None),
}

# reserved_3y is sold here as "partial upfront": half of the 3-year commitment is
# prepaid, the rest is billed hourly, so hourly + upfront / (36 * 730) equals the
# 3y CUD rate above (no extra discount for prepaying).
R3Y_PREPAID_SHARE = 0.5

# Spot: mean preemptions per INSTANCE-hour (GCP publishes none; see README).
SPOT_INTERRUPTIONS = {
    # 8-GPU H100 VMs: scarcest, largest instances (AWS p5 analogue: "5-10%" .. ">20%")
    ("H100", "us-central1"): 0.05,
    ("H100", "us-east4"): 0.03,
    ("H100", "europe-west4"): 0.06,
    # 8-GPU A100-80GB VMs (AWS p4d/p4de analogue: "<5%" .. ">20%")
    ("A100-80GB", "us-central1"): 0.03,
    ("A100-80GB", "us-east4"): 0.02,
    ("A100-80GB", "europe-west4"): 0.04,
    # 1-GPU L4 VMs: small, plentiful (AWS g6 analogue; per-instance hazard low)
    ("L4", "us-central1"): 0.02,
    ("L4", "us-east4"): 0.01,
    ("L4", "europe-west4"): 0.005,
}

# Caps on GPUs held at once (None = no cap): spot availability and one quota.
MAX_GPUS = {
    ("H100", "us-central1", "spot"): 256,
    ("H100", "us-east4", "spot"): 384,
    ("H100", "europe-west4", "spot"): 128,
    ("H100", "us-east4", "on_demand"): 512,   # regional H100 on-demand quota
    ("A100-80GB", "us-central1", "spot"): 128,
    ("A100-80GB", "us-east4", "spot"): 192,
    ("A100-80GB", "europe-west4", "spot"): 64,
    ("L4", "us-east4", "spot"): 800,
    ("L4", "europe-west4", "spot"): 400,
}

GPU_ORDER = ["H100", "A100-80GB", "L4"]
REGION_ORDER = ["us-central1", "us-east4", "europe-west4"]

INVENTORY = [
    # gpu_type, region, option, gpus, start, end
    ("H100", "us-central1", "reserved_1y", 256, "2026-06-01T00:00", "2027-06-01T00:00"),
    ("A100-80GB", "us-east4", "reserved_1y", 64, "2026-02-15T00:00", "2027-02-15T00:00"),
]


def num(x) -> str:
    """Shortest exact text of a number; '' for None."""
    if x is None:
        return ""
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def price_rows() -> list[list[str]]:
    rows = []
    for gpu in GPU_ORDER:
        for region in REGION_ORDER:
            od, spot, r1y, r3y = LIST_PRICES[(gpu, region)]
            per_inst = GPUS_PER_INSTANCE[gpu]
            offers = [("on_demand", od, None, None), ("spot", spot, None, None)]
            if r1y is not None:
                offers.append(("reserved_1y", r1y, 0, 12))
            if r3y is not None:
                hourly = round(r3y * (1 - R3Y_PREPAID_SHARE), 4)
                upfront = round((r3y - hourly) * HOURS_3Y, 2)
                offers.append(("reserved_3y", hourly, upfront, 36))
            for option, hourly, upfront, term in offers:
                rows.append([gpu, region, option, num(hourly), num(upfront), num(term),
                             num(MAX_GPUS.get((gpu, region, option))),
                             num(SPOT_INTERRUPTIONS[(gpu, region)] if option == "spot" else None),
                             num(per_inst)])
    return rows


# ---------------------------------------------------------------------------
# Demand (hourly average concurrent GPUs, in each class's reference GPU)
# ---------------------------------------------------------------------------

def ar1(rng: np.random.Generator, n: int, phi: float, sigma: float) -> np.ndarray:
    """Stationary AR(1) noise with marginal standard deviation ``sigma``."""
    e = rng.normal(0.0, sigma * np.sqrt(1 - phi * phi), n)
    out = np.empty(n)
    out[0] = rng.normal(0.0, sigma)
    for i in range(1, n):
        out[i] = phi * out[i - 1] + e[i]
    return out


def demand(rng: np.random.Generator) -> dict[str, np.ndarray]:
    t = np.arange(N_HOURS)
    hour = t % 24
    day = t // 24
    weekday = day % 7  # 0 = Monday (START is a Monday)
    weekend = weekday >= 5
    frac = t / (N_HOURS - 1)  # 0 .. 1 over the quarter
    out: dict[str, np.ndarray] = {}

    # chat-inference (reference H100): diurnal, peak 14:00 UTC, trough 40 % of peak,
    # weekends at 80 %, +15 % growth over the quarter, autocorrelated noise.
    diurnal = 0.7 + 0.3 * np.cos(2 * np.pi * (hour - 14) / 24)
    chat = 420.0 * (1 + 0.15 * frac) * diurnal * np.where(weekend, 0.8, 1.0)
    out["chat-inference"] = chat * (1 + ar1(rng, N_HOURS, 0.8, 0.04))

    # batch-inference (reference L4): base load + nightly batch window ~23:00-06:00 UTC,
    # per-night size varies; lighter windows on weekend nights.
    window = np.zeros(24)
    window[[23, 0, 1, 2, 3, 4, 5, 6]] = [0.3, 0.9, 1.0, 1.0, 1.0, 1.0, 0.8, 0.4]
    night = (t + 1) // 24  # the window starting at 23:00 belongs to the next day
    night_size = rng.uniform(0.8, 1.1, N_HOURS // 24 + 1)
    night_dow = night % 7
    night_size = night_size[night] * np.where(night_dow >= 5, 0.6, 1.0)
    base = 400.0 * (1 + 0.10 * frac)
    batch = base + 650.0 * window[hour] * night_size
    out["batch-inference"] = batch * (1 + ar1(rng, N_HOURS, 0.6, 0.03))

    # pretraining (reference H100): a 512-GPU gang job; 2 days of bring-up (0),
    # 5 days at one gang (512), then 1024 flat; a 2-week pause on days 49-62
    # (2027-02-22 .. 2027-03-07), then 1024 to the end of the quarter.
    pre = np.full(N_HOURS, 1024.0)
    pre[day < 2] = 0.0
    pre[(day >= 2) & (day < 7)] = 512.0
    pre[(day >= 49) & (day < 63)] = 0.0
    out["pretraining"] = pre

    # fine-tuning (reference H100): Poisson job arrivals (more on weekdays and in
    # working hours), 8-64 GPUs, 2-24 h; hourly value = exact time-weighted overlap.
    warmup = 24
    rate = np.empty(N_HOURS + warmup)
    tt = np.arange(-warmup, N_HOURS)
    wd = ((tt // 24) % 7) >= 5
    work = ((tt % 24) >= 8) & ((tt % 24) < 20)
    rate[:] = 0.55 * np.where(wd, 0.6, 1.15) * np.where(work, 1.3, 0.7)
    counts = rng.poisson(rate)
    starts = np.repeat(tt, counts) + rng.uniform(0, 1, counts.sum())
    sizes = rng.choice([8, 16, 32, 64], size=starts.size, p=[0.35, 0.35, 0.2, 0.1])
    durs = rng.uniform(2, 24, starts.size)
    ft = np.zeros(N_HOURS)
    for s, g, d in zip(starts, sizes, durs):
        e = s + d
        for h in range(max(int(np.floor(s)), 0), min(int(np.ceil(e)), N_HOURS)):
            ft[h] += g * (min(e, h + 1) - max(s, h))
    out["fine-tuning"] = ft

    # research (reference H100): weekday business hours 08:00-20:00 UTC (EU + US east),
    # ~55 GPUs off-hours, ~60 on weekends; per-day activity level varies.
    ramp = np.clip(np.minimum(hour - 7, 20 - hour), 0, 2) / 2  # 1 h shoulders
    level = rng.uniform(0.85, 1.05, N_HOURS // 24)[day]
    research = np.where(weekend, 60.0, 55.0 + 125.0 * level * ramp)
    out["research"] = research * (1 + ar1(rng, N_HOURS, 0.7, 0.07))

    # evaluation (reference L4): one short burst per night (start 01-03 UTC, 2-4 h,
    # 70-110 GPUs +-10 %) + an occasional small daytime burst (20 % of days, 10-30 GPUs, 1-2 h).
    ev = np.zeros(N_HOURS)
    n_days = N_HOURS // 24
    b_start = rng.integers(1, 4, n_days)
    b_len = rng.integers(2, 5, n_days)
    b_amp = rng.uniform(70, 110, n_days)
    d_on = rng.uniform(0, 1, n_days) < 0.2
    d_start = rng.integers(10, 17, n_days)
    d_len = rng.integers(1, 3, n_days)
    d_amp = rng.uniform(10, 30, n_days)
    for k in range(n_days):
        a = 24 * k + b_start[k]
        ev[a:a + b_len[k]] += b_amp[k] * rng.uniform(0.9, 1.1, b_len[k])
        if d_on[k]:
            a = 24 * k + d_start[k]
            ev[a:a + d_len[k]] += d_amp[k]
    out["evaluation"] = ev

    return {k: np.round(np.clip(v, 0.0, None), 2) + 0.0 for k, v in out.items()}


def write_csv(path: Path, header: list[str], rows) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def main() -> None:
    rng = np.random.default_rng(SEED)
    periods = pd.date_range(START, periods=N_HOURS, freq="h").strftime("%Y-%m-%dT%H:%M")
    d = demand(rng)
    classes = sorted(d)
    rows = ([p, c, f"{d[c][i]:.2f}"] for i, p in enumerate(periods) for c in classes)
    write_csv(HERE / "demand.csv", ["period", "workload_class", "gpus"], rows)

    write_csv(HERE / "prices.csv",
              ["gpu_type", "region", "option", "hourly_usd", "upfront_usd", "term_months",
               "max_gpus", "interruptions_per_hour", "gpus_per_instance"],
              price_rows())

    write_csv(HERE / "inventory.csv", ["gpu_type", "region", "option", "gpus", "start", "end"],
              ([g, r, o, num(n), s, e] for g, r, o, n, s, e in INVENTORY))

    print(f"{'class':<16} {'mean':>8} {'p95':>8} {'peak':>8} {'min':>8}")
    for c in classes:
        v = d[c]
        print(f"{c:<16} {v.mean():8.1f} {np.percentile(v, 95):8.1f} {v.max():8.1f} {v.min():8.1f}")


if __name__ == "__main__":
    main()
