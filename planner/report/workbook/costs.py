"""Prices, Purchases, Costs and Baseline: the sheets whose formulas price the plan."""

from __future__ import annotations

from types import SimpleNamespace
import numpy as np
import pandas as pd
from planner.results.plan import Plan, need_gpu_hours
from planner.core.units import HOURS_PER_MONTH, usd as _money
from planner.inputs import commitments
from planner.report.workbook.book import DAY, COLUMNS, cell, ref, span, DATE, F, INT, NUM, PCT, RATE, USD, VALUED_KINDS, _Sheet, _date
from planner.inputs import supply


def _price_key(r) -> tuple:
    """(gpu_type, region, option, valid_from or None): the Prices row a purchase or a cost reads."""
    vf = getattr(r, "valid_from", None)
    if vf is None or pd.isna(vf):  # a capacity block's offer is told apart by its window's start
        vf = getattr(r, "block_start", None)
    return (r.gpu_type, r.region, r.option, None if vf is None or pd.isna(vf) else pd.Timestamp(vf))


PAYMENT_WIDTH = 32  # characters of the Purchases sheet's payment comparison (it wraps)


def price_mix(plan: Plan) -> dict:
    """Per ``plan.purchases`` index label priced by scenario (price paths): [(weight, Prices row), ...], the
    probability-weighted mix of the scenarios' Prices rows it serves (what the model charged it); {} without."""
    inp = plan.inputs
    paths = inp.price_paths
    if paths is None or not paths.reserved or not len(inp.commitments):
        return {}
    idx = paths.reserved_rows(inp.commitments)  # (R, S)
    w = inp.member * np.asarray(inp.probability, float)[None, :]
    out = {}
    for r in np.flatnonzero((idx >= 0).any(axis=1)):
        total = w[r].sum()
        if total <= 0:
            continue
        mix: dict = {}
        for s_ in np.flatnonzero(w[r] > 0):
            if idx[r, s_] >= 0:
                mix[int(idx[r, s_]) + 2] = mix.get(int(idx[r, s_]) + 2, 0.0) + w[r, s_] / total
            else:
                mix[-1] = mix.get(-1, 0.0) + w[r, s_] / total  # the row's own Prices row
        out[inp.commitments.index[r]] = [(int(k), float(v)) for k, v in sorted(mix.items())]
    return out


def prices_ref(col: str, pr: int, mix: list | None) -> str:
    """The Prices cell(s) of ``col`` a purchase reads: its row, or the weighted mix of its scenarios' rows."""
    if not mix:
        return ref("Prices", col, pr)
    return "(" + "+".join(f"{float(w)!r}*{ref('Prices', col, pr if row < 0 else int(row))}" for row, w in mix) + ")"


def _write_prices(ws, prices: pd.DataFrame) -> None:
    s = _Sheet(ws, list(COLUMNS["Prices"]), PRICE_FORMATS)
    s.header({"effective_usd_per_gpu_hour": 26})
    for values in price_rows(prices, s):
        s.append(values)
    s.table("Prices")


PRICE_FORMATS = {"hourly_usd": RATE, "upfront_usd": USD, "effective_usd_per_gpu_hour": RATE, "term_months": "#,##0.###",
                 "gpus_per_instance": "0.###", "max_gpus": INT, "interruptions_per_hour": "0.0000",
                 "valid_from": DATE, "lead_time_months": "0.##", "residual_usd": USD, "block_start": "yyyy-mm-dd hh:mm",
                 "block_days": INT}


def write_prices_as_solved(ws, prices: pd.DataFrame, rate: float) -> None:
    """The Prices sheet's cells as the plan was solved with (values; the effective rate's formula as its value),
    in the same cells, and the discount rate beside them: the Summary's check cell compares them cell by cell.
    Hidden (right-click a tab, Unhide, shows it)."""
    cols = list(COLUMNS["Prices"])
    s = _Sheet(ws, cols, PRICE_FORMATS)
    s.header({"effective_usd_per_gpu_hour": 26})
    for values in price_rows(prices, s):
        s.append([getattr(v, "value", v) if isinstance(v, F) else v for v in values])
    ws.write_string(0, len(cols) + 1, "discount_rate")
    ws.write_number(1, len(cols) + 1, float(rate))
    ws.hide()


def price_rows(prices: pd.DataFrame, s) -> list[list]:
    """The Prices sheet's rows, cell by cell (the effective rate a formula over the row)."""
    out = []
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
        out.append([r.gpu_type, r.region, r.option, r.hourly_usd, r.upfront_usd if reserved else None,
                    r.term_months if reserved else None, eff, r.gpus_per_instance, r.max_gpus,
                    r.interruptions_per_hour, _date(vf) if vf is not None and not pd.isna(vf) else None,
                    getattr(r, "lead_time_months", 0.0) if reserved else None, residual,
                    _date(bs) if block else None, float(r.block_days) if block else None,
                    s.text(r.provider) if block and getattr(r, "provider", "") else None,
                    s.text(getattr(r, "scenario", "")) if getattr(r, "scenario", "") else None])  # a price path's
    return out


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
    cols = list(COLUMNS["Purchases"])
    s = _Sheet(ws, cols,
               {"term_months": INT, "instances": INT, "gpus_per_instance": "0.###", "gpus": INT,
                "effective_usd_per_gpu_hour": RATE, "horizon_cost_usd": USD, "commitment_usd": USD,
                "pool_reserved_utilisation": PCT, "purchase_date": DAY, "active_from": DAY, "end_date": DAY,
                "hours_active": "#,##0.##", "liability_past_horizon_usd": USD, "upfront_usd": USD,
                "monthly_recurring_usd": USD, "on_demand_usd_per_gpu_hour": RATE, "min_utilisation": PCT,
                "avg_utilisation": PCT, "max_utilisation": PCT, "break_even_utilisation": PCT,
                "monthly_savings_usd": USD, "monthly_savings_pct": PCT, "break_even_months": "0.0", "npv_usd": USD,
                "spot_usd_per_useful_gpu_hour": RATE, "break_even_vs_spot": PCT, "break_even_vs_nothing": PCT},
               wrap=("payment_options",))
    s.header({"effective_usd_per_gpu_hour": 26, "pool_reserved_utilisation": 26, "liability_past_horizon_usd": 26,
              "payment_options": PAYMENT_WIDTH})
    alternatives = _payment_text(plan)
    util = _pool_utilisation(plan)
    use = _purchase_use(plan, purchases)
    tranche = _tranche_figures(plan)
    spot_row = lambda r: price_row.get((r.gpu_type, r.region, "spot", None))  # noqa: E731
    L = HOURS_PER_MONTH
    mixes = price_mix(plan)
    for i, r in enumerate(purchases.itertuples()):
        row, pr = i + 2, price_row[_price_key(r)]
        P = lambda col, pr=pr, m=mixes.get(r.Index): prices_ref(col, pr, m)  # noqa: E731
        hours = getattr(r, "hours_active", None)
        hours_cell = float(hours) if hours is not None else F(f"={horizon_ref}", plan.inputs.horizon_hours)
        od_row = price_row.get((r.gpu_type, r.region, "on_demand", None))
        bought = r.instances > 0
        if not bought:  # options not bought: grouped and folded away (the + in the margin shows them)
            ws.set_row(row - 1, None, None, {"level": 1, "hidden": True})
        od = _price_value(plan, price_row, (r.gpu_type, r.region, "on_demand", None)) if od_row else None
        eff, gpus = float(r.effective_usd_per_gpu_hour), float(r.gpus)
        pos = plan.purchases.index.get_loc(r.Index)  # the tranche's own (marginal) use, as the Tranches sheet
        t = tranche.get(pos)
        u_min, u_avg, u_max = (t["min_utilisation"], t["avg_utilisation"], t["max_utilisation"]) if t is not None \
            else (use.iloc[i] if bought else (np.nan, np.nan, np.nan))
        spot_cells = [None, None, None]
        if t is not None and np.isfinite(t["spot_usd_per_useful_gpu_hour"]) and spot_row(r):
            sr, useful = spot_row(r), float(t["spot_usd_per_useful_gpu_hour"])
            g = float(_price_value(plan, price_row, (r.gpu_type, r.region, "spot", None))) / useful
            x = cell(cols, "spot_usd_per_useful_gpu_hour", row)
            spot_cells = [F(f"={ref('Prices', 'hourly_usd', sr)}/{g!r}", useful),
                          F(f'=IF({x}>0,H{row}/{x},"")', eff / useful),
                          F(f"=H{row}/MIN({x},T{row})" if od_row else f"=H{row}/{x}",
                            float(t["break_even_vs_nothing"]))]
        elif t is not None and od_row:
            spot_cells = [None, None, F(f"=IF(T{row}>0,H{row}/T{row},0)", eff / od if od else 0.0)]
        reco = [None] * 8
        if od_row:
            reco = [F(f"={ref('Prices', 'hourly_usd', od_row)}", od), u_min if bought else None, u_avg if bought else None,
                    u_max if bought else None, F(f"=IF(T{row}>0,H{row}/T{row},0)", eff / od if od else 0.0)]
            if bought and np.isfinite(u_avg) and supply.is_(getattr(r, "kind", None), dated_by="window"):
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
        s.append([r.gpu_type, r.region, r.option, F(f"={P('term_months')}", r.term_months), int(r.instances),
                  F(f"={P('gpus_per_instance')}", r.gpus_per_instance), F(f"=E{row}*F{row}", gpus),
                  F(f"={P('effective_usd_per_gpu_hour')}", eff), F(f"=G{row}*H{row}*P{row}", r.horizon_cost_usd),
                  F(f"=G{row}*({P('hourly_usd')}*{P('term_months')}*{L:g}+{P('upfront_usd')}-{P('residual_usd')})", r.commitment_usd),
                  util.get((r.gpu_type, r.region), np.nan) if bought else None,
                  _date(getattr(r, "purchase_date", plan.inputs.periods[0])),
                  _date(getattr(r, "active_from", plan.inputs.periods[0])),
                  _date(getattr(r, "end_date", plan.inputs.periods[0])),
                  ("now" if getattr(r, "firm", True) else "planned"), hours_cell,
                  F(f"=J{row}-I{row}", r.liability_past_horizon_usd), F(f"=G{row}*{P('upfront_usd')}", r.upfront_total_usd),
                  F(f"=G{row}*{P('hourly_usd')}*{L:g}", r.monthly_recurring_usd)] + reco
                 + [float(getattr(r, "npv_usd", 0.0)) if bought else None, alternatives.get(r.Index),
                    s.text(str(getattr(r, "branch", "all"))), float(getattr(r, "probability", 1.0))] + spot_cells)
    for i, r in enumerate(purchases.itertuples()):  # a payment comparison wraps: its row as tall as its lines
        text = alternatives.get(r.Index)
        if text and r.instances > 0 and len(text) > PAYMENT_WIDTH - 2:
            ws.set_row(i + 1, 15.0 * int(np.ceil(len(text) / (PAYMENT_WIDTH - 2))))
    s.table("Purchases")
    if (purchases["instances"] <= 0).any():
        ws.outline_settings(True, False, True, False)  # the fold's button above the rows
        s.note(f"{int((purchases['instances'] <= 0).sum()):,} options not bought are folded away (rows grouped: "
               "click + in the margin to show them)")


def _tranche_figures(plan: Plan) -> dict:
    """Per position in ``plan.purchases``: the tranche's own figures (the Tranches sheet's, marginal use)."""
    from planner.memo.tranches import tranche_utilisation

    tr = plan.memo.tranches if plan.memo is not None else tranche_utilisation(plan)
    if tr is None or not len(tr) or "max_utilisation" not in tr:
        return {}
    return {int(r["row"]): r for r in tr.to_dict(orient="records")}


def _payment_text(plan: Plan) -> dict:
    """Per Purchases row bought with more than one payment option, keyed by its ``plan.purchases`` index label
    (the sheet leaves savings plans out, so its row positions differ): "option $NPV; ..." (* = the one chosen)."""
    po = plan.payment_options
    if po is None or not len(po):
        return {}
    out = {}
    for i, g in po.groupby("purchase"):
        if len(g) > 1:
            out[plan.purchases.index[int(i)]] = "; ".join(f"{'*' if r.chosen else ''}{r.option} {_money(r.npv_usd)}" for r in g.itertuples())
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


def _write_costs(ws, plan: Plan, purchases: pd.DataFrame, price_row: dict, a: pd.DataFrame) -> tuple[int, dict]:
    """Cost per reserved purchase and per pool and option, live over Allocation and Prices.

    Returns the rows written and the sum of the cost cells per cost kind (their cached values)."""
    s = _Sheet(ws, list(COLUMNS["Costs"]),
               {"quantity": NUM, "gpu_hours": NUM, "usd_per_gpu_hour": RATE, "cost_usd": USD})
    s.header({"cost_kind": 14})
    last = max(len(a) + 1, 2)
    A = SimpleNamespace(**{n: span("Allocation", n, 2, last) for n in COLUMNS["Allocation"]})
    full_term = plan.inputs.config.commitments.accounting == "full_term"
    totals = {"reserved": 0.0, **{k: 0.0 for k in supply.RENTED}, "extension": 0.0}
    mixes = price_mix(plan)
    for i, r in enumerate(purchases.itertuples()):
        row, pr = s.rows + 1, price_row[_price_key(r)]
        P = lambda col, pr=pr, m=mixes.get(r.Index): prices_ref(col, pr, m)  # noqa: E731
        hours = float(getattr(r, "hours_active", plan.inputs.horizon_hours))
        w = float(getattr(r, "probability", 1.0))  # a purchase that waits: bought in its branch only (expected)
        gh = r.instances * r.gpus_per_instance * hours * w
        value = float(r.commitment_usd) * w if full_term else gh * float(r.effective_usd_per_gpu_hour)
        cost = F(f"={ref('Purchases', 'commitment_usd', i + 2)}*{ref('Purchases', 'probability', i + 2)}", value) \
            if full_term else F(f"=G{row}*H{row}", value)
        s.append(["reserved", r.gpu_type, r.region, r.option,
                  F(f"={ref('Purchases', 'instances', i + 2)}*{ref('Purchases', 'probability', i + 2)}", int(r.instances) * w),
                  "instances", F(f"=E{row}*{P('gpus_per_instance')}*{ref('Purchases', 'hours_active', i + 2)}", gh),
                  F(f"={P('effective_usd_per_gpu_hour')}", float(r.effective_usd_per_gpu_hour)), cost])
        totals["reserved"] += value
    for r in _spend_rows(plan).itertuples():  # savings plans (USD/h x hours) and resales (values: no Prices row)
        if not r.units:
            continue
        w = float(getattr(r, "probability", 1.0))  # a branch's commitment or resale: expected
        value = (float(r.commitment_usd) if full_term else float(r.horizon_cost_usd)) * w
        exit_ = supply.is_(r.kind, dated_by="resale")
        s.append(["reserved", r.gpu_type if exit_ else None, r.region if exit_ else None,
                  s.text(f"{r.option} resold {pd.Timestamp(r.purchase_date).date()}" if exit_
                         else f"{r.option} ({r.plan_family})"), float(r.units),
                  s.text(("instances sold" if exit_ else "USD per hour")
                         + (f" (if {getattr(r, 'branch', '')}, at p = {w:g})" if w < 1.0 else "")),
                  float(r.hours_active), None, value])
        totals["reserved"] += value
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    expected = (a["gpus"] * a["hours"] * a["scenario"].map(prob)).groupby(
        [a["gpu_type"], a["region"], a["option"]]).sum() if len(a) else pd.Series(dtype=float)
    cost_by = (a["usd"] * a["scenario"].map(prob)).groupby([a["gpu_type"], a["region"], a["option"]]).sum() \
        if len(a) and "usd" in a else pd.Series(dtype=float)
    pathed = plan.inputs.rented_price_path is not None
    for option in supply.RENTED:
        for (gt, rg, opt, _vf), pr in price_row.items():
            if opt != option or (pathed and _vf is not None):
                continue
            row = s.rows + 1
            if pathed:  # prices change over time or by scenario: each Allocation row reads its own Prices row
                gh = float(expected.get((gt, rg, opt), 0.0))
                usd = float(cost_by.get((gt, rg, opt), 0.0))
                crit = f'--EXACT({A.gpu_type},B{row}),--EXACT({A.region},C{row}),--EXACT({A.option},D{row})'
                s.append([option, gt, rg, opt, F(f"=SUMPRODUCT({crit},{A.expected_gpu_hours})", gh), "GPU-hours",
                          F(f"=E{row}", gh),
                          F(f"=IF(E{row}>0,I{row}/E{row},{ref('Prices', 'hourly_usd', pr)})",
                            usd / gh if gh > 0 else _price_value(plan, price_row, (gt, rg, opt, _vf))),
                          F(f"=SUMPRODUCT({crit},{A.expected_cost_usd})", usd)])
                totals[option] += usd
                continue
            gh = float(expected.get((gt, rg, opt), 0.0))
            price = _price_value(plan, price_row, (gt, rg, opt, _vf))
            # exact, case-sensitive matches: a SUMIFS criterion would read "=1+1", "*", "?", "~" or a
            # leading "<" / ">" in a pool's name as an operator or a wildcard
            qty = F(f'=SUMPRODUCT(--EXACT({A.gpu_type},B{row}),--EXACT({A.region},C{row}),'
                    f'--EXACT({A.option},D{row}),{A.expected_gpu_hours})', gh)
            s.append([option, gt, rg, opt, qty, "GPU-hours", F(f"=E{row}", gh), F(f"={ref('Prices', 'hourly_usd', pr)}", price),
                      F(f"=G{row}*H{row}", gh * price)])
            totals[option] += gh * price
    covered_usd = _covered_usd(plan) if pathed else {}
    for (gt, rg), gh in _covered_gpu_hours(plan).items():  # on-demand GPU-hours a savings plan paid: a credit
        row = s.rows + 1
        key = (gt, rg, "on_demand", None)
        price = _price_value(plan, price_row, key)
        if pathed:  # on-demand priced by date or scenario: the mean price of the hours covered, as solved
            price = float(covered_usd.get((gt, rg), 0.0)) / float(gh) if gh > 0 else price
            s.append(["on_demand", gt, rg, "savings plan coverage", -float(gh), "GPU-hours", F(f"=E{row}", -float(gh)),
                      price, F(f"=G{row}*H{row}", -float(gh) * price)])
            totals["on_demand"] -= float(gh) * price
            continue
        s.append(["on_demand", gt, rg, "savings plan coverage", -float(gh), "GPU-hours", F(f"=E{row}", -float(gh)),
                  F(f"={ref('Prices', 'hourly_usd', price_row[key])}", price), F(f"=G{row}*H{row}", -float(gh) * price)])
        totals["on_demand"] -= float(gh) * price
    if "extension" in plan.cost:  # columns added through the model's extension hook (a value: not priced here)
        s.append(["extension", None, None, s.text(", ".join(sorted(plan.stats.get("extensions", [])))), None, None,
                  None, None, float(plan.cost["extension"])])
        totals["extension"] = float(plan.cost["extension"])
    s.table("Costs")
    return s.rows, totals


def _write_baseline(ws, plan: Plan, price_row: dict) -> tuple[int, float]:
    """The all-on-demand baseline per class, live over Prices: its demand GPU-hours (with headroom and the spares
    it asks for, expected, in reference GPUs) x the cheapest on-demand price per reference GPU-hour among its
    allowed pools."""
    inp = plan.inputs
    s = _Sheet(ws, list(COLUMNS["Baseline"]),
               {"demand_gpu_hours": NUM, "cheapest_usd_per_gpu_hour": RATE, "baseline_usd": USD})
    s.header({"workload_class": 22, "demand_gpu_hours": 20, "cheapest_usd_per_gpu_hour": 26, "pools_compared": 60})
    od = inp.pools["od"].to_numpy(float)
    ref_hours = need_gpu_hours(inp)
    pathed = None
    if inp.rented_price_path is not None:
        from planner.results.plan import baseline_by_class

        pathed = baseline_by_class(inp)
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
            terms.append(f"{ref('Prices', 'hourly_usd', price_row[key])}/{q!r}")
            values.append(od[p] / q)
            pools.append(f"{gt}/{rg}")
        if not terms or ref_hours[k] <= 0:
            s.append([name, float(ref_hours[k]), None, 0.0, s.text(", ".join(pools) or "no on-demand pool")])
            continue
        cheapest = min(values)
        if pathed is not None:  # on-demand prices by date or scenario: the cheapest in each period, as solved
            cheapest = float(pathed[k] / ref_hours[k])
            terms = [repr(cheapest)]
        total += ref_hours[k] * cheapest
        s.append([name, float(ref_hours[k]), F("=MIN(" + ",".join(terms) + ")", cheapest),
                  F(f"=B{row}*C{row}", ref_hours[k] * cheapest), s.text(", ".join(pools))])
    s.table("Baseline")
    return s.rows, total


def _spend_rows(plan: Plan) -> pd.DataFrame:
    """The plan's rows without a Prices row of their own (savings plans, resales), bought or not."""
    pur = plan.purchases
    return pur[pur["kind"].isin(VALUED_KINDS)] if "kind" in pur else pur.iloc[0:0]


def _covered_usd(plan: Plan) -> dict:
    """Per (gpu_type, region): the expected on-demand cost savings plans paid, at each period's and scenario's
    on-demand price (a price path)."""
    from planner.inputs import rented

    f, inp = plan.fleet, plan.inputs
    if "on_demand_covered" not in f or not len(f):
        return {}
    prob = dict(zip(plan.scenario_costs["scenario"], plan.scenario_costs["probability"]))
    s = pd.Index(inp.scenarios).get_indexer(f["scenario"])
    t = pd.DatetimeIndex(inp.periods).get_indexer(pd.DatetimeIndex(f["period"]))
    p = pd.MultiIndex.from_frame(inp.pools[["gpu_type", "region"]]).get_indexer(
        pd.MultiIndex.from_arrays([f["gpu_type"], f["region"]]))
    od = np.nan_to_num(inp.rented_price_path[s, rented.index("on_demand"), p, t])
    usd = f["on_demand_covered"] * f["hours"] * f["scenario"].map(prob) * od
    return usd.groupby([f["gpu_type"], f["region"]]).sum().to_dict()


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
