"""Rolling backtest with state: commitments bought in one window are owned in every later one.

The history (one demand scenario, T periods) is cut at ``c_w = train + w x step`` for w = 0, 1, ...
while a whole test window fits. At each cut-off every strategy sees the demand before it (never
after: the decision functions are handed ``history[:, :c]``), the commitments it bought at earlier
cut-offs (dated inventory, active from their own dates for their own terms, as in the ladder of
``spec/formulation.md``) and decides what to buy at ``c_w``:

- ``stochastic``: the two-stage plan over forecast-error scenarios (:func:`planner.forecasting.point.error_scenarios`:
  the point forecast plus the forecaster's own centred residuals at the latest past origins);
- ``point``: the deterministic plan on the point forecast;
- ``percentile_fleet``: per pool, the fleet's demand (every class in the pool of its cheapest
  reserved option, with headroom, in that pool's GPUs) forecast over the horizon; reserve the level the
  forecast exceeds in the break-even share of hours (effective reserved / on-demand price), less what
  is owned;
- ``recommender``: the cloud providers' commitment recommendation: per pool, over the last
  ``lookback`` periods of usage (default 30 days, or all the history there is) not already covered by
  commitments, the level (and option) that would have saved the most against on-demand;
- ``spot_aware``: the clouds' recommenders as they really work, on on-demand usage only: per pool, the
  break-even percentile of the last 7 days of the demand that cannot go to spot, weekly
  (:func:`planner.backtest.rules.spot_aware`);
- ``coverage_ladder``: a commitment-management service: 80 % of the trailing minimum of that demand, in
  equal quarterly tranches on the shortest term (:func:`planner.backtest.rules.coverage_ladder`);
- ``all_on_demand``: buy nothing.

The purchases of all windows are then fixed in one plan of the whole test period on the demand that
came (on-demand and spot re-optimised: the cheapest recourse), and compared, window by window and in
total, with the hindsight optimum: one plan of the whole period that knew the demand, allowed to buy
at the same cut-offs. Reserved cost is amortised (effective rate x active hours) in the in-span figures; the
full-term figures charge every commitment signed its whole liability (:mod:`planner.backtest.term`).
Windows of one strategy run in order (each depends on the last); the strategies and the hindsight
plan run in parallel on an executor.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from planner.backtest import rules
from planner.backtest.fleet import cheapest_rows, fleet_series, owned_now, room as room_left, term_rows
from planner.inputs import rented
from planner.inputs import commitments
from planner.backtest import slo
from planner.backtest import stats
from planner.backtest import term
from planner.forecasting import point as fc_mod
from planner.inputs.arrays import PlanInputs, future_inputs, slice_periods

STRATEGIES = ("stochastic", "point", "percentile_fleet", "recommender", "spot_aware", "coverage_ladder",
              "all_on_demand")
OPTIONAL = ("tree", "default")  # strategies run only when named (a tree over the term: a MILP or three per cut-off)
FORECASTING = ("stochastic", "tree", "point", "percentile_fleet", "recommender", "default")  # they run the forecaster
RULE = "spot_aware"  # the rule a user runs: every strategy's paired difference from it (vs_rule)
DEFAULT_LOOKBACK_HOURS = 720.0  # the recommender's usage window: 30 days, as the clouds' default recommendations
LONG_HORIZON_HOURS = 672.0  # stochastic: from a 4-week horizon on, level scenarios (term risk), not past residuals


@dataclass(frozen=True)
class Settings:
    """Window lengths in periods and the forecasting choices of one backtest."""
    train: int  # history before the first cut-off
    test: int  # periods each window's purchases are judged on
    step: int  # periods between cut-offs
    horizon: int  # periods the planner's forecast covers at each cut-off
    period_hours: float
    forecaster: object = "weekly"  # a name of planner.forecasting.point.FORECASTERS, "module:function" or a callable
    origins: int = 7  # past forecasts whose residuals make the stochastic strategy's scenarios
    lookback: int | None = None  # recommender's usage window in periods (default: 30 days, or all there is)
    strategies: tuple = STRATEGIES
    forecaster_label: str = ""  # how messages name the forecaster (its spec as given), once it is resolved
    decide: int | None = None  # periods after ``train`` in which cut-offs may buy (None: all); later ones only judge
    ladder_share: float = rules.LADDER_SHARE  # coverage_ladder: share of the trailing minimum committed
    seed: int = 0  # the bootstrap's
    multipliers: tuple = stats.MULTIPLIERS  # shortfall penalties re-ranked at (x the dearest on-demand price)
    options: object = None  # the PlanOptions of every plan the backtest makes (planner.core.options; None: defaults)

    def cutoffs(self, T: int) -> np.ndarray:
        """Positions of the cut-offs: every ``step`` from ``train`` while a whole test window fits."""
        return np.arange(self.train, T - self.test + 1, self.step, dtype=int)

    def decisions(self, T: int) -> np.ndarray:
        """The cut-offs at which strategies (and the hindsight plan) may buy: those before ``train + decide``."""
        cuts = self.cutoffs(T)
        return cuts if self.decide is None else cuts[cuts < self.train + self.decide]

    def every(self, hours: float) -> int:
        """Periods in ``hours``, at least one."""
        return max(1, int(round(hours / self.period_hours)))


@dataclass
class BacktestResult:
    """Per window and strategy (``windows``), per strategy (``strategies``), per month and the hindsight total."""
    windows: pd.DataFrame
    strategies: pd.DataFrame
    monthly: pd.DataFrame
    purchases: pd.DataFrame  # every strategy's purchases: strategy, window, gpu_type, region, option, date, gpus
    hindsight_total_usd: float
    hindsight_objective_usd: float
    settings: Settings
    notes: list = field(default_factory=list)
    hindsight_status: str = "optimal"
    hindsight_gap: float | None = 0.0
    hindsight: dict = field(default_factory=dict)  # its purchases, and the full-term hindsight's
    penalty_ranks: pd.DataFrame = field(default_factory=pd.DataFrame)  # the ranking at other shortfall penalties

    @property
    def proven(self) -> bool:
        """True when the hindsight optimum is proven (the regrets are exact, not upper bounds)."""
        return self.hindsight_status == "optimal"

    def to_dict(self) -> dict:
        """backtest.json: ``{"windows": [...], "strategies": {...}, "hindsight_total_usd", ...}``."""
        import json

        def records(frame):
            return json.loads(frame.to_json(orient="records", date_format="iso"))

        windows = records(self.windows.drop(columns=["purchases"]))
        for row, bought in zip(windows, self.windows["purchases"]):
            row["purchases"] = bought
        s = self.settings
        ranks = self.penalty_ranks
        sensitivity = [{"multiplier": m, "penalty_usd_per_gpu_hour": float(g["penalty_usd_per_gpu_hour"].iat[0]),
                        "ranking": g.sort_values(["rank", "strategy"])["strategy"].tolist(),
                        "objective_usd": dict(zip(g["strategy"], g["objective_usd"].astype(float)))}
                       for m, g in ranks.groupby("multiplier", sort=True)] if len(ranks) else []
        return {
            "windows": windows,
            "strategies": {r.pop("strategy"): r for r in records(self.strategies)},
            "hindsight_total_usd": self.hindsight_total_usd,
            "hindsight_objective_usd": self.hindsight_objective_usd,
            "hindsight_status": self.hindsight_status, "hindsight_mip_gap": self.hindsight_gap,
            "hindsight": self.hindsight,
            "penalty_sensitivity": sensitivity,
            "monthly": records(self.monthly),
            "settings": {"train_periods": s.train, "test_periods": s.test, "step_periods": s.step,
                         "horizon_periods": s.horizon, "period_hours": s.period_hours,
                         "forecaster": s.forecaster if isinstance(s.forecaster, str)
                         else getattr(s.forecaster, "__name__", repr(s.forecaster)),
                         "origins": s.origins,
                         "lookback_periods": s.lookback or int(round(DEFAULT_LOOKBACK_HOURS / s.period_hours)),
                         "decide_periods": s.decide, "ladder_share": s.ladder_share, "bootstrap_seed": s.seed,
                         "confidence": stats.LEVEL, "penalty_multipliers": list(s.multipliers),
                         "reserved_accounting": "amortised (in span) and full_term"},
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------- decisions at one cut-off

def percentile_fleet(inp: PlanInputs, forecast: np.ndarray, on_order: np.ndarray | None = None) -> np.ndarray:
    """Instances per purchase row of ``inp``: the fleet's break-even level of the forecast, less what is owned
    (or on order), within the reserved cap."""
    n = np.zeros(len(inp.commitments))
    owned = owned_now(inp, on_order)
    room = room_left(inp, owned)
    od = inp.pools["od"].to_numpy(float)
    res = inp.commitments
    for c, classes in cheapest_rows(inp).items():
        p = int(res["pool"].iat[c])
        r = float(res["r"].iat[c])
        if not np.isfinite(od[p]) or r >= od[p]:
            continue
        level = np.quantile(fleet_series(inp, forecast, c, classes), 1 - r / od[p])
        m = float(res["m"].iat[c])
        n[c] = np.floor(min(max(0.0, level - owned[p]), room[p]) / m + 1e-9)
        owned[p] += n[c] * m
        room[p] -= n[c] * m
    return n


def recommender(inp: PlanInputs, usage: np.ndarray, hours: np.ndarray,
                on_order: np.ndarray | None = None) -> np.ndarray:
    """Instances per purchase row: per pool, the option and level that would have saved most on ``usage``.

    ``usage`` (K, L) is the demand of the lookback window; the pool's GPUs it needs (cheapest-option
    pools, with headroom) less the GPUs owned now is what a commitment could cover. For every reserved
    option of the pool the saving of covering level x is ``sum_t h_t (od min(u_t, x) - r x)``, largest at the
    quantile ``1 - r / od`` of u; the option with the larger saving is recommended (none when no saving).
    """
    n = np.zeros(len(inp.commitments))
    owned = owned_now(inp, on_order)
    room = room_left(inp, owned)
    od = inp.pools["od"].to_numpy(float)
    res = inp.commitments
    by_pool: dict[int, np.ndarray] = {}
    for c, classes in cheapest_rows(inp).items():
        p = int(res["pool"].iat[c])
        by_pool[p] = by_pool.get(p, 0.0) + fleet_series(inp, usage, c, classes)
    for p, series in by_pool.items():
        if not np.isfinite(od[p]):
            continue
        uncovered = np.clip(series - owned[p], 0.0, None)
        best, best_saving = None, 0.0
        for c in np.flatnonzero((res["pool"].to_numpy(int) == p) & term_rows(res)):
            r, m = float(res["r"].iat[c]), float(res["m"].iat[c])
            if r >= od[p]:
                continue
            gpus = np.floor(min(np.quantile(uncovered, 1 - r / od[p]), room[p]) / m + 1e-9) * m
            saving = float(hours @ (od[p] * np.minimum(uncovered, gpus) - r * gpus))
            if saving > best_saving + 1e-9:
                best, best_saving = (c, gpus / m), saving
        if best is not None:
            n[best[0]] = best[1]
    return n


def decide(strategy: str, base: PlanInputs, seen: np.ndarray, start, owned: pd.DataFrame,
           settings: Settings, make_plan) -> tuple[PlanInputs, np.ndarray, int]:
    """What ``strategy`` buys at the cut-off ``start`` knowing only ``seen`` (K, c): (inputs, instances, scenarios).

    The inputs are those of the plan made at the cut-off (horizon ``settings.horizon``, the point forecast
    or, for ``stochastic``, its error scenarios as demand, ``owned`` as dated inventory); the instances are
    per row of their ``reserved``.
    """
    s = settings
    if strategy == "all_on_demand":
        inp = future_inputs(base, start, s.horizon, s.period_hours, np.zeros((1, base.K, s.horizon)), ["forecast"],
                            np.array([1.0]), owned)
        return inp, np.zeros(len(inp.commitments)), 1
    raw = slo.requests_seen(base, seen)  # SLO-sized classes: their requests, to forecast and size causally
    base = slo.sized(base, raw[None])[0]  # their speeds from the requests seen, never the whole file
    if strategy in ("spot_aware", "coverage_ladder"):  # no forecast: what was used, as the rule says
        inp = future_inputs(base, start, s.horizon, s.period_hours, seen[None, :, -1:].repeat(s.horizon, axis=2),
                            ["forecast"], np.array([1.0]), owned)
        return inp, (_rule(strategy, inp, seen, _on_order(base, owned, start), s) if len(inp.commitments)
                     else np.zeros(0)), 1
    forecaster = fc_mod.resolve(s.forecaster)
    long = s.horizon * s.period_hours >= LONG_HORIZON_HOURS
    try:  # the user's forecaster: say where it failed (its exits and os._exit included: fc_mod.run contains them)
        point = fc_mod.run(forecaster, raw, s.horizon, s.period_hours, base.classes)
        errors = fc_mod.residuals(forecaster, raw, s.horizon, s.period_hours, origins=s.origins,
                                  classes=base.classes) if strategy == "stochastic" and not long else None
    except Exception as exc:
        name = s.forecaster_label or _name(s.forecaster)
        raise ForecasterError(f"the forecaster {name} failed at the cut-off {start}: {_failure(exc)}") from None
    cube, prob = point[None], np.array([1.0])
    if strategy == "stochastic" and long:  # a term ahead: where the level may go, not next week's error
        cube, prob = fc_mod.level_scenarios(point, raw, s.period_hours)
    elif errors is not None:
        cube, prob = fc_mod.error_scenarios(point, errors)
    if len(slo.slo_rows(base)):  # replicas and speeds sized from the forecast alone
        base, cube = slo.sized(base, cube)
        point = slo.sized(base, point[None])[1][0]
    names = [f"e{j}" for j in range(len(prob))] if len(prob) > 1 else ["forecast"]
    inp = future_inputs(base, start, s.horizon, s.period_hours, cube, names, prob, owned)
    if not len(inp.commitments):
        return inp, np.zeros(len(inp.commitments)), 1
    if strategy in ("point", "stochastic"):
        return inp, make_plan(inp, settings.options, risk=False).purchases["units"].to_numpy(float), len(prob)
    if strategy == "default":  # what `planner plan` buys at the cut-off: the point forecast, every term judged
        # over its whole term (planner.pipeline.whole_term), the growth and band from the demand seen so far
        from planner.pipeline.whole_term import plan_over_term

        seen_periods = pd.date_range(end=pd.Timestamp(start) - pd.Timedelta(hours=s.period_hours),
                                     periods=raw.shape[1], freq=pd.Timedelta(hours=s.period_hours))
        plan = plan_over_term(inp, make_plan, settings.options, risk=False, shadow=False,
                              history=(seen_periods, np.full(raw.shape[1], s.period_hours), raw))
        return inp, plan.purchases["units"].to_numpy(float), len(prob)
    if strategy == "tree":  # today's purchases of a plan that may buy later, per branch of a scenario tree
        from planner.backtest.tree import tree_scenarios

        periods = pd.date_range(pd.Timestamp(start), periods=s.horizon, freq=pd.Timedelta(hours=s.period_hours))
        cube, names, prob, dates = tree_scenarios(point, raw, periods, s.period_hours)
        inp = future_inputs(base, start, s.horizon, s.period_hours, cube, names, prob, owned, dates=dates)
        later = ~pd.to_datetime(inp.commitments["purchase_date"]).eq(pd.Timestamp(start)).to_numpy()
        # later purchases are re-decided at their own cut-off: planned as fractions (an LP in them), so only
        # today's are whole instances (a MILP of a few columns, not hundreds)
        inp = replace(inp, commitments=inp.commitments.assign(integer=inp.commitments["integer"].to_numpy(bool) & ~later))
        bought = make_plan(inp, settings.options, risk=False).purchases
        today = pd.to_datetime(bought["purchase_date"]).eq(pd.Timestamp(start)).to_numpy()
        return inp, np.where(today, bought["units"].to_numpy(float), 0.0), len(prob)
    on_order = _on_order(base, owned, start)
    if strategy == "percentile_fleet":
        return inp, percentile_fleet(inp, point, on_order), 1
    if strategy == "recommender":
        lookback = s.lookback or int(round(DEFAULT_LOOKBACK_HOURS / s.period_hours))
        usage = seen[:, -lookback:]  # as much of it as there is
        return inp, recommender(inp, usage, np.full(usage.shape[1], s.period_hours), on_order), 1
    raise ValueError(f"unknown strategy {strategy!r}: expected one of {', '.join(STRATEGIES + OPTIONAL)}")


def _rule(strategy: str, inp: PlanInputs, seen: np.ndarray, on_order: np.ndarray, s: Settings) -> np.ndarray:
    """The spot-aware rule (weekly, on the last 7 days) or the coverage ladder (quarterly, on the lookback's
    trailing minimum) at the cut-off after ``seen``; nothing at the cut-offs where the rule does not run."""
    owned = owned_now(inp, on_order)
    c = seen.shape[1]
    if strategy == "spot_aware":
        if not rules.acts(c, s.train, s.every(rules.WEEK_HOURS), s.step):
            return np.zeros(len(inp.commitments))
        return rules.spot_aware(inp, seen[:, -s.every(rules.WEEK_HOURS):], owned)
    if not rules.acts(c, s.train, s.every(rules.QUARTER_HOURS), s.step):
        return np.zeros(len(inp.commitments))
    lookback = s.lookback or s.every(DEFAULT_LOOKBACK_HOURS)
    return rules.coverage_ladder(inp, seen[:, -lookback:], owned, s.ladder_share)


class ForecasterError(ValueError):
    """The forecaster raised or returned something unusable (a user's mistake: exit 2)."""


def _name(spec) -> str:
    return repr(spec) if isinstance(spec, str) else getattr(spec, "__name__", repr(spec))


def _failure(exc: Exception) -> str:
    return str(exc) if isinstance(exc, fc_mod.ForecastError) else f"{type(exc).__name__}: {exc}"


def _on_order(base: PlanInputs, owned: pd.DataFrame, start) -> np.ndarray:
    """Per pool: GPUs of earlier purchases (and the inventory file) not expired at ``start``, active or not yet."""
    out = np.zeros(base.P)
    pool = {k: i for i, k in enumerate(zip(base.pools["gpu_type"], base.pools["region"]))}
    for frame in (owned, base.tables.inventory):
        if frame is None or not len(frame):
            continue
        live = frame[pd.to_datetime(frame["end"]) > pd.Timestamp(start)]
        for r in live.itertuples():
            if (r.gpu_type, r.region) in pool:
                out[pool[(r.gpu_type, r.region)]] += float(r.gpus)
    return out


def _bought(inp: PlanInputs, n: np.ndarray, window: int) -> pd.DataFrame:
    """The rows of ``inp.commitments`` bought (n > 0), as dated inventory for the windows after."""
    res = inp.commitments.assign(instances=n, gpus=n * inp.commitments["m"].to_numpy(float), window=window)
    res = res[res["instances"] > 0]
    return res[["window", "pool", "gpu_type", "region", "option", "purchase_date", "active_from", "end_date",
                "instances", "gpus", "block_start"]].rename(columns={"active_from": "start", "end_date": "end"})


def run_chain(base: PlanInputs, strategy: str, settings: Settings, make_plan) -> tuple[pd.DataFrame, list[int]]:
    """One strategy over every cut-off in order; its purchases (one row per window and option) and scenario counts."""
    history = base.demand[0]
    settings = replace(settings, forecaster=fc_mod.resolve(settings.forecaster)) if isinstance(
        settings.forecaster, str) else settings  # a forecaster file is loaded once per chain
    frames, scenarios = [], []
    owned = pd.DataFrame(columns=["gpu_type", "region", "gpus", "start", "end"])
    for w, c in enumerate(settings.decisions(base.T)):  # later cut-offs only judge: nothing is bought there
        seen = history[:, :c]  # no look-ahead: nothing after the cut-off reaches the decision
        inp, n, count = decide(strategy, base, seen, base.periods[c], owned, settings, make_plan)
        bought = _bought(inp, n, w)
        frames.append(bought)
        scenarios.append(count)
        owned = pd.concat([owned, bought[["gpu_type", "region", "gpus", "start", "end"]]], ignore_index=True)
    cols = ["window", "pool", "gpu_type", "region", "option", "purchase_date", "start", "end", "instances", "gpus",
            "block_start"]
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)
    return out, scenarios


# ---------------------------------------------------------------- the whole period, realised

def whole_period(base: PlanInputs, settings: Settings) -> PlanInputs:
    """The test period (first cut-off to the last window's end) with purchases dated at every cut-off that buys."""
    from planner.inputs.commitments import without_exits

    cuts = settings.cutoffs(base.T)
    index = np.arange(cuts[0], cuts[-1] + settings.test)
    # a backtest offers no resale (its cut-offs re-decide purchases; a resale would be hindsight's alone)
    return without_exits(slice_periods(base, index, purchase_dates=settings.decisions(base.T) - cuts[0]))


def fixed_instances(whole: PlanInputs, bought: pd.DataFrame) -> np.ndarray:
    """Instances per row of ``whole.commitments`` (purchase rows dated at the cut-offs) from a chain's purchases."""
    n = np.zeros(len(whole.commitments))
    if not len(bought):
        return n
    res = whole.commitments
    # a term is told apart by its purchase date (the cut-off), a capacity block by its window (any cut-off
    # may buy it, and two offers of one pool differ only there)
    starts = res["block_start"]
    index = {(int(p), o, pd.Timestamp(b) if pd.notna(b) else int(d)): i
             for i, (p, o, d, b) in enumerate(zip(res["pool"], res["option"], res["date_index"], starts))}
    for row in bought.itertuples():
        b = getattr(row, "block_start", pd.NaT)
        n[index[(int(row.pool), row.option, pd.Timestamp(b) if pd.notna(b) else int(row.window))]] += row.instances
    return n


def period_costs(plan) -> pd.DataFrame:
    """Per period of a single-scenario plan: reserved (amortised), on-demand, spot, total, shortfall and SLO-hours.

    SLO-hours missed: the period's hours when the plan's fleet, latency-bound classes (those that may not use
    spot, every SLO-sized class included) served first, cannot meet their demand (:func:`slo_hours_missed`).
    """
    from planner.results.bill import purchase_cost_by_period
    from planner.results.plan import fleet_prices

    inp = plan.inputs
    reserved = purchase_cost_by_period(plan).sum(axis=0)
    fleet = plan.fleet[plan.fleet["scenario"] == inp.scenarios[0]]
    kinds = rented.reported(inp.pools)  # on-demand, spot, and any other rented kind sold (flex-start)
    usd = {kd: fleet[kd].to_numpy() * fleet_prices(inp, fleet, kd) * fleet["hours"].to_numpy() for kd in kinds}
    by_period = pd.DataFrame({"period": fleet["period"].to_numpy(), **usd}).groupby("period").sum()
    out = pd.DataFrame(index=inp.periods)
    out["reserved"] = reserved
    for kd in kinds:
        out[kd] = by_period[kd].reindex(inp.periods).fillna(0.0).to_numpy()
    out["total"] = out[["reserved", *kinds]].sum(axis=1)
    short = plan.shortfall
    out["shortfall_gpu_hours"] = 0.0
    out["slo_hours_missed"] = 0.0
    out["penalty"] = 0.0
    if len(short):
        out["shortfall_gpu_hours"] = short.groupby("period")["unmet_gpu_hours"].sum().reindex(inp.periods).fillna(0.0)
        out["slo_hours_missed"] = slo_hours_missed(plan)
        rate = pd.Series(inp.penalty_by_class, index=inp.classes)  # each class's shortfall at its own penalty
        charged = short["unmet_gpu_hours"].to_numpy(float) * rate.reindex(short["workload_class"]).to_numpy(float)
        out["penalty"] = pd.Series(charged).groupby(short["period"].to_numpy()).sum().reindex(
            inp.periods).fillna(0.0).to_numpy()
    out["objective"] = out["total"] + out["penalty"]
    out["hours_over_latency_slo"] = hours_over_latency_slo(plan)
    useful, paid = spot_goodput_hours(plan)
    out["spot_useful_gpu_hours"], out["spot_gpu_hours"] = useful, paid
    return out


def hours_over_latency_slo(plan) -> np.ndarray:
    """Per period of a single-scenario plan: its hours when a requests-per-second class's latency at its
    percentile, from the queue of the replicas the plan gives it (M/M/c, ``plan.latency``), is over its SLO."""
    inp = plan.inputs
    lat = plan.latency
    if lat is None or not len(lat):
        return np.zeros(inp.T)
    lat = lat[lat["scenario"] == inp.scenarios[0]]
    over = lat.loc[~lat["slo_met"].astype(bool), "period"].unique()
    return np.where(inp.periods.isin(pd.DatetimeIndex(over)), inp.hours, 0.0)


def spot_goodput_hours(plan) -> tuple[np.ndarray, np.ndarray]:
    """Per period of a single-scenario plan: the spot GPU-hours paid and the useful ones among them (each class's
    goodput on its pool: the work left after preemptions, checkpoints and restarts)."""
    inp = plan.inputs
    a = plan.allocation_positions
    a = a[(a["option"] == "spot") & (a["scenario"] == inp.scenarios[0])]
    if not len(a):
        return np.zeros(inp.T), np.zeros(inp.T)
    g = inp.goodput[a["_k"].to_numpy(int), a["_p"].to_numpy(int)]
    t = a["_t"].to_numpy(int)
    hours = a["gpu_hours"].to_numpy(float)
    return (np.bincount(t, weights=hours * g, minlength=inp.T), np.bincount(t, weights=hours, minlength=inp.T))


def slo_hours_missed(plan) -> np.ndarray:
    """Per period of a single-scenario plan: its hours when the plan's fleet, latency-bound classes served
    first, cannot meet every latency-bound class's demand (with headroom) in full; else 0.

    Latency-bound: a class that may not use spot. The solver charges every class's shortfall the same penalty,
    so which class it leaves short is its tie-break (it followed the order of the classes in the model file).
    This rule does not ask the solver: where a latency-bound class is short, the period's reserved GPUs (owned)
    and on-demand GPUs (bought) of every pool are given to the latency-bound classes first (an LP over the
    pools each may use, with its useful share and speed), and the period counts only when even that leaves
    one of them short.
    """
    inp = plan.inputs
    missed = np.zeros(inp.T)
    bound = np.flatnonzero(np.asarray(inp.spot_share) <= 0)
    short = plan.shortfall
    if not len(bound) or not len(short):
        return missed
    names = set(np.asarray(inp.classes)[bound])
    periods = pd.DatetimeIndex(short.loc[short["workload_class"].isin(names), "period"].unique())
    if not len(periods):
        return missed
    fleet = plan.fleet[plan.fleet["scenario"] == inp.scenarios[0]]
    pool = {key: i for i, key in enumerate(zip(inp.pools["gpu_type"], inp.pools["region"]))}
    fleet = fleet.assign(_p=[pool[k] for k in zip(fleet["gpu_type"], fleet["region"])])
    where = {t: i for i, t in enumerate(inp.periods)}
    has_od = inp.pools["has_od"].to_numpy(bool) if "has_od" in inp.pools else np.ones(inp.P, bool)
    useful = {"reserved_owned": inp.q_reserved[bound],
              "on_demand": (inp.speed * inp.reliability)[bound] * has_od[None, :]}
    for t, rows in fleet[fleet["period"].isin(periods)].groupby("period"):
        i = where[pd.Timestamp(t)]
        need = (1.0 + inp.headroom[bound]) * inp.demand[0][bound, i]
        capacity = {col: np.zeros(inp.P) for col in useful}
        for col in useful:
            np.add.at(capacity[col], rows["_p"].to_numpy(int), rows[col].to_numpy(float))
        if _served_first(need, useful, capacity) < need.sum() - 1e-6 * max(1.0, need.sum()):
            missed[i] = inp.hours[i]
    return missed


def _served_first(need: np.ndarray, useful: dict, capacity: dict) -> float:
    """The most of ``need`` (per latency-bound class) the GPUs in ``capacity`` (per position and pool) can serve,
    a GPU of position j in pool p serving ``useful[j][k, p]`` of class k (a small LP)."""
    from scipy.optimize import linprog

    alone = np.minimum(need, sum(useful[j] @ capacity[j] for j in useful))  # each class with the whole fleet
    if len(need) == 1 or alone.sum() < need.sum() - 1e-6 * max(1.0, need.sum()):
        return float(alone.sum())  # exact for one class; for several, a bound already short of the need
    terms = [(k, p, j) for j in useful for k in range(len(need)) for p in range(len(capacity[j]))
             if useful[j][k, p] > 0 and capacity[j][p] > 0]
    K, W = len(need), len(terms)
    # variables: served s_k (K), then w_term (W); maximise sum s_k
    c = np.r_[-np.ones(K), np.zeros(W)]
    slots = {(j, p): n for n, (j, p) in enumerate(dict.fromkeys((j, p) for _, p, j in terms))}
    a = np.zeros((K + len(slots), K + W))
    b = np.zeros(K + len(slots))
    a[np.arange(K), np.arange(K)] = 1.0  # s_k - sum useful w <= 0
    for n, (k, p, j) in enumerate(terms):
        a[k, K + n] = -useful[j][k, p]
        a[K + slots[(j, p)], K + n] = 1.0  # sum_k w <= capacity
    for (j, p), n in slots.items():
        b[K + n] = capacity[j][p]
    res = linprog(c, A_ub=a, b_ub=b, bounds=[(0, float(x)) for x in need] + [(0, None)] * W, method="highs")
    return float(-res.fun) if res.status == 0 else 0.0


# ---------------------------------------------------------------- running it

_STATE: dict = {}  # per worker: the history, the settings and the solve function shared by every task


def _init_worker(history: PlanInputs, settings: Settings, make_plan) -> None:
    _STATE.update(history=history, settings=settings, make_plan=make_plan)


def _checked(plan, what: str):
    """The plan, or SolverError when the solver found none (never a $0 plan that looks like one)."""
    if not plan.status.has_plan:
        from planner.core.errors import SolverError

        raise SolverError(f"{what}: the solver found no plan ({plan.status.value}"
                          + (f": {plan.solve.message}" if plan.solve.message else "") + ")")
    return plan


def _run_task(task: str) -> dict:
    base, settings, make_plan = _STATE["history"], _STATE["settings"], _STATE["make_plan"]
    whole = whole_period(base, settings)
    dates = whole.periods[settings.decisions(base.T) - settings.cutoffs(base.T)[0]]
    if task in ("hindsight", "hindsight_full_term"):
        what = "the hindsight plan" + (" (full term)" if task == "hindsight_full_term" else "")
        plan = _checked(make_plan(term.full_term_inputs(whole) if task == "hindsight_full_term" else whole,
                                  settings.options, risk=False), what)
        bought = plan.purchases[plan.purchases["instances"] > 0]
        return {"costs": period_costs(plan), "purchases": bought.assign(liability_usd=term.liability_usd(bought)),
                **_signed(plan, dates), "status": plan.status.value, "gap": plan.solve.mip_gap}
    bought, scenarios = run_chain(base, task, settings, make_plan)
    plan = _checked(make_plan(whole, settings.options, fixed_reserved=fixed_instances(whole, bought), risk=False),
                    f"{task}'s purchases on the demand that came")
    return {"costs": period_costs(plan), "bought": bought, "scenarios": scenarios, "status": plan.status.value,
            "gap": plan.solve.mip_gap, **_signed(plan, dates)}


def _signed(plan, dates) -> dict:
    signed, past = term.by_date(plan, dates)
    return {"liabilities": signed, "past_span": past}


def backtest(history: PlanInputs, train_periods: int, test_periods: int, make_plan,
             step_periods: int | None = None, horizon_periods: int | None = None, forecaster="weekly",
             origins: int = 7, lookback_periods: int | None = None, strategies=STRATEGIES,
             executor=None, progress: bool = False, decide_periods: int | None = None,
             ladder_share: float = rules.LADDER_SHARE, seed: int = 0,
             multipliers=stats.MULTIPLIERS, options=None) -> BacktestResult:
    """Roll the strategies over a single-scenario demand history; see the module docstring.

    ``make_plan`` (``planner.make_plan``, called as ``make_plan(inp, options, **overrides)`` with ``options`` a
    :class:`planner.core.options.PlanOptions`: solver, limits; a ``functools.partial`` of keywords still works) and
    ``forecaster`` must be picklable (module-level functions) when ``executor`` runs processes. Windows of one strategy
    run in order; strategies and the hindsight plan run on ``executor`` (default: here, one by one).
    """
    from planner.core.errors import SolverError
    from planner.core.executors import fork_context, LocalExecutor

    base = replace(history, config=replace(history.config, commitments=replace(
        history.config.commitments, accounting="amortised")))
    period_hours = float(np.median(history.hours)) if history.T else 1.0
    settings = Settings(train=int(train_periods), test=int(test_periods), step=int(step_periods or test_periods),
                        horizon=int(horizon_periods or train_periods), period_hours=period_hours,
                        forecaster=forecaster, origins=int(origins), lookback=lookback_periods,
                        strategies=tuple(strategies), forecaster_label=_name(forecaster),
                        decide=None if decide_periods is None else int(decide_periods),
                        ladder_share=float(ladder_share), seed=int(seed), multipliers=tuple(multipliers),
                        options=options)
    settings = replace(settings, strategies=tuple(dict.fromkeys(settings.strategies)))
    unknown = [s for s in settings.strategies if s not in STRATEGIES + OPTIONAL]
    if unknown:
        raise ValueError(f"unknown strategies {unknown}: expected some of {', '.join(STRATEGIES + OPTIONAL)}")
    cuts = settings.cutoffs(base.T)
    if not len(cuts):
        raise ValueError(f"history too short: {base.T} periods for {settings.train} + {settings.test}")
    if any(s in FORECASTING for s in settings.strategies):  # a bad forecaster fails here, before any solve
        try:  # in a child process where it can be forked: a forecaster that ends its process is reported too
            fc_mod.run_isolated(fc_mod.resolve(forecaster), slo.requests_seen(base, base.demand[0][:, :cuts[0]]),
                                settings.horizon,
                                settings.period_hours, base.classes)
        except Exception as exc:
            raise ForecasterError(f"the forecaster {_name(forecaster)} failed at the first cut-off "
                                  f"{base.periods[cuts[0]]}: {_failure(exc)}") from None
    tasks = ["hindsight"] + (["hindsight_full_term"] if not term.terms_inside(whole_period(base, settings))
                             else []) + list(settings.strategies)
    executor = executor or LocalExecutor(1)
    own = not (isinstance(forecaster, str) and forecaster in fc_mod.FORECASTERS)
    if own and isinstance(executor, LocalExecutor) and executor.workers == 1 and not executor.isolate \
            and fork_context() is not None:  # a forecaster of one's own may end its process: not this one
        executor = LocalExecutor(1, isolate=True)
    outcomes = executor.map(
        _run_task, tasks, initializer=_init_worker, initargs=(base, settings, make_plan), progress=progress,
        describe=lambda o: f"{tasks[o.index]}" + ("" if o.ok else f": FAILED {o.error}"))
    failed = [f"{tasks[o.index]}: {o.error}" for o in outcomes if not o.ok]
    forecast_failed = [o.error for o in outcomes if not o.ok and "ForecasterError" in str(o.error)]
    if forecast_failed:
        raise ForecasterError(str(forecast_failed[0]).split("ForecasterError: ", 1)[-1])
    if failed:
        died = own and any("worker process died" in f for f in failed)
        raise SolverError("backtest stopped: " + "; ".join(failed) + (
            f" (the forecaster {settings.forecaster_label} may have ended its process: a forecaster must "
            "return its forecast)" if died else ""))
    got = {t: o.value for t, o in zip(tasks, outcomes)}
    return _assemble(base, settings, cuts, got)


def _assemble(base: PlanInputs, settings: Settings, cuts: np.ndarray, got: dict) -> BacktestResult:
    """Per-window, per-strategy and per-month tables from the hindsight and every strategy's period costs."""
    hind = got["hindsight"]["costs"]
    full_hind = got.get("hindsight_full_term", got["hindsight"])
    start0 = cuts[0]
    starts = cuts - start0
    hind_w = term.window_costs(full_hind["costs"], full_hind["past_span"], starts, settings.test)
    rows, buys, months, summary = [], [], [], []
    hind_month = hind["total"].groupby(hind.index.to_period("M")).sum()
    months.append(pd.DataFrame({"month": hind_month.index.astype(str), "strategy": "hindsight",
                                "cost_usd": hind_month.to_numpy()}))
    hind_obj = float(hind["objective"].sum())
    hind_full = _full_total(full_hind)
    covered, full_note = term.full_term_covered(base, settings, cuts)
    regrets: dict = {}
    for name in settings.strategies:
        costs, bought, scen = got[name]["costs"], got[name]["bought"], got[name]["scenarios"]
        mine_w = term.window_costs(costs, got[name]["past_span"], starts, settings.test)
        signed = np.zeros(len(cuts))
        signed[:len(got[name]["liabilities"])] = got[name]["liabilities"]
        window_regret = []
        for w, c in enumerate(cuts):
            sl = slice(c - start0, c - start0 + settings.test)
            mine, best = costs.iloc[sl], hind.iloc[sl]
            b = bought[bought["window"] == w]
            regret = float(mine["objective"].sum() - best["objective"].sum())
            pct = 100 * regret / float(best["objective"].sum()) if best["objective"].sum() > 0 else None
            window_regret.append(pct)
            end = base.periods[c + settings.test - 1] + pd.Timedelta(hours=float(base.hours[c + settings.test - 1]))
            full_regret = float(mine_w["full_term_objective_usd"].iat[w] - hind_w["full_term_objective_usd"].iat[w])
            rows.append({
                "window": w, "train_start": base.periods[0].isoformat(), "test_start": base.periods[c].isoformat(),
                "test_end": end.isoformat(), "strategy": name,
                "purchases": [{"gpu_type": r.gpu_type, "region": r.region, "option": r.option,
                               "purchase_date": pd.Timestamp(r.purchase_date).isoformat(), "gpus": float(r.gpus),
                               "instances": int(r.instances)} for r in b.itertuples()],
                "gpus_bought": float(b["gpus"].sum()),
                "realised_cost_usd": float(mine["total"].sum()),
                "realised_objective_usd": float(mine["objective"].sum()),
                "hindsight_cost_usd": float(best["total"].sum()),
                "hindsight_objective_usd": float(best["objective"].sum()),
                "regret_usd": regret, "regret_pct": pct,
                "signed_usd": float(signed[w]),
                "full_term_objective_usd": float(mine_w["full_term_objective_usd"].iat[w]),
                "hindsight_full_term_objective_usd": float(hind_w["full_term_objective_usd"].iat[w]),
                "full_term_regret_usd": full_regret,
                "shortfall_gpu_hours": float(mine["shortfall_gpu_hours"].sum()),
                "slo_hours_missed": float(mine["slo_hours_missed"].sum()),
                "hours_over_latency_slo": float(mine["hours_over_latency_slo"].sum()),
                "spot_goodput": _ratio(mine["spot_useful_gpu_hours"].sum(), mine["spot_gpu_hours"].sum()),
                "scenarios": int(scen[w]) if w < len(scen) else 0})
        buys.append(bought.assign(strategy=name))
        month = costs["total"].groupby(costs.index.to_period("M")).sum()
        months.append(pd.DataFrame({"month": month.index.astype(str), "strategy": name, "cost_usd": month.to_numpy()}))
        total_obj = float(costs["objective"].sum())
        full_obj = _full_total(got[name])
        known = [x for x in window_regret if x is not None]
        regrets[name] = window_regret
        summary.append({
            "strategy": name, "mean_regret_pct": float(np.mean(known)) if known else None,
            "mean_regret_ci90": stats.mean_ci(known, seed=settings.seed),
            "total_regret_pct": 100 * (total_obj - hind_obj) / hind_obj if hind_obj > 0 else None,
            "full_term_regret_pct": 100 * (full_obj - hind_full) / hind_full if hind_full > 0 else None,
            "full_term_regret_ci90": stats.ratio_ci(
                mine_w["full_term_objective_usd"] - hind_w["full_term_objective_usd"],
                hind_w["full_term_objective_usd"], seed=settings.seed),
            "status": got[name]["status"],
            "total_cost_usd": float(costs["total"].sum()), "total_objective_usd": total_obj,
            "full_term_cost_usd": _full_total(got[name], objective=False), "full_term_objective_usd": full_obj,
            "signed_usd": float(np.sum(got[name]["liabilities"])),
            "reserved_usd": float(costs["reserved"].sum()), "on_demand_usd": float(costs["on_demand"].sum()),
            "spot_usd": float(costs["spot"].sum()),
            "shortfall_gpu_hours": float(costs["shortfall_gpu_hours"].sum()),
            "slo_hours_missed": float(costs["slo_hours_missed"].sum()),
            "hours_over_latency_slo": float(costs["hours_over_latency_slo"].sum()),
            "spot_goodput": _ratio(costs["spot_useful_gpu_hours"].sum(), costs["spot_gpu_hours"].sum()),
            "gpus_bought": float(bought["gpus"].sum())})
    table = pd.DataFrame(summary)
    if len(table) and not covered:  # full-term regret where the trace covers decisions + the longest term only
        table["full_term_regret_pct"] = None
        table["full_term_regret_ci90"] = None
    if len(table):
        table["full_term_note"] = None if covered else full_note
        table["vs_rule"] = [_vs_rule(regrets, n, settings.seed) for n in table["strategy"]]
    ranks = stats.rerank(table, float(np.nanmax(base.pools["od"].to_numpy(float))), settings.multipliers) \
        if len(table) else pd.DataFrame()
    purchases = pd.concat(buys, ignore_index=True) if buys else pd.DataFrame()
    hs = got["hindsight"]
    hindsight = {"status": hs["status"], "mip_gap": hs["gap"], "purchases": _purchase_records(hs["purchases"]),
                 "full_term": {"total_usd": _full_total(full_hind, objective=False), "objective_usd": hind_full,
                               "signed_usd": float(np.sum(full_hind["liabilities"])),
                               "solved_apart": "hindsight_full_term" in got,
                               "purchases": _purchase_records(full_hind["purchases"])}}
    return BacktestResult(windows=pd.DataFrame(rows), strategies=table,
                          monthly=pd.concat(months, ignore_index=True), purchases=purchases,
                          hindsight_total_usd=float(hind["total"].sum()),
                          hindsight_objective_usd=hind_obj, settings=settings,
                          notes=_notes(base, settings, rows, got), hindsight_status=hs["status"],
                          hindsight_gap=hs["gap"], hindsight=hindsight, penalty_ranks=ranks)


def _ratio(num: float, den: float) -> float | None:
    """num / den, or None where nothing was paid (no spot GPU-hours)."""
    return float(num) / float(den) if den > 0 else None


def _vs_rule(regrets: dict, name: str, seed: int) -> dict | None:
    """A strategy's regret minus the spot-aware rule's, paired per window (points of regret %), with the mean's
    90 % bootstrap interval: negative is better than the rule. None when the rule was not run."""
    if RULE not in regrets:
        return None
    pairs = [a - b for a, b in zip(regrets[name], regrets[RULE]) if a is not None and b is not None]
    if not pairs:
        return {"rule": RULE, "mean_points": None, "ci90": None, "windows": 0}
    ci = stats.mean_ci(pairs, seed=seed)
    return {"rule": RULE, "mean_points": float(np.mean(pairs)), "ci90": list(ci) if ci is not None else None,
            "windows": len(pairs)}


def _full_total(task: dict, objective: bool = True) -> float:
    """A plan's full-term figure over the span: its in-span cost (or objective) plus what falls past the span of
    every liability it signed (= on-demand + spot (+ penalty) + the liabilities whole)."""
    c = task["costs"]
    return float(c["objective" if objective else "total"].sum() + np.sum(task["past_span"]))


def _purchase_records(bought: pd.DataFrame) -> list[dict]:
    """The hindsight's purchases as backtest.json lists them."""
    return [{"gpu_type": r.gpu_type, "region": r.region, "option": r.option,
             "purchase_date": pd.Timestamp(r.purchase_date).isoformat(), "gpus": float(r.gpus),
             "instances": int(r.instances), "liability_usd": float(r.liability_usd)} for r in bought.itertuples()]


def _notes(base: PlanInputs, settings: Settings, rows: list, got: dict) -> list[str]:
    notes = ["in-span figures charge a commitment its effective rate for the hours it is active in the test period "
             "(the model file's accounting is not used here); full-term figures charge it its whole liability "
             "(hourly x term + upfront - residual) on the day it is signed, the hindsight likewise"]
    if "hindsight_full_term" in got:
        notes.append("terms run past the end of the span: the full-term hindsight is a plan of its own (every "
                     "commitment charged whole), so a strategy's full-term regret counts what it signed beyond what "
                     "the span's demand pays for")
    undefined = sum(1 for r in rows if r["regret_pct"] is None)
    if undefined:
        notes.append(f"{undefined} window row(s) have no regret % (the hindsight plan costs nothing there); "
                     "their regret_usd is given")
    lead = base.options["lead_time_months"].max() * 730.0 if base.options is not None and \
        "lead_time_months" in base.options and len(base.options) else 0.0
    if lead >= settings.horizon * settings.period_hours:
        notes.append(f"the planner's horizon ({settings.horizon * settings.period_hours:g} h) is no longer than the "
                     f"longest lead time ({lead:g} h): point and stochastic plans cannot see a purchase pay")
    hs = got["hindsight"]
    if hs["status"] != "optimal":
        notes.append(f"the hindsight plan is {hs['status']} (gap {hs['gap']}), not proven optimal: regrets are "
                     "upper bounds")
    if "stochastic" in settings.strategies:
        single = sum(1 for r in rows if r["strategy"] == "stochastic" and r["scenarios"] == 1)
        if single:
            why = "less than three weeks of history to learn the level's drift" if \
                settings.horizon * settings.period_hours >= LONG_HORIZON_HOURS else \
                "fewer than two past forecasts to learn the error"
            notes.append(f"stochastic: {single} window(s) had {why} from and planned on the point forecast alone")
    decided = len(settings.decisions(base.T))
    if decided < len(settings.cutoffs(base.T)):
        notes.append(f"purchases at the first {decided} cut-offs only (--decide-hours); the later windows judge "
                     "what was bought")
    return notes


def backtest_hours(history: PlanInputs, train_hours: float, test_hours: float, step_hours: float | None = None,
                   *, horizon_hours: float | None = None, backend: str | None = None, executor=None,
                   progress: bool = False, source: str = "demand", **options) -> BacktestResult:
    """:func:`backtest` with lengths in hours; a history too short or with scenarios is an InputError."""
    from planner.core.errors import InputError, Problem
    from planner.core.options import PlanOptions
    from planner.pipeline.run import make_plan

    if len(history.scenarios) > 1:
        if not np.array_equal(history.demand, np.broadcast_to(history.demand[:1], history.demand.shape),
                              equal_nan=True):  # the scenarios' demands differ: the file gives several histories
            raise InputError(Problem(source, "a backtest needs one demand history, not scenarios", column="scenario"))
        if not history.config.scenarios:  # the demand file's scenario column names them, the model does not
            raise InputError(Problem(source, f"a backtest needs one demand history; the file's scenario column gives "
                                     f"{len(history.scenarios)} ({', '.join(map(str, history.scenarios))}), each the "
                                     "same", column="scenario",
                                     hint="drop the scenario column (or keep one scenario's rows)"))
        raise InputError(Problem(str(history.config.path or "model file"), f"a backtest needs one scenario; the "
                                 f"model's [scenarios] gives "
                                 f"{len(history.scenarios)} ({', '.join(map(str, history.scenarios))}: price paths "
                                 "or weights)", hint="backtest a copy of the model without [scenarios]"))
    step = float(np.median(history.hours))
    if not np.allclose(history.hours, step):
        raise InputError(Problem(source, "a backtest needs periods of one length",
                                 value=f"{history.hours.min():g} to {history.hours.max():g} h", column="hours"))
    gaps = np.flatnonzero(np.diff(history.periods.asi8) != int(round(step * 3600e9)))
    if len(gaps):
        raise InputError(Problem(source, "a backtest needs contiguous periods (each starting where the last ends)",
                                 column="period", value=str(history.periods[gaps[0] + 1]),
                                 expected=f"{history.periods[gaps[0]] + pd.Timedelta(hours=step)}",
                                 hint="fill the missing periods (0 GPUs where nothing ran)"))
    opts = history.options
    if opts is not None and "guarantees_capacity" in opts and not opts["guarantees_capacity"].astype(bool).all():
        raise InputError(Problem(str(history.config.prices or "price sheet"),
                                 "backtests do not carry discount-only commitments yet (guarantees_capacity = false: "
                                 "bought at one cut-off they would not count against the on-demand cap at the next)",
                                 column="guarantees_capacity", value="false",
                                 hint="backtest with those rows as ordinary reservations, or without them"))
    if opts is not None and "kind" in opts and commitments.is_spend(opts).any():
        raise InputError(Problem(str(history.config.prices or "price sheet"),
                                 "backtests do not carry savings plans yet (a dollar commitment bought at one cut-off "
                                 "is not yet inventory at the next)", column="option",
                                 value=", ".join(sorted(set(opts.loc[commitments.is_spend(opts), "option"]))),
                                 hint="backtest with a price sheet without the savings_plan_* rows"))
    horizon = horizon_hours or train_hours
    if horizon > 3 * 8760:
        raise InputError(Problem("--horizon-hours", "out of range", value=horizon,
                                 expected="at most 26,280 hours (three years)"))
    train, test = int(round(train_hours / step)), int(round(test_hours / step))
    if train < 1 or test < 1 or train + test > history.T:
        raise InputError(Problem(source, f"history too short: {history.T} periods of {step:g} h for a "
                                 f"{train_hours:g} h + {test_hours:g} h window",
                                 hint="shorten --train-hours or --test-hours"))
    lookback = options.pop("lookback_hours", None)
    decide = options.pop("decide_hours", None)
    if decide is not None:
        options["decide_periods"] = max(1, int(round(decide / step)))
    share = options.get("ladder_share", rules.LADDER_SHARE)
    if not 0 < share <= 1:
        raise InputError(Problem("--ladder-share", "out of range", value=share, expected="a share above 0, at most 1"))
    bad = [m for m in options.get("multipliers", stats.MULTIPLIERS) if not (np.isfinite(m) and m > 0)]
    if bad:
        raise InputError(Problem("--penalty-multipliers", "out of range", value=bad[0],
                                 expected="positive multiples of the dearest on-demand price"))
    try:
        return backtest(history, train, test, make_plan, options=PlanOptions(backend=backend),
                        step_periods=max(1, int(round((step_hours or test_hours) / step))),
                        horizon_periods=max(1, int(round((horizon_hours or train_hours) / step))),
                        lookback_periods=None if lookback is None else max(1, int(round(lookback / step))),
                        executor=executor, progress=progress, **options)
    except ForecasterError as exc:
        raise InputError(Problem("--forecaster", str(exc))) from None


def write_backtest(result: BacktestResult, out_dir) -> dict:
    """backtest.csv (one row per window and strategy), backtest_monthly.csv and backtest.json, published
    together at the end (:func:`planner.core.atomic.publish_together`): the three of this run, or the previous
    three. backtest.json carries the run's ``run_id`` and ``created_utc``."""
    import json
    import uuid
    from datetime import datetime, timezone
    from pathlib import Path

    from planner.core.atomic import publish_together

    out_dir = Path(out_dir)
    flat = result.windows.assign(purchases=[
        "; ".join(f"{p['gpus']:g} {p['gpu_type']}/{p['region']}/{p['option']}" for p in bought)
        for bought in result.windows["purchases"]])
    doc = {"run_id": uuid.uuid4().hex,
           "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")} | result.to_dict()
    found = publish_together(out_dir, {
        "backtest.csv": lambda path: flat.to_csv(path, index=False),
        "backtest_monthly.csv": lambda path: result.monthly.to_csv(path, index=False),
        "backtest.json": lambda path: path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")})
    return {"csv": found["backtest.csv"], "monthly": found["backtest_monthly.csv"], "json": found["backtest.json"]}
