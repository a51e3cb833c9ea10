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
Python writer that stores a formula together with its cached value.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xlsxwriter
from xlsxwriter.utility import xl_col_to_name

from .. import __version__
from ..bill import inventory_table
from ..results import Plan
from ..units import HOURS_PER_MONTH, usd as _money
from .provenance import provenance
from .. import commitments

USD = '"$"#,##0.00'
USD0 = '"$"#,##0'
RATE = '"$"#,##0.0000'
NUM = "#,##0.00"
INT = "#,##0"
PCT = "0.0%"
DATE = "yyyy-mm-dd hh:mm"
SHEETS = ("Summary", "Purchases", "Allocation", "Costs", "Spot economics", "Prices", "Demand", "Assumptions", "Fleet",
          "Scenarios", "Shortfall", "Latency", "Backfill", "Showback", "Cash flow", "Inventory", "Shadow prices",
          "Baseline", "Showback by month", "Savings plans")
NAMES = ("total_cost_usd", "reserved_cost_usd", "on_demand_cost_usd", "spot_cost_usd",
         "all_on_demand_usd", "savings_usd", "horizon_hours", "already_committed_usd", "bill_usd", "discount_rate",
         "npv_usd")
WIDE = {"Allocation", "Purchases", "Spot economics", "Prices", "Assumptions", "Backfill", "Latency", "Cash flow",
        "Inventory", "Shadow prices", "Showback", "Demand", "Costs", "Shortfall"}  # printed landscape
UNITS = {  # header notes: what a column holds, with its unit
    "hourly_usd": "USD per GPU-hour (per GPU, not per instance; for reserved: the recurring part)",
    "upfront_usd": "USD per GPU, paid on the purchase date (reserved only)",
    "effective_usd_per_gpu_hour": "USD per GPU-hour: hourly + (upfront - residual) / (term x 730 h)",
    "gpus_per_instance": "GPUs in one instance: purchases are whole instances",
    "term_months": "months of the commitment (730 h each)", "max_gpus": "GPUs at most at once (cap)",
    "residual_usd": "USD per GPU returned at the end of the term", "lead_time_months": "months from purchase to use",
    "gpus": "GPUs", "instances": "instances (whole)", "horizon_cost_usd": "USD, amortised over the horizon hours",
    "commitment_usd": "USD, the whole term's liability", "usd_per_gpu_hour": "USD per GPU-hour",
    "gpu_hours": "GPU-hours", "expected_gpu_hours": "GPU-hours weighted by the scenario's probability",
    "expected_cost_usd": "USD weighted by the scenario's probability", "cost_usd": "USD over the horizon",
    "npv_usd": "USD today: the whole term's cash discounted at [finance] discount_rate, monthly from the first month",
    "payment_options": "the NPV of the same GPUs under each payment option of this pool, term and date (* = chosen)",
    "block_start": "capacity blocks: the window's first hour (UTC)", "block_days": "capacity blocks: days in the window",
    "provider": "capacity blocks: the provider whose rules were checked (aws, gcp)",
    "discount_factor": "(1 + discount_rate)^(-m/12), m = months from the first", "discounted_usd": "total_usd x factor",
}


class F(str):
    """A formula this module wrote, with the value it computes (cached in the file). Any other string is text."""

    value: object = None

    def __new__(cls, text: str, value=None):
        obj = super().__new__(cls, text)
        obj.value = value
        return obj


@dataclass
class _Styled:
    """A value written with its own number format (and bold/red font)."""
    value: object
    fmt: str | None = None
    red: bool = False


@dataclass
class _Text:
    """Input text: always a string cell, never a formula, whatever it starts with."""
    value: object


class _Book:
    """The xlsxwriter workbook and its formats (one Format object per distinct style)."""

    def __init__(self, path):
        self.wb = xlsxwriter.Workbook(str(path), {"strings_to_formulas": False, "strings_to_urls": False,
                                                  "strings_to_numbers": False})
        self._formats: dict = {}

    def fmt(self, num: str | None = None, bold: bool = False, red: bool = False, head: bool = False):
        key = (num, bold, red, head)
        if key not in self._formats:
            spec = {}
            if num:
                spec["num_format"] = num
            if bold or head or red:
                spec["bold"] = True
            if red:
                spec["font_color"] = "#C00000"
            if head:
                spec.update({"bg_color": "#DDEBF7", "text_wrap": True, "valign": "top"})
            self._formats[key] = self.wb.add_format(spec) if spec else None
        return self._formats[key]

    def sheet(self, name: str):
        ws = self.wb.add_worksheet(name)
        ws.planner_book = self
        ws.set_paper(9)  # A4
        ws.fit_to_pages(1, 0)  # fit to the page width, as many pages down as needed
        ws.repeat_rows(0)  # the header row on every printed page
        if name in WIDE:
            ws.set_landscape()
        return ws


def _number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


@dataclass
class _Sheet:
    """A sheet written row by row that knows its columns, formats and row count."""

    ws: object
    columns: list[str]
    formats: dict[str, str] = field(default_factory=dict)
    rows: int = 0
    omitted: int = 0  # rows not written: past Excel's row limit

    @property
    def book(self) -> _Book:
        return self.ws.planner_book

    def cell(self, value, fmt: str | None = None, font=None):
        return _Styled(value, fmt, red=font is RED)

    def text(self, value):
        """Input text: always a string cell, never a formula, whatever it starts with."""
        return _Text(value)

    def header(self, widths: dict[str, int] | None = None):
        head = self.book.fmt(head=True)
        for i, name in enumerate(self.columns):
            self.ws.set_column(i, i, (widths or {}).get(name, max(12, min(len(name) + 3, 40))))
            self.ws.write_string(0, i, name, head)
            if name in UNITS:
                self.ws.write_comment(0, i, UNITS[name], {"x_scale": 2})
        self.ws.freeze_panes(1, 0)
        self.rows = 1

    def _write(self, r: int, j: int, v, num: str | None, red: bool = False):
        ws, fmt = self.ws, self.book.fmt(num, red=red)
        if isinstance(v, _Styled):
            return self._write(r, j, v.value, v.fmt or num, v.red)
        if isinstance(v, _Text):
            if v.value is not None:
                ws.write_string(r, j, str(v.value), self.book.fmt(None, red=red))
        elif isinstance(v, F):
            value = v.value
            if value is not None and _number(value) and not math.isfinite(float(value)):
                value = None
            ws.write_formula(r, j, str(v), fmt, float(value) if _number(value) else
                             ("" if value is None else value))
        elif isinstance(v, str):
            ws.write_string(r, j, v, self.book.fmt(None, red=red))
        elif v is None:
            return
        elif isinstance(v, (bool, np.bool_)):
            ws.write_boolean(r, j, bool(v))
        elif isinstance(v, (dt.datetime, pd.Timestamp)):
            if pd.isna(v):
                return
            ws.write_datetime(r, j, pd.Timestamp(v).to_pydatetime(), self.book.fmt(num or DATE))
        elif _number(v):
            if math.isfinite(float(v)):
                ws.write_number(r, j, float(v), fmt)
        else:
            ws.write_string(r, j, str(v))

    def append(self, values: list):
        if self.rows >= EXCEL_MAX_ROWS - 1:  # Excel's limit: keep the last row for the note that says so
            self.omitted += 1
            return
        r = self.rows
        for j, (name, v) in enumerate(zip(self.columns, values)):
            self._write(r, j, v, self.formats.get(name))
        self.rows += 1

    def note(self, text: str = ""):
        """A line of text below the table (column A)."""
        if text:
            self.ws.write_string(self.rows, 0, text)
        self.rows += 1

    def col(self, name: str) -> str:
        return xl_col_to_name(self.columns.index(name))

    def ref(self, name: str, row: int, absolute: bool = True) -> str:
        c = self.col(name)
        return f"${c}${row}" if absolute else f"{c}{row}"

    def table(self, display: str):
        if self.rows == 1:  # a table needs a data row
            self.rows += 1
        self.ws.add_table(0, 0, self.rows - 1, len(self.columns) - 1, {
            "name": display, "style": "Table Style Medium 2", "autofilter": True,
            "columns": [{"header": c, "header_format": self.book.fmt(head=True)} for c in self.columns]})
        if self.omitted:  # said on the sheet itself, below the table
            self.ws.write_string(self.rows, 0, f"{self.omitted:,} more rows omitted: Excel holds {EXCEL_MAX_ROWS:,} "
                                              "rows per sheet; plan.json has them all", self.book.fmt(red=True))
            self.rows += 1


RED = object()  # marker for the red, bold font of a warning value
BOLD = None


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


EXCEL_MAX_ROWS = 1_048_576  # rows per sheet in Excel; the per-period sheets are aggregated long before this
FLEET_CHART_POINTS = 750  # past this many periods the Fleet sheet (behind the charts) is averaged per day


def write_workbook(plan: Plan, path) -> None:
    """Write ``plan`` to ``path`` (.xlsx). Call through :func:`planner.atomic.atomic_path`."""
    inp = plan.inputs
    book = _Book(path)
    ws = {name: book.sheet(name) for name in SHEETS}

    prices = inp.tables.prices.reset_index(drop=True)
    price_row = {_price_key(r): i + 2 for i, r in enumerate(prices.itertuples())}
    alloc, alloc_grain = coarsen_allocation(plan.allocation)
    grain_name, grain_code = _period_grain(plan)
    n_alloc = len(alloc)
    purchases = plan.purchases
    if "kind" in purchases:  # savings plans and resales have no Prices row of their own: values below
        purchases = purchases[~purchases["kind"].isin(VALUED_KINDS)]

    inventory = inventory_table(inp)
    summary_rows = _summary_layout(plan)
    name_row = {key: i + 2 for i, (key, *_rest) in enumerate(summary_rows)}
    horizon_ref = f"Summary!$B${name_row['horizon_hours']}"

    _write_prices(ws["Prices"], prices)
    _write_purchases(ws["Purchases"], plan, purchases, price_row, horizon_ref)
    _write_allocation(ws["Allocation"], plan, price_row, alloc)
    cost_rows, cost_values = _write_costs(ws["Costs"], plan, purchases, price_row, alloc)
    base_rows, baseline = _write_baseline(ws["Baseline"], plan, price_row)
    _write_summary(ws["Summary"], plan, summary_rows, cost_rows, purchases, inventory,
                   cost_values=cost_values, baseline=(base_rows, baseline))
    _write_spot(ws["Spot economics"], plan)
    _write_demand(ws["Demand"], plan, grain_code)
    fleet_code = grain_code or ("D" if inp.T > FLEET_CHART_POINTS and float(np.max(inp.hours)) < 24 else None)
    notes = []
    if alloc_grain:
        notes.append(f"Allocation is summed to {alloc_grain}s: its {len(plan.allocation):,} rows per period would "
                     f"pass {MAX_SHEET_ROWS:,}; plan.json and the totals are exact (GPU-hours are sums).")
    if grain_name:
        notes.append(f"Demand and Fleet are averaged over {grain_name}s ({plan.inputs.T:,} periods).")
    elif fleet_code:
        notes.append(f"Fleet (the sheet behind the charts) is averaged per day: {plan.inputs.T:,} periods would "
                     "crowd a chart's axis; Allocation and Demand keep every period.")
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

    for key in NAMES:
        book.wb.define_name(key, f"=Summary!$B${name_row[key]}")
    ws["Summary"].activate()
    book.wb.close()


def _price_key(r) -> tuple:
    """(gpu_type, region, option, valid_from or None): the Prices row a purchase or a cost reads."""
    vf = getattr(r, "valid_from", None)
    if vf is None or pd.isna(vf):  # a capacity block's offer is told apart by its window's start
        vf = getattr(r, "block_start", None)
    return (r.gpu_type, r.region, r.option, None if vf is None or pd.isna(vf) else pd.Timestamp(vf))


# ---------------------------------------------------------------------------- sheets

def _write_prices(ws, prices: pd.DataFrame) -> None:
    s = _Sheet(ws, ["gpu_type", "region", "option", "hourly_usd", "upfront_usd", "term_months",
                    "effective_usd_per_gpu_hour", "gpus_per_instance", "max_gpus", "interruptions_per_hour",
                    "valid_from", "lead_time_months", "residual_usd", "block_start", "block_days", "provider"],
               {"hourly_usd": RATE, "upfront_usd": USD, "effective_usd_per_gpu_hour": RATE, "term_months": "#,##0.###",
                "gpus_per_instance": "0.###", "max_gpus": INT, "interruptions_per_hour": "0.0000",
                "valid_from": DATE, "lead_time_months": "0.##", "residual_usd": USD, "block_start": "yyyy-mm-dd hh:mm",
                "block_days": INT})
    s.header({"effective_usd_per_gpu_hour": 26})
    for i, r in enumerate(prices.itertuples()):
        row = i + 2
        reserved = commitments.kind_of_name(r.option) in commitments.COMMITMENT_KINDS
        residual = float(getattr(r, "residual_usd", 0.0) or 0.0) if reserved else 0.0
        upfront = float(r.upfront_usd) if reserved and pd.notna(r.upfront_usd) else 0.0
        eff = F(f"=D{row}+(E{row}-M{row})/(F{row}*{HOURS_PER_MONTH:g})",
                r.hourly_usd + (upfront - residual) / (r.term_months * HOURS_PER_MONTH)) if reserved \
            else F(f"=D{row}", r.hourly_usd)
        vf = getattr(r, "valid_from", None)
        bs = getattr(r, "block_start", None)
        block = bs is not None and not pd.isna(bs)
        s.append([r.gpu_type, r.region, r.option, r.hourly_usd, r.upfront_usd if reserved else None,
                  r.term_months if reserved else None, eff, r.gpus_per_instance, r.max_gpus,
                  r.interruptions_per_hour, _date(vf) if vf is not None and not pd.isna(vf) else None,
                  getattr(r, "lead_time_months", 0.0) if reserved else None, residual,
                  _date(bs) if block else None, float(r.block_days) if block else None,
                  s.text(r.provider) if block and getattr(r, "provider", "") else None])
    s.table("Prices")


def _purchase_use(plan: Plan, purchases: pd.DataFrame) -> pd.DataFrame:
    """Per purchase row: min / mean / max over its active periods of its pool's reserved use / GPUs owned.

    Expected over scenarios; a pool's purchases share its use in proportion to the GPUs each owns.
    """
    inp = plan.inputs
    f = plan.fleet
    out = pd.DataFrame({"min": np.nan, "avg": np.nan, "max": np.nan}, index=purchases.index)
    if f.empty or not len(purchases):
        return out
    prob = dict(zip(inp.scenarios, inp.probability))
    g = f.assign(used=f["reserved_used"] * f["scenario"].map(prob), owned=f["reserved_owned"]
                 * f["scenario"].map(prob)).groupby(["gpu_type", "region", "period"])[["used", "owned"]].sum()
    active = inp.active
    for i, r in enumerate(purchases.itertuples()):
        if r.instances <= 0:
            continue
        pool = g.loc[(r.gpu_type, r.region)] if (r.gpu_type, r.region) in g.index.droplevel(2) else None
        if pool is None:
            continue
        pool = pool.reindex(inp.periods)
        on = active[r.Index] > 0 if r.Index < len(active) else np.ones(inp.T, bool)
        share = (pool["used"] / pool["owned"]).to_numpy()[on]
        share = share[np.isfinite(share)]
        if len(share):
            hours = inp.hours[on][: len(share)]
            out.iloc[i] = [float(share.min()), float(np.average(share, weights=hours)), float(share.max())]
    return out


def _write_purchases(ws, plan: Plan, purchases: pd.DataFrame, price_row: dict, horizon_ref: str) -> None:
    """One row per reserved option and purchase date: quantities, dates, live costs over Prices, and the
    clouds' recommendation columns (use against the GPUs bought, break-even utilisation and months, savings).

    horizon_cost_usd = GPUs x effective rate x the horizon hours the purchase is active (amortised);
    commitment_usd = GPUs x (hourly x term x 730 + upfront - residual) (full term); savings are against
    serving the GPU-hours it is used (mean utilisation) on demand in its pool.
    """
    cols = ["gpu_type", "region", "option", "term_months", "instances", "gpus_per_instance", "gpus",
            "effective_usd_per_gpu_hour", "horizon_cost_usd", "commitment_usd", "pool_reserved_utilisation",
            "purchase_date", "active_from", "end_date", "firm", "hours_active",
            "liability_past_horizon_usd", "upfront_usd", "monthly_recurring_usd", "on_demand_usd_per_gpu_hour",
            "min_utilisation", "avg_utilisation", "max_utilisation", "break_even_utilisation",
            "monthly_savings_usd", "monthly_savings_pct", "break_even_months", "npv_usd", "payment_options"]
    s = _Sheet(ws, cols,
               {"term_months": INT, "instances": INT, "gpus_per_instance": "0.###", "gpus": INT,
                "effective_usd_per_gpu_hour": RATE, "horizon_cost_usd": USD, "commitment_usd": USD,
                "pool_reserved_utilisation": PCT, "purchase_date": DATE, "active_from": DATE, "end_date": DATE,
                "hours_active": "#,##0.##", "liability_past_horizon_usd": USD, "upfront_usd": USD,
                "monthly_recurring_usd": USD, "on_demand_usd_per_gpu_hour": RATE, "min_utilisation": PCT,
                "avg_utilisation": PCT, "max_utilisation": PCT, "break_even_utilisation": PCT,
                "monthly_savings_usd": USD, "monthly_savings_pct": PCT, "break_even_months": "0.0", "npv_usd": USD})
    s.header({"effective_usd_per_gpu_hour": 26, "pool_reserved_utilisation": 26, "liability_past_horizon_usd": 26,
              "payment_options": 60})
    alternatives = _payment_text(plan)
    util = _pool_utilisation(plan)
    use = _purchase_use(plan, purchases)
    L = HOURS_PER_MONTH
    for i, r in enumerate(purchases.itertuples()):
        row, pr = i + 2, price_row[_price_key(r)]
        hours = getattr(r, "hours_active", None)
        hours_cell = float(hours) if hours is not None else F(f"={horizon_ref}", plan.inputs.horizon_hours)
        od_row = price_row.get((r.gpu_type, r.region, "on_demand", None))
        bought = r.instances > 0
        od = _price_value(plan, price_row, (r.gpu_type, r.region, "on_demand", None)) if od_row else None
        eff, gpus = float(r.effective_usd_per_gpu_hour), float(r.gpus)
        u_min, u_avg, u_max = use.iloc[i] if bought else (np.nan, np.nan, np.nan)
        reco = [None] * 8
        if od_row:
            reco = [F(f"=Prices!$D${od_row}", od), u_min if bought else None, u_avg if bought else None,
                    u_max if bought else None, F(f"=IF(T{row}>0,H{row}/T{row},0)", eff / od if od else 0.0)]
            if bought and np.isfinite(u_avg) and getattr(r, "kind", "instance") == "window":
                reco += [None, None, None]  # a block is paid once for its window: no monthly saving or break-even
            elif bought and np.isfinite(u_avg):
                saving = (u_avg * od - eff) * gpus * L
                od_equiv = u_avg * od * gpus * L
                net = od_equiv - r.monthly_recurring_usd
                reco += [F(f"=(V{row}*T{row}-H{row})*G{row}*{L:g}", saving),
                         F(f"=IF(V{row}*T{row}>0,1-H{row}/(V{row}*T{row}),0)",
                           1 - eff / (u_avg * od) if u_avg * od > 0 else 0.0),
                         F(f'=IF(R{row}<=0,0,IF(V{row}*T{row}*G{row}*{L:g}-S{row}>0,'
                           f'R{row}/(V{row}*T{row}*G{row}*{L:g}-S{row}),""))',
                           0.0 if r.upfront_total_usd <= 0 else (r.upfront_total_usd / net if net > 0 else ""))]
            else:
                reco += [None, None, None]
        s.append([r.gpu_type, r.region, r.option, F(f"=Prices!$F${pr}", r.term_months), int(r.instances),
                  F(f"=Prices!$H${pr}", r.gpus_per_instance), F(f"=E{row}*F{row}", gpus),
                  F(f"=Prices!$G${pr}", eff), F(f"=G{row}*H{row}*P{row}", r.horizon_cost_usd),
                  F(f"=G{row}*(Prices!$D${pr}*Prices!$F${pr}*{L:g}+Prices!$E${pr}-Prices!$M${pr})", r.commitment_usd),
                  util.get((r.gpu_type, r.region), np.nan) if bought else None,
                  _date(getattr(r, "purchase_date", plan.inputs.periods[0])),
                  _date(getattr(r, "active_from", plan.inputs.periods[0])),
                  _date(getattr(r, "end_date", plan.inputs.periods[0])),
                  ("now" if getattr(r, "firm", True) else "planned"), hours_cell,
                  F(f"=J{row}-I{row}", r.liability_past_horizon_usd), F(f"=G{row}*Prices!$E${pr}", r.upfront_total_usd),
                  F(f"=G{row}*Prices!$D${pr}*{L:g}", r.monthly_recurring_usd)] + reco
                 + [float(getattr(r, "npv_usd", 0.0)) if bought else None, alternatives.get(i)])
    s.table("Purchases")


def _payment_text(plan: Plan) -> dict:
    """Per Purchases row bought with more than one payment option: "option $NPV; ..." (* = the one chosen)."""
    po = plan.payment_options
    if po is None or not len(po):
        return {}
    out = {}
    for i, g in po.groupby("purchase"):
        if len(g) > 1:
            out[int(i)] = "; ".join(f"{'*' if r.chosen else ''}{r.option} {_money(r.npv_usd)}" for r in g.itertuples())
    return out


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


def _price_value(plan: Plan, price_row: dict, key: tuple) -> float:
    """The hourly_usd of the Prices row ``price_row[key]`` (what its cell holds)."""
    return float(plan.inputs.tables.prices["hourly_usd"].iat[price_row[key] - 2])


def _write_allocation(ws, plan: Plan, price_row: dict, a: pd.DataFrame) -> None:
    s = _Sheet(ws, ["scenario", "period", "hours", "workload_class", "gpu_type", "region", "option", "gpus",
                    "gpu_hours", "probability", "expected_gpu_hours", "usd_per_gpu_hour", "expected_cost_usd"],
               {"period": DATE, "hours": "0.##", "gpus": NUM, "gpu_hours": NUM, "probability": "0.###",
                "expected_gpu_hours": NUM, "usd_per_gpu_hour": RATE, "expected_cost_usd": USD})
    s.header({"period": 18, "workload_class": 20})
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    prices = {k: _price_value(plan, price_row, k) for k in price_row if k[2] in ("on_demand", "spot")}
    cols = [a[c].tolist() for c in ("scenario", "period", "hours", "workload_class", "gpu_type", "region",
                                    "option", "gpus")]
    for i, (scen, per, hrs, cls, gt, rg, opt, gpus) in enumerate(zip(*cols)):
        row = i + 2
        gh = gpus * hrs
        ex = gh * prob[scen]
        if opt == "reserved":
            price, pv = 0, 0.0
        else:
            key = (gt, rg, opt, None)
            price = F(f"=Prices!$D${price_row[key]}", prices[key])
            pv = prices[key]
        s.append([scen, _date(per), hrs, cls, gt, rg, opt, gpus, F(f"=H{row}*C{row}", gh), prob[scen],
                  F(f"=I{row}*J{row}", ex), price, F(f"=K{row}*L{row}", ex * pv)])
    s.table("Allocation")


def _write_costs(ws, plan: Plan, purchases: pd.DataFrame, price_row: dict, a: pd.DataFrame) -> tuple[int, dict]:
    """Cost per reserved purchase and per pool and option, live over Allocation and Prices.

    Returns the rows written and the sum of the cost cells per cost kind (their cached values)."""
    s = _Sheet(ws, ["cost_kind", "gpu_type", "region", "option", "quantity", "unit", "gpu_hours",
                    "usd_per_gpu_hour", "cost_usd"],
               {"quantity": NUM, "gpu_hours": NUM, "usd_per_gpu_hour": RATE, "cost_usd": USD})
    s.header({"cost_kind": 14})
    last = max(len(a) + 1, 2)
    alloc = lambda c: f"Allocation!${c}$2:${c}${last}"  # noqa: E731
    full_term = plan.inputs.config.commitments.accounting == "full_term"
    totals = {"reserved": 0.0, "on_demand": 0.0, "spot": 0.0, "extension": 0.0}
    for i, r in enumerate(purchases.itertuples()):
        row, pr = s.rows + 1, price_row[_price_key(r)]
        hours = float(getattr(r, "hours_active", plan.inputs.horizon_hours))
        gh = r.instances * r.gpus_per_instance * hours
        value = float(r.commitment_usd) if full_term else gh * float(r.effective_usd_per_gpu_hour)
        cost = F(f"=Purchases!$J${i + 2}", value) if full_term else F(f"=G{row}*H{row}", value)
        s.append(["reserved", r.gpu_type, r.region, r.option, F(f"=Purchases!$E${i + 2}", int(r.instances)),
                  "instances", F(f"=E{row}*Prices!$H${pr}*Purchases!$P${i + 2}", gh),
                  F(f"=Prices!$G${pr}", float(r.effective_usd_per_gpu_hour)), cost])
        totals["reserved"] += value
    for r in _spend_rows(plan).itertuples():  # savings plans (USD/h x hours) and resales (values: no Prices row)
        if not r.units:
            continue
        value = float(r.commitment_usd) if full_term else float(r.horizon_cost_usd)
        exit_ = r.kind == "exit"
        s.append(["reserved", r.gpu_type if exit_ else None, r.region if exit_ else None,
                  s.text(f"{r.option} resold {pd.Timestamp(r.purchase_date).date()}" if exit_
                         else f"{r.option} ({r.plan_family})"), float(r.units),
                  "instances sold" if exit_ else "USD per hour", float(r.hours_active), None, value])
        totals["reserved"] += value
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    expected = (a["gpus"] * a["hours"] * a["scenario"].map(prob)).groupby(
        [a["gpu_type"], a["region"], a["option"]]).sum() if len(a) else pd.Series(dtype=float)
    for option in ("on_demand", "spot"):
        for (gt, rg, opt, _vf), pr in price_row.items():
            if opt != option:
                continue
            row = s.rows + 1
            gh = float(expected.get((gt, rg, opt), 0.0))
            price = _price_value(plan, price_row, (gt, rg, opt, _vf))
            # exact, case-sensitive matches: a SUMIFS criterion would read "=1+1", "*", "?", "~" or a
            # leading "<" / ">" in a pool's name as an operator or a wildcard
            qty = F(f'=SUMPRODUCT(--EXACT({alloc("E")},B{row}),--EXACT({alloc("F")},C{row}),'
                    f'--EXACT({alloc("G")},D{row}),{alloc("K")})', gh)
            s.append([option, gt, rg, opt, qty, "GPU-hours", F(f"=E{row}", gh), F(f"=Prices!$D${pr}", price),
                      F(f"=G{row}*H{row}", gh * price)])
            totals[option] += gh * price
    for (gt, rg), gh in _covered_gpu_hours(plan).items():  # on-demand GPU-hours a savings plan paid: a credit
        row = s.rows + 1
        key = (gt, rg, "on_demand", None)
        price = _price_value(plan, price_row, key)
        s.append(["on_demand", gt, rg, "savings plan coverage", -float(gh), "GPU-hours", F(f"=E{row}", -float(gh)),
                  F(f"=Prices!$D${price_row[key]}", price), F(f"=G{row}*H{row}", -float(gh) * price)])
        totals["on_demand"] -= float(gh) * price
    if "extension" in plan.cost:  # columns added through the model's extension hook (a value: not priced here)
        s.append(["extension", None, None, s.text(", ".join(sorted(plan.stats.get("extensions", [])))), None, None,
                  None, None, float(plan.cost["extension"])])
        totals["extension"] = float(plan.cost["extension"])
    s.table("Costs")
    return s.rows, totals


def _write_baseline(ws, plan: Plan, price_row: dict) -> tuple[int, float]:
    """The all-on-demand baseline per class, live over Prices: its demand GPU-hours (with headroom, expected,
    in reference GPUs) x the cheapest on-demand price per reference GPU-hour among its allowed pools."""
    inp = plan.inputs
    s = _Sheet(ws, ["workload_class", "demand_gpu_hours", "cheapest_usd_per_gpu_hour", "baseline_usd",
                    "pools_compared"],
               {"demand_gpu_hours": NUM, "cheapest_usd_per_gpu_hour": RATE, "baseline_usd": USD})
    s.header({"workload_class": 22, "demand_gpu_hours": 20, "cheapest_usd_per_gpu_hour": 26, "pools_compared": 60})
    od = inp.pools["od"].to_numpy(float)
    ref_hours = np.einsum("s,skt,t->k", inp.probability, inp.demand, inp.hours) * (1 + inp.headroom)
    total = 0.0
    for k, name in enumerate(inp.classes):
        row = s.rows + 1
        terms, values, pools = [], [], []
        for p in np.flatnonzero(inp.speed[k] > 0):
            gt, rg = inp.pools["gpu_type"].iat[p], inp.pools["region"].iat[p]
            key = (gt, rg, "on_demand", None)
            q = float(inp.speed[k, p] * inp.reliability[k, p])
            if key not in price_row or not np.isfinite(od[p]) or q <= 0:
                continue
            terms.append(f"Prices!$D${price_row[key]}/{q!r}")
            values.append(od[p] / q)
            pools.append(f"{gt}/{rg}")
        if not terms or ref_hours[k] <= 0:
            s.append([name, float(ref_hours[k]), None, 0.0, s.text(", ".join(pools) or "no on-demand pool")])
            continue
        cheapest = min(values)
        total += ref_hours[k] * cheapest
        s.append([name, float(ref_hours[k]), F("=MIN(" + ",".join(terms) + ")", cheapest),
                  F(f"=B{row}*C{row}", ref_hours[k] * cheapest), s.text(", ".join(pools))])
    s.table("Baseline")
    return s.rows, total


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
        ("savings_usd", "Savings against all on-demand", _savings_note(plan)),
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
        ("discount_rate", "Discount rate (a year)", "[finance] discount_rate; editable: the Cash flow sheet "
         "discounts month m (0 = the first) by (1 + rate)^(-m/12)"),
        ("npv_usd", "NPV of the cash, to the last term's end", "Cash flow sheet, discounted_usd (plan.json npv_usd)"),
    ]


def _savings_note(plan: Plan) -> str:
    """What the savings compare, and the figure net of the inventory (the baseline rents its share too)."""
    owned = float(inventory_table(plan.inputs)["horizon_cost_usd"].sum())
    note = "baseline - total cost"
    if owned > 0 and plan.baseline_all_on_demand == plan.baseline_all_on_demand:
        note += (f"; the baseline also rents on demand what the inventory serves: against the bill (inventory "
                 f"included) the saving is ${plan.baseline_all_on_demand - plan.cost['total'] - owned:,.0f}")
    if plan.shortfall_gpu_hours > 1e-6:
        note += "; part of it is demand the plan does not meet (Shortfall)"
    return note


def _liability_note(plan: Plan) -> str:
    """The plain sentence when most of the liability falls past the forecast; the Cash flow sheet otherwise."""
    c = plan.commitments
    full, past = c.get("reserved_full_term_usd", 0.0), c.get("liability_past_horizon_usd", 0.0)
    if full > 0 and past > 0.5 * full:
        return (f"{100 * past / full:.0f} % of the commitments signed is owed after the forecast ends: the plan "
                "assumes demand past the forecast keeps them busy. Cash flow sheet: when each dollar is paid")
    return "Cash flow sheet: when each dollar is paid"


def _write_summary(ws, plan: Plan, layout: list[tuple], cost_rows: int, purchases: pd.DataFrame,
                   inventory: pd.DataFrame, cost_values: dict, baseline: tuple[int, float]) -> None:
    s = _Sheet(ws, ["item", "value", "note"])
    s.header({"item": 44, "value": 22, "note": 70})
    ws.set_portrait()
    ws.fit_to_pages(1, 1)  # the decision on one page
    inp = plan.inputs
    costs = lambda c: f"Costs!${c}$2:${c}${cost_rows}"  # noqa: E731
    last_p = max(len(purchases) + 1, 2)
    row_of = {key: i + 2 for i, (key, *_r) in enumerate(layout)}
    short = plan.shortfall_gpu_hours
    total = sum(cost_values.values())
    committed = float(inventory["horizon_cost_usd"].sum()) if len(inventory) else 0.0
    base_rows, base = baseline
    savings = base - total
    bought = purchases[purchases["instances"] > 0]
    npv_col, npv_rows = _cash_npv_column(plan, purchases)
    spend_rows = _spend_rows(plan)
    sp_sum = lambda col: float(spend_rows[col].sum()) if len(spend_rows) else 0.0  # noqa: E731 (savings plans)
    values = {
        "total_cost_usd": (F(f"=SUM({costs('I')})", total), USD0),
        "already_committed_usd": (F(f"=SUM(Inventory!$J$2:$J${max(len(inventory) + 1, 2)})", committed), USD0),
        "bill_usd": (F(f"=B{row_of['total_cost_usd']}+B{row_of['already_committed_usd']}", total + committed), USD0),
        "reserved_cost_usd": (F(f'=SUMIFS({costs("I")},{costs("A")},"reserved")', cost_values["reserved"]), USD0),
        "on_demand_cost_usd": (F(f'=SUMIFS({costs("I")},{costs("A")},"on_demand")', cost_values["on_demand"]), USD0),
        "spot_cost_usd": (F(f'=SUMIFS({costs("I")},{costs("A")},"spot")', cost_values["spot"]), USD0),
        "all_on_demand_usd": (F(f"=SUM(Baseline!$D$2:$D${max(base_rows, 2)})", base), USD0),
        "savings_usd": (F(f"=B{row_of['all_on_demand_usd']}-B{row_of['total_cost_usd']}", savings), USD0),
        "savings_pct": (F(f"=IF(B{row_of['all_on_demand_usd']}>0,B{row_of['savings_usd']}/B{row_of['all_on_demand_usd']},0)",
                          savings / base if base > 0 else 0.0), PCT),
        "commitment_usd": (F(f"=SUM(Purchases!$J$2:$J${last_p}){_plus(sp_sum('commitment_usd'))}",
                             float(purchases["commitment_usd"].sum()) + sp_sum("commitment_usd")), USD0),
        "amortised_usd": (F(f"=SUM(Purchases!$I$2:$I${last_p}){_plus(sp_sum('horizon_cost_usd'))}",
                            float(purchases["horizon_cost_usd"].sum()) + sp_sum("horizon_cost_usd")), USD0),
        "liability_past_horizon_usd": (F(f"=SUM(Purchases!$Q$2:$Q${last_p})"
                                         f"{_plus(sp_sum('liability_past_horizon_usd'))}",
                                         float(purchases["liability_past_horizon_usd"].sum())
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
        s.append([label, cell, note])
    for r in bought.itertuples():  # what to buy, in the words a purchase order uses
        when = pd.Timestamp(r.purchase_date).date().isoformat() if hasattr(r, "purchase_date") else "now"
        s.append(["Buy" if getattr(r, "firm", True) else "Buy later (planned)", s.cell(float(r.gpus), INT),
                  s.text(f"GPUs: {int(r.instances):,} x {r.gpus_per_instance:g}-GPU instances of {r.gpu_type}, "
                         f"{r.option} in {r.region}, on {when}; ${r.commitment_usd:,.0f} over the term")])
    for r in plan.purchases[plan.purchases["kind"].eq("exit") & (plan.purchases["instances"] > 0)].itertuples() \
            if "kind" in plan.purchases else []:  # resales planned: what to sell, when
        s.append(["Sell later (planned)", s.cell(float(-r.gpus), INT),
                  s.text(f"GPUs: {int(r.instances):,} instances of {r.gpu_type} {r.option} in {r.region}, on "
                         f"{pd.Timestamp(r.purchase_date).date()} (resale); saves ${-r.commitment_usd:,.0f} of the term")])
    for r in (plan.spend[plan.spend["usd_per_hour"] > 0].itertuples() if plan.spend is not None and len(plan.spend)
              else []):  # savings plans: a dollar commitment per hour
        s.append(["Commit" if r.firm else "Commit later (planned)", s.cell(float(r.usd_per_hour), RATE),
                  s.text(f"USD per hour to {r.option} ({r.plan_family}) on {pd.Timestamp(r.purchase_date).date()}, "
                         f"until {pd.Timestamp(r.end_date).date()}: ${r.committed_usd:,.0f} in the horizon, "
                         f"{100 * r.utilisation:.1f} % used (Savings plans sheet)")])
    if not len(bought) and not (plan.spend is not None and len(plan.spend) and (plan.spend["usd_per_hour"] > 0).any()):
        s.append(["Buy", s.cell(0.0, INT), "no reserved purchase pays on this forecast"])
    for b in (plan.budget.itertuples() if plan.budget is not None else []):  # the [budget] caps and the spend
        what = "total" if b.name == "budget_total" else b.name.replace("budget_month_", "").replace("_", "-")
        s.append([f"Budget {what}", s.cell(float(b.spend_usd), USD0, RED if b.binding else None),
                  s.text(f"spend of a cap of ${b.cap_usd:,.0f}" + (": binding (Shadow prices: what one more USD "
                                                                    "is worth)" if b.binding else ""))])
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
    chart = ws.planner_book.wb.add_chart({"type": "column"})
    first, last = row_of["reserved_cost_usd"] - 1, row_of["spot_cost_usd"] - 1
    chart.add_series({"name": "Expected cost", "categories": ["Summary", first, 0, last, 0],
                      "values": ["Summary", first, 1, last, 1], "data_labels": {"value": True, "num_format": USD0}})
    chart.set_title({"name": "Expected cost by option (USD)"})
    chart.set_legend({"none": True})
    chart.set_y_axis({"name": "USD", "num_format": USD0})
    chart.set_size({"width": 520, "height": 290})
    ws.insert_chart("E2", chart)


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
    s.note()  # the notes stand below the table
    for note in notes:
        s.note(note)


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
        s.append([_date(per)] + vals + [F(f"=C{row}+D{row}+E{row}", vals[1] + vals[2] + vals[3]),
                                        F(f"=IF(B{row}>0,C{row}/B{row},0)", vals[1] / vals[0] if vals[0] > 0 else 0)])
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
    area.set_y_axis({"name": "GPUs", "num_format": INT})
    area.set_size({"width": 900, "height": 340})
    ws.insert_chart("I2", area)
    util = wb.add_chart({"type": "column"})
    util.add_series({"name": "reserved utilisation", "categories": ["Fleet", 1, 0, n, 0],
                     "values": ["Fleet", 1, 6, n, 6], "gap": 20})
    util.set_title({"name": f"Reserved utilisation per {unit}"})
    util.set_x_axis({"name": unit, "date_axis": True, "num_format": "yyyy-mm-dd"})
    util.set_y_axis({"name": "used / owned", "num_format": "0%", "max": 1})
    util.set_legend({"none": True})
    util.set_size({"width": 900, "height": 260})
    ws.insert_chart("I21", util)


def _write_scenarios(ws, plan: Plan) -> None:
    s = _Sheet(ws, ["scenario", "probability", "reserved_usd", "on_demand_usd", "spot_usd", "total_usd",
                    "shortfall_gpu_hours"],
               {"probability": PCT, "reserved_usd": USD, "on_demand_usd": USD, "spot_usd": USD, "total_usd": USD,
                "shortfall_gpu_hours": NUM})
    s.header({"scenario": 18})
    for i, r in enumerate(plan.scenario_costs.itertuples()):
        row = i + 2
        s.append([r.scenario, r.probability, r.reserved, r.on_demand, r.spot,
                  F(f"=C{row}+D{row}+E{row}", r.reserved + r.on_demand + r.spot), r.shortfall_gpu_hours])
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
            "slo_percentile", "latency_at_percentile_ms", "p_latency_above_slo", "slo_met", "serving_gpu_types"]
    s = _Sheet(ws, cols, {"period": DATE, "requests_per_s": "#,##0.00", "replicas": "#,##0", "gpus": NUM,
                          "latency_slo_ms": "#,##0", "latency_at_percentile_ms": "#,##0",
                          "p_latency_above_slo": "0.000%"})
    s.header({"period": 18, "workload_class": 20})
    lat = plan.latency
    for r in lat.itertuples() if len(lat) else []:
        s.append([r.scenario, _date(r.period), r.workload_class, r.requests_per_s, int(r.replicas), r.gpus,
                  r.latency_slo_ms, r.slo_percentile, r.latency_at_percentile_ms, r.p_latency_above_slo,
                  "yes" if r.slo_met else "no", getattr(r, "serving_gpu_types", "")])
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


def _write_showback(ws, plan: Plan, n_alloc: int = 0, n_purchases: int = 0) -> None:
    """Cost and GPU-hours per class and team (planner.showback: reserved by use, idle pro rata to use), live.

    On-demand and spot per class are live over Allocation. The reserved columns are live too: to the right
    of the table, each class's reserved GPU-hours and its share of each pool's use (values: quantities),
    and below them per pool its purchases' cost (live over Purchases), GPU-hours owned and used, the rate
    (cost / owned), the idle cost and the cost nobody used; a class pays use x rate plus its share of
    the idle cost. Edit a reserved price and every column moves with the Summary.
    """
    from ..showback import by_class, reserved_use, spend_cost

    inp = plan.inputs
    cols = ["team", "workload_class", "reserved_gpu_hours", "on_demand_gpu_hours", "spot_gpu_hours",
            "reserved_used_usd", "reserved_idle_usd", "on_demand_usd", "spot_usd", "total_usd", "savings_plan_usd"]
    s = _Sheet(ws, cols, {c: (USD if c.endswith("usd") else NUM) for c in cols[2:]})
    s.header({"team": 20, "workload_class": 20})
    if not plan.status.has_plan:
        s.table("Showback")
        return
    last = max(n_alloc + 1, 2)
    alloc = lambda c: f"Allocation!${c}$2:${c}${last}"  # noqa: E731
    pur = lambda c: f"Purchases!${c}$2:${c}${max(n_purchases + 1, 2)}"  # noqa: E731
    table = by_class(plan).to_dict("records")
    parts = reserved_use(plan)
    use, owned, cost = parts["use"], parts["owned"], parts["cost"]
    used = use.sum(axis=0)
    P = inp.P
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(owned > 0, cost / owned, 0.0)
        share = np.where(used > 0, use / used, 0.0)
    idle = rate * np.clip(owned - used, 0.0, None)
    unused = np.where(used > 0, 0.0, cost)
    u0, s0 = len(cols) + 1, len(cols) + 2 + P  # first columns of the use and share blocks (0-based)
    colname = lambda j: xl_col_to_name(j)  # noqa: E731
    head = s.book.fmt(head=True)
    pools = [f"{g}/{r}" for g, r in zip(inp.pools["gpu_type"], inp.pools["region"])]
    for q, name in enumerate(pools):
        ws.write_string(0, u0 + q, f"reserved GPU-h {name}", head)
        ws.write_string(0, s0 + q, f"share of use {name}", head)
        ws.set_column(u0 + q, u0 + q, 16)
        ws.set_column(s0 + q, s0 + q, 16)
    pool_top = len(table) + 4  # the per-pool rows below the class rows (1-based row numbers)
    rows_of = {"gpu_type": pool_top, "region": pool_top + 1, "cost": pool_top + 2, "owned": pool_top + 3,
               "used": pool_top + 4, "rate": pool_top + 5, "idle": pool_top + 6, "unused": pool_top + 7}
    rng = lambda key: f"${colname(u0)}${rows_of[key]}:${colname(u0 + P - 1)}${rows_of[key]}"  # noqa: E731
    full_term = inp.config.commitments.accounting == "full_term"
    for i, r in enumerate(table):
        row = i + 2
        k = inp.classes.index(r["workload_class"]) if r["workload_class"] in inp.classes else None
        if k is None:  # the cost nobody used: pools without use, the liability past the horizon, extensions
            extra = (f"+SUM({pur('Q')})" if full_term else "") + (f"+{float(plan.cost['extension'])!r}"
                                                                 if "extension" in plan.cost else "")
            sp_left = spend_cost(plan) - sum(float(x.get("savings_plan_usd", 0.0)) for x in table)
            extra += f"+{sp_left!r}" if sp_left > 1e-9 else ""  # a savings plan nobody's usage drew on
            s.append([r["team"], r["workload_class"], r["reserved_gpu_hours"], r["on_demand_gpu_hours"],
                      r["spot_gpu_hours"], 0.0, F(f"=SUM({rng('unused')}){extra}", r["reserved_idle_usd"]),
                      r["on_demand_usd"], r["spot_usd"], F(f"=F{row}+G{row}+H{row}+I{row}+K{row}", r["total_usd"]),
                      float(r.get("savings_plan_usd", 0.0))])
            continue
        for q in range(P):
            s._write(row - 1, u0 + q, float(use[k, q]), NUM)
            s._write(row - 1, s0 + q, float(share[k, q]), PCT)
        use_row = f"{colname(u0)}{row}:{colname(u0 + P - 1)}{row}"
        share_row = f"{colname(s0)}{row}:{colname(s0 + P - 1)}{row}"
        live = n_alloc > 0
        credit = float(r.get("savings_plan_credit_usd", 0.0))  # what savings plans paid of its on-demand (a value)
        od = F(f'=SUMPRODUCT(--EXACT({alloc("D")},B{row}),--EXACT({alloc("G")},"on_demand"),{alloc("M")})'
               + (f"-{credit!r}" if credit else ""), r["on_demand_usd"]) if live else r["on_demand_usd"]
        sp = F(f'=SUMPRODUCT(--EXACT({alloc("D")},B{row}),--EXACT({alloc("G")},"spot"),{alloc("M")})',
               r["spot_usd"]) if live else r["spot_usd"]
        s.append([r["team"], r["workload_class"], r["reserved_gpu_hours"], r["on_demand_gpu_hours"],
                  r["spot_gpu_hours"], F(f"=SUMPRODUCT({use_row},{rng('rate')})", float(use[k] @ rate)),
                  F(f"=SUMPRODUCT({share_row},{rng('idle')})", float(share[k] @ idle)), od, sp,
                  F(f"=F{row}+G{row}+H{row}+I{row}+K{row}", r["total_usd"]), float(r.get("savings_plan_usd", 0.0))])
    s.table("Showback")
    labels = {"gpu_type": "GPU type", "region": "region", "cost": "reserved cost (USD, live over Purchases)",
              "owned": "reserved GPU-hours owned", "used": "reserved GPU-hours used",
              "rate": "USD per owned GPU-hour (live)", "idle": "idle cost (USD, live)",
              "unused": "cost nobody used (USD, live)"}
    for key, row in rows_of.items():
        ws.write_string(row - 1, u0 - 1, labels[key], s.book.fmt(bold=True))
    ws.set_column(u0 - 1, u0 - 1, 34)
    for q, (g, rg) in enumerate(zip(inp.pools["gpu_type"], inp.pools["region"])):
        c = colname(u0 + q)
        ws.write_string(rows_of["gpu_type"] - 1, u0 + q, str(g))
        ws.write_string(rows_of["region"] - 1, u0 + q, str(rg))
        resold = _spend_rows(plan)  # resales of this pool's terms (no Purchases row): their saving, a value
        resold = resold[resold["kind"].eq("exit") & resold["gpu_type"].eq(g) & resold["region"].eq(rg)]
        extra = float(resold["horizon_cost_usd"].sum()) if len(resold) else 0.0
        ws.write_formula(rows_of["cost"] - 1, u0 + q, f'=SUMPRODUCT(--EXACT({pur("A")},{c}${rows_of["gpu_type"]}),'
                         f'--EXACT({pur("B")},{c}${rows_of["region"]}),{pur("I")}){"+" + repr(extra) if extra else ""}',
                         s.book.fmt(USD), float(cost[q]))
        ws.write_number(rows_of["owned"] - 1, u0 + q, float(owned[q]), s.book.fmt(NUM))
        ws.write_number(rows_of["used"] - 1, u0 + q, float(used[q]), s.book.fmt(NUM))
        ws.write_formula(rows_of["rate"] - 1, u0 + q, f"=IF({c}{rows_of['owned']}>0,{c}{rows_of['cost']}/"
                         f"{c}{rows_of['owned']},0)", s.book.fmt(RATE), float(rate[q]))
        ws.write_formula(rows_of["idle"] - 1, u0 + q, f"={c}{rows_of['rate']}*MAX({c}{rows_of['owned']}-"
                         f"{c}{rows_of['used']},0)", s.book.fmt(USD), float(idle[q]))
        ws.write_formula(rows_of["unused"] - 1, u0 + q, f"=IF({c}{rows_of['used']}>0,0,{c}{rows_of['cost']})",
                         s.book.fmt(USD), float(unused[q]))


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
        rate = F(f"=Prices!$G${pr}", r.effective_usd_per_gpu_hour) if pr else 0.0
        s.append([r.gpu_type, r.region, r.option, float(r.gpus), _date(r.start), _date(r.end),
                  F(f"=Prices!$F${pr}", r.term_months) if pr else None, rate, float(r.hours_in_horizon),
                  F(f"=D{row}*H{row}*I{row}", r.horizon_cost_usd if pr else 0.0),
                  float(r.hours_after_horizon), F(f"=D{row}*Prices!$D${pr}*K{row}", r.recurring_after_horizon_usd)
                  if pr else 0.0,
                  "yes" if r.expires_in_horizon else "no",
                  "yes" if r.priced else "no: the price sheet has no such reserved option"])
    s.table("Inventory")


def _write_showback_by_month(ws, plan: Plan) -> None:
    """Chargeback per calendar month and class (planner.showback.by_month), with a live total per row."""
    from ..showback import by_month

    cols = ["month", "team", "workload_class", "reserved_used_usd", "reserved_idle_usd", "on_demand_usd", "spot_usd",
            "savings_plan_usd", "total_usd"]
    s = _Sheet(ws, cols, {c: USD for c in cols[3:]})
    s.header({"team": 20, "workload_class": 20})
    if plan.status.has_plan:
        for i, r in enumerate(by_month(plan).to_dict("records")):
            row = i + 2
            s.append([r[c] for c in cols[:-1]] + [F(f"=D{row}+E{row}+F{row}+G{row}+H{row}", r["total_usd"])])
    s.table("ShowbackByMonth")


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
            s.append([r.family, r.name, r.unit, float(r.shadow_price_usd),
                      None if r.per_month_usd is None or pd.isna(r.per_month_usd) else float(r.per_month_usd),
                      r.meaning])
    s.table("ShadowPrices")


def _cash_layout(plan: Plan, purchases: pd.DataFrame):
    """What the Cash flow sheet lays out: the purchases bought (their rows in Purchases), the months, each
    purchase's active hours per month, the expected on-demand/spot GPU-hours per pool and month, the pools."""
    from ..ladder import active_hours_by_month, schedule_months

    inp = plan.inputs
    bought_idx = [i for i, r in enumerate(purchases.itertuples()) if r.instances > 0]
    bought = purchases.iloc[bought_idx]
    if len(plan.cash_schedule):  # every month of the plan's cash, savings plans' terms included
        months = pd.PeriodIndex(plan.cash_schedule["month"], freq="M")
    else:
        months = schedule_months(bought, inp.periods) if len(bought) else pd.period_range(
            inp.periods[0].to_period("M"), inp.periods[-1].to_period("M"), freq="M")
    hours = active_hours_by_month(bought, months) if len(bought) else np.zeros((0, len(months)))
    a = plan.allocation
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    gh = pd.DataFrame({"month": a["period"].dt.strftime("%Y-%m"), "gpu_type": a["gpu_type"], "region": a["region"],
                       "option": a["option"], "gh": a["gpu_hours"] * a["scenario"].map(prob)})
    gh = gh[gh["option"].isin(["on_demand", "spot"])].groupby(["option", "gpu_type", "region", "month"])["gh"].sum()
    for (gt, rg, m), c in _covered_gpu_hours(plan, by_month=True).items():  # what savings plans paid is not billed
        gh[("on_demand", gt, rg, m)] = gh.get(("on_demand", gt, rg, m), 0.0) - float(c)
    pool_cols = [(opt, gt, rg) for opt, gt, rg in sorted({k[:3] for k in gh.index})]
    return bought_idx, bought, months, hours, gh, pool_cols


def _cash_npv_column(plan: Plan, purchases: pd.DataFrame) -> tuple[str, int]:
    """(letter, months) of the Cash flow sheet's discounted_usd column (after the ladder columns)."""
    if not len(plan.cash_schedule):
        return "A", 0
    _, bought, months, _, _, pool_cols = _cash_layout(plan, purchases)
    return xl_col_to_name(8 + 2 * len(bought) + len(pool_cols) + 1 - 1), len(months)


def _purchase_label(r) -> str:
    """A purchase in a column header: option, date (a block: its window's start) and pool."""
    when = pd.Timestamp(r.block_start) if getattr(r, "kind", "instance") == "window" else pd.Timestamp(r.purchase_date)
    return f"{r.option} {when:%Y-%m-%d}{' ' + format(when, '%H:%M') if when.hour or when.minute else ''} " \
           f"{r.gpu_type}/{r.region}"


def _write_cash_flow(ws, plan: Plan, purchases: pd.DataFrame, price_row: dict) -> None:
    """Cash per calendar month to the end of the last term, live over Prices, with a cash chart and a ladder chart.

    Columns A-F are the cash (upfront, reserved recurring, on-demand, spot, total). To their right, values the
    formulas read: each purchase's hours active in the month, on-demand and spot GPU-hours per pool and month
    (expected over scenarios); then each purchase's GPUs owned in the month (the ladder). Edit a price in
    Prices and every month moves; the columns add up to plan.json's ``cash_schedule``.
    """
    inp = plan.inputs
    cash = plan.cash_schedule
    if not len(cash):
        ws.write_string(0, 0, "no cash schedule (no plan)")
        return
    bought_idx, bought, months, hours, gh, pool_cols = _cash_layout(plan, purchases)
    label = list(months.strftime("%Y-%m"))
    names = ["month", "upfront_usd", "reserved_recurring_usd", "on_demand_usd", "spot_usd", "total_usd", ""]
    names += [f"hours {_purchase_label(r)}" for r in bought.itertuples()]
    names += [f"GPU-hours {opt} {gt}/{rg}" for opt, gt, rg in pool_cols]
    names += [f"GPUs {_purchase_label(r)}" for r in bought.itertuples()]
    names += ["discount_factor", "discounted_usd"]
    s = _Sheet(ws, names, {n: USD for n in names[1:6]} | {"discount_factor": "0.0000", "discounted_usd": USD})
    s.header({"month": 10, "": 3})
    h0 = 8  # first helper column (H)
    g0 = h0 + len(bought)  # GPU-hours columns
    l0 = g0 + len(pool_cols)  # ladder columns
    letter = lambda i: xl_col_to_name(i - 1)  # noqa: E731 (1-based, as the row numbers)
    spelled = len(bought) <= MAX_FORMULA_TERMS and len(pool_cols) <= MAX_FORMULA_TERMS
    rate = float(plan.finance.get("discount_rate", 0.0)) if plan.finance else 0.0
    purchase_month = {j: pd.Timestamp(getattr(r, "cash_date", r.purchase_date)).strftime("%Y-%m")
                      for j, r in enumerate(bought.itertuples())}  # the upfront's month (a block: its start)
    end_month = {j: (pd.Timestamp(r.end_date) - pd.Timedelta(hours=1)).strftime("%Y-%m")
                 for j, r in enumerate(bought.itertuples())}
    prices = inp.tables.prices
    hourly = {j: float(prices["hourly_usd"].iat[price_row[_price_key(r)] - 2]) for j, r in enumerate(bought.itertuples())}
    pool_price = {q: _price_value(plan, price_row, (gt, rg, opt, None)) for q, (opt, gt, rg) in enumerate(pool_cols)}
    spend_cash = _spend_cash(plan)  # savings plans (no Prices row): their upfront and recurring cash, values
    for i, m in enumerate(label):
        row = i + 2
        c = cash.iloc[i] if i < len(cash) else None
        gh_m = [float(gh.get((opt, gt, rg, m), 0.0)) for opt, gt, rg in pool_cols]
        if spelled:
            up = [f"Purchases!$R${bought_idx[j] + 2}" for j in range(len(bought)) if purchase_month[j] == m]
            up_v = sum(float(r.upfront_total_usd) for j, r in enumerate(bought.itertuples()) if purchase_month[j] == m)
            up += [f"-Purchases!$G${bought_idx[j] + 2}*Prices!$M${price_row[_price_key(r)]}"
                   for j, r in enumerate(bought.itertuples()) if end_month[j] == m]  # residual value back
            up_v -= sum(float(r.residual_total_usd) for j, r in enumerate(bought.itertuples()) if end_month[j] == m)
            rec = [f"{letter(h0 + j)}{row}*Purchases!$G${bought_idx[j] + 2}*Prices!$D$"
                   f"{price_row[_price_key(r)]}" for j, r in enumerate(bought.itertuples())]
            rec_v = sum(float(hours[j, i]) * float(r.gpus) * hourly[j] for j, r in enumerate(bought.itertuples()))
            od = [f"{letter(g0 + q)}{row}*Prices!$D${price_row[(gt, rg, opt, None)]}"
                  for q, (opt, gt, rg) in enumerate(pool_cols) if opt == "on_demand"]
            od_v = sum(gh_m[q] * pool_price[q] for q, (opt, _g, _r) in enumerate(pool_cols) if opt == "on_demand")
            sp = [f"{letter(g0 + q)}{row}*Prices!$D${price_row[(gt, rg, opt, None)]}"
                  for q, (opt, gt, rg) in enumerate(pool_cols) if opt == "spot"]
            sp_v = sum(gh_m[q] * pool_price[q] for q, (opt, _g, _r) in enumerate(pool_cols) if opt == "spot")
            if m in spend_cash.index:
                su, sr = (float(x) for x in spend_cash.loc[m, ["upfront_usd", "reserved_recurring_usd"]])
                if su:
                    up.append(repr(su))
                    up_v += su
                if sr:
                    rec.append(repr(sr))
                    rec_v += sr
            cells = [F("=" + ("+".join(x) if x else "0"), v if x else 0.0)
                     for x, v in ((up, up_v), (rec, rec_v), (od, od_v), (sp, sp_v))]
            month_total = up_v + rec_v + od_v + sp_v
        else:  # too many terms for one formula: the values, as in plan.json
            cells = [float(c[k]) for k in ("upfront_usd", "reserved_recurring_usd", "on_demand_usd", "spot_usd")]
            month_total = sum(cells)
        values = [m, *cells, F(f"=SUM(B{row}:E{row})", month_total), None]
        values += [float(x) for x in hours[:, i]]
        values += gh_m
        values += [F(f"=IF({letter(h0 + j)}{row}>0,Purchases!$G${bought_idx[j] + 2},0)",
                     float(r.gpus) if hours[j, i] > 0 else 0.0) for j, r in enumerate(bought.itertuples())]
        factor = (1.0 + rate) ** (-i / 12.0)
        d0 = l0 + len(bought)  # the discount factor's column (1-based)
        values += [F(f"=(1+discount_rate)^(-{i}/12)", factor), F(f"=F{row}*{letter(d0)}{row}", month_total * factor)]
        s.append(values)
    n = s.rows - 1  # last data row (0-based)
    wb = ws.planner_book.wb
    chart = wb.add_chart({"type": "column", "subtype": "stacked"})
    for c_, name in ((1, "upfront"), (2, "reserved recurring"), (3, "on-demand"), (4, "spot")):
        chart.add_series({"name": name, "categories": ["Cash flow", 1, 0, n, 0],
                          "values": ["Cash flow", 1, c_, n, c_], "gap": 30})
    chart.set_title({"name": "Cash out per month (USD)"})
    chart.set_y_axis({"name": "USD", "num_format": USD0})
    chart.set_x_axis({"name": "month"})
    chart.set_size({"width": 900, "height": 380})
    ws.insert_chart(f"{letter(l0 + len(bought) + 3)}2", chart)
    if len(bought):
        ladder = wb.add_chart({"type": "area", "subtype": "stacked"})
        for j in range(len(bought)):
            col = l0 - 1 + j
            ladder.add_series({"name": ["Cash flow", 0, col], "categories": ["Cash flow", 1, 0, n, 0],
                               "values": ["Cash flow", 1, col, n, col]})
        ladder.set_title({"name": "Reserved GPUs owned, by purchase (the ladder)"})
        ladder.set_y_axis({"name": "GPUs", "num_format": INT})
        ladder.set_x_axis({"name": "month"})
        ladder.set_size({"width": 900, "height": 380})
        ws.insert_chart(f"{letter(l0 + len(bought) + 3)}24", ladder)


VALUED_KINDS = ("spend", "exit")  # commitments-table rows the workbook carries as values (no Prices row)


def _spend_rows(plan: Plan) -> pd.DataFrame:
    """The plan's rows without a Prices row of their own (savings plans, resales), bought or not."""
    pur = plan.purchases
    return pur[pur["kind"].isin(VALUED_KINDS)] if "kind" in pur else pur.iloc[0:0]


def _covered_gpu_hours(plan: Plan, by_month: bool = False) -> pd.Series:
    """Expected on-demand GPU-hours savings plans paid, per (gpu_type, region) [and month]."""
    f = plan.fleet
    if "on_demand_covered" not in f or not (f["on_demand_covered"] > 0).any():
        return pd.Series(dtype=float)
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    gh = f["on_demand_covered"] * f["hours"] * f["scenario"].map(prob)
    keys = [f["gpu_type"], f["region"]] + ([f["period"].dt.strftime("%Y-%m")] if by_month else [])
    out = gh.groupby(keys).sum()
    return out[out > 0]


def _write_savings_plans(ws, plan: Plan) -> None:
    """One row per savings-plan commitment (option, family, purchase date): USD per hour committed, its cost,
    the usage it paid (GPU-hours; USD at its rates and at on-demand), utilisation and saving (values)."""
    cols = ["option", "plan_family", "purchase_date", "end_date", "firm", "usd_per_hour", "hours_active",
            "committed_usd", "covered_gpu_hours", "covered_at_rates_usd", "covered_at_on_demand_usd", "utilisation",
            "savings_usd"]
    s = _Sheet(ws, cols, {"purchase_date": DATE, "end_date": DATE, "usd_per_hour": RATE, "hours_active": NUM,
                          "committed_usd": USD, "covered_gpu_hours": NUM, "covered_at_rates_usd": USD,
                          "covered_at_on_demand_usd": USD, "utilisation": PCT, "savings_usd": USD})
    s.header({"option": 20, "plan_family": 20})
    sp = plan.spend
    for r in sp.itertuples() if sp is not None and len(sp) else []:
        s.append([r.option, s.text(str(r.plan_family)), _date(r.purchase_date), _date(r.end_date),
                  "now" if r.firm else "planned", float(r.usd_per_hour), float(r.hours_active), float(r.committed_usd),
                  float(r.covered_gpu_hours), float(r.covered_at_rates_usd), float(r.covered_at_on_demand_usd),
                  float(r.utilisation), float(r.savings_usd)])
    if sp is None or not len(sp):
        s.append([s.text("no savings plan in the price sheet")] + [None] * (len(cols) - 1))
    s.table("SavingsPlans")


def _spend_cash(plan: Plan) -> pd.DataFrame:
    """Per month ("YYYY-MM" index): the savings plans' upfront and recurring cash (planner.ladder.cash_schedule)."""
    from ..ladder import cash_schedule

    rows = _spend_rows(plan)
    rows = rows[rows["quantity"].abs() > 0] if len(rows) else rows  # a resale is negative cash
    if not len(rows):
        return pd.DataFrame(columns=["upfront_usd", "reserved_recurring_usd"])
    cash = cash_schedule(rows, plan.inputs.periods, pd.Series(dtype=float), pd.Series(dtype=float))
    return cash.set_index("month")[["upfront_usd", "reserved_recurring_usd"]]


def _plus(value: float) -> str:
    """``+value`` for a formula (savings plans' figures, which have no Purchases row), or nothing at 0."""
    return f"+{value!r}" if value else ""
