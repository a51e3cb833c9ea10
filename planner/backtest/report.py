"""A backtest's per-strategy table as text (terminal) or Markdown (docs, benchmarks), and the penalty ranking."""

from __future__ import annotations

import pandas as pd

COLUMNS = ("cost (USD)", "cost + shortfall (USD)", "mean regret %", "90 % CI", "total regret %", "full-term regret %", "90 % CI (full term)",
           "signed (USD)", "shortfall GPU-h", "SLO-hours missed", "GPUs bought", "vs rule, points (90 % CI)")
REGRET_BASIS = ("regret is on cost + shortfall: the cost, plus each GPU-hour of demand left unmet at the shortfall "
                "penalty (the objective every plan weighs; cost alone counts unmet demand as free)")


def _ci(ci) -> str:
    return "-" if ci is None else f"{ci[0]:.2f} to {ci[1]:.2f}"


def _pct(x) -> str:
    return "-" if x is None or pd.isna(x) else f"{x:.2f}"


def _vs(v) -> str:
    """A strategy's paired difference from the spot-aware rule: mean points of regret and its interval."""
    if not isinstance(v, dict) or v.get("mean_points") is None:
        return "-"
    ci = v.get("ci90")
    return f"{v['mean_points']:+.2f}" + (f" ({ci[0]:+.2f} to {ci[1]:+.2f})" if ci else "")


def rows(result) -> list[list[str]]:
    """One row of formatted cells per strategy, in the order of COLUMNS (the hindsight's full-term row last)."""
    out = []
    for r in result.strategies.itertuples():
        out.append([r.strategy, f"{r.total_cost_usd:,.0f}", f"{r.total_objective_usd:,.0f}", _pct(r.mean_regret_pct), _ci(r.mean_regret_ci90),
                    _pct(r.total_regret_pct), _pct(r.full_term_regret_pct), _ci(r.full_term_regret_ci90),
                    f"{r.signed_usd:,.0f}", f"{r.shortfall_gpu_hours:,.1f}", f"{r.slo_hours_missed:,.0f}",
                    f"{r.gpus_bought:,.0f}", _vs(getattr(r, "vs_rule", None))])
    h = result.hindsight.get("full_term", {})
    full = "full_term_regret_pct" in result.strategies and result.strategies["full_term_regret_pct"].notna().any()
    # signed and GPUs bought of one hindsight plan: the full term's where its regret is reported, else the span's
    # (whose signed dollars the table does not hold)
    bought = h.get("purchases", []) if full else result.hindsight.get("purchases", [])
    out.append(["hindsight", f"{result.hindsight_total_usd:,.0f}", f"{result.hindsight_objective_usd:,.0f}", "0", "-",
                "0", "0" if full else "-", "-",
                f"{h.get('signed_usd', 0.0):,.0f}" if full else "-", "-", "-",
                f"{sum(p['gpus'] for p in bought):,.0f}", "-"])
    return out


def ranking_lines(result) -> list[str]:
    """``at 2x on-demand ($x/GPU-h): a < b < c`` per penalty multiplier (in-span cost + penalty x shortfall)."""
    r = result.penalty_ranks
    if not len(r):
        return []
    lines = []
    for m, g in r.groupby("multiplier", sort=True):
        order = g.sort_values(["rank", "strategy"])
        lines.append(f"shortfall at {m:g}x on-demand (${g['penalty_usd_per_gpu_hour'].iat[0]:,.2f}/GPU-h): "
                     + " < ".join(order["strategy"]))
    return lines


def strategy_table(result) -> str:
    """The terminal table: a column per figure, a row per strategy, then the rankings."""
    table = pd.DataFrame([r[1:] for r in rows(result)], index=[r[0] for r in rows(result)], columns=list(COLUMNS))
    return table.to_string() + "\n" + REGRET_BASIS + "\n" + "\n".join(ranking_lines(result))


def markdown(result) -> str:
    """The same table in Markdown, then the rankings as a list."""
    head = "| strategy | " + " | ".join(COLUMNS) + " |"
    rule = "|---|" + "---:|" * len(COLUMNS)
    body = ["| " + " | ".join(r) + " |" for r in rows(result)]
    return "\n".join([head, rule, *body, "", REGRET_BASIS + ".", "", *("- " + line for line in ranking_lines(result))]) + "\n"
