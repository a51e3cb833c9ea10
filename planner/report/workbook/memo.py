"""The purchase memo: the rows that open the Summary sheet (what to sign now, the cash it needs, what it saves,
how much of the demand it covers, what happens if demand falls), and the sheets behind them: Tranches (each
purchase's own utilisation, the last bought used last), Downside and Commitment curve (re-solved by the model
with the purchases fixed)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.inputs import rented
from planner.memo.tranches import spend_verdict, verdict
from planner.results.plan import Plan
from planner.report.workbook.book import DAY, F, INT, NUM, PCT, RED, USD, USD0, _Sheet, ref

MEMO_SHEETS = ("Tranches", "Downside", "Term downside", "Commitment curve", "Chargeback")


def _money(x: float) -> str:
    if x != x:
        return "n/a"
    return f"-${-x:,.0f}" if x < -0.5 else f"${abs(x):,.0f}"


def memo_rows(plan: Plan, purchases: pd.DataFrame) -> list[tuple]:
    """(label, value, format, note, red) rows of the memo, in reading order. ``purchases`` are the Purchases
    sheet's rows (their positions give the row a live cell refers to)."""
    m = plan.memo
    rows: list[tuple] = [check_row(plan)]
    tr = _tranches(plan)
    sheet_row = {idx: i + 2 for i, idx in enumerate(purchases.index)}
    rate = float(plan.finance.get("discount_rate", 0.0)) if plan.finance else 0.0
    firm = tr[tr["firm"].astype(bool)] if len(tr) else tr
    for r in firm.itertuples():
        p = plan.purchases.loc[plan.purchases.index[int(r.row)]]
        srow = sheet_row.get(plan.purchases.index[int(r.row)])
        upfront = float(p.get("upfront_total_usd", 0.0))
        fee = float(p.get("monthly_recurring_usd", 0.0))
        commit = float(p.get("commitment_usd", r.full_term_usd))
        resid = float(p.get("residual_total_usd", 0.0) or 0.0)
        due = pd.Timestamp(p.get("cash_date", p["purchase_date"]) if "cash_date" in p else p["purchase_date"])
        # the whole commitment (every payment over the term), live over Purchases (and so over Prices)
        value = F("=" + ref("Purchases", "commitment_usd", srow), commit) if srow else commit
        npv = float(p.get("npv_usd", np.nan)) if "npv_usd" in p else np.nan
        usable = pd.Timestamp(p["active_from"]) if "active_from" in p else pd.Timestamp(p["purchase_date"])
        lead = max((usable - pd.Timestamp(p["purchase_date"])) / pd.Timedelta(hours=730), 0.0)
        be = _break_even_months(upfront, fee, r, lead)
        vs_nothing = getattr(r, "break_even_vs_nothing", np.nan)
        pays = verdict(r.pays, r.avg_utilisation, vs_nothing)
        rows.append((f"Sign now: {r.gpus:,.0f} {r.gpu_type} {r.option} in {r.region}: whole commitment",
                     value, USD0,
                     _solved_note(
                         f"{int(r.instances):,} instances; whole commitment {_money(commit)} (every payment over the "
                         "term" + (f", net of {_money(resid)} residual value back at its end" if resid > 0 else "")
                         + f"; as solved: NPV {_money(npv)} at ", rate,
                         f"): upfront {_money(upfront)} due {due:%Y-%m-%d}, then {_money(fee)} a month to "
                         f"{pd.Timestamp(r.end_date):%Y-%m-%d} (term end)"
                         + (f", usable from {usable:%Y-%m-%d}" if lead > 0 else "")
                         + f"; break-even {be}; this tranche used {100 * r.avg_utilisation:.0f} % on average (lowest "
                         f"{100 * r.min_utilisation:.0f} %), break-even utilisation {100 * r.break_even_utilisation:.0f} % "
                         "against on-demand"
                         + (f", {100 * vs_nothing:.0f} % if all its work could run on spot instead (the cheaper of on-demand and spot)"
                            if vs_nothing == vs_nothing and np.isfinite(vs_nothing) else "") + f": {pays}"),
                     not r.pays, True))  # the value is live; its note is as solved: red with the check cell
    spend = plan.spend if plan.spend is not None and len(plan.spend) else pd.DataFrame()
    for r in (spend[(spend["usd_per_hour"] > 0) & spend["firm"].astype(bool)].itertuples() if len(spend) else []):
        p = plan.purchases.iloc[int(r.row)]
        total = float(p.get("commitment_usd", r.usd_per_hour * r.hours_active))
        hours = total / float(r.usd_per_hour) if r.usd_per_hour > 0 else 0.0
        prices = plan.inputs.tables.prices
        at = np.flatnonzero((prices["option"] == r.option).to_numpy())
        if len(at):  # live: the USD per hour decided x the term on the Prices sheet (730 h a month)
            total = F(f"={float(r.usd_per_hour)!r}*{ref('Prices', 'term_months', int(at[0]) + 2)}*730", total)
        # its break-even: each dollar drawn replaces covered_at_on_demand / covered_at_rates dollars of on-demand, so
        # it pays when the share of the committed dollars drawn reaches the inverse of that markup
        be, word = spend_verdict(getattr(r, "covered_at_rates_usd", 0.0), getattr(r, "covered_at_on_demand_usd", 0.0),
                                 r.utilisation)
        npv = float(p.get("npv_usd", np.nan)) if "npv_usd" in p else np.nan
        rows.append((f"Commit now: {r.option} ({r.plan_family}): whole commitment", total, USD0,
                     _solved_note(
                         f"${float(r.usd_per_hour):,.2f}/h x {hours:,.0f} h of the term = {_money(float(getattr(total, 'value', total)))}, "
                         f"from {pd.Timestamp(r.purchase_date):%Y-%m-%d} to {pd.Timestamp(r.end_date):%Y-%m-%d} (term end), "
                         f"no upfront, {_money(float(r.usd_per_hour) * 730)} a month; NPV {_money(npv)} at ", rate,
                         f"; {100 * r.utilisation:.1f} % of its dollars drawn, break-even "
                         + (f"{100 * be:.1f} % (each dollar drawn pays for {1 / be:.2f} dollars of on-demand): "
                            + word if be == be else word)
                         + " (Savings plans sheet)"), word == "DOES NOT PAY", True))
    rows.extend(_payment_rows(plan))
    if not rows:
        rows.append(("Sign now: nothing", 0.0, USD0, "no commitment pays on this forecast", False))
    later = tr[~tr["firm"].astype(bool)] if len(tr) else tr
    if len(later):
        w = later["probability"] if "probability" in later else 1.0
        tree = bool((np.asarray(w) < 1).any()) if "probability" in later else False
        rows.append(("Planned later (decide then)" + (", expected" if tree else "") + " (as solved)",
                     float((later["full_term_usd"] * w).sum()), USD0,
                     f"{len(later)} later tranches, {(later['gpus'] * w).sum():,.0f} GPUs"
                     + (" expected over the scenario tree's branches (each at its probability; the Tranches sheet "
                        "gives each branch's)" if tree else "") + ", whole terms; dates and "
                     "utilisation on the Tranches sheet; re-plan before each date", False, True))
    t = plan.term or {}
    if t.get("judge") == "term" and t.get("expected_cost_over_term_usd") is not None:
        branches = "; ".join(f"{b['scenario']} ({100 * b['probability']:.0f} %) {_money(b['total_usd'])}"
                             for b in t.get("branch_costs", [])[:6])
        rows.append(("Expected cost over the whole term (as solved)", float(t["expected_cost_over_term_usd"]), USD0,
                     f"how these purchases were judged: {t['note']}. Per branch: {branches} (plan.json term)", False, True))
    elif t.get("judge") == "horizon":
        rows.append(("Longest term (months), judged on the horizon only", float(t.get("months", 0.0)), NUM,
                     t.get("note", "") + ' ([term] judge = "term", the default, judges it over the whole term)',
                     False, False))
    rows.extend(_cash_rows(plan, purchases))
    base = float(plan.baseline_all_on_demand)
    from planner.results.bill import inventory_table

    owned = float(inventory_table(plan.inputs)["horizon_cost_usd"].sum())
    total = float(plan.cost["total"])
    # the note quotes live figures too: a live text formula (it moves with an edited price, as the value does)
    text = (f"{100 * (base - total) / base:.1f} % of {_money(base)}; on the full bill (commitments already owned "
            f"included: {_money(owned)}) {_money(base - total - owned)}, "
            f"{100 * (base - total - owned) / base:.1f} %") if base > 0 else ""
    live = ('=IF(all_on_demand_usd>0,TEXT((all_on_demand_usd-total_cost_usd)/all_on_demand_usd*100,"0.0")&" % of "'
            '&TEXT(all_on_demand_usd,"$#,##0")&"; on the full bill (commitments already owned included: "'
            '&TEXT(already_committed_usd,"$#,##0")&") "&TEXT(all_on_demand_usd-total_cost_usd-already_committed_usd,'
            '"$#,##0")&", "&TEXT((all_on_demand_usd-total_cost_usd-already_committed_usd)/all_on_demand_usd*100,"0.0")'
            '&" %","")')
    rows.append(("Saving against all on-demand", F("=all_on_demand_usd-total_cost_usd", base - total), USD0,
                 F(live, text), False))
    if m is not None and m.savings:
        sv = m.savings
        nb = float(sv["next_best_cost_usd"])
        rows.append(("Saving against no new commitments (as solved)", nb - total, USD0,
                     f"the best plan buying nothing new ({rented.phrase(plan.inputs.pools)}, re-solved) costs {_money(nb)}: "
                     f"{100 * (nb - total) / nb:.1f} % saved; the same on the full bill (the owned commitments "
                     "are in both)" if nb > 0 else "", (nb - total) < 0, True))
        near = _nearest_on_curve(m.curve)
        if near is not None:
            rows.append((f"Saving against {near['factor']:g} x these commitments (as solved)", float(near["total_cost_usd"]) - total,
                         USD0, f"the nearest other level on the Commitment curve ({_money(near['committed_usd'])} "
                         f"committed) costs {_money(near['total_cost_usd'])}: what the last step of commitment buys",
                         float(near["total_cost_usd"]) - total < 0, True))
    cov = m.coverage if m is not None else None
    if cov is None:
        from planner.memo.build import coverage

        cov = coverage(plan)
    with_spot = float(cov.get("coverage_with_spot", np.nan))
    rows.append(("Coverage, spot not counted (committed GPU-hours / reserved + on-demand) (as solved)",
                 float(cov.get("coverage", np.nan)), PCT,
                 "share of the reserved and on-demand GPU-hours in pools with a commitment option served by "
                 "commitments (owned, bought, savings plans); spot GPU-hours left out"
                 + (f"; counting spot in the denominator: {100 * with_spot:.1f} %" if with_spot == with_spot else "")
                 , False, True))
    if with_spot == with_spot:
        rows.append(("Coverage, spot counted (committed GPU-hours / reserved + on-demand + spot) (as solved)",
                     with_spot, PCT,
                     "the same committed GPU-hours over every GPU-hour of those pools, spot included",
                     False, True))
    if m is not None and m.downside is not None and len(m.downside):
        at = float(m.downside["full_term_cost_usd"].iat[0])
        for r in m.downside[m.downside["shock"] > 0].itertuples():
            rows.append((f"If demand is {100 * r.shock:.0f} % lower (as solved)", float(r.full_term_cost_usd), USD0,
                         f"the horizon's cost plus the purchases' whole commitments, no demand after the horizon (at the forecast "
                         f"{_money(at)}; the whole-term expectation with demand past the horizon is the term row), "
                         "purchases fixed, re-solved; "
                         f"stranded in the horizon (held, not used) "
                         f"{_money(r.stranded_usd)} (+{_money(r.stranded_increase_usd)})"
                         + (f", reserved utilisation {100 * r.reserved_utilisation:.0f} %"
                            if r.reserved_utilisation == r.reserved_utilisation else "") + ": Downside",
                         r.stranded_increase_usd > 0.05 * max(base, 1), True))
    return rows


CHECK_OK = "as solved"
CHECK_EDITED = "EDITED: re-plan"


SOLVED_SHEET = "Prices as solved"
SPARE_ROWS = 50  # rows past the Prices table the check compares too (a row typed below it is an edit)
TEXT_COLUMNS = ("gpu_type", "region", "option", "provider", "scenario")


def check_formula(n_prices: int) -> str:
    """The check cell's count of edits: every Prices cell that differs from the same cell of the hidden
    "Prices as solved" sheet (numbers beyond 1e-9 relative: the effective rate is recomputed; text exactly; a
    cell turned to text in a number column counts), down to ``SPARE_ROWS`` rows below the table, and the discount
    rate against the one solved with."""
    from xlsxwriter.utility import xl_col_to_name

    from planner.report.workbook.book import COLUMNS

    cols = list(COLUMNS["Prices"])
    last = n_prices + 1 + SPARE_ROWS
    parts = []
    for i, name in enumerate(cols):
        c = xl_col_to_name(i)
        p, q = f"Prices!${c}$2:${c}${last}", f"'{SOLVED_SHEET}'!${c}$2:${c}${last}"
        parts.append(f"SUMPRODUCT(--({p}<>{q}))" if name in TEXT_COLUMNS
                     else f"SUMPRODUCT(--(ABS({p}-{q})>1E-9*(1+ABS({q}))))")
    r = xl_col_to_name(len(cols) + 1)
    parts.append(f"(ABS(discount_rate-'{SOLVED_SHEET}'!${r}$2)>1E-12)")
    return "IFERROR(" + "+".join(parts) + ",1)"


def check_row(plan: Plan) -> tuple:
    """The memo's first row: "as solved" while every Prices cell and the discount rate are those the plan was
    solved with, red "EDITED: re-plan" once any differs (compared cell by cell with a hidden copy)."""
    cell = F(f'=IF({check_formula(len(plan.inputs.tables.prices))}>0,"{CHECK_EDITED}","{CHECK_OK}")', CHECK_OK)
    return ("Check: prices and discount rate as solved", cell, None,
            "Live figures are formulas and follow any edit. Rows marked (as solved) and the sign-now rows' notes are "
            "figures of the solve and its re-solves, not formulas: this cell compares every cell of the Prices sheet "
            f"(and {SPARE_ROWS} rows below it) and the discount rate with the hidden sheet \"{SOLVED_SHEET}\", "
            "the values solved with; once any differs, it and every (as solved) row turn red (a red fill): re-run "
            "planner plan for true figures. A red label without the fill is a warning of the solve itself (a "
            "purchase that does not pay, stranded commitment up by more than 5 %).", False)


def _rate_text(rate: float) -> str:
    return f"{100 * rate:.1f}%"


def _live_rate_note(before: str, rate: float, after: str):
    """A note quoting the discount rate: a text formula over the Summary's ``discount_rate`` cell (edit the rate
    and the note follows), cached with today's text."""
    q = lambda t: t.replace('"', '""')  # noqa: E731
    return F(f'="{q(before)}"&TEXT(discount_rate,"0.0%")&"{q(after)}"', before + _rate_text(rate) + after)


def _solved_note(before: str, rate: float, after: str) -> str:
    """A note quoting figures as solved and the discount rate they were solved at (not the live rate: the NPVs and
    the verdict beside it do not move with an edit; the row turns red with the check cell instead)."""
    return before + _rate_text(rate) + " as solved" + after


def _payment_rows(plan: Plan) -> list[tuple]:
    """Per purchase to sign now with payment options of different upfronts: the rate at which the most-upfront
    and the least-upfront option cost the same (the IRR of their difference), against the model's rate."""
    from planner.inputs.finance import payment_break_even

    po = plan.payment_options
    if po is None or not len(po):
        return []
    be = payment_break_even(plan.inputs, po)
    out = []
    for r in be.itertuples():
        p = plan.purchases.iloc[int(r.purchase)]
        if not bool(p.get("firm", True)):
            continue
        irr = float(r.break_even_rate)
        out.append((f"Payment options: {p['gpu_type']} {p['region']} {r.upfront_option} or {r.other_option} "
                    "(as solved)",
                    irr if irr == irr else "n/a", PCT,
                    _solved_note(
                        "the cost of capital at which they cost the same (the IRR of the difference of their cash "
                        "flows): below it pay upfront, above it pay monthly. As solved at ", float(r.rate),
                        f": NPV {r.upfront_option} {_money(r.upfront_npv_usd)}, {r.other_option} "
                        f"{_money(r.other_npv_usd)}: {r.cheaper} is cheaper (Purchases, payment_options)"
                        + _chosen_note(plan, p["option"], r.cheaper)), False, True))
    return out


def _chosen_note(plan: Plan, chosen: str, cheaper: str) -> str:
    """Why the plan signs a payment option the NPV comparison beside it calls dearer: it minimises undiscounted
    cost unless ``[finance] objective = "npv"`` (the review found the two side by side, unexplained)."""
    if chosen == cheaper:
        return f"; the plan signs {chosen}"
    objective = getattr(plan.inputs.config.finance, "objective", "cost")
    why = ('the plan minimises undiscounted cost: set [finance] objective = "npv" to choose at the rate'
           if objective != "npv" else "its cost over the horizon's periods is lower in the plan's objective")
    return f"; the plan signs {chosen}: {why}"


def _break_even_months(upfront: float, fee: float, r, lead: float = 0.0) -> str:
    """Months from the day the tranche is usable until its on-demand value (at its own utilisation), net of its
    fees, repays the upfront: the Purchases sheet's ``break_even_months`` (one definition; a lead time is said
    apart, not added)."""
    monthly_value = r.on_demand_usd_per_gpu_hour * r.avg_utilisation * r.gpus * 730.0
    net = monthly_value - fee
    if net <= 0:
        return "never at this utilisation"
    months = upfront / net
    if lead > 0:  # usable some months after signing: say both clocks
        if months <= 0:
            return f"from its first usable month ({lead:.1f} months after signing)"
        return (f"{months:.1f} months from the day it is usable, {lead + months:.1f} months after signing "
                f"(usable {lead:.1f} months after)")
    return ("from the first month" if months <= 0 else f"{months:.1f} months") + " from the day it is usable"


def _nearest_on_curve(curve) -> dict | None:
    """The commitment curve's solved level just below the plan's (else just above), or None."""
    if curve is None or not len(curve) or "total_cost_usd" not in curve:
        return None
    ok = curve[curve["status"].isin(["optimal", "feasible"]) & (curve["factor"] != 1.0) & (curve["factor"] > 0)]
    if not len(ok):
        return None
    below = ok[ok["factor"] < 1.0]
    pick = below.iloc[-1] if len(below) else ok.iloc[0]
    return pick.to_dict()


def _cash_rows(plan: Plan, purchases: pd.DataFrame) -> list[tuple]:
    """The memo's cash rows, live over the Cash by year sheet's total_with_owned_usd (fees of the commitments
    already owned included): the next 12 months, then up to four years (fiscal when the year does not start in
    January), then the later years together."""
    from planner.report.workbook.money import _cash_layout, cash_blocks

    if not len(plan.cash_schedule):
        return []
    months = _cash_layout(plan, purchases)[2]
    blocks = cash_blocks(plan, months)
    values = _block_values(plan, months, blocks)
    row_of = {b[1]: i + 2 for i, b in enumerate(blocks)}
    cell = lambda label: F("=" + ref("Cash by year", "total_with_owned_usd", row_of[label]), values[label])  # noqa: E731
    out = [("Cash out in the next 12 months", cell("next 12 months"), USD0,
            "upfronts, fees (of the commitments already owned too), on-demand and spot: Cash by year", False)]
    fiscal = [b for b in blocks if b[0] == "fiscal"] or [b for b in blocks if b[0] == "calendar"]
    for kind, label, lo, hi in fiscal[:4]:
        n = int(((months.to_timestamp() >= lo) & (months.to_timestamp() < hi)).sum())  # months of cash in it
        out.append((f"Cash out, {label}", cell(label), USD0,
                    f"{n} month{'s' if n != 1 else ''} of cash from {max(lo, months[0].to_timestamp()):%Y-%m}; the fees of the commitments already owned "
                    "included (Cash by year)", False))
    if len(fiscal) > 4:
        rest = sum(values[b[1]] for b in fiscal[4:])
        out.append(("Cash out, later years (as solved)", rest, USD0, f"{len(fiscal) - 4} more years (Cash by year)",
                    False, True))
    return out


def _block_values(plan: Plan, months: pd.PeriodIndex, blocks: list[tuple]) -> dict:
    """Each Cash by year row's total with the owned commitments' fees (the cached value of the memo's cells)."""
    from planner.report.workbook.money import owned_cash

    cash = plan.cash_schedule["total_usd"].to_numpy(float)[: len(months)]
    owned = owned_cash(plan, months)
    start = months.to_timestamp()
    out = {}
    for _k, label, lo, hi in blocks:
        inside = (start >= lo) & (start < hi)
        out[label] = float(cash[inside].sum() + owned.to_numpy()[inside].sum())
    return out


def _tranches(plan: Plan) -> pd.DataFrame:
    if plan.memo is not None:
        return plan.memo.tranches
    from planner.memo.build import tranche_utilisation

    return tranche_utilisation(plan)


def write_memo_sheets(ws: dict, plan: Plan) -> None:
    """The Tranches, Downside and Commitment curve sheets (the last two say so when the memo was not run)."""
    _write_tranches(ws["Tranches"], _tranches(plan))
    m = plan.memo
    others = [f"{k}_usd" for k in rented.reported(plan.inputs.pools) if k not in rented.ALWAYS]  # flex-start
    _write_table(ws["Downside"], m.downside if m is not None else None, "Downside",
                 ["shock", "status", "full_term_cost_usd", "total_cost_usd", "reserved_usd",
                  "on_demand_usd", "spot_usd", *others, "reserved_utilisation", "stranded_usd", "stranded_increase_usd",
                  "liability_past_horizon_usd", "shortfall_gpu_hours"])
    _write_term_downside(ws["Term downside"], getattr(m, "term_downside", None) if m is not None else None)
    _write_curve(ws["Commitment curve"], m.curve if m is not None else None)
    _write_chargeback(ws["Chargeback"], plan)


def _write_chargeback(ws, plan: Plan) -> None:
    """Per team, the bill: this plan's costs (as Showback) plus the commitments already owned, charged to the
    teams that use them pro rata per pool and period; owned capacity nobody used on its own line."""
    from planner.report.showback import by_team

    t = by_team(plan, owned=True)
    cols = [c for c in t.columns]
    s = _Sheet(ws, cols, {c: USD for c in cols if c.endswith("_usd")} | {c: NUM for c in cols if c.endswith("_hours")})
    s.header({"team": 24})
    for r in t.itertuples(index=False):
        s.append(list(r))
    s.table("Chargeback")
    s.note(f"As solved (values, not formulas: re-plan after an edit): adds up to the bill as solved, "
           f"${float(t['total_usd'].sum()):,.0f}: the Showback sheet's costs plus the commitments already owned "
           "(owned_commitments_usd), charged by each team's use of the owned GPUs.")


TRANCHE_COLUMNS = ["gpu_type", "region", "option", "purchase_date", "end_date", "firm", "stack_position",
                   "instances", "gpus", "avg_utilisation", "min_utilisation", "break_even_utilisation", "pays",
                   "used_gpu_hours", "capacity_gpu_hours", "horizon_cost_usd", "on_demand_value_usd",
                   "net_savings_usd", "full_term_usd", "branch", "probability"]
_FORMATS = {"purchase_date": DAY, "end_date": DAY, "instances": INT, "gpus": INT, "avg_utilisation": PCT,
            "min_utilisation": PCT, "break_even_utilisation": PCT, "used_gpu_hours": NUM, "capacity_gpu_hours": NUM,
            "horizon_cost_usd": USD, "on_demand_value_usd": USD, "net_savings_usd": USD, "full_term_usd": USD,
            "shock": PCT, "demand_level": PCT, "factor": "0.00", "committed_gpus": INT, "committed_usd": USD0,
            "total_cost_usd": USD0, "full_term_cost_usd": USD0, "reserved_usd": USD0, "on_demand_usd": USD0,
            "spot_usd": USD0, "reserved_utilisation": PCT, "stranded_usd": USD0, "stranded_increase_usd": USD0,
            "liability_past_horizon_usd": USD0, "shortfall_gpu_hours": NUM, "savings_usd": USD0, "npv_usd": USD0,
            "stack_position": INT, "probability": PCT}


def _write_tranches(ws, tr: pd.DataFrame) -> None:
    s = _Sheet(ws, TRANCHE_COLUMNS, _FORMATS)
    s.header({"option": 16})
    for r in tr.itertuples():
        s.append([getattr(r, c) if c not in ("purchase_date", "end_date") else pd.Timestamp(getattr(r, c))
                  for c in TRANCHE_COLUMNS[:5]]
                 + ["now" if r.firm else "planned"] + [getattr(r, c) for c in TRANCHE_COLUMNS[6:12]]
                 + ["yes" if r.pays else "no"] + [getattr(r, c) for c in TRANCHE_COLUMNS[13:-2]]
                 + [s.text(str(getattr(r, "branch", "all"))), float(getattr(r, "probability", 1.0))])
    s.table("Tranches")
    s.note("As solved: values, not formulas (after an edit of the Prices sheet the Summary's check cell turns red: "
           "re-plan). Marginal utilisation: in each pool the GPUs in use fill the inventory owned first, then each "
           "purchase in purchase order (the last bought is used last), so each tranche shows its own use.")


def _write_table(ws, df: pd.DataFrame | None, name: str, cols: list[str]) -> None:
    if df is None or not len(df):
        ws.write_string(0, 0, "not computed: run `planner plan` without --no-memo")
        return
    cols = [c for c in cols if c in df]
    s = _Sheet(ws, cols, _FORMATS)
    s.header()
    for r in df[cols].itertuples(index=False):
        s.append(list(r))
    s.table(name)
    s.note("Re-solved by the model with this plan's purchases fixed (an LP each); values, not live formulas.")


TERM_COLUMNS = ["gpu_type", "region", "option", "purchase_date", "end_date", "gpus", "shock", "demand_level",
                "used_share", "unused_usd", "saving_vs_nothing_usd", "full_term_usd", "break_even_demand_level"]


def _write_term_downside(ws, df: pd.DataFrame | None) -> None:
    """Each purchase over its whole term at demand -20 / -30 % (planner.memo.term_downside): closed form."""
    if df is None or not len(df):
        ws.write_string(0, 0, "not computed: run `planner plan` without --no-memo (or nothing was bought)")
        return
    fm = dict(_FORMATS) | {"shock": PCT, "demand_level": PCT, "used_share": PCT, "unused_usd": USD0,
                           "saving_vs_nothing_usd": USD0, "full_term_usd": USD0, "break_even_demand_level": PCT}
    s = _Sheet(ws, TERM_COLUMNS, fm)
    s.header({"option": 16})
    for r in df.itertuples(index=False):
        s.append([pd.Timestamp(getattr(r, c)) if c in ("purchase_date", "end_date") else getattr(r, c)
                  for c in TERM_COLUMNS])
    s.table("TermDownside")
    s.note("As solved: values, not formulas (the Summary's check cell turns red after an edit: re-plan). "
           "Each purchase over its WHOLE term (not the horizon): " + str(df["demand_basis"].iat[0]) + ", scaled by "
           "demand_level. used_share: its GPU-hours in use over its capacity (the GPUs below it in its pool serve "
           "first); unused_usd: its whole-term liability left unused; saving_vs_nothing_usd: its used hours at the "
           "on-demand rate less that liability; break_even_demand_level: the demand level below which it stops "
           "paying against on-demand. Closed form on the plan's tables, not re-solved.")


def _write_curve(ws, curve: pd.DataFrame | None) -> None:
    cols = ["factor", "committed_gpus", "committed_usd_per_hour", "committed_usd", "total_cost_usd", "savings_usd",
            "on_demand_usd", "spot_usd", "reserved_utilisation", "stranded_usd", "status", "optimum"]
    if curve is None or not len(curve):
        _write_table(ws, curve, "CommitmentCurve", cols)
        return
    cols = [c for c in cols if c in curve]
    s = _Sheet(ws, cols, _FORMATS)
    s.header()
    for r in curve[cols].itertuples(index=False):
        s.append([("this plan" if v else "") if c == "optimum" else v for c, v in zip(cols, r)])
    s.table("CommitmentCurve")
    s.note("Every commitment of the plan scaled by the factor (whole instances), re-solved with the purchases "
           "fixed: the plan's own level (factor 1) is marked; cost and savings (against all on-demand) are this "
           "horizon's, committed_usd the whole terms' liability; a level with no plan (e.g. past a budget) says so.")
    n = len(curve)
    wb = ws.planner_book.wb
    chart = wb.add_chart({"type": "scatter", "subtype": "straight_with_markers"})
    x = cols.index("committed_usd")  # the whole-term liability: GPUs and savings plans' dollars alike
    for name in ("savings_usd", "total_cost_usd"):
        y = cols.index(name)
        chart.add_series({"name": name.replace("_usd", "").replace("_", " "),
                          "categories": ["Commitment curve", 1, x, n, x], "values": ["Commitment curve", 1, y, n, y]})
    opt = int(np.flatnonzero(curve["optimum"].to_numpy(bool))[0]) + 1 if curve["optimum"].any() else None
    if opt is not None:
        y = cols.index("savings_usd")
        chart.add_series({"name": "this plan", "categories": ["Commitment curve", opt, x, opt, x],
                          "values": ["Commitment curve", opt, y, opt, y],
                          "marker": {"type": "diamond", "size": 11, "fill": {"color": "#C00000"}}, "line": {"none": True}})
    chart.set_title({"name": "Savings and cost against the commitment"})
    chart.set_x_axis({"name": "USD committed (whole terms)", "min": 0, "num_format": USD0})
    low = float(np.nanmin(curve[["savings_usd", "total_cost_usd"]].to_numpy(float)))
    chart.set_y_axis({"name": "USD (this horizon)", "num_format": USD0} | ({"min": 0} if low >= 0 else {}))
    chart.set_size({"width": 760, "height": 360})
    ws.insert_chart(n + 4, 0, chart)


__all__ = ["memo_rows", "write_memo_sheets", "MEMO_SHEETS", "RED"]
