"""Power caps per site: the owned GPUs of a site draw at most its ``max_mw`` in every period.

A commitments row with a ``site`` (price-sheet column, reserved rows) draws ``m x kw_per_gpu / 1000`` MW per
instance bought while it is active (at the period's peak: any hour of the period it is active counts);
resales (exits) carry their parent's site with a negative ``m``. Per capped site and period:

    sum_{c of the site, active in t} m_c kw_c / 1000 * n_c <= max_mw(site)

The rows are first stage (purchases only): one per site and distinct set of rows active together (periods
with the same set give the same row), in every scenario's periods with a scenario tree.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.model.rows import FirstStageRows


def _site_columns(inp) -> tuple[np.ndarray, np.ndarray]:
    res = inp.commitments
    site = res["site"].to_numpy(str)
    kw = res["kw_per_gpu"].to_numpy(float)
    return site, kw


def _on(inp, mine: np.ndarray) -> np.ndarray:
    """(rows, S*T or T): whether each row is active in each (scenario,) period."""
    on = inp.active[mine] > 0
    if inp.reserved_member is not None:
        on = (on[:, None, :] & inp.reserved_member[mine][:, :, None]).reshape(len(mine), -1)
    return on


def site_power_rows(inp) -> FirstStageRows:
    """The ``site_power`` rows of ``inp`` (none without ``[sites]`` or rows at a capped site)."""
    caps = getattr(inp.config, "sites", {}) or {}
    site, kw = _site_columns(inp)
    m = inp.commitments["m"].to_numpy(float) if len(inp.commitments) else np.zeros(0)
    keys_s, keys_j, members, coefs, rhs = [], [], [], [], []
    for s, name in enumerate(sorted(caps)):
        mine = np.flatnonzero((site == name) & (kw > 0))
        if not len(mine):
            continue
        pattern = np.unique(_on(inp, mine).T, axis=0)
        for pat in pattern:
            if pat.any():
                keys_s.append(s)
                keys_j.append(len(keys_j))
                members.append(mine[pat])
                coefs.append(m[mine[pat]] * kw[mine[pat]] / 1000.0)
                rhs.append(caps[name])
    return FirstStageRows((np.asarray(keys_s, dtype=int), np.asarray(keys_j, dtype=int)), members, coefs,
                          np.asarray(rhs, float))


def site_power_used(inp, units: np.ndarray) -> dict:
    """plan.json ``sites``: per capped site its ``max_mw`` and the MW its owned GPUs draw at each period's peak
    (``mw``, one per period; expected over scenarios with a tree), and the highest (``peak_mw``)."""
    caps = getattr(inp.config, "sites", {}) or {}
    if not caps or not len(inp.commitments):
        return {}
    site, kw = _site_columns(inp)
    m = inp.commitments["m"].to_numpy(float)
    w = np.asarray(inp.reserved_weight, float) if getattr(inp, "reserved_weight", None) is not None else 1.0
    draw = np.asarray(units, float) * m * kw / 1000.0 * w
    out = {}
    for name in sorted(caps):
        mine = np.flatnonzero((site == name) & (kw > 0))
        mw = (draw[mine][:, None] * (inp.active[mine] > 0)).sum(axis=0) if len(mine) else np.zeros(inp.T)
        out[name] = {"max_mw": caps[name], "peak_mw": float(mw.max()) if len(mw) else 0.0,
                     "mw": [round(float(x), 9) for x in mw],
                     "periods": [str(p) for p in pd.DatetimeIndex(inp.periods).strftime("%Y-%m-%dT%H:%M")]}
    return out
