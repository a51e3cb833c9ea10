"""plan.json: the contract's keys first, then extras scripts may use."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from planner import __version__
from planner.core.frames import time_text
from planner.results.plan import Plan
from planner.inputs import rented, supply
from planner.model.sites import site_power_used


def _tree(plan) -> dict | None:
    """The scenario tree the purchases wait on (None without one): per purchase date the branches (nodes) and
    the scenarios each holds, the value of waiting and the objective without it (every purchase common)."""
    inp = plan.inputs
    res = inp.commitments
    if inp.reserved_member is None or "node" not in res:
        return None
    nodes = (res.assign(_d=pd.to_datetime(res["purchase_date"]).dt.strftime("%Y-%m-%d"))
             .drop_duplicates(["_d", "node"]).sort_values(["_d", "node"]))
    names = np.asarray(inp.scenarios, dtype=object)
    member = inp.reserved_member
    dates = []
    for d, g in nodes.groupby("_d", sort=True):
        dates.append({"date": d, "branches": [
            {"branch": r.branch, "probability": _num(r.probability),
             "scenarios": names[member[int(i)]].tolist()} for i, r in zip(g.index, g.itertuples())]})
    risk = plan.risk
    return {"rule": "a purchase on a date is shared by the scenarios whose demand is equal in every period before it",
            "purchase_dates": dates,
            "value_of_waiting_usd": _num(getattr(risk, "value_of_waiting_usd", None)) if risk else None,
            "first_stage_objective_usd": _num(getattr(risk, "first_stage_usd", None)) if risk else None}


def _num(x):
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    x = float(x)
    return None if not math.isfinite(x) else x


def jsonable(x):
    """``x`` (nested dicts and lists of numpy/pandas values) as plain JSON values; NaN and inf become null."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (bool, np.bool_, int, np.integer, float, np.floating)):
        return _num(x)
    if isinstance(x, pd.Timestamp):
        return x.isoformat()
    return x


def _records(df: pd.DataFrame) -> list[dict]:
    out = []
    for row in df.to_dict("records"):
        out.append({k: (_num(v) if isinstance(v, (int, float, np.number, np.bool_)) else
                        v.isoformat() if isinstance(v, pd.Timestamp) else v) for k, v in row.items()})
    return out


def _date(x, date_only: bool = True) -> str | None:
    """An ISO date (``2027-01-04``), or an ISO timestamp when ``date_only`` is false; None for NaT."""
    if x is None or pd.isna(x):
        return None
    x = pd.Timestamp(x)
    return x.date().isoformat() if date_only else x.isoformat()


def _all_midnight(frame: pd.DataFrame, cols: tuple) -> bool:
    """True when every date of these columns is at midnight: then they are written as dates, else all as timestamps."""
    for c in cols:
        if c in frame and len(frame):
            v = pd.to_datetime(frame[c])
            if not (v.isna() | (v == v.dt.normalize())).all():
                return False
    return True


def monthly_usage(plan: Plan) -> pd.DataFrame:
    """Per calendar month and pool (expected over scenarios): GPU-hours owned, used, on-demand, spot and their cost.

    ``reserved_new_usd`` is the amortised cost of this plan's purchases active that month, ``reserved_owned_usd``
    that of the inventory (Inventory sheet); on-demand and spot are priced at the price sheet's rates.
    """
    from planner.results.bill import inventory_cost_by_period, inventory_table, purchase_cost_by_period
    from planner.results.plan import fleet_prices

    inp = plan.inputs
    f = plan.fleet
    prob = dict(zip(inp.scenarios, inp.probability))
    w = f["scenario"].map(prob).to_numpy(float) * f["hours"].to_numpy(float)
    od = fleet_prices(inp, f, "on_demand")  # each period's and scenario's price (a forward curve, price paths)
    sp = fleet_prices(inp, f, "spot")
    covered = f["on_demand_covered"].to_numpy(float) if "on_demand_covered" in f else np.zeros(len(f))
    g = pd.DataFrame({"month": time_text(f["period"], "%Y-%m"), "gpu_type": f["gpu_type"].to_numpy(),
                      "region": f["region"].to_numpy(),
                      "reserved_owned_gpu_hours": f["reserved_owned"].to_numpy() * w,
                      "reserved_used_gpu_hours": f["reserved_used"].to_numpy() * w,
                      "on_demand_gpu_hours": f["on_demand"].to_numpy() * w,
                      "on_demand_covered_gpu_hours": covered * w,  # of which a savings plan paid
                      "on_demand_usd": (f["on_demand"].to_numpy() - covered) * w * od,
                      "spot_gpu_hours": f["spot"].to_numpy() * w, "spot_usd": f["spot"].to_numpy() * w * sp,
                      **{c: v for kd in rented.reported(inp.pools) if kd not in rented.ALWAYS for c, v in (
                          (f"{kd}_gpu_hours", f[kd].to_numpy() * w),
                          (f"{kd}_usd", f[kd].to_numpy() * w * fleet_prices(inp, f, kd)))}})
    out = g.groupby(["month", "gpu_type", "region"], sort=True).sum().reset_index()
    month = inp.periods.strftime("%Y-%m")
    res = inp.commitments
    new = pd.DataFrame(columns=["month", "gpu_type", "region", "reserved_new_usd"])
    if len(res):
        cube = pd.DataFrame(purchase_cost_by_period(plan), columns=month).T.groupby(level=0).sum().T  # (R, months)
        cube["gpu_type"], cube["region"] = res["gpu_type"].to_numpy(), res["region"].to_numpy()
        new = cube.melt(id_vars=["gpu_type", "region"], var_name="month", value_name="reserved_new_usd")
        new = new.groupby(["month", "gpu_type", "region"]).sum().reset_index()
    inv = inventory_table(inp)
    owned = pd.DataFrame(columns=["month", "gpu_type", "region", "reserved_owned_usd"])
    if len(inv):
        cube = pd.DataFrame(inventory_cost_by_period(inp, inv), columns=month).T.groupby(level=0).sum().T
        cube["gpu_type"], cube["region"] = inv["gpu_type"].to_numpy(), inv["region"].to_numpy()
        owned = cube.melt(id_vars=["gpu_type", "region"], var_name="month", value_name="reserved_owned_usd")
        owned = owned.groupby(["month", "gpu_type", "region"]).sum().reset_index()
    out = out.merge(new, how="left").merge(owned, how="left")
    for col in ("reserved_new_usd", "reserved_owned_usd"):  # numbers, 0 where a pool has none (pandas 2 and 3)
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float).fillna(0.0)
    return out


def plan_to_dict(plan: Plan) -> dict:
    """plan.json as a dict (the contract of spec/contracts.md)."""
    from planner.results.bill import bill, inventory_table
    from planner.report.showback import by_month, by_team
    from planner.report.provenance import provenance

    inp = plan.inputs
    prov = provenance(plan)
    files = {f["role"]: f for f in prov["files"]}
    purchases = plan.purchases
    dated = _all_midnight(purchases, ("purchase_date", "active_from", "end_date"))  # one format per plan
    shortfall = plan.shortfall
    by_class = []
    if len(shortfall):
        g = shortfall.groupby(["scenario", "workload_class"], sort=True)
        for (scen, cls), df in g:
            by_class.append({"scenario": scen, "workload_class": cls, "periods": int(len(df)),
                             "first_period": df["period"].min().isoformat(),
                             "last_period": df["period"].max().isoformat(),
                             "gpu_hours": float(df["unmet_gpu_hours"].sum()),
                             "peak_gpus": float(df["unmet_gpus"].max()),
                             "causes": sorted(set("; ".join(df["cause"]).split("; ")))})
    spot_cols = ["workload_class", "gpu_type", "region", "job_gpus", "instances_per_job",
                 "job_interruptions_per_hour", "interval_minutes", "young_interval_minutes", "goodput",
                 "goodput_source", "spot_usd_per_gpu_hour", "effective_usd_per_useful_gpu_hour",
                 "on_demand_usd_per_gpu_hour", "best_reserved_usd_per_gpu_hour", "spot_pays",
                 "spot_beats_reserved", "break_even_interruptions_per_hour", "spot_gpu_hours", "why"]
    spot = plan.spot[spot_cols] if len(plan.spot) else pd.DataFrame(columns=spot_cols)
    out = {
        "status": plan.status.value,
        "mip_gap": _num(plan.solve.mip_gap),
        "objective_usd": _num(plan.objective),
        "cost_usd": {k: _num(v) for k, v in plan.cost.items()},
        "shortfall_gpu_hours": _num(plan.shortfall_gpu_hours),
        "reserved_purchases": [
            {"gpu_type": r.gpu_type, "region": r.region, "option": r.option, "instances": int(r.instances),
             "gpus": _num(r.gpus), "commitment_usd": _num(r.commitment_usd),
             "term_months": _num(r.term_months), "effective_usd_per_gpu_hour": _num(r.effective_usd_per_gpu_hour),
             "horizon_cost_usd": _num(r.horizon_cost_usd),
             "purchase_date": _date(r.purchase_date, dated), "active_from": _date(r.active_from, dated),
             "end_date": _date(r.end_date, dated), "firm": bool(r.firm),
             "upfront_usd": _num(r.upfront_total_usd), "residual_usd": _num(r.residual_total_usd),
             "monthly_recurring_usd": _num(r.monthly_recurring_usd),
             "liability_past_horizon_usd": _num(r.liability_past_horizon_usd),
             "kind": getattr(r, "kind", "instance"), "npv_usd": _num(getattr(r, "npv_usd", None)),
             "branch": getattr(r, "branch", "all"), "probability": _num(getattr(r, "probability", 1.0)),
             **({"usd_per_hour": _num(r.units), "plan_family": r.plan_family}
                if supply.is_(getattr(r, "kind", None), unit="usd_per_hour") else {}),
             **({"resale_of": _resale_of(purchases, r)} if supply.is_(getattr(r, "kind", None), dated_by="resale") else {}),
             **_block_fields(r, dated)}
            for r in purchases.itertuples()],  # every reserved option and purchase date, bought (instances > 0) or not
        "commitments": {k: (_num(v) if not isinstance(v, str) else v) for k, v in plan.commitments.items()},
        "spend_commitments": _spend(plan),
        **({"sites": site_power_used(inp, plan.purchases["units"].to_numpy(float))}  # [sites]: MW at each peak
           if getattr(inp.config, "sites", None) else {}),
        "npv_usd": _num(plan.finance.get("npv_usd")) if plan.finance else None,
        "finance": {k: (_num(v) if not isinstance(v, str) else v) for k, v in plan.finance.items()},
        "payment_options": _records(plan.payment_options) if plan.payment_options is not None
        and len(plan.payment_options) else [],
        "payment_break_even": _payment_break_even(plan),
        "cash_schedule": _records(plan.cash_schedule) if len(plan.cash_schedule) else [],
        "baselines_usd": {"all_on_demand": _num(plan.baseline_all_on_demand)},
        "bill_usd": {k: _num(v) for k, v in bill(plan).items()},
        "inventory": _records(inventory_table(inp).drop(columns=["valid_from"])),
        "inputs": {"model": files.get("model", {}).get("path"),
                   "demand": files["demand"]["path"], "prices": files["prices"]["path"],
                   "inventory": files.get("inventory", {}).get("path"),
                   "sha256": {f["path"]: f["sha256"] for f in files.values()}},
        "solver": {"backend": plan.solve.backend, "seconds": _num(plan.solve.seconds),
                   "message": plan.solve.message, "best_bound_usd": _num(plan.solve.best_bound),
                   "time_limit_s": _num(prov["solver"]["time_limit_s"]),
                   "mip_gap_limit": _num(prov["solver"]["mip_gap_limit"]),
                   "model_file": {"backend": prov["solver"]["model_file_backend"],
                                  "time_limit_s": _num(prov["solver"]["model_file_time_limit_s"]),
                                  "mip_gap_limit": _num(prov["solver"]["model_file_mip_gap"])}},
        "created_utc": plan.created_utc,
        "name": plan.name,
        "run_id": plan.run_id,
        "planner_version": __version__,
        "demand_met": plan.demand_met,
        "savings_usd": _num(plan.savings),
        "expected_cost_usd": _num(plan.cost["total"]),
        "worst_case_usd": _num(plan.risk.worst_case_usd if plan.risk else plan.cost["total"]),
        "vss_usd": _num(plan.risk.vss_usd if plan.risk else 0.0),
        "evpi_usd": _num(plan.risk.evpi_usd if plan.risk else 0.0),
        # how far the solves' achieved gaps leave each figure unknown: within it of zero, a figure is reported as 0
        "risk_view_unproven_usd": ({k: _num(v) for k, v in plan.risk.unproven_usd.items()}
                                   if plan.risk is not None and plan.risk.unproven_usd else None),
        "tree": _tree(plan),
        "term": _term(plan),
        "risk": {k: _num(v) for k, v in plan.cvar.items()} if getattr(plan, "cvar", None) else None,
        "shortfall_penalty_usd_per_gpu_hour": _num(inp.penalty),
        "shortfall_penalty_by_class": {c: _num(v) for c, v in zip(inp.classes, inp.penalty_by_class)},
        "horizon": {"start": inp.periods[0].isoformat(), "periods": inp.T, "hours": _num(inp.horizon_hours)},
        "reserved_utilisation": _num(plan.reserved_utilisation),
        "spares": {"gpu_hours": _num(plan.spares_gpu_hours), "peak_gpus": _num(plan.spares_peak_gpus)},
        "shortfall": by_class,
        "spot_economics": _records(spot),
        "scenarios": [{"name": r["scenario"], "probability": _num(r["probability"]),
                       "cost_usd": {k: _num(r[k]) for k in (*supply.BUCKETS, "total") if k in r},
                       "shortfall_gpu_hours": _num(r["shortfall_gpu_hours"])}
                      for r in plan.scenario_costs.to_dict("records")],
        "cost_by_class_usd": _showback(plan)[0],
        "monthly_usage": _records(monthly_usage(plan)),
        "showback_by_month": _records(by_month(plan)) if plan.status.has_plan else [],
        "budget": _records(plan.budget) if plan.budget is not None else [],
        "shadow_prices": _records(plan.shadow_prices.drop(columns=["gpu_type", "region", "workload_class"]))
        if plan.shadow_prices is not None else None,
        "showback_by_team": _showback(plan)[1],
        "chargeback_by_team": _records(by_team(plan, owned=True)) if plan.status.has_plan else [],
        "slo": _slo_summary(plan),
        "backfill": _records(plan.backfill.drop(columns=["class_index", "pool"], errors="ignore"))
        if len(plan.backfill) else [],
        **_memo(plan),
        "model_size": plan.stats,
        "notes": list(plan.notes),
        "timings_s": {k: _num(v) for k, v in plan.timings.items()},
    }
    return out


def _showback(plan: Plan):
    """``{class: usd}`` adding up to the total, and per team GPU-hours and cost by option (planner.report.showback)."""
    from planner.report.showback import by_class, by_team

    if not plan.status.has_plan:
        return {}, []
    c = by_class(plan)
    return ({r.workload_class: _num(r.total_usd) for r in c.itertuples()}, _records(by_team(plan)))


def _slo_summary(plan: Plan) -> list[dict]:
    """One entry per SLO class: its target, the worst latency over the periods, and the periods that miss it."""
    lat = plan.latency
    if not len(lat):
        return []
    out = []
    for (scen, cls), df in lat.groupby(["scenario", "workload_class"], sort=False):
        busy = df[df["requests_per_s"] > 0]
        out.append({"scenario": scen, "workload_class": cls,
                    "latency_slo_ms": _num(df["latency_slo_ms"].iat[0]),
                    "slo_percentile": _num(df["slo_percentile"].iat[0]),
                    "peak_requests_per_s": _num(df["requests_per_s"].max()),
                    "peak_replicas": int(df["replicas"].max()),
                    "worst_latency_at_percentile_ms": _num(busy["latency_at_percentile_ms"].max())
                    if len(busy) else 0.0,
                    "periods_missing_slo": int((~df["slo_met"]).sum()),
                    "periods": [{"period": r.period.isoformat(), "requests_per_s": _num(r.requests_per_s),
                                 "replicas": int(r.replicas), "serving_gpu_types": r.serving_gpu_types,
                                 "latency_at_percentile_ms": _num(r.latency_at_percentile_ms)}
                                for r in df.itertuples()]})
    return out


def plan_json(plan: Plan) -> str:
    """plan.json as text (no NaN or infinity: they become null)."""
    return json.dumps(plan_to_dict(plan), indent=2, allow_nan=False) + "\n"


def _block_fields(r, dated: bool) -> dict:
    """A capacity block's window and the date its price is paid (kind "window"); nothing for other kinds."""
    if not supply.is_(getattr(r, "kind", None), dated_by="window"):
        return {}
    return {"block_start": pd.Timestamp(r.block_start).isoformat(), "block_days": _num(r.block_days),
            "cash_date": pd.Timestamp(r.cash_date).isoformat(), "provider": r.provider or None}


def _spend(plan: Plan) -> list[dict]:
    """plan.json ``spend_commitments``: one entry per savings-plan commitment (option, family, purchase date; on a
    scenario tree, per branch: ``branch`` and its ``probability``, the weight of its fee in the expected cost)."""
    sp = plan.spend
    if sp is None or not len(sp):
        return []
    return [{"option": r.option, "family": r.plan_family, "purchase_date": pd.Timestamp(r.purchase_date).date().isoformat(),
             "end_date": pd.Timestamp(r.end_date).isoformat(), "firm": bool(r.firm), "usd_per_hour": _num(r.usd_per_hour),
             "hours_active": _num(r.hours_active), "committed_usd": _num(r.committed_usd),
             "utilisation": _num(r.utilisation), "covered_gpu_hours": _num(r.covered_gpu_hours),
             "covered_at_rates_usd": _num(r.covered_at_rates_usd),
             "covered_at_on_demand_usd": _num(r.covered_at_on_demand_usd), "savings_usd": _num(r.savings_usd),
             "branch": getattr(r, "branch", "all"), "probability": _num(getattr(r, "probability", 1.0))}
            for r in sp.itertuples()]


def _resale_of(purchases: pd.DataFrame, r) -> dict:
    """The purchase a resale row sells: its option, pool and purchase date."""
    res = purchases.iloc[int(r.parent)] if hasattr(r, "parent") else None
    if res is None:
        return {}
    return {"gpu_type": res["gpu_type"], "region": res["region"], "option": res["option"],
            "purchase_date": pd.Timestamp(res["purchase_date"]).date().isoformat()}


def _payment_break_even(plan: Plan) -> list:
    """Per purchase with payment options of different upfronts: the rate at which the most-upfront and the
    least-upfront option cost the same (``planner.inputs.finance.payment_break_even``)."""
    po = plan.payment_options
    if po is None or not len(po) or not plan.status.has_plan:
        return []
    from planner.inputs.finance import payment_break_even

    return _records(payment_break_even(plan.inputs, po))


def _memo(plan: Plan) -> dict:
    """The purchase memo's keys: ``tranches`` (each purchase's own, marginal utilisation), ``coverage``,
    ``cash_by_year`` and ``cash_next_12_months_usd`` (owned commitments' fees included) always; ``downside``,
    ``commitment_curve`` and ``savings`` (next-best plan) when the memo was computed (else null)."""
    if not plan.status.has_plan:
        return {}
    from planner.memo.build import Memo, cash_by_year, cash_monthly, cash_next_12_months, coverage, tranche_utilisation

    m = plan.memo
    if m is None:
        m = Memo(tranches=tranche_utilisation(plan), downside=None, curve=None,
                 cash_by_year=cash_by_year(plan), cash_monthly=cash_monthly(plan),
                 cash_next_12_months_usd=cash_next_12_months(plan), coverage=coverage(plan), savings=None)
    d = m.to_dict()
    for key in ("tranches", "downside", "curve"):  # seconds are timings: plan.json is the same for the same inputs
        # (and fell_back is said in the plan's notes: planner.memo.build.fallback_note)
        d[key] = [{k: v for k, v in r.items() if k not in ("seconds", "fell_back")} for r in d[key]]
    computed = plan.memo is not None
    from planner.memo.tranches import verdict

    for t in d["tranches"]:  # the sign-now verdict in the words the terminal, Summary and HTML report use
        vs = t.get("break_even_vs_nothing")
        t["verdict"] = verdict(bool(t.get("pays")), float(t.get("avg_utilisation") or 0.0),
                               float(vs) if vs is not None else float("nan"))
    return {"tranches": d["tranches"], "coverage": d["coverage"], "cash_by_year": d["cash_by_year"],
            "term_downside": d.get("term_downside") if computed else None,
            "cash_next_12_months_usd": d["cash_next_12_months_usd"],
            "downside": d["downside"] if computed else None,
            "commitment_curve": d["curve"] if computed else None,
            "savings": d["savings"] if computed else None}


def _term(plan):
    """How commitments that outlive the horizon were judged (:mod:`planner.pipeline.whole_term`,
    :mod:`planner.inputs.term`), or None."""
    from planner.inputs.term import term_judgement

    t = plan.term if plan.term is not None else term_judgement(plan.inputs)
    return None if t is None else {k: (_num(v) if isinstance(v, float) else v) for k, v in t.items()}
