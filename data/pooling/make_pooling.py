"""Make the bundled pooling example: four weeks, hourly, one H100 pool (us-central1).

- ``chat``: an LLM chat service stated in requests per second (diurnal, peak at 14:00 UTC, quieter
  weekends), sized to p99 latency <= 2 s at 400 ms per request on one H100 per replica;
- ``training``: 384 GPUs of training in 64-GPU gangs, all the time, that will take every idle GPU.

Run ``python data/pooling/make_pooling.py`` to rewrite demand.csv (seeded: the same file every time).
"""

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = np.random.default_rng(20270104)
    periods = pd.date_range("2027-01-04", periods=28 * 24, freq="h")
    hour = periods.hour.to_numpy()
    weekend = periods.day_of_week.to_numpy() >= 5
    shape = 0.5 + 0.5 * np.cos((hour - 14) / 24 * 2 * np.pi)  # 1 at 14:00 UTC, 0 at 02:00
    rps = 150 + 650 * shape
    rps = rps * np.where(weekend, 0.7, 1.0) * (1 + 0.04 * rng.standard_normal(len(periods)))
    rows = pd.concat([
        pd.DataFrame({"period": periods, "workload_class": "chat", "gpus": np.round(rps, 1)}),
        pd.DataFrame({"period": periods, "workload_class": "training", "gpus": 384.0}),
    ]).sort_values(["period", "workload_class"], kind="stable")
    rows["period"] = rows["period"].dt.strftime("%Y-%m-%dT%H:%M")
    rows.to_csv(HERE / "demand.csv", index=False)


if __name__ == "__main__":
    main()
