"""Write history.csv: the 26 weeks of daily demand before the example's quarter (synthetic, illustrative).

The history ``planner plan models/example.toml --history data/example/history.csv`` forecasts the rest of each
3-year term from (docs/commitments.md, "Whole-term demand"). Per class, the daily mean GPUs end at the level
of the quarter's first week and grow towards it at a stated rate a year (chat +35 %, batch +20 %,
fine-tuning +10 %, the rest flat), with 6 % day-to-day noise; pretraining runs at 1,024 GPUs in runs of
several weeks with gaps, as in the quarter. Deterministic (``numpy.random.default_rng(2026)``): a re-run gives
byte-identical files. Reads demand.csv next to it; writes history.csv next to it.
"""

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
GROWTH = {"chat-inference": 0.35, "batch-inference": 0.20, "fine-tuning": 0.10}


def main() -> None:
    rng = np.random.default_rng(2026)
    demand = pd.read_csv(HERE / "demand.csv", parse_dates=["period"])
    first_week = demand[demand["period"] < demand["period"].min() + pd.Timedelta(days=7)]
    level = first_week.groupby("workload_class")["gpus"].mean()
    days = pd.date_range("2026-07-06", "2027-01-03", freq="D")
    years = ((days - days[-1]) / pd.Timedelta(days=365.25)).to_numpy()
    rows = []
    for cls in sorted(level.index):
        if cls == "pretraining":
            on = (np.arange(len(days)) // 7) % 6 < 4  # four weeks on, two off
            gpus = np.where(on, 1024.0, 0.0)
        else:
            trend = level[cls] * np.exp(GROWTH.get(cls, 0.0) * years)
            gpus = trend * (1 + 0.06 * rng.standard_normal(len(days)))
        rows.append(pd.DataFrame({"period": days.strftime("%Y-%m-%dT%H:%M"), "workload_class": cls,
                                  "gpus": np.round(np.maximum(gpus, 0.0), 2), "hours": 24.0}))
    out = pd.concat(rows).sort_values(["period", "workload_class"], kind="stable")
    out.to_csv(HERE / "history.csv", index=False)


if __name__ == "__main__":
    main()
