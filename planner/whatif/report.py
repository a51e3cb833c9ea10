"""comparison.xlsx and sweep.xlsx, with the plan workbook's helpers (text is never a formula)."""

from __future__ import annotations

import contextlib
import csv
import json
import math
from pathlib import Path

from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference, ScatterChart, Series
from openpyxl.styles import Font

from planner import __version__
from planner.core.atomic import atomic_path
from planner.inputs import supply
from planner.report.sheet_openpyxl import BOLD, INT, NUM, PCT, RATE, USD, USD0, _Sheet
from planner.whatif.sweep import FACTORS, SweepResult, flat_rows, solved_line, to_dict

LINK = Font(color="0563C1", underline="single")
FACTOR = "0.0###"


def _unique_headers(names: list[str]) -> list[str]:
    """Excel table headers must differ (case-insensitively)."""
    out, seen = [], set()
    for n in names:
        name, i = str(n), 2
        while name.lower() in seen:
            name = f"{n} ({i})"
            i += 1
        seen.add(name.lower())
        out.append(name)
    return out


def _value_cell(s: _Sheet, value, fmt):
    if isinstance(value, str):
        return s.text(value)
    if value is None:
        return None
    return s.cell(value, fmt)


def _new_workbook() -> Workbook:
    wb = Workbook()
    wb.remove(wb.active)
    return wb


# ---------------------------------------------------------------------------- comparison

def _summary_rows(cmp: dict) -> list[tuple[str, str, list, str | None]]:
    ms = cmp["metrics"]
    sc = cmp["scenarios"]

    def col(key):
        return [m[key] for m in ms]

    rows = [
        ("Cost", "Total expected cost (USD)", col("total_usd"), USD),
        ("Cost", "Reserved, amortised over the horizon (USD)", col("reserved_usd"), USD),
        ("Cost", "On-demand (USD)", col("on_demand_usd"), USD),
        ("Cost", "Spot (USD)", col("spot_usd"), USD),
        *(("Cost", f"{k.replace('_', '-').capitalize()} (USD)", [m.get(f"{k}_usd", 0.0) for m in ms], USD)
          for k in supply.RENTED[2:] if any(f"{k}_usd" in m for m in ms)),
        ("Cost", "All on-demand baseline (USD)", col("all_on_demand_usd"), USD),
        ("Cost", "Savings against all on-demand (USD)", col("savings_usd"), USD),
        ("Cost", "Savings %", [None if v is None else v / 100 for v in col("savings_pct")], PCT),
        ("Cost", "Commitment liability (USD)", col("commitment_usd"), USD),
        ("Cost", "Objective incl. shortfall penalty (USD)", col("objective_usd"), USD),
        ("Plan", "Solver status", col("status"), None),
        ("Plan", "Shortfall (GPU-hours not met)", col("shortfall_gpu_hours"), NUM),
        ("Plan", "Reserved utilisation", col("reserved_utilisation"), PCT),
    ]
    res_keys = list(dict.fromkeys(k for m in ms for k in m["reserved_gpus"]))
    for k in res_keys:
        rows.append(("Reserved GPUs bought", k, [m["reserved_gpus"].get(k) for m in ms], INT))
    classes = list(dict.fromkeys(k for m in ms for k in m["spot_share"]))
    for k in classes:
        rows.append(("Spot share of the class's GPU-hours", k, [m["spot_share"].get(k) for m in ms], PCT))
    for k in classes:
        rows.append(("Spot GPU-hours", k, [m["spot_gpu_hours"].get(k) for m in ms], NUM))
    for k in dict.fromkeys(k for m in ms for k in m["demand_gpu_hours"]):
        rows.append(("Demand (reference GPU-hours)", k, [m["demand_gpu_hours"].get(k) for m in ms], NUM))
    rows.append(("Inputs", "Model file", [s["inputs"]["model"] for s in sc], None))
    rows.append(("Inputs", "Price sheet", [s["inputs"]["prices"] for s in sc], None))
    rows.append(("Inputs", "Demand forecast", [s["inputs"]["demand"] for s in sc], None))
    diffs = {d["scenario"]: d["summary"] for d in cmp["price_diffs"]}
    rows.append(("Inputs", f"Price changes against '{cmp['base']}'",
                 ["(base)"] + [diffs.get(s["label"], "") for s in sc[1:]], None))
    return rows


def write_comparison_workbook(cmp: dict, path) -> None:
    """Sheets: Summary (side by side, with the cost chart), Delta, Changes, Price changes, Plans."""
    wb = _new_workbook()
    labels = [s["label"] for s in cmp["scenarios"]]
    rows = _summary_rows(cmp)

    # Summary: one column per scenario
    ws = wb.create_sheet("Summary")
    s = _Sheet(ws, ["section", "item"] + labels)
    s.header({"section": 30, "item": 44} | {lb: max(18, len(lb) + 4) for lb in labels})
    for section, item, values, fmt in rows:
        s.append([section, item] + [_value_cell(s, v, fmt) for v in values])
    s.table("Comparison")
    chart = BarChart()
    chart.type = "col"
    chart.grouping = "stacked"
    chart.overlap = 100
    chart.title = "Expected cost by option per scenario (USD)"
    chart.y_axis.title = "USD"
    chart.y_axis.numFmt = USD0
    chart.y_axis.scaling.min = 0  # stacked costs: the bars must start at zero
    _show_axes(chart)
    chart.add_data(Reference(ws, min_col=2, max_col=2 + len(labels), min_row=3, max_row=5), from_rows=True,
                   titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=3, max_col=2 + len(labels), min_row=1, max_row=1))
    chart.height, chart.width = 9, 6 + 3 * len(labels)
    ws.add_chart(chart, f"{_col_after(s, labels[-1], 2)}2")

    # Delta against the base
    ws = wb.create_sheet("Delta")
    heads = _unique_headers(["section", "item", f"{labels[0]} (base)"] + [f"{lb} - {labels[0]}" for lb in labels[1:]])
    d = _Sheet(ws, heads)
    d.header({"section": 30, "item": 44} | {h: max(18, len(h) + 4) for h in heads[2:]})
    diffs = {x["scenario"]: x["summary"] for x in cmp["price_diffs"]}
    d.append(["Cause", "Price sheet changes", "(base)"] + [diffs.get(lb, "") for lb in labels[1:]])
    for section, item, values, fmt in rows:
        if section == "Inputs":
            continue
        base = values[0]
        if section == "Plan" and item == "Solver status":
            d.append([section, item, base] + [v if v != base else "same" for v in values[1:]])
            continue
        deltas = []
        for v in values[1:]:
            deltas.append(None if v is None or base is None else v - base)
        d.append([section, item, _value_cell(d, base, fmt)] + [_value_cell(d, x, fmt) for x in deltas])
    d.table("Delta")

    # Changes: bought more or less, spend moved
    ws = wb.create_sheet("Changes")
    c = _Sheet(ws, ["scenario", "against", "option", "gpu_type", "region", "quantity", "base_quantity",
                    "quantity_now", "quantity_delta", "base_usd", "usd_now", "usd_delta"],
               {"base_quantity": NUM, "quantity_now": NUM, "quantity_delta": NUM, "base_usd": USD, "usd_now": USD,
                "usd_delta": USD})
    c.header({"quantity": 22})
    for r in cmp["changes"]:
        c.append([r[k] for k in c.columns])
    c.table("Changes")

    # Price changes: the cause beside the effect
    ws = wb.create_sheet("Price changes")
    p = _Sheet(ws, ["scenario", "against", "change", "gpu_type", "region", "option", "field", "old", "new", "delta",
                    "delta_pct", "sheet_row"],
               {"old": "0.0####", "new": "0.0####", "delta": "+0.0####;-0.0####;0", "delta_pct": "+0.0;-0.0;0",
                "sheet_row": INT})
    p.header({"field": 26})
    for x in cmp["price_diffs"]:
        for r in x["changed"]:
            p.append([x["scenario"], x["against"], "changed", r["gpu_type"], r["region"], r["option"], r["field"],
                      r["old"], r["new"], r["delta"], r["delta_pct"], r.get("row")])
        for kind, key in (("added", "new"), ("removed", "old")):
            for r in x[kind]:
                p.append([x["scenario"], x["against"], kind, r["gpu_type"], r["region"], r["option"], "hourly_usd",
                          r["hourly_usd"] if key == "old" else None, r["hourly_usd"] if key == "new" else None,
                          None, None, r.get("row")])
    p.table("PriceChanges")
    ws.append([])
    ws.append([p.text("delta_pct is the change in % of the old value; sheet_row is the row in the later sheet "
                      "(the earlier one for removed rows).")])

    # Plans: links to each scenario's own workbook
    ws = wb.create_sheet("Plans")
    k = _Sheet(ws, ["scenario", "status", "total_usd", "plan_xlsx", "plan_json", "model", "prices", "demand"],
               {"total_usd": USD})
    k.header({"plan_xlsx": 40, "plan_json": 40, "model": 40, "prices": 40, "demand": 40})
    for sc in cmp["scenarios"]:
        k.append([sc["label"], sc["status"], sc["cost_usd"]["total"], sc["plan_files"]["xlsx"],
                  sc["plan_files"]["json"], sc["inputs"]["model"], sc["inputs"]["prices"], sc["inputs"]["demand"]])
    k.table("Plans")
    for i, sc in enumerate(cmp["scenarios"]):
        for colname in ("plan_xlsx", "plan_json"):
            cell = ws[f"{k.col(colname)}{i + 2}"]
            cell.hyperlink = sc["plan_files"]["xlsx" if colname == "plan_xlsx" else "json"]
            cell.font = LINK
    ws.append([])
    ws.append([k.text("Links are relative to this workbook: keep the folder together when you move it.")])
    wb.save(path)


def _show_axes(chart) -> None:
    """openpyxl 3.1 marks axes deleted unless told otherwise; Excel then hides them."""
    chart.x_axis.delete = False
    chart.y_axis.delete = False


def _col_after(s: _Sheet, name: str, gap: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(s.columns.index(name) + 1 + gap)


# ---------------------------------------------------------------------------- sweep

def write_sweep_workbook(result: SweepResult, path) -> None:
    """Sheets: Points, Break-evens, Spot check, Tornado (chart), Series (a line chart per factor), Run."""
    wb = _new_workbook()
    cols, rows = flat_rows(result)
    ws = wb.create_sheet("Points")
    fmts = {f: FACTOR for f in FACTORS} | {c: USD for c in cols if c.endswith("_usd")} | {
        "shortfall_gpu_hours": NUM, "mip_gap": "0.00E+00", "seconds": "0.0", "point": INT}
    fmts |= {c: INT for c in cols if c.startswith("reserved_gpus ")}
    fmts |= {c: NUM for c in cols if c.startswith("spot_gpu_hours ")}
    fmts |= {c: PCT for c in cols if c.startswith("spot_share ")}
    s = _Sheet(ws, cols, fmts)
    s.header({"error": 60})
    for r in rows:
        s.append(r)
    s.table("Points")

    ws = wb.create_sheet("Break-evens")
    b = _Sheet(ws, ["factor", "from", "to", "what", "change", "quantity_from", "quantity_to", "unit",
                    "other_factors", "failed_points_between"],
               {"from": FACTOR, "to": FACTOR, "quantity_from": NUM, "quantity_to": NUM})
    b.header({"what": 48, "other_factors": 30})
    for r in result.break_evens:
        b.append([r["factor"], r["from"], r["to"], r["what"], r["change"], r["quantity_from"], r["quantity_to"],
                  r["unit"], _fixed(r["other_factors"]), r["points_between_failed"]])
    b.table("BreakEvens")
    ws.append([])
    ws.append([b.text("Each row: between two consecutive points along the factor, a reserved option's purchase "
                      "or a class's spot use (in total, or on one pool: 'class @ pool') goes from zero to "
                      "non-zero (starts) or back (stops).")])

    ws = wb.create_sheet("Spot check")
    k = _Sheet(ws, ["factor", "workload_class", "pool", "goodput", "spot_usd_per_gpu_hour",
                    "on_demand_usd_per_useful_gpu_hour", "direction", "break_even", "spot_at_base", "last_with_spot",
                    "first_without_spot", "step", "steps_off", "agrees", "consistent", "observed"],
               {"goodput": PCT, "spot_usd_per_gpu_hour": RATE, "on_demand_usd_per_useful_gpu_hour": RATE,
                "break_even": FACTOR, "spot_at_base": NUM, "last_with_spot": FACTOR, "first_without_spot": FACTOR,
                "step": FACTOR, "steps_off": "0.00"})
    k.header({"observed": 60})
    for r in result.spot_checks:
        k.append([r["factor"], r["workload_class"], r["pool"], r["goodput"], r["spot_usd_per_gpu_hour"],
                  r["on_demand_usd_per_useful_gpu_hour"], r["direction"], r["break_even"], r["spot_at_base"],
                  r["last_with_spot"], r["first_without_spot"], r["step"], r["steps_off"],
                  None if r["agrees"] is None else ("yes" if r["agrees"] else "no"),
                  "yes" if r["consistent"] else "no", r["observed"]])
    k.table("SpotCheck")
    ws.append([])
    ws.append([k.text("break_even: the factor at which spot on this class and pool costs as much per useful "
                      "GPU-hour as on-demand in the same pool (planner spot's break-even); spot stops past it "
                      "('above' or 'below'), or earlier where another pool or reserved GPUs are cheaper still.")])

    ws = wb.create_sheet("Tornado")
    t = _Sheet(ws, ["factor", "low", "high", "total_at_low", "total_at_high", "delta_at_low", "delta_at_high",
                    "min_total", "max_total", "range", "base_total", "other_factors"],
               {"low": FACTOR, "high": FACTOR, "total_at_low": USD, "total_at_high": USD, "delta_at_low": USD,
                "delta_at_high": USD, "min_total": USD, "max_total": USD, "range": USD, "base_total": USD})
    t.header()
    for r in reversed(result.tornado):  # a bar chart draws the first category at the bottom: widest on top
        t.append([r["factor"], r["low"], r["high"], r["total_at_low"], r["total_at_high"], r["delta_at_low"],
                  r["delta_at_high"], r["min_total"], r["max_total"], r["range"], r["base_total"],
                  _fixed(r["other_factors"])])
    t.table("Tornado")
    if result.tornado:
        chart = BarChart()
        chart.type = "bar"
        chart.grouping = "clustered"
        chart.overlap = 100
        chart.title = "Total cost against each factor: change from the base at its low and high value (USD)"
        chart.x_axis.title = "factor"
        chart.y_axis.title = "USD against the base"
        chart.y_axis.numFmt = USD0
        _show_axes(chart)
        n = len(result.tornado)
        chart.add_data(Reference(ws, min_col=6, max_col=7, min_row=1, max_row=n + 1), titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n + 1))
        chart.height, chart.width = 4 + 1.5 * n, 20
        ws.add_chart(chart, "N2")

    ws = wb.create_sheet("Series")
    _write_series(ws, result)

    ws = wb.create_sheet("Run")
    r = _Sheet(ws, ["item", "value"])
    r.header({"item": 36, "value": 60})
    run = [("Model", result.name), ("Mode", "grid" if result.spec.grid else "one-at-a-time"),
           ("Factors", json.dumps(result.spec.factors)), ("Points", len(result.points)),
           ("Failed points", sum(1 for p in result.points if not p["ok"])), ("Processes", result.jobs),
           ("Wall time (s)", round(result.wall_seconds, 2)), ("Points per minute", round(result.points_per_minute, 2)),
           ("Planner version", __version__)]
    for item, value in run:
        r.append([item, value])
    r.table("Run")
    wb.save(path)


def _fixed(d: dict | None) -> str | None:
    return None if not d else ", ".join(f"{k}={v:g}" for k, v in d.items())


def _write_series(ws, result: SweepResult) -> None:
    """Per factor: cost by option along the factor (others at 1), with a line chart beside it."""
    row = 1
    for factor in result.spec.factors:
        pts = solved_line(result, factor)
        if not pts:
            continue
        ws.cell(row=row, column=1, value=f"{factor} (others at 1)").font = BOLD
        head = [factor, "total_usd", "reserved_usd", "on_demand_usd", "spot_usd", "shortfall_gpu_hours"]
        for j, h in enumerate(head, 1):
            ws.cell(row=row + 1, column=j, value=h).font = BOLD
        for i, p in enumerate(pts):
            vals = [p["factors"][factor], p["total_usd"], p["reserved_usd"], p["on_demand_usd"], p["spot_usd"],
                    p["shortfall_gpu_hours"]]
            for j, v in enumerate(vals, 1):
                c = ws.cell(row=row + 2 + i, column=j, value=v)
                c.number_format = FACTOR if j == 1 else (NUM if j == 6 else USD0)
        first, last = row + 2, row + 1 + len(pts)
        chart = ScatterChart()
        chart.title = f"Cost against {factor}"
        chart.x_axis.title = f"{factor} factor"
        chart.y_axis.title = "USD"
        chart.y_axis.numFmt = USD0
        _show_axes(chart)
        xs = Reference(ws, min_col=1, min_row=first, max_row=last)
        for j in range(2, 6):
            ser = Series(Reference(ws, min_col=j, min_row=row + 1, max_row=last), xs, title_from_data=True)
            ser.marker.symbol = "circle"
            chart.series.append(ser)
        chart.height, chart.width = 8, 18
        ws.add_chart(chart, f"H{row}")
        row = max(last + 3, row + 18)
    for j, w in enumerate([18, 16, 16, 16, 16, 18], 1):
        ws.column_dimensions[chr(64 + j)].width = w


def json_safe(x):
    """Plain JSON values: non-finite numbers become null, numpy scalars Python numbers."""
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return x
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if hasattr(x, "dtype") and getattr(x.dtype, "kind", "") in "iub" and f.is_integer():
        return int(f) if x.dtype.kind != "b" else bool(x)
    return f if math.isfinite(f) else None


def write_sweep_outputs(result: SweepResult, target: Path) -> dict[str, Path]:
    """sweep.json, sweep.csv and sweep.xlsx, each to a temporary name first; all renamed once all are written."""
    target = Path(target)
    paths = {"json": target / "sweep.json", "csv": target / "sweep.csv", "xlsx": target / "sweep.xlsx"}
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(atomic_path(paths["json"]))
        tmp.write_text(json.dumps(json_safe(to_dict(result)), indent=2, allow_nan=False) + "\n", encoding="utf-8")
        tmp = stack.enter_context(atomic_path(paths["csv"]))
        cols, rows = flat_rows(result)
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(cols)
            w.writerows([["" if v is None else v for v in r] for r in rows])
        tmp = stack.enter_context(atomic_path(paths["xlsx"]))
        write_sweep_workbook(result, tmp)
    return paths
