"""plan.xlsx: the workbook finance reads, with live formulas over the ``Prices`` sheet and their values cached.

Sheets, in the contract's order: Summary, Purchases, Allocation, Costs, Spot
economics, Prices, Demand, Assumptions; then Fleet (per-period view behind the
charts), Scenarios, Shortfall, Latency, Backfill, Showback, Cash flow, Inventory,
Shadow prices, Baseline. Every data sheet is an Excel table. Every cost on Costs,
Purchases, Baseline, Showback and Summary is a formula over quantities and Prices,
so editing a price moves every total that depends on it; each formula is written
with its value (what the planner computed), so readers without a calculation engine
(pandas, preview panes, openpyxl ``data_only``) see numbers. Text from inputs is
always written as text, never as a formula. Written with xlsxwriter, the one
Python writer that stores a formula together with its cached value."""

from __future__ import annotations

import numpy as np
import pandas as pd
from planner.results.bill import inventory_table
from planner.results.plan import Plan
from planner.report.workbook.book import ref, NAMES, SHEETS, VALUED_KINDS, _Book
from planner.report.workbook.costs import (_price_key, _write_baseline, _write_costs, _write_prices, _write_purchases,
                                          write_prices_as_solved)
from planner.report.workbook.detail import _write_assumptions, _write_backfill, _write_latency, _write_scenarios, _write_shadow_prices, _write_shortfall, _write_spot
from planner.report.workbook.money import _write_cash_flow, _write_inventory, _write_savings_plans, _write_showback, _write_showback_by_month
from planner.report.workbook.periods import with_path_prices, FLEET_CHART_POINTS, MAX_SHEET_ROWS, _period_grain, _write_allocation, _write_demand, _write_fleet, coarsen_allocation
from planner.report.workbook.memo import SOLVED_SHEET, memo_rows, write_memo_sheets
from planner.report.workbook.summary import _summary_layout, _write_summary


def write_workbook(plan: Plan, path) -> None:
    """Write ``plan`` to ``path`` (.xlsx). Call through :func:`planner.core.atomic.atomic_path`."""
    inp = plan.inputs
    book = _Book(path)
    ws = {name: book.sheet(name) for name in SHEETS}

    prices = inp.tables.prices.reset_index(drop=True)
    own = prices["scenario"].eq("") if "scenario" in prices else pd.Series(True, index=prices.index)
    price_row = {_price_key(r): i + 2 for i, r in enumerate(prices.itertuples()) if own.iat[i]}  # scenario rows: paths
    alloc, alloc_grain = coarsen_allocation(with_path_prices(plan, plan.allocation))
    grain_name, grain_code = _period_grain(plan)
    n_alloc = len(alloc)
    purchases = plan.purchases
    if "kind" in purchases:  # savings plans and resales have no Prices row of their own: values below
        purchases = purchases[~purchases["kind"].isin(VALUED_KINDS)]

    inventory = inventory_table(inp)
    summary_rows = _summary_layout(plan)
    memo = memo_rows(plan, purchases)
    name_row = {key: i + 2 + len(memo) for i, (key, *_rest) in enumerate(summary_rows)}
    horizon_ref = ref("Summary", "value", name_row["horizon_hours"])

    _write_prices(ws["Prices"], prices)
    _write_purchases(ws["Purchases"], plan, purchases, price_row, horizon_ref)
    _write_allocation(ws["Allocation"], plan, price_row, alloc)
    cost_rows, cost_values = _write_costs(ws["Costs"], plan, purchases, price_row, alloc)
    base_rows, baseline = _write_baseline(ws["Baseline"], plan, price_row)
    _write_summary(ws["Summary"], plan, summary_rows, cost_rows, purchases, inventory,
                   cost_values=cost_values, baseline=(base_rows, baseline), memo=memo)
    _write_spot(ws["Spot economics"], plan)
    _write_demand(ws["Demand"], plan, grain_code)
    fleet_code = grain_code or ("D" if inp.T > FLEET_CHART_POINTS and float(np.max(inp.hours)) < 24 else None)
    notes = []
    if alloc_grain:
        notes.append(f"Allocation is summed to {alloc_grain}s: its {len(plan.allocation):,} rows per period would "
                     f"pass {MAX_SHEET_ROWS:,}; allocation.csv has every period and the totals are exact (GPU-hours are sums).")
    if grain_name:
        notes.append(f"Demand and Fleet are averaged over {grain_name}s ({plan.inputs.T:,} periods).")
    elif fleet_code:
        notes.append(f"Fleet (the sheet behind the charts) is averaged per day: {plan.inputs.T:,} periods would "
                     "crowd a chart's axis; Demand keeps every period" + (
                         " (Allocation is summed, above; allocation.csv has every period)." if alloc_grain
                         else ", and so does Allocation."))
    unused = _nothing_to_show(plan)
    if unused:
        notes.append("Sheets with nothing to show in this plan are hidden, so they do not print (right-click a sheet "
                     "tab, Unhide): " + "; ".join(f"{name} ({why})" for name, why in unused.items()) + ".")
    _write_assumptions(ws["Assumptions"], plan, notes)
    _write_fleet(ws["Fleet"], plan, fleet_code)
    _write_scenarios(ws["Scenarios"], plan)
    _write_shortfall(ws["Shortfall"], plan)
    _write_latency(ws["Latency"], plan)
    _write_backfill(ws["Backfill"], plan)
    _write_showback(ws["Showback"], plan, n_alloc, len(purchases))
    _write_cash_flow(ws["Cash flow"], plan, purchases, price_row)
    _write_inventory(ws["Inventory"], inventory, price_row)
    _write_shadow_prices(ws["Shadow prices"], plan)
    _write_showback_by_month(ws["Showback by month"], plan)
    _write_savings_plans(ws["Savings plans"], plan)
    write_memo_sheets(ws, plan)
    rate = float(plan.finance.get("discount_rate", 0.0)) if plan.finance else 0.0
    write_prices_as_solved(book.sheet(SOLVED_SHEET), prices, rate)  # the check cell's copy (hidden, last)

    for key in NAMES:
        book.wb.define_name(key, "=" + ref("Summary", "value", name_row[key]))
    ws["Summary"].activate()
    for name in unused:
        ws[name].hide()
    book.wb.close()


def _nothing_to_show(plan: Plan) -> dict[str, str]:
    """The optional sheets this plan leaves empty (or holding a placeholder), with why: hidden from print."""
    out = {}
    if len(plan.inputs.scenarios) == 1:
        out["Scenarios"] = "one scenario: its costs are the Summary's"
    if plan.shortfall is None or not len(plan.shortfall):
        out["Shortfall"] = "every demand served"
    if plan.latency is None or not len(plan.latency):
        out["Latency"] = "no class sized by a latency SLO"
    if plan.backfill is None or not len(plan.backfill):
        out["Backfill"] = "no backfill class"
    if plan.shadow_prices is None:
        out["Shadow prices"] = "not computed"
    if plan.spend is None or not len(plan.spend):
        out["Savings plans"] = "no savings plan in the price sheet"
    return out
