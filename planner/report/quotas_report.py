"""quotas.json and quotas.xlsx: the quota policy per team and flavor, the replay, and the gaming table."""

from __future__ import annotations

import json
from pathlib import Path

from openpyxl import Workbook
from openpyxl.styles import Font

from ..atomic import write_workbook_and_json
from ..quotas.run import QuotaResult
from .json_export import jsonable

POLICY_TEXT = ("nominal = p{pct:g} of each team's hourly demand on the flavor (at least its guaranteed floor), "
               "scaled to fit by weighted max-min; spare capacity up to each team's peak, then by weight; "
               "borrowing up to the team's own peak and the rest of the flavor; lending = nominal less the "
               "guaranteed floor")


def quotas_dict(r: QuotaResult) -> dict:
    """The quotas.json document."""
    d = r.data
    teams = []
    for i, t in enumerate(d.teams):
        q = r.quotas[r.quotas["team"] == t]
        rep = r.replay[r.replay["team"] == t].set_index("policy")
        teams.append({
            "team": t, "classes": d.classes_of[t], "fair_share_weight": float(d.weights[i]),
            "guaranteed_gpus": float(d.floors[i]), "preemptible_work": bool(d.preemptible_team[t]),
            "latency_critical": bool(d.latency_team[t]),
            "nominal_gpus": int(q["nominal_gpus"].sum()), "borrowing_limit_gpus": int(q["borrowing_limit_gpus"].sum()),
            "lending_limit_gpus": int(q["lending_limit_gpus"].sum()),
            "flavors": q.drop(columns=["team"]).to_dict("records"),
            "replay": {p: rep.loc[p].drop(labels=["team"], errors="ignore").to_dict() for p in rep.index},
        })
    return jsonable({
        "teams": teams,
        "flavors": d.flavors.to_dict("records"),
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
        "Quotas": r.quotas[["team", "flavor", "capacity_gpus", "nominal_gpus", "borrowing_limit_gpus",
                            "lending_limit_gpus", "guaranteed_floor_gpus", "fair_share_weight", "preemptible",
                            "demand_percentile_gpus", "demand_mean_gpus", "demand_peak_gpus"]],
        "Replay": r.replay[["policy", "team", "demanded_gpu_hours", "admitted_gpu_hours", "satisfaction",
                            "waiting_gpu_hours", "hours_waiting", "hours_below_guarantee", "preempted_gpu_hours",
                            "times_preempted", "held_gpu_hours"]],
        "Pool": r.pool,
        "Gaming": r.gaming,
    }
    for name, df in sheets.items():
        ws = wb.create_sheet(name)
        ws.append([c.replace("_", " ") for c in df.columns])
        for cell in ws[1]:
            cell.font = Font(bold=True)
        for row in df.itertuples(index=False):
            ws.append([jsonable(v) if not isinstance(v, str) else v for v in row])
        for i, c in enumerate(df.columns, start=1):
            ws.column_dimensions[ws.cell(1, i).column_letter].width = max(12, min(60, len(c) + 4))
            fmt = "0.0%" if c in ("satisfaction", "utilisation", "jain_index") else "#,##0"
            if df[c].dtype.kind in "fi" and c not in ("fair_share_weight",):
                for row in ws.iter_rows(min_row=2, min_col=i, max_col=i):
                    row[0].number_format = fmt if c != "jain_index" else "0.000"
        ws.freeze_panes = "A2"
    write_workbook_and_json(wb, paths["xlsx"], paths["json"], json.dumps(quotas_dict(r), indent=2, allow_nan=False) + "\n")
    return paths


def quotas_text(r: QuotaResult) -> str:
    """Terminal summary: quotas per team, the replay per policy, the gaming table."""
    d = r.data
    lines = [f"{len(d.teams)} teams, {int(d.flavors['capacity_gpus'].sum()):,} GPUs in {len(d.flavors)} flavor(s), "
             f"{d.hours.sum():,.0f} hours; policy: {POLICY_TEXT.format(pct=r.percentile)}", "",
             f"  {'team':<16}{'weight':>8}{'nominal':>9}{'borrow':>8}{'lend':>7}"
             f"{'quota: got':>12}{'waits h':>9}{'preempted':>11}{'fcfs: got':>11}{'equal: got':>12}"]
    rep = r.replay.set_index(["policy", "team"])
    for i, t in enumerate(d.teams):
        q = r.quotas[r.quotas["team"] == t]
        lines.append(f"  {t[:15]:<16}{d.weights[i]:>8g}{int(q['nominal_gpus'].sum()):>9,}"
                     f"{int(q['borrowing_limit_gpus'].sum()):>8,}{int(q['lending_limit_gpus'].sum()):>7,}"
                     f"{rep.loc[('quota', t), 'satisfaction']:>12.1%}{rep.loc[('quota', t), 'hours_waiting']:>9,.0f}"
                     f"{int(rep.loc[('quota', t), 'times_preempted']):>11,}"
                     f"{rep.loc[('fcfs', t), 'satisfaction']:>11.1%}{rep.loc[('equal_split', t), 'satisfaction']:>12.1%}")
    lines += ["", f"  {'policy':<16}{'utilisation':>12}{'Jain':>8}{'waiting GPU-h':>15}{'h below guarantee':>19}"]
    for p in r.pool.itertuples():
        lines.append(f"  {p.policy:<16}{p.utilisation:>12.1%}{p.jain_index:>8.3f}{p.waiting_gpu_hours:>15,.0f}"
                     f"{p.hours_below_guarantee:>19,.0f}")
    lines += ["", f"  gaming by '{r.gamer}' (GPU-hours over the horizon):",
              f"  {'behaviour':<10}{'policy':<16}{'its gain':>10}{'others lose':>13}{'held idle':>11}"]
    for g in r.gaming.itertuples():
        lines.append(f"  {g.behaviour:<10}{g.policy:<16}{g.gamer_gain_gpu_hours:>10,.0f}{g.others_loss_gpu_hours:>13,.0f}"
                     f"{g.gamer_idle_held_gpu_hours:>11,.0f}")
    return "\n".join(lines)
