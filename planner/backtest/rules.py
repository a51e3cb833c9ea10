"""The commitment rules users really run, as backtest baselines (no solver).

- :func:`spot_aware`: what a cloud's own recommender computes from on-demand usage. Per pool, only the demand
  that cannot go to spot (each class's demand less the spot share it may use, ``1 - max_spot_share``, for
  classes allowed on spot; all of it for the others), with headroom, in the pool's GPUs; reserve the level
  exceeded in the break-even share ``r / od`` of the last 7 days' hours (the ``1 - r / od`` quantile), less
  what is owned or on order. Run weekly.
- :func:`coverage_ladder`: what commitment-management services do. Per pool, commit a set share (80 %) of the
  trailing minimum of that same non-spot demand, in equal quarterly tranches of ``share x minimum / 4`` (never
  above ``share x minimum`` in force), each on the shortest term offered, so expiries are staggered.

Both buy per pool the term option (never a capacity block) that is cheapest per useful GPU-hour for the
classes that use the pool (:func:`planner.backtest.fleet.cheapest_rows`; the ladder: the shortest term), within the
price sheet's reserved cap. Neither looks at anything after the cut-off.
"""

from __future__ import annotations

import numpy as np

WEEK_HOURS = 168.0
QUARTER_HOURS = 2190.0  # 8,760 / 4
LADDER_SHARE = 0.8


def non_spot_share(inp) -> np.ndarray:
    """(K,) the share of each class's demand that cannot run on spot: 1 - max_spot_share where the class may
    use spot in some pool, else 1."""
    may = (np.asarray(inp.goodput) > 0).any(axis=1)
    return np.where(may, 1.0 - np.asarray(inp.spot_share, float), 1.0)


def pool_series(inp, demand: np.ndarray) -> dict[int, tuple[int, np.ndarray]]:
    """Per pool with a term option: (the row bought, the GPUs of the pool its classes need on demand per period).

    ``demand`` (K, L) in reference GPUs; each class counts in the pool of its cheapest term option, with
    headroom, at its useful share there, for the part of it that cannot run on spot.
    """
    from planner.backtest.fleet import cheapest_rows as _cheapest_rows

    res = inp.commitments
    q = inp.q_reserved
    share = non_spot_share(inp)
    out: dict[int, tuple[int, np.ndarray]] = {}
    for row, classes in _cheapest_rows(inp).items():
        p = int(res["pool"].iat[row])
        ks = np.asarray(classes, int)
        need = (demand[ks] * (share[ks] * (1 + inp.headroom[ks]) / q[ks, p])[:, None]).sum(axis=0)
        if p in out:  # two rows of one pool (classes prefer different terms): the cheaper row, the sum of needs
            old_row, old = out[p]
            row = old_row if res["r"].iat[old_row] <= res["r"].iat[row] else row
            need = old + need
        out[p] = (row, need)
    return out


def _buy(inp, levels: dict[int, tuple[int, float]], owned: np.ndarray) -> np.ndarray:
    """Instances per row of ``inp.commitments``: per pool, the level less ``owned`` (P,), within the reserved cap."""
    from planner.backtest.fleet import room as _room

    n = np.zeros(len(inp.commitments))
    room = _room(inp, owned)
    m = inp.commitments["m"].to_numpy(float)
    for p, (row, level) in levels.items():
        n[row] = np.floor(min(max(0.0, level - owned[p]), room[p]) / m[row] + 1e-9)
    return n


def spot_aware(inp, usage: np.ndarray, owned: np.ndarray) -> np.ndarray:
    """Instances per purchase row: per pool, the break-even percentile (``1 - r / od``) of the non-spot demand in
    ``usage`` (K, L: the last 7 days of history), less ``owned`` (P,: GPUs owned or on order)."""
    od = inp.pools["od"].to_numpy(float)
    r = inp.commitments["r"].to_numpy(float)
    levels = {}
    for p, (row, need) in pool_series(inp, usage).items():
        if np.isfinite(od[p]) and r[row] < od[p] and need.size:
            levels[p] = (row, float(np.quantile(need, 1.0 - r[row] / od[p])))
    return _buy(inp, levels, owned)


def shortest_terms(inp) -> dict[int, int]:
    """Per pool: the row of its shortest term option (the cheaper one of equal terms)."""
    from planner.backtest.fleet import term_rows as _terms

    res = inp.commitments
    out: dict[int, int] = {}
    for row in np.flatnonzero(_terms(res)):
        p = int(res["pool"].iat[row])
        key = (float(res["term_months"].iat[row]), float(res["r"].iat[row]))
        if p not in out or key < (float(res["term_months"].iat[out[p]]), float(res["r"].iat[out[p]])):
            out[p] = int(row)
    return out


def coverage_ladder(inp, usage: np.ndarray, owned: np.ndarray, share: float = LADDER_SHARE) -> np.ndarray:
    """Instances per purchase row: per pool, a tranche of ``share x min(non-spot demand in usage) / 4`` on the
    shortest term, no more than brings what is owned or on order (``owned``, P) to ``share x minimum``."""
    od = inp.pools["od"].to_numpy(float)
    r = inp.commitments["r"].to_numpy(float)
    rows = shortest_terms(inp)
    levels = {}
    for p, (_, need) in pool_series(inp, usage).items():
        row = rows.get(p)
        if row is None or not need.size or not np.isfinite(od[p]) or r[row] >= od[p]:
            continue
        target = share * float(need.min())
        levels[p] = (row, owned[p] + min(target / 4.0, max(0.0, target - owned[p])))
    return _buy(inp, levels, owned)


def acts(position: int, first: int, every: int, step: int) -> bool:
    """A rule run every ``every`` periods from the first cut-off acts at the cut-offs (``step`` apart) where a
    new run of ``every`` periods begins."""
    return (position - first) % max(1, every) < max(1, step)
