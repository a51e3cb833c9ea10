"""What every command shares, defined once: exit codes, error handling, options and small formatting.

Exit codes (spec/contracts.md): 0 plan found and demand met; 1 internal or
solver error; 2 bad input; 3 solved but demand not met or not proven optimal.
"""

from __future__ import annotations

import functools
import json
import math
import sys
import traceback
from pathlib import Path

import click

from planner.core.errors import ConfigError, InputError, PlannerError, Problem

MODELS = Path(__file__).resolve().parent.parent.parent / "models"
EXAMPLE_MODEL = MODELS / "example.toml"

EXIT_OK, EXIT_ERROR, EXIT_INPUT, EXIT_NOT_MET = 0, 1, 2, 3


class Finite(click.FloatRange):
    """A number in a range that is finite: nan and inf are refused (exit 2, naming the option)."""

    def convert(self, value, param, ctx):
        """The number, or a usage error (exit 2) naming the option when it is nan or infinite."""
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def default_model(name: str = "example") -> Path:
    """models/<name>.toml in the working folder when it exists, else the bundled one."""
    local = Path("models") / f"{name}.toml"
    return local if local.exists() else MODELS / f"{name}.toml"


def handle_errors(fn):
    """PlannerError -> short message and its exit code; anything else -> exit 1 (traceback with --debug)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        debug = kwargs.pop("debug", False)
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            click.secho(f"Error: {exc}", fg="red", err=True)
            sys.exit(EXIT_INPUT)
        except PlannerError as exc:
            click.secho(f"Error: {exc}", fg="red", err=True)
            sys.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt as exc:
            replaced = getattr(exc, "replaced_outputs", None)
            click.secho("Interrupted: no outputs were changed." if not replaced else
                        f"Interrupted while writing the outputs one by one (the folder holds other files): "
                        f"{', '.join(replaced)} are this run's, the others the previous run's.", fg="red", err=True)
            from planner.solve.interrupt import solving

            if solving():  # a solve that did not stop in time: a normal exit would abort under HiGHS's threads
                import os

                sys.stdout.flush(), sys.stderr.flush()
                os._exit(EXIT_ERROR)
            sys.exit(EXIT_ERROR)
        except BrokenPipeError:  # the reader went away (e.g. `| head`): outputs are already written
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(EXIT_OK)
        except (IsADirectoryError, NotADirectoryError, FileExistsError) as exc:  # an output path of the wrong
            where = exc.filename or ""  # kind (a folder where a file goes, a file where a folder goes): bad input
            click.secho(f"Error: cannot write {where}: {exc.strerror or exc}; expected the path of a new "
                        f"{'file' if isinstance(exc, IsADirectoryError) else 'folder'} (or of a previous output)",
                        fg="red", err=True)
            sys.exit(EXIT_INPUT)
        except OSError as exc:  # the output folder cannot be written (read-only, no such device...)
            where = exc.filename or ""
            click.secho(f"Error: cannot write {where}: {exc.strerror or exc}", fg="red", err=True)
            sys.exit(EXIT_ERROR)
        except Exception as exc:  # a bug: say so briefly
            if debug:
                traceback.print_exc()
            click.secho(f"Internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
                        fg="red", err=True)
            sys.exit(EXIT_ERROR)

    return click.option("--debug", is_flag=True, help="Show the full traceback of internal errors.")(wrapper)


def same_file(a: Path, b: Path) -> bool:
    """True when paths ``a`` and ``b`` are one file: ``os.path.samefile`` when both exist (hard links, symlinks),
    else the same resolved path (links resolved)."""
    import os

    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def refuse_overwriting_inputs(outputs: dict, inputs: dict) -> None:
    """Exit 2 (an InputError), before anything is written, when an output (option -> path) is, or would
    overwrite, an input (name -> path), or is another output. Every command that reads files and writes
    files calls this first."""
    problems = []
    outs = [(k, Path(v)) for k, v in outputs.items() if v is not None]
    for flag, path in outs:
        for name, src in inputs.items():
            if src is not None and str(src) != "" and same_file(path, Path(src)):
                problems.append(Problem(flag, f"is the same file as the input {name} ({src})", value=str(path),
                                        expected="a new path: an output never overwrites an input"))
    for i, (flag, path) in enumerate(outs):
        for other, path2 in outs[i + 1:]:
            if same_file(path, path2):
                problems.append(Problem(flag, f"is the same file as {other}", value=str(path),
                                        expected="two different paths"))
    if problems:
        raise InputError(problems)


# ---- options, each defined once ---------------------------------------------------------------------------
model_argument = click.argument("model", required=False, type=click.Path(path_type=Path))
solver_option = click.option("--solver", type=click.Choice(["cbc", "highs"]), default=None,
                             help="Solver backend (default: the model file's, else highs).")
time_limit_option = click.option("--time-limit", type=Finite(min=0, min_open=True), default=None,
                                 help="Solver time limit in seconds (overrides the model file).")
gap_option = click.option("--mip-gap", type=Finite(0, 1, max_open=True), default=None,
                          help="Relative MIP gap at which the solver may stop (overrides the model file).")
prices_option = click.option("--prices", type=click.Path(path_type=Path), default=None,
                             help="Price sheet to use instead of the model file's.")
demand_option = click.option("--demand", type=click.Path(path_type=Path), default=None,
                             help="Demand forecast to use instead of the model file's.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
quiet_option = click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors (no progress either).")
jobs_option = click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                           help="Solves run at once (default: every core; with --executor dask, the cluster's).")
executor_option = click.option("--executor", type=click.Choice(["local", "dask"]), default="local",
                               show_default=True,
                               help="Run the solves in local processes, or on Dask (a local cluster, or "
                                    "--scheduler's).")
scheduler_option = click.option("--scheduler", default=None, metavar="ADDRESS",
                                help="Dask scheduler to send the solves to (e.g. tcp://10.0.0.5:8786); "
                                     "implies --executor dask.")


def out_option(what: str, suffix: str = "", required: bool = False):
    """``--out`` for a command writing ``what`` (default folder outputs/<model name><suffix>/)."""
    default = "" if required else f" (default outputs/<model name>{suffix}/)"
    return click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
                        required=required, help=f"Output folder for {what}{default}.")


def solve_options(fn):
    """--solver, --time-limit and --mip-gap."""
    for opt in reversed((solver_option, time_limit_option, gap_option)):
        fn = opt(fn)
    return fn


def scale_options(fn):
    """--jobs, --executor and --scheduler, for commands that run many solves."""
    for opt in reversed((jobs_option, executor_option, scheduler_option)):
        fn = opt(fn)
    return fn


def executor_from(executor: str, scheduler: str | None, jobs: int | None):
    """The :class:`~planner.core.executors.Executor` the options ask for."""
    from planner.core.executors import make_executor

    return make_executor("dask" if scheduler else executor, jobs=jobs, scheduler=scheduler)


# ---- endings ------------------------------------------------------------------------------------------------
def not_proven_reasons(labelled_plans) -> list[str]:
    """Why a set of plans earns exit code 3: not proven optimal, or demand left unmet (one line each)."""
    why = []
    for label, p in labelled_plans:
        name = f"'{label}' " if label else ""
        if not p.status.proven:
            why.append(f"{name}status {p.status.value} (gap "
                       f"{'not known: no bound yet' if p.solve.mip_gap is None else format(p.solve.mip_gap, '.2e')})")
        if not p.demand_met:
            why.append(f"{name}leaves {p.shortfall_gpu_hours:,.1f} GPU-hours of demand unmet")
        for m in p.slo_misses.itertuples() if p.ok else ():
            why.append(f"{name}class {m.workload_class} misses its latency SLO in {m.periods_missed} periods")
    return why


def exit_not_proven(why: list[str]) -> None:
    """Warn and exit 3 when there is any reason; return otherwise."""
    if why:
        click.secho("Warning: " + "; ".join(why), fg="yellow", err=True)
        sys.exit(EXIT_NOT_MET)


def echo_json(doc) -> None:
    """Print a JSON document (already made of plain numbers, strings, lists and dicts)."""
    click.echo(json.dumps(doc, indent=2))


def number_list(text: str | None, flag: str = "--sweep-values") -> list[float]:
    """Comma-separated numbers >= 0 from the command line ([] when not given)."""
    if not text:
        return []
    try:
        vals = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(Problem("command line", f"{flag} must be comma-separated numbers",
                                  value=text)) from None
    if any(v < 0 or not math.isfinite(v) for v in vals):
        raise ConfigError(Problem("command line", f"{flag} must be finite numbers >= 0", value=text))
    return vals


def fmt(v) -> str:
    """A value for a terminal table: yes/no, inf, whole numbers without decimals, else 4 significant digits."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and not math.isfinite(v):
        return "inf"
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e9:
        return f"{int(v)}"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def config_inputs(config) -> dict:
    """The input files a model reads (name -> path): the model file and the tables it names."""
    return {"MODEL": config.path, "demand": config.demand, "prices": config.prices,
            "inventory": config.inventory, "availability": config.availability,
            "history": getattr(config, "history", None)}


def refuse_overwrite_in(out_dir, names, inputs: dict, flag: str = "--out") -> None:
    """``refuse_overwriting_inputs`` for the files ``names`` a command writes into ``out_dir``."""
    refuse_overwriting_inputs({f"{flag} {Path(out_dir) / n}": Path(out_dir) / n for n in names}, inputs)


def check_outputs(out_dir, names=()) -> None:
    """``atomic.check_writable`` with a folder where an output file should be (or a file where the output
    folder should be) as bad input: exit 2 naming it, before anything is written."""
    from planner.core.atomic import check_writable

    try:
        check_writable(out_dir, names)
    except (IsADirectoryError, NotADirectoryError) as exc:
        raise InputError(Problem(str(exc.filename), exc.strerror or str(exc), value=str(exc.filename),
                                 expected="a path the planner can write its file at")) from None
