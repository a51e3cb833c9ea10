"""``--total-gpus``: a fixed fleet, as one total or one total per GPU type (and region), resolved to slots.

Syntax: ``N`` (a model whose classes run on one GPU type), or ``TYPE=N`` items separated by commas, one
per GPU type (``H100=1024,A100=512``), or ``TYPE@REGION=N`` per type and region
(``H100@us-east-1=512,H100@eu-west-1=512``). A type is given either whole or per region, not both.
Each slot becomes one flavor; GPUs of different types are never added together.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from planner.core.errors import ConfigError, Problem
from planner.inputs.arrays import PlanInputs

OPTION = "--total-gpus"
MAX_GPUS = 10_000_000
EXAMPLE = "N for a model on one GPU type, else a total per type: --total-gpus H100=1024,A100=512 " \
          "(or per type and region: H100@us-east-1=512)"


def used_types(inp: PlanInputs) -> list[str]:
    """The GPU types some class may run on (speed above 0 in one of the type's pools), in pool order."""
    ok = (inp.speed > 0).any(axis=0)
    return list(dict.fromkeys(inp.pools["gpu_type"][ok]))


def _count(text: str, item: str) -> int:
    if not re.fullmatch(r"\s*\d+\s*", text) or not 1 <= int(text) <= MAX_GPUS:
        raise ConfigError(Problem(OPTION, f"'{item}': the number of GPUs is not a whole number 1-{MAX_GPUS:,}",
                                  value=text.strip(), expected=EXAMPLE))
    return int(text)


def parse(spec) -> int | dict[tuple[str, str | None], int]:
    """``spec`` (an int, ``"N"``, ``"TYPE=N,..."`` or a mapping ``{"TYPE" or "TYPE@REGION": N}``) as an int or
    ``{(type, region or None): N}``. Only the syntax is checked here; :func:`slots` checks the names."""
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        return _count(str(int(spec)), str(spec))
    items = list(spec.items()) if isinstance(spec, dict) else None
    if items is None:
        text = str(spec).strip()
        if "=" not in text:
            return _count(text, text)
        items = []
        for part in text.split(","):
            if part.count("=") != 1:
                raise ConfigError(Problem(OPTION, f"'{part.strip()}' is not TYPE=N or TYPE@REGION=N",
                                          value=text, expected=EXAMPLE))
            key, n = part.split("=")
            items.append((key, n))
    out: dict[tuple[str, str | None], int] = {}
    for key, n in items:
        key = str(key).strip()
        gpu, _, region = key.partition("@")
        gpu, region = gpu.strip(), region.strip() or None
        if not gpu or ("@" in key and region is None):
            raise ConfigError(Problem(OPTION, f"'{key}' names no GPU type (or an empty region)", value=key,
                                      expected=EXAMPLE))
        if (gpu, region) in out:
            raise ConfigError(Problem(OPTION, f"'{key}' is given twice", value=key, expected="each once"))
        out[(gpu, region)] = _count(str(n), f"{key}={n}")
    for gpu in {g for g, _ in out}:
        if (gpu, None) in out and any(g == gpu and r is not None for g, r in out):
            raise ConfigError(Problem(OPTION, f"GPU type '{gpu}' is given both whole and per region",
                                      value=gpu, expected=f"{gpu}=N or {gpu}@REGION=N items, not both"))
    return out


def slots(inp: PlanInputs, spec) -> pd.DataFrame:
    """The slots of the fixed fleet: ``gpu_type``, ``region`` (``any`` for a whole type), ``capacity_gpus``.

    A single total on a model whose classes run on several GPU types is refused (it would add GPUs of
    different types); so are types and regions the price sheet does not have."""
    total = parse(spec)
    pools = inp.pools
    if isinstance(total, int):
        types = used_types(inp)
        if len(types) > 1:
            raise ConfigError(Problem(
                OPTION, f"the classes run on {len(types)} GPU types ({', '.join(types)}): one total would add "
                f"GPUs of different types into one flavor", value=total,
                expected="a total per GPU type, e.g. --total-gpus " + ",".join(f"{t}=N" for t in types),
                hint="or per type and region, TYPE@REGION=N; see docs/quotas.md"))
        gpu = types[0] if types else str(pools["gpu_type"].iat[0])
        return pd.DataFrame({"gpu_type": [gpu], "region": ["any"], "capacity_gpus": [total]})
    known = set(zip(pools["gpu_type"], pools["region"]))
    rows = []
    for (gpu, region), n in total.items():
        regions = sorted(r for g, r in known if g == gpu)
        if not regions:
            raise ConfigError(Problem(OPTION, f"GPU type '{gpu}' is not in the price sheet", value=gpu,
                                      expected="one of " + ", ".join(sorted(set(pools["gpu_type"])))))
        if region is not None and region not in regions:
            raise ConfigError(Problem(OPTION, f"region '{region}' has no {gpu} in the price sheet",
                                      value=f"{gpu}@{region}", expected="one of " + ", ".join(regions)))
        rows.append({"gpu_type": gpu, "region": region or "any", "capacity_gpus": n})
    return pd.DataFrame(rows)


def slot_speed(inp: PlanInputs, fleet: pd.DataFrame) -> np.ndarray:
    """(K, slots) each class's speed on each slot: its best speed over the slot's pools (0 = not allowed)."""
    pools = inp.pools
    match = (pools["gpu_type"].to_numpy()[:, None] == fleet["gpu_type"].to_numpy()[None, :]) & (
        (fleet["region"].to_numpy()[None, :] == "any")
        | (pools["region"].to_numpy()[:, None] == fleet["region"].to_numpy()[None, :]))  # (P, slots)
    return np.where(match[None, :, :], inp.speed[:, :, None], 0.0).max(axis=1)
