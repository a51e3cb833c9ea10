"""The Summary sheet: the purchase memo, the totals and the charts."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from planner import __version__
from planner.results.bill import inventory_table
from planner.results.plan import Plan
from planner.report.provenance import provenance
from planner.report.workbook.book import span, DATE, F, INT, NUM, PCT, RATE, RED, USD0, _Sheet, _date, _plus
from planner.report.workbook.costs import _spend_rows
from planner.report.workbook.money import _cash_npv_column
from planner.inputs import rented, supply


def _summary_layout(plan: Plan) -> list[tuple]:
    """(name, label, note) rows of the Summary table; the named ones carry defined names."""
    return [
        ("total_cost_usd", "Total expected cost", "reserved + on-demand + spot over the horizon: what this plan decides"),
        ("already_committed_usd", "Already committed (inventory owned)",
         "Inventory sheet: commitments signed before, priced for their hours in the horizon (sunk: the plan "
         "cannot change them, so they are not in the objective)"),
        ("bill_usd", "The bill for the horizon", "new decisions + already committed: what will be paid"),
        ("reserved_cost_usd", "Reserved (" + ("full term, whatever lies past the horizon" if
                               plan.inputs.config.commitments.accounting == "full_term" else
                               "amortised over the horizon hours each purchase is active") + ")",
         "Costs sheet, reserved rows"),
        ("on_demand_cost_usd", "On-demand", "Costs sheet, on-demand rows"),
        ("spot_cost_usd", "Spot", "every spot GPU-hour paid, only its goodput share useful"),
        *((f"{k}_cost_usd", supply.get(k).name.replace("_", "-").capitalize() + " (queued capacity)",
           "Costs sheet: GPUs granted after a queue, for classes that wait (max_start_delay_hours)")
          for k in rented.reported(plan.inputs.pools) if k not in rented.ALWAYS),
        ("all_on_demand_usd", "All on-demand baseline", "same demand with headroom (and spares), cheapest allowed pool"),
        ("savings_usd", "Savings against all on-demand", _savings_note(plan)),
        ("savings_pct", "Savings %", ""),
        ("commitment_usd", "Commitment liability (cash over the terms)", "Purchases sheet"),
        ("amortised_usd", "Reserved cost amortised over the horizon", "Purchases sheet, horizon_cost_usd"),
        ("liability_past_horizon_usd", "Liability falling after the horizon ends"
         + (" or in its gaps" if (plan.commitments or {}).get("liability_in_gaps_usd", 0.0) > 0.005 else ""),
         _liability_note(plan)),
        ("reserved_utilisation", "Reserved utilisation (as solved)", "reserved GPU-hours used / owned"),
        ("shortfall_gpu_hours", "Shortfall (GPU-hours not met) (as solved)", "0 when every class's demand is met; "
         "Shortfall sheet: which class, when, why"),
        *((("worst_case_usd", "Worst-case scenario cost (as solved)", "Scenarios sheet"),
           ("vss_usd", "Value of the stochastic solution (as solved)", "expected saving over planning on the mean forecast"),
           ("evpi_usd", "Value of perfect information (as solved)", "what a perfect forecast would save"))
          if len(plan.inputs.scenarios) > 1 else ()),  # one scenario: no worst case, VSS or EVPI to show
        ("discount_rate", "Discount rate (a year)", "[finance] discount_rate; editable: the Cash flow sheet "
         "discounts month m (0 = the first) by (1 + rate)^(-m/12)"),
        ("npv_usd", "NPV of the cash, to the last term's end", "Cash flow sheet, discounted_usd (plan.json npv_usd)"),
        ("status", "Solver status", "optimal = proven within the gap"),
        ("mip_gap", "Achieved relative gap", ""),
        ("backend", "Solver", ""),
        ("solve_seconds", "Solve time (s)", ""),
        ("horizon_hours", "Horizon (hours)", ""),
        ("periods", "Periods", ""),
        ("horizon_start", "First period", ""),
        ("penalty", "Shortfall penalty (USD per GPU-hour)", "M in the formulation"),
        ("version", "Planner version", ""),
    ]


def _savings_note(plan: Plan) -> str:
    """What the savings compare, and the figure net of the inventory (the baseline rents its share too)."""
    owned = float(inventory_table(plan.inputs)["horizon_cost_usd"].sum())
    note = "baseline - total cost"
    if owned > 0 and plan.baseline_all_on_demand == plan.baseline_all_on_demand:
        note += ("; the baseline also rents on demand what the inventory serves: against the bill (inventory "
                 "included) the saving is the memo's \"Saving against all on-demand\" note (live)")
    if plan.shortfall_gpu_hours > 1e-6:
        note += "; part of it is demand the plan does not meet (Shortfall)"
    return note


def _liability_note(plan: Plan) -> str:
    """The plain sentence when most of the liability falls past the forecast; the Cash flow sheet otherwise."""
    c = plan.commitments
    full = c.get("reserved_full_term_usd", 0.0)
    past = c.get("liability_past_horizon_usd", 0.0) - c.get("liability_in_gaps_usd", 0.0)  # (gaps: before the end)
    if full > 0 and past > 0.5 * full:
        t = plan.term or {}
        judged = (f"each was judged on {t.get('tail_months', 0):.0f} months of demand past it ({t.get('source')}, "
                  f"{t.get('branches')} branches: plan.json term)" if t.get("judge") == "term"
                  else "the plan assumes demand past the forecast keeps them busy")
        gaps = c.get("liability_in_gaps_usd", 0.0)
        return (f"{100 * past / full:.0f} % of the commitments signed is owed after the forecast ends: {judged}"
                + (f" (this row adds ${gaps:,.0f} owed in the horizon's gaps, time between its periods)"
                   if gaps > 0.005 else "") + ". Cash flow sheet: when each dollar is paid")
    return "Cash flow sheet: when each dollar is paid"


def _write_summary(ws, plan: Plan, layout: list[tuple], cost_rows: int, purchases: pd.DataFrame,
                   inventory: pd.DataFrame, cost_values: dict, baseline: tuple[int, float], memo: list) -> None:
    s = _Sheet(ws, ["item", "value", "note"], wrap=("item", "note"))
    widths = {"item": 32, "value": 16, "note": 40}  # portrait at 8 pt or more (book.print_readable)
    s.header(widths)  # printed at 8.5 pt or more (book.print_readable): the decision's rows come first

    def put(values: list) -> None:  # one row, as tall as its wrapped item and note need
        s.append(values)
        lines = max(_lines(values[0], widths["item"]), _lines(values[2], widths["note"]))
        if lines > 1:
            ws.set_row(s.rows - 1, 15 * lines)
    stale = []
    for label, value, fmt, note, red, *solved in memo:  # the purchase memo first: what to sign, cash, savings, downside
        put([s.cell(label, None, RED if red else None) if red else label, s.cell(value, fmt),
             note if isinstance(note, F) else s.text(note)])  # a note quoting the rate is a live text formula
        if solved and solved[0]:
            stale.append(s.rows - 1)
    inp = plan.inputs
    costs = lambda name: span("Costs", name, 2, cost_rows)  # noqa: E731
    last_p = max(len(purchases) + 1, 2)
    row_of = {key: i + 2 + len(memo) for i, (key, *_r) in enumerate(layout)}
    short = plan.shortfall_gpu_hours
    total = sum(cost_values.values())
    committed = float(inventory["horizon_cost_usd"].sum()) if len(inventory) else 0.0
    base_rows, base = baseline
    savings = base - total
    npv_col, npv_rows = _cash_npv_column(plan, purchases)
    spend_rows = _spend_rows(plan)
    sp_sum = lambda col: float((spend_rows[col] * (spend_rows["probability"] if "probability" in spend_rows  # noqa: E731
                                                   else 1.0)).sum()) if len(spend_rows) else 0.0  # savings plans, resales
    prob = purchases["probability"] if "probability" in purchases else 1.0

    def weighted(col: str) -> float:  # a purchase that waits counts at its branch's probability (expected)
        return float((purchases[col] * prob).sum())

    def expected(col: str) -> str:
        return (f"SUMPRODUCT({span('Purchases', col, 2, last_p)},"
                f"{span('Purchases', 'probability', 2, last_p)})")
    values = {
        "total_cost_usd": (F(f"=SUM({costs('cost_usd')})", total), USD0),
        "already_committed_usd": (F(f"=SUM({span('Inventory', 'horizon_cost_usd', 2, max(len(inventory) + 1, 2))})", committed), USD0),
        "bill_usd": (F(f"=B{row_of['total_cost_usd']}+B{row_of['already_committed_usd']}", total + committed), USD0),
        "reserved_cost_usd": (F(f'=SUMIFS({costs("cost_usd")},{costs("cost_kind")},"reserved")', cost_values["reserved"]), USD0),
        "on_demand_cost_usd": (F(f'=SUMIFS({costs("cost_usd")},{costs("cost_kind")},"on_demand")', cost_values["on_demand"]), USD0),
        "spot_cost_usd": (F(f'=SUMIFS({costs("cost_usd")},{costs("cost_kind")},"spot")', cost_values["spot"]), USD0),
        **{f"{k}_cost_usd": (F(f'=SUMIFS({costs("cost_usd")},{costs("cost_kind")},"{k}")', cost_values[k]), USD0)
           for k in rented.reported(inp.pools) if k not in rented.ALWAYS},
        "all_on_demand_usd": (F(f"=SUM({span('Baseline', 'baseline_usd', 2, max(base_rows, 2))})", base), USD0),
        "savings_usd": (F(f"=B{row_of['all_on_demand_usd']}-B{row_of['total_cost_usd']}", savings), USD0),
        "savings_pct": (F(f"=IF(B{row_of['all_on_demand_usd']}>0,B{row_of['savings_usd']}/B{row_of['all_on_demand_usd']},0)",
                          savings / base if base > 0 else 0.0), PCT),
        "commitment_usd": (F(f"={expected('commitment_usd')}{_plus(sp_sum('commitment_usd'))}",
                             weighted("commitment_usd") + sp_sum("commitment_usd")), USD0),
        "amortised_usd": (F(f"={expected('horizon_cost_usd')}{_plus(sp_sum('horizon_cost_usd'))}",
                            weighted("horizon_cost_usd") + sp_sum("horizon_cost_usd")), USD0),
        "liability_past_horizon_usd": (F(f"={expected('liability_past_horizon_usd')}"
                                         f"{_plus(sp_sum('liability_past_horizon_usd'))}",
                                         weighted("liability_past_horizon_usd")
                                         + sp_sum("liability_past_horizon_usd")), USD0),
        "reserved_utilisation": (plan.reserved_utilisation, PCT),
        "shortfall_gpu_hours": (short, NUM),
        "worst_case_usd": (plan.risk.worst_case_usd if plan.risk else plan.cost["total"], USD0),
        "vss_usd": (plan.risk.vss_usd if plan.risk else 0.0, USD0),
        "evpi_usd": (plan.risk.evpi_usd if plan.risk else 0.0, USD0),
        "status": (plan.status.value, None),
        "mip_gap": (plan.solve.mip_gap, "0.00E+00"),
        "backend": (plan.solve.backend, None),
        "solve_seconds": (round(plan.solve.seconds, 2), "0.00"),
        "horizon_hours": (inp.horizon_hours, "#,##0.##"),
        "periods": (inp.T, INT),
        "horizon_start": (_date(inp.periods[0]), DATE),
        "penalty": (inp.penalty, RATE),
        "version": (__version__, None),
        "discount_rate": (float(plan.finance.get("discount_rate", 0.0)) if plan.finance else 0.0, "0.00%"),
        "npv_usd": (F(f"=SUM('Cash flow'!${npv_col}$2:${npv_col}${max(npv_rows + 1, 2)})",
                      float(plan.finance.get("npv_usd", 0.0)) if plan.finance else 0.0), USD0),
    }
    for key, label, note in layout:
        value, fmt = values[key]
        font = RED if key == "shortfall_gpu_hours" and short > 1e-6 else None
        cell = s.cell(value, fmt, font) if not isinstance(value, str) or isinstance(value, F) else s.text(value)
        put([label, cell, note])
        if label.endswith("(as solved)"):  # a figure of the solve, not a formula: red with the check cell
            stale.append(s.rows - 1)
    _check_formats(ws, stale)
    for r in plan.purchases[supply.mask(plan.purchases["kind"], dated_by="resale") & (plan.purchases["instances"] > 0)].itertuples() \
            if "kind" in plan.purchases else []:  # resales planned: what to sell, when
        put(["Sell later (planned)", s.cell(float(-r.gpus), INT),
                  s.text(f"GPUs: {int(r.instances):,} instances of {r.gpu_type} {r.option} in {r.region}, on "
                         f"{pd.Timestamp(r.purchase_date).date()} (resale){_if_branch(r)}; saves "
                         f"${-r.commitment_usd:,.0f} of the term")])
    for b in (plan.budget.itertuples() if plan.budget is not None else []):  # the [budget] caps and the spend
        what = "total" if b.name == "budget_total" else b.name.replace("budget_month_", "").replace("_", "-")
        put([f"Budget {what}", s.cell(float(b.spend_usd), USD0, RED if b.binding else None),
                  s.text(f"spend of a cap of ${b.cap_usd:,.0f}" + (": binding (Shadow prices: what one more USD "
                                                                    "is worth)" if b.binding else ""))])
    prov = provenance(plan)
    for f in prov["files"]:  # the file's name in the value; its whole path and digest in the wrapped note
        put([f"Input: {f['role']}", s.text(Path(f["path"]).name), s.text(f"{f['path']}; sha256 {f['sha256']}")])
    used = prov["solver"]
    put(["Solver used", s.text(used["backend"]), s.text(f"time limit {used['time_limit_s']:g} s, gap limit "
                                                       f"{used['mip_gap_limit']:g}, as run (command-line overrides included)")])
    put(["Written (UTC)", s.text(str(prov["created_utc"])[:10]), s.text(f"{prov['created_utc']}; run id {plan.run_id}")])
    s.table("Summary")
    ws.print_area(0, 0, s.rows - 1, 2)  # the table prints; the chart (the cost rows above, drawn) is for the screen:
    _summary_charts(ws, plan, row_of, s.rows + 1)  # printed, it split across pages


def _check_formats(ws, stale: list[int]) -> None:
    """Red fill on the memo's check cell (B2) and on every (as solved) row's item and value once it says edited."""
    from planner.report.workbook.memo import CHECK_EDITED

    red = ws.planner_book.wb.add_format({"bg_color": "#FFC7CE", "font_color": "#9C0006", "bold": True})
    when = {"type": "formula", "criteria": f'=$B$2="{CHECK_EDITED}"', "format": red}
    ws.conditional_format(1, 1, 1, 1, when)
    for r in stale:
        ws.conditional_format(r, 0, r, 1, when)


def _summary_charts(ws, plan: Plan, row_of: dict, first_free: int) -> None:
    chart = ws.planner_book.wb.add_chart({"type": "column"})
    first, last = row_of["reserved_cost_usd"] - 1, row_of["spot_cost_usd"] - 1
    chart.add_series({"name": "Expected cost", "categories": ["Summary", first, 0, last, 0],
                      "values": ["Summary", first, 1, last, 1],
                      "data_labels": {"value": True, "num_format": '"$"#,##0.0,,"M"'}})  # millions: one line
    chart.set_title({"name": "Expected cost by option (USD)"})
    chart.set_legend({"none": True})
    chart.set_y_axis({"min": 0, "name": "USD", "num_format": USD0})
    chart.set_size({"width": 620, "height": 260})
    ws.insert_chart(first_free, 0, chart)  # below the table: the page stays one column wide


def _lines(text, width: int) -> int:
    """Lines ``text`` wraps to in a column ``width`` characters wide (at least 1)."""
    value = getattr(text, "value", text)
    if not isinstance(value, str) or not value:
        return 1
    # word-wrapped at the characters a line holds: Excel fits about 1.15 x the column's width of text (the width
    # counts digits; text runs narrower), LibreOffice more (a little space left below the row there)
    # a long unbroken word (a sha256, a path) is digits and letters as wide as the column's unit: 1 x there
    factor = 1.0 if any(len(w) > 24 for w in value.split()) else 1.15
    return max(1, len(textwrap.wrap(value, width=max(int(width * factor), 1), break_long_words=True)))


def _if_branch(r) -> str:
    """ ", if <branch> (p %)" for a purchase row of one branch of the scenario tree; "" for one made whatever happens."""
    branch = getattr(r, "branch", "all")
    if not isinstance(branch, str) or branch in ("", "all"):
        return ""
    p = getattr(r, "probability", None)
    return f", if {branch}" + (f" ({float(p):.0%})" if p is not None and np.isfinite(float(p)) else "")
