"""``planner report PLAN_JSON --html OUT.html``: one self-contained page, readable offline.

plotly.js (the minified bundle plotly ships) is inlined once in the page's head; each figure is a JSON
block (``<script type="application/json" class="figure">``) drawn by one small script at the end, so
the page holds no URL to load and the figures' numbers can be read back from the file. The numbers come
from :mod:`planner.report.html_data`, the figures from :mod:`planner.report.html_figures`; see
docs/report.md for what each picture shows.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

from planner.core.errors import InputError, Problem
from planner.report import html_data as data
from planner.report import html_figures as figs

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1320px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#666;font-size:13px} .kpis{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}
.kpi{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:150px}
.kpi b{display:block;font-size:18px} .kpi span{color:#666;font-size:12px}
.ok{color:#1e7e34} .bad{color:#b02a37} .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(620px,1fr));gap:8px}
.plot{min-height:380px} table{border-collapse:collapse;font-size:12px;width:100%}
th,td{border-bottom:1px solid #e5e5e5;padding:4px 6px;text-align:right;white-space:nowrap}
th{background:#f6f6f6;position:sticky;top:0;white-space:normal;vertical-align:bottom} td.t,th.t{text-align:left}
.note{color:#666;font-size:12px} p.help{font-size:13px;color:#444;max-width:1000px} td.bad{color:#b02a37;font-weight:bold}
table.fit{table-layout:auto;width:100%;font-size:11px} table.fit td,table.fit th{white-space:normal;padding:3px 4px}
table.fit td.t,table.fit th{overflow-wrap:anywhere}
@media print{body{max-width:none;margin:0} table{font-size:8pt} div{overflow:visible!important} .plot{break-inside:avoid}}
"""

DRAW = """
document.querySelectorAll('script.figure').forEach(function (s) {
  var spec = JSON.parse(s.textContent);
  Plotly.newPlot(document.getElementById(s.dataset.target), spec.data, spec.layout,
                 {displaylogo: false, responsive: true});
});
"""


@dataclass
class Report:
    """What :func:`write_html` wrote: the path, its size in bytes, and how many figures it holds."""

    path: Path
    bytes: int
    figures: int
    notes: list


def _money(x) -> str:
    return "-" if x is None else f"${x:,.0f}"


def _gap(g) -> str:
    return f"{g:.2g}" if isinstance(g, (int, float)) else "-"


def _figure_block(fig, i: int) -> str:
    """A plot div and its figure as JSON (``</`` escaped so that no string can close the script)."""
    spec = fig.to_plotly_json()
    text = json.dumps({"data": spec["data"], "layout": spec["layout"]}, separators=(",", ":"),
                      allow_nan=False, default=_plain).replace("</", "<\\/")
    return (f'<div class="plot" id="fig-{i}"></div>\n'
            f'<script type="application/json" class="figure" data-target="fig-{i}">{text}</script>\n')


def _plain(x):
    """JSON for what plotly leaves in a figure dict (numpy numbers and arrays)."""
    import numpy as np

    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON: {type(x).__name__}")


def _header(h: dict, notes: list[str]) -> str:
    met = h["demand_met"]
    status = html.escape(str(h["status"]))
    cls = "ok" if h["status"] == "optimal" and met is not False else "bad"
    pct = f" ({h['savings_pct']:.1%})" if h["savings_pct"] is not None else ""
    kpis = [("total cost (this plan)", _money(h["total_usd"])),
            ("reserved / on-demand / spot" + "".join(f" / {k.replace('_', '-')}" for k in h.get("others", {})),
             " / ".join([_money(h[k]) for k in ("reserved_usd", "on_demand_usd", "spot_usd")]
                        + [_money(v) for v in h.get("others", {}).values()])),
            ("all on-demand baseline", _money(h["all_on_demand_usd"])),
            ("savings" + pct, _money(h["savings_usd"])), ("the bill (with inventory)", _money(h["bill_usd"])),
            ("commitment liability (full terms)", _money(h["commitment_usd"]))]
    sf = h["shortfall_gpu_hours"]
    kpis.append(("shortfall GPU-hours", "0" if not sf else f"{sf:,.1f}"))
    out = [f"<h1>{html.escape(str(h['name']))}: <span class='{cls}'>{status}</span>"
           + (" (demand met)" if met else " (demand not met)" if met is False else "") + "</h1>",
           f"<div class='sub'>horizon {h['start']:%Y-%m-%d %H:%M} to {h['end']:%Y-%m-%d %H:%M} "
           f"({h['hours']:,.0f} h, {h['periods']} periods); reserved cost {html.escape(str(h['accounting']))}; "
           f"gap {_gap(h['mip_gap'])}; run {html.escape(str(h['run_id']))}, written {html.escape(str(h['created_utc']))} "
           f"by planner {html.escape(str(h['planner_version']))}</div>",
           "<div class='kpis'>" + "".join(f"<div class='kpi'><b>{html.escape(v)}</b><span>{html.escape(k)}</span></div>"
                                          for k, v in kpis) + "</div>"]
    for n in h["notes"] + notes:
        out.append(f"<div class='note'>{html.escape(str(n))}</div>")
    return "\n".join(out)


def _cell(key: str, v) -> str:
    if v is None:
        return "<td></td>"
    if isinstance(v, bool):
        return f"<td class='t'>{'now' if v else 'planned'}</td>" if key == "firm" else f"<td>{v}</td>"
    if isinstance(v, float) and key.endswith("_usd"):
        return f"<td>{v:,.0f}</td>"
    if isinstance(v, float) and key == "effective_usd_per_gpu_hour":
        return f"<td>{v:.4f}</td>"
    if key in ("purchase_date", "active_from", "end_date") and isinstance(v, str):
        v = v[:10] if v[10:] in ("", "T00:00:00") else v[:16].replace("T", " ")
    if isinstance(v, (int, float)):
        return f"<td>{v:,.0f}</td>" if float(v).is_integer() else f"<td>{v:,.2f}</td>"
    return f"<td class='t'>{html.escape(str(v))}</td>"


def _table(tid: str, cols: list[tuple], rows: list[dict], red=None) -> str:
    """A table of ``rows`` (dicts) in ``cols`` ((key, title, kind): kind "t" text, "usd", "pct", "rate", "n")."""
    def cell(kind, v, bad=False):
        cls = " class='bad'" if bad else ""
        if v is None or (isinstance(v, float) and v != v):
            return "<td></td>"
        if kind == "t":
            return f"<td class='t{' bad' if bad else ''}'>{html.escape(str(v))}</td>"
        if kind == "usd":
            return f"<td{cls}>{_money(float(v))}</td>"
        if kind == "pct":
            return f"<td{cls}>{100 * float(v):.1f} %</td>"
        if kind == "rate":
            return f"<td{cls}>{float(v):.4f}</td>"
        return f"<td{cls}>{float(v):,.0f}</td>"
    head = "".join(f"<th class='t'>{html.escape(t)}</th>" if k == "t" else f"<th>{html.escape(t)}</th>"
                   for _c, t, k in cols)
    body = "".join("<tr>" + "".join(cell(k, r.get(c), bool(red and red(r))) for c, t, k in cols) + "</tr>"
                   for r in rows)
    return f"<table class='fit' id='{tid}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _memo_section(plan: dict) -> str:
    """The purchase memo: what to sign now (the whole commitment, NPV, upfront, fee, term end, own use and
    break-evens), NPV and payment options, cash by year, the downside and each tranche's utilisation."""
    m = data.memo(plan)
    out = ["<h2>The purchase memo</h2>"]
    if m["headline"]:
        out.append("<table class='fit' id='memo-headline'><tbody>" + "".join(
            f"<tr><td class='t'>{html.escape(label)}</td><td>"
            + (_money(v) if kind == "usd" else f"{100 * float(v):.1f} %") + "</td></tr>"
            for label, v, kind in m["headline"]) + "</tbody></table>")
    if m["sign_now"]:
        out.append("<h3>Sign now</h3>" + _table("memo-sign", [
            ("what", "purchase", "t"), ("commitment_usd", "whole commitment", "usd"), ("npv_usd", "NPV", "usd"),
            ("upfront_usd", "upfront", "usd"), ("monthly_recurring_usd", "monthly fee", "usd"),
            ("end_date", "term end", "t"), ("avg_utilisation", "its own use", "pct"),
            ("break_even_utilisation", "break-even vs on-demand", "pct"),
            ("break_even_vs_nothing", "break-even if all its work could run on spot", "pct"), ("verdict", "", "t")],
            m["sign_now"], red=lambda r: str(r.get("verdict", "")).startswith("DOES NOT")))
    else:
        out.append("<p class='note'>Nothing to sign now.</p>")
    out.append(f"<p class='help'>NPV of the plan's cash to the last term's end: <b>{_money(m['npv_usd'])}</b> at "
               f"{100 * m['rate']:.1f} % a year.</p>")
    if m["payments"]:
        out.append("<h3>Payment options</h3>" + _table("memo-payments", [
            ("pool", "pool", "t"), ("upfront_option", "upfront option", "t"), ("upfront_npv_usd", "its NPV", "usd"),
            ("other_option", "other option", "t"), ("other_npv_usd", "its NPV", "usd"), ("cheaper", "cheaper", "t"),
            ("break_even_rate", "cost the same at (a year)", "pct")], m["payments"]))
        out.append("<p class='note'>Below the break-even cost of capital paying upfront is cheaper, above it paying "
                   "monthly (the IRR of the difference of their cash flows).</p>")
    if m["cash_by_year"]:
        out.append("<h3>Cash by year</h3>" + _table("memo-cash", [
            ("label", "year", "t"), ("months", "months", "n"), ("upfront_usd", "upfront", "usd"),
            ("reserved_recurring_usd", "recurring", "usd"), ("on_demand_usd", "on-demand", "usd"),
            ("spot_usd", "spot", "usd"),
            *((k, k[:-4].replace("_", "-"), "usd") for k in (m["cash_by_year"][0] if m["cash_by_year"] else {})
              if k.endswith("_usd") and k[:-4] in data.OTHER_RENTED),
            ("owned_recurring_usd", "owned fees", "usd"),
            ("total_usd", "total (owned fees included)", "usd")], m["cash_by_year"]))
    if m["downside"]:
        out.append("<h3>Downside: demand lower, purchases fixed, re-solved</h3>" + _table("memo-downside", [
            ("shock", "demand lower by", "pct"), ("full_term_cost_usd", "cost over the whole terms", "usd"),
            ("reserved_utilisation", "reserved utilisation", "pct"), ("stranded_usd", "stranded (held, not used)", "usd"),
            ("stranded_increase_usd", "stranded increase", "usd")], m["downside"]))
    if m["term_downside"]:
        out.append(f"<h3>Over each purchase's whole term, demand {100 * float(m['term_downside'][0]['shock']):.0f} % "
                   "lower</h3>" + _table("memo-term-downside", [
                       ("purchase_date", "bought", "t"), ("gpu_type", "GPU type", "t"), ("region", "region", "t"),
                       ("option", "option", "t"), ("gpus", "GPUs", "n"), ("used_share", "used", "pct"),
                       ("unused_usd", "left unused", "usd"), ("full_term_usd", "whole term", "usd"),
                       ("saving_vs_nothing_usd", "saves against buying nothing", "usd"),
                       ("break_even_demand_level", "stops paying below demand", "pct")], m["term_downside"],
                       red=lambda r: float(r.get("saving_vs_nothing_usd") or 0) < 0))
    if m["tranches"]:
        out.append("<h3>Each tranche's own (marginal) utilisation</h3>" + _table("memo-tranches", [
            ("purchase_date", "bought", "t"), ("firm_text", "firm", "t"), ("gpu_type", "GPU type", "t"),
            ("region", "region", "t"), ("option", "option", "t"), ("gpus", "GPUs", "n"),
            ("stack_position", "stack position", "n"), ("avg_utilisation", "average use", "pct"),
            ("min_utilisation", "lowest", "pct"), ("break_even_utilisation", "break-even", "pct"),
            ("net_savings_usd", "net savings (horizon)", "usd")], m["tranches"],
            red=lambda r: not r.get("pays", True)))
    return "\n".join(out)


def _purchases_table(rows: list[dict]) -> str:
    if not rows:
        return "<p class='note'>Nothing is bought: every row of reserved_purchases has 0 instances.</p>"
    head = "".join(f"<th class='t'>{html.escape(t)}</th>" if k in ("purchase_date", "firm", "gpu_type", "region",
                                                                  "option", "active_from", "end_date")
                   else f"<th>{html.escape(t)}</th>" for k, t in data.PURCHASE_COLUMNS)
    body = "".join("<tr>" + "".join(_cell(k, r.get(k)) for k, _ in data.PURCHASE_COLUMNS) + "</tr>" for r in rows)
    return (f"<div style='overflow-x:auto'><table class='fit' id='purchases'><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            "</table></div>")


HELP = {
    "ldc": "Each pool's hours sorted from the busiest down (a screening curve): a point (x, y) says demand served there "
           "was y GPUs or more for x hours of the horizon. Dashed: the reserved GPUs owned (bought + inventory). "
           "Dotted: the break-even hours, reserved effective price x horizon hours / on-demand price (dash-dot: the "
           "same against spot, where the pool uses spot). The n-th GPU is busy as many hours as the curve stays above "
           "n: reserving it pays when that is longer than break-even. So where the plan reserved, the curve passes "
           "near the reserved level at the break-even hours; GPUs above the level are busy fewer hours and are "
           "rented. Inventory is sunk (its price is shown for reference), and flexible classes move between pools, "
           "so a pool's curve is the plan's routing, not raw demand.",
    "mix": "What serves demand over time, every pool added: reserved GPUs in use, on-demand and spot, stacked; the "
           "dotted line is the reserved GPUs owned, so the gap below it is reserved capacity left idle.",
    "ladder": "The reserved GPUs held at each date, one band per purchase date (inventory first): tranches start "
              "(after their lead time) and end with their terms.",
    "cash": "Cash per calendar month to the end of the last term, by kind: upfronts in the purchase months, recurring "
            "fees every month of a term, on-demand and spot within the horizon; money coming back is below zero.",
}


def render_html(plan_path: str | Path) -> tuple[str, int, list[str]]:
    """The page for the plan.json at ``plan_path``: (html text, number of figures, notes on what was missing)."""
    import plotly.offline

    plan = data.load_plan(plan_path)
    fleet, note = data.read_fleet(plan_path, plan)
    notes = [note] if note else []
    curves = data.pool_curves(plan, fleet)
    blocks, n = [], 0
    parts = [f"<h2>Load-duration curves per pool</h2><p class='help'>{HELP['ldc']}</p><div class='grid'>"]
    for c in curves:
        parts.append(_figure_block(figs.load_duration_figure(c), n))
        n += 1
    if not curves:
        parts.append("<p class='note'>No pool serves any demand or holds any reserved GPU.</p>")
    parts.append("</div>")
    parts.append(f"<h2>Fleet mix</h2><p class='help'>{HELP['mix']}</p>")
    parts.append(_figure_block(figs.fleet_mix_figure(data.fleet_mix(plan, fleet)), n))
    n += 1
    parts.append(f"<h2>The ladder: GPUs owned by vintage</h2><p class='help'>{HELP['ladder']}</p>")
    parts.append(_figure_block(figs.vintage_figure(data.vintages(plan)), n))
    n += 1
    parts.append(f"<h2>Cash by month</h2><p class='help'>{HELP['cash']}</p>")
    parts.append(_figure_block(figs.cash_figure(data.cash(plan)), n))
    n += 1
    parts.append("<h2>Purchases</h2>" + _purchases_table(data.purchases(plan)))
    parts.insert(0, _memo_section(plan))
    blocks.extend(parts)
    title = html.escape(f"{plan.get('name') or 'plan'}: plan report")
    page = ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{title}</title><style>{STYLE}</style>\n"
            f"<script type='text/javascript'>{plotly.offline.get_plotlyjs()}</script>\n</head><body>\n"
            + _header(data.header(plan), notes) + "\n" + "\n".join(blocks)
            + f"\n<script type='text/javascript'>{DRAW}</script>\n</body></html>\n")
    return page, n, notes


def write_html(plan_path: str | Path, out: str | Path) -> Report:
    """Write the report of ``plan_path`` (plan.json) to ``out`` whole or not at all (temporary file + rename).

    ``out`` must be a file path that is not one of the plan's own files (plan.json, fleet.csv beside it)."""
    from planner.core.atomic import write_text

    plan_path, out = Path(plan_path), Path(out)
    if out.is_dir():
        raise InputError(Problem("--html", "is a folder", value=str(out), expected="the path of the .html file to write"))
    own = {Path(plan_path).resolve(), Path(plan_path).with_name("fleet.csv").resolve()}
    if out.resolve() in own:
        raise InputError(Problem("--html", "would overwrite the plan's own file", value=str(out),
                                 expected="a new .html file"))
    page, n, notes = render_html(plan_path)
    write_text(out, page)
    return Report(out, out.stat().st_size, n, notes)
