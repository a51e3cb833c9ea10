"""Write prices-h100-fall.csv: a price path of the example's H100 rates falling 25 % a year (illustrative).

``models/price-paths.toml`` plans the example on two equally likely price paths: ``hold`` (the sheet's prices
throughout) and ``fall``, this file: every H100 price of the sheet (on-demand, spot and both reserved terms, in
each region) multiplied by 0.75 ** (years since 2027-01-04), one row per quarter from 2027-03-31 (each
announced the day before the quarter it prices: a purchase on the quarter's first day knows it) to
2030-03-31. docs/commitments.md ("Prices over the term") walks through the plan. Deterministic: a re-run gives
a byte-identical file. Reads prices.csv next to it; writes prices-h100-fall.csv next to it.
"""

from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
START = pd.Timestamp("2027-01-04")
FALL_PER_YEAR = 0.25


def main() -> None:
    sheet = pd.read_csv(HERE / "prices.csv")
    h100 = sheet[sheet["gpu_type"] == "H100"]
    rows = []
    for quarter in pd.date_range("2027-04-01", "2030-04-01", freq="QS"):
        announced = quarter - pd.Timedelta(days=1)
        factor = (1 - FALL_PER_YEAR) ** ((quarter - START) / pd.Timedelta(days=365.25))
        for r in h100.itertuples(index=False):
            row = r._asdict()
            row["hourly_usd"] = round(r.hourly_usd * factor, 4)
            if pd.notna(r.upfront_usd):
                row["upfront_usd"] = round(r.upfront_usd * factor, 2)
            row["valid_from"] = announced.strftime("%Y-%m-%d")
            rows.append(row)
    out = pd.DataFrame(rows)
    out.to_csv(HERE / "prices-h100-fall.csv", index=False)


if __name__ == "__main__":
    main()
