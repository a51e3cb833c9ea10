"""Evaluate a plan's reserved purchases against the demand that really came.

The purchases are fixed (they were signed); on-demand and spot are re-optimised
for the actual demand (the cheapest recourse). Regret is the realised objective
minus that of the plan made with hindsight (purchases free, same actual demand).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.errors import InputError, Problem
from planner.inputs.arrays import PlanInputs
from planner.results.plan import Plan
from planner.inputs import supply


@dataclass
class Evaluation:
    """A plan's purchases run on the demand that came: the realised plan, the hindsight plan and the regret."""
    realised: Plan
    hindsight: Plan
    purchases: np.ndarray  # instances per row of inputs.commitments
    plan_file: str
    branches: list = None  # a scenario tree's branches the purchases followed: (date, branch) pairs

    @property
    def regret_usd(self) -> float:
        """Realised objective minus hindsight's, 0 when the difference is within the solvers' gap."""
        value = self.realised.objective - self.hindsight.objective
        gap = max(self.realised.inputs.config.solver.mip_gap, self.hindsight.solve.mip_gap or 0.0)
        return 0.0 if value < 0 and -value <= gap * abs(self.hindsight.objective) + 1e-6 else value

    def to_dict(self) -> dict:
        """evaluation.json as a dict."""
        r = self.realised
        return {
            "status": r.status.value,
            "plan": self.plan_file,
            "cost_usd": dict(r.cost),
            "objective_usd": r.objective,
            "shortfall_gpu_hours": r.shortfall_gpu_hours,
            "reserved_utilisation": r.reserved_utilisation if np.isfinite(r.reserved_utilisation) else None,
            "regret_usd": self.regret_usd,
            "hindsight": {"cost_usd": dict(self.hindsight.cost), "objective_usd": self.hindsight.objective,
                          "reserved_purchases": _purchases(self.hindsight)},
            "reserved_purchases": _purchases(r),
            "branches_followed": [{"date": d, "branch": b} for d, b in (self.branches or [])],
            "horizon": {"start": r.inputs.periods[0].isoformat(), "periods": r.inputs.T,
                        "hours": r.inputs.horizon_hours},
        }


def _purchases(plan: Plan) -> list[dict]:
    return [{"gpu_type": p.gpu_type, "region": p.region, "option": p.option, "instances": int(p.instances),
             "gpus": float(p.gpus), "purchase_date": pd.Timestamp(p.purchase_date).date().isoformat()}
            for p in plan.purchases.itertuples()]


def follow_tree(tree: dict | None, forecast: PlanInputs | None, actual: PlanInputs,
                scenario: str | None = None) -> set:
    """The (purchase date, branch) pairs of a plan's scenario tree that the demand that came follows.

    ``scenario``: follow that scenario's branch at every date. Otherwise at each date where the plan branches,
    the branch whose scenarios' forecast (``forecast``: the model's own demand) is nearest to the actual demand
    over the periods before that date (mean absolute difference over the periods both have), among the
    branches of the scenarios chosen so far: what a planner re-deciding at that date would know."""
    if not tree:
        if scenario is not None and actual.price_paths is None:  # with price paths it names the prices that came
            raise InputError(Problem("--scenario", "the plan has no scenario tree: every purchase is made whatever "
                                     "happens", value=scenario, hint="leave out --scenario for this plan"))
        return set()
    dates = sorted(tree.get("purchase_dates", []), key=lambda d: d["date"])
    chosen = set(s for d in dates[:1] for b in d["branches"] for s in b["scenarios"])
    if scenario is not None:
        known = {s for d in dates for b in d["branches"] for s in b["scenarios"]}
        if scenario not in known:
            raise InputError(Problem("--scenario", "not a scenario of the plan's tree", value=scenario,
                                     expected="one of " + ", ".join(sorted(known))))
        chosen = {scenario}
    out = set()
    for d in dates:
        options = [b for b in d["branches"] if set(b["scenarios"]) & chosen]
        if len(options) > 1 and scenario is None:
            options = [min(options, key=lambda b: _distance(forecast, actual, b["scenarios"], d["date"]))]
        if not options:
            continue
        pick = options[0] if scenario is None else next(b for b in options if scenario in b["scenarios"])
        out.add((d["date"], pick["branch"]))
        chosen &= set(pick["scenarios"])
    return out


def _distance(forecast: PlanInputs | None, actual: PlanInputs, scenarios: list, date: str) -> float:
    """Mean absolute difference between the scenarios' forecast and the actual demand before ``date``."""
    if forecast is None:
        return 0.0
    s = [forecast.scenarios.index(x) for x in scenarios if x in forecast.scenarios]
    if not s:
        return np.inf
    before = forecast.periods[forecast.periods < pd.Timestamp(date)]
    common = before.intersection(actual.periods)
    if not len(common):
        return 0.0
    f = forecast.demand[s[0]][:, forecast.periods.get_indexer(common)]
    a = actual.demand[0][:, actual.periods.get_indexer(common)]
    return float(np.abs(f - a).mean())


def read_plan_purchases(path: str | Path, inp: PlanInputs, forecast: PlanInputs | None = None,
                        scenario: str | None = None, followed_out: list | None = None) -> np.ndarray:
    """Instances per row of ``inp.commitments`` from a plan.json (or a list of purchases).

    A plan over a scenario tree buys some commitments only in one branch: the branch the actual demand follows
    (:func:`follow_tree`, with the model's own forecast ``forecast``, or ``scenario``'s) is the one evaluated."""
    path = Path(path)
    file = str(path)
    if not path.is_file():
        raise InputError(Problem(file, "plan file not found", expected="a plan.json written by `planner plan`"))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(Problem(file, f"not valid JSON ({exc})")) from None
    rows = data.get("reserved_purchases") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise InputError(Problem(file, "no 'reserved_purchases' list", expected="a plan.json written by `planner plan`"))
    index = {}  # (gpu_type, region, option) -> its first purchase row; with the date -> that date's row;
    # a capacity block by its window's start (two offers of one pool differ only there)
    res = inp.commitments
    treed = "branch" in res  # inputs split by the same scenario tree: every row read into its own branch's row
    for i, r in enumerate(res.itertuples()):
        if treed and supply.is_(getattr(r, "kind", None), adds_capacity=True):
            index[(r.gpu_type, r.region, r.option, pd.Timestamp(r.purchase_date).date().isoformat(), r.branch)] = i
            if supply.is_(getattr(r, "kind", None), dated_by="window"):
                index[(r.gpu_type, r.region, r.option, "block", pd.Timestamp(r.block_start).isoformat(), r.branch)] = i
            continue
        if supply.is_(getattr(r, "kind", None), dated_by="resale"):  # a resale: by what it sells and when
            par = res.iloc[int(r.parent)]
            index[("exit", r.gpu_type, r.region, r.option, pd.Timestamp(par["purchase_date"]).date().isoformat(),
                   pd.Timestamp(r.purchase_date).date().isoformat())] = i
            continue
        index.setdefault((r.gpu_type, r.region, r.option), i)
        if hasattr(r, "purchase_date"):
            index[(r.gpu_type, r.region, r.option, pd.Timestamp(r.purchase_date).date().isoformat())] = i
        if supply.is_(getattr(r, "kind", None), dated_by="window"):
            index[(r.gpu_type, r.region, r.option, "block", pd.Timestamp(r.block_start).isoformat())] = i
        if supply.is_(getattr(r, "kind", None), unit="usd_per_hour"):  # a savings plan: by its family and date, in USD per hour
            index[("spend", r.option, str(r.plan_family), pd.Timestamp(r.purchase_date).date().isoformat())] = i
    n = np.zeros(len(inp.commitments))
    problems = []
    followed = follow_tree(data.get("tree"), forecast, inp, scenario) if not treed else set()
    if followed_out is not None:  # the branches followed, by date (what evaluation.json reports)
        followed_out.extend(sorted(followed))
    for i, row in enumerate(rows):
        branch = row.get("branch", "all") if isinstance(row, dict) else "all"
        if not treed and branch not in (None, "all") and (str(row.get("purchase_date"))[:10], branch) not in followed:
            continue  # bought only in a branch the demand that came did not follow
        try:
            if row.get("kind") and supply.is_(row.get("kind"), dated_by="resale"):
                of = row.get("resale_of") or {}
                key = ("exit", row["gpu_type"], row["region"], row["option"], str(of.get("purchase_date"))[:10],
                       str(row["purchase_date"])[:10])
                count = float(row["instances"])
                if key in index:
                    n[index[key]] += count
                elif count > 0 and pd.Timestamp(key[5]) <= inp.periods[-1]:
                    problems.append(Problem(file, f"reserved_purchases[{i}] resells a commitment the inputs cannot",
                                            value="/".join(key[1:]), hint="evaluate with the price sheet, horizon "
                                            "and [commitments] the plan used"))
                continue
            if row.get("kind") and supply.is_(row.get("kind"), unit="usd_per_hour"):
                key = ("spend", row["option"], str(row.get("plan_family")), str(row["purchase_date"])[:10])
                usd = float(row.get("usd_per_hour") or 0.0)
                if not math.isfinite(usd) or usd < 0:
                    raise ValueError("usd_per_hour")
                if key in index:
                    n[index[key]] += usd
                elif usd > 0 and pd.Timestamp(key[3]) <= inp.periods[-1]:
                    problems.append(Problem(file, f"reserved_purchases[{i}] commits to a savings plan the price sheet "
                                            "does not have on that date", value="/".join(key[1:]),
                                            hint="evaluate with the price sheet, horizon and [commitments] the plan "
                                                 "used"))
                continue
            key = (row["gpu_type"], row["region"], row["option"])
            if row.get("block_start"):
                key = key + ("block", pd.Timestamp(row["block_start"]).isoformat())
            elif row.get("purchase_date") is not None:
                key = key + (str(row["purchase_date"])[:10],)
                if pd.Timestamp(key[3]) > inp.periods[-1]:  # planned for after the evaluated horizon: not made yet
                    continue
            if treed:
                key = key + (branch or "all",)
            if not all(isinstance(k, str) for k in key):
                raise TypeError("names must be text")
            count = float(row["instances"])
        except (KeyError, TypeError, ValueError, OverflowError):
            problems.append(Problem(file, f"reserved_purchases[{i}] lacks gpu_type, region, option or instances",
                                    value=str(row)))
            continue
        if not math.isfinite(count) or count > 1e7:
            problems.append(Problem(file, f"reserved_purchases[{i}] instances out of range", value=row["instances"],
                                    expected="a whole number of instances up to 10,000,000"))
            continue
        if count < 0 or not count.is_integer():
            problems.append(Problem(file, f"reserved_purchases[{i}] instances must be a whole number >= 0",
                                    value=count))
        elif key not in index:
            if count > 0:
                problems.append(Problem(file, f"reserved_purchases[{i}] buys an option the price sheet does not have"
                                        + (" on that date" if len(key) == 4 else ""),
                                        value="/".join(key), expected="a gpu_type, region and reserved option "
                                        "of the price sheet" + (", at a purchase date of the inputs' horizon"
                                                                if len(key) == 4 else ""),
                                        hint="evaluate with the price sheet, horizon and [commitments] the plan used"))
        else:
            n[index[key]] += count
    if problems:
        raise InputError(problems)
    return n


def evaluate(inp: PlanInputs, purchases: np.ndarray, make_plan, plan_file: str = "",
             hindsight: Plan | None = None) -> Evaluation:
    """Fix ``purchases`` on the actual-demand inputs ``inp``; compare with the hindsight plan (solved if not given,
    and only when the purchases can run: a refusal does not wait for the hindsight MILP; its status is then the
    realised plan's)."""
    realised = make_plan(inp, fixed_reserved=purchases, risk=False)
    if hindsight is None:
        hindsight = make_plan(inp, risk=False) if realised.status.has_plan else realised
    return Evaluation(realised=realised, hindsight=hindsight, purchases=purchases, plan_file=plan_file)


def write_evaluation(ev: Evaluation, out_dir: str | Path) -> dict[str, Path]:
    """evaluation.xlsx (the realised plan's workbook) and evaluation.json, each whole or not at all."""
    from planner.core.atomic import atomic_path
    from planner.report import write_workbook

    out_dir = Path(out_dir)
    paths = {"xlsx": out_dir / "evaluation.xlsx", "json": out_dir / "evaluation.json"}
    with atomic_path(paths["xlsx"]) as tmp:
        write_workbook(ev.realised, tmp)
    with atomic_path(paths["json"]) as tmp:
        tmp.write_text(json.dumps(ev.to_dict(), indent=2, default=float) + "\n", encoding="utf-8")
    return paths
