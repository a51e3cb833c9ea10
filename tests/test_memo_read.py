"""The memo's re-solves are read without the tables their figures never use (``extract_plan(detail=False)``): every
figure :func:`planner.memo.resolve.plan_figures` reports is the same, bit for bit, as from the full read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner import load_inputs
from planner.memo.resolve import plan_figures
from planner.model import build_model
from planner.results.plan import extract_plan
from planner.solve.monolithic import solve
from conftest import price, write_case

HOURS = 24 * 21


def _demand(seed: int, base: float, swing: float) -> list[float]:
    rng = np.random.default_rng(seed)
    t = np.arange(HOURS)
    return list(np.round(base + swing * np.sin(2 * np.pi * t / 24) + rng.normal(0, 2, HOURS), 1).clip(0))


def _payment_options(folder):
    """Three payment options of one reserved term beside on-demand and spot: a plan buys some."""
    rows = [price("A", "r1", hourly=2.0), price("A", "r1", option="spot", hourly=0.7, interruptions_per_hour=0.05),
            price("A", "r1", option="reserved_1y_no_upfront", hourly=0.3, term_months=12 / 365 * 21),
            price("A", "r1", option="reserved_1y_all_upfront", hourly=0.0, upfront_usd=140.0,
                  term_months=12 / 365 * 21),
            price("A", "r1", option="reserved_1y_partial", hourly=0.15, upfront_usd=72.0, term_months=12 / 365 * 21)]
    return write_case(folder, {"train": _demand(1, 40, 15), "serve": _demand(2, 20, 8)}, rows,
                      {"train": {"gpu_types": {"A": 1.0}, "regions": ["r1"]},
                       "serve": {"gpu_types": {"A": 1.0}, "regions": ["r1"], "spot": False}})


def _savings_plan(folder):
    """A savings plan beside reserved and on-demand over two GPU types."""
    rows = [price("A", "r", hourly=2.0), price("B", "r", hourly=1.0),
            price("A", "r", option="reserved_1y", hourly=0.9, term_months=12 / 365 * 21)]
    m = write_case(folder, {"a": _demand(3, 30, 10), "b": _demand(4, 12, 4)}, rows,
                   {"a": {"gpu_types": {"A": 1.0}}, "b": {"gpu_types": {"B": 1.0}}})
    rows += [dict(gpu_type=g, region="r", option="savings_plan_1y", hourly_usd=r, term_months=12 / 365 * 21)
             for g, r in (("A", 1.2), ("B", 0.8))]
    pd.DataFrame(rows).to_csv(folder / "prices.csv", index=False)
    return m


def _scenarios(folder):
    """Three demand quantiles (scenarios p10, p50, p90 at 0.3, 0.4, 0.3) over the payment-options case."""
    m = _payment_options(folder)
    d = pd.read_csv(folder / "demand.csv")
    pd.concat([d.assign(scenario=q, gpus=(d["gpus"] * f).round(1)) for q, f in (("p10", 0.8), ("p50", 1.0),
                                                                               ("p90", 1.25))]
              ).to_csv(folder / "demand.csv", index=False)
    return m


CASES = {"payment options and spot": _payment_options, "a savings plan": _savings_plan,
         "three demand scenarios": _scenarios}


@pytest.mark.parametrize("case", list(CASES))
def test_the_memos_light_read_gives_every_figure_of_the_full_read(tmp_path, case):
    inp = load_inputs(CASES[case](tmp_path))
    assert len(inp.scenarios) == (3 if case == "three demand scenarios" else 1)
    model = build_model(inp)
    result = solve(model, "highs", 60, 0.0, None)
    full = extract_plan(inp, model, result, {}, allocation=True)
    light = extract_plan(inp, model, result, {}, allocation=False, detail=False)
    assert full.purchases["units"].sum() > 0  # something bought: the figures read its tranches
    a, b = plan_figures(full), plan_figures(light)
    assert a == b  # every figure, bit for bit
    assert a["reserved_usd"] > 0 and a["total_cost_usd"] > a["reserved_usd"]
    # the light read keeps the tables the figures read, and drops the payment options the full one holds
    for table in ("purchases", "fleet", "cash_schedule", "spend"):
        pd.testing.assert_frame_equal(getattr(full, table), getattr(light, table))
    assert full.cost == light.cost and full.commitments == light.commitments and full.finance == light.finance
    assert light.payment_options.empty and light.latency.empty and light.coverage.empty
    if case != "a savings plan":
        assert len(full.payment_options) >= 3  # every payment option of each purchase: not read by the figures
