"""Backtest the three reserved-purchase strategies on the real demand traces in ../shared/data/real.

Each trace becomes a demand file (one class per trace class, hourly), planned against the bundled
example's price sheet (H100 / A100-80GB / L4 in three regions). Windows: plan on one week, evaluate
on the next, rolling by a week. Prints the regret per window (% of the hindsight cost) and the mean.

    python benchmarks/backtest_real.py [--solver highs] [--train-hours 168] [--test-hours 168]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "data" / "real"
TRACES = {
    # file, time column, classes to keep (None = all), GPU types allowed at speeds (reference: the first)
    "alibaba_dlrm2025": ("demand_alibaba_dlrm2025_hourly.csv", "trace_time_h", {"A100-80GB": 1.0, "L4": 0.5}),
    "helios_earth2020": ("demand_helios_earth2020_hourly.csv", "timestamp", {"A100-80GB": 1.0, "H100": 2.0}),
}


def write_inputs(name: str, folder: Path) -> Path:
    file, time_col, speeds = TRACES[name]
    raw = pd.read_csv(REAL / file)
    order = raw[time_col].rank(method="dense").astype(int) - 1
    periods = pd.Timestamp("2026-01-05") + pd.to_timedelta(order, unit="h")
    classes = {c: "c" + "".join(ch if ch.isalnum() else "-" for ch in c.split("=")[-1]) for c in raw["workload_class"].unique()}
    demand = pd.DataFrame({"period": periods.dt.strftime("%Y-%m-%dT%H:%M"),
                           "workload_class": raw["workload_class"].map(classes), "gpus": raw["gpus_demanded"].round(3)})
    demand.to_csv(folder / "demand.csv", index=False)
    lines = [f'name = "backtest-{name}"', 'demand = "demand.csv"',
             f'prices = "{(ROOT / "data" / "example" / "prices.csv").as_posix()}"',
             "[solver]", "mip_gap = 1e-4", "time_limit_s = 120"]
    for c in classes.values():
        lines += [f'[classes."{c}"]', "headroom = 0.1",
                  "gpu_types = { " + ", ".join(f'"{k}" = {v}' for k, v in speeds.items()) + " }",
                  'regions = ["us-central1", "us-east4"]']
    model = folder / "model.toml"
    model.write_text("\n".join(lines) + "\n")
    return model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solver", default="highs", choices=["cbc", "highs"])
    ap.add_argument("--train-hours", type=int, default=168)
    ap.add_argument("--test-hours", type=int, default=168)
    args = ap.parse_args()
    if not REAL.exists():
        print(f"skipped: {REAL} not found")
        return 0
    import functools

    from planner import load_inputs, make_plan
    from planner.backtest import backtest

    for name in TRACES:
        with tempfile.TemporaryDirectory() as tmp:
            inp = load_inputs(write_inputs(name, Path(tmp)))
            t0 = time.perf_counter()
            result = backtest(inp, args.train_hours, args.test_hours, functools.partial(make_plan, backend=args.solver))
        table = result.pivot(index="window", columns="strategy", values="regret_pct")[["stochastic", "point", "percentile"]]
        print(f"\n{name}: {inp.K} classes, {inp.T} hours; regret % of hindsight cost per test window "
              f"({time.perf_counter() - t0:.0f} s)")
        print(table.round(2).to_string())
        print("mean  " + "  ".join(f"{s} {table[s].mean():.2f}" for s in table.columns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
