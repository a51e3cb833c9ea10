"""plan.xlsx: the workbook finance reads, with live formulas over the ``Prices`` sheet.

Sheets, in the contract's order: Summary, Purchases, Allocation, Costs, Spot
economics, Prices, Demand, Assumptions; then Fleet (per-period view behind the
charts). Every sheet is an Excel table. Every cost on Costs, Purchases and
Summary is a formula over quantities and Prices, so editing a price moves every
total that depends on it. Text from inputs is always written as text, never as
a formula.
"""

from __future__ import annotations

import datetime as dt
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.chart import AreaChart, BarChart, LineChart, Reference
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.filters import AutoFilter
from openpyxl.worksheet.table import Table, TableColumn, TableStyleInfo

from .. import __version__
from ..results import Plan
from .provenance import provenance
from ..bill import inventory_table
from ..units import HOURS_PER_MONTH

USD = '"$"#,##0.00'
USD0 = '"$"#,##0'
RATE = '"$"#,##0.0000'
NUM = "#,##0.00"
INT = "#,##0"
PCT = "0.0%"
DATE = "yyyy-mm-dd hh:mm"
BOLD = Font(bold=True)
RED = Font(bold=True, color="C00000")
HEAD_FILL = PatternFill("solid", fgColor="DDEBF7")
SHEETS = ("Summary", "Purchases", "Allocation", "Costs", "Spot economics", "Prices", "Demand", "Assumptions", "Fleet",
          "Scenarios", "Shortfall", "Latency", "Backfill", "Showback", "Cash flow", "Inventory", "Shadow prices")
NAMES = ("total_cost_usd", "reserved_cost_usd", "on_demand_cost_usd", "spot_cost_usd",
         "all_on_demand_usd", "savings_usd", "horizon_hours", "already_committed_usd", "bill_usd")


class F(str):
    """A formula this module wrote. Any other string is written as text, whatever it starts with."""


@dataclass
class _Sheet:
    """A write-only sheet that knows its columns, formats and row count."""

    ws: object
    columns: list[str]
    formats: dict[str, str] = field(default_factory=dict)
    rows: int = 1

    def cell(self, value, fmt: str | None = None, font=None):
        c = WriteOnlyCell(self.ws, value=value)
        if fmt:
            c.number_format = fmt
        if font:
            c.font = font
        return c

    def text(self, value):
        """Input text: always a string cell, never a formula, whatever it starts with."""
        c = WriteOnlyCell(self.ws, value=None if value is None else str(value))
        if value is not None:
            c.data_type = "s"
        return c

    def header(self, widths: dict[str, int] | None = None):
        for i, name in enumerate(self.columns, 1):
            self.ws.column_dimensions[get_column_letter(i)].width = (widths or {}).get(name, max(12, len(name) + 3))
        self.ws.freeze_panes = "A2"
        head = []
        for c in self.columns:  # headers can be class names: text, never formulas
            cell = self.text(c)
            cell.font = BOLD
            head.append(cell)
        self.ws.append(head)

    def append(self, values: list):
        row = []
        for name, v in zip(self.columns, values):
            if hasattr(v, "data_type"):
                row.append(v)
            elif isinstance(v, F):
                row.append(self.cell(str(v), self.formats.get(name)))
            elif isinstance(v, str):
                # openpyxl stores a plain str as text unless it starts with "=": only those need forcing
                row.append(self.text(v) if v.startswith("=") else v)
            elif v is None or (isinstance(v, float) and not np.isfinite(v)):
                row.append(None)
            else:
                row.append(self.cell(v, self.formats.get(name)))
        self.ws.append(row)
        self.rows += 1

    def col(self, name: str) -> str:
        return get_column_letter(self.columns.index(name) + 1)

    def ref(self, name: str, row: int, absolute: bool = True) -> str:
        c = self.col(name)
        return f"${c}${row}" if absolute else f"{c}{row}"

    def table(self, display: str):
        if self.rows == 1:  # a table needs a data row
            self.ws.append([None] * len(self.columns))
            self.rows += 1
        last = get_column_letter(len(self.columns))
        ref = f"A1:{last}{self.rows}"
        t = Table(displayName=display, ref=ref, autoFilter=AutoFilter(ref=ref))
        # write-only sheets cannot read their header back: name the columns here
        t.tableColumns = [TableColumn(id=i, name=c) for i, c in enumerate(self.columns, 1)]
        t.tableStyleInfo = TableStyleInfo(name="TableStyleMedium2", showRowStripes=True)
        with warnings.catch_warnings():  # openpyxl warns that write-only tables need the columns we just gave
            warnings.simplefilter("ignore", UserWarning)
            self.ws.add_table(t)


def _q(sheet: str) -> str:
    return f"'{sheet}'" if " " in sheet else sheet


def _date(ts) -> dt.datetime:
    return pd.Timestamp(ts).to_pydatetime()


MAX_SHEET_ROWS = 200_000  # past this the Allocation sheet is aggregated to days, then weeks, then months
MAX_PERIOD_ROWS = 30_000  # the same for the per-period sheets (Demand, Fleet and its charts): 3 years hourly fit
_GRAINS = (("day", "D"), ("week", "W"), ("month", "M"))


def _grain(periods: pd.Series, grain: str) -> pd.Series:
    return periods.dt.floor("D") if grain == "D" else periods.dt.to_period(grain).dt.start_time


def coarsen_allocation(a: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """``a`` (the plan's allocation) as it fits a sheet: per period, or summed to days, weeks or months.

    Aggregated rows keep the sums (hours, GPU-hours) and the average GPUs (GPU-hours / hours), so the
    Costs formulas over the sheet give the same totals. Returns the rows and the grain's name (None =
    per period)."""
    if len(a) <= MAX_SHEET_ROWS:
        return a, None
    keys = ["scenario", "workload_class", "gpu_type", "region", "option"]
    for name, code in _GRAINS:
        g = a.assign(period=_grain(a["period"], code)).groupby(keys + ["period"], sort=False)[
            ["hours", "gpu_hours"]].sum().reset_index()
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


def write_workbook(plan: Plan, path) -> None:
    """Write ``plan`` to ``path`` (.xlsx). Call through :func:`planner.atomic.atomic_path`."""
    inp = plan.inputs
    wb = Workbook(write_only=True)
    ws = {name: wb.create_sheet(name) for name in SHEETS}

    prices = inp.tables.prices.reset_index(drop=True)
    price_row = {_price_key(r): i + 2 for i, r in enumerate(prices.itertuples())}
    alloc, alloc_grain = coarsen_allocation(plan.allocation)
    grain_name, grain_code = _period_grain(plan)
    n_alloc = len(alloc)
    purchases = plan.purchases.reset_index(drop=True)

    inventory = inventory_table(inp)
    summary_rows = _summary_layout(plan)
    name_row = {key: i + 2 for i, (key, *_rest) in enumerate(summary_rows)}
    horizon_ref = f"Summary!$B${name_row['horizon_hours']}"

    _write_prices(ws["Prices"], prices)
    _write_purchases(ws["Purchases"], plan, purchases, price_row, horizon_ref)
    _write_allocation(ws["Allocation"], plan, price_row, alloc)
    cost_rows = _write_costs(ws["Costs"], plan, purchases, price_row, horizon_ref, n_alloc)
    _write_summary(ws["Summary"], plan, summary_rows, cost_rows, len(purchases), len(inventory))
    _write_spot(ws["Spot economics"], plan)
    _write_demand(ws["Demand"], plan, grain_code)
    notes = []
    if alloc_grain:
        notes.append(f"Allocation is summed to {alloc_grain}s: its {len(plan.allocation):,} rows per period would "
                     f"pass {MAX_SHEET_ROWS:,}; plan.json and the totals are exact (GPU-hours are sums).")
    if grain_name:
        notes.append(f"Demand and Fleet are averaged over {grain_name}s ({plan.inputs.T:,} periods).")
    _write_assumptions(ws["Assumptions"], plan, notes)
    _write_fleet(ws["Fleet"], plan, grain_code)
    _write_scenarios(ws["Scenarios"], plan)
    _write_shortfall(ws["Shortfall"], plan)
    _write_latency(ws["Latency"], plan)
    _write_backfill(ws["Backfill"], plan)
    _write_showback(ws["Showback"], plan)
    _write_cash_flow(ws["Cash flow"], plan, purchases, price_row)
    _write_inventory(ws["Inventory"], inventory, price_row)
    _write_shadow_prices(ws["Shadow prices"], plan)

    for key in NAMES:
        wb.defined_names[key] = DefinedName(key, attr_text=f"Summary!$B${name_row[key]}")
    wb.save(path)


def _price_key(r) -> tuple:
    """(gpu_type, region, option, valid_from or None): the Prices row a purchase or a cost reads."""
    vf = getattr(r, "valid_from", None)
    return (r.gpu_type, r.region, r.option, None if vf is None or pd.isna(vf) else pd.Timestamp(vf))


# ---------------------------------------------------------------------------- sheets

def _write_prices(ws, prices: pd.DataFrame) -> None:
    s = _Sheet(ws, ["gpu_type", "region", "option", "hourly_usd", "upfront_usd", "term_months",
                    "effective_usd_per_gpu_hour", "gpus_per_instance", "max_gpus", "interruptions_per_hour",
                    "valid_from", "lead_time_months", "residual_usd"],
               {"hourly_usd": RATE, "upfront_usd": USD, "effective_usd_per_gpu_hour": RATE, "term_months": INT,
                "gpus_per_instance": "0.###", "max_gpus": INT, "interruptions_per_hour": "0.0000",
                "valid_from": DATE, "lead_time_months": "0.##", "residual_usd": USD})
    s.header({"effective_usd_per_gpu_hour": 26})
    for i, r in enumerate(prices.itertuples()):
        row = i + 2
        reserved = r.option.startswith("reserved")
        eff = F(f"=D{row}+(E{row}-M{row})/(F{row}*{HOURS_PER_MONTH:g})") if reserved else F(f"=D{row}")
        vf = getattr(r, "valid_from", None)
        s.append([r.gpu_type, r.region, r.option, r.hourly_usd, r.upfront_usd if reserved else None,
                  r.term_months if reserved else None, eff, r.gpus_per_instance, r.max_gpus,
                  r.interruptions_per_hour, _date(vf) if vf is not None and not pd.isna(vf) else None,
                  getattr(r, "lead_time_months", 0.0) if reserved else None,
                  getattr(r, "residual_usd", 0.0) if reserved else 0.0])
    s.table("Prices")


def _write_purchases(ws, plan: Plan, purchases: pd.DataFrame, price_row: dict, horizon_ref: str) -> None:
    """One row per reserved option and purchase date: quantities, dates and live costs over Prices.

    horizon_cost_usd = GPUs x effective rate x the horizon hours the purchase is active (amortised);
    commitment_usd = GPUs x (hourly x term x 730 + upfront - residual) (full term).
    """
    s = _Sheet(ws, ["gpu_type", "region", "option", "term_months", "instances", "gpus_per_instance", "gpus",
                    "effective_usd_per_gpu_hour", "horizon_cost_usd", "commitment_usd", "pool_reserved_utilisation",
                    "purchase_date", "active_from", "end_date", "firm", "hours_active",
                    "liability_past_horizon_usd", "upfront_usd", "monthly_recurring_usd"],
               {"term_months": INT, "instances": INT, "gpus_per_instance": "0.###", "gpus": INT,
                "effective_usd_per_gpu_hour": RATE, "horizon_cost_usd": USD, "commitment_usd": USD,
                "pool_reserved_utilisation": PCT, "purchase_date": DATE, "active_from": DATE, "end_date": DATE,
                "hours_active": "#,##0.##", "liability_past_horizon_usd": USD, "upfront_usd": USD,
                "monthly_recurring_usd": USD})
    s.header({"effective_usd_per_gpu_hour": 26, "pool_reserved_utilisation": 26, "liability_past_horizon_usd": 26})
    util = _pool_utilisation(plan)
    for i, r in enumerate(purchases.itertuples()):
        row, pr = i + 2, price_row[_price_key(r)]
        hours = getattr(r, "hours_active", None)
        hours_cell = float(hours) if hours is not None else F(f"={horizon_ref}")
        s.append([r.gpu_type, r.region, r.option, F(f"=Prices!$F${pr}"), int(r.instances), F(f"=Prices!$H${pr}"),
                  F(f"=E{row}*F{row}"), F(f"=Prices!$G${pr}"), F(f"=G{row}*H{row}*P{row}"),
                  F(f"=G{row}*(Prices!$D${pr}*Prices!$F${pr}*{HOURS_PER_MONTH:g}+Prices!$E${pr}-Prices!$M${pr})"),
                  util.get((r.gpu_type, r.region), np.nan) if r.instances > 0 else None,
                  _date(getattr(r, "purchase_date", plan.inputs.periods[0])),
                  _date(getattr(r, "active_from", plan.inputs.periods[0])),
                  _date(getattr(r, "end_date", plan.inputs.periods[0])),
                  ("now" if getattr(r, "firm", True) else "planned"), hours_cell,
                  F(f"=J{row}-I{row}"), F(f"=G{row}*Prices!$E${pr}"),
                  F(f"=G{row}*Prices!$D${pr}*{HOURS_PER_MONTH:g}")])
    s.table("Purchases")


def _pool_utilisation(plan: Plan) -> dict:
    f = plan.fleet
    if f.empty:
        return {}
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    w = f["hours"] * f["scenario"].map(prob)
    g = pd.DataFrame({"gpu_type": f["gpu_type"], "region": f["region"],
                      "used": f["reserved_used"] * w, "owned": f["reserved_owned"] * w})
    agg = g.groupby(["gpu_type", "region"])[["used", "owned"]].sum()
    agg = agg[agg["owned"] > 0]
    return {k: v for k, v in (agg["used"] / agg["owned"]).items()}


def _write_allocation(ws, plan: Plan, price_row: dict, a: pd.DataFrame) -> None:
    s = _Sheet(ws, ["scenario", "period", "hours", "workload_class", "gpu_type", "region", "option", "gpus",
                    "gpu_hours", "probability", "expected_gpu_hours", "usd_per_gpu_hour", "expected_cost_usd"],
               {"period": DATE, "hours": "0.##", "gpus": NUM, "gpu_hours": NUM, "probability": "0.###",
                "expected_gpu_hours": NUM, "usd_per_gpu_hour": RATE, "expected_cost_usd": USD})
    s.header({"period": 18, "workload_class": 20})
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    cols = [a[c].tolist() for c in ("scenario", "period", "hours", "workload_class", "gpu_type", "region",
                                    "option", "gpus")]
    for i, (scen, per, hrs, cls, gt, rg, opt, gpus) in enumerate(zip(*cols)):
        row = i + 2
        price = 0 if opt == "reserved" else F(f"=Prices!$D${price_row[(gt, rg, opt, None)]}")
        s.append([scen, _date(per), hrs, cls, gt, rg, opt, gpus, F(f"=H{row}*C{row}"), prob[scen],
                  F(f"=I{row}*J{row}"), price, F(f"=K{row}*L{row}")])
    s.table("Allocation")


def _write_costs(ws, plan: Plan, purchases: pd.DataFrame, price_row: dict, horizon_ref: str,
                 n_alloc: int) -> int:
    s = _Sheet(ws, ["cost_kind", "gpu_type", "region", "option", "quantity", "unit", "gpu_hours",
                    "usd_per_gpu_hour", "cost_usd"],
               {"quantity": NUM, "gpu_hours": NUM, "usd_per_gpu_hour": RATE, "cost_usd": USD})
    s.header({"cost_kind": 14})
    last = max(n_alloc + 1, 2)
    alloc = lambda c: f"Allocation!${c}$2:${c}${last}"  # noqa: E731
    full_term = plan.inputs.config.commitments.accounting == "full_term"
    for i, r in enumerate(purchases.itertuples()):
        row, pr = s.rows + 1, price_row[_price_key(r)]
        cost = F(f"=Purchases!$J${i + 2}") if full_term else F(f"=G{row}*H{row}")  # whole term, or its hours here
        s.append(["reserved", r.gpu_type, r.region, r.option, F(f"=Purchases!$E${i + 2}"), "instances",
                  F(f"=E{row}*Prices!$H${pr}*Purchases!$P${i + 2}"), F(f"=Prices!$G${pr}"), cost])
    for option in ("on_demand", "spot"):
        for (gt, rg, opt, _vf), pr in price_row.items():
            if opt != option:
                continue
            row = s.rows + 1
            # exact, case-sensitive matches: a SUMIFS criterion would read "=1+1", "*", "?", "~" or a
            # leading "<" / ">" in a pool's name as an operator or a wildcard
            qty = F(f'=SUMPRODUCT(--EXACT({alloc("E")},B{row}),--EXACT({alloc("F")},C{row}),'
                    f'--EXACT({alloc("G")},D{row}),{alloc("K")})')
            s.append([option, gt, rg, opt, qty, "GPU-hours", F(f"=E{row}"), F(f"=Prices!$D${pr}"), F(f"=G{row}*H{row}")])
    if "extension" in plan.cost:  # columns added through the model's extension hook (a value: not priced here)
        s.append(["extension", None, None, s.text(", ".join(sorted(plan.stats.get("extensions", [])))), None, None,
                  None, None, float(plan.cost["extension"])])
    s.table("Costs")
    return s.rows


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
        ("all_on_demand_usd", "All on-demand baseline", "same demand with headroom, cheapest allowed pool"),
        ("savings_usd", "Savings against all on-demand", ""),
        ("savings_pct", "Savings %", ""),
        ("commitment_usd", "Commitment liability (cash over the terms)", "Purchases sheet"),
        ("amortised_usd", "Reserved cost amortised over the horizon", "Purchases sheet, horizon_cost_usd"),
        ("liability_past_horizon_usd", "Liability falling after the horizon ends",
         _liability_note(plan)),
        ("reserved_utilisation", "Reserved utilisation", "reserved GPU-hours used / owned"),
        ("shortfall_gpu_hours", "Shortfall (GPU-hours not met)", "0 when every class's demand is met; "
         "Shortfall sheet: which class, when, why"),
        ("worst_case_usd", "Worst-case scenario cost", "Scenarios sheet"),
        ("vss_usd", "Value of the stochastic solution", "expected saving over planning on the mean forecast"),
        ("evpi_usd", "Value of perfect information", "what a perfect forecast would save"),
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


def _liability_note(plan: Plan) -> str:
    """The plain sentence when most of the liability falls past the forecast; the Cash flow sheet otherwise."""
    c = plan.commitments
    full, past = c.get("reserved_full_term_usd", 0.0), c.get("liability_past_horizon_usd", 0.0)
    if full > 0 and past > 0.5 * full:
        return (f"{100 * past / full:.0f} % of the commitments signed is owed after the forecast ends: the plan "
                "assumes demand past the forecast keeps them busy. Cash flow sheet: when each dollar is paid")
    return "Cash flow sheet: when each dollar is paid"


def _write_summary(ws, plan: Plan, layout: list[tuple], cost_rows: int, n_purchases: int,
                   n_inventory: int = 0) -> None:
    s = _Sheet(ws, ["item", "value", "note"])
    s.header({"item": 44, "value": 22, "note": 60})
    inp = plan.inputs
    costs = lambda c: f"Costs!${c}$2:${c}${cost_rows}"  # noqa: E731
    last_p = max(n_purchases + 1, 2)
    row_of = {key: i + 2 for i, (key, *_r) in enumerate(layout)}
    short = plan.shortfall_gpu_hours
    values = {
        "total_cost_usd": (F(f"=SUM({costs('I')})"), USD),
        "already_committed_usd": (F(f"=SUM(Inventory!$J$2:$J${max(n_inventory + 1, 2)})"), USD),
        "bill_usd": (F(f"=B{row_of['total_cost_usd']}+B{row_of['already_committed_usd']}"), USD),
        "reserved_cost_usd": (F(f'=SUMIFS({costs("I")},{costs("A")},"reserved")'), USD),
        "on_demand_cost_usd": (F(f'=SUMIFS({costs("I")},{costs("A")},"on_demand")'), USD),
        "spot_cost_usd": (F(f'=SUMIFS({costs("I")},{costs("A")},"spot")'), USD),
        "all_on_demand_usd": (plan.baseline_all_on_demand, USD),
        "savings_usd": (F(f"=B{row_of['all_on_demand_usd']}-B{row_of['total_cost_usd']}"), USD),
        "savings_pct": (F(f"=IF(B{row_of['all_on_demand_usd']}>0,B{row_of['savings_usd']}/B{row_of['all_on_demand_usd']},0)"), PCT),
        "commitment_usd": (F(f"=SUM(Purchases!$J$2:$J${last_p})"), USD),
        "amortised_usd": (F(f"=SUM(Purchases!$I$2:$I${last_p})"), USD),
        "liability_past_horizon_usd": (F(f"=SUM(Purchases!$Q$2:$Q${last_p})"), USD),
        "reserved_utilisation": (plan.reserved_utilisation, PCT),
        "shortfall_gpu_hours": (short, NUM),
        "worst_case_usd": (plan.risk.worst_case_usd if plan.risk else plan.cost["total"], USD),
        "vss_usd": (plan.risk.vss_usd if plan.risk else 0.0, USD),
        "evpi_usd": (plan.risk.evpi_usd if plan.risk else 0.0, USD),
        "status": (plan.status.value, None),
        "mip_gap": (plan.solve.mip_gap, "0.00E+00"),
        "backend": (plan.solve.backend, None),
        "solve_seconds": (round(plan.solve.seconds, 2), "0.00"),
        "horizon_hours": (inp.horizon_hours, "#,##0.##"),
        "periods": (inp.T, INT),
        "horizon_start": (_date(inp.periods[0]), DATE),
        "penalty": (inp.penalty, RATE),
        "version": (__version__, None),
    }
    for key, label, note in layout:
        value, fmt = values[key]
        font = RED if key == "shortfall_gpu_hours" and short > 1e-6 else None
        cell = s.cell(str(value) if isinstance(value, F) else value, fmt, font) \
            if not isinstance(value, str) or isinstance(value, F) else s.text(value)
        s.append([label, cell, note])
    prov = provenance(plan)
    for f in prov["files"]:
        s.append([f"Input: {f['role']}", s.text(f["path"]), s.text("sha256 " + f["sha256"])])
    used = prov["solver"]
    s.append(["Solver used", s.text(f"{used['backend']}, time limit {used['time_limit_s']:g} s, gap limit "
                                     f"{used['mip_gap_limit']:g}"), s.text("as run (command-line overrides included)")])
    s.append(["Written (UTC)", s.text(prov["created_utc"]), s.text(f"run id {plan.run_id}")])
    s.table("Summary")
    _summary_charts(ws, plan, row_of)


def _summary_charts(ws, plan: Plan, row_of: dict) -> None:
    chart = BarChart()
    chart.type = "col"
    chart.title = "Expected cost by option (USD)"
    chart.legend = None
    first, last = row_of["reserved_cost_usd"], row_of["spot_cost_usd"]
    chart.add_data(Reference(ws, min_col=2, min_row=first, max_row=last), titles_from_data=False)
    chart.set_categories(Reference(ws, min_col=1, min_row=first, max_row=last))
    chart.height, chart.width = 7.5, 14
    ws.add_chart(chart, "E2")


def _write_spot(ws, plan: Plan) -> None:
    cols = ["workload_class", "gpu_type", "region", "job_gpus", "instances_per_job",
            "interruptions_per_instance_hour", "job_interruptions_per_hour", "checkpoint_minutes",
            "restart_minutes", "interval_minutes", "young_interval_minutes", "goodput", "goodput_source",
            "spot_usd_per_gpu_hour", "effective_usd_per_useful_gpu_hour", "on_demand_usd_per_gpu_hour",
            "best_reserved_usd_per_gpu_hour", "spot_pays", "break_even_interruptions_per_hour",
            "expected_lost_minutes_per_interruption", "spot_gpu_hours", "why"]
    s = _Sheet(ws, cols, {"goodput": PCT, "spot_usd_per_gpu_hour": RATE, "effective_usd_per_useful_gpu_hour": RATE,
                          "on_demand_usd_per_gpu_hour": RATE, "best_reserved_usd_per_gpu_hour": RATE,
                          "interval_minutes": "0.0", "young_interval_minutes": "0.0",
                          "job_interruptions_per_hour": "0.0000", "interruptions_per_instance_hour": "0.0000",
                          "break_even_interruptions_per_hour": "0.0000", "spot_gpu_hours": NUM,
                          "expected_lost_minutes_per_interruption": "0.0"})
    s.header({"why": 70, "workload_class": 20})
    for r in plan.spot.to_dict("records") if len(plan.spot) else []:
        s.append([r[c] if not isinstance(r[c], (bool, np.bool_)) else ("yes" if r[c] else "no") for c in cols])
    s.table("SpotEconomics")


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
        for r in d.itertuples(index=False):
            s.append([scen, _date(r[-1]), r[-2]] + list(r[:inp.K]))
    s.table("Demand")


def _write_assumptions(ws, plan: Plan, extra_notes: list[str] | None = None) -> None:
    inp = plan.inputs
    cfg = inp.config
    used = provenance(plan)["solver"]
    s = _Sheet(ws, ["workload_class", "spot_allowed", "max_spot_share", "headroom", "gpu_type_speeds", "regions",
                    "job_gpus", "checkpoint_minutes", "restart_minutes", "checkpoint_interval", "spot_goodput",
                    "failure_rate_per_gpu_hour", "description"],
               {"max_spot_share": PCT, "headroom": PCT})
    s.header({"gpu_type_speeds": 30, "regions": 30, "description": 50})
    for name in inp.classes:
        c = cfg.classes[name]
        s.append([name, "yes" if c.spot else "no", c.phi, c.headroom,
                  ", ".join(f"{k}={v:g}" for k, v in c.gpu_types.items()) if c.gpu_types else "all at 1.0",
                  ", ".join(c.regions) if c.regions else "all",
                  c.job_gpus if c.job_gpus is not None else "one instance", c.checkpoint_minutes, c.restart_minutes,
                  "optimal" if c.checkpoint_interval_minutes is None else c.checkpoint_interval_minutes,
                  c.spot_goodput if c.spot_goodput is not None else "model",
                  c.failure_rate_per_gpu_hour if c.failure_rate_per_gpu_hour is not None
                  else cfg.failure_rate_per_gpu_hour, c.description])
    s.table("Assumptions")
    notes = [
        f"Solver used: {used['backend']}, time limit {used['time_limit_s']:g} s, relative gap limit "
        f"{used['mip_gap_limit']:g} (model file: {cfg.solver.backend}, {cfg.solver.time_limit_s:g} s, "
        f"{cfg.solver.mip_gap:g}).",
        "How to read: Summary gives the decision; Purchases what to buy; Allocation who uses what per period;",
        "Costs prices every quantity with live formulas over Prices: edit a price there and every total moves.",
        "Reserved GPUs are paid whether used or not (Purchases, Costs); their Allocation rows carry no cost.",
        "Expected cost weights each scenario by its probability (one scenario: weight 1).",
        "Inventory already owned is sunk: it serves demand but is not charged.",
        f"Run id: {plan.run_id} (the same as plan.json's run_id: the two files come from one run).",
    ] + list(extra_notes or [])
    ws.append([])  # the notes stand below the table
    for note in notes:
        ws.append([s.text(note)])


def _write_fleet(ws, plan: Plan, grain: str | None = None) -> None:
    inp = plan.inputs
    f = plan.fleet
    scen0 = inp.scenarios[0]
    cols4 = ["reserved_owned", "reserved_used", "on_demand", "spot"]
    g = f[f["scenario"] == scen0].groupby("period")[cols4].sum()
    periods = inp.periods
    if grain:  # hour-weighted averages per day, week or month
        h = pd.Series(inp.hours, index=inp.periods)
        g = g.reindex(inp.periods).fillna(0.0)
        key = _grain(pd.Series(inp.periods), grain).to_numpy()
        g = g.mul(h, axis=0).groupby(key).sum().div(h.groupby(key).sum(), axis=0)
        periods = g.index
    s = _Sheet(ws, ["period", "reserved_owned", "reserved_used", "on_demand", "spot", "gpus_in_use",
                    "reserved_utilisation"],
               {"period": DATE, "reserved_owned": NUM, "reserved_used": NUM, "on_demand": NUM, "spot": NUM,
                "gpus_in_use": NUM, "reserved_utilisation": PCT})
    s.header({"period": 18})
    for t, per in enumerate(periods):
        row = t + 2
        r = g.loc[per] if per in g.index else None
        vals = [0.0] * 4 if r is None else [float(r[c]) for c in ("reserved_owned", "reserved_used", "on_demand", "spot")]
        s.append([_date(per)] + vals + [F(f"=C{row}+D{row}+E{row}"), F(f"=IF(B{row}>0,C{row}/B{row},0)")])
    s.table("Fleet")
    n = s.rows
    area = AreaChart()
    area.grouping = "stacked"
    area.title = f"GPUs in use by option, stacked = GPUs serving demand with headroom ({scen0})"
    area.add_data(Reference(ws, min_col=3, max_col=5, min_row=1, max_row=n), titles_from_data=True)
    owned = LineChart()
    owned.add_data(Reference(ws, min_col=2, min_row=1, max_row=n), titles_from_data=True)
    area += owned  # the reserved fleet owned, as a line over the stacked use
    area.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n))
    area.height, area.width = 9, 24
    ws.add_chart(area, "I2")
    util = BarChart()
    util.title = "Reserved utilisation per period"
    util.add_data(Reference(ws, min_col=7, min_row=1, max_row=n), titles_from_data=True)
    util.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n))
    util.height, util.width = 7, 24
    ws.add_chart(util, "I22")


def _write_scenarios(ws, plan: Plan) -> None:
    s = _Sheet(ws, ["scenario", "probability", "reserved_usd", "on_demand_usd", "spot_usd", "total_usd",
                    "shortfall_gpu_hours"],
               {"probability": PCT, "reserved_usd": USD, "on_demand_usd": USD, "spot_usd": USD, "total_usd": USD,
                "shortfall_gpu_hours": NUM})
    s.header({"scenario": 18})
    for i, r in enumerate(plan.scenario_costs.itertuples()):
        row = i + 2
        s.append([r.scenario, r.probability, r.reserved, r.on_demand, r.spot, F(f"=C{row}+D{row}+E{row}"),
                  r.shortfall_gpu_hours])
    s.table("Scenarios")


def _write_shortfall(ws, plan: Plan) -> None:
    """Unmet demand per scenario, period and class, with the constraints that stood in the way."""
    s = _Sheet(ws, ["scenario", "period", "hours", "workload_class", "unmet_gpus", "unmet_gpu_hours", "cause"],
               {"period": DATE, "hours": "0.##", "unmet_gpus": NUM, "unmet_gpu_hours": NUM})
    s.header({"period": 18, "workload_class": 20, "cause": 90})
    for r in plan.shortfall.itertuples():
        s.append([r.scenario, _date(r.period), r.hours, r.workload_class, r.unmet_gpus, r.unmet_gpu_hours, r.cause])
    s.table("Shortfall")


def _write_latency(ws, plan: Plan) -> None:
    """SLO-sized classes: load, replicas provisioned and the latency percentile they give, per period."""
    cols = ["scenario", "period", "workload_class", "requests_per_s", "replicas", "gpus", "latency_slo_ms",
            "slo_percentile", "latency_at_percentile_ms", "p_latency_above_slo", "slo_met"]
    s = _Sheet(ws, cols, {"period": DATE, "requests_per_s": "#,##0.00", "replicas": "#,##0", "gpus": NUM,
                          "latency_slo_ms": "#,##0", "latency_at_percentile_ms": "#,##0",
                          "p_latency_above_slo": "0.000%"})
    s.header({"period": 18, "workload_class": 20})
    lat = plan.latency
    for r in lat.itertuples() if len(lat) else []:
        s.append([r.scenario, _date(r.period), r.workload_class, r.requests_per_s, int(r.replicas), r.gpus,
                  r.latency_slo_ms, r.slo_percentile, r.latency_at_percentile_ms, r.p_latency_above_slo,
                  "yes" if r.slo_met else "no"])
    s.table("Latency")


def _write_backfill(ws, plan: Plan) -> None:
    """Backfill classes: the reclaim rate from the priority classes' rises and the goodput it leaves."""
    cols = ["workload_class", "gpu_type", "region", "priority_peak_gpus", "priority_mean_gpus",
            "idle_gpu_hours", "gpus_reclaimed", "job_gpus", "job_reclaims_per_hour", "job_interruptions_per_hour", "checkpoint_minutes",
            "restart_minutes", "interval_minutes", "goodput", "goodput_source", "backfilled_gpu_hours",
            "own_reserved_gpu_hours", "useful_gpu_hours"]
    s = _Sheet(ws, cols, {"priority_peak_gpus": NUM, "priority_mean_gpus": NUM, "idle_gpu_hours": NUM,
                          "gpus_reclaimed": NUM, "job_reclaims_per_hour": "0.0000",
                          "job_interruptions_per_hour": "0.0000", "interval_minutes": "0.0", "goodput": PCT,
                          "backfilled_gpu_hours": NUM, "own_reserved_gpu_hours": NUM, "useful_gpu_hours": NUM})
    s.header({"workload_class": 20})
    for r in plan.backfill.to_dict("records") if len(plan.backfill) else []:
        s.append([r[c] for c in cols])
    s.table("Backfill")


def _write_showback(ws, plan: Plan) -> None:
    """Cost and GPU-hours per class and team (planner.showback: reserved by use, idle pro rata to use)."""
    from ..showback import by_class

    cols = ["team", "workload_class", "reserved_gpu_hours", "on_demand_gpu_hours", "spot_gpu_hours",
            "reserved_used_usd", "reserved_idle_usd", "on_demand_usd", "spot_usd", "total_usd"]
    s = _Sheet(ws, cols, {c: (USD if c.endswith("usd") else NUM) for c in cols[2:]})
    s.header({"team": 20, "workload_class": 20})
    if plan.status.value in ("optimal", "feasible"):
        for i, r in enumerate(by_class(plan).to_dict("records")):
            row = i + 2
            s.append([r[c] for c in cols[:-1]] + [F(f"=F{row}+G{row}+H{row}+I{row}")])
    s.table("Showback")


MAX_FORMULA_TERMS = 150  # terms spelled out in one cash-flow formula (Excel allows 8,192 characters)


def _write_inventory(ws, inventory: pd.DataFrame, price_row: dict) -> None:
    """Commitments already owned: dates, and their cost in the horizon as live formulas over Prices."""
    s = _Sheet(ws, ["gpu_type", "region", "option", "gpus", "start", "end", "term_months",
                    "effective_usd_per_gpu_hour", "hours_in_horizon", "horizon_cost_usd", "hours_after_horizon",
                    "recurring_after_horizon_usd", "expires_in_horizon", "priced"],
               {"gpus": INT, "start": DATE, "end": DATE, "term_months": INT, "effective_usd_per_gpu_hour": RATE,
                "hours_in_horizon": "#,##0.##", "horizon_cost_usd": USD, "hours_after_horizon": "#,##0.##",
                "recurring_after_horizon_usd": USD})
    s.header({"effective_usd_per_gpu_hour": 26, "recurring_after_horizon_usd": 28, "expires_in_horizon": 20})
    for i, r in enumerate(inventory.itertuples()):
        row = i + 2
        pr = price_row.get((r.gpu_type, r.region, r.option,
                            None if pd.isna(r.valid_from) else pd.Timestamp(r.valid_from))) if r.priced else None
        rate = F(f"=Prices!$G${pr}") if pr else 0.0
        s.append([r.gpu_type, r.region, r.option, float(r.gpus), _date(r.start), _date(r.end),
                  F(f"=Prices!$F${pr}") if pr else None, rate, float(r.hours_in_horizon), F(f"=D{row}*H{row}*I{row}"),
                  float(r.hours_after_horizon), F(f"=D{row}*Prices!$D${pr}*K{row}") if pr else 0.0,
                  "yes" if r.expires_in_horizon else "no",
                  "yes" if r.priced else "no: the price sheet has no such reserved option"])
    s.table("Inventory")


def _write_shadow_prices(ws, plan: Plan) -> None:
    """What relaxing each binding budget, cap, headroom or spot share by one unit is worth (planner.duals)."""
    s = _Sheet(ws, ["family", "name", "unit", "shadow_price_usd", "per_month_usd", "meaning"],
               {"shadow_price_usd": USD, "per_month_usd": USD})
    s.header({"name": 26, "unit": 30, "shadow_price_usd": 18, "per_month_usd": 16, "meaning": 80})
    sp = plan.shadow_prices
    if sp is None:
        s.append(["(not computed)", None, None, None, None,
                  "planner plan computes them; from Python: planner.plan(..., shadow_prices=True)"])
    else:
        for r in sp.itertuples():
            s.append([r.family, r.name, r.unit, float(r.shadow_price_usd), float(r.per_month_usd), r.meaning])
    s.table("ShadowPrices")


def _write_cash_flow(ws, plan: Plan, purchases: pd.DataFrame, price_row: dict) -> None:
    """Cash per calendar month to the end of the last term, live over Prices, with a cash chart and a ladder chart.

    Columns A-F are the cash (upfront, reserved recurring, on-demand, spot, total). To their right, values the
    formulas read: each purchase's hours active in the month, on-demand and spot GPU-hours per pool and month
    (expected over scenarios); then each purchase's GPUs owned in the month (the ladder). Edit a price in
    Prices and every month moves; the columns add up to plan.json's ``cash_schedule``.
    """
    from ..ladder import active_hours_by_month, schedule_months

    inp = plan.inputs
    cash = plan.cash_schedule
    if not len(cash):
        ws.append(["no cash schedule (no plan)"])
        return
    bought_idx = [i for i, r in enumerate(purchases.itertuples()) if r.instances > 0]
    bought = purchases.iloc[bought_idx]
    months = schedule_months(bought, inp.periods) if len(bought) else pd.period_range(
        inp.periods[0].to_period("M"), inp.periods[-1].to_period("M"), freq="M")
    hours = active_hours_by_month(bought, months) if len(bought) else np.zeros((0, len(months)))
    label = list(months.strftime("%Y-%m"))
    # expected GPU-hours per pool and month, on-demand and spot
    a = plan.allocation
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    gh = pd.DataFrame({"month": a["period"].dt.strftime("%Y-%m"), "gpu_type": a["gpu_type"], "region": a["region"],
                       "option": a["option"], "gh": a["gpu_hours"] * a["scenario"].map(prob)})
    gh = gh[gh["option"].isin(["on_demand", "spot"])].groupby(["option", "gpu_type", "region", "month"])["gh"].sum()
    pool_cols = [(opt, gt, rg) for opt, gt, rg in sorted({k[:3] for k in gh.index})]
    names = ["month", "upfront_usd", "reserved_recurring_usd", "on_demand_usd", "spot_usd", "total_usd", ""]
    names += [f"hours {r.option} {pd.Timestamp(r.purchase_date):%Y-%m-%d} {r.gpu_type}/{r.region}"
              for r in bought.itertuples()]
    names += [f"GPU-hours {opt} {gt}/{rg}" for opt, gt, rg in pool_cols]
    names += [f"GPUs {r.option} {pd.Timestamp(r.purchase_date):%Y-%m-%d} {r.gpu_type}/{r.region}"
              for r in bought.itertuples()]
    s = _Sheet(ws, names, {n: USD for n in names[1:6]})
    s.header({"month": 10, "": 3})
    h0 = 8  # first helper column (H)
    g0 = h0 + len(bought)  # GPU-hours columns
    l0 = g0 + len(pool_cols)  # ladder columns
    letter = get_column_letter
    spelled = len(bought) <= MAX_FORMULA_TERMS and len(pool_cols) <= MAX_FORMULA_TERMS
    purchase_month = {j: pd.Timestamp(r.purchase_date).strftime("%Y-%m") for j, r in enumerate(bought.itertuples())}
    end_month = {j: (pd.Timestamp(r.end_date) - pd.Timedelta(hours=1)).strftime("%Y-%m")
                 for j, r in enumerate(bought.itertuples())}
    for i, m in enumerate(label):
        row = i + 2
        c = cash.iloc[i] if i < len(cash) else None
        if spelled:
            up = [f"Purchases!$R${bought_idx[j] + 2}" for j in range(len(bought)) if purchase_month[j] == m]
            up += [f"-Purchases!$G${bought_idx[j] + 2}*Prices!$M${price_row[_price_key(r)]}"
                   for j, r in enumerate(bought.itertuples()) if end_month[j] == m]  # residual value back
            rec = [f"{letter(h0 + j)}{row}*Purchases!$G${bought_idx[j] + 2}*Prices!$D$"
                   f"{price_row[_price_key(r)]}" for j, r in enumerate(bought.itertuples())]
            od = [f"{letter(g0 + q)}{row}*Prices!$D${price_row[(gt, rg, opt, None)]}"
                  for q, (opt, gt, rg) in enumerate(pool_cols) if opt == "on_demand"]
            sp = [f"{letter(g0 + q)}{row}*Prices!$D${price_row[(gt, rg, opt, None)]}"
                  for q, (opt, gt, rg) in enumerate(pool_cols) if opt == "spot"]
            cells = [F("=" + ("+".join(x) if x else "0")) for x in (up, rec, od, sp)]
        else:  # too many terms for one formula: the values, as in plan.json
            cells = [float(c[k]) for k in ("upfront_usd", "reserved_recurring_usd", "on_demand_usd", "spot_usd")]
        values = [m, *cells, F(f"=SUM(B{row}:E{row})"), None]
        values += [float(x) for x in hours[:, i]]
        values += [float(gh.get((opt, gt, rg, m), 0.0)) for opt, gt, rg in pool_cols]
        values += [F(f"=IF({letter(h0 + j)}{row}>0,Purchases!$G${bought_idx[j] + 2},0)") for j in range(len(bought))]
        s.append(values)
    n = s.rows
    chart = BarChart()
    chart.type, chart.grouping, chart.overlap = "col", "stacked", 100
    chart.title = "Cash out per month (USD)"
    chart.y_axis.title, chart.x_axis.title = "USD", "month"
    chart.add_data(Reference(ws, min_col=2, max_col=5, min_row=1, max_row=n), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n))
    chart.width, chart.height = 24, 10
    ws.add_chart(chart, "H2" if not len(bought) and not pool_cols else f"{letter(l0 + len(bought) + 1)}2")
    if len(bought):
        ladder = AreaChart()
        ladder.grouping = "stacked"
        ladder.title = "Reserved GPUs owned, by purchase (the ladder)"
        ladder.y_axis.title, ladder.x_axis.title = "GPUs", "month"
        ladder.add_data(Reference(ws, min_col=l0, max_col=l0 + len(bought) - 1, min_row=1, max_row=n),
                        titles_from_data=True)
        ladder.set_categories(Reference(ws, min_col=1, min_row=2, max_row=n))
        ladder.width, ladder.height = 24, 10
        ws.add_chart(ladder, f"{letter(l0 + len(bought) + 1)}24")
