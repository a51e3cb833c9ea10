"""Input formats (wide form, .xlsx, scenarios) give the same plans as the plain long-form CSV."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import price, solve_case, write_case


def test_wide_form_demand_equals_long_form(tmp_path):
    m = write_case(tmp_path, {"a": [3, 5, 2], "b": [1, 0, 4]},
                   [price(hourly=1.0), price(option="reserved_1y", hourly=0.5)], {"a": {}, "b": {"headroom": 0.5}})
    long_plan = solve_case(m)
    long = pd.read_csv(tmp_path / "demand.csv")
    wide = long.pivot(index="period", columns="workload_class", values="gpus").reset_index()
    wide.to_csv(tmp_path / "demand.csv", index=False)
    wide_plan = solve_case(m)
    assert wide_plan.cost["total"] == pytest.approx(long_plan.cost["total"])
    assert list(wide_plan.inputs.classes) == ["a", "b"]


def test_xlsx_inputs_equal_csv_inputs(tmp_path):
    m = write_case(tmp_path, {"a": [3, 5, 2]}, [price(hourly=1.0), price(option="reserved_1y", hourly=0.5)], {"a": {}})
    csv_plan = solve_case(m)
    for name in ("demand", "prices"):
        pd.read_csv(tmp_path / f"{name}.csv").to_excel(tmp_path / f"{name}.xlsx", index=False)
    text = m.read_text().replace("demand.csv", "demand.xlsx").replace("prices.csv", "prices.xlsx")
    m.write_text(text)
    xlsx_plan = solve_case(m)
    assert xlsx_plan.cost["total"] == pytest.approx(csv_plan.cost["total"])


@pytest.mark.slow
@pytest.mark.parametrize("r,reserved,expected", [(0.6, 0, 50.0), (0.4, 10, 40.0)])
def test_two_scenarios_by_hand(tmp_path, backend, r, reserved, expected):
    # low: no demand, high: 10 GPUs, each p = 0.5, 10 one-hour periods, on-demand 1 $/h, reserved r $/h:
    # E[cost](n) = 10 r n + 0.5 x 10 x (10 - n)  ->  n = 0 when r > 0.5 (cost 50), n = 10 when r < 0.5 (cost 10 r 10).
    m = write_case(tmp_path, {"c": [0] * 10}, [price(hourly=1.0), price(option="reserved_1y", hourly=r)], {"c": {}},
                   extra_top="")
    d = pd.read_csv(tmp_path / "demand.csv")
    both = pd.concat([d.assign(scenario="low"), d.assign(gpus=10.0, scenario="high")])
    both.to_csv(tmp_path / "demand.csv", index=False)
    m.write_text(m.read_text() + "[scenarios]\nlow = 0.5\nhigh = 0.5\n")
    plan = solve_case(m, backend)
    assert int(plan.purchases["instances"].sum()) == reserved
    assert plan.cost["total"] == pytest.approx(expected)
    costs = plan.scenario_costs.set_index("scenario")["total"]
    assert (costs * 0.5).sum() == pytest.approx(expected)


def test_single_scenario_column_is_the_deterministic_plan(tmp_path):
    m = write_case(tmp_path, {"c": [4, 9, 2, 7]}, [price(hourly=1.0), price(option="reserved_1y", hourly=0.55)],
                   {"c": {}})
    plain = solve_case(m)
    d = pd.read_csv(tmp_path / "demand.csv").assign(scenario="only")
    d.to_csv(tmp_path / "demand.csv", index=False)
    one = solve_case(m)
    assert one.cost == pytest.approx(plain.cost)
    assert one.purchases["instances"].tolist() == plain.purchases["instances"].tolist()
