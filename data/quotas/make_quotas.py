"""Make the bundled eight-teams example: four weeks, hourly, GPU demand of eight research teams sharing
1,024 H100 GPUs. Seeded: ``python data/quotas/make_quotas.py`` rewrites demand.csv identically.

Patterns (mean GPUs): a pretraining team that wants 512 most of the time (pauses for evaluation), an
inference team with a diurnal load it must always get, a vision team with bursty multi-day runs, an RL
team with a steady base and bursts, a speech team in office hours, two research groups of many small
jobs, and a nightly evaluation team.
"""

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = np.random.default_rng(20270201)
    periods = pd.date_range("2027-02-01", periods=28 * 24, freq="h")
    T = len(periods)
    hour = periods.hour.to_numpy()
    weekday = periods.day_of_week.to_numpy() < 5
    day = np.arange(T) // 24

    def bursts(rate_per_day, size, length_h):
        out = np.zeros(T)
        for start in np.flatnonzero(rng.random(T) < rate_per_day / 24):
            out[start:start + int(rng.integers(length_h // 2, length_h * 2))] += size
        return out

    demand = {
        "llm-pretrain": np.where((day % 9) < 7, 512.0, 64.0),
        "inference": 96 + 64 * (0.5 + 0.5 * np.cos((hour - 15) / 24 * 2 * np.pi)),
        "vision": np.clip(bursts(0.4, 128, 48), 0, 384),
        "rl": 48 + np.clip(bursts(0.8, 64, 12), 0, 192),
        "speech": np.where(weekday & (hour >= 8) & (hour < 19), 120.0, 16.0),
        "research-a": np.clip(rng.poisson(40, T) + bursts(2, 16, 6), 0, None).astype(float),
        "research-b": np.clip(rng.poisson(24, T) + bursts(1, 32, 8), 0, None).astype(float),
        "eval": np.where((hour >= 1) & (hour < 6), 160.0, 8.0),
    }
    rows = pd.DataFrame({"period": periods.strftime("%Y-%m-%dT%H:%M")})
    for name, series in demand.items():
        rows[name] = np.round(series, 1)
    rows.to_csv(HERE / "demand.csv", index=False)


if __name__ == "__main__":
    main()
