"""The spot sweep workbook of ``planner spot --sweep ... --xlsx``."""

from __future__ import annotations

from ..atomic import atomic_path
from .json_export import jsonable


def write_spot_sweep(path, rows: list[dict], cols: list[str], key: str) -> None:
    """The ``planner spot --sweep`` workbook: the table, goodput and effective price charts (whole or not at all)."""
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
    chart.add_data(Reference(ws, min_col=4, min_row=1, max_row=n), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n))
    ws.add_chart(chart, "H2")
    price = LineChart()
    price.title = "Effective USD per useful GPU-hour"
    price.add_data(Reference(ws, min_col=5, min_row=1, max_row=n), titles_from_data=True)
    price.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n))
    ws.add_chart(price, "H20")
    with atomic_path(path) as tmp:
        wb.save(tmp)
