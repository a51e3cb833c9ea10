"""``planner compare``: solve several variants of a plan and put them side by side.

A variant (a *scenario* of the comparison) is a model file with, optionally, another
price sheet and/or demand forecast. How the command-line lists become scenarios:

* ``--prices``, ``--demand`` and ``--model`` each take one file per scenario. The lists
  are read in parallel: scenario *i* is ``--model`` *i* (default MODEL) with
  ``--prices`` *i* and ``--demand`` *i* (default: that model file's own). A list
  given once applies to every scenario; lists of other lengths are an error.
* The scenarios are exactly the listed variants, in the order given; the first is
  the base the deltas are taken against. With a single variant (or
  ``--with-base``) MODEL as it is comes first, labelled ``base``.

Every scenario's inputs are read and validated before anything is solved; a bad
input anywhere stops the run with exit 2 and nothing written.
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from planner import __version__
from planner.core.atomic import atomic_path
from planner.core.options import PlanOptions
from planner.core.errors import ConfigError, InputError, Problem, SolverError
from planner.inputs.arrays import PlanInputs
from planner.pipeline.run import load_inputs, make_plan
from planner.results.plan import Plan
from planner.whatif.metrics import plan_metrics, spend
from planner.whatif.pricediff import PriceDiff, diff_prices
from planner.core.units import signed_usd as _signed, usd as _usd
from planner.core.executors import Executor, LocalExecutor, Outcome
from planner.inputs import commitments, supply

RESERVED_COLUMN_NAMES = {"section", "item"}  # the comparison workbook's own columns


@dataclass(frozen=True)
class Variant:
    """One scenario of a comparison: its label and the model, prices and demand files it uses."""
    label: str
    model: Path
    prices: Path | None = None
    demand: Path | None = None

    def describe(self) -> str:
        """The files this scenario changes, for the progress line."""
        parts = [f"model {self.model}"]
        if self.prices:
            parts.append(f"prices {self.prices}")
        if self.demand:
            parts.append(f"demand {self.demand}")
        return ", ".join(parts)


def _stem_labels(paths: list[Path | None]) -> list[str | None]:
    """File stems, or the last two path parts where stems clash."""
    stems = [p.stem if p else None for p in paths]
    out = []
    for p, s in zip(paths, stems):
        if p is not None and sum(1 for t in stems if t == s) > 1 and len(p.parts) > 1:
            out.append(f"{p.parent.name}/{p.stem}")
        else:
            out.append(s)
    return out


def resolve_variants(model: Path, models: list[Path], prices: list[Path], demands: list[Path],
                     labels: list[str], with_base: bool = False) -> list[Variant]:
    """The comparison's scenarios from the command-line lists (see the module docstring)."""
    lists = {"--model": list(models), "--prices": list(prices), "--demand": list(demands)}
    lengths = {k: len(v) for k, v in lists.items() if v}
    if not lengths:
        raise ConfigError(Problem("command line", "nothing to compare",
                                  expected="at least one --prices, --demand or --model variant",
                                  hint="e.g. planner compare MODEL --prices now.csv --prices offer.csv"))
    n = max(lengths.values())
    uneven = {k: v for k, v in lengths.items() if v not in (1, n)}
    if uneven:
        given = ", ".join(f"{k} x{v}" for k, v in lengths.items())
        raise ConfigError(Problem("command line", f"the variant lists have different lengths ({given})",
                                  expected=f"each of --model, --prices, --demand given {n} times, once, or not at all",
                                  hint="scenario i takes the i-th file of each list; a list given once applies to all"))

    def pick(kind: str, i: int):
        v = lists[kind]
        return None if not v else v[0] if len(v) == 1 else v[i]

    variants = [(pick("--model", i) or model, pick("--prices", i), pick("--demand", i)) for i in range(n)]
    prepend = with_base or n == 1
    if prepend:
        variants.insert(0, (model, None, None))
    # default labels: what differs between the scenarios
    defaults = [[] for _ in variants]
    for j, kind in enumerate(("model", "prices", "demand")):
        col = [v[j] for v in variants]
        if len({str(c) for c in col}) > 1:
            for i, s in enumerate(_stem_labels(col)):
                if s:
                    defaults[i].append(s)
    auto = [" + ".join(d) if d else f"scenario {i + 1}" for i, d in enumerate(defaults)]
    if prepend:
        auto[0] = "base"
    if labels:
        if len(labels) == len(variants):
            names = list(labels)
        elif prepend and len(labels) == len(variants) - 1:
            names = ["base"] + list(labels)
        else:
            raise ConfigError(Problem("command line", f"{len(labels)} --label given for {len(variants)} scenarios",
                                      expected=f"{len(variants)} labels, one per scenario in order"
                                      + (f" (or {len(variants) - 1}, the base being labelled 'base')" if prepend else "")))
    else:
        names = _unique(auto)
    bad = [name for name in names if not str(name).strip()]
    if bad:
        raise ConfigError(Problem("command line", "a --label is blank", expected="a name for each scenario"))
    seen: dict[str, str] = {}
    for name in names:
        key = name.strip().lower()
        if key in seen:
            raise ConfigError(Problem("command line", f"two scenarios are labelled {name!r}",
                                      expected="a different --label for each scenario (case does not count)"))
        if key in RESERVED_COLUMN_NAMES:
            raise ConfigError(Problem("command line", f"--label {name!r} is reserved",
                                      expected="a label other than " + " or ".join(sorted(RESERVED_COLUMN_NAMES))))
        seen[key] = name
    return [Variant(label=name.strip(), model=m, prices=p, demand=d) for name, (m, p, d) in zip(names, variants)]


def _unique(names: list[str]) -> list[str]:
    out, count = [], {}
    for n in names:
        key = n.lower()
        count[key] = count.get(key, 0) + 1
        out.append(n if count[key] == 1 else f"{n} ({count[key]})")
    return out


def load_variants(variants: list[Variant]) -> list[PlanInputs]:
    """Read and validate every scenario before solving any; every problem of every scenario at once."""
    inputs, problems = [], []
    for v in variants:
        try:
            inputs.append(load_inputs(v.model, demand=v.demand, prices=v.prices))
        except InputError as exc:
            for p in exc.problems:
                if p not in problems:  # a bad file shared by several scenarios is reported once
                    problems.append(p)
    if problems:
        raise InputError(problems)
    return inputs


# ---------------------------------------------------------------------------- solving (in worker processes)

_SOLVER: dict = {}


def _init_solver(backend, time_limit_s, mip_gap) -> None:
    _SOLVER.update(backend=backend, time_limit_s=time_limit_s, mip_gap=mip_gap)


def _solve_one(task: tuple[str, PlanInputs]) -> Plan:
    _label, inp = task
    from planner.pipeline.whole_term import plan_over_term

    return plan_over_term(inp, make_plan, PlanOptions(**_SOLVER))  # judged as `planner plan` judges (whole term)


def solve_variants(variants: list[Variant], inputs: list[PlanInputs], *, backend=None, time_limit_s=None,
                   mip_gap=None, jobs: int = 1, executor: Executor | None = None,
                   progress: bool = True) -> list[Plan]:
    """One plan per scenario, on ``executor`` (default: ``jobs`` local processes).

    Raises SolverError naming every scenario without a plan.
    """

    def describe(o: Outcome) -> str:
        label = variants[o.index].label
        if not o.ok:
            return f"{label}: FAILED {o.error}"
        p: Plan = o.value
        return f"{label}: {p.status.value}, total ${p.cost['total']:,.0f}"

    executor = executor or LocalExecutor(jobs)
    outcomes = executor.map(_solve_one, [(v.label, inp) for v, inp in zip(variants, inputs)],
                            initializer=_init_solver, initargs=(backend, time_limit_s, mip_gap),
                            progress=progress, describe=describe)
    failed = []
    for v, o in zip(variants, outcomes):
        if not o.ok:
            failed.append(f"scenario '{v.label}': {o.error}")
        elif not o.value.status.has_plan:
            p = o.value
            failed.append(f"scenario '{v.label}': the solver found no plan ({p.status.value}"
                          f"{': ' + p.solve.message if p.solve.message else ''})")
    if failed:
        raise SolverError("no comparison written: " + "; ".join(failed)
                          + ". Hint: raise --time-limit if the solver ran out of time.")
    return [o.value for o in outcomes]


# ---------------------------------------------------------------------------- the comparison

def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "scenario"


def scenario_folders(variants: list[Variant]) -> list[str]:
    """Relative folders (posix) of each scenario's own plan: ``scenarios/<n>-<label>``."""
    return [f"scenarios/{i + 1}-{_slug(v.label)}" for i, v in enumerate(variants)]


def _changes(labels: list[str], spends: list[pd.DataFrame]) -> list[dict]:
    """What was bought more or less, and where spend moved, against the first scenario."""
    key = ["option", "gpu_type", "region"]
    base = spends[0].set_index(key)
    rows = []
    for label, sp in zip(labels[1:], spends[1:]):
        other = sp.set_index(key)
        idx = base.index.union(other.index)
        b = base.reindex(idx)
        o = other.reindex(idx)
        for k in idx:
            reserved = commitments.kind_of_name(str(k[0])) in commitments.COMMITMENT_KINDS
            b_usd, o_usd = b.at[k, "usd"], o.at[k, "usd"]
            b_usd = 0.0 if pd.isna(b_usd) else float(b_usd)
            o_usd = 0.0 if pd.isna(o_usd) else float(o_usd)
            col = "gpus" if reserved else "gpu_hours"
            b_q, o_q = b.at[k, col], o.at[k, col]
            b_q = 0.0 if pd.isna(b_q) else float(b_q)
            o_q = 0.0 if pd.isna(o_q) else float(o_q)
            if abs(o_usd - b_usd) < 0.005 and abs(o_q - b_q) < 1e-6:
                continue
            rows.append({"scenario": label, "against": labels[0], "option": k[0], "gpu_type": k[1], "region": k[2],
                         "quantity": "reserved GPUs bought" if reserved else "expected GPU-hours",
                         "base_quantity": b_q, "quantity_now": o_q, "quantity_delta": o_q - b_q,
                         "base_usd": b_usd, "usd_now": o_usd, "usd_delta": o_usd - b_usd})
    rows.sort(key=lambda r: (labels.index(r["scenario"]), -abs(r["usd_delta"])))
    return rows


def build_comparison(variants: list[Variant], plans: list[Plan]) -> dict:
    """Everything the comparison's JSON and workbook show, as plain data."""
    from planner.report import plan_to_dict

    labels = [v.label for v in variants]
    folders = scenario_folders(variants)
    scenarios = []
    for v, plan, folder in zip(variants, plans, folders):
        d = {"label": v.label}
        d.update(plan_to_dict(plan))
        d["plan_files"] = {"xlsx": f"{folder}/plan.xlsx", "json": f"{folder}/plan.json"}
        scenarios.append(d)
    metrics = [plan_metrics(p) for p in plans]
    spends = [spend(p) for p in plans]
    diffs: list[PriceDiff] = [diff_prices(plans[0].inputs.tables.prices, p.inputs.tables.prices) for p in plans[1:]]
    price_diffs = [{"scenario": label, "against": labels[0],
                    "prices_before": plans[0].inputs.tables.sources["prices"]["path"],
                    "prices_after": p.inputs.tables.sources["prices"]["path"],
                    "summary": d.summary(), **d.to_dict()}
                   for label, p, d in zip(labels[1:], plans[1:], diffs)]
    return {
        "scenarios": scenarios,
        "base": labels[0],
        "metrics": [{"label": label, **m} for label, m in zip(labels, metrics)],
        "price_diffs": price_diffs,
        "changes": _changes(labels, spends),
        "planner_version": __version__,
    }


def write_comparison(variants: list[Variant], plans: list[Plan], comparison: dict, out_dir: Path) -> dict[str, Path]:
    """Write every file to a temporary name first; rename them all only when all are written."""
    import json

    from planner.report import plan_json, write_workbook
    from planner.whatif.report import json_safe, write_comparison_workbook

    out_dir = Path(out_dir)
    paths = {"xlsx": out_dir / "comparison.xlsx", "json": out_dir / "comparison.json"}
    with contextlib.ExitStack() as stack:
        for plan, folder in zip(plans, scenario_folders(variants)):
            t0 = time.perf_counter()
            tmp_x = stack.enter_context(atomic_path(out_dir / folder / "plan.xlsx"))
            write_workbook(plan, tmp_x)
            plan.timings["write_xlsx"] = time.perf_counter() - t0
            tmp_j = stack.enter_context(atomic_path(out_dir / folder / "plan.json"))
            tmp_j.write_text(plan_json(plan), encoding="utf-8")
        tmp = stack.enter_context(atomic_path(paths["json"]))
        tmp.write_text(json.dumps(json_safe(comparison), indent=2, allow_nan=False) + "\n", encoding="utf-8")
        tmp = stack.enter_context(atomic_path(paths["xlsx"]))
        write_comparison_workbook(comparison, tmp)
    return paths



def summary_lines(comparison: dict) -> list[str]:
    """The terminal table: one column per scenario, then the price changes and the biggest moves."""
    ms = comparison["metrics"]
    labels = [m["label"] for m in ms]
    w = max(14, *(len(lb) + 2 for lb in labels))
    rows = [("status", [m["status"] for m in ms]),
            ("total cost", [_usd(m["total_usd"]) for m in ms]),
            ("  reserved", [_usd(m["reserved_usd"]) for m in ms]),
            ("  on-demand", [_usd(m["on_demand_usd"]) for m in ms]),
            ("  spot", [_usd(m["spot_usd"]) for m in ms]),
            *((f"  {k.replace('_', '-')}", [_usd(m.get(f"{k}_usd", 0.0)) for m in ms])
              for k in supply.RENTED[2:] if any(f"{k}_usd" in m for m in ms)),
            ("savings", [_usd(m["savings_usd"]) for m in ms]),
            ("shortfall GPU-h", [f"{m['shortfall_gpu_hours']:,.1f}" for m in ms]),
            ("reserved GPUs", [f"{sum(m['reserved_gpus'].values()):,.0f}" for m in ms])]
    base_total = ms[0]["total_usd"]
    rows.append((f"vs {labels[0]}", ["-"] + [_signed(m["total_usd"] - base_total) for m in ms[1:]]))
    lines = ["".ljust(18) + "".join(lb.rjust(w) for lb in labels)]
    lines += [name.ljust(18) + "".join(str(v).rjust(w) for v in vals) for name, vals in rows]
    for d in comparison["price_diffs"]:
        lines.append(f"prices of '{d['scenario']}' vs '{d['against']}': {d['summary']}")
    by_scen: dict[str, list] = {}
    for c in comparison["changes"]:
        by_scen.setdefault(c["scenario"], []).append(c)
    for label, cs in by_scen.items():
        top = "; ".join(f"{c['option']} {c['gpu_type']}/{c['region']} {_signed(c['usd_delta'])}" for c in cs[:4])
        lines.append(f"spend moved in '{label}': {top}" + (f"; and {len(cs) - 4} more" if len(cs) > 4 else ""))
    return lines


