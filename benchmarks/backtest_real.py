"""Rolling backtest of the five strategies on the real demand traces in ../shared/data/real, GCP prices.

Each trace becomes a demand file (one class per trace class, hourly, from 2026-01-05) and a model
file priced from ../shared/data/real/prices_gcp.csv (per-GPU prices of a2-highgpu-8g / A100-40GB,
a3-highgpu-8g / H100-80GB and g2-standard-4 / L4 in us-central1 and us-east4: on-demand, spot and the
1- and 3-year committed use discounts). Helios (research training) may use spot for up to half of
its demand on A100 or H100 (H100 at twice the speed); the Alibaba DLRM inference fleet may not use
spot and runs on A100 or L4 (L4 at half the speed), with 10 % headroom. "both" plans them together.

Windows: one week of history before the first cut-off, then a cut-off every day; each day's
purchases are kept as dated inventory for the rest of the trace. Prints one table per trace and
writes it as Markdown (``--markdown FILE``), the table docs/scenarios.md shows.

    python benchmarks/backtest_real.py [--jobs 2] [--forecaster latest] [--markdown table.md]
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
MACHINES = {"A100-40GB": "a2-highgpu-8g", "H100-80GB": "a3-highgpu-8g", "L4": "g2-standard-4"}
REGIONS = ["us-central1", "us-east4"]
TRACES = {
    # file, time column, class prefix, class settings
    "helios": ("demand_helios_earth2020_hourly.csv", "timestamp", "h",
               {"headroom": 0.0, "gpu_types": {"A100-40GB": 1.0, "H100-80GB": 2.0}, "spot": True,
                "max_spot_share": 0.5}),
    "dlrm": ("demand_alibaba_dlrm2025_hourly.csv", "trace_time_h", "d",
             {"headroom": 0.1, "gpu_types": {"A100-40GB": 1.0, "L4": 0.5}}),
}


def write_prices(folder: Path) -> Path:
    """Our price sheet from the GCP rows: per GPU-hour, instances of the machine's GPU count."""
    gcp = pd.read_csv(REAL / "prices_gcp.csv")
    rows = []
    for gpu, machine in MACHINES.items():
        for region in REGIONS:
            r = gcp[(gcp.instance_type == machine) & (gcp.region == region)].iloc[0]
            m = int(r.gpus_per_instance)
            base = {"gpu_type": gpu, "region": region, "gpus_per_instance": m}
            rows.append({**base, "option": "on_demand", "hourly_usd": r.on_demand_hourly_usd_per_gpu})
            rows.append({**base, "option": "spot", "hourly_usd": r.spot_hourly_usd_per_gpu,
                         "interruptions_per_hour": 0.05})
            for term in (1, 3):
                rows.append({**base, "option": f"reserved_{term}y", "term_months": 12 * term, "upfront_usd": 0.0,
                             "hourly_usd": r[f"reserved_{term}y_hourly_usd_per_gpu"]})
    path = folder / "prices.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def trace_demand(name: str) -> tuple[pd.DataFrame, dict]:
    file, time_col, prefix, settings = TRACES[name]
    raw = pd.read_csv(REAL / file)
    order = raw[time_col].rank(method="dense").astype(int) - 1
    periods = pd.Timestamp("2026-01-05") + pd.to_timedelta(order, unit="h")
    names = {c: prefix + "-" + "".join(ch if ch.isalnum() else "-" for ch in c.split("=")[-1])
             for c in raw["workload_class"].unique()}
    demand = pd.DataFrame({"period": periods.dt.strftime("%Y-%m-%dT%H:%M"),
                           "workload_class": raw["workload_class"].map(names), "gpus": raw["gpus_demanded"].round(3)})
    return demand, {c: settings for c in names.values()}


def write_model(name: str, folder: Path) -> Path:
    parts = ["helios", "dlrm"] if name == "both" else [name]
    frames, classes = zip(*(trace_demand(p) for p in parts))
    pd.concat(frames).to_csv(folder / "demand.csv", index=False)
    write_prices(folder)
    lines = [f'name = "backtest-{name}"', 'demand = "demand.csv"', 'prices = "prices.csv"',
             "[solver]", 'backend = "highs"', "mip_gap = 1e-6", "time_limit_s = 600"]
    for c, t in {k: v for part in classes for k, v in part.items()}.items():
        lines += [f'[classes."{c}"]', f"headroom = {t['headroom']}",
                  "gpu_types = { " + ", ".join(f'"{k}" = {v}' for k, v in t["gpu_types"].items()) + " }",
                  "regions = [" + ", ".join(f'"{r}"' for r in REGIONS) + "]"]
        if t.get("spot"):
            lines += ["spot = true", f"max_spot_share = {t['max_spot_share']}"]
    model = folder / "model.toml"
    model.write_text("\n".join(lines) + "\n")
    return model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="helios,dlrm,both")
    ap.add_argument("--train-hours", type=int, default=168)
    ap.add_argument("--test-hours", type=int, default=24)
    ap.add_argument("--horizon-hours", type=int, default=None)
    ap.add_argument("--forecaster", default="weekly")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--markdown", type=Path, default=None)
    args = ap.parse_args()
    if not REAL.exists():
        print(f"skipped: {REAL} not found")
        return 0
    from planner import load_inputs
    from planner.backtest.run import backtest_hours
    from planner.core.executors import LocalExecutor

    md = []
    for name in args.traces.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            inp = load_inputs(write_model(name, Path(tmp)))
            t0 = time.perf_counter()
            result = backtest_hours(inp, args.train_hours, args.test_hours, horizon_hours=args.horizon_hours,
                                    forecaster=args.forecaster, executor=LocalExecutor(args.jobs))
            seconds = time.perf_counter() - t0
        table = result.strategies.set_index("strategy")[
            ["total_cost_usd", "mean_regret_pct", "total_regret_pct", "shortfall_gpu_hours", "slo_hours_missed",
             "gpus_bought"]]
        head = (f"{name}: {inp.K} classes, {result.windows['window'].nunique()} daily windows "
                f"({args.train_hours} h history first), hindsight optimum ${result.hindsight_total_usd:,.0f} "
                f"({seconds:.0f} s, {args.jobs} workers)")
        print("\n" + head)
        print(table.round(2).to_string())
        for note in result.notes:
            print("note:", note)
        md += [f"**{head}**", "", "| strategy | cost (USD) | mean regret % | total regret % | shortfall GPU-h "
               "| SLO-hours missed | GPUs bought |", "|---|---:|---:|---:|---:|---:|---:|"]
        md += [f"| {s} | {r.total_cost_usd:,.0f} | {r.mean_regret_pct:.2f} | {r.total_regret_pct:.2f} | "
               f"{r.shortfall_gpu_hours:,.1f} | {r.slo_hours_missed:,.0f} | {r.gpus_bought:,.0f} |"
               for s, r in table.iterrows()]
        md.append("")
    if args.markdown:
        args.markdown.write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
