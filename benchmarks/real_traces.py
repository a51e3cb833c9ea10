"""Time the planner on real public demand traces, priced with GCP list prices.

    python benchmarks/real_traces.py                  # HiGHS, both traces, with the yardstick
    python benchmarks/real_traces.py --solver cbc --no-yardstick
    python benchmarks/real_traces.py --cases both --write /tmp/bb/real   # real744 for benchmarks/scale.py

Reads from ``../shared/data/real`` relative to the repository root (``--data`` to change it) and
skips cleanly when that folder is absent. Nothing is copied into the repository: each case
(demand.csv, prices.csv, model.toml) is written to a temporary folder and deleted afterwards.

Cases
- ``dlrm``: ``demand_alibaba_dlrm2025_hourly.csv`` (744 h x 6 classes; Alibaba NSDI'25 DLRM
  inference, latency-sensitive, 1 GPU per instance): every class ``spot = false``, headroom 15 %,
  demand in A100-40GB-equivalents (L4 = 0.3, H100 = 2.0). The trace's dates are anonymised, so the
  periods start at 2025-01-06 00:00.
- ``helios``: ``demand_helios_earth2020_hourly.csv`` (744 h x 16 classes; SenseTime Helios
  "Earth" virtual clusters, May 2020, ``gpus_demanded`` = running + pending): training teams; the
  largest quarter of the VCs by mean demand run 32-GPU gangs with at most 30 % spot, the rest 8-GPU
  jobs with up to 80 % spot; demand in A100-40GB-equivalents (H100 = 2.5, L4 not allowed).
- ``both`` (real744, issue 37): the two in one fleet, 744 h x 22 classes x 9 pools, DLRM's hours laid on
  Helios's (its dates are anonymised); ``mip_gap`` 1e-4.

``--write DIR`` writes each case to DIR/<case>/ (model.toml, demand.csv, prices.csv) and stops: for
benchmarks/scale.py (``planner plan`` end to end, with ``--yardstick``).

Price sheet, derived at run time from ``prices_gcp.csv`` (GCP list prices, per GPU-hour): regions
us-central1, us-east4, europe-west4 (``--regions``); H100-80GB (a3-highgpu-8g, 8 GPUs per
instance), A100-40GB (a2-highgpu-8g, 8) and L4 (g2-standard-4, 1); on_demand, spot, reserved_1y
and reserved_3y (committed use discounts) where the sheet has them. GCP publishes no spot
interruption rates, so ``interruptions_per_hour`` is an assumption: H100 0.05, A100 0.03, L4 0.01
per instance-hour. No caps.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from generate import PRICE_COLUMNS, write_model_toml  # noqa: E402
import run as bench  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "real"
DEFAULT_REGIONS = ["us-central1", "us-east4", "europe-west4"]
INSTANCES = {"H100-80GB": "a3-highgpu-8g", "A100-40GB": "a2-highgpu-8g", "L4": "g2-standard-4"}
INTERRUPTIONS = {"H100-80GB": 0.05, "A100-40GB": 0.03, "L4": 0.01}  # assumption, per instance-hour
OPTIONS = {"on_demand": ("on_demand_hourly_usd_per_gpu", None),
           "spot": ("spot_hourly_usd_per_gpu", None),
           "reserved_1y": ("reserved_1y_hourly_usd_per_gpu", 12),
           "reserved_3y": ("reserved_3y_hourly_usd_per_gpu", 36)}


def price_sheet(data: Path, regions: list[str]) -> pd.DataFrame:
    src = pd.read_csv(data / "prices_gcp.csv")
    src = src[(src["location_type"] == "region") & src["region"].isin(regions)
              & (src["instance_type"] == src["gpu_type"].map(INSTANCES))]
    rows = []
    for r in src.sort_values(["gpu_type", "region"]).itertuples():
        for option, (col, term) in OPTIONS.items():
            price = getattr(r, col)
            if pd.isna(price) or price <= 0:
                continue
            row = {"gpu_type": r.gpu_type, "region": r.region, "option": option,
                   "hourly_usd": round(float(price), 6), "gpus_per_instance": r.gpus_per_instance}
            if term:
                row |= {"upfront_usd": 0.0, "term_months": term}
            if option == "spot":
                row["interruptions_per_hour"] = INTERRUPTIONS[r.gpu_type]
            rows.append(row)
    missing = sorted(set(regions) - set(src["region"]))
    if missing:
        print(f"note: no GCP prices for region(s) {missing}", file=sys.stderr)
    return pd.DataFrame(rows).reindex(columns=PRICE_COLUMNS)


def _demand_long(df: pd.DataFrame, periods: pd.Series) -> pd.DataFrame:
    return pd.DataFrame({"period": periods.dt.strftime("%Y-%m-%dT%H:%M"), "workload_class": df["workload_class"],
                         "gpus": df["gpus_demanded"].clip(lower=0).round(4)})


def case_dlrm(data: Path, out: Path, regions: list[str]) -> Path:
    df = pd.read_csv(data / "demand_alibaba_dlrm2025_hourly.csv")
    periods = pd.Timestamp("2025-01-06T00:00") + pd.to_timedelta(df["period_index"], unit="h")
    _demand_long(df, periods).to_csv(out / "demand.csv", index=False)
    classes = {c: {"description": "Alibaba DLRM inference app (latency-sensitive)", "spot": False,
                   "headroom": 0.15, "gpu_types": {"A100-40GB": 1.0, "L4": 0.3, "H100-80GB": 2.0},
                   "regions": regions}
               for c in sorted(df["workload_class"].unique())}
    write_model_toml(out / "model.toml", "real-alibaba-dlrm2025", classes,
                     {"backend": "highs", "time_limit_s": 600.0, "mip_gap": 1e-5},
                     comment="benchmarks/real_traces.py: Alibaba DLRM 2025 inference trace, GCP prices")
    return out / "model.toml"


def case_helios(data: Path, out: Path, regions: list[str]) -> Path:
    df = pd.read_csv(data / "demand_helios_earth2020_hourly.csv")
    periods = pd.to_datetime(df["timestamp"], format="%Y-%m-%d %H:%M")
    _demand_long(df, periods).to_csv(out / "demand.csv", index=False)
    mean = df.groupby("workload_class")["gpus_demanded"].mean().sort_values(ascending=False)
    large = set(mean.index[: max(1, len(mean) // 4)])
    classes = {}
    for c in sorted(mean.index):
        big = c in large
        classes[c] = {"description": "Helios Earth virtual cluster (training team)", "spot": True,
                      "max_spot_share": 0.3 if big else 0.8, "headroom": 0.0, "job_gpus": 32 if big else 8,
                      "checkpoint_minutes": 5, "restart_minutes": 10,
                      "gpu_types": {"A100-40GB": 1.0, "H100-80GB": 2.5}, "regions": regions}
    write_model_toml(out / "model.toml", "real-helios-earth2020", classes,
                     {"backend": "highs", "time_limit_s": 600.0, "mip_gap": 1e-5},
                     comment="benchmarks/real_traces.py: SenseTime Helios Earth (May 2020), GCP prices")
    return out / "model.toml"


def case_both(data: Path, out: Path, regions: list[str]) -> Path:
    """real744 (issue 37): both traces in one fleet, 744 h x 22 classes x 9 pools, DLRM on Helios's hours."""
    cases = {}
    for name, fn in (("dlrm", case_dlrm), ("helios", case_helios)):
        sub = out / name
        sub.mkdir(exist_ok=True)
        fn(data, sub, regions)
        cases[name] = pd.read_csv(sub / "demand.csv")
    hours = sorted(cases["helios"]["period"].unique())[:744]
    first = sorted(cases["dlrm"]["period"].unique())
    shift = dict(zip(first, hours))
    cases["dlrm"]["period"] = cases["dlrm"]["period"].map(shift)
    demand = pd.concat(cases.values()).dropna(subset=["period"])
    demand.to_csv(out / "demand.csv", index=False)
    classes = {}
    for name, fn in (("dlrm", case_dlrm), ("helios", case_helios)):
        sub = out / name
        sub.mkdir(exist_ok=True)
        classes |= tomllib.loads(fn(data, sub, regions).read_text())["classes"]
        shutil.rmtree(sub)
    write_model_toml(out / "model.toml", "real744-dlrm-helios", classes,
                     {"backend": "highs", "time_limit_s": 600.0, "mip_gap": 1e-4},
                     comment="benchmarks/real_traces.py: DLRM inference and Helios training in one fleet, GCP prices")
    return out / "model.toml"


DLRM, HELIOS = "demand_alibaba_dlrm2025_hourly.csv", "demand_helios_earth2020_hourly.csv"
CASES = {"dlrm": ((DLRM,), case_dlrm), "helios": ((HELIOS,), case_helios), "both": ((DLRM, HELIOS), case_both)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"default {DEFAULT_DATA}")
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    ap.add_argument("--solver", choices=["cbc", "highs"], default="highs")
    ap.add_argument("--time-limit", type=float, help="solver time limit in seconds (default: 600 from the model)")
    ap.add_argument("--regions", nargs="+", default=DEFAULT_REGIONS)
    ap.add_argument("--no-yardstick", action="store_true")
    ap.add_argument("--write", type=Path, help="write each case to DIR/<case>/ (model.toml, demand.csv, prices.csv) "
                    "for benchmarks/scale.py, and stop")
    ap.add_argument("--mem-limit-gb", type=float, default=16.0)
    ap.add_argument("--worker-timeout", type=float, default=3600.0)
    a = ap.parse_args(argv)

    needed = ["prices_gcp.csv"] + sorted({f for c in a.cases for f in CASES[c][0]})
    absent = [f for f in needed if not (a.data / f).is_file()]
    if absent:
        print(f"real_traces: skipped: {a.data} does not hold {', '.join(absent)}")
        return 0

    if a.write:
        prices = price_sheet(a.data, a.regions)
        for name in a.cases:
            folder = a.write / name
            folder.mkdir(parents=True, exist_ok=True)
            prices.to_csv(folder / "prices.csv", index=False)
            print(CASES[name][1](a.data, folder, a.regions))
        return 0

    tmp = Path(tempfile.mkdtemp(prefix="bench-real-"))
    rows, notes = [], []
    try:
        prices = price_sheet(a.data, a.regions)
        for name in a.cases:
            folder = tmp / name
            folder.mkdir()
            prices.to_csv(folder / "prices.csv", index=False)
            model = CASES[name][1](a.data, folder, a.regions)
            p = bench.run_worker("planner", model, a.solver, a.time_limit, a.mem_limit_gb, a.worker_timeout)
            msg = p.get("error") or f"total {p['total']:.1f} s, {p['status']}"
            print(f"[{name}] planner: {msg}", flush=True)
            y = None
            if not a.no_yardstick:
                y = bench.run_worker("yardstick", model, a.solver, a.time_limit, a.mem_limit_gb, a.worker_timeout)
                msg = y.get("error") or f"build {y['build']:.2f} s + solve {y['solve']:.2f} s, {y['status']}"
                print(f"[{name}] yardstick: {msg}", flush=True)
            rows.append(bench.row_for(name, a.solver, 0, p, y))
            notes += bench.report(name, p, y)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print()
    print(f"real traces from {a.data} ({time.strftime('%Y-%m-%d %H:%M')}), prices: GCP list, "
          f"regions {' '.join(a.regions)}")
    print(bench.fmt_table(rows, bench.TABLE))
    print()
    print("\n".join(notes))
    return 1 if any(r.get("agree") == "NO" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
