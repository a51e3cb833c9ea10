"""Commitments that outlive the horizon: how they were judged is said in plan.json and the terminal."""

from __future__ import annotations

import json

from planner import load_inputs, make_plan
from planner.inputs.term import term_judgement
from planner.pipeline.run import write_outputs
from planner.report.summary import summary_text
from conftest import price, write_case


def test_a_term_longer_than_the_horizon_is_named(tmp_path):
    m = write_case(tmp_path, {"c": [4] * 10}, [price(hourly=1.0), price(option="reserved_1y", hourly=0.5,
                                                                         term_months=12)], {"c": {}})
    plan = make_plan(load_inputs(m), mip_gap=0, risk=False)
    term = json.loads(write_outputs(plan, tmp_path / "out")["json"].read_text())["term"]
    assert term["source"] == "horizon" and term["months"] == 12 and term["branches"] == 1
    assert term["note"].startswith("1-year terms judged on the 10-hour demand given only (amortised")
    assert "term: 1-year terms judged on the 10-hour demand" in summary_text(plan)


def test_no_statement_when_every_term_fits_the_horizon(tmp_path):
    # one month of hourly demand, a one-month term: nothing lies past the horizon
    m = write_case(tmp_path, {"c": [4] * 730}, [price(hourly=1.0), price(option="reserved_1m", hourly=0.5,
                                                                          term_months=1)], {"c": {}})
    inp = load_inputs(m)
    assert term_judgement(inp) is None
