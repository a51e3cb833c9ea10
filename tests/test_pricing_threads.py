"""The in-process pricing on threads (issue 37, the small models' share of the machine): the batches priced side by
side in this process must give what one thread gives, bit for bit, and the two shortcuts measured beside it must
give what they replace.

Oracles: one thread (the batches one after the other, as before) against two; a plan made the default way against
the same plan made with ``--jobs 1``; ``scale_inputs`` against the spot economics recomputed from scratch; the
supply registry's ``mask`` against the obvious per-row reading of the registry."""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from planner import make_plan
from planner.core.executors import LocalExecutor, default_jobs, threads_here
from planner.inputs import supply
from planner.inputs import arrays
from planner.inputs.arrays import _goodput, scale_inputs, todays_terms
from planner.pipeline.run import load_inputs
from planner.solve.decompose import chunk_index, cut_groups, solve_benders
from planner.solve.recourse import portable_basis
from planner.solve.workers import MAX_THREADS, LocalPricer, make_pricer
from conftest import price, write_case
from test_decompose import _case


def _benders(inp):
    return replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, method="benders")))


def _same_priced(a, b):
    assert np.array_equal(a.values, b.values)
    assert np.array_equal(a.group, b.group) and np.array_equal(a.row, b.row) and np.array_equal(a.coef, b.coef)
    assert a.iterations == b.iterations and a.fell_back == b.fell_back
    assert (a.solution is None) == (b.solution is None)
    assert a.solution is None or np.array_equal(a.solution, b.solution)
    _same_tree(a.dual_sums, b.dual_sums)
    _same_tree(a.costs, b.costs)
    assert (a.cut is None) == (b.cut is None)
    if a.cut is not None:
        _same_priced(a.cut, b.cut)
    if a.basis is not None or b.basis is not None:
        pa, pb = portable_basis(a.basis), portable_basis(b.basis)
        assert np.array_equal(pa[0], pb[0]) and np.array_equal(pa[1], pb[1])


def _same_tree(x, y):
    """Equal, whatever nests dicts, lists and arrays."""
    assert type(x) is type(y)
    if isinstance(x, dict):
        assert x.keys() == y.keys()
        for k in x:
            _same_tree(x[k], y[k])
    elif isinstance(x, (list, tuple)):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            _same_tree(u, v)
    elif isinstance(x, np.ndarray):
        assert np.array_equal(x, y)
    else:
        assert x == y


def test_two_threads_price_every_batch_as_one_thread_does_bit_for_bit(tmp_path):
    inp = _case(tmp_path, 31, scenarios=True, days=200)
    chunks = chunk_index(inp, "week")
    one, two = LocalPricer(inp, chunks, cut_groups(inp), threads=1), LocalPricer(inp, chunks, cut_groups(inp), threads=2)
    assert one.threads == 1 and two.threads == 2 and len(chunks) > 4
    try:
        rng = np.random.default_rng(3)
        bases_one = bases_two = [None] * len(chunks)
        for call, (solution, scale) in enumerate([(False, 1.0), (True, 1.0), ("costs", 1.0), (True, 0.8),
                                                  ("plan+cuts", 1.0), (False, 1.0)]):
            n = rng.integers(0, 4, len(inp.commitments)).astype(float)
            a = one.price(n, bases_one, solution=solution, scale=scale)
            b = two.price(n, bases_two, solution=solution, scale=scale)
            assert len(a) == len(b) == len(chunks)
            for x, y in zip(a, b):
                _same_priced(x, y)
            bases_one, bases_two = [r.basis for r in a], [r.basis for r in b]  # each warm from its own last
        assert two._pool is not None  # the threads were used, and kept between calls
    finally:
        one.close()
        two.close()
    assert two._pool is None and not [t for t in threading.enumerate() if t.name.startswith("planner-pricing")]


def test_the_default_plan_is_the_one_thread_plan_and_leaves_no_thread(tmp_path):
    inp = _benders(_case(tmp_path, 32, days=150))
    assert isinstance(make_pricer(inp, chunk_index(inp, "week"), "block", None), LocalPricer)
    a = make_plan(inp, mip_gap=1e-7)  # the default: this process, every core's threads
    b = make_plan(inp, mip_gap=1e-7, executor=LocalExecutor(1))  # --jobs 1: one thread
    said = a.stats["benders"], b.stats["benders"]  # plan.json's model_size.benders: how it was priced
    assert said[0]["threads"] == min(default_jobs(), MAX_THREADS, said[0]["batches"]) and said[1]["threads"] == 1
    assert said[0]["pricer"] == said[1]["pricer"] == "here" and said[0]["workers"] == said[1]["workers"] == 1
    assert a.objective == b.objective and a.cost == b.cost
    pd.testing.assert_frame_equal(a.purchases, b.purchases)
    pd.testing.assert_frame_equal(a.fleet, b.fleet)
    pd.testing.assert_frame_equal(a.allocation, b.allocation)
    assert not [t for t in threading.enumerate() if t.name.startswith("planner-pricing")]


def _threads_in_worker(_task):
    return threads_here()


def test_an_executors_worker_prices_on_one_thread_its_siblings_use_the_other_cores():
    got = LocalExecutor(2, isolate=True).map(_threads_in_worker, [0, 1], progress=False)
    assert [o.value for o in got] == [1, 1] and all(o.ok for o in got)
    alone = LocalExecutor(1, isolate=True).map(_threads_in_worker, [0], progress=False)  # a pool of one: no sibling
    assert [o.value for o in alone] == [default_jobs()]


def test_an_interrupt_beside_the_pricing_lets_the_running_lps_end_and_drops_the_rest(tmp_path, monkeypatch):
    inp = _case(tmp_path, 40, days=200)
    chunks = chunk_index(inp, "week")
    seen = _watched(monkeypatch)
    p = LocalPricer(inp, chunks, cut_groups(inp), threads=2)

    def interrupt():
        seen["first"].wait(5.0)
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            p.price(np.zeros(len(inp.commitments)), [None] * len(chunks), meanwhile=interrupt)
        assert 0 < seen["started"] == seen["ended"] < len(chunks)  # none running when it surfaced; the rest dropped
    finally:
        p.close()


def _watched(monkeypatch):
    """The batches' LPs counted as they start and end (each held 50 ms, so that they overlap what runs beside)."""
    import time

    from planner.solve import workers

    seen = {"started": 0, "ended": 0, "first": threading.Event()}
    real = workers.price

    def price(*args, **kwargs):
        seen["started"] += 1
        seen["first"].set()
        time.sleep(0.05)
        try:
            return real(*args, **kwargs)
        finally:
            seen["ended"] += 1

    monkeypatch.setattr(workers, "price", price)
    return seen


def test_the_work_beside_runs_while_the_threads_price(tmp_path, monkeypatch):
    inp = _case(tmp_path, 37, days=120)
    chunks = chunk_index(inp, "week")
    seen = _watched(monkeypatch)
    p = LocalPricer(inp, chunks, cut_groups(inp), threads=2)
    during = {}

    def beside():
        during["a batch had started"] = seen["first"].wait(5.0)
        during["all ended"] = seen["ended"] == len(chunks)

    try:
        p.price(np.zeros(len(inp.commitments)), [None] * len(chunks), meanwhile=beside)
    finally:
        p.close()
    assert during == {"a batch had started": True, "all ended": False} and seen["ended"] == len(chunks)


def test_an_error_beside_the_pricing_is_raised_once_the_threads_are_done(tmp_path, monkeypatch):
    inp = _case(tmp_path, 33, days=120)
    chunks = chunk_index(inp, "week")
    seen = _watched(monkeypatch)
    p = LocalPricer(inp, chunks, cut_groups(inp), threads=2)
    n = np.zeros(len(inp.commitments))

    def boom():
        raise RuntimeError("read failed")

    try:
        with pytest.raises(RuntimeError, match="read failed"):
            p.price(n, [None] * len(chunks), meanwhile=boom)
        assert seen["ended"] == seen["started"] == len(chunks)  # no LP still running when it surfaced
        monkeypatch.undo()
        want = LocalPricer(inp, chunks, cut_groups(inp), threads=1).price(n, [None] * len(chunks))
        got = p.price(n, [None] * len(chunks))  # the pricer is whole after it
        for x, y in zip(want, got):
            _same_priced(x, y)
    finally:
        p.close()


def test_a_batch_that_fails_beside_a_failed_read_says_both(tmp_path, monkeypatch):
    from planner.core.errors import SolverError
    from planner.solve import workers

    inp = _case(tmp_path, 38, days=120)
    chunks = chunk_index(inp, "week")
    p = LocalPricer(inp, chunks, cut_groups(inp), threads=2)
    real, target = workers.price, p.batches[1]

    def price(batch, *args, **kwargs):
        if batch is target:
            raise SolverError("a batch's recourse LP did not solve: Infeasible")
        return real(batch, *args, **kwargs)

    monkeypatch.setattr(workers, "price", price)

    def boom():
        raise RuntimeError("read failed")

    try:
        with pytest.raises(SolverError, match="did not solve") as err:
            p.price(np.zeros(len(inp.commitments)), [None] * len(chunks), meanwhile=boom)
        assert isinstance(err.value.__context__, RuntimeError) and "read failed" in str(err.value.__context__)
    finally:
        p.close()


def test_the_model_files_solver_threads_bound_the_pricing_threads(tmp_path):
    inp = _case(tmp_path, 39, days=150)
    chunks = chunk_index(inp, "week")
    one = replace(inp, config=replace(inp.config, solver=replace(inp.config.solver, threads=1)))
    every = min(default_jobs(), MAX_THREADS, len(chunks))
    for given, threads, want in ((inp, None, every), (one, None, 1), (one, 2, 1), (inp, 1, 1)):
        p = LocalPricer(given, chunks, cut_groups(given), threads=threads)
        try:
            assert p.threads == want
        finally:
            p.close()


def _threads_in_task(_task):
    return threads_here()


def test_a_dask_task_in_this_process_prices_on_one_thread_and_this_process_on_every_core_after():
    from planner.core.executors import DaskExecutor

    with DaskExecutor(jobs=1, processes=False) as ex:
        got = ex.map(_threads_in_task, [0, 1], progress=False)
    assert [o.value for o in got] == [1, 1]
    assert threads_here() == default_jobs()  # the flag was the task's, not this process's


def test_a_benders_loop_on_two_threads_is_the_loop_on_one(tmp_path):
    inp = _case(tmp_path, 34, scenarios=True, days=200)
    chunks = chunk_index(inp, "week")
    runs = []
    for threads in (1, 2):
        p = LocalPricer(inp, chunks, cut_groups(inp), threads=threads)
        try:
            runs.append(solve_benders(inp, mip_gap=1e-7, chunk="week", pricer=p))
        finally:
            p.close()
    a, b = runs
    assert a.upper == b.upper and a.lower == b.lower and a.iterations == b.iterations
    assert np.array_equal(a.n, b.n)


def _recomputed(inp):
    """The spot economics of ``inp`` computed afresh (the last answer forgotten first)."""
    arrays._GOODPUT_LAST[0] = None
    return _goodput(inp.config, inp.classes, inp.pools, inp.speed, todays_terms(inp.options, inp.periods[0]))


def _carries_its_own(inp):
    goodput, reliability, spot = _recomputed(inp)
    assert np.array_equal(inp.goodput, goodput) and np.array_equal(inp.reliability, reliability)
    pd.testing.assert_frame_equal(inp.spot.reset_index(drop=True), spot.reset_index(drop=True))


def _slo_case(folder):
    demand = [30.0 + 60.0 * (i % 24) / 23 for i in range(72)]
    m = write_case(folder, {"chat": demand, "train": [8.0] * 72},
                   [price("H100", hourly=10.0), price("H100", option="spot", hourly=3.0, interruptions_per_hour=0.05),
                    price("A100", hourly=2.0, max_gpus=20), price("A100", option="spot", hourly=0.8,
                                                                 interruptions_per_hour=0.1)],
                   {"chat": {"spot": False, "demand_unit": "requests_per_s", "latency_slo_ms": 3000,
                             "slo_percentile": 99, "replicas": {"H100": {"service_ms": 400}, "A100": {"service_ms": 550}}},
                    "train": {"spot": True, "gpu_types": {"H100": 1.0, "A100": 0.5}}})
    return load_inputs(m)


@pytest.mark.parametrize("factors", [dict(demand_level=0.7), dict(demand_growth=1.3),
                                     dict(demand_level=0.8, spot_price=0.5), dict(interruptions=2.0)])
def test_scaled_inputs_carry_the_spot_economics_recomputed_from_their_own_prices(tmp_path, factors):
    inp = _case(tmp_path, 35, days=60)
    s = scale_inputs(inp, **factors)
    _carries_its_own(s)
    if "spot_price" in factors or "interruptions" in factors:  # (the spot economics really moved)
        assert not s.spot.equals(inp.spot)


def test_slo_classes_sized_again_with_the_demand_get_the_economics_of_their_new_speeds(tmp_path):
    inp = _slo_case(tmp_path)
    s = scale_inputs(inp, demand_level=0.3)
    assert not np.array_equal(s.speed, inp.speed)  # the queue sized the chat replicas again
    _carries_its_own(s)


def test_inputs_changed_by_hand_get_the_economics_of_their_own_prices_when_scaled(tmp_path):
    inp = _case(tmp_path, 36, days=60)
    pools = inp.pools.copy()
    pools["sp"], pools["ip"] = pools["sp"] * 0.5, pools["ip"] * 3.0
    hand = replace(inp, pools=pools)  # its goodput still the old prices' (the user did not recompute it)
    s = scale_inputs(hand, demand_level=0.8)
    _carries_its_own(s)
    assert not np.array_equal(s.goodput, inp.goodput)
    # arrays changed in place after an answer was given are not the ones it was computed from
    again = scale_inputs(inp, demand_level=0.8)
    inp.pools["ip"] *= 3.0  # in place: the same DataFrame, other interruption rates
    moved = scale_inputs(inp, demand_level=0.8)
    assert not np.array_equal(moved.goodput, again.goodput)
    _carries_its_own(moved)
    inp.pools["sp"] *= 0.25  # the spot price moves the table's costs, not the goodput
    cheaper = scale_inputs(inp, demand_level=0.8)
    assert not cheaper.spot["spot_usd_per_gpu_hour"].equals(moved.spot["spot_usd_per_gpu_hour"])
    _carries_its_own(cheaper)


def test_a_class_policy_changed_in_place_gets_its_own_economics(tmp_path):
    from planner.inputs.arrays import build_inputs

    inp = _case(tmp_path, 41, days=60)
    pol = inp.config.classes["b"]
    inp.config.classes["b"] = replace(pol, checkpoint_minutes=pol.checkpoint_minutes + 90, spot_goodput=0.3)
    again = build_inputs(inp.config, inp.tables)  # the same settings object, one of its policies replaced
    assert not np.array_equal(again.goodput, inp.goodput)
    _carries_its_own(again)


def _mask_by_rows(kinds, **behaviour):
    """The registry read row by row: a missing kind is the default kind."""
    out = []
    for k in list(kinds):
        k = supply.DEFAULT if k is None or k is pd.NA or (isinstance(k, float) and np.isnan(k)) else k
        s = supply.get(k)
        out.append(all(getattr(s, b) == v for b, v in behaviour.items()))
    return np.array(out, dtype=bool)


@pytest.mark.parametrize("kinds", [
    ["reserved", "spot", "on_demand", "savings_plan"], [None, "spot", np.nan, "reserved"], [],
    pd.Series(["reserved", None, "spot"], dtype=object), pd.Series(["spot", pd.NA], dtype="string"),
    np.array(["on_demand"] * 5, dtype=object), pd.Series(["reserved_1y", "on_demand"]),
])
@pytest.mark.parametrize("behaviour", [dict(adds_capacity=True), dict(unit="usd_per_hour"), dict(stage="first"),
                                       dict(rented=True, preemptible=True)])
def test_the_registry_mask_is_its_row_by_row_reading(kinds, behaviour):
    got = supply.mask(kinds, **behaviour)
    assert got.dtype == bool and np.array_equal(got, _mask_by_rows(kinds, **behaviour))
    table = pd.DataFrame({"kind": pd.Series(list(kinds), dtype=object)})
    assert np.array_equal(supply.table_mask(table, **behaviour), _mask_by_rows(table["kind"], **behaviour))
    bare = pd.DataFrame({"x": range(len(kinds))})  # no kind column: the default kind on every row
    assert np.array_equal(supply.table_mask(bare, **behaviour), _mask_by_rows([None] * len(kinds), **behaviour))


@pytest.mark.parametrize("kinds", ["spot", (k for k in ["spot", "reserved"]), {"a": "spot", "b": None}])
def test_the_registry_mask_takes_what_a_series_takes(kinds):
    as_series = pd.Series(kinds, dtype=object)
    want = _mask_by_rows(list(as_series), preemptible=True)
    assert np.array_equal(supply.mask(kinds if not isinstance(kinds, type(x for x in [])) else
                                      (k for k in as_series), preemptible=True), want) and len(want) >= 1


def test_an_unknown_kind_is_still_an_error():
    with pytest.raises(KeyError):
        supply.mask(["reserved", "no-such-kind"], adds_capacity=True)
