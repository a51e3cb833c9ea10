"""Tests for planner.sizing.economics (spot goodput under exponential preemptions, Daly 2006)."""

import math

import numpy as np
import pytest

from planner.sizing import economics as ec

MIN = 1.0 / 60.0  # one minute in hours
C5 = 5 * MIN
R10 = 10 * MIN


def naive_goodput(lam, tau, c, r):
    """Independent, textbook evaluation of g (no expm1, no special cases)."""
    return lam * tau * math.exp(-lam * r) / (math.exp(lam * (tau + c)) - 1.0)


def simpson(f, a, b, n=4000):
    """Composite Simpson rule (n even); independent of numpy's trapezoid helpers."""
    x = np.linspace(a, b, n + 1)
    y = f(x)
    h = (b - a) / n
    return h / 3 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum())


# --------------------------------------------------------------------------- Daly / Young

@pytest.mark.parametrize("mtbi_h, daly_min, exact_min", [
    (24.0, 116.7, 116.690),
    (6.0, 56.7, 56.714),
    (0.25, 9.2, 9.167),
])
def test_daly_2006_optimal_interval(mtbi_h, daly_min, exact_min):
    tau_min = float(ec.optimal_interval(1.0 / mtbi_h, C5)) * 60
    assert tau_min == pytest.approx(daly_min, abs=0.1)
    assert tau_min == pytest.approx(exact_min, abs=1e-3)


@pytest.mark.parametrize("mtbi_h, young_min", [
    (24.0, 120.0), (6.0, 60.0), (0.25, math.sqrt(150.0)), (4.0, 48.98979),
])
def test_young_interval(mtbi_h, young_min):
    assert float(ec.young_interval(1.0 / mtbi_h, C5)) * 60 == pytest.approx(young_min, rel=1e-6)


def test_young_4h_about_49_minutes_and_above_optimal():
    young = float(ec.young_interval(0.25, C5)) * 60
    assert young == pytest.approx(49.0, abs=0.05)
    # Young's first-order interval overestimates the exact optimum here
    assert float(ec.optimal_interval(0.25, C5)) * 60 < young


def test_optimal_interval_solves_stationarity_equation():
    lam = np.array([1e-6, 1e-3, 0.1, 1.0, 4.0, 50.0, 1e4])
    c = np.array([1e-4, C5, C5, 0.5, C5, 2.0, C5])
    x = lam * np.asarray(ec.optimal_interval(lam, c))
    assert np.all((x > 0) & (x <= 1))  # 1 - exp(-1 - c) rounds to 1 for large c
    np.testing.assert_allclose(-np.expm1(-(x + lam * c)), x, rtol=1e-12)  # 1 - exp(-(x + c)) = x


# --------------------------------------------------------------------------- optimality

@pytest.mark.parametrize("lam, c, r", [
    (1 / 24, C5, R10), (1 / 6, C5, R10), (4.0, C5, R10), (0.5, 0.3, 0.0), (20.0, 1 * MIN, 2.0),
])
def test_optimal_interval_maximises_goodput_on_dense_grid(lam, c, r):
    tau_star = float(ec.optimal_interval(lam, c))
    g_star = float(ec.optimal_goodput(lam, c, r))
    grid = np.geomspace(tau_star / 50, tau_star * 50, 20001)
    g_grid = np.array([naive_goodput(lam, t, c, r) for t in grid])
    best = int(np.argmax(g_grid))
    assert 0 < best < grid.size - 1  # interior maximum
    assert g_grid.max() <= g_star * (1 + 1e-12)
    assert grid[best] == pytest.approx(tau_star, rel=1e-3)
    assert g_star == pytest.approx(naive_goodput(lam, tau_star, c, r), rel=1e-12)
    # nearby intervals are strictly worse
    assert naive_goodput(lam, tau_star * 1.05, c, r) < g_star
    assert naive_goodput(lam, tau_star * 0.95, c, r) < g_star


def test_goodput_matches_textbook_formula_and_broadcasts():
    rng = np.random.default_rng(0)
    lam = rng.uniform(0.01, 5, 50)
    tau = rng.uniform(0.01, 3, 50)
    c = rng.uniform(0, 0.5, 50)
    r = rng.uniform(0, 0.5, 50)
    g = ec.goodput(lam, tau, c, r)
    assert isinstance(g, np.ndarray) and g.shape == (50,)
    expected = [naive_goodput(*args) for args in zip(lam, tau, c, r)]
    np.testing.assert_allclose(g, expected, rtol=1e-12)
    assert isinstance(ec.goodput(0.1, 1.0, C5, R10), float)


def test_goodput_stable_for_extreme_rates():
    g = np.asarray(ec.goodput(np.array([1e-300, 1e-12, 1e3, 1e8, 1e300]), 1.0, C5, R10))
    assert np.all(np.isfinite(g)) and np.all((g >= 0) & (g <= 1))
    assert g[-1] == 0.0 and g[0] == pytest.approx(1 / (1 + C5), rel=1e-12)
    tau = np.asarray(ec.optimal_interval(np.array([1e-30, 1e300]), C5))
    assert np.all(np.isfinite(tau)) and np.all(tau > 0)


def test_zero_checkpoint_cost_edge_case():
    assert float(ec.optimal_interval(0.7, 0.0)) == 0.0
    assert float(ec.optimal_goodput(0.7, 0.0, 0.2)) == pytest.approx(math.exp(-0.14), rel=1e-14)
    # the edge value is the supremum: tiny intervals approach it from below
    assert float(ec.goodput(0.7, 1e-9, 0.0, 0.2)) < math.exp(-0.14)
    assert float(ec.goodput(0.7, 1e-9, 0.0, 0.2)) == pytest.approx(math.exp(-0.14), rel=1e-8)


# --------------------------------------------------------------------------- lam = 0, failures

def test_zero_rate_gives_goodput_one():
    for tau in (0.1, 1.0, 5.0, math.inf):
        assert float(ec.goodput(0.0, tau, C5, R10)) == 1.0
    assert float(ec.optimal_interval(0.0, C5)) == math.inf
    assert float(ec.young_interval(0.0, C5)) == math.inf
    assert float(ec.optimal_goodput(0.0, C5, R10)) == 1.0
    a = ec.assess(1.0, 3.0, 0.0, C5, R10, 64, 8)
    assert a.goodput == 1.0 and a.spot_pays and a.effective_usd_per_useful_gpu_hour == 1.0


def test_instances_spanned():
    assert float(ec.instances_spanned(16, 8)) == 2
    assert float(ec.instances_spanned(0.1 * 3, 0.1)) == 3  # 0.1 * 3 / 0.1 = 3.0000000000000004
    assert float(ec.instances_spanned(17, 8)) == 3
    assert float(ec.instances_spanned(1, 0.125)) == 8
    assert float(ec.instances_spanned(None, 8)) == 1
    np.testing.assert_array_equal(ec.instances_spanned(np.array([1, 8, 9, 64]), 8), [1, 1, 2, 8])


def test_failure_rate_zero_reduces_to_plain_model():
    rate, n, m = 0.037, 64, 8
    assert float(ec.job_interruption_rate(rate, n, m)) == 8 * rate
    assert float(ec.job_interruption_rate(rate, n, m, 0.0)) == 8 * rate
    assert ec.assess(1.0, 3.0, rate, C5, R10, n, m, failure_rate_per_gpu_hour=0.0) == \
        ec.assess(1.0, 3.0, rate, C5, R10, n, m)


def test_failure_rate_adds_to_lam():
    rate, n, m, f = 0.037, 64, 8, 1e-4
    lam = float(ec.job_interruption_rate(rate, n, m, f))
    assert lam == pytest.approx(8 * rate + 64 * f, rel=1e-15)
    plain = ec.assess(1.0, 3.0, rate, C5, R10, n, m)
    failing = ec.assess(1.0, 3.0, rate, C5, R10, n, m, failure_rate_per_gpu_hour=f)
    assert failing.job_interruptions_per_hour == pytest.approx(lam, rel=1e-15)
    assert failing.goodput == pytest.approx(float(ec.optimal_goodput(lam, C5, R10)), rel=1e-14)
    assert failing.goodput < plain.goodput
    assert failing.break_even_interruptions_per_hour < plain.break_even_interruptions_per_hour
    # failures alone (no preemptions) still interrupt a gang
    assert float(ec.job_interruption_rate(0.0, n, m, f)) == pytest.approx(64 * f)


# --------------------------------------------------------------------------- gang size

@pytest.mark.parametrize("interval_h", [None, 1.0])
def test_goodput_falls_as_gang_grows(interval_h):
    sizes = 8 * 2 ** np.arange(12)  # 8 .. 16384 GPUs, 8 per instance
    assert sizes[-1] == 16384
    lam = np.asarray(ec.job_interruption_rate(0.02, sizes, 8))
    np.testing.assert_allclose(lam, 0.02 * sizes / 8, rtol=1e-15)
    tau = ec.optimal_interval(lam, C5) if interval_h is None else interval_h
    g = np.asarray(ec.goodput(lam, tau, C5, R10))
    assert np.all(np.diff(g) < 0)
    assert g[0] > 0.9 and g[-1] < 0.1


# --------------------------------------------------------------------------- expected loss

@pytest.mark.parametrize("lam, tau, c, r", [
    (0.1, 1.0, C5, R10), (2.0, 0.5, C5, 0.0), (1e-4, 2.0, C5, R10), (30.0, 0.2, 0.05, 0.3),
    (0.5, 0.01, 0.0, R10),
])
def test_expected_lost_hours_matches_numeric_integral(lam, tau, c, r):
    seg = tau + c
    num = simpson(lambda t: t * lam * np.exp(-lam * t), 0.0, seg)
    den = simpson(lambda t: lam * np.exp(-lam * t), 0.0, seg)
    expected = r + num / den
    assert float(ec.expected_lost_hours(lam, tau, c, r)) == pytest.approx(expected, rel=1e-6)


def test_expected_lost_hours_limits_and_series_branch():
    assert float(ec.expected_lost_hours(0.0, 1.0, C5, R10)) == pytest.approx(R10 + (1 + C5) / 2)
    assert float(ec.expected_lost_hours(0.5, math.inf, C5, R10)) == pytest.approx(R10 + 2.0)
    # both sides of the small-argument series switch (y = 1e-2) agree with the closed form
    for y in (0.99e-2, 1.01e-2, 1e-5):
        lam, seg = y / 2.0, 2.0
        closed = 1 / lam - seg / math.expm1(lam * seg)
        assert float(ec.expected_lost_hours(lam, seg, 0.0, 0.0)) == pytest.approx(closed, rel=1e-9)


# --------------------------------------------------------------------------- break-even

@pytest.mark.parametrize("spot, od, n, m, interval_h, f", [
    (1.0, 3.0, 8, 8, None, 0.0),
    (2.2, 3.0, 256, 8, None, 0.0),
    (0.4, 4.1, 1024, 8, None, 0.0),
    (1.0, 3.0, 64, 8, 0.75, 0.0),
    (1.0, 3.0, 64, 8, None, 2e-5),
    (0.3, 0.5, 1, 0.125, None, 0.0),
])
def test_break_even_rate_equalises_prices(spot, od, n, m, interval_h, f):
    rate = float(ec.break_even_rate(spot, od, C5, R10, n, m, interval_h, f))
    assert 0 < rate < math.inf

    def g_at(x):
        lam = float(ec.job_interruption_rate(x, n, m, f))
        tau = ec.optimal_interval(lam, C5) if interval_h is None else interval_h
        return float(ec.goodput(lam, tau, C5, R10))

    assert float(ec.effective_price(spot, g_at(rate))) == pytest.approx(od, rel=1e-6)
    assert spot / g_at(rate * 0.99) < od < spot / g_at(rate * 1.01)
    a = ec.assess(spot, od, rate * 0.9, C5, R10, n, m, interval_h, f)
    b = ec.assess(spot, od, rate * 1.1, C5, R10, n, m, interval_h, f)
    assert a.spot_pays and not b.spot_pays
    assert a.break_even_interruptions_per_hour == pytest.approx(rate, rel=1e-12)


def test_break_even_edge_cases_and_broadcasting():
    assert float(ec.break_even_rate(3.0, 3.0, C5, R10, 8, 8)) == 0.0
    assert float(ec.break_even_rate(4.0, 3.0, C5, R10, 8, 8)) == 0.0
    # no checkpoint or restart cost with optimal interval: goodput is always 1
    assert float(ec.break_even_rate(1.0, 3.0, 0.0, 0.0, 8, 8)) == math.inf
    assert math.isnan(float(ec.break_even_rate(1.0, np.nan, C5, R10, 8, 8)))
    many = np.asarray(ec.break_even_rate(1.0, 3.0, C5, R10, np.array([8, 64, 512]), 8))
    singles = [float(ec.break_even_rate(1.0, 3.0, C5, R10, n, 8)) for n in (8, 64, 512)]
    np.testing.assert_allclose(many, singles, rtol=1e-12)
    assert np.all(np.diff(many) < 0)  # bigger gangs tolerate fewer preemptions per instance


# --------------------------------------------------------------------------- gang limit

@pytest.mark.parametrize("rate, m, f, interval_h", [
    (0.05, 8, 0.0, None), (0.002, 8, 0.0, None), (0.01, 4, 1e-4, None), (0.05, 8, 0.0, 0.5),
])
def test_max_paying_job_gpus(rate, m, f, interval_h):
    spot, od = 1.0, 3.0
    n = float(ec.max_paying_job_gpus(spot, od, rate, C5, R10, m, interval_h, f))
    assert n >= 1 and n == int(n)

    def pays(gpus):
        lam = float(ec.job_interruption_rate(rate, gpus, m, f))
        tau = ec.optimal_interval(lam, C5) if interval_h is None else interval_h
        return spot / float(ec.goodput(lam, tau, C5, R10)) < od

    assert pays(n)
    assert not pays(n + m)
    assert not pays(n + 1)
    if f == 0:
        assert n % m == 0  # whole instances when only preemptions interrupt


def test_max_paying_job_gpus_edge_cases():
    assert float(ec.max_paying_job_gpus(1.0, 3.0, 100.0, C5, R10, 8)) == 0.0
    assert float(ec.max_paying_job_gpus(3.5, 3.0, 0.01, C5, R10, 8)) == 0.0
    assert float(ec.max_paying_job_gpus(1.0, 3.0, 0.0, C5, R10, 8)) == math.inf
    out = np.asarray(ec.max_paying_job_gpus(1.0, 3.0, np.array([0.01, 0.05]), C5, R10, 8))
    assert out.shape == (2,) and out[0] > out[1] > 0


# --------------------------------------------------------------------------- assess

def test_assess_uses_goodput_override_exactly():
    # the model alone says spot pays here (goodput ~0.97); the override says it does not
    model = ec.assess(2.0, 2.5, 0.01, C5, R10, 8, 8)
    assert model.spot_pays and model.goodput > 0.9
    a = ec.assess(2.0, 2.5, 0.01, C5, R10, 8, 8, goodput_override=0.7)
    assert a.goodput == 0.7
    assert a.effective_usd_per_useful_gpu_hour == 2.0 / 0.7
    assert not a.spot_pays
    assert a.interval_hours == model.interval_hours


def test_assess_fields_and_missing_on_demand():
    a = ec.assess(1.0, 3.0, 0.05, C5, R10, 64, 8)
    lam = 8 * 0.05
    assert a.job_interruptions_per_hour == lam
    assert a.interval_hours == float(ec.optimal_interval(lam, C5))
    assert a.young_interval_hours == pytest.approx(math.sqrt(2 * C5 / lam))
    assert a.goodput == pytest.approx(naive_goodput(lam, a.interval_hours, C5, R10), rel=1e-12)
    assert a.effective_usd_per_useful_gpu_hour == pytest.approx(1.0 / a.goodput)
    assert a.expected_lost_hours == float(ec.expected_lost_hours(lam, a.interval_hours, C5, R10))
    assert isinstance(a.spot_pays, bool) and isinstance(a.goodput, float)
    fixed = ec.assess(1.0, 3.0, 0.05, C5, R10, 64, 8, interval_h=2.0)
    assert fixed.interval_hours == 2.0 and fixed.goodput < a.goodput
    for od in (None, math.nan):
        b = ec.assess(5.0, od, 0.05, C5, R10, 64, 8)
        assert b.spot_pays is True and math.isnan(b.break_even_interruptions_per_hour)


def test_negative_inputs_rejected():
    with pytest.raises(ValueError):
        ec.goodput(-0.1, 1.0, C5, R10)
    with pytest.raises(ValueError):
        ec.job_interruption_rate(0.1, 8, 0.0)
