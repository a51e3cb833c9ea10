"""planner: the GPU fleet mix (reserved / on-demand / spot) that meets demand at least cost.

Packages by layer, data flowing one way (an import-linter contract in pyproject.toml keeps it so): ``core``
(errors, atomic writes) and ``sizing`` (closed forms) at the bottom; ``inputs`` (read, validate, the model file,
the supply registry, the commitments, the arrays) -> ``model`` (constraint families by stage) -> ``solve``
(HiGHS/CBC, the decomposition) -> ``results`` (the plan) -> ``memo`` -> ``report`` / ``export``; ``pipeline``
strings them together; ``backtest``, ``whatif``, ``imports`` and ``forecasting`` use it; ``api`` is the
notebook's way in and ``cli`` the command line's:

    import planner
    p = planner.plan("models/example.toml")      # or planner.plan(planner.inputs_from_frames(...))
    p.purchases; p.allocation; p.summary(); p.to_excel("plan.xlsx")

Names are imported on first use, so ``import planner`` stays fast (pandas, PuLP and HiGHS load
when a plan is made, not before).
"""

__version__ = "0.1.0"

_EXPORTS = {
    "plan": "api", "inputs_from_frames": "api",
    "load_inputs": "pipeline.run", "make_plan": "pipeline.run", "run": "pipeline.run", "write_outputs": "pipeline.run",
    "Plan": "results.plan", "PlanInputs": "inputs.arrays", "PlanModel": "model", "build_model": "model",
    "Status": "solve.monolithic", "SolveResult": "solve.monolithic",
    "PlannerError": "core.errors", "InputError": "core.errors", "ConfigError": "core.errors",
    "SolverError": "core.errors", "Problem": "core.errors", "ModelConfig": "inputs.config",
    "load_model": "inputs.config", "forecast_demand": "forecasting", "ForecastResult": "forecasting",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'planner' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
