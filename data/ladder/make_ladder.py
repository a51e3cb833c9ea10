"""Make the bundled three-year ladder example from the one-quarter example (seeded, byte-identical).

    python data/ladder/make_ladder.py

demand.csv: the example's 13 weeks of hourly demand repeated for 12 quarters (26,208 hours from
2027-01-04), each class growing quarter on quarter (chat +9 %, batch +5 %, fine-tuning +7 %, research and
evaluation +4 %), pretraining stepping from 1,024 to 1,536 H100 in 2028 and 2,048 in 2029, plus a little
seeded noise so no two quarters are the same. prices.csv: the example's price sheet, plus a 3-year H100
price cut in us-east4 from 2028-01-01 (valid_from) and an owned-hardware option for H100 in us-central1
(capex as upfront, power and operations as hourly, a 48-month life, usable 3 months after purchase, 15 %
resale value at the end); prices_rent.csv: the same without owned hardware (rent only), for a buy-vs-rent
comparison. inventory.csv: the example's (commitments expiring in 2027).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "example"
GROWTH = {"chat-inference": 1.09, "batch-inference": 1.05, "fine-tuning": 1.07, "research": 1.04,
          "evaluation": 1.04}
QUARTERS = 12


def main() -> None:
    base = pd.read_csv(EXAMPLE / "demand.csv", parse_dates=["period"])
    wide = base.pivot(index="period", columns="workload_class", values="gpus")
    rng = np.random.default_rng(2027)
    frames = []
    for q in range(QUARTERS):
        block = wide.copy()
        block.index = block.index + pd.Timedelta(hours=len(wide) * q)
        for cls, g in GROWTH.items():
            block[cls] = block[cls] * g ** q * rng.normal(1.0, 0.02, len(block)).clip(0.9, 1.1)
        year = q // 4
        block["pretraining"] = block["pretraining"] * (1.0, 1.5, 2.0)[year]
        frames.append(block)
    demand = pd.concat(frames).clip(lower=0).round(2)
    long = demand.reset_index().melt(id_vars="period", var_name="workload_class", value_name="gpus")
    long = long.sort_values(["period", "workload_class"], kind="stable")
    long["period"] = long["period"].dt.strftime("%Y-%m-%dT%H:%M")
    long.to_csv(HERE / "demand.csv", index=False)

    prices = pd.read_csv(EXAMPLE / "prices.csv")
    cut = prices[(prices.gpu_type == "H100") & (prices.region == "us-east4") & (prices.option == "reserved_3y")].copy()
    cut["hourly_usd"] = (cut["hourly_usd"] * 0.85).round(4)
    cut["upfront_usd"] = (cut["upfront_usd"] * 0.85).round(2)
    cut["valid_from"] = "2028-01-01"
    own = prices[(prices.gpu_type == "H100") & (prices.region == "us-central1") & (prices.option == "on_demand")].copy()
    # owned H100: about $30,000 per GPU installed, power/colo/operations about $0.95 per GPU-hour, 4-year life
    own["option"], own["hourly_usd"], own["upfront_usd"], own["term_months"] = "reserved_owned", 0.95, 30000.0, 48
    own["lead_time_months"], own["residual_usd"] = 3, 4500.0
    out = pd.concat([prices, cut, own], ignore_index=True)
    out.to_csv(HERE / "prices.csv", index=False)
    out[out["option"] != "reserved_owned"].to_csv(HERE / "prices_rent.csv", index=False)  # cloud only: buy vs rent
    (HERE / "inventory.csv").write_text((EXAMPLE / "inventory.csv").read_text())


if __name__ == "__main__":
    main()
