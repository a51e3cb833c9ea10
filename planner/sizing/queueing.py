"""Latency-SLO sizing of inference replicas: M/M/c (Erlang C) on total latency. Pure functions.

A replica is one server of a first-come-first-served queue: Poisson arrivals at ``lam`` requests per
second, service time of mean ``S`` seconds (rate ``mu = 1/S``), ``c`` replicas, offered load
``a = lam * S`` (Erlangs). The latency of a request is its wait ``W`` plus its service time.

- Erlang B by the stable recursion ``B(0) = 1``, ``B(c) = a B(c-1) / (c + a B(c-1))`` (no factorials);
  Erlang C ``C(c, a) = c B / (c - a (1 - B))`` for ``c > a`` (the probability of waiting).
- Exponential service (``cv = 1``, exact M/M/c):
  ``P(W > x) = C exp(-theta x)``, ``theta = c mu - lam``, and
  ``P(T > t) = exp(-mu t) + C mu (exp(-theta t) - exp(-mu t)) / (mu - theta)``
  (``C mu t exp(-mu t)`` where ``theta = mu``).
- Other service-time coefficients of variation (``cv != 1``, M/G/c by Allen–Cunneen): the wait keeps
  its probability ``C`` and its mean is scaled by ``(ca^2 + cv^2) / 2`` with Poisson arrivals
  (``ca = 1``), so ``P(W > x) = C exp(-theta' x)``, ``theta' = theta * 2 / (1 + cv^2)``; the service
  time is Gamma with the same mean and ``cv`` (deterministic at ``cv = 0``), independent of the wait.
  This is an approximation (exact at ``c = 1`` for the mean only); the tests bound its error by
  simulation.

The replicas for an SLO are the smallest ``c > a`` with ``P(T > slo) <= 1 - percentile / 100``. No
number of replicas meets the target when the service time alone exceeds it:
``P(service > slo) > 1 - percentile / 100`` (exponential: ``slo < S ln(100 / (100 - percentile))``).

Percentiles are accepted up to ``MAX_PERCENTILE`` = 99.9999999 (a tail of 1e-9 of requests). A percentile
typed in decimal is rounded to the nearest double, up to 7.1e-15 away (half a unit in the last place at
64..128), so the tail ``1 - percentile / 100`` it stands for is known to ``7.1e-15 / (100 - percentile)``
relative: 7e-8 at the bound, 7e-5 at 99.9999999999, and the whole tail near 99.99999999999999.
"""

from __future__ import annotations

import math

import numpy as np

MAX_REPLICAS = 10_000_000
#: the highest SLO percentile computed reliably in floating point (a tail of 1e-9; see the module docstring)
MAX_PERCENTILE = 99.9999999
MIN_CV = 1e-6  # a coefficient of variation below this is deterministic service (cv = 0)


def _cv(cv: float) -> float:
    return 0.0 if cv < MIN_CV else float(cv)


def erlang_b(c: int, a: float) -> float:
    """Erlang B blocking probability of ``c`` servers at ``a`` Erlangs (stable recursion)."""
    b = 1.0
    for i in range(1, int(c) + 1):
        b = a * b / (i + a * b)
    return b


def erlang_c(c: int, a: float) -> float:
    """Erlang C: the probability that an arrival waits (1 where ``c <= a``: the queue is unstable)."""
    return float(erlang_c_array(np.array([int(c)]), np.array([float(a)]))[0])


def erlang_b_array(c, a) -> np.ndarray:
    """Erlang B for arrays: ``B(c, a) = P(N = c) / P(N <= c)``, ``N ~ Poisson(a)``, in logs (stable at any c).

    Equal to the recursion of :func:`erlang_b` (tests check it); used where counts reach thousands.
    """
    from scipy.special import gammaln, pdtr

    c, a = np.broadcast_arrays(np.asarray(c, float), np.asarray(a, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_pmf = np.where(a > 0, c * np.log(np.where(a > 0, a, 1.0)) - a - gammaln(c + 1), np.where(c == 0, 0.0, -np.inf))
        b = np.exp(log_pmf - np.log(pdtr(c, a)))
    return np.where(c <= 0, 1.0, np.clip(b, 0.0, 1.0))


def erlang_c_array(c, a) -> np.ndarray:
    """Erlang C for arrays of server counts and loads (1 where the queue is unstable, ``c <= a``)."""
    c, a = np.broadcast_arrays(np.asarray(c, np.int64), np.asarray(a, float))
    b = erlang_b_array(c, a)
    stable = c > a
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(stable, c * b / np.where(stable, c - a * (1.0 - b), 1.0), 1.0)


def _service_tail(t, service_s: float, cv: float):
    """P(service time > t): exponential at cv = 1, Gamma(1/cv^2, S cv^2) otherwise, a step at cv = 0."""
    cv = _cv(cv)
    t = np.asarray(t, float)
    if cv == 1.0:
        return np.exp(-t / service_s)
    if cv == 0.0:
        return (t < service_s).astype(float)
    from scipy.special import gammaincc

    k = 1.0 / cv ** 2
    return gammaincc(k, np.maximum(t, 0.0) / (service_s * cv ** 2))


def _tail(t, lam, service_s: float, c, erl_c, cv: float):
    """P(latency > t) given the Erlang C probability ``erl_c`` (arrays broadcast)."""
    cv = _cv(cv)
    t = np.asarray(t, float)
    lam = np.asarray(lam, float)
    c = np.asarray(c, float)
    mu = 1.0 / service_s
    theta = c * mu - lam
    if cv == 1.0:
        d = mu - theta
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            mix = np.where(np.abs(d) > 1e-12 * mu,
                           mu * (np.exp(-theta * t) - np.exp(-mu * t)) / np.where(d == 0, 1.0, d),
                           mu * t * np.exp(-mu * t))
        return np.clip(np.exp(-mu * t) + erl_c * mix, 0.0, 1.0)
    theta = theta * 2.0 / (1.0 + cv ** 2)
    if cv == 0.0:
        with np.errstate(over="ignore", invalid="ignore"):  # unstable entries (theta < 0) are masked by callers
            wait = erl_c * np.exp(-theta * np.maximum(t - service_s, 0.0))
        return np.clip(np.where(t < service_s, 1.0, wait), 0.0, 1.0)
    from scipy.special import gammainc

    k, beta = 1.0 / cv ** 2, service_s * cv ** 2
    # P(S + W > t) = P(S > t) + C exp(-theta t) E[exp(theta S); S <= t]
    shape = np.broadcast(t, theta, erl_c).shape
    t_b, th_b, c_b = (np.array(np.broadcast_to(x, shape), float).reshape(-1) for x in (t, theta, erl_c))
    out = np.empty(t_b.shape)
    rate_b = 1.0 / beta - th_b
    good = rate_b > 1e-9
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        closed = (_service_tail(t_b, service_s, cv)
                  + c_b * np.exp(-th_b * t_b) * np.where(good, beta * rate_b, 1.0) ** (-k)
                  * gammainc(k, np.where(good, t_b * rate_b, 0.0)))
    out[good] = closed[good]
    bad = np.flatnonzero(~good)
    if len(bad):  # the wait decays slower than the service density: sum exp(-th (t - s)) over the service
        # CDF's increments on a grid (a Stieltjes midpoint sum: exact increments, so the s^(k-1) density
        # at 0 needs no care, and no cancellation)
        u = np.linspace(0.0, 1.0, 1001)  # 1e-4 relative against adaptive quadrature (tests)
        mid = 0.5 * (u[1:] + u[:-1])
        for chunk in np.array_split(bad, max(1, len(bad) // 256)):
            tt, th = t_b[chunk][:, None], th_b[chunk][:, None]
            dF = np.diff(gammainc(k, tt * u[None, :] / beta), axis=1)
            conv = np.sum(dF * np.exp(-th * tt * (1.0 - mid[None, :])), axis=1)
            out[chunk] = _service_tail(t_b[chunk], service_s, cv) + c_b[chunk] * conv
    return np.clip(out, 0.0, 1.0).reshape(shape)


def p_latency_above(t_s, lam, service_s: float, replicas, cv: float = 1.0):
    """P(latency > ``t_s`` seconds) with ``replicas`` servers; 1 where the queue is unstable."""
    lam = np.asarray(lam, float)
    replicas = np.asarray(replicas)
    a = lam * service_s
    flat_c, flat_a = np.broadcast_arrays(replicas, a)
    erl = erlang_c_array(flat_c, flat_a)
    stable = flat_c > flat_a
    tail = _tail(t_s, lam, service_s, np.maximum(flat_c, 1), erl, cv)
    out = np.where(stable, tail, 1.0)
    return out if out.ndim else float(out)


def latency_percentile(percentile: float, lam, service_s: float, replicas, cv: float = 1.0):
    """Latency (seconds) at ``percentile`` with ``replicas`` servers (inf where unstable)."""
    lam = np.asarray(lam, float)
    replicas = np.asarray(replicas)
    target = 1.0 - percentile / 100.0
    flat_c, flat_l = np.broadcast_arrays(replicas, lam)
    a = flat_l * service_s
    erl = erlang_c_array(flat_c, a)
    stable = flat_c > a
    lo = np.zeros(flat_c.shape)
    hi = np.full(flat_c.shape, service_s)
    cc = np.maximum(flat_c, 1)
    for _ in range(200):  # grow the bracket until the tail is below target
        above = _tail(hi, flat_l, service_s, cc, erl, cv) > target
        if not (above & stable).any():
            break
        hi = np.where(above & stable, hi * 2.0, hi)
    for _ in range(50):  # the bracket shrinks 2^50-fold
        mid = 0.5 * (lo + hi)
        above = _tail(mid, flat_l, service_s, cc, erl, cv) > target
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    out = np.where(stable & (flat_l > 0), hi, np.where(flat_l > 0, np.inf, 0.0))
    idle = (flat_l <= 0) & (flat_c > 0)
    if idle.any():  # no queue: latency is the service time's percentile
        out = np.where(idle, _service_percentile(percentile, service_s, cv), out)
    return out if out.ndim else float(out)


def _service_percentile(percentile: float, service_s: float, cv: float) -> float:
    cv = _cv(cv)
    q = percentile / 100.0
    if cv == 1.0:
        return -service_s * math.log(1.0 - q)
    if cv == 0.0:
        return service_s
    from scipy.special import gammaincinv

    return float(gammaincinv(1.0 / cv ** 2, q) * service_s * cv ** 2)


def slo_feasible(service_s: float, slo_s: float, percentile: float, cv: float = 1.0) -> bool:
    """Whether some number of replicas meets the target: the service time alone must."""
    return float(_service_tail(slo_s, service_s, cv)) <= 1.0 - percentile / 100.0 + 1e-12


def replicas_for_slo(lam, service_s: float, slo_s: float, percentile: float, cv: float = 1.0) -> np.ndarray:
    """The fewest replicas with P(latency > slo) <= 1 - percentile/100, per load in ``lam`` (0 at no load).

    Vectorised over ``lam``: a bisection on the replica count for every distinct load at once (the tail
    falls as replicas are added). Raises ``ValueError`` when no number of replicas can meet the target.
    """
    if not slo_feasible(service_s, slo_s, percentile, cv):
        raise ValueError("the service time alone exceeds the latency target")
    lam = np.asarray(lam, float)
    if not np.all(np.isfinite(lam)) or np.any(lam < 0):
        raise ValueError("loads must be finite numbers >= 0")
    uniq, inverse = np.unique(lam, return_inverse=True)
    need = np.zeros(len(uniq), dtype=np.int64)
    todo = np.flatnonzero(uniq > 0)
    if not len(todo):
        return need[inverse].reshape(lam.shape)
    a = uniq[todo] * service_s
    if a.max() > MAX_REPLICAS / 2:
        raise ValueError(f"load of {a.max():.3g} Erlangs is beyond {MAX_REPLICAS // 2:,} replicas")
    target = 1.0 - percentile / 100.0

    def meets(c):
        return p_latency_above(slo_s, uniq[todo], service_s, c, cv) <= target

    lo = np.floor(a).astype(np.int64)  # unstable: never enough
    step = np.maximum(1, np.ceil(np.sqrt(a))).astype(np.int64)
    hi = lo + step
    for _ in range(64):  # grow the bracket until it is enough everywhere
        ok = meets(hi)
        if ok.all():
            break
        lo = np.where(ok, lo, hi)
        step = np.where(ok, step, step * 2)
        hi = np.where(ok, hi, hi + step)
    while np.any(hi - lo > 1):  # the smallest c > a that meets the target, by bisection on integers
        mid = (lo + hi) // 2
        ok = meets(mid)
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    need[todo] = hi
    return need[inverse].reshape(lam.shape)


def max_load(replicas: int, service_s: float, slo_s: float, percentile: float, cv: float = 1.0) -> float:
    """The highest arrival rate (per second) that ``replicas`` serve within the SLO (bisection)."""
    if replicas <= 0 or not slo_feasible(service_s, slo_s, percentile, cv):
        return 0.0
    lo, hi = 0.0, replicas / service_s
    target = 1.0 - percentile / 100.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if p_latency_above(slo_s, mid, service_s, replicas, cv) <= target:
            lo = mid
        else:
            hi = mid
    return lo


def sizing(requests_per_s: float, service_ms: float, slo_ms: float, percentile: float = 99.0,
           gpus_per_replica: float = 1.0, cv: float = 1.0) -> dict:
    """Everything ``planner slo`` reports for one load: replicas, GPUs, utilisation and the latency achieved."""
    S, slo = service_ms / 1000.0, slo_ms / 1000.0
    c = int(replicas_for_slo(np.array([requests_per_s]), S, slo, percentile, cv)[0])
    a = requests_per_s * S
    stable = c > a
    return {
        "requests_per_s": float(requests_per_s), "service_ms": float(service_ms),
        "latency_slo_ms": float(slo_ms), "slo_percentile": float(percentile), "service_cv": float(cv),
        "gpus_per_replica": float(gpus_per_replica),
        "offered_load_erlangs": float(a),
        "replicas": c, "gpus": float(c * gpus_per_replica),
        "utilisation": float(a / c) if c else 0.0,
        "p_wait": float(erlang_c(c, a)) if c and stable else (0.0 if not c else 1.0),
        "p_latency_above_slo": float(p_latency_above(slo, requests_per_s, S, c, cv)) if c else 0.0,
        "latency_at_percentile_ms": float(latency_percentile(percentile, requests_per_s, S, c, cv)) * 1000.0
        if c else 0.0,
        "max_requests_per_s_at_these_replicas": max_load(c, S, slo, percentile, cv),
    }


def sizing_table(requests_per_s, service_ms: float, slo_ms: float, percentile: float = 99.0,
                 gpus_per_replica: float = 1.0, cv: float = 1.0):
    """:func:`sizing` for each load in ``requests_per_s`` as a DataFrame (one row per load)."""
    import pandas as pd

    loads = np.atleast_1d(np.asarray(requests_per_s, float)).tolist()
    return pd.DataFrame([sizing(x, service_ms, slo_ms, percentile, gpus_per_replica, cv) for x in loads])
