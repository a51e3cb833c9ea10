"""``planner sweep``: sensitivity of the plan to multiplicative factors.

Factors (:data:`planner.inputs.arrays.FACTORS`): spot, on-demand and reserved prices,
spot interruption rates, demand level, demand growth over the horizon, and
headroom. Each is given as ``lo:hi:n`` (n evenly spaced values) or a comma list.

* one-at-a-time (default): the base point (every factor 1), then each factor
  alone over its values with the others at 1;
* ``grid``: every combination of the given factors' values.

Inputs are read and validated once (in the parent; each worker process gets them
once, at start). A point is :func:`planner.inputs.arrays.scale_inputs` of them -- arrays
only, nothing re-read or re-validated -- then :func:`planner.pipeline.run.make_plan`,
exactly as ``planner plan`` solves. The model is rebuilt from the scaled arrays
at every point rather than patched: building takes a few hundredths of a second
on the bundled example, and the exact reductions it applies (dominated pools
are left out) depend on the prices, so a model built for one point's prices is
not the model of another's.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from planner.core.errors import ConfigError, InputError, Problem, SolverError
from planner.inputs.arrays import FACTORS, PlanInputs, scale_inputs
from planner.inputs import supply
from planner.core.options import PlanOptions
from planner.pipeline.run import make_plan
from planner.core.units import HEADROOM_MAX, usd as _usd
from planner.whatif.metrics import SPOT_EPS, plan_metrics
from planner.core.executors import Executor, LocalExecutor, Outcome

PRICE_FACTORS = ("spot_price", "on_demand_price", "reserved_price")
OPTION_OF = {f: "--" + f.replace("_", "-") for f in FACTORS}
MAX_POINTS = 10_000


# ---------------------------------------------------------------------------- parsing

def parse_values(factor: str, text: str) -> list[float]:
    """``lo:hi:n`` -> n evenly spaced values; ``a,b,c`` -> those values. Factors are finite and >= 0."""
    opt = OPTION_OF[factor]
    text = text.strip()

    def bad(message: str, expected: str = "lo:hi:n (e.g. 0.5:2:7) or a comma list (e.g. 0.5,1,2)"):
        return ConfigError(Problem("command line", f"{opt} {message}", value=text, expected=expected))

    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise bad("needs three parts lo:hi:n")
        try:
            lo, hi = float(parts[0]), float(parts[1])
        except ValueError:
            raise bad("bounds must be numbers") from None
        try:
            n = int(parts[2])
        except ValueError:
            raise bad("n must be a whole number of points", "lo:hi:n with n >= 2, e.g. 0.5:2:7") from None
        if n < 2:
            raise bad("n must be at least 2", "lo:hi:n with n >= 2, e.g. 0.5:2:7")
        if n > MAX_POINTS:  # checked before a single value is made
            raise bad(f"asks for {n:,} points", f"at most {MAX_POINTS:,} points")
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
            raise bad("needs lo < hi", "lo:hi:n with lo < hi, e.g. 0.5:2:7")
        values = [float(v) for v in np.linspace(lo, hi, n)]
    else:
        try:
            values = [float(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise bad("values must be numbers") from None
        if not values:
            raise bad("has no values")
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise bad("factors must be finite and >= 0 (1 = as in the inputs)")
    return list(dict.fromkeys(round(v, 12) for v in values))


@dataclass
class SweepSpec:
    """The factors of a sweep and their values; one at a time around 1, or every combination (grid)."""
    factors: dict[str, list[float]]  # factor -> values, in FACTORS order
    grid: bool = False

    @classmethod
    def from_options(cls, options: dict[str, str | None], grid: bool = False) -> "SweepSpec":
        """A spec from the CLI's LO:HI:N or comma lists (ConfigError when none is given or one is bad)."""
        factors = {f: parse_values(f, options[f]) for f in FACTORS if options.get(f)}
        if not factors:
            raise ConfigError(Problem("command line", "no factor to sweep",
                                      expected="at least one of " + ", ".join(OPTION_OF.values()),
                                      hint="e.g. planner sweep --spot-price 0.5:2:7"))
        return cls(factors, grid)

    def points(self) -> list[dict]:
        """Each point: ``factors`` (all seven), ``varied`` (the factor varied, 'base' or 'grid')."""
        base = {f: 1.0 for f in FACTORS}
        out: list[dict] = []
        seen = set()

        def add(factors: dict, varied: str):
            key = tuple(factors[f] for f in FACTORS)
            if key in seen:
                return
            seen.add(key)
            out.append({"factors": factors, "varied": varied})

        if self.grid:
            names = list(self.factors)
            size = math.prod(len(self.factors[f]) for f in names)
            if size > MAX_POINTS:  # from the counts, before the grid is built
                raise ConfigError(Problem("command line", f"the sweep has {size:,} points",
                                          expected=f"at most {MAX_POINTS:,}", hint="use fewer values or drop --grid"))
            for combo in itertools.product(*(self.factors[f] for f in names)):
                add(base | dict(zip(names, combo)), "grid")
        else:
            add(dict(base), "base")
            for f, values in self.factors.items():
                for v in values:
                    add(base | {f: v}, f)
        if len(out) > MAX_POINTS:
            raise ConfigError(Problem("command line", f"the sweep has {len(out):,} points",
                                      expected=f"at most {MAX_POINTS:,}", hint="use fewer values or drop --grid"))
        return out


# ---------------------------------------------------------------------------- one point (in a worker)

_W: dict = {}


def _init_worker(inp: PlanInputs, backend, time_limit_s, mip_gap) -> None:
    """Once per worker process: the inputs, read and validated once by the parent."""
    _W.clear()
    _W.update(inp=inp, backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap)


def check_scaled(scaled: PlanInputs, factors: dict) -> None:
    """The limits validation puts on inputs, applied to a scaled copy (cheap: arrays only)."""
    from planner.inputs.validate import ABSURD_GPUS, ABSURD_USD_PER_HOUR

    problems = []
    where = ", ".join(f"{f}={v:g}" for f, v in factors.items() if v != 1.0) or "base"
    for k, name in enumerate(scaled.classes):
        h = float(scaled.headroom[k])
        if h > HEADROOM_MAX:
            problems.append(Problem("command line", f"at {where}, class '{name}' headroom becomes {h:g}",
                                    expected=f"at most {HEADROOM_MAX:g} ({HEADROOM_MAX * 100:g} %), "
                                             "the model file's limit"))
    peak = float(np.max(scaled.demand)) if scaled.demand.size else 0.0
    if peak > ABSURD_GPUS:
        problems.append(Problem("command line", f"at {where}, demand reaches {peak:g} GPUs",
                                expected=f"at most {ABSURD_GPUS:g}, the demand file's limit"))
    prices = np.concatenate([scaled.pools["od"].to_numpy(float), scaled.pools["sp"].to_numpy(float),
                             scaled.commitments["hourly_usd"].to_numpy(float)])
    top = float(np.nanmax(prices)) if np.isfinite(prices).any() else 0.0
    if top > ABSURD_USD_PER_HOUR:
        problems.append(Problem("command line", f"at {where}, a price reaches {top:g} USD per GPU-hour",
                                expected=f"at most {ABSURD_USD_PER_HOUR:g}, the price sheet's limit"))
    if problems:
        raise InputError(problems)


def solve_point(point: dict) -> dict:
    """One sweep point -> its metrics (raises on bad scaled inputs or when the solver finds no plan)."""
    inp: PlanInputs = _W["inp"]
    factors = point["factors"]
    scaled = scale_inputs(inp, **factors)
    check_scaled(scaled, factors)
    from planner.pipeline.whole_term import plan_over_term

    plan = plan_over_term(scaled, make_plan, PlanOptions(backend=_W["backend"], time_limit_s=_W["time_limit_s"],
                                                         mip_gap=_W["mip_gap"]))  # judged as `planner plan` judges
    if not plan.status.has_plan:
        raise SolverError(f"the solver found no plan ({plan.status.value}"
                          f"{': ' + plan.solve.message if plan.solve.message else ''})")
    out = plan_metrics(plan)
    out["mip_gap"] = plan.solve.mip_gap
    out["build_s"] = float(plan.timings.get("build", 0.0))
    out["solve_s"] = float(plan.solve.seconds)
    return out


# ---------------------------------------------------------------------------- the sweep

@dataclass
class SweepResult:
    """Every point of a sweep (factors, status, metrics or error) with break-evens and the tornado."""
    spec: SweepSpec
    points: list[dict]  # index, varied, factors, ok, error, seconds, metrics...
    wall_seconds: float
    jobs: int
    break_evens: list[dict] = field(default_factory=list)
    spot_checks: list[dict] = field(default_factory=list)
    tornado: list[dict] = field(default_factory=list)
    name: str = ""

    @property
    def ok_points(self) -> list[dict]:
        """The points that solved."""
        return [p for p in self.points if p["ok"]]

    @property
    def frame(self):
        """One row per point: index, the factors as columns, status, costs and the other metrics."""
        import pandas as pd

        rows = [{"index": p["index"], **p["factors"],
                 **{k: v for k, v in p.items() if k not in ("index", "factors") and not isinstance(v, (dict, list))}}
                for p in self.points]
        return pd.DataFrame(rows)

    @property
    def points_per_minute(self) -> float:
        """Throughput of the run."""
        return 60.0 * len(self.points) / self.wall_seconds if self.wall_seconds > 0 else float("nan")

    @property
    def base(self) -> dict | None:
        """The solved point with every factor at 1, if any."""
        for p in self.points:
            if all(v == 1.0 for v in p["factors"].values()) and p["ok"]:
                return p
        return None


def describe_point(p: dict) -> str:
    """'factor=value, ..' of the factors that differ from 1 ('base' when none)."""
    f = ", ".join(f"{k}={v:g}" for k, v in p["factors"].items() if v != 1.0) or "base"
    return f


def run_sweep(inp: PlanInputs, spec: SweepSpec, *, backend=None, time_limit_s=None, mip_gap=None, jobs: int = 1,
              executor: Executor | None = None, progress: bool = True) -> SweepResult:
    """Solve every point of ``spec`` on ``executor`` (default: ``jobs`` local processes) and analyse them.

    A failed point is kept (``ok`` false, its error) and the others go on; ``result.frame`` is the table.
    """
    executor = executor or LocalExecutor(jobs)
    points = spec.points()
    for i, p in enumerate(points):
        p["index"] = i + 1

    def describe(o: Outcome) -> str:
        p = points[o.index]
        if not o.ok:
            return f"#{p['index']} {describe_point(p)}: FAILED {o.error.splitlines()[-1].strip()}"
        return f"#{p['index']} {describe_point(p)}: {o.value['status']}, total ${o.value['total_usd']:,.0f}"

    t0 = time.perf_counter()
    outcomes = executor.map(solve_point, points, initializer=_init_worker,
                            initargs=(inp, backend, time_limit_s, mip_gap), progress=progress, describe=describe)
    wall = time.perf_counter() - t0
    rows = []
    for p, o in zip(points, outcomes):
        row = {"index": p["index"], "varied": p["varied"], "factors": p["factors"], "ok": o.ok,
               "error": o.error or None, "seconds": o.seconds}
        if o.ok:
            row.update(o.value)
        else:
            row["status"] = "failed"
        rows.append(row)
    result = SweepResult(spec=spec, points=rows, wall_seconds=wall, jobs=max(1, min(executor.workers, len(points))),
                         name=inp.config.name)
    result.break_evens = break_evens(result)
    result.spot_checks = spot_checks(result, inp)
    result.tornado = tornado(result)
    return result


# ---------------------------------------------------------------------------- analysis

def solved_line(result: SweepResult, factor: str) -> list[dict]:
    """The solved points along ``factor`` with every other factor at 1 (empty if fewer than two)."""
    lines = [(fixed, pts) for fixed, pts in series(result, factor) if not fixed]
    pts = [p for p in lines[0][1] if p["ok"]] if lines else []
    return pts if len(pts) >= 2 else []


def series(result: SweepResult, factor: str) -> list[tuple[dict, list[dict]]]:
    """Lines along ``factor``: for each setting of the other factors, the points sorted by ``factor``.

    One-at-a-time sweeps give one line per factor (others at 1, the base point included).
    """
    if factor not in result.spec.factors:
        return []
    groups: dict[tuple, list[dict]] = {}
    others = [f for f in FACTORS if f != factor]
    for p in result.points:
        if not result.spec.grid and any(p["factors"][f] != 1.0 for f in others):
            continue
        key = tuple(p["factors"][f] for f in others)
        groups.setdefault(key, []).append(p)
    out = []
    for key, pts in groups.items():
        pts = sorted(pts, key=lambda q: q["factors"][factor])
        if len(pts) > 1:
            out.append(({f: v for f, v in zip(others, key) if v != 1.0}, pts))
    return out


def _indicators(p: dict) -> dict[str, tuple[str, float]]:
    """(what, quantity) whose being zero or not can flip: reserved options, class spot, class-pool spot."""
    out = {}
    for k, v in p.get("reserved_gpus", {}).items():
        out[f"reserved {k}"] = ("reserved GPUs", v)
    for k, v in p.get("spot_gpu_hours", {}).items():
        out[f"spot {k}"] = ("spot GPU-hours", v)
    for k, v in p.get("spot_gpu_hours_by_pool", {}).items():
        out[f"spot {k}"] = ("spot GPU-hours", v)
    return out


def _on(q: float, unit: str) -> bool:
    return q > (SPOT_EPS if unit.startswith("spot") else 1e-9)


def break_evens(result: SweepResult) -> list[dict]:
    """Where, between consecutive points along a factor, a reserved purchase or a spot use starts or stops."""
    rows = []
    for factor in result.spec.factors:
        for fixed, pts in series(result, factor):
            ok = [p for p in pts if p["ok"]]
            for a, b in zip(ok, ok[1:]):
                ia, ib = _indicators(a), _indicators(b)
                for what in sorted(ia.keys() | ib.keys()):
                    unit, qa = ia.get(what, ("", 0.0))
                    unit_b, qb = ib.get(what, ("", 0.0))
                    unit = unit or unit_b
                    if _on(qa, unit) == _on(qb, unit):
                        continue
                    rows.append({"factor": factor, "from": a["factors"][factor], "to": b["factors"][factor],
                                 "what": what, "unit": unit, "quantity_from": qa, "quantity_to": qb,
                                 "change": "starts" if _on(qb, unit) else "stops",
                                 "other_factors": fixed or None,
                                 "points_between_failed": sum(1 for p in pts if not p["ok"]
                                                              and a["factors"][factor] < p["factors"][factor]
                                                              < b["factors"][factor])})
    return rows


def predicted_spot_break_evens(inp: PlanInputs) -> list[dict]:
    """From the spot economics (as ``planner spot`` computes them): the factor at which spot on a class
    and pool costs as much per useful GPU-hour as on-demand in the same pool.

    * spot_price: spot stops paying above ``od x goodput / sp``;
    * on_demand_price: below ``sp / (goodput x od)``;
    * interruptions: above ``break_even_interruptions_per_hour / interruptions_per_hour``.
    """
    rows = []
    sp = inp.spot
    if not len(sp):
        return rows
    for r in sp.itertuples():
        od_useful = r.on_demand_usd_per_useful_gpu_hour
        g, s = r.goodput, r.spot_usd_per_gpu_hour
        pool = f"{r.gpu_type}/{r.region}"
        base = {"workload_class": r.workload_class, "pool": pool, "goodput": g, "spot_usd_per_gpu_hour": s,
                "on_demand_usd_per_useful_gpu_hour": od_useful}
        if np.isfinite(od_useful) and s > 0:
            rows.append(base | {"factor": "spot_price", "direction": "above", "break_even": od_useful * g / s})
        if np.isfinite(od_useful) and od_useful > 0 and g > 0:
            rows.append(base | {"factor": "on_demand_price", "direction": "below", "break_even": s / (g * od_useful)})
        be, ip = r.break_even_interruptions_per_hour, r.interruptions_per_instance_hour
        if be is not None and np.isfinite(be) and ip > 0 and r.goodput_source == "model":
            rows.append(base | {"factor": "interruptions", "direction": "above", "break_even": be / ip})
    return rows


def spot_checks(result: SweepResult, inp: PlanInputs) -> list[dict]:
    """Where the sweep saw each class-pool's spot use stop, beside where the spot economics predict it.

    * ``agrees``: the stop (last point with spot use, first without) is within one sweep step of
      the predicted break-even (``steps_off`` <= 1; 0 when the two points bracket it);
    * ``consistent``: no spot use at any point past the break-even, which every optimal plan
      satisfies (on-demand in the same pool is then cheaper per useful GPU-hour) unless that
      pool's on-demand is capped. Spot may stop *before* the break-even: another pool or
      reserved GPUs can be cheaper still for the class.
    """
    rows = []
    for pred in predicted_spot_break_evens(inp):
        factor = pred["factor"]
        pts = solved_line(result, factor)
        if not pts:
            continue
        key = f"{pred['workload_class']} @ {pred['pool']}"
        use = [p.get("spot_gpu_hours_by_pool", {}).get(key, 0.0) for p in pts]
        xs = [p["factors"][factor] for p in pts]
        above = pred["direction"] == "above"
        if not above:  # walk from high to low: spot stops as the factor falls
            xs, use = xs[::-1], use[::-1]
        used = [u > SPOT_EPS for u in use]
        be = pred["break_even"]

        def beyond(x: float) -> bool:
            return x > be * (1 + 1e-9) if above else x < be * (1 - 1e-9)

        row = pred | {"swept_from": min(xs), "swept_to": max(xs),
                      "spot_at_base": next((u for p, u in zip(pts[::1 if above else -1], use)
                                            if all(v == 1.0 for v in p["factors"].values())), None),
                      "last_with_spot": None, "first_without_spot": None, "step": None, "steps_off": None,
                      "agrees": None, "consistent": not any(u and beyond(x) for u, x in zip(used, xs))}
        if not any(used):
            row["observed"] = "no spot use anywhere in the sweep"
        elif all(used):
            row["observed"] = "spot used at every point" + ("" if row["consistent"] else ", past the break-even")
        else:
            last = max(i for i, u in enumerate(used) if u)
            if last == len(used) - 1:
                row["observed"] = "spot starts within the range rather than stopping"
            else:
                a, b = xs[last], xs[last + 1]
                step = abs(b - a)
                lo, hi = min(a, b), max(a, b)
                off = 0.0 if lo - 1e-9 <= be <= hi + 1e-9 else min(abs(be - lo), abs(be - hi)) / step
                early = not beyond(b) and off > 1.0
                row.update(last_with_spot=a, first_without_spot=b, step=step, steps_off=off, agrees=off <= 1.0)
                row["observed"] = (f"spot stops between {a:g} and {b:g}"
                                   + (": at the break-even" if off <= 1.0 else
                                      ": before the break-even (another option is cheaper for the class)" if early
                                      else ": past the break-even"))
        rows.append(row)
    return rows


def tornado(result: SweepResult) -> list[dict]:
    """Total cost at each factor's lowest and highest value (others at 1, or nearest 1 in a grid)."""
    base = result.base
    rows = []
    for factor in result.spec.factors:
        lines = series(result, factor)
        if not lines:
            continue

        def distance(item):  # the line whose other factors are nearest 1
            fixed, _pts = item
            return sum(abs(math.log(v)) if v > 0 else 1e9 for v in fixed.values())

        fixed, pts = min(lines, key=distance)
        ok = [p for p in pts if p["ok"]]
        if not ok:
            continue
        lo, hi = ok[0], ok[-1]
        totals = [p["total_usd"] for p in ok]
        ref = base["total_usd"] if base else None
        rows.append({"factor": factor, "low": lo["factors"][factor], "high": hi["factors"][factor],
                     "total_at_low": lo["total_usd"], "total_at_high": hi["total_usd"],
                     "min_total": min(totals), "max_total": max(totals), "range": max(totals) - min(totals),
                     "base_total": ref,
                     "delta_at_low": lo["total_usd"] - ref if ref is not None else None,
                     "delta_at_high": hi["total_usd"] - ref if ref is not None else None,
                     "other_factors": fixed or None})
    rows.sort(key=lambda r: -r["range"])
    return rows


# ---------------------------------------------------------------------------- flat table (CSV, workbook, terminal)

def flat_columns(result: SweepResult) -> list[str]:
    """Column names of sweep.csv."""
    res_keys, spot_keys = [], []
    for p in result.ok_points:
        for k in p.get("reserved_gpus", {}):
            if k not in res_keys:
                res_keys.append(k)
        for k in p.get("spot_gpu_hours", {}):
            if k not in spot_keys:
                spot_keys.append(k)
    others = [f"{k}_usd" for k in supply.RENTED[2:] if any(f"{k}_usd" in p for p in result.ok_points)]
    return (["point", "varied"] + list(FACTORS)
            + ["status", "total_usd", "reserved_usd", "on_demand_usd", "spot_usd", *others, "shortfall_gpu_hours",
               "commitment_usd", "savings_usd", "mip_gap", "seconds"]
            + [f"reserved_gpus {k}" for k in res_keys]
            + [f"spot_gpu_hours {k}" for k in spot_keys]
            + [f"spot_share {k}" for k in spot_keys]
            + ["error"])


def flat_rows(result: SweepResult) -> tuple[list[str], list[list]]:
    """The points as flat rows for sweep.csv."""
    cols = flat_columns(result)
    rows = []
    for p in result.points:
        row = []
        for c in cols:
            if c == "point":
                row.append(p["index"])
            elif c in FACTORS:
                row.append(p["factors"][c])
            elif c.startswith("reserved_gpus "):
                row.append(p.get("reserved_gpus", {}).get(c.split(" ", 1)[1]) if p["ok"] else None)
            elif c.startswith("spot_gpu_hours "):
                row.append(p.get("spot_gpu_hours", {}).get(c.split(" ", 1)[1]) if p["ok"] else None)
            elif c.startswith("spot_share "):
                row.append(p.get("spot_share", {}).get(c.split(" ", 1)[1]) if p["ok"] else None)
            else:
                row.append(p.get(c))
        rows.append(row)
    return cols, rows


def to_dict(result: SweepResult) -> dict:
    """sweep.json as a dict."""
    return {
        "name": result.name,
        "mode": "grid" if result.spec.grid else "one-at-a-time",
        "factors": result.spec.factors,
        "points": result.points,
        "break_evens": result.break_evens,
        "spot_break_even_checks": result.spot_checks,
        "tornado": result.tornado,
        "run": {"points": len(result.points), "failed": sum(1 for p in result.points if not p["ok"]),
                "jobs": result.jobs, "wall_seconds": result.wall_seconds,
                "points_per_minute": result.points_per_minute},
    }


def summary_lines(result: SweepResult, max_rows: int = 200) -> list[str]:
    """The lines the CLI prints after a sweep: table, break-evens, wall time."""
    varied = [f for f in FACTORS if f in result.spec.factors]
    short = {"spot_price": "spot", "on_demand_price": "on-dem", "reserved_price": "resv", "interruptions": "interr",
             "demand_level": "demand", "demand_growth": "growth", "headroom": "headrm"}
    others = [k for k in supply.RENTED[2:] if any(f"{k}_usd" in p for p in result.ok_points)]  # flex-start
    head = ["#", *[short[f] for f in varied],
            "status", "total", "reserved", "on-demand", "spot", *(k.replace("_", "-") for k in others),
            "shortfall GPU-h", "reserved GPUs"]
    widths = [4] + [8] * len(varied) + [10, 14, 14, 12, 12] + [12] * len(others) + [16, 14]
    lines = ["".join(h.rjust(w) for h, w in zip(head, widths))]
    for p in result.points[:max_rows]:
        vals = [str(p["index"])] + [f"{p['factors'][f]:.4g}" for f in varied]
        if p["ok"]:
            vals += [p["status"], _usd(p["total_usd"]), _usd(p["reserved_usd"]), _usd(p["on_demand_usd"]),
                     _usd(p["spot_usd"]), *(_usd(p.get(f"{k}_usd", 0.0)) for k in others),
                     f"{p['shortfall_gpu_hours']:,.1f}",
                     f"{sum(p['reserved_gpus'].values()):,.0f}"]
        else:
            vals += ["FAILED", "", "", "", "", "", ""] + [""] * len(others)
        lines.append("".join(v.rjust(w) for v, w in zip(vals, widths)))
    if len(result.points) > max_rows:
        lines.append(f"... and {len(result.points) - max_rows} more points (see sweep.csv)")
    for p in result.points:
        if not p["ok"]:
            lines.append(f"point {p['index']} ({describe_point(p)}) failed: {p['error']}")
    if result.tornado:
        lines.append("total cost range per factor (tornado):")
        for t in result.tornado:
            lines.append(f"  {t['factor']:<16} {t['low']:g}..{t['high']:g}: {_usd(t['min_total'])} .. "
                         f"{_usd(t['max_total'])} (range {_usd(t['range'])})")
    class_level = [b for b in result.break_evens if "@" not in b["what"]]
    if class_level:
        lines.append("break-evens (a reserved purchase or a class's spot use starts or stops):")
        for b in class_level:
            other = (" with " + ", ".join(f"{k}={v:g}" for k, v in b["other_factors"].items())) \
                if b["other_factors"] else ""
            lines.append(f"  {b['factor']} between {b['from']:g} and {b['to']:g}{other}: {b['what']} {b['change']} "
                         f"({b['quantity_from']:,.0f} -> {b['quantity_to']:,.0f} {b['unit']})")
    elif len(result.ok_points) > 1:
        lines.append("break-evens: no reserved purchase or class's spot use starts or stops within the sweep")
    checks = [c for c in result.spot_checks if c.get("last_with_spot") is not None]
    if checks:
        lines.append("spot stops vs the spot economics' break-even (same class and pool, against on-demand there):")
        for c in checks:
            lines.append(f"  {c['factor']} {c['workload_class']} @ {c['pool']}: break-even {c['break_even']:.4g}; "
                         f"{c['observed']} ({c['steps_off']:.2f} steps off)")
    bad = [c for c in result.spot_checks if not c["consistent"]]
    for c in bad:
        lines.append(f"  note: {c['workload_class']} @ {c['pool']} uses spot past its break-even on {c['factor']} "
                     "(is on-demand capped in that pool?)")
    lines.append(f"{len(result.points)} points ({sum(1 for p in result.points if not p['ok'])} failed) in "
                 f"{result.wall_seconds:.1f} s wall time on {result.jobs} process(es): "
                 f"{result.points_per_minute:.1f} points per minute")
    return lines

