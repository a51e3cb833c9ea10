"""allocation.csv and fleet.csv: every period of the plan, whatever the workbook sums."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def test_allocation_csv_holds_every_period_and_prices_to_the_plan(example_plan):
    plan, paths = example_plan
    a = pd.read_csv(paths["allocation"])
    assert len(a) == len(plan.allocation)
    assert pd.to_datetime(a["period"]).min() == plan.inputs.periods[0]
    od = a[a["option"] == "on_demand"].merge(
        plan.inputs.pools[["gpu_type", "region", "od"]], on=["gpu_type", "region"])
    assert float((od["gpu_hours"] * od["od"]).sum()) == pytest.approx(plan.cost["on_demand"], rel=1e-9)
    f = pd.read_csv(paths["fleet"])
    assert len(f) == len(plan.fleet)
    np.testing.assert_allclose(f["reserved_owned"].to_numpy(), plan.fleet["reserved_owned"].to_numpy(), rtol=1e-9)
