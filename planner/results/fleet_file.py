"""fleet.csv read back beside its plan.json: ``planner report --html`` and ``planner export focus --granularity
period`` read it through here, typed and checked against the plan.

fleet.csv (``planner plan`` writes it, :func:`planner.pipeline.run.period_csv`) holds per scenario, period and
pool the GPUs reserved owned and used, on-demand (``on_demand_covered``: of which a savings plan paid), spot and
the other rented kinds. A file edited or damaged since is refused with exit 2 naming the row, the column and the
value: a NUL byte in a cell (pandas 2 would end the cell there), a period that is no date, a count that is no
finite number >= 0, a pool or scenario this plan.json does not have. Read silently, each of these moved or
dropped GPU-hours: a region cut short was a pool of its own, priced at nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.csvscan import refuse_nul_text
from planner.core.errors import InputError, Problem
from planner.inputs import supply

COLUMNS = ("period", "hours", "gpu_type", "region", "reserved_owned", "reserved_used", "on_demand", "spot")
COUNTS = ("hours", "reserved_owned", "reserved_used", *supply.RENTED, "on_demand_covered", "reserved_spares")
EXPECTED = "the fleet.csv `planner plan` wrote beside plan.json"


def read_fleet_file(path: str | Path, plan: dict | None = None) -> pd.DataFrame:
    """fleet.csv at ``path``, typed (``period`` a timestamp, every count a float) and, when ``plan`` (the plan.json
    beside it, as a dict) is given, checked against it (:func:`not_this_plans`): InputError naming file, row,
    column and value of the first 20 bad cells."""
    path = Path(path)
    file = str(path)
    try:
        if b"\x00" in path.read_bytes():  # (rare: the cells are then found by the CSV reader)
            with open(path, encoding="utf-8", errors="replace", newline="") as text:
                refuse_nul_text(text, file)
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise InputError(Problem(file, f"cannot be read as CSV ({exc})", expected=EXPECTED)) from None
    missing = [c for c in COLUMNS if c not in raw]
    if missing:
        raise InputError(Problem(file, "missing column(s) " + ", ".join(missing), expected=EXPECTED))
    rows = np.arange(2, len(raw) + 2)
    problems: list[Problem] = []
    out = raw.copy()
    zoned = raw["period"].str.strip().str.contains(r"(?:Z|[+-]\d\d:?\d\d)$", regex=True).to_numpy()
    period = pd.to_datetime(raw["period"].where(~zoned, ""), errors="coerce", format="ISO8601")
    _collect(problems, file, rows, raw["period"], period.isna().to_numpy(), "period",
             "not a date and time of the plan's clock", "an ISO 8601 period start without a time zone, as "
             "`planner plan` writes it, e.g. 2027-01-04T00:00")
    out["period"] = period
    for col in (c for c in COUNTS if c in raw):
        x = pd.to_numeric(raw[col].str.strip(), errors="coerce").astype(float)
        bad = ~np.isfinite(x.to_numpy()) | (x.to_numpy() < 0)
        _collect(problems, file, rows, raw[col], bad, col, "not a number of GPUs (or hours) >= 0",
                 "a finite number >= 0")
        out[col] = x
    if problems:
        raise InputError(problems[:20])
    if plan is not None:
        problems = not_this_plans(out, plan, file)
        if problems:
            raise InputError(problems)
    return out


def not_this_plans(fleet: pd.DataFrame, plan: dict, file: str = "fleet.csv") -> list[Problem]:
    """Why ``fleet`` (:func:`read_fleet_file`, unchecked against a plan) is not ``plan``'s (plan.json as a dict):
    rows naming a pool or a scenario it does not have, a scenario, period and pool given twice, a period before its
    start or whose hours differ between rows, or periods and hours other than its ``horizon``; at most 20
    problems, none when the fleet is the plan's."""
    problems: list[Problem] = []
    rows = np.arange(2, len(fleet) + 2)
    pools = {(r.get("gpu_type"), r.get("region")) for r in plan.get("monthly_usage") or []}
    if pools:
        known = pd.Series(list(zip(fleet["gpu_type"], fleet["region"])), index=fleet.index).isin(pools).to_numpy()
        _collect(problems, file, rows, fleet["gpu_type"] + "/" + fleet["region"], ~known, "gpu_type, region",
                 "a pool this plan.json does not have", "a pool of plan.json monthly_usage")
    names = {s.get("name") for s in plan.get("scenarios") or []}
    if names and "scenario" in fleet:
        _collect(problems, file, rows, fleet["scenario"], ~fleet["scenario"].isin(names).to_numpy(), "scenario",
                 "a scenario this plan.json does not have", "one of plan.json scenarios: " + ", ".join(sorted(names)))
    keys = [c for c in ("scenario", "period", "gpu_type", "region") if c in fleet]
    twice = fleet.duplicated(keys, keep="first").to_numpy()
    _collect(problems, file, rows, fleet["period"].astype(str), twice, "period",
             "a period and pool given twice (the row before it has them)", "one row per scenario, period and pool")
    hz = plan.get("horizon") if isinstance(plan.get("horizon"), dict) else {}
    hours = fleet.groupby("period")["hours"]
    if hz.get("start") is not None and len(fleet) and not twice.any():
        start = pd.Timestamp(hz["start"])
        moved = fleet["period"].lt(start).to_numpy() | (hours.transform("nunique") > 1).to_numpy()
        _collect(problems, file, rows, fleet["period"].astype(str), moved, "period, hours",
                 "a period before the plan's start, or one whose hours differ between its rows",
                 f"the plan's periods from {hz['start']}, each with one length")
        count, total = hz.get("periods"), hz.get("hours")
        other = ((count is not None and hours.ngroups != count) or fleet["period"].min() != start
                 or (total is not None and abs(hours.first().sum() - float(total)) > 1e-6 * max(1.0, float(total))))
        if not moved.any() and other:
            problems.append(Problem(file, f"{hours.ngroups} periods of {hours.first().sum():g} hours in all from "
                                          f"{fleet['period'].min():%Y-%m-%dT%H:%M}: not this "
                                          "plan's horizon", column="period, hours",
                                    expected=f"plan.json horizon: {count} periods, {total} hours from {hz['start']}"))
    if not problems:
        problems += _not_its_months(fleet, plan, file)
    return problems[:20]


def _not_its_months(fleet: pd.DataFrame, plan: dict, file: str) -> list[Problem]:
    """The (month, pool) GPU-hours of ``fleet``, expected over the plan's scenarios, that differ from plan.json
    ``monthly_usage`` (its rows are those sums): a period moved past the horizon, a row deleted, hours changed."""
    mu = pd.DataFrame(plan.get("monthly_usage") or [])
    if not len(mu) or not {"month", "gpu_type", "region"} <= set(mu):
        return []
    if not len(fleet):
        return [Problem(file, "no rows", expected="a row per scenario, period and pool of the plan")]
    prob = {s.get("name"): float(s.get("probability") or 0.0) for s in plan.get("scenarios") or []}
    w = fleet["scenario"].astype(str).map(prob).fillna(0.0).to_numpy() if prob and "scenario" in fleet else 1.0
    w = w * fleet["hours"].to_numpy(float)
    key = pd.DataFrame({"month": fleet["period"].dt.strftime("%Y-%m"), "gpu_type": fleet["gpu_type"],
                        "region": fleet["region"]})
    cols = [c for c in ("reserved_owned", "reserved_used", *supply.RENTED) if c in fleet and f"{c}_gpu_hours" in mu]
    got = key.assign(**{c: fleet[c].to_numpy(float) * w for c in cols}).groupby(["month", "gpu_type", "region"])[cols].sum()
    want = mu.set_index(["month", "gpu_type", "region"])[[f"{c}_gpu_hours" for c in cols]]
    want.columns = cols
    both = got.add_suffix("_fleet").join(want.add_suffix("_plan"), how="outer").fillna(0.0)
    out = []
    for c in cols:
        a, b = both[c + "_fleet"].to_numpy(float), both[c + "_plan"].to_numpy(float)
        off = np.flatnonzero(np.abs(a - b) > 1e-6 * np.maximum(1.0, np.abs(b)))
        for i in off[:20 - len(out)]:
            month, gpu, region = both.index[i]
            out.append(Problem(file, f"{c} GPU-hours of {month} in {gpu}/{region} are {a[i]:,.6g}, plan.json "
                                     f"monthly_usage says {b[i]:,.6g}", column=c,
                               expected="the fleet.csv written with this plan.json (a period moved, a row "
                                        "deleted, hours changed?)"))
    return out


def _collect(problems: list, file: str, rows: np.ndarray, values: pd.Series, bad: np.ndarray, column: str,
             what: str, expected: str) -> None:
    for i in np.flatnonzero(bad)[:20]:
        problems.append(Problem(file, what, row=int(rows[i]), column=column, value=values.iat[i], expected=expected))


def expected_fleet(plan: dict, fleet: pd.DataFrame) -> pd.DataFrame:
    """A fleet (:func:`read_fleet_file`) expected over the plan's scenarios (weighted by their probability): one
    row per period and pool, every count column summed (``hours`` the period's), ``on_demand_covered`` 0 where
    absent, and ``end`` of the period."""
    prob = {s["name"]: float(s["probability"]) for s in plan.get("scenarios") or []} or None
    f = fleet.copy()
    w = f["scenario"].astype(str).map(prob).fillna(0.0) if prob and "scenario" in f else 1.0
    cols = [c for c in COUNTS if c in f and c != "hours"]
    f[cols] = f[cols].mul(w, axis=0)
    g = f.groupby(["period", "gpu_type", "region"], sort=True).agg({**{c: "sum" for c in cols}, "hours": "first"})
    g = g.reset_index()
    if "on_demand_covered" not in g:
        g["on_demand_covered"] = 0.0
    g["end"] = g["period"] + pd.to_timedelta(g["hours"].astype(float), unit="h")
    return g
