"""The finance sheets: showback (chargeback), cash flow, inventory, savings plans."""

from __future__ import annotations

from types import SimpleNamespace
import numpy as np
import pandas as pd
from xlsxwriter.utility import xl_col_to_name
from planner.core.frames import lookup, time_text
from planner.results.plan import Plan
from planner.report.workbook.book import MONTH, DAY, COLUMNS, ref, span, F, INT, NUM, PCT, RATE, USD, USD0, _Sheet, _date
from planner.report.workbook.costs import _covered_gpu_hours, _price_key, _price_value, _spend_rows
from planner.inputs import rented, supply


MONTH_AXIS = {"name": "month", "date_axis": True, "num_format": "mmm yyyy", "num_font": {"rotation": -45},
              "major_unit": 3, "major_unit_type": "months", "base_unit": "months"}

def _write_showback(ws, plan: Plan, n_alloc: int = 0, n_purchases: int = 0) -> None:
    """Cost and GPU-hours per class and team (planner.report.showback: reserved by use, idle pro rata to use), live.

    On-demand and spot per class are live over Allocation. The reserved columns are live too: to the right
    of the table, each class's reserved GPU-hours and its share of each pool's use (values: quantities),
    and below them per pool its purchases' cost (live over Purchases), GPU-hours owned and used, the rate
    (cost / owned), the idle cost and the cost nobody used; a class pays use x rate plus its share of
    the idle cost. Edit a reserved price and every column moves with the Summary.
    """
    from planner.report.showback import by_class, reserved_use, spend_cost

    inp = plan.inputs
    others = [k for k in rented.reported(inp.pools) if k not in rented.ALWAYS]  # flex-start: appended columns
    cols = ["team", "workload_class", "reserved_gpu_hours", "on_demand_gpu_hours", "spot_gpu_hours",
            "reserved_used_usd", "reserved_idle_usd", "on_demand_usd", "spot_usd", "total_usd", "savings_plan_usd",
            *(c for k in others for c in (f"{k}_gpu_hours", f"{k}_usd"))]
    s = _Sheet(ws, cols, {c: (USD if c.endswith("usd") else NUM) for c in cols[2:]})
    s.header({"team": 20, "workload_class": 20})
    if not plan.status.has_plan:
        s.table("Showback")
        return
    last = max(n_alloc + 1, 2)
    A = SimpleNamespace(**{n: span("Allocation", n, 2, last) for n in COLUMNS["Allocation"]})
    pur = lambda name: span("Purchases", name, 2, max(n_purchases + 1, 2))  # noqa: E731
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
        tail = [r.get(c, 0.0) for c in cols[11:]]  # other rented kinds (flex-start): GPU-hours and cost, values
        more = "".join(f"+{xl_col_to_name(cols.index(f'{k}_usd'))}{row}" for k in others)
        k = inp.classes.index(r["workload_class"]) if r["workload_class"] in inp.classes else None
        if k is None:  # the cost nobody used: pools without use, the liability past the horizon, extensions
            extra = (f"+SUMPRODUCT({pur('liability_past_horizon_usd')},{pur('probability')})" if full_term else "") + (f"+{float(plan.cost['extension'])!r}"
                                                                 if "extension" in plan.cost else "")
            sp_left = spend_cost(plan) - sum(float(x.get("savings_plan_usd", 0.0)) for x in table)
            extra += f"+{sp_left!r}" if sp_left > 1e-9 else ""  # a savings plan nobody's usage drew on
            s.append([r["team"], r["workload_class"], r["reserved_gpu_hours"], r["on_demand_gpu_hours"],
                      r["spot_gpu_hours"], 0.0, F(f"=SUM({rng('unused')}){extra}", r["reserved_idle_usd"]),
                      r["on_demand_usd"], r["spot_usd"], F(f"=F{row}+G{row}+H{row}+I{row}+K{row}{more}", r["total_usd"]),
                      float(r.get("savings_plan_usd", 0.0)), *tail])
            continue
        for q in range(P):
            s._write(row - 1, u0 + q, float(use[k, q]), NUM)
            s._write(row - 1, s0 + q, float(share[k, q]), PCT)
        use_row = f"{colname(u0)}{row}:{colname(u0 + P - 1)}{row}"
        share_row = f"{colname(s0)}{row}:{colname(s0 + P - 1)}{row}"
        live = n_alloc > 0
        credit = float(r.get("savings_plan_credit_usd", 0.0))  # what savings plans paid of its on-demand (a value)
        od = F(f'=SUMPRODUCT(--EXACT({A.workload_class},B{row}),--EXACT({A.option},"on_demand"),{A.expected_cost_usd})'
               + (f"-{credit!r}" if credit else ""), r["on_demand_usd"]) if live else r["on_demand_usd"]
        sp = F(f'=SUMPRODUCT(--EXACT({A.workload_class},B{row}),--EXACT({A.option},"spot"),{A.expected_cost_usd})',
               r["spot_usd"]) if live else r["spot_usd"]
        if live:  # other rented kinds' cost, live over Allocation as on-demand and spot
            tail = [x for kd in others for x in (
                r.get(f"{kd}_gpu_hours", 0.0),
                F(f'=SUMPRODUCT(--EXACT({A.workload_class},B{row}),--EXACT({A.option},"{kd}"),{A.expected_cost_usd})',
                  r.get(f"{kd}_usd", 0.0)))]
        s.append([r["team"], r["workload_class"], r["reserved_gpu_hours"], r["on_demand_gpu_hours"],
                  r["spot_gpu_hours"], F(f"=SUMPRODUCT({use_row},{rng('rate')})", float(use[k] @ rate)),
                  F(f"=SUMPRODUCT({share_row},{rng('idle')})", float(share[k] @ idle)), od, sp,
                  F(f"=F{row}+G{row}+H{row}+I{row}+K{row}{more}", r["total_usd"]), float(r.get("savings_plan_usd", 0.0)),
                  *tail])
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
        resold = resold[supply.mask(resold["kind"], dated_by="resale") & resold["gpu_type"].eq(g) & resold["region"].eq(rg)]
        extra = float(resold["horizon_cost_usd"].sum()) if len(resold) else 0.0
        ws.write_formula(rows_of["cost"] - 1, u0 + q, f'=SUMPRODUCT(--EXACT({pur("gpu_type")},{c}${rows_of["gpu_type"]}),'
                         f'--EXACT({pur("region")},{c}${rows_of["region"]}),{pur("horizon_cost_usd")},'
                         f'{pur("probability")}){"+" + repr(extra) if extra else ""}',  # a branch's purchase: expected
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
    s = _Sheet(ws, list(COLUMNS["Inventory"]),
               {"gpus": INT, "start": DAY, "end": DAY, "term_months": INT, "effective_usd_per_gpu_hour": RATE,
                "hours_in_horizon": "#,##0.##", "horizon_cost_usd": USD, "hours_after_horizon": "#,##0.##",
                "recurring_after_horizon_usd": USD})
    s.header({"effective_usd_per_gpu_hour": 26, "recurring_after_horizon_usd": 28, "expires_in_horizon": 20})
    for i, r in enumerate(inventory.itertuples()):
        row = i + 2
        pr = price_row.get((r.gpu_type, r.region, r.option,
                            None if pd.isna(r.valid_from) else pd.Timestamp(r.valid_from))) if r.priced else None
        rate = F(f"={ref('Prices', 'effective_usd_per_gpu_hour', pr)}", r.effective_usd_per_gpu_hour) if pr else 0.0
        s.append([r.gpu_type, r.region, r.option, float(r.gpus), _date(r.start), _date(r.end),
                  F(f"={ref('Prices', 'term_months', pr)}", r.term_months) if pr else None, rate, float(r.hours_in_horizon),
                  F(f"=D{row}*H{row}*I{row}", r.horizon_cost_usd if pr else 0.0),
                  float(r.hours_after_horizon), F(f"=D{row}*{ref('Prices', 'hourly_usd', pr)}*K{row}", r.recurring_after_horizon_usd)
                  if pr else 0.0,
                  "yes" if r.expires_in_horizon else "no",
                  "yes" if r.priced else "no: the price sheet has no such reserved option"])
    s.table("Inventory")


def _write_showback_by_month(ws, plan: Plan) -> None:
    """Chargeback per calendar month and class (planner.report.showback.by_month), with a live total per row."""
    from planner.report.showback import by_month

    others = [f"{k}_usd" for k in rented.reported(plan.inputs.pools) if k not in rented.ALWAYS]
    cols = ["month", "team", "workload_class", "reserved_used_usd", "reserved_idle_usd", "on_demand_usd", "spot_usd",
            "savings_plan_usd", "total_usd", *others]
    s = _Sheet(ws, cols, {c: USD for c in cols[3:]})
    s.header({"team": 20, "workload_class": 20})
    if plan.status.has_plan:
        for i, r in enumerate(by_month(plan).to_dict("records")):
            row = i + 2
            more = "".join(f"+{xl_col_to_name(cols.index(c))}{row}" for c in others)
            s.append([r[c] for c in cols[:8]] + [F(f"=D{row}+E{row}+F{row}+G{row}+H{row}{more}", r["total_usd"])]
                     + [r[c] for c in others])
    s.table("ShowbackByMonth")


def _cash_layout(plan: Plan, purchases: pd.DataFrame):
    """What the Cash flow sheet lays out: the purchases bought (their rows in Purchases), the months, each
    purchase's active hours per month, the expected on-demand/spot GPU-hours per pool and month, the pools."""
    from planner.inputs.ladder import active_hours_by_month, schedule_months

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
    gh = pd.DataFrame({"month": time_text(a["period"], "%Y-%m"), "gpu_type": a["gpu_type"], "region": a["region"],
                       "option": a["option"], "gh": a["gpu_hours"].to_numpy(float) * lookup(a["scenario"], prob)})
    gh = gh[gh["option"].isin(supply.RENTED)].groupby(["option", "gpu_type", "region", "month"])["gh"].sum()
    for (gt, rg, m), c in _covered_gpu_hours(plan, by_month=True).items():  # what savings plans paid is not billed
        gh[("on_demand", gt, rg, m)] = gh.get(("on_demand", gt, rg, m), 0.0) - float(c)
    pool_cols = [(opt, gt, rg) for opt, gt, rg in sorted({k[:3] for k in gh.index})]
    return bought_idx, bought, months, hours, gh, pool_cols


def _cash_npv_column(plan: Plan, purchases: pd.DataFrame) -> tuple[str, int]:
    """(letter, months) of the Cash flow sheet's discounted_usd column (after the ladder columns)."""
    if not len(plan.cash_schedule):
        return "A", 0
    _, bought, months, _, _, pool_cols = _cash_layout(plan, purchases)
    return xl_col_to_name(_cash_first_helper(plan) + 2 * len(bought) + len(pool_cols) + 1 - 1), len(months)


def _cash_kinds(plan: Plan) -> list[str]:
    """The Cash flow sheet's columns of rented cash: ``on_demand_usd``, ``spot_usd`` and one per other rented kind
    a pool sells (``flex_start_usd``), as plan.json's ``cash_schedule``."""
    return [f"{k}_usd" for k in rented.reported(plan.inputs.pools)]


def _cash_first_helper(plan: Plan) -> int:
    """The Cash flow sheet's first helper column (1-based): after month, upfront, recurring, the rented kinds,
    the total and a blank column (H with on-demand and spot only)."""
    return 3 + len(_cash_kinds(plan)) + 3


def _purchase_label(r) -> str:
    """A purchase in a column header: option, date (a block: its window's start) and pool."""
    when = pd.Timestamp(r.block_start) if supply.is_(getattr(r, "kind", None), dated_by="window") else pd.Timestamp(r.purchase_date)
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
    brows = list(bought.itertuples())  # read once: the month loop below reads them several times a month
    kinds = _cash_kinds(plan)  # on_demand_usd, spot_usd (, flex_start_usd): the rented kinds' cash
    names = ["month", "upfront_usd", "reserved_recurring_usd", *kinds, "total_usd", ""]
    names += [f"hours {_purchase_label(r)}" for r in brows]
    names += [f"GPU-hours {opt} {gt}/{rg}" for opt, gt, rg in pool_cols]
    names += [f"GPUs {_purchase_label(r)}" for r in brows]
    names += ["discount_factor", "discounted_usd", "owned_fees_usd", "total_with_owned_usd"]
    s = _Sheet(ws, names, {n: USD for n in names[1:names.index("total_usd") + 1]} | {"discount_factor": "0.0000", "discounted_usd": USD,
                                                          "owned_fees_usd": USD, "total_with_owned_usd": USD})
    owned = owned_cash(plan, months)
    owned_col = xl_col_to_name(names.index("owned_fees_usd"))
    total_col = xl_col_to_name(names.index("total_usd"))
    s.header({"month": 10, "": 3})
    h0 = _cash_first_helper(plan)  # first helper column (H with on-demand and spot only)
    g0 = h0 + len(bought)  # GPU-hours columns
    l0 = g0 + len(pool_cols)  # ladder columns
    letter = lambda i: xl_col_to_name(i - 1)  # noqa: E731 (1-based, as the row numbers)
    spelled = len(bought) <= MAX_FORMULA_TERMS and len(pool_cols) <= MAX_FORMULA_TERMS
    if inp.price_paths is not None:  # prices by date or scenario: a month's cash is not GPU-hours x one price
        spelled = False
    rate = float(plan.finance.get("discount_rate", 0.0)) if plan.finance else 0.0
    purchase_month = {j: pd.Timestamp(getattr(r, "cash_date", r.purchase_date)).strftime("%Y-%m")
                      for j, r in enumerate(brows)}  # the upfront's month (a block: its start)
    end_month = {j: (pd.Timestamp(r.end_date) - pd.Timedelta(hours=1)).strftime("%Y-%m")
                 for j, r in enumerate(brows)}
    prices = inp.tables.prices
    hourly = {j: float(prices["hourly_usd"].iat[price_row[_price_key(r)] - 2]) for j, r in enumerate(brows)}
    pool_price = {q: _price_value(plan, price_row, (gt, rg, opt, None)) for q, (opt, gt, rg) in enumerate(pool_cols)}
    spend_cash = _spend_cash(plan)  # savings plans (no Prices row): their upfront and recurring cash, values
    # a purchase that waits for information (a branch of the scenario tree) pays in its branch only: expected cash
    w = [float(getattr(r, "probability", 1.0)) for r in brows]
    tree = any(x < 1.0 for x in w)

    def pw(j: int) -> str:
        return f"*{ref('Purchases', 'probability', bought_idx[j] + 2)}" if tree else ""
    for i, m in enumerate(label):
        row = i + 2
        c = cash.iloc[i] if i < len(cash) else None
        gh_m = [float(gh.get((opt, gt, rg, m), 0.0)) for opt, gt, rg in pool_cols]
        if spelled:
            up = [f"{ref('Purchases', 'upfront_usd', bought_idx[j] + 2)}{pw(j)}" for j in range(len(bought))
                  if purchase_month[j] == m]
            up_v = sum(float(r.upfront_total_usd) * w[j] for j, r in enumerate(brows) if purchase_month[j] == m)
            up += [f"-{ref('Purchases', 'gpus', bought_idx[j] + 2)}*{ref('Prices', 'residual_usd', price_row[_price_key(r)])}{pw(j)}"
                   for j, r in enumerate(brows) if end_month[j] == m]  # residual value back
            up_v -= sum(float(r.residual_total_usd) * w[j] for j, r in enumerate(brows) if end_month[j] == m)
            rec = [f"{letter(h0 + j)}{row}*{ref('Purchases', 'gpus', bought_idx[j] + 2)}*{ref('Prices', 'hourly_usd', price_row[_price_key(r)])}{pw(j)}"
                   for j, r in enumerate(brows)]
            rec_v = sum(float(hours[j, i]) * float(r.gpus) * hourly[j] * w[j] for j, r in enumerate(brows))
            by_kind = [([f"{letter(g0 + q)}{row}*{ref('Prices', 'hourly_usd', price_row[(gt, rg, opt, None)])}"
                         for q, (opt, gt, rg) in enumerate(pool_cols) if f"{opt}_usd" == kind],
                        sum(gh_m[q] * pool_price[q] for q, (opt, _g, _r) in enumerate(pool_cols)
                            if f"{opt}_usd" == kind)) for kind in kinds]  # each rented kind's GPU-hours x price
            if m in spend_cash.index:
                su, sr = (float(x) for x in spend_cash.loc[m, ["upfront_usd", "reserved_recurring_usd"]])
                if su:
                    up.append(repr(su))
                    up_v += su
                if sr:
                    rec.append(repr(sr))
                    rec_v += sr
            cells = [F("=" + ("+".join(x) if x else "0"), v if x else 0.0)
                     for x, v in ((up, up_v), (rec, rec_v), *by_kind)]
            month_total = up_v + rec_v + sum(v for _x, v in by_kind)
        else:  # too many terms for one formula: the values, as in plan.json
            cells = [float(c[k]) for k in ("upfront_usd", "reserved_recurring_usd", *kinds)]
            month_total = sum(cells)
        values = [s.cell(months[i].to_timestamp().to_pydatetime(), MONTH), *cells,
                  F(f"=SUM(B{row}:{xl_col_to_name(names.index('total_usd') - 1)}{row})", month_total), None]
        values += [float(x) for x in hours[:, i]]
        values += gh_m
        values += [F(f"=IF({letter(h0 + j)}{row}>0,{ref('Purchases', 'gpus', bought_idx[j] + 2)},0)",
                     float(r.gpus) if hours[j, i] > 0 else 0.0) for j, r in enumerate(brows)]
        factor = (1.0 + rate) ** (-i / 12.0)
        d0 = l0 + len(bought)  # the discount factor's column (1-based)
        values += [F(f"=(1+discount_rate)^(-{i}/12)", factor),
                   F(f"={total_col}{row}*{letter(d0)}{row}", month_total * factor)]
        fee = float(owned.get(months[i], 0.0))
        values += [fee, F(f"={total_col}{row}+{owned_col}{row}", month_total + fee)]  # the fees of what is owned
        s.append(values)
    n = s.rows - 1  # last data row (0-based)
    wb = ws.planner_book.wb
    _write_cash_by_year(wb, plan, months, names, n + 1)
    chart = wb.add_chart({"type": "column", "subtype": "stacked"})
    for c_, name in ((1, "upfront"), (2, "reserved recurring"),
                     *((3 + i, k[:-4].replace("_", "-")) for i, k in enumerate(kinds))):
        chart.add_series({"name": name, "categories": ["Cash flow", 1, 0, n, 0],
                          "values": ["Cash flow", 1, c_, n, c_], "gap": 30})
    if bool((owned.to_numpy(float) != 0).any()):  # the fees of the commitments already owned: cash out too
        oc = names.index("owned_fees_usd")
        chart.add_series({"name": "owned commitments' fees", "categories": ["Cash flow", 1, 0, n, 0],
                          "values": ["Cash flow", 1, oc, n, oc], "gap": 30})
    chart.set_title({"name": "Cash out per month (USD)"})
    negative = bool((plan.cash_schedule.select_dtypes("number") < 0).any().any()) if len(plan.cash_schedule) else False
    chart.set_y_axis({"name": "USD", "num_format": USD0} | ({} if negative else {"min": 0}))  # credits go below 0
    chart.set_x_axis(MONTH_AXIS)  # dates, not serials (46388...)
    chart.set_size({"width": 900, "height": 380})
    ws.insert_chart(f"{letter(l0 + len(bought) + 3)}2", chart)
    if len(bought):
        ladder = wb.add_chart({"type": "area", "subtype": "stacked"})
        for j in range(len(bought)):
            col = l0 - 1 + j
            ladder.add_series({"name": ["Cash flow", 0, col], "categories": ["Cash flow", 1, 0, n, 0],
                               "values": ["Cash flow", 1, col, n, col]})
        ladder.set_title({"name": "Reserved GPUs owned, by purchase (the ladder)"})
        ladder.set_y_axis({"min": 0, "name": "GPUs", "num_format": INT})
        ladder.set_x_axis(MONTH_AXIS)
        ladder.set_size({"width": 900, "height": 380})
        ws.insert_chart(f"{letter(l0 + len(bought) + 3)}24", ladder)


def _write_savings_plans(ws, plan: Plan) -> None:
    """One row per savings-plan commitment (option, family, purchase date): USD per hour committed, its cost,
    the usage it paid (GPU-hours; USD at its rates and at on-demand), utilisation and saving (values)."""
    cols = ["option", "plan_family", "purchase_date", "end_date", "firm", "usd_per_hour", "hours_active",
            "committed_usd", "covered_gpu_hours", "covered_at_rates_usd", "covered_at_on_demand_usd", "utilisation",
            "savings_usd", "branch", "probability"]
    s = _Sheet(ws, cols, {"purchase_date": DAY, "end_date": DAY, "usd_per_hour": RATE, "hours_active": NUM,
                          "committed_usd": USD, "covered_gpu_hours": NUM, "covered_at_rates_usd": USD,
                          "covered_at_on_demand_usd": USD, "utilisation": PCT, "savings_usd": USD,
                          "probability": PCT})
    s.header({"option": 20, "plan_family": 20})
    sp = plan.spend
    for r in sp.itertuples() if sp is not None and len(sp) else []:
        s.append([r.option, s.text(str(r.plan_family)), _date(r.purchase_date), _date(r.end_date),
                  "now" if r.firm else "planned", float(r.usd_per_hour), float(r.hours_active), float(r.committed_usd),
                  float(r.covered_gpu_hours), float(r.covered_at_rates_usd), float(r.covered_at_on_demand_usd),
                  float(r.utilisation), float(r.savings_usd), s.text(str(getattr(r, "branch", "all"))),
                  float(getattr(r, "probability", 1.0))])
    if sp is None or not len(sp):
        s.append([s.text("no savings plan in the price sheet")] + [None] * (len(cols) - 1))
    s.table("SavingsPlans")


def _spend_cash(plan: Plan) -> pd.DataFrame:
    """Per month ("YYYY-MM" index): the savings plans' upfront and recurring cash (planner.inputs.ladder.cash_schedule)."""
    from planner.inputs.ladder import cash_schedule

    rows = _spend_rows(plan)
    rows = rows[rows["quantity"].abs() > 0] if len(rows) else rows  # a resale is negative cash
    if len(rows) and "probability" in rows:  # a branch's commitment pays in its branch only: expected cash
        rows = rows.assign(quantity=rows["quantity"] * rows["probability"])
    if not len(rows):
        return pd.DataFrame(columns=["upfront_usd", "reserved_recurring_usd"])
    cash = cash_schedule(rows, plan.inputs.periods, pd.Series(dtype=float), pd.Series(dtype=float))
    return cash.set_index("month")[["upfront_usd", "reserved_recurring_usd"]]


def _write_cash_by_year(wb, plan: Plan, months: pd.PeriodIndex, names: list[str], last: int) -> None:
    """The "Cash by year" sheet: the Cash flow sheet's months summed per calendar year, per fiscal year
    (``[finance] fiscal_year_start``) and in total, live (SUMIFS over its dates), so an edited price moves them."""
    ws = wb.get_worksheet_by_name("Cash by year")
    if ws is None:
        return
    others = [k for k in _cash_kinds(plan) if k not in ("on_demand_usd", "spot_usd")]  # appended: refs stay put
    kinds = ["upfront_usd", "reserved_recurring_usd", "on_demand_usd", "spot_usd", "total_usd", "discounted_usd",
             "owned_fees_usd", "total_with_owned_usd", *others]
    owned = owned_cash(plan, months)
    s = _Sheet(ws, list(COLUMNS["Cash by year"]) + others, {"from": DAY, "to": DAY} | {k: USD for k in kinds})
    s.header({"period": 24})
    col = {k: xl_col_to_name(names.index(k)) for k in kinds}
    mc = xl_col_to_name(names.index("month"))
    month_col = f"'Cash flow'!${mc}$2:${mc}${last}"

    def block(label: str, lo: pd.Timestamp, hi: pd.Timestamp) -> None:
        inside = (months.to_timestamp() >= lo) & (months.to_timestamp() < hi)
        cash = plan.cash_schedule.iloc[: len(months)]
        row = [label, lo.to_pydatetime(), (hi - pd.Timedelta(days=1)).to_pydatetime()]
        for k in kinds:
            if k == "discounted_usd":
                value = float(cash["total_usd"].to_numpy()[inside] @ _discount(plan, len(months))[inside])
            elif k == "owned_fees_usd":
                value = float(owned.to_numpy()[inside].sum())
            elif k == "total_with_owned_usd":
                value = float(cash["total_usd"].to_numpy()[inside].sum() + owned.to_numpy()[inside].sum())
            else:
                value = float(cash[k].to_numpy()[inside].sum())
            rng = f"'Cash flow'!${col[k]}$2:${col[k]}${last}"
            row.append(F(f'=SUMIFS({rng},{month_col},">="&DATE({lo.year},{lo.month},1),'
                         f'{month_col},"<"&DATE({hi.year},{hi.month},1))', value))
        s.append(row)

    for _kind, label, lo, hi in cash_blocks(plan, months):
        block(label, lo, hi)
    s.table("CashByYear")


def cash_blocks(plan: Plan, months: pd.PeriodIndex) -> list[tuple]:
    """The rows of the Cash by year sheet, in order: (kind, label, first day, day after the last) for each
    calendar year, each fiscal year (``[finance] fiscal_year_start`` other than January; named by the year it
    ends in, as plan.json's ``cash_by_year``), the next 12 months and the total."""
    start = int(getattr(plan.inputs.config.finance, "fiscal_year_start", 1) or 1)
    first = months[0].to_timestamp()
    out = [("calendar", f"calendar {y}", pd.Timestamp(y, 1, 1), pd.Timestamp(y + 1, 1, 1))
           for y in sorted({p.year for p in months})]
    if start != 1:
        fy = first.year if first.month >= start else first.year - 1
        while pd.Timestamp(fy, start, 1) <= months[-1].to_timestamp():
            lo = pd.Timestamp(fy, start, 1)
            out.append(("fiscal", f"FY{fy + 1} ({lo:%Y-%m} to {lo + pd.DateOffset(months=11):%Y-%m})", lo,
                        pd.Timestamp(fy + 1, start, 1)))
            fy += 1
    out.append(("next12", "next 12 months", first, first + pd.DateOffset(months=12)))
    out.append(("total", "total", first, months[-1].to_timestamp() + pd.offsets.MonthBegin(1)))
    return out


def _discount(plan: Plan, n: int) -> np.ndarray:
    """The Cash flow sheet's discount factor of each month, (1 + rate)^(-m/12)."""
    rate = float(plan.finance.get("discount_rate", 0.0)) if plan.finance else 0.0
    return (1.0 + rate) ** (-np.arange(n) / 12.0)


def owned_cash(plan: Plan, months: pd.PeriodIndex) -> pd.Series:
    """Per month of ``months``: the fees of the commitments already owned, less any residual back (0 elsewhere)."""
    from planner.memo.cash import owned_fees_by_month

    of = owned_fees_by_month(plan.inputs)
    if not len(of):
        return pd.Series(0.0, index=months)
    fee = (of["owned_recurring_usd"] + of["owned_residual_usd"]).groupby(of["month"]).sum()
    return fee.reindex(months, fill_value=0.0).astype(float)
