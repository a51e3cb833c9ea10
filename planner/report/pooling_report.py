"""pooling.json and pooling.xlsx: separate pools against one pool with preemption, side by side."""

from __future__ import annotations

import json
from pathlib import Path

from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference
from openpyxl.styles import Font

from planner.core.atomic import write_workbook_and_json
from planner.pooling import PoolingResult
from planner.report.json_export import jsonable, plan_to_dict

ROWS = [  # (key, label, number format)
    ("total_cost_usd", "Total cost (USD)", "$#,##0"),
    ("cost_usd.reserved", "Reserved (USD)", "$#,##0"),
    ("cost_usd.on_demand", "On-demand (USD)", "$#,##0"),
    ("cost_usd.spot", "Spot (USD)", "$#,##0"),
    ("reserved_gpus_bought", "Reserved GPUs bought", "#,##0"),
    ("peak_on_demand_gpus", "Peak on-demand GPUs", "#,##0"),
    ("peak_spot_gpus", "Peak spot GPUs", "#,##0"),
    ("inference_p99_ms", "Inference p99 latency, worst period (ms)", "#,##0"),
    ("training_gpu_hours", "Training GPU-hours used", "#,##0"),
    ("training_useful_gpu_hours", "Training useful GPU-hours", "#,##0"),
    ("training_goodput", "Training goodput", "0.0%"),
    ("training_lost_to_preemption_pct", "Training lost to preemption (%)", "0.0"),
    ("preemptions_per_day", "Training job preemptions per day", "#,##0.0"),
    ("training_idle_useful_gpu_hours", "Idle reserved left to training (useful h)", "#,##0"),
    ("shortfall_gpu_hours", "Shortfall (GPU-hours)", "#,##0"),
]


def _get(d: dict, key: str):
    for part in key.split("."):
        d = d[part]
    return d


def pooling_dict(result: PoolingResult) -> dict:
    """The pooling.json document: both arrangements' metrics, the recommendation, and the plans' summaries."""
    def brief(plan):
        d = plan_to_dict(plan)
        return {k: d[k] for k in ("status", "mip_gap", "cost_usd", "reserved_purchases", "shortfall_gpu_hours",
                                  "backfill", "spot_economics")}

    return jsonable({
        "separate": result.metrics["separate"],
        "pooled": result.metrics["pooled"],
        "recommendation": result.recommendation,
        "priority_classes": result.priority_classes,
        "backfill_classes": result.backfill_classes,
        "plans": {"separate_priority": brief(result.separate[0]), "separate_backfill": brief(result.separate[1]),
                  "pooled": brief(result.pooled)},
        "purchases_judged": judgement(result),
    })


def judgement(result: PoolingResult) -> str:
    """How the arrangements' purchases were judged (each plan's ``term``): over their whole term, or on the
    horizon and why; the same for the three plans but where they differ (each is then named)."""
    plans = {"separate, priority": result.separate[0], "separate, backfill": result.separate[1],
             "pooled": result.pooled}
    notes = {k: (p.term or {}).get("note") or "on the horizon (no term outlives it)" for k, p in plans.items()}
    judge = {k: (p.term or {}).get("judge", "horizon") for k, p in plans.items()}
    if len(set(judge.values())) == 1:
        how = "over their whole term" if judge["pooled"] == "term" else "on the horizon"
        return f"purchases judged {how}: {notes['pooled']}"
    return "purchases judged " + "; ".join(f"{k}: {judge[k]} ({notes[k]})" for k in plans)


def write_pooling(result: PoolingResult, out_dir: Path) -> dict[str, Path]:
    """Write pooling.json and pooling.xlsx (a Pooling sheet and a cost chart), each atomically."""
    out_dir = Path(out_dir)
    paths = {"json": out_dir / "pooling.json", "xlsx": out_dir / "pooling.xlsx"}
    wb = Workbook()
    ws = wb.active
    ws.title = "Pooling"
    ws.append(["Metric", "Separate pools", "One pool with preemption", "Pooled minus separate"])
    for cell in ws[1]:
        cell.font = Font(bold=True)
    for i, (key, label, fmt) in enumerate(ROWS, start=2):
        a, b = _get(result.metrics["separate"], key), _get(result.metrics["pooled"], key)
        ws.append([label, a, b, f"=IF(AND(ISNUMBER(B{i}),ISNUMBER(C{i})),C{i}-B{i},\"\")"])
        for col in "BCD":
            ws[f"{col}{i}"].number_format = fmt
    ws.append([])
    ws.append(["Recommendation", result.recommendation])
    ws.column_dimensions["A"].width = 58
    for col in "BCD":
        ws.column_dimensions[col].width = 24
    chart = BarChart()
    chart.type = "col"
    chart.grouping = "stacked"
    chart.overlap = 100
    chart.title = "Cost by option (USD)"
    chart.y_axis.title = "USD"
    chart.x_axis.title = "Arrangement"
    chart.add_data(Reference(ws, min_col=1, max_col=3, min_row=3, max_row=5), from_rows=True,
                   titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=2, max_col=3, min_row=1, max_row=1))
    chart.height, chart.width = 9, 16
    ws.add_chart(chart, "F2")
    write_workbook_and_json(wb, paths["xlsx"], paths["json"], json.dumps(pooling_dict(result), indent=2, allow_nan=False) + "\n")
    return paths


def pooling_text(result: PoolingResult) -> str:
    """The terminal summary: the two costs, the latency in both, what training loses, the recommendation."""
    sep, pool = result.metrics["separate"], result.metrics["pooled"]
    p99 = pool["inference_p99_ms"]
    p99_sep = sep["inference_p99_ms"]
    lat = (f"inference p99 {p99:,.0f} ms in both" if p99 is not None and p99_sep is not None
           and abs(p99 - p99_sep) < 0.5 else
           f"inference p99 {p99_sep or 0:,.0f} ms separate, {p99 or 0:,.0f} ms pooled")
    lines = [
        f"separate: ${sep['total_cost_usd']:,.0f}, one pool with preemption: ${pool['total_cost_usd']:,.0f}; "
        f"{lat}; training loses {pool['training_lost_to_preemption_pct']:.1f} % to preemption"
        + (f" ({sep['training_lost_to_preemption_pct']:.1f} % separately, on spot)"
           if (sep['training_lost_to_preemption_pct'] or 0.0) > 0.05 else ""),
        "",
        f"  {'':<44}{'separate':>16}{'pooled':>16}",
    ]
    for key, label, fmt in ROWS:
        a, b = _get(sep, key), _get(pool, key)

        def f(v):
            if v is None:
                return "-"
            if fmt == "0.0%":
                return f"{v:.1%}"
            if "0.0" in fmt:
                return f"{v:,.1f}"
            return f"{v:,.0f}"
        lines.append(f"  {label[:44]:<44}{f(a):>16}{f(b):>16}")
    lines += ["", result.recommendation, judgement(result)]
    return "\n".join(lines)
