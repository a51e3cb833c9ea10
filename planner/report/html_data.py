"""The numbers behind ``planner report --html``, read from a plan.json (and the fleet.csv beside it).

Nothing here draws: :mod:`planner.report.html_figures` turns these tables into figures and
:mod:`planner.report.html` lays them out. Every series is kept small on purpose (a few hundred
points per pool, daily points for long horizons), so the page stays a few hundred kilobytes of data
beside plotly.js.

What is read:

- plan.json ``status``, ``horizon``, ``cost_usd``, ``reserved_purchases``, ``cash_schedule`` (required), and
  ``inventory``, ``spot_economics`` / ``tranches`` / ``monthly_usage`` (prices and monthly use, when present);
- fleet.csv (``planner plan`` publishes it with plan.json): per period and pool, the GPUs reserved owned and
  used, on-demand and spot. Without it (or when it is not this plan's) the load-duration curves fall back to
  monthly means from ``monthly_usage`` and the fleet mix to months; the page says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.errors import InputError, Problem
from planner.inputs import supply
from planner.memo.tranches import spend_verdict, verdict

REQUIRED_KEYS = ("status", "horizon", "cost_usd", "reserved_purchases", "cash_schedule")
EXPECTED = "a plan.json written by `planner plan` (a JSON object with " + ", ".join(REQUIRED_KEYS) + ")"
CURVE_POINTS = 400      # samples of each load-duration curve (it is monotone: nothing is lost that matters)
DAILY_AFTER_DAYS = 21   # the fleet mix is averaged per day past three weeks of periods
OTHER_RENTED = tuple(k for k in supply.RENTED if k not in supply.RENTED[:2])  # rented beyond on-demand, spot
GPU_KINDS = ("instance", "window")  # purchase kinds that hold GPUs (a savings plan holds dollars)


def load_plan(path: str | Path) -> dict:
    """plan.json as a dict; InputError (exit 2) naming the file and what was expected when it is not one."""
    path = Path(path)
    if not path.exists():
        raise InputError(Problem(str(path), "no such file", expected=EXPECTED))
    if not path.is_file():
        raise InputError(Problem(str(path), "is not a file", expected=EXPECTED))
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InputError(Problem(str(path), "is not text (UTF-8)", expected=EXPECTED)) from None
    except json.JSONDecodeError as exc:
        raise InputError(Problem(str(path), f"is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
                                 expected=EXPECTED)) from None
    if not isinstance(doc, dict):
        raise InputError(Problem(str(path), f"holds a JSON {type(doc).__name__}, not an object", expected=EXPECTED))
    missing = [k for k in REQUIRED_KEYS if k not in doc]
    if missing:
        raise InputError(Problem(str(path), "is not a plan.json: missing key(s) " + ", ".join(missing),
                                 expected=EXPECTED))
    bad = [k for k, t in (("horizon", dict), ("cost_usd", dict), ("reserved_purchases", list),
                          ("cash_schedule", list)) if not isinstance(doc[k], t)]
    hz = doc["horizon"] if isinstance(doc["horizon"], dict) else {}
    if not bad and (not isinstance(hz.get("start"), str) or not _finite(hz.get("hours"))):
        bad.append("horizon (start, hours)")
    if bad:
        raise InputError(Problem(str(path), "is not a plan.json: unexpected value of " + ", ".join(bad),
                                 expected=EXPECTED))
    return doc


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x)


def read_fleet(plan_path: str | Path, plan: dict) -> tuple[pd.DataFrame | None, str | None]:
    """The fleet.csv beside ``plan_path`` expected over the plan's scenarios (one row per period and pool), and a
    note when it is missing or is not this plan's (then None). A fleet.csv that cannot be read is an InputError."""
    path = Path(plan_path).with_name("fleet.csv")
    if not path.is_file():
        return None, f"{path} not found: the curves use monthly means (plan.json monthly_usage)"
    from planner.results.fleet_file import expected_fleet, not_this_plans, read_fleet_file

    fleet = read_fleet_file(path)  # a damaged cell: exit 2 naming it
    foreign = not_this_plans(fleet, plan, str(path))
    if foreign:
        p = foreign[0]
        where = f"row {p.row}: " if p.row is not None else ""
        got = f", {p.value!r}" if p.value is not None else ""
        return None, (f"{path} does not match this plan.json ({where}{p.message}{got}; "
                      f"{len(foreign)}{'+' if len(foreign) == 20 else ''} such rows): the curves use monthly means "
                      "(plan.json monthly_usage)")
    g = expected_fleet(plan, fleet)
    cols = ["reserved_owned", "reserved_used", "on_demand", "spot", *(k for k in OTHER_RENTED if k in g)]
    g = g[["period", "gpu_type", "region", *cols, "hours"]]
    g["served"] = g["reserved_used"] + g["on_demand"] + g["spot"] + sum(g[k] for k in OTHER_RENTED if k in g)
    return g, None


# ---- the horizon ----------------------------------------------------------------------------------------------
def horizon(plan: dict) -> tuple[pd.Timestamp, pd.Timestamp, float]:
    """(start, end, hours) of the plan's horizon (end = start + hours: the periods are contiguous)."""
    start = pd.Timestamp(plan["horizon"]["start"])
    hours = float(plan["horizon"]["hours"])
    return start, start + pd.Timedelta(hours=hours), hours


# ---- GPUs owned, by vintage -----------------------------------------------------------------------------------
@dataclass
class Holding:
    """GPUs held from ``start`` to ``end`` in one pool, counted in the vintage (purchase date) ``vintage``."""

    vintage: str
    gpu_type: str
    region: str
    gpus: float
    start: pd.Timestamp
    end: pd.Timestamp
    usd_per_gpu_hour: float | None


def holdings(plan: dict) -> list[Holding]:
    """Every GPU commitment the plan holds: bought (``reserved_purchases`` with GPUs, capacity blocks included,
    resales taken off their purchase; a scenario tree's branch purchase at its probability: the expected fleet)
    and owned (``inventory``, vintage "owned <start>")."""
    out = []
    for r in plan.get("reserved_purchases") or []:
        kind = r.get("kind") or "instance"
        gpus = float(r.get("gpus") or 0.0)
        if gpus <= 0 or kind not in GPU_KINDS + ("exit",):
            continue
        start, end = r.get("active_from") or r.get("purchase_date"), r.get("end_date")
        if not start or not end:
            continue
        vintage = str(r.get("purchase_date"))[:10]
        gpus *= float(r.get("probability") if r.get("probability") is not None else 1.0)  # a branch's: expected
        if kind and supply.is_(kind, dated_by="resale"):  # a resale: its GPUs leave their purchase's vintage from the resale date
            vintage, gpus = str((r.get("resale_of") or {}).get("purchase_date") or vintage)[:10], -gpus
        out.append(Holding(vintage, r["gpu_type"], r["region"], gpus, pd.Timestamp(start), pd.Timestamp(end),
                           r.get("effective_usd_per_gpu_hour")))
    for r in plan.get("inventory") or []:
        gpus = float(r.get("gpus") or 0.0)
        if gpus <= 0 or not r.get("start") or not r.get("end"):
            continue
        out.append(Holding(f"owned {str(r['start'])[:10]}", r["gpu_type"], r["region"], gpus,
                           pd.Timestamp(r["start"]), pd.Timestamp(r["end"]), r.get("effective_usd_per_gpu_hour")))
    return out


def owned_at(hold: list[Holding], when: pd.DatetimeIndex) -> np.ndarray:
    """GPUs each holding counts at each instant of ``when``: shape (len(hold), len(when))."""
    t = when.to_numpy()
    return np.array([np.where((h.start.to_datetime64() <= t) & (t < h.end.to_datetime64()), h.gpus, 0.0)
                     for h in hold]).reshape(len(hold), len(when))


@dataclass
class Vintages:
    """GPUs owned per vintage at the breakpoints ``when`` (each value holds until the next breakpoint)."""

    when: list[str]
    vintages: list[str]
    gpus: list[list[float]]  # one list per vintage, aligned with ``when``
    pools: list[str]         # per vintage: its pools, for the hover text


def vintages(plan: dict) -> Vintages:
    """The ladder: GPUs owned per purchase date over the horizon, sampled at every date a holding starts or ends."""
    start, end, _ = horizon(plan)
    hold = holdings(plan)
    cuts = {start}
    for h in hold:
        cuts.update(t for t in (h.start, h.end) if start < t < end)
    when = pd.DatetimeIndex(sorted(cuts) + [end])
    per = owned_at(hold, when[:-1])
    names = sorted({h.vintage for h in hold}, key=lambda v: (not v.startswith("owned"), v.removeprefix("owned ")))
    gpus, pools = [], []
    for v in names:
        idx = [i for i, h in enumerate(hold) if h.vintage == v]
        series = per[idx].sum(axis=0)
        gpus.append([round(float(x), 3) for x in series] + [round(float(series[-1]), 3)])  # held to the end
        pools.append(", ".join(sorted({f"{hold[i].gpu_type} {hold[i].region}" for i in idx})))
    keep = [i for i, g in enumerate(gpus) if any(abs(x) > 1e-9 for x in g)]
    return Vintages([t.isoformat() for t in when], [names[i] for i in keep], [gpus[i] for i in keep],
                    [pools[i] for i in keep])


# ---- the load-duration curve of each pool ---------------------------------------------------------------------
@dataclass
class PoolCurve:
    """One pool's load-duration curve and the screening numbers beside it.

    ``hours``/``gpus``: the demand served in the pool (reserved used + on-demand + spot, GPUs of the pool's type)
    exceeded for that many hours of the horizon (sorted descending, sampled). ``reserved_gpus`` is the
    time-weighted mean of the GPUs owned there (bought + inventory: ``reserved_min``..``reserved_max`` when it
    changes). ``break_even_hours`` = reserved effective $/GPU-h x horizon hours / on-demand $/GPU-h: a reserved
    GPU used fewer hours than that costs more than renting those hours on demand. Where the pool uses spot,
    ``break_even_spot_hours`` is the same against the spot price.
    """

    gpu_type: str
    region: str
    hours: list[float]
    gpus: list[float]
    horizon_hours: float
    peak_gpus: float
    reserved_gpus: float
    reserved_min: float
    reserved_max: float
    reserved_usd_per_gpu_hour: float | None
    reserved_price_source: str | None  # "bought", "owned" or "offered, not bought"
    on_demand_usd_per_gpu_hour: float | None
    break_even_hours: float | None
    hours_at_or_above_reserved: float | None
    resolution: str  # "hourly" (per period) or "monthly"
    spot_usd_per_gpu_hour: float | None = None   # the pool's spot price where spot is used (plan.json monthly_usage)
    break_even_spot_hours: float | None = None   # the same break-even against spot (goodput not counted)

    @property
    def pool(self) -> str:
        """``gpu_type region``."""
        return f"{self.gpu_type} {self.region}"


def _on_demand_prices(plan: dict) -> dict:
    """The on-demand $/GPU-hour of each pool: spot_economics, else tranches, else monthly_usage's spend / hours."""
    od = {}
    for r in plan.get("monthly_usage") or []:
        hrs = float(r.get("on_demand_gpu_hours") or 0) - float(r.get("on_demand_covered_gpu_hours") or 0)
        if hrs > 1e-9 and r.get("on_demand_usd") is not None:
            k = (r["gpu_type"], r["region"])
            a = od.setdefault(k, [0.0, 0.0])
            a[0] += float(r["on_demand_usd"])
            a[1] += hrs
    out = {k: a[0] / a[1] for k, a in od.items()}
    for key in ("tranches", "spot_economics"):  # later wins: the price sheet's own number
        for r in plan.get(key) or []:
            if _finite(r.get("on_demand_usd_per_gpu_hour")) and r["on_demand_usd_per_gpu_hour"] > 0:
                out[(r["gpu_type"], r["region"])] = float(r["on_demand_usd_per_gpu_hour"])
    return out


def _spot_prices(plan: dict) -> dict:
    """The spot $/GPU-hour of each pool that uses spot: monthly_usage's spot spend / spot GPU-hours."""
    acc = {}
    for r in plan.get("monthly_usage") or []:
        hrs = float(r.get("spot_gpu_hours") or 0)
        if hrs > 1e-9 and r.get("spot_usd") is not None:
            a = acc.setdefault((r["gpu_type"], r["region"]), [0.0, 0.0])
            a[0] += float(r["spot_usd"])
            a[1] += hrs
    return {k: a[0] / a[1] for k, a in acc.items() if a[0] > 0}


def _reserved_price(plan: dict, hold: list[Holding], pool: tuple) -> tuple[float | None, str | None]:
    """The effective reserved $/GPU-hour of ``pool``: GPU-weighted over what is bought, else owned, else the
    cheapest reserved option offered there."""
    for source, rows in (("bought", [h for h in hold if not h.vintage.startswith("owned")]),
                         ("owned", [h for h in hold if h.vintage.startswith("owned")])):
        rows = [h for h in rows if (h.gpu_type, h.region) == pool and h.gpus > 0 and _finite(h.usd_per_gpu_hour)]
        if rows:
            w = sum(h.gpus for h in rows)
            return sum(h.gpus * h.usd_per_gpu_hour for h in rows) / w, source
    offered = [float(r["effective_usd_per_gpu_hour"]) for r in plan.get("reserved_purchases") or []
               if (r.get("gpu_type"), r.get("region")) == pool and supply.is_(r.get("kind") or None, dated_by="term", unit="instance")
               and _finite(r.get("effective_usd_per_gpu_hour"))]
    return (min(offered), "offered, not bought") if offered else (None, None)


def _monthly_served(plan: dict) -> pd.DataFrame:
    """monthly_usage as periods: one row per month and pool with ``hours`` of the horizon in it and mean GPUs."""
    mu = pd.DataFrame(plan.get("monthly_usage") or [])
    if not len(mu):
        return pd.DataFrame(columns=["period", "hours", "gpu_type", "region", "reserved_owned", "reserved_used",
                                     "on_demand", "spot", "served"])
    start, end, _ = horizon(plan)
    m0 = pd.to_datetime(mu["month"] + "-01")
    lo = m0.clip(lower=start)
    hi = (m0 + pd.offsets.MonthBegin(1)).clip(upper=end)
    hours = ((hi - lo) / pd.Timedelta(hours=1)).clip(lower=0).astype(float)
    safe = hours.where(hours > 0, np.nan)
    out = pd.DataFrame({"period": lo, "hours": hours, "gpu_type": mu["gpu_type"], "region": mu["region"]})
    for col, src in (("reserved_owned", "reserved_owned_gpu_hours"), ("reserved_used", "reserved_used_gpu_hours"),
                     ("on_demand", "on_demand_gpu_hours"), ("spot", "spot_gpu_hours"),
                     *((k, f"{k}_gpu_hours") for k in OTHER_RENTED if f"{k}_gpu_hours" in mu)):
        out[col] = (pd.to_numeric(mu.get(src, 0.0)) / safe).fillna(0.0)
    out["served"] = out["reserved_used"] + out["on_demand"] + out["spot"] + sum(out[k] for k in OTHER_RENTED if k in out)
    return out[out["hours"] > 0].reset_index(drop=True)


def duration_curve(served: np.ndarray, hours: np.ndarray, points: int = CURVE_POINTS) -> tuple[list, list]:
    """The load-duration curve of ``served`` (per period, lasting ``hours``): x = hours of the horizon at or
    above each level, sampled at ``points`` + 1 evenly spaced hours (the first is the peak, the last the least)."""
    order = np.argsort(-served, kind="stable")
    level, cum = served[order], np.cumsum(hours[order])
    total = float(cum[-1]) if len(cum) else 0.0
    xs = np.linspace(0.0, total, points + 1)
    idx = np.minimum(np.searchsorted(cum, xs, side="right"), len(level) - 1)
    ys = level[idx]
    ys[-1] = level[-1]
    return [round(float(x), 3) for x in xs], [round(float(y), 3) for y in ys]


def pool_curves(plan: dict, fleet: pd.DataFrame | None) -> list[PoolCurve]:
    """A :class:`PoolCurve` per pool that serves any demand or holds any reserved GPU, in pool order."""
    start, end, H = horizon(plan)
    table, resolution = (fleet, "hourly") if fleet is not None else (_monthly_served(plan), "monthly")
    hold = holdings(plan)
    od, sp = _on_demand_prices(plan), _spot_prices(plan)
    out = []
    for (gt, rg), df in table.groupby(["gpu_type", "region"], sort=True):
        pool_hold = [h for h in hold if (h.gpu_type, h.region) == (gt, rg)]
        served, hrs = df["served"].to_numpy(float), df["hours"].to_numpy(float)
        when = pd.DatetimeIndex(df["period"])
        owned = owned_at(pool_hold, when).sum(axis=0) if pool_hold else np.zeros(len(df))
        if not len(df) or (served.max() <= 1e-9 and owned.max() <= 1e-9):
            continue
        xs, ys = duration_curve(served, hrs)
        mean_owned = float(owned @ hrs / hrs.sum()) if hrs.sum() > 0 else 0.0
        price, source = _reserved_price(plan, hold, (gt, rg))
        odp = od.get((gt, rg))
        be = price * H / odp if price is not None and odp else None
        above = float(hrs[served >= mean_owned - 1e-9].sum()) if mean_owned > 0 else None
        spp = sp.get((gt, rg))
        be_spot = price * H / spp if price is not None and spp else None
        out.append(PoolCurve(gt, rg, xs, ys, H, round(float(served.max()), 3), round(mean_owned, 3),
                             round(float(owned.min()), 3), round(float(owned.max()), 3),
                             price, source, odp, be, above, resolution, spp, be_spot))
    return out


# ---- the fleet mix over time ----------------------------------------------------------------------------------
@dataclass
class FleetMix:
    """Mean GPUs per step (``step`` "hour", "day" or "month") over every pool: reserved used, on-demand, spot,
    and reserved owned (the line above reserved used: the idle reserved GPUs are the gap)."""

    step: str
    when: list[str]
    reserved_used: list[float]
    on_demand: list[float]
    spot: list[float]
    reserved_owned: list[float]
    gpu_hours: dict = field(default_factory=dict)  # totals over the horizon, per series
    others: dict = field(default_factory=dict)  # other rented kinds (flex-start): kind -> mean GPUs per step


def fleet_mix(plan: dict, fleet: pd.DataFrame | None) -> FleetMix:
    """The fleet mix: per period when the horizon is short, per day past :data:`DAILY_AFTER_DAYS` days, per month
    without fleet.csv."""
    cols = ["reserved_used", "on_demand", "spot", "reserved_owned"]
    if fleet is None:
        table, step = _monthly_served(plan), "month"
    else:
        table = fleet
        span = (table["period"].max() - table["period"].min()) / pd.Timedelta(days=1)
        step = "day" if span > DAILY_AFTER_DAYS else "hour"
    if not len(table):
        return FleetMix(step, [], [], [], [], [], {c: 0.0 for c in cols})
    t = table.copy()
    extra = [k for k in OTHER_RENTED if k in t]
    cols = cols + extra
    for c in cols:
        t[c] = t[c] * t["hours"]  # GPU-hours
    per = t.groupby("period", sort=True).agg({**{c: "sum" for c in cols}, "hours": "first"})
    totals = {c: float(per[c].sum()) for c in cols}
    if step == "day":
        per = per.groupby(per.index.floor("D")).sum()
    means = per[cols].div(per["hours"], axis=0)
    fmt = "%Y-%m-%d" if step != "hour" else "%Y-%m-%dT%H:%M"
    return FleetMix(step, [p.strftime(fmt) for p in means.index],
                    *[[round(float(v), 2) for v in means[c]] for c in cols[:4]], gpu_hours=totals,
                    others={k: [round(float(v), 2) for v in means[k]] for k in extra})


# ---- cash and purchases ---------------------------------------------------------------------------------------
CASH_LABELS = {"upfront_usd": "upfront (residual back below zero)", "reserved_recurring_usd": "reserved recurring (purchases)",
               "owned_recurring_usd": "owned recurring (inventory)", "owned_residual_usd": "owned residual back",
               "residual_usd": "residual back", "on_demand_usd": "on-demand", "spot_usd": "spot",
               "savings_plan_usd": "savings plans", "resale_usd": "resale proceeds",
               **{f"{k}_usd": k.replace("_", "-") for k in OTHER_RENTED}}


@dataclass
class Cash:
    """Cash per calendar month by kind (USD; money back is negative), and the monthly totals of cash_schedule."""

    months: list[str]
    kinds: dict  # column -> list of USD per month
    totals: list[float]


def cash(plan: dict) -> Cash:
    """cash_schedule as stacked series: every numeric column but ``total_usd`` is a kind."""
    rows = plan.get("cash_schedule") or []
    df = pd.DataFrame(rows)
    if not len(df) or "month" not in df:
        return Cash([], {}, [])
    kinds = {}
    for c in df.columns:
        if c in ("month", "total_usd") or not pd.api.types.is_numeric_dtype(df[c]):
            continue
        v = df[c].fillna(0.0).astype(float)
        if (v.abs() > 0.005).any():
            kinds[c] = [round(float(x), 2) for x in v]
    totals = [float(x) for x in (df["total_usd"] if "total_usd" in df else df[list(kinds)].sum(axis=1)).fillna(0.0)]
    return Cash([str(m) for m in df["month"]], kinds, totals)


PURCHASE_COLUMNS = (("purchase_date", "bought"), ("firm", "firm"), ("gpu_type", "GPU type"), ("region", "region"),
                    ("option", "option"), ("instances", "instances"), ("gpus", "GPUs"),
                    ("active_from", "active from"), ("end_date", "ends"),
                    ("effective_usd_per_gpu_hour", "effective $/GPU-h"), ("upfront_usd", "upfront $"),
                    ("monthly_recurring_usd", "monthly $"), ("horizon_cost_usd", "horizon cost $"),
                    ("commitment_usd", "commitment $"), ("branch", "if (branch)"), ("probability", "probability"))


def purchases(plan: dict) -> list[dict]:
    """The rows of ``reserved_purchases`` that buy something (instances, or a savings plan's USD per hour), by date."""
    rows = [r for r in plan.get("reserved_purchases") or []
            if (r.get("instances") or 0) > 0 or float(r.get("usd_per_hour") or 0) > 0]
    return sorted(rows, key=lambda r: (str(r.get("purchase_date")), str(r.get("gpu_type")), str(r.get("region")),
                                       str(r.get("option"))))


def memo(plan: dict) -> dict:
    """The memo's tables from plan.json: ``sign_now`` (each purchase to sign now: its whole commitment, NPV,
    upfront, monthly fee, term end, own use and break-evens, and savings plans to commit to), ``payments`` (the
    payment options' break-even rates), ``cash_by_year`` (calendar years), ``downside``, ``tranches``, ``npv_usd``
    and ``rate``."""
    def day(v):
        return str(v)[:10] if v else None

    bought = {(r.get("gpu_type"), r.get("region"), r.get("option"), day(r.get("purchase_date"))): r
              for r in plan.get("reserved_purchases") or []}
    sign = []
    tranches = []
    for t in plan.get("tranches") or []:
        p = bought.get((t.get("gpu_type"), t.get("region"), t.get("option"), day(t.get("purchase_date")))) or {}
        tranches.append({**t, "purchase_date": day(t.get("purchase_date")),
                         "firm_text": "now" if t.get("firm") else "planned"})
        if not t.get("firm"):
            continue
        sign.append({"what": f"{t.get('gpus', 0):,.0f} {t.get('gpu_type')} {t.get('option')} in {t.get('region')}",
                     "commitment_usd": p.get("commitment_usd", t.get("full_term_usd")), "npv_usd": p.get("npv_usd"),
                     "upfront_usd": p.get("upfront_usd"), "monthly_recurring_usd": p.get("monthly_recurring_usd"),
                     "end_date": day(t.get("end_date")), "avg_utilisation": t.get("avg_utilisation"),
                     "break_even_utilisation": t.get("break_even_utilisation"),
                     "break_even_vs_nothing": t.get("break_even_vs_nothing"),
                     "verdict": verdict(bool(t.get("pays")), float(t.get("avg_utilisation") or 0.0),
                                        float(t["break_even_vs_nothing"]) if t.get("break_even_vs_nothing")
                                        is not None else float("nan"))})
    for c in plan.get("spend_commitments") or []:
        if not c.get("firm") or not float(c.get("usd_per_hour") or 0):
            continue
        row = next((r for r in plan.get("reserved_purchases") or []
                    if r.get("kind") == "spend" and r.get("option") == c.get("option")
                    and day(r.get("purchase_date")) == day(c.get("purchase_date"))), {})
        # its break-even: the inverse of what each drawn dollar pays for on demand (the Summary's and terminal's)
        be, word = spend_verdict(c.get("covered_at_rates_usd") or 0.0, c.get("covered_at_on_demand_usd") or 0.0,
                                 c.get("utilisation") or 0.0)
        sign.append({"what": f"savings plan {c.get('option')} ({c.get('family')}) ${float(c['usd_per_hour']):,.2f}/h",
                     "commitment_usd": row.get("commitment_usd"), "npv_usd": row.get("npv_usd"), "upfront_usd": 0.0,
                     "monthly_recurring_usd": float(c["usd_per_hour"]) * 730.0, "end_date": day(c.get("end_date")),
                     "avg_utilisation": c.get("utilisation"), "break_even_utilisation": be if be == be else None,
                     "verdict": word})
    rows = plan.get("reserved_purchases") or []
    payments = []
    for b in plan.get("payment_break_even") or []:
        i = int(b.get("purchase", -1))
        p = rows[i] if 0 <= i < len(rows) else {}
        payments.append({**b, "pool": f"{p.get('gpu_type')} {p.get('region')} {day(p.get('purchase_date'))}"})
    fin = plan.get("finance") or {}
    fiscal = int(fin.get("fiscal_year_start") or 1) != 1  # the Summary's years: fiscal where the model sets them
    years = [r for r in plan.get("cash_by_year") or [] if r.get("basis") == ("fiscal" if fiscal else "calendar")]
    later = [t for t in plan.get("tranches") or [] if not t.get("firm")]
    cov = plan.get("coverage") or {}
    sav = plan.get("savings") or {}
    total = float((plan.get("cost_usd") or {}).get("total") or 0.0)
    headline = [("Cash out in the next 12 months (fees of the commitments already owned included)",
                 plan.get("cash_next_12_months_usd"), "usd"),
                ("Planned later (decide then), whole terms" + (", expected" if any(
                    float(t.get("probability") or 1) < 1 for t in later) else ""),
                 sum(float(t.get("full_term_usd") or 0) * float(t.get("probability") or 1) for t in later) if later
                 else None, "usd"),
                ("Saving against no new commitments (re-solved)",
                 float(sav["next_best_cost_usd"]) - total if sav.get("next_best_cost_usd") is not None else None, "usd"),
                ("Coverage, spot not counted", cov.get("coverage"), "pct"),
                ("Coverage, spot counted", cov.get("coverage_with_spot"), "pct")]
    term = plan.get("term_downside") or []
    worst = max((float(r.get("shock") or 0) for r in term), default=0.0)
    return {"sign_now": sign, "payments": payments, "cash_by_year": years, "downside": plan.get("downside") or [],
            "tranches": tranches, "npv_usd": plan.get("npv_usd"), "rate": float(fin.get("discount_rate") or 0.0),
            "headline": [h for h in headline if h[1] is not None],
            "term_downside": [{**r, "purchase_date": day(r.get("purchase_date"))} for r in term
                              if float(r.get("shock") or 0) == worst and worst > 0]}


def header(plan: dict) -> dict:
    """The figures for the page's header: name, status, costs, savings, bill, horizon, run."""
    cost = plan.get("cost_usd") or {}
    base = (plan.get("baselines_usd") or {}).get("all_on_demand")
    sav = plan.get("savings_usd")
    start, end, H = horizon(plan)
    return {"name": plan.get("name") or "plan", "status": plan.get("status"), "demand_met": plan.get("demand_met"),
            "mip_gap": plan.get("mip_gap"), "total_usd": cost.get("total"), "reserved_usd": cost.get("reserved"),
            "on_demand_usd": cost.get("on_demand"), "spot_usd": cost.get("spot"), "all_on_demand_usd": base,
            "others": {k: v for k, v in cost.items() if k in OTHER_RENTED},  # flex-start, ...
            "savings_usd": sav, "savings_pct": (sav / base if _finite(sav) and _finite(base) and base > 0 else None),
            "bill_usd": (plan.get("bill_usd") or {}).get("total_usd"),
            "commitment_usd": (plan.get("commitments") or {}).get("reserved_full_term_usd"),
            "shortfall_gpu_hours": plan.get("shortfall_gpu_hours"), "start": start, "end": end, "hours": H,
            "periods": plan["horizon"].get("periods"), "run_id": plan.get("run_id"),
            "created_utc": plan.get("created_utc"), "planner_version": plan.get("planner_version"),
            "accounting": (plan.get("commitments") or {}).get("accounting"), "notes": list(plan.get("notes") or [])}
