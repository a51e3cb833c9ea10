"""Renting on AWS: a Capacity Block or a 1-year term, and which payment option, at 0, 5 and 10 %.

Prices: p4d.24xlarge (8 x A100-40GB) in us-east-1 from ../shared/data/real/prices_aws.csv: on-demand and
the 1-year Standard RI, No Upfront (effective hourly), per GPU. The sheet has no Partial / All Upfront
rows and no Capacity Block price, so this script ASSUMES them (edit the constants with your own quote):

- All Upfront: the whole year paid on the purchase date, ALL_UPFRONT_DISCOUNT below No Upfront's year;
- Partial Upfront: half the year's cost upfront, the rest by the hour, PARTIAL_DISCOUNT below No Upfront;
- Capacity Block: BLOCK_PREMIUM x the 1-year No Upfront rate per GPU-hour, prepaid, AWS rules
  (starts 11:30 UTC, 14 days, at most 64 instances).

Demand: one year of hours from 2027-02-01; 32 GPUs (4 instances) of steady work all year, and a
two-week pretraining burst of 256 more GPUs from 2027-03-01 11:30 (the block's window). Accounting
``full_term`` (every commitment's whole liability counts), objective ``npv`` at 0 %, 5 % and 10 %.

    python benchmarks/commitment_options_aws.py [--out DIR]

Prints one line per rate: what the plan buys, its cost and NPV, and each payment option's NPV. Then a
second case, "Savings Plan or Reserved Instances?": the steady work moves from us-east-1 to us-west-2 at
mid-year (a region migration); a 1-year Standard RI is locked to its region, a 1-year Compute Savings
Plan covers p4d in both at SP_PREMIUM x the RI's rate (ASSUMED: AWS publishes Savings Plans rates per
instance and region; replace with the rates file). Plans it three ways: RIs only, the Savings Plan only,
and both offered.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "data" / "real"
ALL_UPFRONT_DISCOUNT = 0.04  # assumed: All Upfront costs 4 % less over the year than No Upfront
PARTIAL_DISCOUNT = 0.02  # assumed: Partial Upfront (half upfront) 2 % less
BLOCK_PREMIUM = 1.25  # assumed: a Capacity Block costs 1.25 x the 1-year No Upfront rate per GPU-hour
RATES = (0.0, 0.05, 0.10)
SP_PREMIUM = 1.06  # assumed: a Compute Savings Plan's rate is 6 % above the 1-year Standard RI's (less discount)


def prices() -> pd.DataFrame:
    aws = pd.read_csv(REAL / "prices_aws.csv")
    row = aws[(aws["instance_type"] == "p4d.24xlarge") & (aws["region"] == "us-east-1")].iloc[0]
    od, r1 = float(row["on_demand_hourly_usd_per_gpu"]), float(row["reserved_1y_hourly_usd_per_gpu"])
    year = r1 * 8760
    base = dict(gpu_type="A100-40GB", region="us-east-1", gpus_per_instance=8)
    return pd.DataFrame([
        dict(base, option="on_demand", hourly_usd=od),
        dict(base, option="reserved_1y_no_upfront", hourly_usd=r1, term_months=12),
        dict(base, option="reserved_1y_partial_upfront", upfront_usd=year * (1 - PARTIAL_DISCOUNT) / 2,
             hourly_usd=year * (1 - PARTIAL_DISCOUNT) / 2 / 8760, term_months=12),
        dict(base, option="reserved_1y_all_upfront", upfront_usd=year * (1 - ALL_UPFRONT_DISCOUNT), hourly_usd=0.0,
             term_months=12),
        dict(base, option="capacity_block", hourly_usd=r1 * BLOCK_PREMIUM, block_start="2027-03-01T11:30",
             block_days=14, max_gpus=512, provider="aws"),
    ])


def demand() -> pd.DataFrame:
    periods = pd.date_range("2027-02-01T00:00", periods=8760, freq="h")
    burst = (periods >= "2027-03-01T11:30") & (periods < "2027-03-15T11:30")
    return pd.DataFrame({"period": periods.strftime("%Y-%m-%dT%H:%M"), "steady": 32.0, "pretraining": burst * 256.0})


def model(folder: Path, rate: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    prices().to_csv(folder / "prices.csv", index=False)
    demand().to_csv(folder / "demand.csv", index=False)
    text = f'''name = "aws-options-{int(rate * 100)}pct"
demand = "demand.csv"
prices = "prices.csv"
[solver]
mip_gap = 0
[commitments]
accounting = "full_term"
[finance]
discount_rate = {rate}
objective = "npv"
[classes.steady]
spot = false
[classes.pretraining]
spot = false
'''
    (folder / "model.toml").write_text(text)
    return folder / "model.toml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="keep the model files and outputs here")
    args = ap.parse_args()
    if not (REAL / "prices_aws.csv").exists():
        sys.exit(f"skipped: {REAL / 'prices_aws.csv'} is not here")
    sys.path.insert(0, str(ROOT))
    from planner import load_inputs, make_plan

    out = args.out or Path(tempfile.mkdtemp(prefix="aws-options-"))
    p = prices().set_index("option")
    print(f"p4d.24xlarge us-east-1 per GPU-hour: on-demand {p.at['on_demand', 'hourly_usd']:.4f}, 1-year No Upfront "
          f"{p.at['reserved_1y_no_upfront', 'hourly_usd']:.4f} (real); block {p.at['capacity_block', 'hourly_usd']:.4f}, "
          f"All Upfront {p.at['reserved_1y_all_upfront', 'upfront_usd']:,.0f} per GPU, Partial "
          f"{p.at['reserved_1y_partial_upfront', 'upfront_usd']:,.0f} + {p.at['reserved_1y_partial_upfront', 'hourly_usd']:.4f}/h "
          "(assumed)")
    for rate in RATES:
        plan = make_plan(load_inputs(model(out / f"rate-{int(rate * 100)}", rate)), risk=False)
        bought = plan.purchases[plan.purchases["gpus"] > 0]
        what = "; ".join(f"{r.option} {r.gpus:g} GPUs" for r in bought.itertuples())
        po = plan.payment_options
        term = po[po["option"].str.startswith("reserved")]
        alts = ", ".join(f"{r.option.replace('reserved_1y_', '')} ${r.npv_usd:,.0f}" + ("*" if r.chosen else "")
                         for r in term.itertuples())
        print(f"rate {rate:>4.0%}: {plan.status.value}; buys {what}; cost ${plan.cost['total']:,.0f}, "
              f"NPV ${plan.finance['npv_usd']:,.0f}; 1-year options' NPV: {alts}")


def migration_case(folder: Path, offer: str) -> Path:
    """Steady 32 GPUs in us-east-1 for half the year, then in us-west-2; ``offer``: "ri", "sp" or "both"."""
    folder.mkdir(parents=True, exist_ok=True)
    aws = pd.read_csv(REAL / "prices_aws.csv")
    rows = []
    for region in ("us-east-1", "us-west-2"):
        r = aws[(aws["instance_type"] == "p4d.24xlarge") & (aws["region"] == region)].iloc[0]
        od, r1 = float(r["on_demand_hourly_usd_per_gpu"]), float(r["reserved_1y_hourly_usd_per_gpu"])
        base = dict(gpu_type="A100-40GB", region=region, gpus_per_instance=8)
        rows.append(dict(base, option="on_demand", hourly_usd=od))
        if offer in ("ri", "both"):
            rows.append(dict(base, option="reserved_1y_no_upfront", hourly_usd=r1, term_months=12))
        if offer in ("sp", "both"):
            rows.append(dict(gpu_type="A100-40GB", region=region, option="savings_plan_1y",
                             hourly_usd=r1 * SP_PREMIUM, plan_family="compute"))
    pd.DataFrame(rows).to_csv(folder / "prices.csv", index=False)
    periods = pd.date_range("2027-02-01T00:00", periods=8760, freq="h")
    east = periods < periods[0] + pd.Timedelta(hours=4380)
    pd.DataFrame({"period": periods.strftime("%Y-%m-%dT%H:%M"), "east": east * 32.0, "west": (~east) * 32.0}) \
        .to_csv(folder / "demand.csv", index=False)
    (folder / "model.toml").write_text(f'''name = "aws-migration-{offer}"
demand = "demand.csv"
prices = "prices.csv"
[solver]
mip_gap = 0
[commitments]
accounting = "full_term"
[classes.east]
spot = false
regions = ["us-east-1"]
[classes.west]
spot = false
regions = ["us-west-2"]
''')
    return folder / "model.toml"


def migration(out: Path) -> None:
    from planner import load_inputs, make_plan

    print("Savings Plan or Reserved Instances? 32 GPUs in us-east-1 for 6 months, then in us-west-2 "
          f"(Savings Plan rate = {SP_PREMIUM:g} x the RI's, assumed):")
    for offer in ("ri", "sp", "both"):
        plan = make_plan(load_inputs(migration_case(out / f"migration-{offer}", offer)), risk=False)
        ri = plan.purchases[(plan.purchases["gpus"] > 0)]
        ri_text = ", ".join(f"{r.gpus:g} GPUs {r.option} {r.region}" for r in ri.itertuples()) or "no RI"
        sp = plan.spend[plan.spend["usd_per_hour"] > 0] if len(plan.spend) else plan.spend
        sp_text = ", ".join(f"${r.usd_per_hour:,.2f}/h {r.option} ({100 * r.utilisation:.1f} % used)"
                            for r in sp.itertuples()) or "no savings plan"
        print(f"  offered {offer:>4}: {ri_text}; {sp_text}; cost ${plan.cost['total']:,.0f} "
              f"(on-demand ${plan.cost['on_demand']:,.0f})")


if __name__ == "__main__":
    main()
    if (REAL / "prices_aws.csv").exists():
        sys.path.insert(0, str(ROOT))
        migration(Path(tempfile.mkdtemp(prefix="aws-migration-")))
