"""forecast.csv, scenarios.toml and forecast.json, published together (all three of one run, or none)."""

from __future__ import annotations

import json
from pathlib import Path

NAMES = ("forecast.csv", "scenarios.toml", "forecast.json")


FORECAST_FILES = ("forecast.csv", "scenarios.toml", "forecast.json")  # what write_forecast publishes together


def write_forecast(result, out_dir, *, quantile_form: bool = False) -> dict[str, Path]:
    """Write ``result`` (a :class:`~planner.forecasting.engine.ForecastResult`) into ``out_dir`` with
    :func:`planner.core.atomic.publish_together`; ``quantile_form``: forecast.csv with one column per quantile
    (period, workload_class, p10, p50, p90[, hours]) instead of gpus + scenario (not for a scenario tree: its
    leaves are not quantiles, an InputError). forecast.json carries the run's ``run_id`` and ``created_utc``."""
    import uuid
    from datetime import datetime, timezone

    from planner.core.atomic import publish_together
    from planner.core.errors import InputError
    from planner.forecasting.tree import option_problems

    if quantile_form and result.tree is not None:
        raise InputError(option_problems(result.tree.by, quantile_form=True))
    doc = {"run_id": uuid.uuid4().hex,
           "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")} | result.report
    table = result.quantiles if quantile_form else result.demand
    return publish_together(Path(out_dir), {
        "forecast.csv": lambda path: table.to_csv(path, index=False),
        "scenarios.toml": lambda path: path.write_text(result.scenarios_toml(), encoding="utf-8"),
        "forecast.json": lambda path: path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")})
