"""The per-period sheets: Allocation, Demand, Fleet (and how they are summed to days, weeks or months)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from xlsxwriter.utility import xl_col_to_name
from planner.results.plan import Plan
from planner.report.workbook.book import COLUMNS, ref, DATE, F, INT, NUM, PCT, RATE, USD, _Sheet, _date
from planner.report.workbook.costs import _price_value
from planner.inputs import supply
from planner.report.workbook import bulk


MAX_SHEET_ROWS = 20_000  # past this the Allocation sheet is summed to days, then weeks, then months (allocation.csv has every period)


MAX_PERIOD_ROWS = 30_000  # the same for the per-period sheets (Demand, Fleet and its charts): 3 years hourly fit


_GRAINS = (("day", "D"), ("week", "W"), ("month", "M"))


def _grain(periods: pd.Series, grain: str) -> pd.Series:
    return periods.dt.floor("D") if grain == "D" else periods.dt.to_period(grain).dt.start_time


def with_path_prices(plan: Plan, a: pd.DataFrame) -> pd.DataFrame:
    """``a`` with, where prices change over time or by scenario (price paths), each rented row's Prices row
    (``price_row``, 1-based sheet row; 0 for commitments) and its cost ``usd`` (GPU-hours x that price); ``a``
    itself otherwise."""
    inp = plan.inputs
    if inp.rented_price_path is None or not len(a):
        return a
    from planner.inputs import rented

    rows = inp.price_paths.rented_rows(inp.periods)  # (S, J, P, T) positions in the price table
    s = pd.Index(inp.scenarios).get_indexer(a["scenario"])
    t = pd.DatetimeIndex(inp.periods).get_indexer(pd.DatetimeIndex(a["period"]))
    pool = pd.MultiIndex.from_frame(inp.pools[["gpu_type", "region"]]).get_indexer(
        pd.MultiIndex.from_arrays([a["gpu_type"], a["region"]]))
    j = pd.Index(list(rented.KINDS)).get_indexer(a["option"])
    ok = (j >= 0) & (s >= 0) & (t >= 0) & (pool >= 0)
    pos = np.full(len(a), -1, dtype=np.int64)
    pos[ok] = rows[s[ok], j[ok], pool[ok], t[ok]]
    hourly = inp.tables.prices["hourly_usd"].to_numpy(float)
    price = np.where(pos >= 0, hourly[np.clip(pos, 0, None)], 0.0)
    return a.assign(price_row=np.where(pos >= 0, pos + 2, 0), usd=a["gpus"] * a["hours"] * price)


def coarsen_allocation(a: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """``a`` (the plan's allocation) as it fits a sheet: per period, or summed to days, weeks or months.

    Aggregated rows keep the sums (hours, GPU-hours) and the average GPUs (GPU-hours / hours), so the
    Costs formulas over the sheet give the same totals. Returns the rows and the grain's name (None =
    per period)."""
    if len(a) <= MAX_SHEET_ROWS:
        return a, None
    keys = ["scenario", "workload_class", "gpu_type", "region", "option"]
    sums = ["hours", "gpu_hours"] + (["usd"] if "usd" in a else [])  # a price path's cost sums with its hours
    for name, code in _GRAINS:
        g = a.assign(period=_grain(a["period"], code)).groupby(keys + ["period"], sort=False)[
            sums].sum().reset_index()
        if len(g) <= MAX_SHEET_ROWS or code == "M":
            g["gpus"] = g["gpu_hours"] / g["hours"]
            return g.sort_values(["scenario", "period", "workload_class", "gpu_type", "region", "option"],
                                 kind="stable").reset_index(drop=True), name
    raise AssertionError("unreachable")


def _period_grain(plan: Plan) -> tuple[str | None, str | None]:
    """The grain of the per-period sheets (Demand, Fleet): None, or (name, pandas code)."""
    rows = len(plan.inputs.scenarios) * plan.inputs.T
    if rows <= MAX_PERIOD_ROWS:
        return None, None
    for name, code in _GRAINS:
        n = _grain(pd.Series(plan.inputs.periods), code).nunique() * len(plan.inputs.scenarios)
        if n <= MAX_PERIOD_ROWS or code == "M":
            return name, code
    return None, None


FLEET_CHART_POINTS = 750  # past this many periods the Fleet sheet (behind the charts) is averaged per day


def _write_allocation(ws, plan: Plan, price_row: dict, a: pd.DataFrame) -> None:
    s = _Sheet(ws, list(COLUMNS["Allocation"]),
               {"period": DATE, "hours": "0.##", "gpus": NUM, "gpu_hours": NUM, "probability": "0.###",
                "expected_gpu_hours": NUM, "usd_per_gpu_hour": RATE, "expected_cost_usd": USD})
    s.header({"period": 18, "workload_class": 20})
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    prices = {k: _price_value(plan, price_row, k) for k in price_row if k[2] in supply.RENTED}
    n = len(a)
    row = np.arange(2, n + 2).astype(str).tolist()
    scen, opt = a["scenario"].tolist(), a["option"].tolist()
    hrs, gpus = a["hours"].to_numpy(float), a["gpus"].to_numpy(float)
    p = np.array([prob[x] for x in scen], float)
    with np.errstate(all="ignore"):  # (GPUs not finite: their cells are left out, as row by row)
        gh = gpus * hrs
        ex = gh * p
    staged = {o: supply.is_(o, stage="first") for o in set(opt)}  # asked once per option, not per row
    first = np.array([staged[o] for o in opt], bool)
    # each row's price: nothing on a first-stage row; the mean over a price path summed to days, weeks or months;
    # the Prices row pricing its period and scenario on a price path; else its pool and option's Prices row
    text: list = [None] * n
    pv = np.zeros(n)
    usd = a["usd"].to_numpy(float) if "usd" in a else None
    path_row = a["price_row"].to_numpy(int) if "price_row" in a else None
    hourly = plan.inputs.tables.prices["hourly_usd"].to_numpy(float)
    cell: dict = {}  # a Prices row's reference, made once

    def at(r: int) -> str:
        if r not in cell:
            cell[r] = f"={ref('Prices', 'hourly_usd', r)}"
        return cell[r]

    keys = list(zip(a["gpu_type"].tolist(), a["region"].tolist(), opt))
    for i in np.flatnonzero(~first).tolist():
        if usd is not None and path_row is None:
            pv[i] = float(usd[i]) / float(gh[i]) if gh[i] > 0 else 0.0
        elif usd is not None and path_row[i] > 0:
            pv[i] = float(hourly[path_row[i] - 2])
            text[i] = at(int(path_row[i]))
        else:
            key = (*keys[i], None)
            pv[i] = prices[key]
            text[i] = at(price_row[key])
    with np.errstate(all="ignore"):  # (an infinite times 0 is NaN: that cell is cached empty, as row by row)
        cost = ex * pv
    s.extend([bulk.Text(scen), bulk.Date(a["period"].tolist()), bulk.Number(hrs), bulk.Text(a["workload_class"].tolist()),
              bulk.Text(a["gpu_type"].tolist()), bulk.Text(a["region"].tolist()), bulk.Text(opt), bulk.Number(gpus),
              bulk.Formula([f"=H{r}*C{r}" for r in row], gh), bulk.Number(p),
              bulk.Formula([f"=I{r}*J{r}" for r in row], ex), bulk.Formula(text, pv),
              bulk.Formula([f"=K{r}*L{r}" for r in row], cost)])
    s.table("Allocation")


def _write_demand(ws, plan: Plan, grain: str | None = None) -> None:
    inp = plan.inputs
    s = _Sheet(ws, ["scenario", "period", "hours"] + [f"{c}" for c in inp.classes],
               {c: NUM for c in inp.classes} | {"period": DATE, "hours": "0.##"})
    s.header({"period": 18})
    for si, scen in enumerate(inp.scenarios):
        d = pd.DataFrame(inp.demand[si].T, columns=range(inp.K))
        d["hours"] = inp.hours
        d["period"] = inp.periods
        if grain:  # hour-weighted averages over each day, week or month
            w = d[list(range(inp.K))].mul(d["hours"], axis=0)
            w["hours"] = d["hours"]
            g = w.groupby(_grain(d["period"], grain).to_numpy(), sort=True).sum()
            d = g[list(range(inp.K))].div(g["hours"], axis=0)
            d["hours"] = g["hours"]
            d["period"] = g.index
        s.extend([bulk.Text([scen] * len(d)), bulk.Date(list(d["period"])), bulk.Number(d["hours"].to_numpy(float))]
                 + [bulk.Number(d[k].to_numpy(float)) for k in range(inp.K)])
    s.table("Demand")


def _write_fleet(ws, plan: Plan, grain: str | None = None) -> None:
    inp = plan.inputs
    f = plan.fleet
    scen0 = inp.scenarios[0]
    others = [k for k in supply.RENTED[2:] if k in f]  # other rented kinds (flex-start): appended columns
    cols4 = ["reserved_owned", "reserved_used", "on_demand", "spot"]
    g = f[f["scenario"] == scen0].groupby("period")[cols4 + others].sum()
    periods = inp.periods
    if grain:  # hour-weighted averages per day, week or month
        h = pd.Series(inp.hours, index=inp.periods)
        g = g.reindex(inp.periods).fillna(0.0)
        key = _grain(pd.Series(inp.periods), grain).to_numpy()
        g = g.mul(h, axis=0).groupby(key).sum().div(h.groupby(key).sum(), axis=0)
        periods = g.index
    cols = ["period", "reserved_owned", "reserved_used", "on_demand", "spot", "gpus_in_use", "reserved_utilisation",
            *others]
    s = _Sheet(ws, cols, {"period": DATE, "reserved_owned": NUM, "reserved_used": NUM, "on_demand": NUM, "spot": NUM,
                          "gpus_in_use": NUM, "reserved_utilisation": PCT, **{k: NUM for k in others}})
    s.header({"period": 18})
    for t, per in enumerate(periods):
        row = t + 2
        r = g.loc[per] if per in g.index else None
        vals = [0.0] * 4 if r is None else [float(r[c]) for c in ("reserved_owned", "reserved_used", "on_demand", "spot")]
        more = [0.0] * len(others) if r is None else [float(r[k]) for k in others]
        extra = "".join(f"+{xl_col_to_name(cols.index(k))}{row}" for k in others)
        s.append([_date(per)] + vals + [F(f"=C{row}+D{row}+E{row}{extra}", vals[1] + vals[2] + vals[3] + sum(more)),
                                        F(f"=IF(B{row}>0,C{row}/B{row},0)", vals[1] / vals[0] if vals[0] > 0 else 0)]
                 + more)
    s.table("Fleet")
    n = s.rows - 1  # last data row (0-based)
    wb = ws.planner_book.wb
    unit = {"D": "day", "W": "week", "M": "month"}.get(grain or "", "period")
    area = wb.add_chart({"type": "area", "subtype": "stacked"})
    for c, name in ((2, "reserved used"), (3, "on-demand"), (4, "spot")):
        area.add_series({"name": name, "categories": ["Fleet", 1, 0, n, 0], "values": ["Fleet", 1, c, n, c]})
    owned = wb.add_chart({"type": "line"})
    owned.add_series({"name": "reserved owned", "categories": ["Fleet", 1, 0, n, 0], "values": ["Fleet", 1, 1, n, 1],
                      "line": {"color": "black", "width": 1.5}})
    area.combine(owned)  # the reserved fleet owned, as a line over the stacked use
    area.set_title({"name": f"GPUs in use by option ({scen0}, mean per {unit})"})
    axis = {"name": unit, "date_axis": True, "num_format": "yyyy-mm-dd"}
    if unit == "day":
        axis.update({"major_unit": 7, "major_unit_type": "days"})
    area.set_x_axis(axis)
    area.set_y_axis({"min": 0, "name": "GPUs", "num_format": INT})
    area.set_size({"width": 900, "height": 340})
    ws.insert_chart("I2", area)
    util = wb.add_chart({"type": "column"})
    util.add_series({"name": "reserved utilisation", "categories": ["Fleet", 1, 0, n, 0],
                     "values": ["Fleet", 1, 6, n, 6], "gap": 20})
    util.set_title({"name": f"Reserved utilisation per {unit}"})
    util.set_x_axis({"name": unit, "date_axis": True, "num_format": "yyyy-mm-dd"})
    util.set_y_axis({"min": 0, "name": "used / owned", "num_format": "0%", "max": 1})
    util.set_legend({"none": True})
    util.set_size({"width": 900, "height": 260})
    ws.insert_chart("I21", util)
