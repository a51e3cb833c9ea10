"""Scenario trees that branch only at purchase dates, so a plan can value waiting for information.

A forecast's first period is the root; at the first period of every calendar quarter (``by="quarter"``) or
month (``by="month"``) after it, every node splits into B children. Per class, a leaf's demand is the
forecast's point path (its p50) plus a level shift common to all classes and scaled per class:

    gpus[leaf, k, t] = max(0, p50[k, t] + sigma[k, t] * W[leaf, j(t)] / sqrt(max(j(t), 1)))

where ``j(t)`` is the number of branch dates on or before period t (0 in the root segment, so every leaf
is the point path there), ``W[leaf, j] = e_1 + ... + e_j`` is a random walk whose steps are the B-point
Gauss-Hermite rule for a standard normal (B=2: +-1 with 1/2 each; B=3: -sqrt 3, 0, sqrt 3 with 1/6, 2/3,
1/6), and ``sigma = (p90 - p10) / (2 x 1.2816)`` is the class's own 80 % prediction interval read as a
normal one. The rule is exact for the mean and variance, so before clipping the leaves' probability-weighted
mean is the point path and their standard deviation is sigma at every period from the first branch date
on. A shock persists: a node's walk is the sum of the steps on its way from the root. The probability of
a leaf is the product of the weights of its branches; its name is ``t`` and the branch taken at each date
(1..B), e.g. ``t1-2-1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from planner.core.errors import InputError, Problem

TREE_BY = ("quarter", "month")
MIN_BRANCHES, MAX_BRANCHES = 2, 5
MAX_LEAVES = 243  # 3 ** 5: as many scenarios as a plan can reasonably carry
Z80 = NormalDist().inv_cdf(0.9)  # 1.2816: the 80 % interval's half-width in standard deviations
TREE_QUANTILES = (0.1, 0.5, 0.9)  # the forecast's quantiles a tree is built from (point path and interval)
STAMP = "%Y-%m-%dT%H:%M"


@dataclass(frozen=True)
class ScenarioTree:
    """A scenario tree over a forecast's periods: ``leaves`` (L, K, P) GPUs clipped at 0 and not rounded,
    ``names`` and ``probability`` (L,) of the leaves, the ``dates`` it branches at, the ``point`` (K, P)
    path and the ``sigma`` (K, P) it was built from, and how many leaf values were ``clipped`` at 0."""

    by: str
    branches: int
    dates: pd.DatetimeIndex
    names: list
    probability: np.ndarray
    leaves: np.ndarray
    point: np.ndarray
    sigma: np.ndarray
    clipped: int = 0

    @property
    def scenarios(self) -> dict:
        """{leaf name: probability}, as the model file's ``[scenarios]`` takes them (they add up to 1)."""
        return {n: float(p) for n, p in zip(self.names, self.probability)}

    def doc(self) -> dict:
        """forecast.json's ``tree`` object."""
        return {"by": self.by, "branches": self.branches, "dates": [d.strftime(STAMP) for d in self.dates],
                "leaves": len(self.names), "construction": construction(self.branches)}


def construction(branches: int) -> str:
    """One sentence on how the leaves were built (forecast.json ``tree.construction``)."""
    x, w = gauss_hermite(branches)
    rule = ", ".join(f"{a:+.6g} ({b:.6g})" for a, b in zip(x, w))
    return ("per class, the forecast's point path (p50) plus a level shift common to all classes: a random walk "
            f"over the branch dates whose steps are the {branches}-point Gauss-Hermite rule for a standard normal "
            f"(node (weight): {rule}), scaled at every period by sigma / sqrt(branch dates passed), sigma = "
            f"(p90 - p10) / (2 x {Z80:.4f}) of the class's 80 % interval; every leaf is the point path before "
            "the first branch date; clipped at 0 GPUs; a leaf's probability is the product of its branches' "
            "weights")


def gauss_hermite(branches: int) -> tuple[np.ndarray, np.ndarray]:
    """The B-point Gauss-Hermite rule for a standard normal: (nodes, weights adding up to 1), symmetric."""
    x, w = np.polynomial.hermite_e.hermegauss(int(branches))
    x, w = (x - x[::-1]) / 2, (w + w[::-1]) / 2  # exactly symmetric: the mean of the nodes is 0
    return x, w / w.sum()


def sigma_80(p10: np.ndarray, p90: np.ndarray) -> np.ndarray:
    """The standard deviation implied by an 80 % interval [p10, p90] read as a normal one."""
    return (np.asarray(p90, float) - np.asarray(p10, float)) / (2 * Z80)


def option_problems(tree, branches=None, scenarios=None, quantile_form: bool = False) -> list:
    """What does not go with ``tree`` (or its absence): ``branches`` without a tree, ``scenarios`` (the tree
    sets the count) or the quantile form (a tree's leaves are not quantile paths) beside one."""
    bad = []
    if tree is None and branches is not None:
        bad.append(Problem("--branches", "needs --tree", value=branches, expected="--tree quarter or --tree month"))
    if tree is not None and quantile_form:
        bad.append(Problem("--quantiles", "not with --tree: a scenario tree's leaves are not quantile paths",
                           expected="forecast.csv in the long form (leave out --quantiles)"))
    if tree is not None and scenarios is not None:
        bad.append(Problem("--scenarios", "not with --tree: the tree sets the number of scenarios", value=scenarios,
                           expected=f"--branches B alone (B ** branch dates leaves, at most {MAX_LEAVES})"))
    return bad


def branch_positions(periods: pd.DatetimeIndex, by: str) -> np.ndarray:
    """Positions of the periods a ``by`` tree branches at: the first period of every calendar quarter / month
    that starts after the first period (the planner's own purchase-date rule, planner.inputs.ladder)."""
    from planner.inputs.ladder import purchase_periods

    return purchase_periods(pd.DatetimeIndex(periods), by)[1:]


def plan_tree(periods: pd.DatetimeIndex, by: str, branches: int) -> np.ndarray:
    """The branch positions of a ``by`` tree with ``branches`` children per node over ``periods``, checked:
    an unknown ``by``, ``branches`` outside 2..5, no branch date, or more than 243 leaves is an InputError."""
    if by not in TREE_BY:
        raise InputError(Problem("--tree", "unknown tree", value=by, expected=" or ".join(TREE_BY)))
    if isinstance(branches, bool) or not isinstance(branches, (int, np.integer)) \
            or not MIN_BRANCHES <= branches <= MAX_BRANCHES:
        raise InputError(Problem("--branches", "out of range", value=branches,
                                 expected=f"a whole number of branches from {MIN_BRANCHES} to {MAX_BRANCHES}"))
    periods = pd.DatetimeIndex(periods)
    pos = branch_positions(periods, by)
    if not pos.size:
        raise InputError(Problem("--tree", f"the forecast's periods ({periods[0]:{STAMP}} to {periods[-1]:{STAMP}}) "
                                 f"reach no calendar {by} start after the first: the tree would not branch",
                                 value=by, expected=f"a horizon past the start of the next calendar {by}",
                                 hint="a longer --horizon-months" + (", or --tree month" if by == "quarter" else "")))
    leaves = int(branches) ** len(pos)
    if leaves > MAX_LEAVES:
        raise InputError(Problem("--branches", f"--tree {by} --branches {branches}: {len(pos)} branch dates "
                                 f"({periods[pos[0]]:{STAMP}} to {periods[pos[-1]]:{STAMP}}) give {branches} ** "
                                 f"{len(pos)} = {leaves} leaves (scenarios)", expected=f"at most {MAX_LEAVES} leaves",
                                 hint=_smaller_trees(periods, pos, by, int(branches))))
    return pos


def _smaller_trees(periods: pd.DatetimeIndex, pos: np.ndarray, by: str, branches: int) -> str:
    """What would fit in 243 leaves: fewer branches, a quarterly tree, or a horizon ending sooner."""
    fits = max(d for d in range(len(pos) + 1) if branches ** d <= MAX_LEAVES)
    ways = []
    if branches > MIN_BRANCHES and MIN_BRANCHES ** len(pos) <= MAX_LEAVES:
        ways.append(f"--branches {MIN_BRANCHES} ({MIN_BRANCHES ** len(pos)} leaves)")
    if by == "month":
        quarters = len(branch_positions(periods, "quarter"))
        if branches ** quarters <= MAX_LEAVES:
            ways.append(f"--tree quarter ({branches} ** {quarters} = {branches ** quarters} leaves)")
    ways.append(f"a shorter --horizon-months, ending on or before {periods[pos[fits]]:%Y-%m-%d} ({fits} {by} dates, "
                f"{branches ** fits} leaves)")
    return "fewer branches, a coarser tree or a shorter horizon: " + "; ".join(ways)


def check_tree_dates(config, periods: pd.DatetimeIndex, by: str) -> None:
    """Every branch date of a ``by`` tree over ``periods`` must be a purchase date of the model ``config``
    (its ``[commitments]``: ``purchase_every`` "month" takes trees by month and quarter, "quarter" by quarter,
    "once" none; dates on or after ``purchase_until`` are not purchase dates). Otherwise an InputError naming
    the model file, ``commitments.purchase_every``, its value, the first branch date that is not a purchase
    date, and what would fix it."""
    from planner.inputs.ladder import purchase_periods

    periods = pd.DatetimeIndex(periods)
    c = config.commitments
    if c.non_anticipativity != "tree":
        raise InputError(Problem(str(config.path or "<model>"), "--tree on a model whose every purchase is common to "
                                 "all scenarios: the tree's branches would change nothing the plan decides",
                                 value=f"commitments.non_anticipativity = \"{c.non_anticipativity}\"",
                                 expected='non_anticipativity = "tree" (the default)',
                                 hint="remove non_anticipativity from [commitments], or forecast quantile paths "
                                      "(--scenarios) without --tree"))
    pos = branch_positions(periods, by)
    off = np.setdiff1d(pos, purchase_periods(periods, c.purchase_every, c.purchase_until))
    if not off.size:
        return
    when = periods[off[0]]
    file = str(config.path or "<model>")
    head = (f"--tree {by} branches on {when:{STAMP}} ({off.size} of its {pos.size} branch dates), not a purchase "
            "date of this model under 'commitments.purchase_every'")
    if c.purchase_until is not None and when >= pd.Timestamp(c.purchase_until):
        raise InputError(Problem(file, head + f' = "{c.purchase_every}" and \'commitments.purchase_until\' (no '
                                 "purchase on or after it)", value=c.purchase_until,
                                 expected="every branch date before purchase_until",
                                 hint=f"a shorter --horizon-months (its last branch date before {c.purchase_until}), "
                                      "or a later commitments.purchase_until in the model file (or none)"))
    every = '"month"' if by == "month" else '"quarter" (or "month")'
    fix = (f"set purchase_every = {every} under [commitments] in the model file"
           + (", or use --tree quarter" if by == "month" and c.purchase_every == "quarter"
              else ", so purchases may wait for the branch dates"))
    raise InputError(Problem(file, head, value=c.purchase_every,
                             expected='"month" for --tree month; "quarter" or "month" for --tree quarter', hint=fix))


def leaf_index(branches: int, dates: int) -> np.ndarray:
    """(B ** dates, dates): the branch (0..B-1) each leaf takes at each date, the last date varying fastest."""
    return np.indices((int(branches),) * int(dates)).reshape(int(dates), -1).T


def leaf_names(index: np.ndarray) -> list[str]:
    """``t`` and the branches taken (1-based), e.g. ``t1-2-1``."""
    return ["t" + "-".join(map(str, row)) for row in (index + 1).tolist()]


def leaf_probabilities(index: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The product of each leaf's branch weights, to 15 significant digits (readable in scenarios.toml; each
    off by at most 5e-16 of itself, so they add up to 1 within 1e-15)."""
    return np.array([float(f"{p:.15g}") for p in np.prod(weights[index], axis=1)])


def leaf_paths(point: np.ndarray, sigma: np.ndarray, positions: np.ndarray, branches: int) -> np.ndarray:
    """(L, K, P) leaves before clipping: ``point`` (K, P) + ``sigma`` (K, P) x the walk / sqrt(dates passed)."""
    point, sigma = np.asarray(point, float), np.asarray(sigma, float)
    nodes, _ = gauss_hermite(branches)
    index = leaf_index(branches, len(positions))
    walk = np.concatenate([np.zeros((len(index), 1)), np.cumsum(nodes[index], axis=1)], axis=1)  # (L, D + 1)
    passed = np.searchsorted(np.asarray(positions), np.arange(point.shape[-1]), side="right")  # (P,)
    scale = sigma / np.sqrt(np.maximum(passed, 1))
    return point[None] + scale[None] * walk[:, passed][:, None, :]


def build_tree(point: np.ndarray, sigma: np.ndarray, periods: pd.DatetimeIndex, by: str,
               branches: int) -> ScenarioTree:
    """The :class:`ScenarioTree` of a forecast's ``point`` (K, P) path and ``sigma`` (K, P) over ``periods``
    (checked by :func:`plan_tree`)."""
    periods = pd.DatetimeIndex(periods)
    pos = plan_tree(periods, by, branches)
    raw = leaf_paths(point, sigma, pos, branches)
    index = leaf_index(branches, len(pos))
    _, weights = gauss_hermite(branches)
    return ScenarioTree(by=by, branches=int(branches), dates=periods[pos], names=leaf_names(index),
                        probability=leaf_probabilities(index, weights), leaves=np.clip(raw, 0.0, None),
                        point=np.asarray(point, float), sigma=np.asarray(sigma, float), clipped=int((raw < 0).sum()))
