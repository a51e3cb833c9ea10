"""planner: the GPU fleet mix (reserved / on-demand / spot) that meets demand at least cost.

The data flows one way: read (``io``) -> validate (``validate``) -> inputs
(``inputs``) -> build model (``model``) -> solve (``solve``) -> plan
(``results``) -> report (``report``). ``pipeline`` strings them together and
``api`` is the notebook's way in:

    import planner
    p = planner.plan("models/example.toml")      # or planner.plan(planner.inputs_from_frames(...))
    p.purchases; p.allocation; p.summary(); p.to_excel("plan.xlsx")

Names are imported on first use, so ``import planner`` stays fast (pandas, PuLP and HiGHS load
when a plan is made, not before).
"""

__version__ = "0.1.0"

_EXPORTS = {
    "plan": "api", "inputs_from_frames": "api",
    "load_inputs": "pipeline", "make_plan": "pipeline", "run": "pipeline", "write_outputs": "pipeline",
    "Plan": "results", "PlanInputs": "inputs", "PlanModel": "model", "build_model": "model",
    "Status": "solve", "SolveResult": "solve",
    "PlannerError": "errors", "InputError": "errors", "ConfigError": "errors", "SolverError": "errors",
    "Problem": "errors", "ModelConfig": "config", "load_model": "config",
    "forecast_demand": "forecasting", "ForecastResult": "forecasting",
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
