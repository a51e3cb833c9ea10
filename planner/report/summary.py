"""The short terminal summary of a plan."""

from __future__ import annotations

import pandas as pd

from planner.results.plan import Plan
from planner.core.units import usd as _usd
from planner.inputs import rented, supply
from planner.inputs.term import term_judgement
from planner.memo.tranches import spend_verdict, verdict


def summary_text(plan: Plan) -> str:
    """The terminal summary of a plan: status, costs, purchases, savings, spot and shortfall."""
    inp = plan.inputs
    lines = [f"Plan '{plan.name}': {plan.status.value}"
             + (f" (gap {plan.solve.mip_gap:.2e})" if plan.solve.mip_gap is not None else "")
             + f", {inp.T} periods x {inp.K} classes x {inp.P} pools, solved by {plan.solve.backend} "
             f"in {plan.solve.seconds:.1f} s"]
    lines += [f"  note: {n}" for n in plan.notes]
    term = plan.term if plan.term is not None else term_judgement(plan.inputs)
    if term is not None and term.get("judge") != "term":  # (a whole-term judgement is among the notes)
        lines.append(f"  term: {term['note']}")
    if not plan.status.has_plan:
        lines.append(f"  no plan: {plan.solve.message or plan.status.value}")
        return "\n".join(lines)
    c = plan.cost
    scen = " expected" if len(inp.scenarios) > 1 else ""
    lines.append(f"  total{scen} cost   {_usd(c['total']):>16}   reserved {_usd(c['reserved'])}, "
                 f"on-demand {_usd(c['on_demand'])}, spot {_usd(c['spot'])}"
                 + "".join(f", {k.replace('_', '-')} {_usd(c[k])}" for k in rented.reported(inp.pools)
                           if k not in rented.ALWAYS))
    from planner.results.bill import inventory_table

    inv = inventory_table(inp)
    if len(inv):
        owned = float(inv["horizon_cost_usd"].sum())
        lines.append(f"  the bill         {_usd(c['total'] + owned):>16}   = this plan {_usd(c['total'])} + already "
                     f"committed {_usd(owned)} (inventory, {len(inv)} commitment(s))")
        for r in inv[~inv["priced"]].itertuples():
            lines.append(f"  WARNING: inventory {r.gpus:g} {r.gpu_type}/{r.region} {r.option}: no such reserved option "
                         "in the price sheet, so it is not in the bill")
    if plan.budget is not None:
        for b in plan.budget.itertuples():
            what = "total" if b.name == "budget_total" else b.name.replace("budget_month_", "").replace("_", "-")
            lines.append(f"  budget {what}: {_usd(b.spend_usd)} of {_usd(b.cap_usd)}" + (" (binding)" if b.binding
                                                                                          else ""))
    if plan.finance and (plan.finance.get("discount_rate") or plan.finance.get("objective") == "npv"):
        lines.append(f"  NPV of the cash  {_usd(plan.finance['npv_usd']):>16}   at {100 * plan.finance['discount_rate']:g} % a "
                     f"year, to the end of the last term (objective: {plan.finance['objective']})")
    t = plan.term or {}
    if t.get("judge") == "term" and t.get("expected_cost_over_term_usd") is not None:
        parts = ", ".join(f"{b['scenario']} ({b['probability']:.0%}) {_usd(b['total_usd'])}"
                          for b in t.get("branch_costs", [])[:6])
        lines.append(f"  over the term    {_usd(t['expected_cost_over_term_usd']):>16}   expected, the horizon and "
                     f"{t['tail_months']:.0f} months past it: {parts}")
    base = plan.baseline_all_on_demand
    if base == base:
        saved = plan.savings if abs(plan.savings) >= 0.005 else 0.0  # never "$-0"
        pct = 100 * saved / base if base else 0.0
        lines.append(f"  all on-demand    {_usd(base):>16}   savings {_usd(saved)} ({pct:.1f} %)")
    if len(inp.scenarios) > 1:
        sc = plan.scenario_costs
        parts = ", ".join(f"{r.scenario} ({r.probability:.0%}) {_usd(r.total)}" for r in sc.head(6).itertuples())
        more = f", ... {len(sc)} scenarios in all (plan.json scenarios[])" if len(sc) > 6 else ""
        lines.append(f"  scenarios: {parts}{more}")
        if plan.risk is not None:
            lines.append(f"  worst case {_usd(plan.risk.worst_case_usd)} ({plan.risk.worst_scenario}); "
                         f"value of the stochastic solution {_usd(plan.risk.vss_usd)}; "
                         f"value of perfect information {_usd(plan.risk.evpi_usd)}")
            if getattr(plan.risk, "value_of_waiting_usd", None) is not None:
                lines.append(f"  value of waiting {_usd(plan.risk.value_of_waiting_usd)}: later purchases decided per "
                             f"branch, as what happens first becomes known, against every purchase decided now for all "
                             f"scenarios ({_usd(plan.risk.first_stage_usd)})")
    bought = plan.purchases[plan.purchases["instances"] > 0]
    if "purchase_date" in bought:  # in the order they are made (a stable sort: pools keep their order on a date)
        bought = bought.sort_values("purchase_date", kind="stable")
    if len(bought):
        dated = bought["purchase_date"].nunique() > 1 if "purchase_date" in bought else False
        lines.append("  reserved purchases (commitment liability over the term):")
        for r in bought.itertuples():
            when = ""
            branch = getattr(r, "branch", "all")
            if "purchase_date" in bought:
                when = f"{'buy now' if r.firm else 'expect to buy'} {r.purchase_date:%Y-%m-%d}" + \
                    ("" if branch == "all" else f" if {branch} ({r.probability:.0%})") + \
                    (f", usable {r.active_from:%Y-%m-%d}" if r.active_from != r.purchase_date else "") + \
                    f", ends {r.end_date:%Y-%m-%d %H:%M}: "
            if supply.is_(getattr(r, "kind", None), dated_by="resale"):
                lines.append(f"    expect to sell {r.purchase_date:%Y-%m-%d}"
                             + ("" if branch == "all" else f" if {branch} ({r.probability:.0%})")
                             + f": {r.gpu_type:<12} {r.region:<16} {r.option:<12} "
                             f"{r.instances:>6} instances ({-r.gpus:g} GPUs) bought earlier, on resale: saves "
                             f"{_usd(-r.commitment_usd)} of the term (fees stop, the upfront left comes back less "
                             "the haircut)")
                continue
            if supply.is_(getattr(r, "kind", None), dated_by="window"):
                lines.append(f"    {when}{r.gpu_type:<12} {r.region:<16} {r.option:<12} {r.instances:>6} instances "
                             f"({r.gpus:g} GPUs)  {_usd(r.commitment_usd)} (capacity block {r.block_days:g} days "
                             f"from {pd.Timestamp(r.block_start):%Y-%m-%d %H:%M}, prepaid in "
                             f"{pd.Timestamp(r.cash_date):%Y-%m})")
                continue
            lines.append(f"    {when}{r.gpu_type:<12} {r.region:<16} {r.option:<12} {r.instances:>6} instances "
                         f"({r.gpus:g} GPUs)  {_usd(r.commitment_usd)}"
                         + (f" (upfront {_usd(r.upfront_total_usd)}, then {_usd(r.monthly_recurring_usd)}/month"
                            + (f", {_usd(r.residual_total_usd)} back at the end" if r.residual_total_usd > 0 else "")
                            + ")" if dated or r.upfront_total_usd > 0 else ""))
        lines.extend(_payment_lines(plan))
        if "exit_value_usd" in plan.commitments:
            npv = plan.inputs.config.finance.npv
            lines.append(f"    the option to resell terms is worth {_usd(plan.commitments['exit_value_usd'])} to this plan "
                         + ("(in the NPV objective; " if npv else "(")
                         + f"its cost without it: {_usd(plan.commitments['cost_without_exits_usd'])}; a resale is "
                         + ("decided for every scenario alike)" if plan.inputs.reserved_member is None else
                            "decided per branch, as what happens first becomes known)"))
        tree = "probability" in bought and bool((bought["probability"] < 1).any())
        lines.append(f"    total{' expected' if tree else ''} commitment "
                     f"{_usd(plan.commitments.get('reserved_full_term_usd', bought['commitment_usd'].sum()))}"
                     f"{' (savings plans included)' if _has_spend(plan) else ''}; reserved utilisation "
                     f"{100 * plan.reserved_utilisation:.1f} %"
                     + (f" of the working fleet; spares held beside it {plan.spares_peak_gpus:,.0f} GPUs at the most, "
                        f"{plan.spares_gpu_hours:,.0f} GPU-hours" if plan.spares_gpu_hours > 1e-9 else ""))
        lines.extend(_liability_lines(plan))
    else:
        lines.append("  reserved purchases: none")
        if _has_spend(plan):
            lines.extend(_liability_lines(plan))
    sp = plan.spend
    for r in (sp[sp["usd_per_hour"] > 0].itertuples() if sp is not None and len(sp) else []):
        lines.append(f"  savings plan: {'commit now' if r.firm else 'expect to commit'} {pd.Timestamp(r.purchase_date):%Y-%m-%d} "
                     + ("" if getattr(r, "branch", "all") == "all" else f"if {r.branch} ({r.probability:.0%}) ")
                     + f"to {r.option} ({r.plan_family}) ${r.usd_per_hour:,.2f}/h until {pd.Timestamp(r.end_date):%Y-%m-%d}: "
                     f"{_usd(r.committed_usd)} in the horizon, {100 * r.utilisation:.1f} % used, it paid "
                     f"{r.covered_gpu_hours:,.0f} on-demand GPU-hours worth {_usd(r.covered_at_on_demand_usd)}")
    lines.extend(_commit_now_lines(plan))
    lines.extend(_memo_lines(plan))
    for m in plan.slo_misses.itertuples():
        scen = f" in scenario {m.scenario}" if len(inp.scenarios) > 1 else ""
        lines.append(f"  SLO MISSED: {m.workload_class}{scen} misses p{m.slo_percentile:g} <= {m.latency_slo_ms:g} ms in "
                     f"{m.periods_missed} of {m.periods} periods (worst {m.worst_latency_ms:,.0f} ms; served on "
                     f"{m.serving_gpu_types}: sized in reference-type GPUs, a mix of GPU types can miss; restrict "
                     "the class to one type or give it headroom)")
    if plan.shortfall_gpu_hours > 1e-6:
        lines.append(f"  SHORTFALL: {plan.shortfall_gpu_hours:,.1f} GPU-hours of demand not met:")
        for (cls, cause), df in plan.shortfall.groupby(["workload_class", "cause"]):
            lines.append(f"    {cls}: {df['unmet_gpu_hours'].sum():,.1f} GPU-hours in {len(df)} periods "
                         f"(first {df['period'].min():%Y-%m-%d %H:%M}); cause: {cause}")
    return "\n".join(lines)


def _has_spend(plan: Plan) -> bool:
    sp = plan.spend
    return sp is not None and len(sp) > 0 and bool((sp["usd_per_hour"] > 0).any())


def _payment_lines(plan: Plan) -> list[str]:
    """One line per purchase with several payment options: the NPV of each at the model's rate."""
    po = plan.payment_options
    if po is None or not len(po):
        return []
    rate = plan.finance.get("discount_rate", 0.0)
    from planner.inputs.finance import payment_break_even

    be = payment_break_even(plan.inputs, po).set_index("purchase") if "reserved_row" in po else None
    lines = []
    for i, g in po.groupby("purchase"):
        if len(g) < 2:
            continue
        r = plan.purchases.iloc[int(i)]
        parts = ", ".join(f"{o.option} {_usd(o.npv_usd)}" + (" (chosen)" if o.chosen else "") for o in g.itertuples())
        where = "" if r.get("branch", "all") == "all" else f" if {r['branch']}"
        lines.append(f"    payment options for {r.gpu_type}/{r.region} {r['purchase_date']:%Y-%m-%d}{where}, NPV at "
                     f"{100 * rate:g} %: {parts}")
        if be is not None and int(i) in be.index:
            b = be.loc[int(i)]
            irr = float(b["break_even_rate"])
            lines.append(f"      {b['upfront_option']} and {b['other_option']} cost the same at {100 * irr:.2f} % a year"
                         " (the cost of capital where paying upfront stops paying): "
                         + (f"below it pay upfront, above it monthly; at {100 * rate:g} % {b['cheaper']} is cheaper"
                            if irr == irr else f"{b['cheaper']} is cheaper at every rate"))
    return lines


def _liability_lines(plan: Plan) -> list[str]:
    """Amortised and full-term figures, and one plain sentence when most of the liability is past the horizon."""
    c = plan.commitments
    if not c:
        return []
    full, amortised = c["reserved_full_term_usd"], c["reserved_amortised_usd"]
    gaps = float(c.get("liability_in_gaps_usd", 0.0))  # owed in the horizon's gaps: before its end, not after
    past = c["liability_past_horizon_usd"] - gaps
    lines = [f"    reserved cost counted {c['accounting'].replace('_', ' ')}: amortised over the horizon "
             f"{_usd(amortised)}, full term {_usd(full)}, of which {_usd(past)} falls after the horizon ends"
             + (f" and {_usd(gaps)} in the horizon's gaps (time between periods)" if gaps > 0.005 else "")]
    if full > 0 and past > 0.5 * full:
        end = plan.inputs.periods[-1] + pd.Timedelta(hours=float(plan.inputs.hours[-1]))
        what = "signed" if plan.inputs.reserved_member is None else "planned (expected over the tree's branches)"
        lines.append(f"  NOTE: {100 * past / full:.0f} % of the commitments {what} ({_usd(past)} of {_usd(full)}) "
                     f"is owed after the forecast ends on {end:%Y-%m-%d}: " + _past_judged(plan))
    return lines


def _past_judged(plan: Plan) -> str:
    """What the plan assumed of demand past the forecast: the whole-term tree, or nothing."""
    t = plan.term or {}
    if t.get("judge") == "term":
        return (f"each was judged on {t.get('tail_months', 0):.0f} months of demand past it ({t.get('source')}: "
                f"{t.get('branches')} branches, the term line above).")
    return "the plan assumes demand past the forecast keeps them busy."


def _commit_now_lines(plan: Plan) -> list[str]:
    """Each savings plan to commit now, as the Summary's row says it: the whole commitment (USD/h x the term's
    hours), its NPV, the share of its dollars drawn, its break-even (the inverse of what each drawn dollar pays for
    on demand) and the verdict."""
    sp = plan.spend
    out = []
    for r in (sp[(sp["usd_per_hour"] > 0) & sp["firm"].astype(bool)].itertuples() if sp is not None and len(sp) else []):
        p = plan.purchases.iloc[int(r.row)]
        total = float(p.get("commitment_usd", r.usd_per_hour * r.hours_active))
        npv = float(p.get("npv_usd", float("nan"))) if "npv_usd" in p else float("nan")
        be, word = spend_verdict(getattr(r, "covered_at_rates_usd", 0.0), getattr(r, "covered_at_on_demand_usd", 0.0),
                                 r.utilisation)
        out.append(f"    commit now {r.option} ({r.plan_family}) ${r.usd_per_hour:,.2f}/h: whole commitment {_usd(total)}"
                   + (f" (NPV {_usd(npv)})" if npv == npv else "") + f", {100 * r.utilisation:.1f} % of its dollars "
                   "drawn, break-even " + (f"{100 * be:.1f} %" if be == be else "n/a") + f": {word}")
    return out


def _memo_lines(plan: Plan) -> list[str]:
    """The purchase memo's figures (when computed): cash, savings against the next-best plan, downside."""
    m = plan.memo
    if m is None:
        return []
    cov = float(m.coverage.get("coverage", 0.0))
    cov_text = f"coverage {100 * cov:.1f} % of commitment-eligible GPU-hours" + (
        f" (spot not counted; {100 * float(m.coverage['coverage_with_spot']):.1f} % with spot)"
        if m.coverage.get("coverage_with_spot") == m.coverage.get("coverage_with_spot") and "coverage_with_spot"
        in m.coverage else "") if cov == cov else "no commitment-eligible GPU-hours on demand or reserved (coverage n/a)"
    out = [f"  memo: cash out in the next 12 months {_usd(m.cash_next_12_months_usd)} (commitments already owned "
           f"included); {cov_text}"]
    if m.savings:
        nb = float(m.savings["next_best_cost_usd"])
        short = float(m.savings.get("next_best_shortfall_gpu_hours", 0.0))
        out.append(f"    buying nothing new ({rented.phrase(plan.inputs.pools)}, re-solved) costs {_usd(nb)}: this plan saves "
                   f"{_usd(nb - plan.cost['total'])}" + (f", and buying nothing leaves {short:,.0f} GPU-hours unmet "
                                                          "(spares are held on commitments only)" if short > 1e-6 else ""))
    d = m.downside
    at = float(d["full_term_cost_usd"].iat[0]) if d is not None and len(d) else float("nan")
    for r in (d[d["shock"] > 0].itertuples() if d is not None and len(d) else []):
        out.append(f"    demand {100 * r.shock:.0f} % lower: {_usd(r.full_term_cost_usd)} over the whole terms "
                   f"(at the forecast {_usd(at)}), "
                   f"stranded in the horizon (held, not used) {_usd(r.stranded_usd)}"
                   + (f", reserved utilisation {100 * r.reserved_utilisation:.0f} %" if r.reserved_utilisation
                      == r.reserved_utilisation else ""))
    now = m.tranches[m.tranches["firm"].astype(bool)] if len(m.tranches) else m.tranches
    for r in now.itertuples():  # when should we commit: each purchase to sign now against its own use
        vs = getattr(r, "break_even_vs_nothing", float("nan"))
        out.append(f"    sign now {r.gpus:g} {r.gpu_type}/{r.region} {r.option}: used {100 * r.avg_utilisation:.0f} % "
                   f"(its own, marginal use), break-even utilisation {100 * r.break_even_utilisation:.0f} % against "
                   "on-demand" + (f", {100 * vs:.0f} % if all its work could run on spot instead" if vs == vs and vs != float("inf")
                                  else "")
                   + (f", {100 * r.break_even_vs_queued:.0f} % if its work could wait for queued capacity (flex-start)"
                      if getattr(r, "break_even_vs_queued", float("nan")) == getattr(r, "break_even_vs_queued", 0)
                      else "") + ": " + verdict(r.pays, r.avg_utilisation, vs))
    term = getattr(m, "term_downside", None)
    if term is not None and len(term):  # the downside over each purchase's whole term (flat past the horizon)
        worst = term[term["shock"] == term["shock"].max()]
        for r in worst[worst["row"].isin(now["row"]) if len(now) else worst.iloc[0:0]].itertuples():
            out.append(f"    over its whole term, demand {100 * r.shock:.0f} % lower: {r.gpus:g} {r.gpu_type}/{r.region} "
                       f"{r.option} leaves {_usd(r.unused_usd)} of its {_usd(r.full_term_usd)} unused, saves "
                       f"{_usd(r.saving_vs_nothing_usd)} against buying nothing (on demand); it stops paying below "
                       + (f"{100 * r.break_even_demand_level:.0f} % of the plan's demand" if r.break_even_demand_level
                          == r.break_even_demand_level else "no demand level up to 4x") + " (Term downside sheet)")
    paying = m.tranches[~m.tranches["pays"].astype(bool)] if len(m.tranches) else m.tranches
    for r in paying.itertuples():
        out.append(f"    WARNING: the tranche {r.gpus:g} {r.gpu_type}/{r.region} {r.option} bought "
                   f"{pd.Timestamp(r.purchase_date):%Y-%m-%d} is used {100 * r.avg_utilisation:.0f} % on average, "
                   f"below its break-even {100 * r.break_even_utilisation:.0f} % (Tranches sheet)")
    return out
