"""planner: the GPU fleet mix (reserved / on-demand / spot) that meets demand at least cost.

The data flows one way: read (``io``) -> validate (``validate``) -> inputs
(``inputs``) -> build model (``model``) -> solve (``solve``) -> plan
(``results``) -> report (``report``). ``pipeline`` strings them together.
"""

__version__ = "0.1.0"

from .pipeline import load_inputs, make_plan, run, write_outputs  # noqa: E402

__all__ = ["__version__", "load_inputs", "make_plan", "run", "write_outputs"]
