"""Model file (TOML) -> frozen :class:`ModelConfig`.

Unknown keys and wrong types are errors that name the file and the key, so a
typo'd ``max_spot_shares`` never silently falls back to a default.
"""

from __future__ import annotations

import datetime
import math
import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from planner.core.errors import Collector, ConfigError, Problem
from planner.core.units import HEADROOM_MAX

BACKENDS = ("cbc", "highs")

DEFAULT_CHECKPOINT_MINUTES = 5.0
DEFAULT_RESTART_MINUTES = 10.0


@dataclass(frozen=True)
class ReplicaSpec:
    """One GPU type's inference replica: mean service time and GPUs per replica."""

    gpu_type: str
    service_ms: float
    gpus_per_replica: float = 1.0


@dataclass(frozen=True)
class SloSpec:
    """A latency SLO: ``P(latency > latency_slo_ms) <= 1 - percentile / 100`` (M/M/c, see queueing)."""

    latency_slo_ms: float
    percentile: float = 99.0
    service_cv: float = 1.0
    replicas: tuple[ReplicaSpec, ...] = ()  # the first is the reference type (speed 1)


@dataclass(frozen=True)
class ClassPolicy:
    """One workload class's policy (``[classes.<name>]``).

    Symbols of ``spec/formulation.md``: ``headroom`` is eta_k, ``max_spot_share``
    phi_k (0 when ``spot`` is false), ``gpu_types`` the speeds s[k, type]
    (None = every type at 1.0), ``regions`` the allowed regions (None = all).
    """

    name: str
    spot: bool = False
    max_spot_share: float = 1.0
    headroom: float = 0.0
    gpu_types: dict[str, float] | None = None
    regions: tuple[str, ...] | None = None
    checkpoint_minutes: float = DEFAULT_CHECKPOINT_MINUTES
    restart_minutes: float = DEFAULT_RESTART_MINUTES
    job_gpus: float | None = None
    checkpoint_interval_minutes: float | None = None  # None = "optimal"
    spot_goodput: float | None = None
    failure_rate_per_gpu_hour: float | None = None  # None = the fleet's rate
    description: str = ""
    slo: SloSpec | None = None  # demand in requests per second, sized to this SLO
    backfill: bool = False  # may run on reserved GPUs that other classes leave idle, preemptibly
    backfill_goodput: float | None = None  # override of the reclaim model's goodput
    team: str | None = None  # None = the class is its own team
    shortfall_penalty: float | None = None  # USD per reference GPU-hour unmet; None = the solver's (M)
    spares: tuple[float, float, float, float] | None = None  # (target, gpus_per_instance, gpu_mtbf_h, repair_h)
    max_start_delay_hours: float | None = None  # may wait this long for queued capacity (flex-start); None: never

    @property
    def phi(self) -> float:
        """The class's spot share limit phi_k: 0 when spot is not allowed."""
        return self.max_spot_share if self.spot else 0.0


@dataclass(frozen=True)
class TeamPolicy:
    """A team (``[teams.<name>]``): its fair-sharing weight and a floor of GPUs it is guaranteed."""

    name: str
    fair_share_weight: float = 1.0
    guaranteed_gpus: float = 0.0


@dataclass(frozen=True)
class SolverSettings:
    """The model file's ``[solver]`` table: backend, limits and the exact reductions."""
    backend: str = "highs"
    time_limit_s: float | None = 300.0
    mip_gap: float = 1e-4
    shortfall_penalty_usd_per_gpu_hour: float = 0.0  # 0 = 10 x max on-demand
    threads: int | None = None
    merge_periods: bool = True
    method: str = "auto"  # "monolithic", "benders", or "auto" (Benders for long dated-purchase horizons)


PURCHASE_EVERY = ("once", "quarter", "month")
METHODS = ("auto", "monolithic", "benders")
ACCOUNTING = ("amortised", "full_term")


@dataclass(frozen=True)
class CommitmentPolicy:
    """The model file's ``[commitments]``: when reserved capacity may be bought and how its cost is counted.

    ``purchase_every``: "once" (at the first period), "quarter" or "month" (the first period of every
    calendar quarter / month starting in the horizon); ``purchase_until``: no purchase on or after this
    date; ``accounting``: "amortised" (each purchase pays its effective rate for the horizon hours it is
    active) or "full_term" (each purchase pays its whole liability, past the horizon included).
    """

    purchase_every: str = "once"
    purchase_until: str | None = None  # ISO date
    accounting: str = "amortised"
    non_anticipativity: str = "tree"  # "tree": a later purchase waits for what is known then; "first_stage"


@dataclass(frozen=True)
class FinancePolicy:
    """The model file's ``[finance]``: the cost of capital and what the plan minimises.

    ``discount_rate``: annual, 0 to 0.5; the cash of calendar month m (0 = the first period's month) is
    worth ``(1 + rate) ** (-m / 12)`` today. ``objective``: "cost" (the formulation's expected cost) or
    "npv" (its net present value at the rate; equal to "cost" at a rate of 0). ``fiscal_year_start``: the
    calendar month (1-12) the fiscal year starts in, for the cash subtotals by fiscal year (1 = January).
    """

    discount_rate: float = 0.0
    objective: str = "cost"
    fiscal_year_start: int = 1
    cvar_alpha: float = 0.95  # mean-CVaR over the scenarios (planner/model/cvar.py): the tail's level
    cvar_weight: float = 0.0  # 0 = risk neutral (the default), 1 = CVaR alone

    @property
    def npv(self) -> bool:
        """True when the plan minimises the NPV of its cash."""
        return self.objective == "npv"


TERM_JUDGES = ("term", "horizon")
TERM_STEPS = ("month", "quarter")
DEFAULT_DRIFT_PER_YEAR = 0.3


@dataclass(frozen=True)
class TermPolicy:
    """The model file's ``[term]``: how a commitment that outlives the horizon is judged.

    ``judge``: "term" (the default: on demand over its whole term, :mod:`planner.inputs.whole_term`) or
    "horizon" (on the demand given only, amortised or full-term as ``[commitments] accounting`` says);
    ``drift_per_year``: with no history, the band the level past the horizon may drift in a year (the outer
    branches move by this fraction of the level a year); ``branches``: the tree's branches (2 to 5);
    ``tree``: "month" or "quarter", the step of demand past the horizon (and of the purchases dated there).
    ``drift_given`` says whether the model file set the band (it is stated in every output either way).
    """

    judge: str = "term"
    drift_per_year: float = DEFAULT_DRIFT_PER_YEAR
    branches: int = 3
    tree: str = "month"
    drift_given: bool = False


@dataclass(frozen=True)
class BudgetPolicy:
    """The model file's ``[budget]``: caps on the plan's expected cost (reserved amortised + on-demand + spot).

    ``max_total_usd`` caps the horizon; ``max_month_usd`` every calendar month; ``months`` ("2027-01" ->
    USD) caps single months (over ``max_month_usd``). Demand a budget cannot buy is shortfall, at its penalty.
    """

    max_total_usd: float | None = None
    max_month_usd: float | None = None
    months: dict = field(default_factory=dict)

    @property
    def monthly(self) -> bool:
        """True when any calendar month is capped."""
        return self.max_month_usd is not None or bool(self.months)

    def month_cap(self, month: str) -> float | None:
        """The cap of calendar month ``month`` ("YYYY-MM"), or None."""
        return self.months.get(month, self.max_month_usd)


@dataclass(frozen=True)
class ModelConfig:
    """A checked model file: paths of its tables, solver settings, classes, scenarios and teams."""
    name: str
    path: Path | None
    demand: Path
    prices: Path
    inventory: Path | None
    solver: SolverSettings
    classes: dict[str, ClassPolicy]
    scenarios: dict[str, float] = field(default_factory=dict)
    failure_rate_per_gpu_hour: float = 0.0
    teams: dict[str, TeamPolicy] = field(default_factory=dict)  # every team, with defaults where unlisted
    commitments: CommitmentPolicy = field(default_factory=CommitmentPolicy)
    budget: BudgetPolicy = field(default_factory=BudgetPolicy)
    finance: FinancePolicy = field(default_factory=FinancePolicy)
    availability: Path | None = None  # per-period caps on on-demand and spot GPUs (optional CSV)
    sites: dict[str, float] = field(default_factory=dict)  # [sites.<name>] max_mw: power cap of owned GPUs
    term: TermPolicy = field(default_factory=TermPolicy)
    history: Path | None = None  # demand history (long form) the whole term is forecast from
    scenario_prices: dict[str, Path] = field(default_factory=dict)  # [scenarios.<name>] prices: a price path file
    price_scenarios: tuple = ()  # the model file's scenario names (kept when a command plans one history of them)

    def team_of(self, cls: str) -> str:
        """The team that owns class ``cls`` (the class itself when it names none)."""
        return self.classes[cls].team or cls

    def with_overrides(self, **changes) -> "ModelConfig":
        """A copy with the given paths or solver settings replaced (``None`` keeps the model file's)."""
        solver_keys = {"backend", "time_limit_s", "mip_gap", "threads"}
        solver = {k: v for k, v in changes.items() if k in solver_keys and v is not None}
        other = {k: v for k, v in changes.items() if k not in solver_keys and v is not None}
        return replace(self, solver=replace(self.solver, **solver), **other)


_TOP_KEYS = {
    "name": str, "demand": str, "prices": str, "inventory": str, "availability": str, "description": str,
    "solver": dict, "classes": dict, "scenarios": dict, "failure_rate_per_gpu_hour": float,
    "teams": dict, "commitments": dict, "budget": dict, "finance": dict, "sites": dict, "term": dict,
    "history": str,
}
_TERM_KEYS = {"judge": str, "drift_per_year": float, "branches": int, "tree": str}
_SITE_KEYS = {"max_mw": float, "description": str}
_FINANCE_KEYS = {"discount_rate": float, "objective": str, "fiscal_year_start": int, "cvar_alpha": float,
                 "cvar_weight": float}
CVAR_ALPHA_RANGE = (0.5, 0.999)
FINANCE_OBJECTIVES = ("cost", "npv")
MAX_DISCOUNT_RATE = 0.5
_BUDGET_KEYS = {"max_total_usd": float, "max_month_usd": float, "months": dict}
_COMMITMENT_KEYS = {"purchase_every": str, "purchase_until": (str, datetime.date), "accounting": str,
                    "non_anticipativity": str}
_TEAM_KEYS = {"fair_share_weight": float, "guaranteed_gpus": float, "description": str}
_SOLVER_KEYS = {
    "backend": str, "time_limit_s": float, "mip_gap": float,
    "shortfall_penalty_usd_per_gpu_hour": float, "threads": int, "merge_periods": bool, "method": str,
}
_CLASS_KEYS = {
    "spot": bool, "max_spot_share": float, "headroom": float, "gpu_types": dict,
    "regions": list, "checkpoint_minutes": float, "restart_minutes": float,
    "job_gpus": float, "checkpoint_interval_minutes": (float, str), "spot_goodput": float,
    "failure_rate_per_gpu_hour": float, "description": str,
    "demand_unit": str, "latency_slo_ms": float, "slo_percentile": float, "service_cv": float,
    "replicas": dict, "backfill": bool, "backfill_goodput": float, "team": str,
    "shortfall_penalty": float, "shortfall_penalty_usd_per_gpu_hour": float,
    "spares_target": float, "gpus_per_instance": float, "gpu_mtbf_hours": float, "repair_hours": float,
    "max_start_delay_hours": float,
}
_REPLICA_KEYS = {"service_ms": float, "requests_per_s_per_replica": float, "gpus_per_replica": float}
DEMAND_UNITS = ("gpus", "requests_per_s")
RESERVED_NAMES = {"period", "hours", "scenario", "workload_class", "gpus", "row"}
_TYPE_WORDS = {str: "a string", float: "a number", int: "a whole number", bool: "true or false",
               dict: "a table", list: "a list", datetime.date: "a date"}


def _type_ok(value, kind) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if k is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if k is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if k not in (float, int) and isinstance(value, k):
            return True
    return False


def _unknown(bad: Collector, file: str, message: str, value, name: str, known, otherwise: str) -> None:
    """Report a name that is not one of ``known``, suggesting the closest (else ``otherwise``)."""
    close = _closest(name, known)
    bad.add(file, message, value=value, expected="one of " + ", ".join(sorted(known)),
            hint=f"did you mean '{close}'?" if close else otherwise)


def _check_keys(table: dict, spec: dict, where: str, file: str, bad: Collector) -> dict:
    """Keep the keys of ``table`` that are known and of the right type; report the rest."""
    good = {}
    for key, value in table.items():
        if key not in spec:
            _unknown(bad, file, f"unknown key '{where}{key}'", value, key, spec, "remove the key")
            continue
        kind = spec[key]
        if not _type_ok(value, kind):
            kinds = kind if isinstance(kind, tuple) else (kind,)
            bad.add(file, f"key '{where}{key}' has the wrong type", value=value,
                    expected=" or ".join(_TYPE_WORDS[k] for k in kinds))
            continue
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 1e15:
            bad.add(file, f"key '{where}{key}' is an absurdly large number", value=f"{str(value)[:20]}... "
                    f"({len(str(value))} digits)" if len(str(value)) > 20 else value,
                    expected="a number below 1e15")
            continue
        if isinstance(value, float) and not math.isfinite(value):
            bad.add(file, f"key '{where}{key}' must be a finite number", value=value)
            continue
        if isinstance(value, str) and any(_invisible(ch) for ch in value):
            bad.add(file, f"key '{where}{key}' has a control character", value=repr(value),
                    expected="printable text")
            continue
        good[key] = value
    return good


def _invisible(ch: str) -> bool:
    """Control characters (C0 but tab and newlines, DEL, C1), line separators and bidi overrides."""
    o = ord(ch)
    return ((o < 32 and ch not in "\t\n\r") or 0x7F <= o <= 0x9F or o in (0x2028, 0x2029)
            or 0x202A <= o <= 0x202E or 0x2066 <= o <= 0x2069)


def _closest(key: str, known) -> str | None:
    import difflib

    match = difflib.get_close_matches(key, list(known), n=1, cutoff=0.75)
    return match[0] if match else None


def load_model(path: str | Path) -> ModelConfig:
    """Read and check a model file; every problem is reported at once."""
    path = Path(path)
    file = str(path)
    if not path.exists():
        raise ConfigError(Problem(file, "model file not found",
                                  hint="give the path of a .toml model file, e.g. models/example.toml"))
    if path.is_dir():
        raise ConfigError(Problem(file, "is a directory, expected a model file (.toml)"))
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(Problem(file, f"not valid TOML: {exc}",
                                  hint="check quotes, '=' signs and [section] headers")) from None
    except RecursionError:
        raise ConfigError(Problem(file, "nested too deeply to read", expected="a model file of tables and keys",
                                  hint="arrays or tables nested hundreds deep are not a model file")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(Problem(file, f"cannot be read: {exc}")) from None
    return parse_model(raw, path)


def parse_model(raw: dict, path: Path | None) -> ModelConfig:
    """A :class:`ModelConfig` from the TOML table ``raw`` (paths relative to ``path``'s folder); raises ConfigError listing every problem."""
    file = str(path) if path else "<model>"
    base = path.parent if path else Path(".")
    bad = Collector()
    top = _check_keys(raw, _TOP_KEYS, "", file, bad)
    for required in ("demand", "prices"):
        if required not in raw:
            bad.add(file, f"missing key '{required}'", expected="a path relative to the model file")
    for key in ("demand", "prices", "inventory", "availability", "history"):
        if isinstance(raw.get(key), str) and not raw[key].strip():
            bad.add(file, f"key '{key}' is an empty path", expected="a path relative to the model file",
                    hint="remove the key" if key in ("inventory", "availability") else "name the file")
    name = top.get("name") or (path.stem if path else "plan")

    solver = _parse_solver(_check_keys(top.get("solver", {}), _SOLVER_KEYS, "solver.", file, bad),
                           file, bad)
    classes_raw = top.get("classes", {})
    if "classes" in raw and not classes_raw:
        bad.add(file, "the [classes] table is empty", expected="at least one [classes.<name>] table")
    if "classes" not in raw:
        bad.add(file, "no workload classes defined", expected="[classes.<name>] tables")
    classes = {}
    folded: dict[str, str] = {}
    for cname in classes_raw:
        low = cname.strip().casefold()
        if low in folded:
            bad.add(file, f"classes '{folded[low]}' and '{cname}' differ only in case or spaces", value=cname,
                    expected="class names that differ in more than case (they become column headers)")
        elif low in RESERVED_NAMES:
            bad.add(file, f"class name '{cname}' is a column name of the demand file", value=cname,
                    expected="a name other than " + ", ".join(sorted(RESERVED_NAMES)))
        elif not cname.strip() or any(ord(ch) < 32 or _invisible(ch) for ch in cname):
            bad.add(file, "class name is empty or has control characters", value=repr(cname),
                    expected="printable text")
        folded.setdefault(low, cname)
    for cname, ctable in classes_raw.items():
        if not isinstance(ctable, dict):
            bad.add(file, f"'classes.{cname}' must be a table", value=ctable,
                    expected=f"[classes.{cname}] with keys such as spot, headroom")
            continue
        policy = _parse_class(cname, _check_keys(ctable, _CLASS_KEYS, f"classes.{cname}.", file, bad),
                              ctable, file, bad)
        if policy is not None:
            classes[cname] = policy

    scenarios, price_files = {}, {}
    given = top.get("scenarios", {})
    tables = {k: v for k, v in given.items() if isinstance(v, dict)} if isinstance(given, dict) else {}
    unweighted = [k for k, v in tables.items() if "probability" not in v]
    if unweighted and len(unweighted) < len(given):
        bad.add(file, "some scenarios have a probability and some do not", value=", ".join(unweighted),
                expected="a probability for every scenario (scenarios.<name> = p, or probability = p in "
                         "[scenarios.<name>]), or for none (equal probabilities)")
    for sname, table in tables.items():
        extra = sorted(set(table) - {"probability", "prices"})
        if extra:
            bad.add(file, f"unknown key 'scenarios.{sname}.{extra[0]}'", value=extra[0],
                    expected="probability, prices")
        if "prices" in table:
            if not isinstance(table["prices"], str) or not table["prices"]:
                bad.add(file, f"'scenarios.{sname}.prices' must be a file name", value=table["prices"],
                        expected='a price sheet of this scenario, e.g. prices = "prices-fast.csv"')
            else:
                price_files[sname] = table["prices"]
    if unweighted and len(unweighted) < len(given):
        given = {}  # reported above: no second message about the probabilities it left out
    elif unweighted:
        given = {k: 1.0 / len(given) for k in given}
    else:
        given = {k: (v.get("probability") if isinstance(v, dict) else v) for k, v in given.items()}
    for sname, prob in given.items():
        if not _type_ok(prob, float) or not 0 < prob <= 1:
            bad.add(file, f"scenario probability 'scenarios.{sname}' out of range", value=prob,
                    expected="a number above 0 and at most 1",
                    hint="a scenario with no probability weighs nothing in an expected cost (and its own later "
                         "purchases would cost nothing): remove it" if _type_ok(prob, float) and prob == 0 else None)
        else:
            scenarios[sname] = float(prob)
    if scenarios and abs(sum(scenarios.values()) - 1) > 1e-6:
        bad.add(file, "scenario probabilities do not add up to 1",
                value=round(sum(scenarios.values()), 6), expected="a total of 1")
    fleet_failure = float(top.get("failure_rate_per_gpu_hour", 0.0))
    if not 0 <= fleet_failure <= 0.01:
        bad.add(file, "key 'failure_rate_per_gpu_hour' out of range", value=fleet_failure,
                expected="failures per GPU-hour between 0 and 0.01")
    teams = _parse_teams(top.get("teams", {}), classes, file, bad)
    commitments = _parse_commitments(_check_keys(top.get("commitments", {}), _COMMITMENT_KEYS, "commitments.",
                                                 file, bad), file, bad)
    budget = _parse_budget(_check_keys(top.get("budget", {}), _BUDGET_KEYS, "budget.", file, bad), file, bad)
    finance = _parse_finance(_check_keys(top.get("finance", {}), _FINANCE_KEYS, "finance.", file, bad), file, bad)
    sites = _parse_sites(top.get("sites", {}), file, bad)
    term = _parse_term(_check_keys(top.get("term", {}), _TERM_KEYS, "term.", file, bad), file, bad)
    bad.raise_if_any(ConfigError)

    def resolve(key):
        value = top.get(key)
        return Path(os.path.normpath(base / value)) if value else None

    return ModelConfig(name=name, path=path, demand=resolve("demand"), prices=resolve("prices"),
                       inventory=resolve("inventory"), availability=resolve("availability"),
                       solver=solver, classes=classes,
                       scenarios=scenarios, failure_rate_per_gpu_hour=fleet_failure, teams=teams,
                       commitments=commitments, budget=budget, finance=finance, sites=sites, term=term,
                       history=resolve("history"),
                       scenario_prices={k: Path(os.path.normpath(base / v)) for k, v in price_files.items()},
                       price_scenarios=tuple(scenarios))


def _parse_term(table: dict, file: str, bad: Collector) -> TermPolicy:
    """``[term]``: judge ("term" or "horizon"), drift_per_year (0 to 2), branches (2 to 5), tree ("month" or
    "quarter")."""
    judge = table.get("judge", "term")
    if not isinstance(judge, str) or judge.strip().lower() not in TERM_JUDGES:
        if "judge" in table:
            bad.add(file, "unknown 'term.judge'", value=judge, expected=" or ".join(f'"{v}"' for v in TERM_JUDGES),
                    hint='"term" judges each commitment on demand over its whole term; "horizon" on the demand '
                         'given only')
        judge = "term"
    drift = table.get("drift_per_year", DEFAULT_DRIFT_PER_YEAR)
    if isinstance(drift, bool) or not isinstance(drift, (int, float)) or not 0 <= float(drift) <= 2:
        if "drift_per_year" in table and isinstance(drift, (int, float)) and not isinstance(drift, bool):
            bad.add(file, "'term.drift_per_year' out of range", value=drift,
                    expected="a fraction of the level a year from 0 to 2, e.g. 0.3 for +-30 %/year",
                    hint="write the band as a fraction: 30 % is 0.3")
        drift = DEFAULT_DRIFT_PER_YEAR
    branches = table.get("branches", 3)
    if isinstance(branches, bool) or not isinstance(branches, int) or not 2 <= branches <= 5:
        if "branches" in table and isinstance(branches, (int, float)) and not isinstance(branches, bool):
            bad.add(file, "'term.branches' out of range", value=branches, expected="a whole number from 2 to 5")
        branches = 3
    step = table.get("tree", "month")
    if not isinstance(step, str) or step.strip().lower() not in TERM_STEPS:
        if "tree" in table:
            bad.add(file, "unknown 'term.tree'", value=step, expected=" or ".join(f'"{v}"' for v in TERM_STEPS))
        step = "month"
    return TermPolicy(judge=judge.strip().lower(), drift_per_year=float(drift), branches=int(branches),
                      tree=step.strip().lower(), drift_given="drift_per_year" in table)


def _parse_sites(table: dict, file: str, bad: Collector) -> dict[str, float]:
    """``[sites.<name>] max_mw``: the most power (MW) the owned GPUs of a site may draw in any period."""
    out = {}
    for name, t in table.items():
        if not isinstance(t, dict):
            bad.add(file, f"'sites.{name}' is not a table", value=t, expected="[sites.<name>] with max_mw = ...")
            continue
        t = _check_keys(t, _SITE_KEYS, f"sites.{name}.", file, bad)
        mw = t.get("max_mw")
        if not _type_ok(mw, float) or not 0 <= float(mw) <= 10_000:
            bad.add(file, f"'sites.{name}.max_mw' missing or out of range", value=mw,
                    expected="the site's power for GPUs in MW, 0 to 10000 (e.g. 12.5)")
            continue
        out[str(name)] = float(mw)
    return out


def _parse_finance(table: dict, file: str, bad: Collector) -> FinancePolicy:
    """``[finance]``: discount_rate (annual, 0 to 0.5) and objective ("cost" or "npv")."""
    rate = table.get("discount_rate", 0.0)
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not 0 <= float(rate) <= MAX_DISCOUNT_RATE:
        if "discount_rate" in table and isinstance(rate, (int, float)):
            bad.add(file, "'finance.discount_rate' out of range", value=rate,
                    expected=f"an annual rate between 0 and {MAX_DISCOUNT_RATE:g}, e.g. 0.08 for 8 %",
                    hint="write the rate as a fraction: 8 % is 0.08")
        rate = 0.0
    objective = table.get("objective", "cost")
    if isinstance(objective, str) and objective.strip().lower() in FINANCE_OBJECTIVES:
        objective = objective.strip().lower()
    elif "objective" in table:
        bad.add(file, "unknown 'finance.objective'", value=objective,
                expected=" or ".join(f'"{v}"' for v in FINANCE_OBJECTIVES))
        objective = "cost"
    start = table.get("fiscal_year_start", 1)
    if not isinstance(start, int) or isinstance(start, bool) or not 1 <= start <= 12:
        if "fiscal_year_start" in table and isinstance(start, (int, float)) and not isinstance(start, bool):
            bad.add(file, "'finance.fiscal_year_start' out of range", value=start,
                    expected="a calendar month from 1 (January) to 12 (December), e.g. 4 for a year from April")
        start = 1
    alpha = table.get("cvar_alpha", 0.95)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not (
            CVAR_ALPHA_RANGE[0] <= float(alpha) <= CVAR_ALPHA_RANGE[1]):
        if "cvar_alpha" in table and isinstance(alpha, (int, float)) and not isinstance(alpha, bool):
            bad.add(file, "'finance.cvar_alpha' out of range", value=alpha,
                    expected=f"a level from {CVAR_ALPHA_RANGE[0]:g} to {CVAR_ALPHA_RANGE[1]:g}, e.g. 0.95 for the "
                             "mean cost of the worst 5 % of scenarios")
        alpha = 0.95
    weight = table.get("cvar_weight", 0.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= float(weight) <= 1:
        if "cvar_weight" in table and isinstance(weight, (int, float)) and not isinstance(weight, bool):
            bad.add(file, "'finance.cvar_weight' out of range", value=weight,
                    expected="a weight from 0 (risk neutral) to 1 (CVaR alone), e.g. 0.3")
        weight = 0.0
    return FinancePolicy(discount_rate=float(rate), objective=objective, fiscal_year_start=int(start),
                         cvar_alpha=float(alpha), cvar_weight=float(weight))


def _parse_budget(table: dict, file: str, bad: Collector) -> BudgetPolicy:
    """``[budget]``: max_total_usd, max_month_usd, months = {"YYYY-MM" = USD}; every cap a positive number."""
    def cap(key, value):
        if value is None:
            return None
        if not _type_ok(value, float) or not math.isfinite(float(value)) or float(value) <= 0:
            bad.add(file, f"'budget.{key}' must be a positive amount in USD", value=value,
                    expected="a number > 0")
            return None
        return float(value)

    months = {}
    for month, value in (table.get("months") or {}).items():
        if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", str(month)):
            bad.add(file, "'budget.months' key is not a calendar month", value=month, expected="YYYY-MM")
            continue
        v = cap(f"months.{month}", value)
        if v is not None:
            months[str(month)] = v
    return BudgetPolicy(max_total_usd=cap("max_total_usd", table.get("max_total_usd")),
                        max_month_usd=cap("max_month_usd", table.get("max_month_usd")), months=months)


def _parse_commitments(table: dict, file: str, bad: Collector) -> CommitmentPolicy:
    """``[commitments]``: purchase_every, purchase_until (checked against the horizon later), accounting."""
    every = table.get("purchase_every", "once")
    if isinstance(every, str) and every.strip().lower() in PURCHASE_EVERY:
        every = every.strip().lower()
    elif "purchase_every" in table:
        bad.add(file, "unknown 'commitments.purchase_every'", value=every,
                expected=" or ".join(f'"{v}"' for v in PURCHASE_EVERY))
        every = "once"
    accounting = table.get("accounting", "amortised")
    if isinstance(accounting, str) and accounting.strip().lower().replace("amortized", "amortised") in ACCOUNTING:
        accounting = accounting.strip().lower().replace("amortized", "amortised")
    elif "accounting" in table:
        bad.add(file, "unknown 'commitments.accounting'", value=accounting,
                expected=" or ".join(f'"{v}"' for v in ACCOUNTING))
        accounting = "amortised"
    until = table.get("purchase_until")
    if until is not None:
        try:
            datetime.date.fromisoformat(str(until).strip()[:10])
            until = str(until).strip()[:10]
        except ValueError:
            bad.add(file, "'commitments.purchase_until' is not a date", value=until,
                    expected="an ISO date such as 2027-10-01")
            until = None
    from planner.inputs.tree import MODES

    na = table.get("non_anticipativity", "tree")
    if isinstance(na, str) and na.strip().lower().replace("-", "_") in MODES:
        na = na.strip().lower().replace("-", "_")
    elif "non_anticipativity" in table:
        bad.add(file, "unknown 'commitments.non_anticipativity'", value=na,
                expected=" or ".join(f'"{v}"' for v in MODES),
                hint='"tree": a purchase on a later date may differ between scenarios that differ before it; '
                     '"first_stage": every purchase is common to all scenarios')
        na = "tree"
    return CommitmentPolicy(purchase_every=every, purchase_until=until, accounting=accounting,
                            non_anticipativity=na)


def _parse_teams(table: dict, classes: dict, file: str, bad: Collector) -> dict[str, TeamPolicy]:
    """``[teams.<name>]`` tables; every team that a class names (or a class on its own) gets one."""
    named = {c.team or c.name for c in classes.values()}
    out = {}
    for tname, t in table.items():
        if not isinstance(t, dict):
            bad.add(file, f"'teams.{tname}' must be a table", value=t,
                    expected="[teams.<name>] with fair_share_weight and guaranteed_gpus")
            continue
        if tname not in named:
            _unknown(bad, file, f"'teams.{tname}' is not the team of any class", tname, tname, named,
                     'set team = "..." in the classes it owns')
            continue
        t = _check_keys(t, _TEAM_KEYS, f"teams.{tname}.", file, bad)
        weight = float(t.get("fair_share_weight", 1.0))
        if not 0.001 <= weight <= 1000:
            bad.add(file, f"'teams.{tname}.fair_share_weight' out of range", value=t.get("fair_share_weight"),
                    expected="a weight between 0.001 and 1000 (relative: 1 = an equal share)")
            continue
        floor = float(t.get("guaranteed_gpus", 0.0))
        if not 0 <= floor <= 1e7:
            bad.add(file, f"'teams.{tname}.guaranteed_gpus' out of range", value=t.get("guaranteed_gpus"),
                    expected="GPUs >= 0")
            continue
        out[tname] = TeamPolicy(tname, weight, floor)
    for tname in sorted(named):
        out.setdefault(tname, TeamPolicy(tname))
    return out


def _parse_solver(table: dict, file: str, bad: Collector) -> SolverSettings:
    s = SolverSettings()
    backend = table.get("backend", s.backend).lower()
    if backend not in BACKENDS:
        bad.add(file, "unknown value of 'solver.backend'", value=backend,
                expected=" or ".join(f"'{b}'" for b in BACKENDS))
    limit = table.get("time_limit_s", s.time_limit_s)
    if limit is not None and limit <= 0:
        bad.add(file, "'solver.time_limit_s' must be > 0", value=limit)
    gap = table.get("mip_gap", s.mip_gap)
    if not 0 <= gap < 1:
        bad.add(file, "'solver.mip_gap' out of range", value=gap, expected="0 <= mip_gap < 1")
    penalty = table.get("shortfall_penalty_usd_per_gpu_hour", 0.0)
    if penalty < 0:
        bad.add(file, "'solver.shortfall_penalty_usd_per_gpu_hour' must be >= 0", value=penalty)
    threads = table.get("threads")
    if threads is not None and threads < 1:
        bad.add(file, "'solver.threads' must be >= 1", value=threads)
    elif threads is not None and threads > (os.cpu_count() or 1):
        import warnings

        warnings.warn(f"{file}: solver.threads = {threads} is more than this machine's {os.cpu_count()} CPUs; "
                      f"using {os.cpu_count()}", RuntimeWarning, stacklevel=2)
        threads = os.cpu_count() or 1
    method = str(table.get("method", "auto")).strip().lower()
    if method not in METHODS:
        bad.add(file, "unknown 'solver.method'", value=table.get("method"),
                expected=" or ".join(f'"{m}"' for m in METHODS))
        method = "auto"
    return SolverSettings(backend=backend, time_limit_s=float(limit) if limit else None,
                          mip_gap=float(gap), shortfall_penalty_usd_per_gpu_hour=float(penalty),
                          threads=threads, merge_periods=table.get("merge_periods", True), method=method)


def _parse_class(name: str, t: dict, raw: dict, file: str, bad: Collector) -> ClassPolicy | None:
    where = f"classes.{name}"
    n_before = len(bad.problems)
    spot = t.get("spot", "max_spot_share" in t)
    share = float(t.get("max_spot_share", 1.0 if spot else 0.0))
    if not 0 <= share <= 1:
        bad.add(file, f"'{where}.max_spot_share' out of range", value=share, expected="0 to 1")
    if "spot" in t and not spot and share > 0 and "max_spot_share" in t:
        bad.add(file, f"'{where}' has spot = false but max_spot_share = {share}",
                expected="spot = true, or no max_spot_share",
                hint="a class that may not use spot needs no max_spot_share")
    headroom = float(t.get("headroom", 0.0))
    if not 0 <= headroom <= HEADROOM_MAX:
        bad.add(file, f"'{where}.headroom' out of range", value=headroom,
                expected=f"a share between 0 and {HEADROOM_MAX:g} (0.15 = 15 % above demand)")
    speeds = None
    if "gpu_types" in t:
        speeds = {}
        for gtype, speed in t["gpu_types"].items():
            if not _type_ok(speed, float) or abs(speed) > 1e15 or not math.isfinite(speed) or speed < 0:
                bad.add(file, f"speed '{where}.gpu_types.{gtype}' is not a number >= 0", value=speed,
                        expected="a speed relative to the class's reference GPU, e.g. 1.0")
            else:
                speeds[str(gtype)] = float(speed)
        if speeds is not None and t["gpu_types"] and all(v == 0 for v in speeds.values()):
            bad.add(file, f"'{where}.gpu_types' gives every GPU type speed 0",
                    expected="at least one type with speed > 0")
        if not t["gpu_types"]:
            bad.add(file, f"'{where}.gpu_types' is empty", expected="at least one GPU type")
    regions = None
    if "regions" in t:
        if not t["regions"] or not all(isinstance(r, str) for r in t["regions"]):
            bad.add(file, f"'{where}.regions' must be a non-empty list of region names",
                    value=t["regions"])
        else:
            regions = tuple(t["regions"])
    checkpoint = float(t.get("checkpoint_minutes", DEFAULT_CHECKPOINT_MINUTES))
    restart = float(t.get("restart_minutes", DEFAULT_RESTART_MINUTES))
    for key, value in (("checkpoint_minutes", checkpoint), ("restart_minutes", restart)):
        if value < 0:
            bad.add(file, f"'{where}.{key}' must be >= 0", value=value)
    job = t.get("job_gpus")
    if job is not None and job <= 0:
        bad.add(file, f"'{where}.job_gpus' must be > 0", value=job)
    interval = t.get("checkpoint_interval_minutes", "optimal")
    if isinstance(interval, str):
        if interval.strip().lower() != "optimal":
            bad.add(file, f"'{where}.checkpoint_interval_minutes' not understood", value=interval,
                    expected='"optimal" or a number of minutes > 0')
        interval = None
    elif interval <= 0:
        bad.add(file, f"'{where}.checkpoint_interval_minutes' must be > 0", value=interval)
    goodput = t.get("spot_goodput")
    if goodput is not None and not 0 < goodput <= 1:
        bad.add(file, f"'{where}.spot_goodput' out of range", value=goodput, expected="0 < spot_goodput <= 1")
    failure = t.get("failure_rate_per_gpu_hour")
    if failure is not None and not 0 <= failure <= 0.01:
        bad.add(file, f"'{where}.failure_rate_per_gpu_hour' out of range", value=failure,
                expected="failures per GPU-hour between 0 and 0.01 (1e-5 = one per 100,000 GPU-hours)")
    slo = _parse_slo(name, t, file, bad)
    if slo is not None and "gpu_types" in t:
        bad.add(file, f"'{where}' has both gpu_types and replicas", expected="replicas only",
                hint="an SLO-sized class lists its GPU types under [classes.<name>.replicas.<type>]")
    if slo is not None:
        speeds = {r.gpu_type: 1.0 for r in slo.replicas}  # the sizing sets the real speeds (inputs)
    backfill_goodput = t.get("backfill_goodput")
    if backfill_goodput is not None and not 0 < backfill_goodput <= 1:
        bad.add(file, f"'{where}.backfill_goodput' out of range", value=backfill_goodput,
                expected="0 < backfill_goodput <= 1")
    if slo is not None and spot:
        bad.add(file, f"'{where}' is SLO-sized and has spot = true", value=True,
                expected="spot = false: a latency SLO cannot ride on GPUs taken back at minutes' notice",
                hint="remove spot and max_spot_share from the class")
    if backfill_goodput is not None and not t.get("backfill"):
        bad.add(file, f"'{where}.backfill_goodput' without backfill = true", value=backfill_goodput,
                expected="backfill = true, or no backfill_goodput")
    if t.get("backfill") and slo is not None:
        bad.add(file, f"'{where}' is SLO-sized and has backfill = true", value=True,
                expected="backfill only for preemptible work (training, batch)")
    penalty = _class_penalty(t, where, file, bad)
    delay = t.get("max_start_delay_hours")
    if delay is not None and not (math.isfinite(delay) and 0 <= delay <= 8760):
        bad.add(file, f"'{where}.max_start_delay_hours' out of range", value=delay,
                expected="hours >= 0 a job may wait for queued capacity (flex-start), at most 8760")
    if delay is not None and slo is not None:
        bad.add(file, f"'{where}' is SLO-sized and has max_start_delay_hours", value=delay,
                expected="no start delay for a latency SLO: requests cannot wait hours for a GPU",
                hint="remove max_start_delay_hours from the class")
    team = t.get("team")
    if team is not None and (not team.strip() or any(ord(ch) < 32 or _invisible(ch) for ch in team)):
        bad.add(file, f"'{where}.team' must be a non-empty name without control characters", value=team)
    if len(bad.problems) > n_before:
        return None
    return ClassPolicy(name=name, spot=bool(spot), max_spot_share=share if spot else 0.0,
                       headroom=headroom, gpu_types=speeds, regions=regions,
                       checkpoint_minutes=checkpoint, restart_minutes=restart,
                       job_gpus=float(job) if job is not None else None,
                       checkpoint_interval_minutes=float(interval) if interval is not None else None,
                       spot_goodput=float(goodput) if goodput is not None else None,
                       failure_rate_per_gpu_hour=None if failure is None else float(failure),
                       description=t.get("description", ""), slo=slo,
                       backfill=bool(t.get("backfill", False)),
                       backfill_goodput=None if backfill_goodput is None else float(backfill_goodput),
                       team=team, shortfall_penalty=penalty, spares=_class_spares(t, where, file, bad),
                       max_start_delay_hours=None if delay is None else float(delay))


def _class_spares(t: dict, where: str, file: str, bad: Collector):
    """``spares_target`` with ``gpu_mtbf_hours``, ``repair_hours`` and ``gpus_per_instance`` (default 8)."""
    keys = ("spares_target", "gpus_per_instance", "gpu_mtbf_hours", "repair_hours")
    if "spares_target" not in t:
        for k in keys[1:]:
            if k in t:
                bad.add(file, f"'{where}.{k}' needs spares_target", value=t[k], expected="spares_target = 0.999")
        return None
    v = (float(t["spares_target"]), float(t.get("gpus_per_instance", 8)), float(t.get("gpu_mtbf_hours", "nan")),
         float(t.get("repair_hours", "nan")))
    ok = (0 < v[0] < 1, 1 <= v[1] <= 1024 and v[1].is_integer(), 1 <= v[2] <= 1e9, 0 <= v[3] <= 8760)
    for k, good, want in zip(keys, ok, ("between 0 and 1 (0.999)", "a whole number from 1 to 1,024",
                                        "hours from 1 to 1e9 (a GPU's mean time between failures)",
                                        "hours from 0 to 8,760 (a year)")):
        if not good:
            bad.add(file, f"'{where}.{k}' missing or out of range", value=t.get(k), expected=want)
    return v if all(ok) else None


def _class_penalty(t: dict, where: str, file: str, bad: Collector) -> float | None:
    """``shortfall_penalty`` (or its long name ``shortfall_penalty_usd_per_gpu_hour``): USD per reference
    GPU-hour of this class's unmet demand, > 0; None when neither is given (the solver's penalty M)."""
    given = [k for k in ("shortfall_penalty", "shortfall_penalty_usd_per_gpu_hour") if k in t]
    if len(given) > 1:
        bad.add(file, f"'{where}' sets both shortfall_penalty and shortfall_penalty_usd_per_gpu_hour",
                value=f"{t[given[0]]}, {t[given[1]]}", expected="one of them (they are the same setting)")
        return None
    if not given:
        return None
    value = float(t[given[0]])
    if not 0 < value <= 1e9:
        bad.add(file, f"'{where}.{given[0]}' out of range", value=t[given[0]],
                expected="USD per reference GPU-hour of unmet demand, > 0 and at most 1e9",
                hint="leave it out for the solver's penalty (10 x the highest on-demand price)")
        return None
    return value


def _parse_slo(name: str, t: dict, file: str, bad: Collector) -> SloSpec | None:
    """``demand_unit = "requests_per_s"`` with ``latency_slo_ms`` and ``[classes.<name>.replicas.<type>]``."""
    from planner.sizing import queueing

    where = f"classes.{name}"
    unit = t.get("demand_unit", "gpus")
    if unit not in DEMAND_UNITS:
        bad.add(file, f"'{where}.demand_unit' not understood", value=unit,
                expected=" or ".join(f'"{u}"' for u in DEMAND_UNITS))
        return None
    slo_keys = [k for k in ("latency_slo_ms", "slo_percentile", "service_cv", "replicas") if k in t]
    if unit == "gpus":
        if slo_keys:
            bad.add(file, f"'{where}.{slo_keys[0]}' needs demand_unit = \"requests_per_s\"", value=unit,
                    expected='demand_unit = "requests_per_s" (the demand is then requests per second)')
        return None
    for key in ("latency_slo_ms", "replicas"):
        if key not in t:
            bad.add(file, f"'{where}' has demand_unit = \"requests_per_s\" but no {key}",
                    expected="latency_slo_ms = <ms> and [classes.<name>.replicas.<gpu type>] tables")
    if "latency_slo_ms" not in t or "replicas" not in t:
        return None
    n_before = len(bad.problems)
    slo_ms = float(t["latency_slo_ms"])
    if slo_ms <= 0:
        bad.add(file, f"'{where}.latency_slo_ms' must be > 0", value=t["latency_slo_ms"], expected="milliseconds > 0")
    pct = float(t.get("slo_percentile", 99.0))
    if not 0 < pct <= queueing.MAX_PERCENTILE:
        bad.add(file, f"'{where}.slo_percentile' out of range", value=t.get("slo_percentile"),
                expected=f"a percentile above 0 and at most {queueing.MAX_PERCENTILE:.7f} (a tail of 1e-9), e.g. 99")
    cv = float(t.get("service_cv", 1.0))
    if not 0 <= cv <= 10:
        bad.add(file, f"'{where}.service_cv' out of range", value=cv,
                expected="a coefficient of variation between 0 and 10 (1 = exponential service)")
    if not t["replicas"]:
        bad.add(file, f"'{where}.replicas' is empty", expected="one [classes.<name>.replicas.<gpu type>] table")
    replicas = []
    for gtype, spec in t["replicas"].items():
        at = f"{where}.replicas.{gtype}"
        if not isinstance(spec, dict):
            bad.add(file, f"'{at}' must be a table", value=spec,
                    expected="{ service_ms = 500, gpus_per_replica = 1 }")
            continue
        spec = _check_keys(spec, _REPLICA_KEYS, f"{at}.", file, bad)
        rates = [k for k in ("service_ms", "requests_per_s_per_replica") if k in spec]
        if len(rates) != 1:
            bad.add(file, f"'{at}' needs exactly one of service_ms, requests_per_s_per_replica",
                    value=", ".join(rates) or "neither",
                    expected="the mean service time of one request on one replica")
            continue
        rate = float(spec[rates[0]])
        if rate <= 0:
            bad.add(file, f"'{at}.{rates[0]}' must be > 0", value=spec[rates[0]],
                    expected="a service time or rate > 0")
            continue
        service_ms = rate if rates[0] == "service_ms" else 1000.0 / rate
        if not 1e-3 <= service_ms <= 1e9:
            bad.add(file, f"'{at}.{rates[0]}' out of range", value=spec[rates[0]],
                    expected="a service time between 0.001 ms and 1e9 ms")
            continue
        gpr = float(spec.get("gpus_per_replica", 1.0))
        if not 0 < gpr <= 4096:
            bad.add(file, f"'{at}.gpus_per_replica' out of range", value=spec.get("gpus_per_replica"), expected="0 < GPUs <= 4096")
            continue
        if slo_ms > 0 and 0 < pct < 100 and 0 <= cv <= 10 and not queueing.slo_feasible(
                service_ms / 1000.0, slo_ms / 1000.0, pct, cv):
            floor_ms = queueing.latency_percentile(pct, 0.0, service_ms / 1000.0, 1, cv) * 1000.0
            bad.add(file, f"'{at}': no number of replicas meets p{pct:.10g} <= {slo_ms:g} ms",
                    value=f"service_ms = {service_ms:g}, service_cv = {cv:g}",
                    expected=f"latency_slo_ms >= {floor_ms:.4g} (p{pct:.10g} of the service time alone)"
                             " or a faster replica",
                    hint="the service time alone exceeds the target in more than "
                         f"{100 - pct:g} % of requests")
            continue
        replicas.append(ReplicaSpec(gpu_type=str(gtype), service_ms=service_ms, gpus_per_replica=gpr))
    if len(bad.problems) > n_before or not replicas:
        return None
    return SloSpec(latency_slo_ms=slo_ms, percentile=pct, service_cv=cv, replicas=tuple(replicas))
