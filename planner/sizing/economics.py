"""Spot economics: goodput of checkpointed jobs under preemption (Daly 2006).

Hardware failures of a job that is not on spot (``planner spot --job-mtbi-hours``, or a failure
rate alone) are the same model with ``lam`` the job's failure rate: :func:`rate_for_goodput` is
the rate at which goodput falls to a given level, :func:`goodput_lost_usd` what the lost share
costs, and :func:`analyse_failures` what the command reports.

Model
-----
A job of ``job_gpus`` GPUs runs as a gang on

    j = ceil(job_gpus / gpus_per_instance)

spot instances (``gpus_per_instance`` may be fractional, e.g. 0.125 for a
GPU slice; a tolerance of 1e-9 makes ``ceil(16 / 8) == 2`` despite float noise).

Assumptions:

* Preemptions of each instance form a Poisson process (exponentially
  distributed times between preemptions) with rate ``r`` per instance-hour,
  and instances are preempted independently of one another.
* Hardware failures are a further independent Poisson process with rate
  ``f`` per GPU-hour (default 0).
* A gang is stopped by any single preemption or failure, so the job sees
  interruptions at rate

      lam = j * r + job_gpus * f        (per hour; exactly j * r when f == 0).

* The job writes a checkpoint taking ``C`` hours after every ``tau`` hours of
  compute, and an interruption costs a restart of ``R`` hours plus the
  compute done since the last completed checkpoint (Daly 2006,
  "A higher order estimate of the optimum checkpoint interval for restart
  dumps", FGCS 22:303-312).  Interruptions may also strike during
  checkpoints and restarts.

Under these assumptions the goodput (useful compute per wall-clock hour) is

    g(tau) = lam * tau * exp(-lam * R) / (exp(lam * (tau + C)) - 1),

with g = 1 when lam == 0 (no interruptions: no checkpoints are needed).
Its exact maximiser ``tau*`` solves ``1 - exp(-(x + c)) = x`` with
``x = lam * tau`` and ``c = lam * C``; Young's first-order approximation is
``sqrt(2 * C / lam)``.

A useful GPU-hour on spot costs ``spot_price / g``; spot pays when that is
strictly below the reference price (on-demand, or a reserved option's
effective price).

All times are in hours and all rates per hour.  Functions accept floats or
numpy arrays and broadcast; they return ``numpy.float64`` for scalar input
and ``numpy.ndarray`` otherwise.  Negative times, rates or sizes raise
``ValueError``; NaN propagates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "instances_spanned",
    "job_interruption_rate",
    "goodput",
    "optimal_interval",
    "young_interval",
    "optimal_goodput",
    "expected_lost_hours",
    "effective_price",
    "break_even_rate",
    "max_paying_job_gpus",
    "rate_for_goodput",
    "goodput_lost_usd",
    "SpotAssessment",
    "assess",
]

#: tolerance subtracted before ``ceil`` in :func:`instances_spanned`
CEIL_TOLERANCE = 1e-9
#: bracket of the break-even search, in interruptions per instance-hour
BREAK_EVEN_MIN_RATE = 1e-12
BREAK_EVEN_MAX_RATE = 1e12
#: bracket of :func:`rate_for_goodput`, in job interruptions per hour (a target goodput of 1 - 1e-90 fits)
GOODPUT_MIN_RATE = 1e-100
GOODPUT_MAX_RATE = 1e100
#: largest gang (GPUs) searched by :func:`max_paying_job_gpus` before reporting inf
MAX_JOB_GPUS_SEARCHED = 2**53


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------

NEGLIGIBLE_RATE = 1e-300  # rates below this are 0: lam * C underflows and 1/lam overflows


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _out(x):
    """0-d array -> numpy.float64 (or numpy.bool_); anything else unchanged."""
    x = np.asarray(x)
    return x[()] if x.ndim == 0 else x


def _check_nonneg(name: str, x: np.ndarray) -> None:
    if np.any(x < 0):  # NaN compares False and propagates
        raise ValueError(f"{name} must be >= 0, got {x[x < 0].ravel()[:3]}")


def _phi(y: np.ndarray) -> np.ndarray:
    """``y - 1 + exp(-y)`` for y >= 0, without cancellation for small y."""
    y = _arr(y)
    small = y < 0.1
    ys = np.where(small, y, 0.0)
    # sum_{k>=2} (-y)^k / k!, truncated after y^11 (relative error < 1e-18 at y = 0.1)
    series = ys * ys * (1 / 2 - ys * (1 / 6 - ys * (1 / 24 - ys * (1 / 120 - ys * (
        1 / 720 - ys * (1 / 5040 - ys * (1 / 40320 - ys * (1 / 362880 - ys * (
            1 / 3628800 - ys / 39916800)))))))))
    with np.errstate(over="ignore", invalid="ignore"):
        direct = y + np.expm1(-y)
    return np.where(small, series, direct)


def _solve_x(c: np.ndarray) -> np.ndarray:
    """Root x in (0, 1) of ``1 - x - exp(-(x + c)) = 0`` for finite c > 0.

    Written as ``h(x) = c - phi(x + c)``, h is concave and decreasing, so
    Newton's method started right of the root decreases monotonically to it.
    ``x0 = min(1, 2 sqrt(c))`` is right of the root: h(1) = -exp(-1-c) < 0, and
    for y = x0 + c <= 1.5, phi(y) >= y^2 (1/2 - y/6) >= c.
    """
    c = _arr(c)
    x = np.minimum(1.0, 2.0 * np.sqrt(c))
    for _ in range(200):
        y = x + c
        denom = -np.expm1(-y)  # h'(x) = -denom, denom in (0, 1]
        step = (c - _phi(y)) / denom  # <= 0 right of the root
        x_new = np.clip(x + step, 0.0, x)  # monotone from the right
        done = np.all(x - x_new <= 4 * np.finfo(float).eps * x)
        x = x_new
        if done:
            break
    return x


# ----------------------------------------------------------------------------
# interruption rate
# ----------------------------------------------------------------------------

def instances_spanned(job_gpus, gpus_per_instance):
    """Instances a gang of ``job_gpus`` GPUs spans.

    ``j = ceil(job_gpus / gpus_per_instance - 1e-9)``; ``job_gpus=None`` means
    one instance's worth (``j = 1``).

    Parameters
    ----------
    job_gpus : float or array_like or None
    gpus_per_instance : float or array_like, > 0 (may be fractional)

    Returns
    -------
    numpy.float64 or numpy.ndarray (integer-valued floats)
    """
    m = _arr(gpus_per_instance)
    if np.any(m <= 0):
        raise ValueError("gpus_per_instance must be > 0")
    n = m if job_gpus is None else _arr(job_gpus)
    _check_nonneg("job_gpus", n)
    return _out(np.ceil(n / m - CEIL_TOLERANCE))


def job_interruption_rate(interruptions_per_instance_hour, job_gpus, gpus_per_instance,
                          failure_rate_per_gpu_hour=0.0):
    """Interruption rate seen by the gang, per hour.

    ``lam = j * interruptions_per_instance_hour + job_gpus * failure_rate_per_gpu_hour``
    with ``j = instances_spanned(job_gpus, gpus_per_instance)``.  Any single
    preemption (instances preempted independently) or GPU failure stops the
    gang.  With the default failure rate 0 this is exactly ``j * rate``.
    ``job_gpus=None`` means ``gpus_per_instance`` (one instance).
    """
    r = _arr(interruptions_per_instance_hour)
    f = _arr(failure_rate_per_gpu_hour)
    _check_nonneg("interruptions_per_instance_hour", r)
    _check_nonneg("failure_rate_per_gpu_hour", f)
    n = _arr(gpus_per_instance) if job_gpus is None else _arr(job_gpus)
    j = _arr(instances_spanned(n, gpus_per_instance))
    # n * f == 0 when f == 0, and j * r + 0.0 == j * r exactly
    return _out(j * r + n * f)


# ----------------------------------------------------------------------------
# goodput and checkpoint interval
# ----------------------------------------------------------------------------

def goodput(lam, interval_h, checkpoint_h, restart_h):
    """Fraction of wall-clock time doing useful (kept) compute.

    ``g = lam * tau * exp(-lam * R) / (exp(lam * (tau + C)) - 1)``, evaluated
    as ``x * exp(-y - lam * R) / (-expm1(-y))`` with ``x = lam * tau``,
    ``y = lam * (tau + C)`` so it never overflows.

    Special cases: ``g = 1`` where ``lam == 0`` (whatever tau);
    ``g = 0`` where ``tau`` is infinite and ``lam > 0``;
    ``g = exp(-lam * R)`` (the limit) where ``tau == C == 0``.

    Parameters
    ----------
    lam : interruptions per hour of the job (>= 0)
    interval_h : compute hours between checkpoints, tau (>= 0, may be inf)
    checkpoint_h : checkpoint write time C, hours
    restart_h : restart time R, hours
    """
    lam, tau, c, r = np.broadcast_arrays(_arr(lam), _arr(interval_h), _arr(checkpoint_h),
                                         _arr(restart_h))
    for name, v in (("lam", lam), ("interval_h", tau), ("checkpoint_h", c), ("restart_h", r)):
        _check_nonneg(name, v)
    lam = np.where(lam < NEGLIGIBLE_RATE, 0.0, lam)
    with np.errstate(all="ignore"):
        x = lam * tau
        y = lam * (tau + c)
        g = x * np.exp(-y - lam * r) / -np.expm1(-y)
        g = np.where((tau == 0) & (c == 0), np.exp(-lam * r), g)
        g = np.where(np.isinf(tau) & (lam > 0), 0.0, g)
        g = np.where(lam == 0, 1.0, g)
    return _out(g)


def optimal_interval(lam, checkpoint_h):
    """Checkpoint interval tau* (hours) that maximises :func:`goodput` exactly.

    ``d/dtau log g = 0`` gives, with ``x = lam * tau`` and ``c = lam * C``,
    ``1 - exp(-(x + c)) = x``, which has a unique root in (0, 1) for c > 0;
    ``tau* = x / lam`` (independent of the restart time R).  Solved by
    monotone Newton iteration to machine precision.

    Edge cases: ``lam == 0`` -> inf (never checkpoint); ``C == 0`` and
    ``lam > 0`` -> 0 (the supremum, goodput ``exp(-lam * R)``); ``C`` infinite
    -> ``1 / lam``.
    """
    lam, c = np.broadcast_arrays(_arr(lam), _arr(checkpoint_h))
    _check_nonneg("lam", lam)
    _check_nonneg("checkpoint_h", c)
    lam = np.where(lam < NEGLIGIBLE_RATE, 0.0, lam)
    with np.errstate(all="ignore"):
        cc = lam * c
        ok = (cc > 0) & np.isfinite(cc)
        x = np.ones_like(cc)
        if np.any(ok):
            x[ok] = _solve_x(cc[ok])
        tau = x / lam
        tau = np.where(np.isnan(cc), np.nan, tau)
        tau = np.where((c == 0) & (lam > 0), 0.0, tau)
        tau = np.where(lam == 0, np.inf, tau)
    return _out(tau)


def young_interval(lam, checkpoint_h):
    """Young's (1974) first-order interval ``sqrt(2 * C / lam)`` = ``sqrt(2 * C * MTBI)``, hours.

    inf where ``lam == 0``.
    """
    lam, c = np.broadcast_arrays(_arr(lam), _arr(checkpoint_h))
    _check_nonneg("lam", lam)
    _check_nonneg("checkpoint_h", c)
    with np.errstate(all="ignore"):
        tau = np.sqrt(2.0 * c / lam)
        tau = np.where(lam == 0, np.inf, tau)
    return _out(tau)


def optimal_goodput(lam, checkpoint_h, restart_h):
    """``goodput(lam, optimal_interval(lam, C), C, R)``.

    Equals 1 where ``lam == 0`` and ``exp(-lam * R)`` where ``C == 0``.
    """
    return goodput(lam, optimal_interval(lam, checkpoint_h), checkpoint_h, restart_h)


def expected_lost_hours(lam, interval_h, checkpoint_h, restart_h):
    """Expected hours lost per interruption.

    ``R + E[time into the current segment at failure]`` with segment length
    ``L = tau + C`` and exponential failure times truncated to [0, L]:

        E = 1/lam - L / (exp(lam * L) - 1)

    evaluated as ``L * (1/y - 1/expm1(y))``, ``y = lam * L`` (series for
    small y).  Limits: ``R + L/2`` where ``lam == 0``; ``R + 1/lam`` where
    ``L`` is infinite (never checkpointing) and ``lam > 0``; so inf where both
    ``lam == 0`` and ``tau`` is infinite.
    """
    lam, tau, c, r = np.broadcast_arrays(_arr(lam), _arr(interval_h), _arr(checkpoint_h),
                                         _arr(restart_h))
    for name, v in (("lam", lam), ("interval_h", tau), ("checkpoint_h", c), ("restart_h", r)):
        _check_nonneg(name, v)
    seg = tau + c
    with np.errstate(all="ignore"):
        y = lam * seg
        small = y < 1e-2
        ys = np.where(small, y, 0.0)
        # 1/y - 1/(e^y - 1) = 1/2 - y/12 + y^3/720 - y^5/30240 + ...
        series = 0.5 - ys / 12 + ys**3 / 720 - ys**5 / 30240
        yd = np.where(small, 1.0, y)
        direct = 1.0 / yd - np.exp(-yd) / -np.expm1(-yd)
        frac = np.where(small, series, direct)
        lost = r + seg * frac
        lost = np.where(np.isinf(seg) & (lam > 0), r + 1.0 / lam, lost)
        lost = np.where(np.isnan(y), np.nan, lost)
        lost = np.where(lam == 0, r + seg / 2, lost)
    return _out(lost)


def effective_price(price, goodput_value):
    """Price per useful GPU-hour: ``price / goodput`` (inf where goodput is 0)."""
    p, g = np.broadcast_arrays(_arr(price), _arr(goodput_value))
    with np.errstate(all="ignore"):
        return _out(p / g)


# ----------------------------------------------------------------------------
# break-even analysis
# ----------------------------------------------------------------------------

def _goodput_at_rate(rate, j, n, f, c, r, interval):
    lam = j * rate + n * f
    tau = optimal_interval(lam, c) if interval is None else interval
    return _arr(goodput(lam, tau, c, r))


def break_even_rate(spot_price, reference_price, checkpoint_h, restart_h, job_gpus,
                    gpus_per_instance, interval_h=None, failure_rate_per_gpu_hour=0.0):
    """Interruptions per instance-hour at which spot stops paying.

    The rate ``r*`` with ``spot_price / g(r*) == reference_price``, where
    ``g(r) = goodput(lam(r), tau, C, R)``, ``lam(r) = j * r + job_gpus * f``
    and ``tau`` is optimal at each rate (``interval_h=None``) or fixed.  g is
    strictly decreasing in r, so r* is found by bisection on log r (bracket
    1e-12 .. 1e12 per instance-hour) to ~1e-15 relative.  Spot pays
    (``spot_price < reference_price * g``) exactly for rates below r*.

    Returns 0 where spot never pays (``spot_price >= reference_price``, or a
    positive failure rate alone already makes it too dear), inf where spot
    still pays at 1e12 interruptions per instance-hour (e.g. ``C == R == 0``
    with optimal interval: g == 1), NaN where a price is NaN.
    ``job_gpus=None`` means one instance.
    """
    fixed = interval_h is not None
    n = _arr(gpus_per_instance) if job_gpus is None else _arr(job_gpus)
    spot, ref, c, r, n, m, f, tau = np.broadcast_arrays(
        _arr(spot_price), _arr(reference_price), _arr(checkpoint_h), _arr(restart_h), n,
        _arr(gpus_per_instance), _arr(failure_rate_per_gpu_hour),
        _arr(interval_h) if fixed else _arr(np.nan))
    j = _arr(instances_spanned(n, m))
    _check_nonneg("failure_rate_per_gpu_hour", f)

    def pays(rate):
        g = _goodput_at_rate(rate, j, n, f, c, r, tau if fixed else None)
        return spot < ref * g

    out = np.full(spot.shape, np.nan)
    valid = ~(np.isnan(spot) | np.isnan(ref))
    never = valid & ~pays(np.zeros(spot.shape))
    # free spot pays at every finite rate (goodput stays above 0), though goodput underflows to 0 at vast rates
    always = valid & ~never & ((spot <= 0) | pays(np.full(spot.shape, BREAK_EVEN_MAX_RATE)))
    todo = valid & ~never & ~always
    out[never] = 0.0
    out[always] = np.inf
    if np.any(todo):
        hi = np.full(spot.shape, BREAK_EVEN_MAX_RATE)
        lo = np.where(pays(np.full(spot.shape, BREAK_EVEN_MIN_RATE)), BREAK_EVEN_MIN_RATE, 0.0)
        for _ in range(400):
            mid = np.where(lo > 0, np.sqrt(lo * hi), 0.5 * (lo + hi))
            p = pays(mid)
            lo = np.where(p, mid, lo)
            hi = np.where(p, hi, mid)
            if np.all(((hi - lo) <= 1e-15 * hi)[todo]):
                break
        best = np.where(lo > 0, np.sqrt(lo * hi), 0.5 * (lo + hi))
        out[todo] = best[todo]
    return _out(out)


def _max_paying_scalar(spot, ref, rate, c, r, m, interval, f):
    if any(math.isnan(v) for v in (spot, ref, rate, c, r, m, f)):
        return math.nan

    def pays(n: int) -> bool:
        lam = float(job_interruption_rate(rate, n, m, f))
        tau = optimal_interval(lam, c) if interval is None else interval
        return bool(spot < ref * float(goodput(lam, tau, c, r)))

    if not pays(1):
        return 0.0
    if (rate == 0 and f == 0) or spot <= 0:  # no interruption, or free spot: every gang pays (goodput > 0)
        return math.inf
    lo, hi = 1, 2
    while pays(hi):
        lo, hi = hi, 2 * hi
        if hi > MAX_JOB_GPUS_SEARCHED:
            return math.inf
    while hi - lo > 1:  # pays(lo), not pays(hi)
        mid = (lo + hi) // 2
        if pays(mid):
            lo = mid
        else:
            hi = mid
    return float(lo)


def max_paying_job_gpus(spot_price, reference_price, interruptions_per_instance_hour,
                        checkpoint_h, restart_h, gpus_per_instance, interval_h=None,
                        failure_rate_per_gpu_hour=0.0):
    """Largest gang (integer GPUs, >= 1) for which spot still pays.

    Spot pays for ``job_gpus`` when ``spot_price < reference_price * g`` with
    ``g`` the goodput of the gang (optimal interval, or ``interval_h``).  g
    does not increase with ``job_gpus`` (lam grows with
    ``j = ceil(job_gpus / gpus_per_instance)`` and with ``job_gpus * f``), so
    the paying sizes are ``1 .. N``; N is found by doubling then integer
    bisection.  With no failure rate, N is the GPUs of the largest paying
    whole number of instances, ``floor(j_max * gpus_per_instance)``.

    Returns 0 if even ``job_gpus = 1`` (one instance when
    ``gpus_per_instance >= 1``) does not pay, ``math.inf`` if every size pays
    (no interruptions and no failures, or beyond 2**53 GPUs), NaN for NaN input.
    Floats (integer-valued) so that inf fits; broadcasts like the others.
    """
    args = np.broadcast_arrays(
        _arr(spot_price), _arr(reference_price), _arr(interruptions_per_instance_hour),
        _arr(checkpoint_h), _arr(restart_h), _arr(gpus_per_instance),
        _arr(failure_rate_per_gpu_hour), _arr(np.nan if interval_h is None else interval_h))
    _check_nonneg("interruptions_per_instance_hour", args[2])
    _check_nonneg("failure_rate_per_gpu_hour", args[6])
    if np.any(args[5] <= 0):
        raise ValueError("gpus_per_instance must be > 0")
    out = np.empty(args[0].shape)
    for idx in np.ndindex(out.shape):
        s, p, rate, c, r, m, f, tau = (float(a[idx]) for a in args)
        out[idx] = _max_paying_scalar(s, p, rate, c, r, m, None if interval_h is None else tau, f)
    return _out(out)


# ----------------------------------------------------------------------------
# failures of a job (not spot): how reliable the job must be, what it loses
# ----------------------------------------------------------------------------

def rate_for_goodput(target_goodput, checkpoint_h, restart_h, interval_h=None):
    """Job interruption rate (per hour) at which goodput falls to ``target_goodput``.

    The rate ``lam*`` with ``goodput(lam*, tau, C, R) == target``, ``tau`` optimal at each rate
    (``interval_h=None``) or fixed; goodput is at least the target exactly for ``lam <= lam*``,
    so ``1 / lam*`` is the job MTBI the target needs.  g is strictly decreasing in lam, so lam* is
    found by bisection on log lam (bracket 1e-100 .. 1e100 per hour) to ~1e-15 relative.

    At the optimal interval ``g = (1 - x) exp(-lam R)`` with ``x = lam tau*`` (from
    ``1 - exp(-(x + c)) = x``), so with ``R = 0`` the answer is closed:
    ``lam* = (G - 1 - ln G) / C``; with ``C = 0``, ``lam* = -ln(G) / R``.

    Returns inf where goodput is still at the target at 1e100 per hour (``C == R == 0``), 0 where
    it is below the target already at 1e-100 per hour (a fixed interval whose checkpoints alone,
    ``C / (tau + C)``, take more than ``1 - target``), NaN for NaN input.  ``target_goodput``
    must be in (0, 1) (``ValueError`` otherwise).
    """
    fixed = interval_h is not None
    g0, c, r, tau = np.broadcast_arrays(_arr(target_goodput), _arr(checkpoint_h), _arr(restart_h),
                                        _arr(interval_h) if fixed else _arr(np.nan))
    if np.any((g0 <= 0) | (g0 >= 1)):
        raise ValueError(f"target_goodput must be in (0, 1), got {g0[(g0 <= 0) | (g0 >= 1)].ravel()[:3]}")
    _check_nonneg("checkpoint_h", c)
    _check_nonneg("restart_h", r)

    def meets(lam):
        t = tau if fixed else optimal_interval(lam, c)
        return _arr(goodput(lam, t, c, r)) >= g0

    out = np.full(g0.shape, np.nan)
    valid = ~(np.isnan(g0) | np.isnan(c) | np.isnan(r) | (fixed & np.isnan(tau)))
    never = valid & ~meets(np.full(g0.shape, GOODPUT_MIN_RATE))
    always = valid & ~never & meets(np.full(g0.shape, GOODPUT_MAX_RATE))
    todo = valid & ~never & ~always
    out[never] = 0.0
    out[always] = np.inf
    if np.any(todo):
        lo = np.full(g0.shape, GOODPUT_MIN_RATE)
        hi = np.full(g0.shape, GOODPUT_MAX_RATE)
        for _ in range(400):
            mid = np.sqrt(lo * hi)
            ok = meets(mid)
            lo = np.where(ok, mid, lo)
            hi = np.where(ok, hi, mid)
            if np.all(((hi - lo) <= 1e-15 * hi)[todo]):
                break
        out[todo] = np.sqrt(lo * hi)[todo]
    return _out(out)


def goodput_lost_usd(gpus, usd_per_gpu_hour, goodput_value, hours=1.0):
    """USD paid for GPU-hours that do no useful work: ``gpus * hours * price * (1 - goodput)``.

    Broadcasts; ``hours=units.HOURS_PER_MONTH`` (730) gives a month.
    """
    n, p, g, h = np.broadcast_arrays(_arr(gpus), _arr(usd_per_gpu_hour), _arr(goodput_value), _arr(hours))
    for name, v in (("gpus", n), ("usd_per_gpu_hour", p), ("hours", h)):
        _check_nonneg(name, v)
    if np.any((g < 0) | (g > 1)):
        raise ValueError("goodput_value must be within [0, 1]")
    return _out(n * h * p * (1.0 - g))


# ----------------------------------------------------------------------------
# one class x spot pool
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class SpotAssessment:
    """Spot economics of one job class on one spot pool (hours, USD).

    Fields are floats (bool for ``spot_pays``) for scalar input, numpy
    arrays when :func:`assess` is given arrays.
    """

    job_interruptions_per_hour: float
    interval_hours: float
    young_interval_hours: float
    goodput: float
    effective_usd_per_useful_gpu_hour: float
    spot_pays: bool
    break_even_interruptions_per_hour: float
    expected_lost_hours: float


def _py(x):
    x = np.asarray(x)
    if x.ndim:
        return x
    return bool(x) if x.dtype == bool else float(x)


def assess(spot_price, on_demand_price, interruptions_per_instance_hour, checkpoint_h,
           restart_h, job_gpus, gpus_per_instance, interval_h=None,
           failure_rate_per_gpu_hour=0.0, goodput_override=None) -> SpotAssessment:
    """Assess spot for one class on one pool.

    * ``job_interruptions_per_hour``: :func:`job_interruption_rate`.
    * ``interval_hours``: ``interval_h``, or :func:`optimal_interval` when None.
    * ``young_interval_hours``: :func:`young_interval` (for comparison).
    * ``goodput``: ``goodput_override`` exactly when given (NaN entries count as
      not given), else :func:`goodput` at the interval.
    * ``effective_usd_per_useful_gpu_hour``: ``spot_price / goodput``.
    * ``spot_pays``: ``spot_price < on_demand_price * goodput``; True where
      ``on_demand_price`` is None/NaN (the pool has no on-demand reference).
    * ``break_even_interruptions_per_hour``: :func:`break_even_rate` against
      on-demand (per instance-hour).  It always comes from the model, even
      when ``goodput_override`` is given; NaN without an on-demand price.
    * ``expected_lost_hours``: :func:`expected_lost_hours` at the interval
      (model-based; inf when lam == 0 and the interval is infinite).
    """
    lam = _arr(job_interruption_rate(interruptions_per_instance_hour, job_gpus,
                                     gpus_per_instance, failure_rate_per_gpu_hour))
    tau = _arr(optimal_interval(lam, checkpoint_h) if interval_h is None else interval_h)
    young = young_interval(lam, checkpoint_h)
    g = _arr(goodput(lam, tau, checkpoint_h, restart_h))
    if goodput_override is not None:
        override = _arr(goodput_override)
        if np.any((override < 0) | (override > 1)):
            raise ValueError("goodput_override must be within [0, 1]")
        g = np.where(np.isnan(override), g, override)
    spot = _arr(spot_price)
    eff = effective_price(spot, g)
    od = _arr(np.nan if on_demand_price is None else on_demand_price)
    no_od = np.isnan(od)
    with np.errstate(invalid="ignore"):
        pays = np.where(no_od, True, spot < od * g)
    if np.all(no_od):
        be = np.full(np.broadcast(spot, od, lam).shape, np.nan)
    else:
        be = _arr(break_even_rate(spot, od, checkpoint_h, restart_h, job_gpus, gpus_per_instance,
                                  interval_h, failure_rate_per_gpu_hour))
        be = np.where(no_od, np.nan, be)
    lost = expected_lost_hours(lam, tau, checkpoint_h, restart_h)
    return SpotAssessment(
        job_interruptions_per_hour=_py(lam),
        interval_hours=_py(tau),
        young_interval_hours=_py(young),
        goodput=_py(g),
        effective_usd_per_useful_gpu_hour=_py(eff),
        spot_pays=_py(pays),
        break_even_interruptions_per_hour=_py(be),
        expected_lost_hours=_py(lost),
    )


def analyse_job(rate: float, checkpoint_h: float, restart_h: float, job_gpus: float, m: float,
            interval_h: float | None = None, failure: float = 0.0, spot_price: float | None = None,
            on_demand_price: float | None = None, reserved_price: float | None = None,
            job_rate: float | None = None) -> dict:
    """Everything ``planner spot`` reports for one job (a dict); ``job_rate`` fixes the job's interruption rate.

    Times in hours, prices in USD per GPU-hour; ``rate`` is interruptions per instance-hour, ``m`` GPUs per instance.
    """
    lam = float(job_rate) if job_rate is not None else float(job_interruption_rate(rate, job_gpus, m, failure))
    opt = float(optimal_interval(lam, checkpoint_h))
    tau = opt if interval_h is None else interval_h
    g = float(goodput(lam, tau, checkpoint_h, restart_h))
    out = {
        "interruptions_per_instance_hour": rate if job_rate is None else None,
        "instances_per_job": float(instances_spanned(job_gpus, m)),
        "job_gpus": job_gpus, "gpus_per_instance": m,
        "job_interruptions_per_hour": lam,
        "job_mtbi_hours": 1 / lam if lam > 0 else None,
        "checkpoint_minutes": checkpoint_h * 60, "restart_minutes": restart_h * 60,
        "young_interval_minutes": float(young_interval(lam, checkpoint_h)) * 60 if lam > 0 else None,
        "optimal_interval_minutes": opt * 60,
        "interval_minutes": tau * 60,
        "goodput": g,
        "expected_lost_minutes_per_interruption": float(expected_lost_hours(lam, tau, checkpoint_h, restart_h)) * 60,
        "effective_usd_per_useful_gpu_hour": None, "spot_pays": None,
        "break_even_interruptions_per_hour": None, "max_paying_job_gpus": None,
    }
    if spot_price is not None:
        out["effective_usd_per_useful_gpu_hour"] = float(effective_price(spot_price, g)) if g > 0 else math.inf
    if spot_price is not None and on_demand_price is not None:
        out["spot_pays"] = bool(spot_price < on_demand_price * g)
        if job_rate is None:
            out["break_even_interruptions_per_hour"] = float(break_even_rate(
                spot_price, on_demand_price, checkpoint_h, restart_h, job_gpus, m, interval_h, failure))
            out["max_paying_job_gpus"] = float(max_paying_job_gpus(
                spot_price, on_demand_price, rate, checkpoint_h, restart_h, m, interval_h, failure))
    if spot_price is not None and reserved_price is not None:
        out["spot_beats_reserved"] = bool(spot_price < reserved_price * g)
        if job_rate is None:
            out["break_even_vs_reserved_interruptions_per_hour"] = float(break_even_rate(
                spot_price, reserved_price, checkpoint_h, restart_h, job_gpus, m, interval_h, failure))
    return out


def job_table(interruptions_per_instance_hour, checkpoint_minutes: float, restart_minutes: float, job_gpus=None,
              gpus_per_instance: float = 1.0, interval_minutes: float | None = None,
              failure_rate_per_gpu_hour: float = 0.0, spot_price: float | None = None,
              on_demand_price: float | None = None, reserved_price: float | None = None):
    """:func:`analyse_job` over lists of rates and/or job sizes (one row each, broadcast together) as a DataFrame."""
    import pandas as pd

    rates = np.atleast_1d(np.asarray(interruptions_per_instance_hour, float))
    jobs = np.atleast_1d(np.asarray(gpus_per_instance if job_gpus is None else job_gpus, float))
    rates, jobs = np.broadcast_arrays(rates, jobs)
    tau = None if interval_minutes is None else interval_minutes / 60
    return pd.DataFrame([analyse_job(float(r), checkpoint_minutes / 60, restart_minutes / 60, float(j),
                                     gpus_per_instance, tau, failure_rate_per_gpu_hour, spot_price,
                                     on_demand_price, reserved_price)
                         for r, j in zip(rates.tolist(), jobs.tolist())])


def analyse_failures(job_rate: float, checkpoint_h: float, restart_h: float, job_gpus: float,
                     interval_h: float | None = None, gpu_price: float | None = None,
                     goodput_target: float = 0.9) -> dict:
    """What ``planner spot`` reports for a job interrupted by failures, not spot preemptions (a dict).

    ``job_rate`` is the job's failures per hour (``1 / --job-mtbi-hours``, or ``job_gpus x`` the
    failure rate per GPU-hour); failures hit every purchase option alike, so nothing here compares
    options or mentions spot.  Besides the interval and goodput of :func:`analyse_job`:

    * ``gpu_mtbf_hours``: ``job_gpus / job_rate``, each GPU's mean time between failures implied;
    * ``job_mtbi_for_goodput_target_hours``: ``1 /`` :func:`rate_for_goodput` (the job MTBI below
      which goodput falls under ``goodput_target``), and ``gpu_mtbf_for_goodput_target_hours``, the
      same per GPU (``job_gpus x`` it);
    * ``lost_gpu_hours_per_hour``: ``job_gpus x (1 - goodput)``;
    * with ``gpu_price`` (USD per GPU-hour the job's GPUs cost): ``effective_usd_per_useful_gpu_hour``
      (``price / goodput``), ``lost_usd_per_hour`` and ``lost_usd_per_month`` (730 h), by
      :func:`goodput_lost_usd`.
    """
    from planner.core.units import HOURS_PER_MONTH

    lam = float(job_rate)
    opt = float(optimal_interval(lam, checkpoint_h))
    tau = opt if interval_h is None else interval_h
    g = float(goodput(lam, tau, checkpoint_h, restart_h))
    need = float(rate_for_goodput(goodput_target, checkpoint_h, restart_h, interval_h))
    # need = 0: no failure rate keeps the target (MTBI inf needed); need = inf: any MTBI does (no
    # checkpoint or restart cost), reported as None ("any"), never as 1 / inf = 0 hours
    need_mtbi = math.inf if need == 0 else (None if math.isinf(need) else 1.0 / need)
    out = {
        "job_gpus": job_gpus,
        "job_interruptions_per_hour": lam,
        "job_mtbi_hours": 1 / lam if lam > 0 else None,
        "gpu_mtbf_hours": job_gpus / lam if lam > 0 else None,
        "checkpoint_minutes": checkpoint_h * 60, "restart_minutes": restart_h * 60,
        "young_interval_minutes": float(young_interval(lam, checkpoint_h)) * 60 if lam > 0 else None,
        "optimal_interval_minutes": opt * 60,
        "interval_minutes": tau * 60,
        "goodput": g,
        "expected_lost_minutes_per_interruption": float(expected_lost_hours(lam, tau, checkpoint_h, restart_h)) * 60,
        "lost_gpu_hours_per_hour": job_gpus * (1.0 - g),
        "goodput_target": goodput_target,
        "job_mtbi_for_goodput_target_hours": need_mtbi,
        "gpu_mtbf_for_goodput_target_hours": None if need_mtbi is None else job_gpus * need_mtbi,
        "gpu_usd_per_gpu_hour": gpu_price,
        "effective_usd_per_useful_gpu_hour": None, "lost_usd_per_hour": None, "lost_usd_per_month": None,
    }
    if gpu_price is not None:
        out["effective_usd_per_useful_gpu_hour"] = float(effective_price(gpu_price, g)) if g > 0 else math.inf
        out["lost_usd_per_hour"] = float(goodput_lost_usd(job_gpus, gpu_price, g))
        out["lost_usd_per_month"] = float(goodput_lost_usd(job_gpus, gpu_price, g, HOURS_PER_MONTH))
    return out
