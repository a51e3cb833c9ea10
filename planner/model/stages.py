"""Which stage each constraint family belongs to, decided once.

- ``FIRST``: rows over the purchases ``n`` only. The monolithic model and the Benders masters
  (:mod:`planner.solve.decompose`, :mod:`planner.solve.decompose_monthly`) both add them from :func:`first_stage_rows`,
  so a first-stage family holds under decomposition by construction.
- ``PERIOD``: rows of one period (block) each, given the purchases: the batches' recourse LPs.
- ``LINKING``: rows that tie periods together other than through ``n`` (a budget over the horizon, the
  backfill peak, discount-only commitments against every period's on-demand cap). The decomposition is exact
  exactly when no linking family is present: :func:`linking` (the one place that decides it).

A new first-stage family is one function ``inp -> FirstStageRows`` in ``FIRST_STAGE``; a new linking family
is one entry of ``LINKING_FAMILIES`` saying when it is present and why it stops the decomposition.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.model.rows import LE as LpConstraintLE, FirstStageRows  # FirstStageRows: the type every first-stage family returns

FIRST, PERIOD, LINKING = "first_stage", "per_period", "linking"


def _reserved_cap(inp) -> FirstStageRows:
    from planner.model.constraints import reserved_cap_sets

    keys, members, coefs, rhs = reserved_cap_sets(inp)
    return FirstStageRows((np.asarray(keys, dtype=int), np.arange(len(keys))), list(members),
                          [np.asarray(c, float) for c in coefs], np.asarray(rhs, float))


def _exit_link(inp) -> FirstStageRows:
    from planner.model.constraints import exit_links

    links = exit_links(inp)
    return FirstStageRows((np.array([c for c, _e in links], dtype=int),), [np.r_[e, c].astype(int) for c, e in links],
                          [np.r_[np.ones(len(e)), -1.0] for _c, e in links], np.zeros(len(links)))


def _site_power(inp) -> FirstStageRows:
    from planner.model.sites import site_power_rows

    return site_power_rows(inp)


FIRST_STAGE = {"reserved_cap": _reserved_cap, "exit_link": _exit_link, "site_power": _site_power}


def first_stage_rows(inp) -> dict[str, FirstStageRows]:
    """Every first-stage family's rows for ``inp`` (empty families included)."""
    return {name: rows(inp) for name, rows in FIRST_STAGE.items()}


def violations(inp, x: np.ndarray, fams: dict | None = None, tol: float = 1e-6) -> list[str]:
    """What purchases ``x`` (units per commitments row) break among the first-stage rows, in words a user acts on
    (the pool, the site, or the term by option, pool, date and branch; what the purchases hold against what is
    left), the worst row of each, the worst first; empty when they hold. Purchases that break one have no recourse
    to price: a plan of them is infeasible, as the whole model's is."""
    fams = first_stage_rows(inp) if fams is None else fams
    x = np.asarray(x, float)
    worst: dict = {}  # (family, pool / site / row) -> (excess, words)
    for name, f in fams.items():
        for r, (cols, coefs, rhs) in enumerate(zip(f.members, f.coefs, f.rhs)):
            lhs = float(np.asarray(coefs, float) @ x[cols])
            excess = lhs - float(rhs)
            if excess <= tol * max(1.0, abs(rhs)):
                continue
            key = (name, int(f.keys[0][r]) if len(f.keys) else r)
            if key in worst and worst[key][0] >= excess:
                continue
            if name == "reserved_cap":
                pool = inp.pools.iloc[key[1]]
                words = (f"pool {pool['gpu_type']}/{pool['region']}: the purchases hold {lhs:,.6g} GPUs at once; its "
                         f"max_gpus {pool['cap_res']:,.6g} leaves room for {rhs:,.6g} beside the inventory owned then")
            elif name == "site_power":
                site = sorted(getattr(inp.config, "sites", {}) or {})[key[1]]
                words = f"site {site}: the purchases draw {lhs:,.6g} MW at once, over its max_mw {rhs:,.6g}"
            elif name == "exit_link":
                words = (f"{_commitment(inp.commitments, key[1])}: its resales sell {lhs + float(x[key[1]]):,.6g} "
                         f"units of the {float(x[key[1]]):,.6g} bought")
            else:
                words = f"{name} row {r}: {lhs:,.6g} against {rhs:,.6g}"
            worst[key] = (excess, words)
    res = inp.commitments  # a capacity block's offer (max_units): the purchase column's own bound
    cap = res["max_units"].to_numpy(float) if "max_units" in res and len(res) == len(x) else np.full(len(x), np.inf)
    for c in np.flatnonzero(x > cap + tol * np.maximum(1.0, np.abs(np.where(np.isfinite(cap), cap, 0.0)))):
        worst[("max_units", int(c))] = (float(x[c] - cap[c]),
                                        f"{res['gpu_type'].iat[c]}/{res['region'].iat[c]} {res['option'].iat[c]}: "
                                        f"{x[c]:,.6g} units bought where the offer has {cap[c]:,.6g} (max_gpus)")
    return [w for _e, w in sorted(worst.values(), key=lambda v: -v[0])]


def _commitment(res, i: int) -> str:
    """Commitments row ``i`` in words a user finds in the plan: its option, pool, purchase date (its hour where it
    is not midnight) and, on a scenario tree, the branch that buys it and its probability, as the summary says."""
    row = res.iloc[int(i)]
    when = pd.Timestamp(row["purchase_date"]) if "purchase_date" in res and pd.notna(row["purchase_date"]) else None
    words = f"{row['option']} of {row['gpu_type']}/{row['region']}"
    if when is not None:
        words += f" bought {when:%Y-%m-%d}" + ("" if when == when.normalize() else f" {when:%H:%M}")
    branch = row["branch"] if "branch" in res else "all"
    if isinstance(branch, str) and branch and branch != "all":
        share = float(row["probability"]) if "probability" in res and pd.notna(row["probability"]) else None
        words += f" if {branch}" + (f" ({share:.0%})" if share is not None else "")
    return words


def why_infeasible(broken: list[str]) -> str:
    """One sentence of :func:`violations` (the first three; how many more)."""
    more = f" (and {len(broken) - 3} more)" if len(broken) > 3 else ""
    return "the purchases fixed break first-stage rows: " + "; ".join(broken[:3]) + more


def _backfill(inp) -> bool:
    return any(inp.config.classes[c].backfill for c in inp.classes)


def _discount_only(inp) -> bool:
    res = inp.commitments
    return not res["guarantees_capacity"].to_numpy(bool).all()


def _budget(inp) -> bool:
    b = inp.config.budget
    return b.max_total_usd is not None or bool(b.monthly)


def _cvar(inp) -> bool:
    return inp.config.finance.cvar_weight > 0 and len(inp.scenarios) > 1


# (family, present in inp?, why it stops the decomposition)
LINKING_FAMILIES = (
    ("budget", _budget, "a [budget] couples the months the decomposition solves apart"),
    ("backfill_peak", _backfill, "backfill classes or discount-only commitments (guarantees_capacity = false) "
                                 "link the periods (see docs/commitments.md)"),
    ("discount_only_cap", _discount_only, "backfill classes or discount-only commitments (guarantees_capacity = "
                                          "false) link the periods (see docs/commitments.md)"),
    ("cvar", _cvar, "a [finance] cvar_weight ties every period of a scenario into that scenario's whole cost "
                    "(the CVaR rows, planner/model/cvar.py)"),
)


def linking(inp) -> list[tuple[str, str]]:
    """(family, why) for every linking family present in ``inp``: the decomposition is exact when empty."""
    return [(name, why) for name, present, why in LINKING_FAMILIES if present(inp)]


STAGE = {"demand": PERIOD, "spot_share": PERIOD, "spares": PERIOD, "reserved_share": PERIOD, "od_cap": PERIOD, "spot_cap": PERIOD, "flex_cap": PERIOD,
         "backfill_dedicated": PERIOD, "spend_usage": PERIOD, "spend_commitment": PERIOD,
         **{name: FIRST for name in FIRST_STAGE}, **{name: LINKING for name, _p, _w in LINKING_FAMILIES}}


def first_stage_family(name: str):
    """The ``define_*`` of first-stage family ``name``: its rows of :data:`planner.model.stages.FIRST_STAGE`
    over the purchase columns ``n`` (the Benders masters add the very same rows)."""
    def define(out, inp, blocks, fam) -> int:
        f = FIRST_STAGE[name](inp)
        if not len(f):
            return 0
        col = fam["n"]["col"].to_numpy()  # n[c] is purchase row c
        rows = np.concatenate([np.full(len(on), r) for r, on in enumerate(f.members)])
        return out.add(name, f.keys, rows, col[np.concatenate(f.members)], np.concatenate(f.coefs), LpConstraintLE,
                       f.rhs)

    define.__name__ = f"define_{name}_constraints"
    define.__doc__ = f"First-stage family {name!r}: rows over the purchases only (planner.model.stages)."
    return define
