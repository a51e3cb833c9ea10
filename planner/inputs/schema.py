"""The data dictionary: every input column with its type, unit, default and meaning.

``io`` reads by it, ``validate`` checks by it, and ``docs/inputs.md`` is written
from it (``python -m planner.inputs.schema`` prints the tables).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """One column of an input file: name, whether it is required, and what it means."""
    name: str
    kind: str  # "str" | "float" | "datetime"
    required: bool
    unit: str
    default: str
    description: str


DEMAND = (
    Column("period", "datetime", True, "ISO 8601", "",
           "start of the period, e.g. 2027-01-04T00:00; equally spaced unless `hours` is given"),
    Column("workload_class", "str", True, "", "", "class name, defined in the model file"),
    Column("gpus", "float", True, "reference GPUs", "",
           "average concurrent GPUs demanded, in the class's reference GPUs (>= 0)"),
    Column("hours", "float", False, "h", "spacing of `period`", "length of the period"),
    Column("scenario", "str", False, "", "one scenario", "forecast scenario name"),
)

PRICES = (
    Column("gpu_type", "str", True, "", "", "GPU type, e.g. H100"),
    Column("region", "str", True, "", "", "region, e.g. us-east4"),
    Column("option", "str", True, "", "",
           "`on_demand`, `spot`, `flex_start`, `reserved_<anything>` (e.g. reserved_1y), `capacity_block` or "
           "`savings_plan_<term>`"),
    Column("hourly_usd", "float", True, "USD per GPU-hour", "",
           "price per GPU-hour (the recurring part for reserved)"),
    Column("upfront_usd", "float", False, "USD per GPU", "0", "reserved only: upfront payment"),
    Column("term_months", "float", False, "months", "from the name (_1y 12, _3y 36)",
           "reserved only: commitment term"),
    Column("max_gpus", "float", False, "GPUs", "no cap",
           "cap on GPUs held at once with this option in this pool (quota, availability)"),
    Column("interruptions_per_hour", "float", False, "per instance-hour", "",
           "spot only (required there): mean preemptions per instance-hour"),
    Column("gpus_per_instance", "float", False, "GPUs", "1",
           "GPUs per instance; reserved purchases are whole instances"),
    Column("valid_from", "datetime", False, "ISO 8601", "the start",
           "reserved: this price applies to purchases dated on or after it (a purchase keeps the price "
           "of its date); on_demand, spot, flex_start: the price of every GPU-hour from it on (a forward "
           "curve; the option's undated row prices the hours before); several rows of one option, each from "
           "its date"),
    Column("lead_time_months", "float", False, "months", "0",
           "reserved only: a purchase becomes usable this long after its date (owned hardware, capacity "
           "bought ahead); its term starts then"),
    Column("residual_usd", "float", False, "USD per GPU", "0",
           "reserved only: value left at the end of the term (resale); lowers the upfront in both accountings"),
    Column("block_start", "datetime", False, "ISO 8601 (UTC)", "",
           "capacity_block only (required there): first hour of the block's window"),
    Column("block_days", "float", False, "days", "",
           "capacity_block only (required there): the window's length, a whole number of days"),
    Column("resale_haircut", "float", False, "share", "no resale",
           "reserved only: the term may be sold at a later purchase date (at least 30 days after it starts, AWS RI "
           "Marketplace): its fees stop and the remaining upfront comes back less this share"),
    Column("guarantees_capacity", "str", False, "", "true",
           "reserved only: `false` for a commitment that discounts usage without reserving capacity (GCP "
           "committed use discounts): its GPUs count against the pool's on-demand cap (max_gpus of on_demand)"),
    Column("plan_family", "str", False, "", "the option",
           "savings_plan_* only: rows with one family form one commitment (e.g. an EC2 Instance Savings Plan's "
           "instance family and region); by default all rows of one option do"),
    Column("provider", "str", False, "", "none",
           "capacity_block only: `aws` or `gcp` turns on that provider's rules for blocks (durations, start "
           "times, instance limit); blank accepts any whole number of days"),
    Column("queue_hours_p50", "float", False, "h", "",
           "flex_start only (required there): median hours from a request to its GPUs (queued capacity, GCP DWS "
           "flex-start)"),
    Column("queue_hours_p90", "float", False, "h", "",
           "flex_start only (required there): 90th percentile of that wait (>= queue_hours_p50)"),
    Column("max_run_hours", "float", False, "h", "168",
           "flex_start only: longest a grant runs before the job must queue again (DWS flex-start: 7 days)"),
    Column("scenario", "str", False, "", "every scenario",
           "a price path: the row prices only this scenario of the model (its rows replace the sheet's rows of "
           "the same pool and option from the scenario's first valid_from on); reserved_*, on_demand, spot, "
           "flex_start"),
    Column("site", "str", False, "", "none",
           "reserved only: the site (a `[sites.<name>]` of the model file) whose power the purchased GPUs draw"),
    Column("kw_per_gpu", "float", False, "kW per GPU", "",
           "reserved only, with `site` (required there): power one GPU draws, its share of the server included"),
)

INVENTORY = (
    Column("gpu_type", "str", True, "", "", "GPU type of a pool in the price sheet"),
    Column("region", "str", True, "", "", "region of a pool in the price sheet"),
    Column("option", "str", True, "", "", "the reserved option it was bought as, e.g. reserved_1y"),
    Column("gpus", "float", True, "GPUs", "", "reserved GPUs already owned (> 0)"),
    Column("start", "datetime", True, "ISO 8601", "", "first moment the GPUs are usable"),
    Column("end", "datetime", True, "ISO 8601", "", "moment the commitment ends (exclusive)"),
)

AVAILABILITY = (
    Column("period", "datetime", True, "ISO 8601", "",
           "a moment inside a demand period; the row caps the period that contains it"),
    Column("gpu_type", "str", True, "", "", "GPU type of a pool in the price sheet"),
    Column("region", "str", True, "", "", "region of a pool in the price sheet"),
    Column("option", "str", True, "", "", "`on_demand` or `spot`: the option whose GPUs are capped"),
    Column("max_gpus", "float", True, "GPUs", "",
           "GPUs of that option obtainable at once in that period (>= 0; with the price sheet's max_gpus the "
           "lower one holds; several rows in one period: the lowest)"),
)

TABLES = {"demand": DEMAND, "prices": PRICES, "inventory": INVENTORY, "availability": AVAILABILITY}


def names(table: tuple[Column, ...]) -> list[str]:
    """The column names of a table's schema."""
    return [c.name for c in table]


def required(table: tuple[Column, ...]) -> list[str]:
    """The required column names of a table's schema."""
    return [c.name for c in table if c.required]


def markdown() -> str:
    """The schema as a Markdown table (docs/inputs.md is made from it)."""
    out = []
    for title, table in TABLES.items():
        out.append(f"### {title}\n\n| column | required | unit | default | meaning |\n|---|---|---|---|---|")
        for c in table:
            out.append(f"| `{c.name}` | {'yes' if c.required else 'no'} | {c.unit} | {c.default} | {c.description} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    print(markdown())
