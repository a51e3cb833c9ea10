"""quotas.json and quotas.xlsx: the quota policy per team and flavor, the replay, and the gaming table."""

from __future__ import annotations

import json
from pathlib import Path

from openpyxl import Workbook

from planner.core.atomic import write_workbook_and_json
from planner.quotas.run import QuotaResult
from planner.report.json_export import jsonable
from planner.report.sheet_openpyxl import _Sheet

POLICY_TEXT = ("nominal = p{pct:g} of each team's hourly demand on the flavor (at least its guaranteed floor), "
               "scaled to fit by weighted max-min; spare capacity up to each team's peak, then by weight; "
               "borrowing up to the team's own peak and the rest of the flavor; lending = nominal less the "
               "guaranteed floor")


LIMITS = ["nominal_gpus", "borrowing_limit_gpus", "lending_limit_gpus"]
QUOTA_COLUMNS = ["team", "flavor", "gpu_type", "capacity_gpus", "nominal_gpus", "borrowing_limit_gpus",
                 "lending_limit_gpus", "guaranteed_floor_gpus", "fair_share_weight", "preemptible",
                 "demand_percentile_gpus", "demand_mean_gpus", "demand_peak_gpus"]


def quotas_dict(r: QuotaResult) -> dict:
    """The quotas.json document."""
    d = r.data
    several = d.flavors["gpu_type"].nunique() > 1
    teams = []
    for i, t in enumerate(d.teams):
        q = r.quotas[r.quotas["team"] == t]
        rep = r.replay[r.replay["team"] == t].set_index("policy")
        by_type = q.groupby("gpu_type", sort=False)[LIMITS].sum().astype(int)
        teams.append({
            "team": t, "classes": d.classes_of[t], "fair_share_weight": float(d.weights[i]),
            "guaranteed_gpus": float(d.floors[i]), "preemptible_work": bool(d.preemptible_team[t]),
            "latency_critical": bool(d.latency_team[t]),
            # totals over flavors only when they are GPUs of one type; else per type (by_gpu_type)
            **{c: None if several else int(q[c].sum()) for c in LIMITS},
            "by_gpu_type": {g: row.to_dict() for g, row in by_type.iterrows()},
            "flavors": q.drop(columns=["team"]).to_dict("records"),
            "replay": {p: rep.loc[p].drop(labels=["team"], errors="ignore").to_dict() for p in rep.index},
        })
    return jsonable({
        "teams": teams,
        "flavors": d.flavors.to_dict("records"),
        "standby": d.standby.to_dict("records"),  # reserved GPUs held as spares: no team's quota
        "policy": {"percentile": r.percentile, "rule": POLICY_TEXT.format(pct=r.percentile)},
        "pool": r.pool.to_dict("records"),
        "gamer": r.gamer,
        "gaming": r.gaming.to_dict("records"),
        "hours": float(d.hours.sum()),
    })


def write_quotas(r: QuotaResult, out_dir: Path) -> dict[str, Path]:
    """Write quotas.json and quotas.xlsx (sheets Quotas, Replay, Pool, Gaming), each atomically."""
    out_dir = Path(out_dir)
    paths = {"json": out_dir / "quotas.json", "xlsx": out_dir / "quotas.xlsx"}
    wb = Workbook()
    wb.remove(wb.active)
    sheets = {
        "Quotas": r.quotas.reindex(columns=QUOTA_COLUMNS),
        "Replay": r.replay[["policy", "team", "demanded_gpu_hours", "admitted_gpu_hours", "satisfaction",
                            "waiting_gpu_hours", "hours_waiting", "hours_below_guarantee", "preempted_gpu_hours",
                            "times_preempted", "held_gpu_hours"]],
        "Pool": r.pool,
        "Gaming": r.gaming,
    }
    for name, df in sheets.items():
        heads = [("team-hours below guarantee" if name == "Pool" and c == "hours_below_guarantee" else  # (summed
                  c.replace("_", " ")) for c in df.columns]  # over the teams on the Pool sheet: a team-hour each)
        formats = {h: ("0.000" if c == "jain_index" else "0.0%" if c in ("satisfaction", "utilisation") else "#,##0")
                   for h, c in zip(heads, df.columns) if df[c].dtype.kind in "fi" and c != "fair_share_weight"}
        s = _Sheet(wb.create_sheet(name), heads, formats)  # team names are text, never formulas
        s.header({h: max(12, min(60, len(h) + 4)) for h in heads})
        for row in df.itertuples(index=False):
            s.append([v if isinstance(v, str) else jsonable(v) for v in row])
    write_workbook_and_json(wb, paths["xlsx"], paths["json"], json.dumps(quotas_dict(r), indent=2, allow_nan=False) + "\n")
    return paths


def quotas_text(r: QuotaResult) -> str:
    """Terminal summary: quotas per team, the replay per policy, the gaming table."""
    d = r.data
    caps = d.flavors.groupby("gpu_type", sort=False)["capacity_gpus"].sum()
    several = len(caps) > 1
    fleet = " + ".join(f"{int(v):,} {g}" for g, v in caps.items()) if several else f"{int(caps.sum()):,}"
    lines = [f"{len(d.teams)} teams, {fleet} GPUs in {len(d.flavors)} flavor(s), "
             f"{d.hours.sum():,.0f} hours; policy: {POLICY_TEXT.format(pct=r.percentile)}", "",
             f"  {'team':<16}" + (f"{'GPU type':<12}" if several else "") + f"{'weight':>8}{'nominal':>9}"
             f"{'borrow':>8}{'lend':>7}{'quota: got':>12}{'waits h':>9}{'preempted':>11}{'fcfs: got':>11}"
             f"{'equal: got':>12}"]
    for sb in d.standby.itertuples():
        lines.insert(1, f"  standby: {sb.gpus:,} reserved {sb.gpu_type}/{sb.region} GPUs held as spares of "
                        f"{', '.join(sb.classes)} (not in any flavor: no team's quota)")
    rep = r.replay.set_index(["policy", "team"])
    for i, t in enumerate(d.teams):
        q = r.quotas[r.quotas["team"] == t]
        per = q.groupby("gpu_type", sort=False)[LIMITS].sum() if several else q[LIMITS].sum().to_frame().T
        for j, (g, lim) in enumerate(per.iterrows()):  # GPUs of different types are never added up
            head = f"  {(t[:15] if j == 0 else ''):<16}" + (f"{str(g)[:11]:<12}" if several else "")
            row = f"{d.weights[i]:>8g}" if j == 0 else f"{'':>8}"
            row += (f"{int(lim['nominal_gpus']):>9,}{int(lim['borrowing_limit_gpus']):>8,}"
                    f"{int(lim['lending_limit_gpus']):>7,}")
            if j == 0:
                row += (f"{rep.loc[('quota', t), 'satisfaction']:>12.1%}{rep.loc[('quota', t), 'hours_waiting']:>9,.0f}"
                        f"{int(rep.loc[('quota', t), 'times_preempted']):>11,}"
                        f"{rep.loc[('fcfs', t), 'satisfaction']:>11.1%}"
                        f"{rep.loc[('equal_split', t), 'satisfaction']:>12.1%}")
            lines.append(head + row)
    lines += ["", f"  {'policy':<16}{'utilisation':>12}{'Jain':>8}{'waiting GPU-h':>15}{'team-h below guarantee':>24}"]
    for p in r.pool.itertuples():  # summed over the teams: a team-hour per team below its guarantee in an hour
        lines.append(f"  {p.policy:<16}{p.utilisation:>12.1%}{p.jain_index:>8.3f}{p.waiting_gpu_hours:>15,.0f}"
                     f"{p.hours_below_guarantee:>24,.0f}")
    lines += ["", f"  gaming by '{r.gamer}' (GPU-hours over the horizon):",
              f"  {'behaviour':<10}{'policy':<16}{'its gain':>10}{'others lose':>13}{'held idle':>11}"]
    for g in r.gaming.itertuples():
        lines.append(f"  {g.behaviour:<10}{g.policy:<16}{g.gamer_gain_gpu_hours:>10,.0f}{g.others_loss_gpu_hours:>13,.0f}"
                     f"{g.gamer_idle_held_gpu_hours:>11,.0f}")
    return "\n".join(lines)
