"""Small table helpers shared by several modules (pandas 2 and 3 alike)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def concat_rows(frames: list[pd.DataFrame], **kwargs) -> pd.DataFrame:
    """``pd.concat(frames, **kwargs)`` leaving out empty frames (pandas 2 warns that empty entries will
    count when the result's dtypes are chosen; pandas 3 counts them): the columns of every frame are kept."""
    frames = [f for f in frames if f is not None]
    full = [f for f in frames if len(f)]
    if not full:
        return frames[0].iloc[0:0].copy() if frames else pd.DataFrame()
    out = pd.concat(full, **kwargs) if len(full) > 1 else full[0].reset_index(drop=True) \
        if kwargs.get("ignore_index") else full[0].copy()
    missing = [c for f in frames for c in f.columns if c not in out.columns]
    for c in dict.fromkeys(missing):
        out[c] = pd.NA
    return out


def time_text(values, fmt: str) -> np.ndarray:
    """``values`` (timestamps: a column or an index) as text in ``fmt`` (``strftime``), NaN where missing: each
    distinct timestamp formatted once (a per-period table repeats its periods over every class and pool row)."""
    codes, uniques = pd.factorize(pd.Series(values))
    text = np.asarray(pd.DatetimeIndex(uniques).strftime(fmt), dtype=object)
    return np.append(text, np.nan)[codes]


def lookup(values, mapping: dict) -> np.ndarray:
    """``values`` (a column) through ``mapping`` as floats, NaN where a value is not in it: each distinct value
    looked up once (a per-period table repeats a few labels over hundreds of thousands of rows)."""
    codes, uniques = pd.factorize(pd.Series(values))
    table = np.array([float(mapping[u]) if u in mapping else np.nan for u in uniques] + [np.nan], dtype=float)
    return table[codes]
