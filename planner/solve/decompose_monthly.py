"""The previous Benders scheme, kept behind ``solve_benders(..., multicut=False)``: one aggregated cut per
calendar-month chunk (``theta_j >= Q_j(n_bar) + sum_c d_jc (n_c - n_bar_c)``, ``d`` the reduced costs of the
fixed purchase columns of chunk ``j``'s LP). The gap is proven on the full model as in
:mod:`planner.solve.decompose`; it needs many more iterations (12 numbers learnt per pass), so it is not the default.
"""

from __future__ import annotations

import time

import numpy as np

from planner.solve.chunks import chunk_index, chunk_inputs  # noqa: F401
from planner.solve.master import ABS_TOL, REL_TOL, BendersResult, add_first_stage_rows, check_master  # noqa: F401
from planner.inputs.arrays import PlanInputs
from planner.model import build_model, unit_bounds, unit_integer
from planner.model.objective import first_stage_cost


class _Chunk:
    """One chunk's recourse LP in HiGHS, kept alive: each new ``n`` changes bounds and re-solves warm."""

    def __init__(self, inp: PlanInputs, n0: np.ndarray, highspy, threads):
        from planner.solve.monolithic import new_highs, pass_model

        self.model = build_model(inp, fixed_reserved=n0, owned_tie=False)  # a decision's LP (objective.tie_breaks)
        self.model.cost[self.model.families["n"]["col"].to_numpy()] = 0.0  # purchases are paid in the master
        self.cols = self.model.families["n"]["col"].to_numpy().astype(np.int32)
        self.h = new_highs(highspy, None, 0.0, threads)
        pass_model(self.h, self.model, highspy, integer=False)
        self.highspy = highspy

    def price(self, n: np.ndarray) -> tuple[float, np.ndarray]:
        """(Q_j(n), subgradient d_j) at ``n``."""
        from planner.core.errors import SolverError

        self.h.changeColsBounds(len(self.cols), self.cols, n.astype(float), n.astype(float))
        self.h.run()
        if self.h.getModelStatus() != self.highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"a chunk's recourse LP did not solve: {self.h.modelStatusToString(self.h.getModelStatus())}")
        value = float(self.h.getInfo().objective_function_value)
        duals = np.asarray(self.h.getSolution().col_dual, dtype=float)[self.cols]
        return value, duals


def solve_benders(inp: PlanInputs, *, chunk: str | int = "month", mip_gap: float = 1e-4,
                  time_limit_s: float | None = None, threads: int | None = None, max_iterations: int = 500,
                  progress=None) -> BendersResult:
    """Decide the purchases of ``inp`` by the one-cut-per-chunk Benders decomposition (see the module)."""
    import highspy

    from planner.solve.monolithic import new_highs

    t0 = time.perf_counter()
    R = len(inp.commitments)
    whole = unit_integer(inp)  # instances are whole; savings plans' USD per hour are continuous

    def rounded(x):
        return np.where(whole, np.round(x), np.clip(x, 0.0, None)) + 0.0  # (-0.0 is 0.0)

    cost = first_stage_cost(inp)  # cost, or NPV under [finance] objective = "npv" (the chunks discount alike)
    index = chunk_index(inp, chunk)
    n0 = np.zeros(R)
    chunks = [_Chunk(chunk_inputs(inp, idx), n0, highspy, threads) for idx in index]
    J = len(chunks)
    inf = highspy.kHighsInf
    master = new_highs(highspy, None, mip_gap / 4, threads)
    # columns: n (R, integer later) then theta (J)
    lower = np.zeros(R + J)
    upper = np.r_[np.where(np.isfinite(unit_bounds(inp)), unit_bounds(inp), inf), np.full(J, inf)]
    master.addVars(R + J, lower, upper)
    master.changeColsCost(R + J, np.arange(R + J, dtype=np.int32), np.r_[cost, np.ones(J)])
    add_first_stage_rows(master, inp, inf)  # every first-stage family's rows (reserved caps, exit links, sites)
    best_n, best_upper, bound = None, np.inf, -np.inf
    history = []
    priced: set = set()
    integer = False
    it = 0
    status = "feasible"

    def add_cuts(n, values, duals):
        for j, (q, d) in enumerate(zip(values, duals)):
            nz = np.flatnonzero(np.abs(d) > 1e-12)
            idx = np.r_[nz, R + j].astype(np.int32)
            val = np.r_[-d[nz], 1.0]
            master.addRow(float(q - d @ n), inf, len(idx), idx, val)

    n = n0
    while it < max_iterations:
        it += 1
        values, duals = zip(*(c.price(n) for c in chunks))
        recourse = float(sum(values))
        if integer or np.allclose(n[whole], np.round(n[whole])):
            total = float(cost @ rounded(n)) + recourse
            if total < best_upper:
                best_upper, best_n = total, rounded(n)
        add_cuts(n, values, duals)
        if not integer:
            # relaxation: stop cutting it when it stalls; then the integer master
            master.run()
            check_master(master, highspy, "relaxation")
            lp_bound = float(master.getInfo().objective_function_value)
            n_new = np.asarray(master.getSolution().col_value, dtype=float)[:R]
            bound = max(bound, lp_bound)
            history.append((it, bound, best_upper, time.perf_counter() - t0))
            if progress:
                progress(it, bound, best_upper)
            lp_gap = (float(cost @ n_new) + sum(values) - lp_bound) if np.allclose(n_new, n) else np.inf
            out_of_time = time_limit_s is not None and time.perf_counter() - t0 > time_limit_s
            if np.allclose(n_new, n, atol=1e-7) or lp_gap <= mip_gap * abs(lp_bound) or it > 60 or out_of_time:
                integer = True
                ints = np.flatnonzero(whole).astype(np.int32)
                master.changeColsIntegrality(len(ints), ints, np.full(len(ints), highspy.HighsVarType.kInteger))
            else:
                n = n_new
                continue
        if time_limit_s is not None:
            master.setOptionValue("time_limit", max(time_limit_s - (time.perf_counter() - t0), 1.0))  # per run (a MIP)
        master.run()
        check_master(master, highspy, "integer")
        info = master.getInfo()
        bound = max(bound, float(info.mip_dual_bound if np.isfinite(info.mip_dual_bound) else
                                 info.objective_function_value))
        n = rounded(np.asarray(master.getSolution().col_value, dtype=float)[:R])
        history.append((it, bound, best_upper, time.perf_counter() - t0))
        if progress:
            progress(it, bound, best_upper)
        tolerance = max(mip_gap, REL_TOL) * abs(best_upper) + ABS_TOL
        if best_upper < np.inf and (best_upper - bound) <= tolerance:
            status = "optimal"
            break
        key = n.tobytes()
        if key in priced:  # the master proposes a plan already priced: its cuts are exact there, so the master's
            # bound cannot rise further (it is within the master's own gap of that plan's cost)
            if best_upper - bound <= max(mip_gap, 1e-7) * abs(best_upper) + ABS_TOL:
                status = "optimal"
            break
        priced.add(key)
        if time_limit_s is not None and time.perf_counter() - t0 > time_limit_s:
            break
    if best_n is None:  # never priced an integer point (time limit): price the last one
        values, _ = zip(*(c.price(rounded(n)) for c in chunks))
        best_n, best_upper = rounded(n), float(cost @ rounded(n)) + float(sum(values))
    return BendersResult(n=best_n, upper=best_upper, lower=min(bound, best_upper), iterations=it, chunks=J,
                         seconds=time.perf_counter() - t0, status=status, history=history, batches=J,
                         cut_by="month", cuts=master.getNumRow())
