"""The rented kinds as arrays indexed by kind: price, cap and useful share, one axis ``j`` over
:data:`planner.inputs.supply.RENTED` (on-demand, spot, flex-start, ...).

The model has one rented family ``r[j, k, p, b]`` over them (:mod:`planner.model.variables`); what a kind *does*
comes from the registry: its price and cap columns of the pool table (``pool_price``, ``pool_cap``), its useful
share (``useful_share``) and whether the spot-share limit or a savings plan applies to it.

Useful share of a paid GPU-hour of kind j for class k in pool p, ``useful[j, k, p]`` (reference GPUs):

- ``"reliability"`` (on-demand): s q, speed times the non-spot reliability;
- ``"goodput"`` (spot): s g, speed times the goodput left by preemptions (0 where the class may not use spot);
- ``"queued"`` (flex-start): s q L / (L + R): each grant runs at most ``max_run_hours`` L (DWS flex-start: 7
  days), then the job restarts from its checkpoint on a new grant (R, the class's ``restart_minutes``); 0 for a
  class without ``max_start_delay_hours``.

Queued capacity also serves only part of a class's demand: the requests whose queue ends within the class's
``max_start_delay_hours`` D. The queue time is lognormal through the pool's ``queue_hours_p50`` and
``queue_hours_p90``, so the share in time is ``in_time[k, p] = Phi((ln D - ln p50) / sigma)`` with
``sigma = (ln p90 - ln p50) / z_0.9`` (1 where the queue is always shorter; a queue of 0 hours: 1). A request
that is not granted in time is cancelled at no cost (DWS bills from the grant) and goes to another kind.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from planner.inputs import supply

KINDS: tuple[str, ...] = supply.RENTED  # the j axis
Z90 = 1.2815515655446004  # the standard normal's 90 % quantile
DEFAULT_RUN_HOURS = 168.0  # DWS flex-start: a grant runs up to seven days


ALWAYS: tuple[str, ...] = KINDS[:2]  # on-demand and spot: columns of every plan's fleet, costs and cash (contracts)


def reported(pools: pd.DataFrame) -> tuple[str, ...]:
    """The rented kinds a plan reports: on-demand and spot always, any other kind where a pool sells it."""
    sold = ~np.isnan(price(pools)).all(axis=1) if len(pools) else np.zeros(len(KINDS), bool)
    return tuple(k for j, k in enumerate(KINDS) if k in ALWAYS or sold[j])


def phrase(pools: pd.DataFrame) -> str:
    """The rented kinds a plan may use, in words: "on-demand and spot", or "on-demand, spot and flex-start"."""
    words = [k.replace("_", "-") for k in reported(pools)]
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]


def index(kind: str) -> int:
    """The j of a rented kind."""
    return KINDS.index(kind)


def cap_family(kind: str) -> str:
    """The model's row family of rented kind ``kind``'s cap (``od_cap``, ``spot_cap``, ``flex_cap``)."""
    return supply.get(kind).cap_family


def price(pools: pd.DataFrame) -> np.ndarray:
    """(J, P) USD per GPU-hour of each rented kind in each pool (NaN: not sold there)."""
    return np.stack([_col(pools, supply.get(k).pool_price) for k in KINDS]) if len(pools) else np.zeros((len(KINDS), 0))


def cap(pools: pd.DataFrame) -> np.ndarray:
    """(J, P) the price sheet's cap on GPUs held at once (NaN: none)."""
    return np.stack([_col(pools, supply.get(k).pool_cap) for k in KINDS]) if len(pools) else np.zeros((len(KINDS), 0))


def _col(pools: pd.DataFrame, name: str) -> np.ndarray:
    return pools[name].to_numpy(float) if name in pools else np.full(len(pools), np.nan)


def in_time_share(p50: np.ndarray, p90: np.ndarray, tolerance: np.ndarray) -> np.ndarray:
    """(K, P) share of requests granted within each class's start-delay ``tolerance`` (K,) in each pool, from the
    pool's queue quantiles ``p50``/``p90`` (P,; NaN: the kind is not sold there, share 0). Lognormal through the
    two quantiles; a tolerance of NaN (the class does not wait) gives 0."""
    from statistics import NormalDist

    tol = np.asarray(tolerance, float)[:, None]
    p50, p90 = np.asarray(p50, float)[None, :], np.asarray(p90, float)[None, :]
    out = np.zeros(np.broadcast_shapes(tol.shape, p50.shape))
    cdf = np.vectorize(NormalDist().cdf, otypes=[float])
    sold, waits = ~np.isnan(p50) & ~np.isnan(p90), ~np.isnan(tol)
    ok = sold & waits
    instant = ok & (p90 <= 0)  # never queued
    out = np.where(instant, 1.0, out)
    point = ok & (p90 > 0) & (p90 <= p50 * (1 + 1e-12))  # one queue time: granted in time or not
    out = np.where(point, (p90 <= tol).astype(float), out)
    spread = ok & (p50 > 0) & (p90 > p50 * (1 + 1e-12))
    with np.errstate(divide="ignore", invalid="ignore"):
        sigma = (np.log(p90) - np.log(p50)) / Z90
        zz = (np.log(np.maximum(tol, 1e-300)) - np.log(p50)) / sigma
    out = np.where(spread, cdf(np.where(spread, zz, 0.0)), out)
    return out


def run_share(run_hours: np.ndarray, restart_hours: np.ndarray) -> np.ndarray:
    """(K, P) the share of a grant's hours that does work: L / (L + R)."""
    L = np.asarray(run_hours, float)[None, :]
    R = np.asarray(restart_hours, float)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(L > 0, L / (L + R), 0.0)


def useful(kind: str, speed: np.ndarray, reliability: np.ndarray, goodput: np.ndarray, pools: pd.DataFrame,
           config, classes: list[str]) -> np.ndarray:
    """(K, P) useful reference GPUs per paid GPU of ``kind`` (see the module's text)."""
    how = supply.get(kind).useful_share
    if how == "goodput":
        return speed * goodput
    base = speed * reliability
    if how == "queued":
        pol = [config.classes[c] for c in classes]
        waits = np.array([p.max_start_delay_hours is not None for p in pol])
        restart = np.array([p.restart_minutes / 60.0 for p in pol])
        run = _col(pools, f"{supply.get(kind).pool_price}_run_hours")
        run = np.where(np.isnan(run), DEFAULT_RUN_HOURS, run)
        return np.where(waits[:, None], base * run_share(run, restart), 0.0)
    return base


def in_time(kind: str, pools: pd.DataFrame, config, classes: list[str]) -> np.ndarray | None:
    """(K, P) the share of each class's demand kind ``kind`` may serve in each pool (None: all of it)."""
    if supply.get(kind).useful_share != "queued":
        return None
    tol = np.array([np.nan if config.classes[c].max_start_delay_hours is None
                    else float(config.classes[c].max_start_delay_hours) for c in classes])
    col = supply.get(kind).pool_price
    return in_time_share(_col(pools, f"{col}_p50"), _col(pools, f"{col}_p90"), tol)


def lognormal_p(p50: float, p90: float, tolerance: float) -> float:
    """One pool's share in time (a scalar check of :func:`in_time_share`)."""
    if p90 <= 0:
        return 1.0
    if p90 <= p50:
        return float(p90 <= tolerance)
    from statistics import NormalDist

    return NormalDist().cdf((math.log(tolerance) - math.log(p50)) / ((math.log(p90) - math.log(p50)) / Z90))
