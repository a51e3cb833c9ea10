"""What-if analysis: compare whole plans side by side (``planner compare``) and sweep factors (``planner sweep``).

* :mod:`.metrics`  -- the few numbers of a plan that a comparison or a sweep tabulates;
* :mod:`.pricediff` -- what changed between two price sheets;
* :mod:`planner.core.executors` -- runs the solves (local processes or Dask) with progress and time left;
* :mod:`.compare`  -- scenarios -> plans -> ``comparison.json`` / ``comparison.xlsx``;
* :mod:`.sweep`    -- factor grids -> plans -> ``sweep.json`` / ``sweep.csv`` / ``sweep.xlsx``;
* :mod:`.report`   -- the two workbooks.

Nothing here models or solves: every plan comes from :func:`planner.pipeline.run.make_plan`, as in
``planner plan``; a sweep point's inputs from :func:`planner.inputs.arrays.scale_inputs`.
"""

from planner.whatif.pricediff import PriceDiff, diff_prices

__all__ = ["PriceDiff", "diff_prices"]
