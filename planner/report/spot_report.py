"""The sweep workbook of ``planner spot --sweep ... --xlsx`` (spot runs, and failure runs)."""

from __future__ import annotations

from planner.core.atomic import atomic_path
from planner.report.json_export import jsonable

#: the second chart: the first of these columns the sweep has, with its title
_SECOND_CHART = [("effective_usd_per_useful_gpu_hour", "Effective USD per useful GPU-hour"),
                 ("lost_gpu_hours_per_hour", "GPU-hours lost per hour")]


def write_spot_sweep(path, rows: list[dict], cols: list[str], key: str) -> None:
    """The ``planner spot --sweep`` workbook: the table, goodput and price (or loss) charts (whole or not at all).

    The charts find their columns by name (``goodput``; ``effective_usd_per_useful_gpu_hour`` for spot,
    ``lost_usd_per_month`` or else ``lost_gpu_hours_per_hour`` for failures), so a failure run's sheet
    carries no spot column.
    """
    from openpyxl import Workbook
    from openpyxl.chart import LineChart, Reference

    wb = Workbook()
    ws = wb.active
    ws.title = "Sweep"
    ws.append(cols)
    for r in rows:
        ws.append([("yes" if r[c] else "no") if isinstance(r[c], bool) else jsonable(r[c]) for c in cols])
    n = len(rows) + 1
    chart = LineChart()
    chart.title = f"Goodput against {key.replace('_', ' ')}"
    chart.add_data(Reference(ws, min_col=cols.index("goodput") + 1, min_row=1, max_row=n), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n))
    ws.add_chart(chart, "H2")
    second = [("lost_usd_per_month", "Goodput lost, USD per month")] if "spot_pays" not in cols else []
    for col, title in second + _SECOND_CHART:
        if col in cols:
            price = LineChart()
            price.title = title
            price.add_data(Reference(ws, min_col=cols.index(col) + 1, min_row=1, max_row=n), titles_from_data=True)
            price.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n))
            ws.add_chart(price, "H20")
            break
    with atomic_path(path) as tmp:
        wb.save(tmp)
