"""Quota policies replayed on real teams: the SenseTime Helios "Earth" cluster, May 2020 (16 virtual
clusters sharing 856 GPUs, hourly; ../shared/data/real/demand_helios_earth2020_hourly.csv).

Each virtual cluster (VC) is a team; its demand is ``gpus_demanded`` (running + queued). The cluster's
GPUs are the sum of the VCs' quotas (``vc_capacity_gpus``). Prints, per policy, the pool's utilisation,
Jain's index, waiting GPU-hours and hours below guarantee, beside Helios's own static VC quotas (no
borrowing), and the gaming table for the VC that waits most.

    python benchmarks/quotas_helios.py [--json]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "real" / "demand_helios_earth2020_hourly.csv"


def helios_model(folder: Path) -> tuple[Path, int, pd.Series]:
    """Write a model of the Helios VCs into ``folder``; returns (model path, cluster GPUs, VC quotas)."""
    d = pd.read_csv(DATA)
    d["vc"] = d["workload_class"].str.replace("vc=", "", regex=False)
    wide = d.pivot_table(index="timestamp", columns="vc", values="gpus_demanded", aggfunc="sum").sort_index()
    wide.index = pd.to_datetime(wide.index).strftime("%Y-%m-%dT%H:%M")
    wide.index.name = "period"
    wide.round(3).to_csv(folder / "demand.csv")
    (folder / "prices.csv").write_text("gpu_type,region,option,hourly_usd\nV100,earth,on_demand,2.48\n")
    quotas = d.groupby("vc")["vc_capacity_gpus"].max()
    lines = ['name = "helios-earth-2020-05"', 'demand = "demand.csv"', 'prices = "prices.csv"']
    lines += [f'[classes."{vc}"]\nteam = "{vc}"' for vc in wide.columns]
    (folder / "model.toml").write_text("\n".join(lines) + "\n")
    return folder / "model.toml", int(quotas.sum()), quotas


def run() -> dict:
    from planner.quotas.replay import measure
    from planner.api import quota_result

    with tempfile.TemporaryDirectory() as tmp:
        model, capacity, vc_quotas = helios_model(Path(tmp))
        t0 = time.perf_counter()
        r = quota_result(model, total_gpus=capacity)
        seconds = time.perf_counter() - t0
    d = r.data
    dem = d.demand[:, 0].T
    static = np.array([vc_quotas[t] for t in d.teams], float)
    real = measure(d.teams, dem, np.minimum(dem, static[None, :]), d.hours, capacity, static)
    pool = r.pool.to_dict("records")
    pool.append({"policy": "helios_static_quotas", "utilisation": real.utilisation, "jain_index": real.jain,
                 "admitted_gpu_hours": float(real.teams["admitted_gpu_hours"].sum()),
                 "waiting_gpu_hours": float(real.teams["waiting_gpu_hours"].sum()),
                 "preempted_gpu_hours": 0.0, "hours_below_guarantee": float(real.teams["hours_below_guarantee"].sum())})
    return {"teams": len(d.teams), "gpus": capacity, "hours": float(d.hours.sum()), "seconds": seconds,
            "demanded_gpu_hours": float((dem * d.hours[:, None]).sum()), "pool": pool, "gamer": r.gamer,
            "gaming": r.gaming[["behaviour", "policy", "gamer_gain_gpu_hours", "others_loss_gpu_hours",
                                "gamer_idle_held_gpu_hours"]].to_dict("records")}


def main() -> None:
    if not DATA.exists():
        print(f"skipped: {DATA} not present")
        return
    out = run()
    if "--json" in sys.argv:
        print(json.dumps(out, indent=2))
        return
    print(f"Helios Earth, May 2020: {out['teams']} VCs share {out['gpus']} GPUs for {out['hours']:.0f} h; "
          f"{out['demanded_gpu_hours']:,.0f} GPU-hours demanded ({out['seconds']:.1f} s)")
    print(f"  {'policy':<22}{'utilisation':>12}{'Jain':>8}{'waiting GPU-h':>15}{'team-h below guarantee':>24}")
    for p in out["pool"]:
        print(f"  {p['policy']:<22}{p['utilisation']:>12.1%}{p['jain_index']:>8.3f}{p['waiting_gpu_hours']:>15,.0f}"
              f"{p['hours_below_guarantee']:>24,.0f}")
    print(f"  gaming by {out['gamer']} (GPU-hours):")
    for g in out["gaming"]:
        print(f"    {g['behaviour']:<9}{g['policy']:<16} gain {g['gamer_gain_gpu_hours']:>9,.0f}"
              f"  others lose {g['others_loss_gpu_hours']:>9,.0f}  held idle {g['gamer_idle_held_gpu_hours']:>9,.0f}")


if __name__ == "__main__":
    main()
