"""Every strategy against the baselines users really run, on real traces and multi-year synthetic ones.

Cases (one per run: ``--case NAME``; the machine has 2 shared cores, so run them one at a time):

- ``openb_aws``: Alibaba OpenB 2023 (825 h), AWS us-east-1 list prices (p4d.24xlarge A100-40GB x8,
  g6.xlarge L4 x1; on-demand, the spot estimate, the 1-year No Upfront RI: AWS publishes no 3-year price in the
  sheet). ``qos=LS`` and ``qos=Guaranteed`` are inference: latency-bound (no spot), L4 or A100 (at 2x), 10 %
  headroom; ``qos=Burstable`` and ``qos=BE`` are batch training: A100 only, up to half on spot. Demand x 6 (the
  trace is a sample of a 6,212-GPU cluster: LS is about 150 GPUs).
- ``philly_azure``: Microsoft Philly 2017, first 744 h (31 days), one class of training (nodes active, one GPU
  per node), Azure eastus NC24ads_A100_v4 (A100-80GB x1): on-demand and spot from the sheet; the sheet has no
  reservation prices, so 1-year = 63 % and 3-year = 40 % of on-demand (Azure's published A100 reservation
  savings of about 37 % and 60 %: an assumption, stated). Up to half on spot.
- ``genai_philly_aws``: GenAI Stable Diffusion (3 classes, 570 h, x 100: inference, latency-bound, L4 only)
  beside the first 570 h of Philly (training, A100, up to half on spot), AWS us-east-1 as above.
- ``genai_philly_aws_caps``: the same with on-demand caps (A100 60 % of Philly's peak, L4 110 % of the
  inference peak) and hourly spot availability: the A100 spot cap each hour is the Philly peak x the share of
  instances available in the measured AWS spot trace ``availability/1-node/aws-02-15-2023/us-east-1a_v100_1``
  (the L4 one from ``us-east-1c``), written as the model's ``availability`` file: the realised availability of
  the whole-period evaluation (plans at a cut-off see only the sheet's caps).
- ``synthetic_<scenario>``: 6.25 years of hourly demand from :mod:`traces` (``--seed``), averaged to 6-hour
  periods (GPU-hours kept; peaks inside 6 hours smoothed), GCP us-central1 list prices with 1- and 3-year
  committed use discounts (a2-highgpu-8g A100 x8, g2-standard-4 L4 x1). Inference as above; training on A100
  up to half on spot. History 12 weeks, a cut-off every 4 weeks, purchases only in the first 3 years
  (``--decide-hours``) and the span running 3 years past the last of them, so every term lies inside the
  span; the planner's horizon is 3 years. (The hindsight knows purchases stop after 3 years and times its
  last 3-year terms for that; the strategies do not. A longer decision period dilutes that edge.)

Real cases: 168 h history, a cut-off every day, horizon 168 h. Prints the Markdown table of
:func:`planner.backtest.report.markdown` with the command, the commit and ``uptime``, and appends it to
``--markdown FILE``.

    python benchmarks/backtest_baselines.py --case openb_aws [--forecaster weekly] [--strategies ...] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REAL = ROOT.parent / "shared" / "data" / "real"
sys.path.insert(0, str(HERE))

AWS = {"A100-40GB": "p4d.24xlarge", "L4": "g6.xlarge"}
GCP = {"A100-40GB": "a2-highgpu-8g", "L4": "g2-standard-4"}
AZURE_RESERVED = {"reserved_1y": (12, 0.63), "reserved_3y": (36, 0.40)}  # assumption: share of on-demand
START = pd.Timestamp("2027-01-04")


def _price_rows(sheet: pd.DataFrame, region: str, machines: dict, interruptions: float = 0.05,
                reserved: dict | None = None) -> list[dict]:
    rows = []
    for gpu, machine in machines.items():
        r = sheet[(sheet["instance_type"] == machine) & (sheet["region"] == region)].iloc[0]
        base = {"gpu_type": gpu, "region": region, "gpus_per_instance": int(r["gpus_per_instance"])}
        rows.append({**base, "option": "on_demand", "hourly_usd": r["on_demand_hourly_usd_per_gpu"]})
        if pd.notna(r["spot_hourly_usd_per_gpu"]):
            rows.append({**base, "option": "spot", "hourly_usd": r["spot_hourly_usd_per_gpu"],
                         "interruptions_per_hour": interruptions})
        for option, months in (("reserved_1y", 12), ("reserved_3y", 36)):
            if reserved is not None:
                months, share = reserved[option]
                value = r["on_demand_hourly_usd_per_gpu"] * share
            else:
                value = r.get(f"{option}_hourly_usd_per_gpu")
            if pd.notna(value):
                rows.append({**base, "option": option, "hourly_usd": float(value), "term_months": months,
                             "upfront_usd": 0.0})
    return rows


def _hourly(frame: pd.DataFrame, time_col: str, value: str, scale: float = 1.0) -> pd.DataFrame:
    """A real trace as ``position, workload_class, gpus`` (hours counted from the trace's first hour)."""
    order = frame[time_col].rank(method="dense").astype(int) - 1
    return pd.DataFrame({"position": order, "workload_class": frame["workload_class"],
                         "gpus": frame[value].astype(float) * scale})


def _openb() -> pd.DataFrame:
    d = _hourly(pd.read_csv(REAL / "demand_alibaba_openb2023_hourly.csv"), "trace_time_h", "gpus_demanded", 6.0)
    return d.assign(workload_class=d["workload_class"].str.replace("qos=", "", regex=False).str.lower())


def _philly(hours: int) -> pd.DataFrame:
    d = _hourly(pd.read_csv(REAL / "demand_philly2017_nodes_hourly.csv"), "timestamp", "gpu_nodes_active")
    return d[d["position"] < hours].assign(workload_class="philly")


def _genai() -> pd.DataFrame:
    d = _hourly(pd.read_csv(REAL / "demand_alibaba_genai_sd_hourly.csv"), "timestamp", "gpus_busy", 100.0)
    return d.assign(workload_class=d["workload_class"].str.replace("predict_type=", "sd-", regex=False).str.lower())


INFERENCE = {"headroom": 0.1, "gpu_types": {"L4": 1.0, "A100-40GB": 2.0}}
TRAINING = {"gpu_types": {"A100-40GB": 1.0}, "spot": True, "max_spot_share": 0.5}


def _availability(folder: Path, demand: pd.DataFrame, peaks: dict, traces: dict) -> str:
    """availability.csv: per hour and pool, the spot cap = peak x the trace's share of instances available."""
    spot = pd.read_csv(REAL / "spot_availability_traces_hourly.csv")
    periods = np.sort(demand["period"].unique())
    rows = []
    for (gpu, region), trace in traces.items():
        share = spot.loc[spot["trace_id"] == trace, "mean_instances_available"].to_numpy(float)
        share = share[np.arange(len(periods)) % len(share)]  # the trace repeats past its end
        rows.append(pd.DataFrame({"period": periods, "gpu_type": gpu, "region": region, "option": "spot",
                                  "max_gpus": np.floor(peaks[gpu] * share)}))
    pd.concat(rows).to_csv(folder / "availability.csv", index=False)
    return "availability.csv"


def write_case(name: str, folder: Path, seed: int = 0) -> tuple[Path, dict]:
    """model.toml, demand.csv and prices.csv for case ``name``; the backtest's settings (hours)."""
    classes: dict[str, dict] = {}
    extra = []
    if name.startswith("synthetic_"):
        import traces

        hourly, source = traces.generate(name.removeprefix("synthetic_"), years=6.25, seed=seed)
        six = hourly.assign(period=hourly["period"].dt.floor("6h")).groupby(
            ["period", "workload_class"], as_index=False)["gpus"].mean()
        demand = six.assign(hours=6.0)
        prices = _price_rows(pd.read_csv(REAL / "prices_gcp.csv"), "us-central1", GCP)
        classes = {"inference": INFERENCE, "training": TRAINING}
        settings = {"train_hours": 12 * 168, "test_hours": 4 * 168, "horizon_hours": 3 * 8760,
                    "decide_hours": 3 * 8760, "shapes": source}
    else:
        if name == "openb_aws":
            d = _openb()
            classes = {c: (INFERENCE if c in ("ls", "guaranteed") else TRAINING) for c in d["workload_class"].unique()}
        elif name == "philly_azure":
            d = _philly(744)
            classes = {"philly": {"gpu_types": {"A100-80GB": 1.0}, "spot": True, "max_spot_share": 0.5}}
        elif name.startswith("genai_philly_aws"):
            g = _genai()
            d = pd.concat([g, _philly(int(g["position"].max()) + 1)])
            classes = {c: {"headroom": 0.1, "gpu_types": {"L4": 1.0}} for c in g["workload_class"].unique()}
            classes["philly"] = TRAINING
        else:
            raise SystemExit(f"unknown case {name!r}")
        demand = d.assign(period=START + pd.to_timedelta(d["position"], unit="h"))[["period", "workload_class", "gpus"]]
        if name == "philly_azure":
            prices = _price_rows(pd.read_csv(REAL / "prices_azure.csv"), "eastus",
                                 {"A100-80GB": "Standard_NC24ads_A100_v4"}, reserved=AZURE_RESERVED)
        else:
            prices = _price_rows(pd.read_csv(REAL / "prices_aws.csv"), "us-east-1", AWS)
        settings = {"train_hours": 168, "test_hours": 24, "horizon_hours": 168}
        if name == "genai_philly_aws_caps":
            inference_peak = float(d[d["workload_class"] != "philly"].groupby("position")["gpus"].sum().max())
            philly_peak = float(d.loc[d["workload_class"] == "philly", "gpus"].max())
            for row in prices:
                if row["option"] == "on_demand":
                    row["max_gpus"] = np.floor(0.6 * philly_peak if row["gpu_type"] == "A100-40GB"
                                               else 1.1 * (1 + 0.1) * inference_peak)
            avail = demand.assign(period=demand["period"].dt.strftime("%Y-%m-%dT%H:%M"))
            extra.append('availability = "' + _availability(folder, avail, {
                "A100-40GB": philly_peak, "L4": inference_peak * 1.1},
                {("A100-40GB", "us-east-1"): "availability/1-node/aws-02-15-2023/us-east-1a_v100_1",
                 ("L4", "us-east-1"): "availability/1-node/aws-02-15-2023/us-east-1c_v100_1"}) + '"')
    demand = demand.assign(period=pd.to_datetime(demand["period"]).dt.strftime("%Y-%m-%dT%H:%M"),
                           gpus=demand["gpus"].round(3))
    demand.to_csv(folder / "demand.csv", index=False)
    pd.DataFrame(prices).to_csv(folder / "prices.csv", index=False)
    lines = [f'name = "bt-{name}"', 'demand = "demand.csv"', 'prices = "prices.csv"', *extra,
             "[solver]", 'backend = "highs"', "mip_gap = 1e-6", "time_limit_s = 600"]
    for c, t in classes.items():
        lines += [f'[classes."{c}"]', f"headroom = {t.get('headroom', 0.0)}",
                  "gpu_types = { " + ", ".join(f'"{k}" = {v}' for k, v in t["gpu_types"].items()) + " }"]
        if t.get("spot"):
            lines += ["spot = true", f"max_spot_share = {t['max_spot_share']}"]
    (folder / "model.toml").write_text("\n".join(lines) + "\n")
    return folder / "model.toml", settings


def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", required=True)
    ap.add_argument("--forecaster", default="weekly")
    ap.add_argument("--strategies", default=None)
    ap.add_argument("--seed", type=int, default=0, help="the synthetic trace's")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--horizon-hours", type=float, default=None,
                    help="the planner's horizon at each cut-off (default: the case's; 2184 = the quarter a "
                         "quarterly planning run sees, where terms outlive it and `default` judges them whole)")
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write backtest.json here")
    args = ap.parse_args()
    if not REAL.exists():
        print(f"skipped: {REAL} not found")
        return 0
    from planner import load_inputs
    from planner.backtest.run import STRATEGIES, backtest_hours
    from planner.backtest.report import markdown
    from planner.core.executors import LocalExecutor

    strategies = tuple(args.strategies.split(",")) if args.strategies else STRATEGIES
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        model, settings = write_case(args.case, Path(tmp), args.seed)
        inp = load_inputs(model)
        shapes = settings.pop("shapes", None)
        if args.horizon_hours is not None:
            settings["horizon_hours"] = args.horizon_hours
        t0 = time.perf_counter()
        result = backtest_hours(inp, settings.pop("train_hours"), settings.pop("test_hours"),
                                horizon_hours=settings.pop("horizon_hours"), forecaster=args.forecaster,
                                strategies=strategies, executor=LocalExecutor(args.jobs), **settings)
        seconds = time.perf_counter() - t0
    load_after = os.getloadavg()
    command = "python benchmarks/backtest_baselines.py " + " ".join(sys.argv[1:])
    windows = result.windows["window"].nunique()
    head = (f"**{args.case}** ({inp.K} classes, {windows} windows, forecaster {args.forecaster}"
            + (f", seed {args.seed}, shapes from {shapes}" if shapes else "")
            + f"): hindsight ${result.hindsight_total_usd:,.0f} in span, "
            f"${result.hindsight['full_term']['total_usd']:,.0f} full term. `{command}` at commit {_commit()}, "
            f"{seconds:.0f} s, {args.jobs} workers, load average {load_before[0]:.2f} before, "
            f"{load_after[0]:.2f} after")
    text = head + "\n\n" + markdown(result) + "\n" + "\n".join(f"- note: {n}" for n in result.notes) + "\n"
    print(text)
    if args.markdown:
        with args.markdown.open("a", encoding="utf-8") as f:
            f.write(text + "\n")
    if args.json:
        args.json.write_text(json.dumps(result.to_dict(), indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
