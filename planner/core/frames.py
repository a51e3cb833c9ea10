"""Small table helpers shared by several modules (pandas 2 and 3 alike)."""

from __future__ import annotations

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
