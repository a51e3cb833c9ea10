"""Sheets of detail: spot economics, assumptions, scenarios, shortfall, latency, backfill, shadow prices."""

from __future__ import annotations

import numpy as np
import pandas as pd
from xlsxwriter.utility import xl_col_to_name
from planner.inputs import rented
from planner.results.plan import Plan
from planner.report.provenance import provenance
from planner.report.workbook.book import DATE, F, NUM, PCT, RATE, USD, _Sheet, _date


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


RUN_NOTE_CHARS = 110  # a run's note on the Assumptions sheet is broken into lines of at most this many characters


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
        "Inventory already owned is sunk: it serves demand and is not in the plan's cost (the optimisation does not "
        "charge it); the bill (Summary) and Chargeback add its fees, which are owed whatever this plan does.",
        f"Run id: {plan.run_id} (the same as plan.json's run_id: the two files come from one run).",
    ] + list(extra_notes or [])
    s.note()  # the notes stand below the table
    for note in notes:
        s.note(note)
    said = [str(n) for n in (plan.notes or [])]
    if said:  # what the run itself says (how the purchases were judged, a memo not computed, a fallback): plan.json's
        import textwrap  # notes and the printed summary's, for the reader of the workbook too, each broken into lines no

        # wider than the notes above (one line of hundreds of characters made the sheet print at a third of its size)
        s.note()
        s.note(f"This run's notes ({len(said)}; the same as plan.json's notes):")
        for note in said:
            lines = textwrap.wrap(note, width=RUN_NOTE_CHARS, initial_indent="- ", subsequent_indent="  ") or ["-"]
            for line in lines:
                s.note(line)


def _write_scenarios(ws, plan: Plan) -> None:
    others = [k for k in rented.reported(plan.inputs.pools) if k not in rented.ALWAYS]  # flex-start: appended
    cols = ["scenario", "probability", "reserved_usd", "on_demand_usd", "spot_usd", "total_usd",
            "shortfall_gpu_hours", *(f"{k}_usd" for k in others)]
    s = _Sheet(ws, cols, {"probability": PCT, "reserved_usd": USD, "on_demand_usd": USD, "spot_usd": USD,
                          "total_usd": USD, "shortfall_gpu_hours": NUM, **{f"{k}_usd": USD for k in others}})
    s.header({"scenario": 18})
    for i, r in enumerate(plan.scenario_costs.to_dict("records")):
        row = i + 2
        more = "".join(f"+{xl_col_to_name(cols.index(f'{k}_usd'))}{row}" for k in others)
        s.append([r["scenario"], r["probability"], r["reserved"], r["on_demand"], r["spot"],
                  F(f"=C{row}+D{row}+E{row}{more}", r["total"]), r["shortfall_gpu_hours"], *(r[k] for k in others)])
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


def _write_shadow_prices(ws, plan: Plan) -> None:
    """What relaxing each binding budget, cap, headroom or spot share by one unit is worth (planner.solve.duals)."""
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
