"""Raw text tables + model file -> typed, consistent tables, or one InputError listing every problem.

Each check is vectorised over the whole column; only the rows that fail are
turned into messages (at most ``MAX_ROWS_PER_CHECK`` per check, then a count).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from planner.inputs import commitments
from planner.inputs import schema
from planner.inputs.config import ModelConfig
from planner.core.errors import Collector, InputError
from planner.inputs.io import RawTable
from planner.core.units import commitment_usd, effective_rate
from planner.inputs import supply

MAX_ROWS_PER_CHECK = 10
ABSURD_GPUS = 1e8
ABSURD_USD_PER_HOUR = 1e5
DEFAULT_SCENARIO = "base"
MIN_PRICE = 1e-4  # USD per GPU-hour: costs below it vanish in the solver's tolerances
_TERM_FROM_NAME = re.compile(r"_(\d+(?:\.\d+)?)\s*(y|yr|year|years|m|mo|month|months)(?=_|$)")  # reserved_1y, reserved_1y_all_upfront
QUANTILE = re.compile(r"p\d{1,2}")
_TZ = re.compile(r"(?:Z|[+-]\d\d:?\d\d)$")


@dataclass(frozen=True)
class Tables:
    """Validated inputs, typed and tidy; nothing here refers to files any more but ``sources``."""

    demand: pd.DataFrame  # scenario, period, workload_class, gpus, hours
    prices: pd.DataFrame  # schema.PRICES columns, option normalised, defaults filled
    inventory: pd.DataFrame  # schema.INVENTORY columns
    sources: dict[str, dict] = field(default_factory=dict)  # "demand" -> {"path", "sha256"}
    availability: pd.DataFrame | None = None  # schema.AVAILABILITY columns (None: the sheet's caps alone)


def _report(bad: Collector, raw: RawTable, mask: pd.Series, column: str | None, message: str,
            values: pd.Series | None = None, **extra) -> None:
    """Add one problem per failing row (up to MAX_ROWS_PER_CHECK), then a count of the rest."""
    idx = np.flatnonzero(np.asarray(mask, dtype=bool))
    for i in idx[:MAX_ROWS_PER_CHECK]:
        value = None if values is None else values.iloc[i]
        if isinstance(value, str) and value == "":
            value = "(blank)"
        bad.add(raw.file, message, row=int(raw.rows.iloc[i]), column=column, value=value, **extra)
    if len(idx) > MAX_ROWS_PER_CHECK:
        bad.add(raw.file, f"{len(idx) - MAX_ROWS_PER_CHECK} more rows with the same problem "
                f"({message})", column=column)


def check_columns(raw: RawTable, table: tuple, bad: Collector, what: str,
                  extra: list[str] | None = None) -> bool:
    """Report missing required columns and unknown ones (with the closest known name)."""
    known = schema.names(table) + (extra or [])
    ok = True
    for col in raw.data.columns:
        if col not in known:
            close = _close(col, known)
            bad.add(raw.file, f"unknown column in the {what}", row=1, column=col,
                    expected="one of " + ", ".join(known),
                    hint=f"did you mean '{close}'?" if close else "remove or rename the column")
            ok = False
    for col in schema.required(table):
        if col not in raw.data.columns:
            bad.add(raw.file, f"missing column '{col}' in the {what}", row=1,
                    expected="columns " + ", ".join(schema.required(table)))
            ok = False
    if ok and raw.data.empty:
        bad.add(raw.file, f"the {what} has a header but no data rows", row=2,
                expected="at least one data row")
        ok = False
    return ok


def _close(word: str, known) -> str | None:
    import difflib

    m = difflib.get_close_matches(word.lower(), known, n=1, cutoff=0.6)
    return m[0] if m else None


def by_distinct(text: pd.Series, test) -> np.ndarray:
    """``test(values)`` (a vectorised check of a Series, e.g. ``lambda u: u.str.contains(...)``) for every cell of
    ``text``, run once per distinct value (a long-form file repeats its periods and labels over every row)."""
    codes, uniques = pd.factorize(text, use_na_sentinel=False)
    return np.asarray(test(pd.Series(uniques, dtype=text.dtype)), dtype=bool)[codes]


def numbers(raw: RawTable, col: str, bad: Collector, *, blank_ok: bool, low: float | None = 0.0,
            low_open: bool = False, high: float | None = None, expected: str = "a number",
            hint: str | None = None) -> pd.Series:
    """Parse a column of numbers; blanks become NaN (an error unless ``blank_ok``)."""
    if col not in raw.data.columns:
        return pd.Series(np.nan, index=raw.data.index, dtype=float)
    text = raw.data[col].astype(str)
    clean = text.str.replace(r"[\s\u00a0$]", "", regex=True)
    ambiguous = pd.Series(False, index=text.index)
    if raw.decimal_comma:
        # with commas as decimal marks, "1.234" is a thousands separator to some and 1.234 to others
        ambiguous = clean.str.fullmatch(r"-?\d{1,3}(\.\d{3})+")
        _report(bad, raw, ambiguous, col, "ambiguous number: '.' between groups of three digits in a file "
                "that writes decimals with ','", text, expected=expected,
                hint="write 1234 or 1,234 (decimal comma), not 1.234")
        clean = clean.str.replace(",", ".", regex=False)
    values = pd.to_numeric(clean, errors="coerce").astype(float).where(~ambiguous)
    blank = text.eq("")
    nonnum = ~blank & values.isna()
    thousands = nonnum & clean.str.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?")
    _report(bad, raw, thousands, col, "number with a thousands separator", text, expected=expected,
            hint="remove the thousands separators (write 1234.5, not 1,234.5)")
    _report(bad, raw, nonnum & ~thousands, col, "not a number", text, expected=expected, hint=hint)
    if not blank_ok:
        _report(bad, raw, blank, col, "blank cell", None, expected=expected, hint=hint)
    infinite = ~values.isna() & ~np.isfinite(values.fillna(0))
    _report(bad, raw, infinite, col, "not a finite number", text, expected=expected)
    finite = values.where(np.isfinite(values))
    if low is not None:
        below = (finite <= low) if low_open else (finite < low)
        word = ">" if low_open else ">="
        _report(bad, raw, below.fillna(False), col, f"value must be {word} {low:g}", text,
                expected=expected, hint=hint)
    if high is not None:
        _report(bad, raw, (finite > high).fillna(False), col, "absurdly large value", text,
                expected=f"{expected} no larger than {high:g}",
                hint="check the unit and for extra digits")
    return finite


def times(raw: RawTable, col: str, bad: Collector, blank_ok: bool = False) -> pd.Series:
    """Parse ISO 8601 timestamps; all with a UTC offset (converted to UTC) or all without (blank: NaT)."""
    if col not in raw.data.columns:
        return pd.Series(pd.NaT, index=raw.data.index, dtype="datetime64[ns]")
    text = raw.data[col].astype(str)
    blank = text.eq("")
    if not blank_ok:
        _report(bad, raw, blank, col, "blank date", None, expected="an ISO 8601 date such as 2027-01-04T00:00")
    has_tz = pd.Series(by_distinct(text, lambda u: u.str.contains(_TZ)), index=text.index) & ~blank
    if has_tz.any() and not has_tz[~blank].all():
        minority = has_tz if has_tz.sum() <= (~has_tz & ~blank).sum() else (~has_tz & ~blank)
        _report(bad, raw, minority, col, "dates mix time zones (some with a UTC offset, some without)",
                text, expected="every date with an offset, or none",
                hint="write all periods in UTC without an offset, e.g. 2027-01-04T00:00")
        return pd.Series(pd.NaT, index=raw.data.index, dtype="datetime64[ns]")
    parsed = pd.Series(pd.NaT, index=raw.data.index, dtype="datetime64[ns]")
    good = ~blank
    iso = pd.Series(by_distinct(text, lambda u: u.str.fullmatch(
        r"\d{4}-\d\d-\d\d([T ]\d\d(:\d\d(:\d\d(\.\d+)?)?)?)?\s*(Z|[+-]\d\d:?\d\d)?")), index=text.index)
    _report(bad, raw, good & ~iso, col, "not an ISO 8601 date", text,
            expected="a date such as 2027-01-04T00:00 (year-month-day)",
            hint="format the column as yyyy-mm-ddThh:mm")
    ok = good & iso
    if ok.any():
        conv = pd.to_datetime(text[ok], format="ISO8601", errors="coerce", utc=bool(has_tz.any()))
        if has_tz.any():
            conv = conv.dt.tz_convert("UTC").dt.tz_localize(None)
        invalid = conv.isna()
        far = ~invalid & ((conv < pd.Timestamp("1970-01-01")) | (conv > pd.Timestamp("2200-01-01")))
        keep = ~invalid & ~far  # checked before the nanosecond cast, which overflows past 2262
        parsed.loc[keep[keep].index] = conv[keep].astype("datetime64[ns]")
        _report(bad, raw, ok & invalid.reindex(raw.data.index, fill_value=False), col, "not a valid date", text,
                expected="a real calendar date and time")
        _report(bad, raw, far.reindex(raw.data.index, fill_value=False), col, "date out of range", text,
                expected="a date between 1970 and 2200")
    return parsed


# ---------------------------------------------------------------------------- prices

def normalise_option(text: pd.Series) -> pd.Series:
    """Price-sheet option names in one spelling: lower case, spaces and dashes as underscores."""
    return text.str.lower().str.strip().str.replace(r"[\s\-]+", "_", regex=True)


def validate_prices(raw: RawTable, bad: Collector, partial: bool = False,
                    start: pd.Timestamp | None = None) -> pd.DataFrame | None:
    """The price sheet as typed columns, or None after reporting every bad cell to ``bad``. ``partial``: a
    scenario's price file (it changes some prices of the sheet: no pool needs an on_demand row of its own).
    ``start``: the demand's first period, where purchases begin (None: not known, every row's window checked)."""
    what = "price sheet"
    if not check_columns(raw, schema.PRICES, bad, what):
        return None
    d = raw.data
    out = pd.DataFrame({"gpu_type": d["gpu_type"], "region": d["region"]})
    for col in ("gpu_type", "region"):
        _report(bad, raw, d[col].eq(""), col, "blank cell", None, expected="a name")
    option = normalise_option(d["option"])
    kinds = commitments.kind_of(option)
    known = kinds.notna()
    _report(bad, raw, ~known, "option", "unknown purchase option", d["option"],
            expected=commitments.option_names_expected())
    out["option"] = option
    def has(**behaviour) -> pd.Series:  # rows whose (known) kind does this, per the supply registry
        return kinds.isin(supply.names(**behaviour))

    is_res, is_spot, is_od = has(dated_by="term", unit="instance"), has(preemptible=True), \
        has(rented=True, preemptible=False)
    is_block = has(dated_by="window")
    is_spend = has(unit="usd_per_hour")
    has_term = is_res | is_spend  # a term from the name or term_months

    hourly = numbers(raw, "hourly_usd", bad, blank_ok=False, high=ABSURD_USD_PER_HOUR,
                     expected="a price in USD per GPU-hour >= 0")
    _report(bad, raw, (hourly > 0) & (hourly < MIN_PRICE), "hourly_usd", "price below what the solver can tell "
            "from zero", d["hourly_usd"], expected=f"USD per GPU-hour >= {MIN_PRICE:g} (0 only for reserved rows "
            "with an upfront)", hint="are the prices in thousands or millions of USD? write them in USD")
    _report(bad, raw, (hourly == 0) & (is_od | is_spot | is_block), "hourly_usd", "price of zero", d["hourly_usd"],
            expected="a price > 0 for on_demand, spot and capacity_block rows",
            hint="a free option would absorb all demand; delete the row if the option is not offered")
    upfront = numbers(raw, "upfront_usd", bad, blank_ok=True, high=ABSURD_USD_PER_HOUR * 8760 * 5,
                      expected="USD per GPU >= 0")
    _report(bad, raw, ~has_term & upfront.fillna(0).ne(0), "upfront_usd", "upfront payment on a non-reserved row",
            d.get("upfront_usd"), expected="blank or 0 for on_demand and spot")
    term = numbers(raw, "term_months", bad, blank_ok=True, low=0, low_open=True, high=120,
                   expected="a number of months > 0, e.g. 12 or 36",
                   hint="write the term as a number of months (12 for one year)")
    _report(bad, raw, (term > 0) & (term < 0.03), "term_months", "term shorter than a day", d.get("term_months"),
            expected="a number of months >= 0.03, e.g. 12 or 36")
    term = term.where(~((term > 0) & (term < 0.03)))
    from_name = option.str.extract(_TERM_FROM_NAME)
    name_months = pd.to_numeric(from_name[0], errors="coerce") * from_name[1].str.startswith("y").map(
        {True: 12.0, False: 1.0})
    term = term.where(term.notna(), name_months)
    absurd = has_term & known & term.notna() & ~term.between(1e-3, 120) & d.get(
        "term_months", pd.Series("", index=d.index)).eq("")
    _report(bad, raw, absurd, "option", "the term in the option's name is out of range", d["option"],
            expected="a term between one day and 120 months, e.g. reserved_1y or reserved_36m")
    term = term.where(~absurd)
    no_term = has_term & known & term.isna() & (d.get("term_months", pd.Series("", index=d.index)) == "")
    for name in pd.unique(d["option"][no_term]):  # one message per option name, naming it
        what = "savings plan" if supply.is_(normalise_option(pd.Series([name]))[0], unit="usd_per_hour") \
            else "reserved"
        _report(bad, raw, no_term & d["option"].eq(name), "term_months",
                f"{what} row without a term (option '{name}')", pd.Series("", index=d.index),
                expected="term_months, or an option name ending in _1y / _3y / _<n>m",
                hint=f"add term_months (e.g. 12) or rename the option to {name}_1y")
    _report(bad, raw, ~has_term & ~is_block & d.get("term_months", pd.Series("", index=d.index)).ne(""),
            "term_months", "term on a non-reserved row", d.get("term_months"),
            expected="blank for on_demand and spot")
    _report(bad, raw, is_block & d.get("term_months", pd.Series("", index=d.index)).ne(""),
            "term_months", "term on a capacity_block row", d.get("term_months"),
            expected="blank: a block lasts block_days")
    cap = numbers(raw, "max_gpus", bad, blank_ok=True, high=ABSURD_GPUS, expected="a number of GPUs >= 0 or blank")
    ip = numbers(raw, "interruptions_per_hour", bad, blank_ok=True, high=100,
                 expected="preemptions per instance-hour >= 0 (e.g. 0.02)")
    ip_text = d.get("interruptions_per_hour", pd.Series("", index=d.index))
    path_row = d.get("valid_from", pd.Series("", index=d.index)).astype(str).str.strip().ne("") \
        | d.get("scenario", pd.Series("", index=d.index)).astype(str).str.strip().ne("") \
        | pd.Series(partial, index=d.index)  # a dated or scenario price: the undated row's rate holds
    _report(bad, raw, is_spot & ip_text.eq("") & ~path_row, "interruptions_per_hour",
            "spot row without an interruption rate",
            None, expected="mean preemptions per instance-hour (e.g. 0.02; 0 if never preempted)",
            hint="take it from the provider's interruption-frequency advisor or your own history")
    _report(bad, raw, ~is_spot & ip_text.ne(""), "interruptions_per_hour",
            "interruption rate on a non-spot row", ip_text, expected="blank except on spot rows")
    m = numbers(raw, "gpus_per_instance", bad, blank_ok=True, low=0, low_open=True, high=1024,
                expected="GPUs per instance > 0 (e.g. 8; 0.125 for a GPU partition)")
    out["hourly_usd"] = hourly
    out["upfront_usd"] = upfront.where(has_term, 0.0).fillna(0.0)
    out["term_months"] = term.where(has_term)
    out["max_gpus"] = cap
    out["interruptions_per_hour"] = ip.where(is_spot)
    out["gpus_per_instance"] = m.fillna(1.0)
    # dated commitments: a price valid from a date, capacity usable some months after purchase, value left at the end
    valid_from = times(raw, "valid_from", bad, blank_ok=True)
    lead = numbers(raw, "lead_time_months", bad, blank_ok=True, high=120,
                   expected="months >= 0 between a purchase and its first usable hour")
    residual = numbers(raw, "residual_usd", bad, blank_ok=True, high=ABSURD_USD_PER_HOUR * 8760 * 10,
                       expected="USD per GPU >= 0 left at the end of the term")
    is_rented = has(rented=True)  # on-demand, spot, flex-start: a dated row is a later price (a forward curve)
    _report(bad, raw, ~is_res & ~is_rented & valid_from.notna(), "valid_from",
            "valid_from on a capacity_block or savings plan row", d.get("valid_from"),
            expected="blank on capacity_block and savings_plan rows (dated by block_start / one price)",
            hint="valid_from dates reserved, on_demand, spot and flex_start prices")
    for col, values in (("lead_time_months", lead.fillna(0).ne(0)), ("residual_usd", residual.fillna(0).ne(0))):
        _report(bad, raw, ~is_res & values, col, f"{col} on a non-reserved row", d.get(col),
                expected="blank except on reserved rows")
    out["valid_from"] = valid_from.where(is_res | is_rented)
    _scenario_column(raw, bad, out, is_res, is_rented)
    out["lead_time_months"] = lead.where(is_res).fillna(0.0)
    out["residual_usd"] = residual.where(is_res).fillna(0.0)
    liability = commitment_usd(out["hourly_usd"], out["upfront_usd"], out["term_months"])
    _report(bad, raw, is_res & (out["residual_usd"] > liability + 1e-9), "residual_usd",
            "residual value above what the commitment costs over its term", d.get("residual_usd"),
            expected="residual_usd <= upfront_usd + hourly_usd x term_months x 730")
    haircut = numbers(raw, "resale_haircut", bad, blank_ok=True, low=0, high=1,
                      expected="a share of the upfront lost when sold, 0 to 1 (e.g. 0.12: AWS's 12 % fee)")
    _report(bad, raw, ~is_res & haircut.notna(), "resale_haircut", "resale_haircut on a row that is not reserved",
            d.get("resale_haircut"), expected="blank except on reserved rows (term commitments that may be resold)")
    _report(bad, raw, is_res & haircut.notna() & out["residual_usd"].gt(0), "resale_haircut",
            "resale_haircut on a row with a residual value", d.get("resale_haircut"),
            expected="one exit per row: a resale (resale_haircut) or a residual value at the end, not both")
    out["resale_haircut"] = haircut.where(is_res)
    _resold_scenario_rows(raw, bad, out, resold_keys(out[out["scenario"].eq("")]))
    _scenario_terms(raw, bad, out, out[out["scenario"].eq("")], start)
    _site_columns(raw, bad, out, is_res)
    _queue_columns(raw, bad, out, has(useful_share="queued"))
    _capacity_blocks(raw, bad, out, is_block, hourly)
    _spend_rows(raw, bad, out, is_spend)
    text = d.get("guarantees_capacity", pd.Series("", index=d.index)).astype(str).str.strip().str.lower()
    truth = text.map({"": True, "true": True, "yes": True, "1": True, "1.0": True,
                      "false": False, "no": False, "0": False, "0.0": False})
    _report(bad, raw, truth.isna(), "guarantees_capacity", "not true or false", d.get("guarantees_capacity"),
            expected="true, false or blank (true)")
    _report(bad, raw, ~is_res & text.ne(""), "guarantees_capacity", "guarantees_capacity on a row that is not reserved",
            d.get("guarantees_capacity"), expected="blank except on reserved rows")
    out["guarantees_capacity"] = truth.fillna(True).astype(bool) | ~is_res
    out["row"] = raw.rows
    eff = effective_rate(out["hourly_usd"], out["upfront_usd"] - out["residual_usd"], out["term_months"])
    _report(bad, raw, is_res & eff.eq(0), "hourly_usd", "reserved row with a zero effective price",
            d["hourly_usd"], expected="hourly_usd or upfront_usd > 0")

    key = ["gpu_type", "region", "option", "valid_from", "block_start", "block_days", "scenario"]
    unread = out["valid_from"].isna() & d.get("valid_from", pd.Series("", index=d.index)).astype(str).str.strip().ne("")
    dup = out.duplicated(key, keep="first") & known & ~unread  # an unreadable date is reported already
    dated = "valid_from" in d.columns
    _report(bad, raw, dup & ~out["valid_from"].notna(), "option",
            "duplicate row for the same gpu_type, region and option", d["option"],
            hint="keep one price per pool and option" + (", or give each a different valid_from" if dated else ""))
    _report(bad, raw, dup & out["valid_from"].notna(), "valid_from",
            "valid_from overlaps: two prices of the same option start on the same date", d.get("valid_from"),
            expected="one price per gpu_type, region, option, valid_from date and scenario")
    if not partial:  # a scenario's file is checked against the sheet it changes (_with_scenario_sheets)
        _base_rows(raw, bad, out, known & ~dup, is_rented | is_res)
    by_pool = out[known & ~dup & ~is_spend].groupby(["gpu_type", "region"])  # a savings plan row has no instance
    # (a dated or scenario row of a pool agrees with its undated one on gpus_per_instance, as every row of it does)
    m_spread = by_pool["gpus_per_instance"].nunique()
    for (gt, rg) in m_spread[m_spread > 1].index:
        rows = out[(out.gpu_type == gt) & (out.region == rg)]
        bad.add(raw.file, f"rows of pool {gt}/{rg} disagree on gpus_per_instance",
                row=int(rows["row"].iloc[1]), column="gpus_per_instance",
                value=", ".join(f"{v:g}" for v in rows["gpus_per_instance"].unique()),
                expected="one instance size per gpu_type and region")
    has_od = by_pool["option"].apply(lambda s: bool(s.isin(supply.names(covered_by_spend=True)).any()))
    for (gt, rg) in ([] if partial else has_od[~has_od].index):
        rows = out[(out.gpu_type == gt) & (out.region == rg)]
        bad.add(raw.file, f"pool {gt}/{rg} has no on_demand row", row=int(rows["row"].iloc[0]),
                column="option", expected="an on_demand price for every gpu_type and region",
                hint="add its on-demand list price (it prices the all-on-demand baseline)")
    _spelling(bad, raw, out, "region")
    _spelling(bad, raw, out, "gpu_type")
    return out


def _scenario_column(raw: RawTable, bad: Collector, out: pd.DataFrame, is_res: pd.Series,
                     is_rented: pd.Series) -> None:
    """``scenario`` (optional): the row prices that scenario only (a price path); blank rows apply to every
    scenario. On reserved, on_demand, spot and flex_start rows; a scenario's name is checked against the model's
    scenarios in :func:`check_price_scenarios`. Adds ``scenario`` ("" = every scenario)."""
    d = raw.data
    scen = d.get("scenario", pd.Series("", index=d.index)).astype(str).str.strip()
    _report(bad, raw, scen.ne("") & ~is_res & ~is_rented, "scenario",
            "scenario on a capacity_block or savings plan row", scen,
            expected="blank on capacity_block and savings_plan rows: price paths date reserved_*, on_demand, spot "
                     "and flex_start prices")
    haircut = d.get("resale_haircut", pd.Series("", index=d.index)).astype(str).str.strip()
    _report(bad, raw, scen.ne("") & is_res & haircut.ne(""), "scenario", "scenario on a row with a resale_haircut",
            scen, expected="blank: the haircut is that of the price sheet's row in force at the purchase date (a "
                     "resale stops the fee its term pays in each scenario)",
            hint="give the scenario's reserved price on a row without resale_haircut")
    out["scenario"] = scen


def _base_rows(raw: RawTable, bad: Collector, out: pd.DataFrame, ok: pd.Series, pathed: pd.Series) -> None:
    """A dated rented row, or any scenario row, changes the price of an option the sheet already sells: its pool
    and option need a row of the sheet itself (no scenario; for rented options also no valid_from: the price
    until the first dated row)."""
    key = out["gpu_type"] + "\x1f" + out["region"] + "\x1f" + out["option"]
    rented = out["option"].isin(supply.RENTED)
    base = ok & out["scenario"].eq("") & (~rented | out["valid_from"].isna())
    have = set(key[base])
    need = ok & pathed & (out["scenario"].ne("") | (rented & out["valid_from"].notna()))
    missing = need & ~key.isin(have)
    _report(bad, raw, missing & rented, "option", "a dated or scenario price with no undated row of its pool and "
            "option", out["gpu_type"] + "/" + out["region"] + " " + out["option"],
            expected="a row of the same gpu_type, region and option with blank valid_from and scenario (its price "
                     "until the first dated row)", hint="add the option's price today as a row of its own")
    _same_settings(bad, raw, out, need & rented & ~missing, out[base])
    _report(bad, raw, missing & ~rented, "option", "a scenario price for an option the sheet does not sell",
            out["gpu_type"] + "/" + out["region"] + " " + out["option"],
            expected="a row of the same gpu_type, region and option with a blank scenario (the dates it is "
                     "offered are the sheet's)")


def resold_keys(prices: pd.DataFrame) -> set:
    """The (gpu_type, region, option) keys of ``prices``' rows with a ``resale_haircut``: terms that may be resold."""
    if "resale_haircut" not in prices or not len(prices):
        return set()
    rows = prices[prices["resale_haircut"].notna()]
    return set(zip(rows["gpu_type"], rows["region"], rows["option"]))


def _resold_scenario_rows(raw: RawTable, bad: Collector, out: pd.DataFrame, resold: set) -> None:
    """A scenario's row (a ``scenario`` cell, or a scenario's price file) of a term that may be resold (the sheet's
    row has a ``resale_haircut``) gives no residual value: a term sold gives up its residual, and a resale
    re-priced on the scenario's row would be credited the fees and upfront back while its term still counted
    the residual (a sale worth more than its term: exit 2)."""
    if not resold or "residual_usd" not in out:
        return
    key = pd.Series(list(zip(out["gpu_type"], out["region"], out["option"])), index=out.index)
    mask = out["scenario"].ne("") & out["residual_usd"].fillna(0).gt(0) & key.isin(resold)
    _report(bad, raw, mask, "residual_usd", "residual value on a scenario's row of a term that may be resold",
            out["residual_usd"], expected="blank or 0: the price sheet's row of this option has a resale_haircut "
                                          "(one exit per term: a resale or a residual value at the end)",
            hint="drop the resale_haircut, or the scenario's residual_usd")


def _scenario_terms(raw: RawTable, bad: Collector, out: pd.DataFrame, base: pd.DataFrame,
                    start: pd.Timestamp | None = None) -> None:
    """A scenario's row of a term commitment keeps the sheet's term: it re-prices the sheet's purchase rows (their
    term, lead time and activity are those of the sheet's row in force at the purchase date), so another
    ``term_months`` would be amortised over the sheet's term unseen (exit 2). A scenario's row prices the purchases
    from its ``valid_from`` (undated: from the start) to its scenario's next row of the option; every sheet row in
    force in that window must have its term. Purchases are dated from ``start`` (the demand's first period): a
    sheet row superseded before it prices none of them (None: every window from the start of time)."""
    if "term_months" not in out or not len(base):
        return
    key = ["gpu_type", "region", "option"]
    sheet = base[base["term_months"].notna()]
    if not len(sheet):
        return
    since = lambda f: pd.to_datetime(f["valid_from"]).fillna(pd.Timestamp.min)  # noqa: E731 (undated: always)
    ours = pd.to_numeric(out["term_months"], errors="coerce")
    mine = out["scenario"].ne("") & ours.notna()
    if not mine.any():
        return
    spans = sheet.assign(_from=since(sheet)).sort_values(key + ["_from"])
    spans["_to"] = spans.groupby(key)["_from"].shift(-1).fillna(pd.Timestamp.max)  # a sheet row until the next
    rows = out.assign(_at=np.arange(len(out)), _from=since(out), _term=ours)
    rows = rows.sort_values(key + ["scenario", "_from"])
    rows["_to"] = rows.groupby(key + ["scenario"])["_from"].shift(-1).fillna(pd.Timestamp.max)
    pairs = rows[mine.to_numpy()[rows["_at"].to_numpy()]].merge(spans[key + ["_from", "_to", "term_months"]],
                                                                 on=key, suffixes=("", "_sheet"))
    begin = pairs[["_from_sheet", "_from"]].max(axis=1)  # the window both rows price in, from ``start``
    if start is not None:
        begin = begin.clip(lower=pd.Timestamp(start))
    overlap = begin < pairs[["_to_sheet", "_to"]].min(axis=1)
    clash = pairs[overlap & ((pairs["_term"] - pairs["term_months_sheet"]).abs() > 1e-9)]
    if not len(clash):
        return
    mask = np.zeros(len(out), dtype=bool)
    mask[clash["_at"].to_numpy()] = True
    want = clash.groupby("_at")["term_months_sheet"].agg(lambda v: " or ".join(f"{x:g}" for x in sorted(set(v))))
    given = raw.data["term_months"].astype(str).str.strip() if "term_months" in raw.data else \
        pd.Series("", index=raw.data.index)
    shown = pd.Series([given.iat[i] if given.iat[i] else f"(blank: {ours.iat[i]:g} from the option's name)"
                       for i in range(len(out))], index=out.index)
    for at, terms in want.items():  # one report per row, naming the sheet's term in force where it prices
        one = np.zeros(len(out), dtype=bool)
        one[at] = True
        _report(bad, raw, pd.Series(one, index=out.index), "term_months",
                "term_months on a scenario's row differs from the price sheet's row of the option in force where "
                "it prices", shown,
                expected=f"the sheet's term_months there ({terms}): a scenario's row changes the price of the same "
                         "term")


def _with_scenario_sheets(prices: pd.DataFrame | None, raws: dict[str, RawTable],
                          bad: Collector, start: pd.Timestamp | None = None) -> pd.DataFrame | None:
    """The price sheet with each scenario's price file appended as that scenario's rows. A file's rows must price
    options the sheet sells (same gpu_type, region and option) and change their price only: instance size and
    kind as the sheet's; a ``scenario`` cell in it is blank or the scenario's own name."""
    if not raws:
        return prices
    parts = [] if prices is None else [prices]
    for name, raw in raws.items():
        own = validate_prices(raw, bad, partial=True)
        if own is None:
            continue
        other = own["scenario"].ne("") & own["scenario"].ne(name)
        _report(bad, raw, other, "scenario", f"a row of scenario {name}'s price file names another scenario",
                own["scenario"], expected=f"blank or {name}")
        if "resale_haircut" in own:  # the haircut is the sheet's (the scenario column refuses it alike)
            _report(bad, raw, own["resale_haircut"].notna(), "resale_haircut",
                    f"resale_haircut in scenario {name}'s price file", own["resale_haircut"],
                    expected="blank: a resale's haircut is the price sheet's row's (in force at the purchase date); "
                             "a scenario's file changes prices only")
        own = own.assign(scenario=name)
        if prices is not None:
            _resold_scenario_rows(raw, bad, own, resold_keys(prices[prices["scenario"].eq("")]))
            _scenario_terms(raw, bad, own, prices[prices["scenario"].eq("")], start)
            key = lambda t: t["gpu_type"] + "\x1f" + t["region"] + "\x1f" + t["option"]  # noqa: E731
            sold = set(key(prices[prices["scenario"].eq("")]))
            _report(bad, raw, ~key(own).isin(sold), "option", f"scenario {name} prices an option the price sheet "
                    "does not sell", own["gpu_type"] + "/" + own["region"] + " " + own["option"],
                    expected="a gpu_type, region and option of the price sheet (a scenario's file changes prices, "
                             "not what is sold)")
            m = prices[prices["scenario"].eq("")].drop_duplicates(["gpu_type", "region"]).set_index(
                ["gpu_type", "region"])["gpus_per_instance"]
            theirs = pd.Series([m.get((g, r), np.nan) for g, r in zip(own["gpu_type"], own["region"])],
                               index=own.index)
            _report(bad, raw, theirs.notna() & (theirs != own["gpus_per_instance"]), "gpus_per_instance",
                    "instance size differs from the price sheet's", own["gpus_per_instance"],
                    expected="the price sheet's gpus_per_instance for the pool")
            _same_settings(bad, raw, own, own["option"].isin(supply.RENTED).to_numpy(), prices[prices["scenario"].eq("")])
            key = ["gpu_type", "region", "option", "valid_from", "block_start", "block_days"]
            theirs_rows = prices[prices["scenario"].eq(name)]
            if len(theirs_rows):  # the sheet's own rows for this scenario, and its file: one price per date
                both = pd.MultiIndex.from_frame(theirs_rows[key].astype(str))
                clash = pd.MultiIndex.from_frame(own[key].astype(str)).isin(both)
                _report(bad, raw, pd.Series(clash, index=own.index), "option",
                        f"scenario {name} is priced twice: by this file and by the price sheet's scenario column",
                        own["gpu_type"] + "/" + own["region"] + " " + own["option"],
                        expected="one price per option, valid_from and scenario: in the sheet or in the file")
        parts.append(own)
    return pd.concat(parts, ignore_index=True) if parts else None


PATH_FIXED = ("max_gpus", "interruptions_per_hour", "gpus_per_instance", "queue_hours_p50", "queue_hours_p90",
              "max_run_hours")  # what a dated or scenario row of a rented option may not change (its price only)


def _same_settings(bad: Collector, raw: RawTable, rows: pd.DataFrame, mask, base: pd.DataFrame) -> None:
    """A dated or scenario row of a rented option changes its price only: each of :data:`PATH_FIXED` it fills
    must equal the option's undated row's (a cap or an interruption rate typed there would be ignored)."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return
    undated = base[base["option"].isin(supply.RENTED) & base["valid_from"].isna()].drop_duplicates(
        ["gpu_type", "region", "option"]).set_index(["gpu_type", "region", "option"])
    keys = pd.MultiIndex.from_frame(rows[["gpu_type", "region", "option"]])
    given = raw.data
    for col in PATH_FIXED:
        if col not in rows or col not in undated:
            continue
        theirs = undated[col].reindex(keys).to_numpy(float)
        ours = pd.to_numeric(rows[col], errors="coerce").to_numpy(float)
        typed = given[col].astype(str).str.strip().ne("").to_numpy() if col in given else np.zeros(len(rows), bool)
        differs = typed & mask & ~((ours == theirs) | (np.isnan(ours) & np.isnan(theirs)))
        _report(bad, raw, pd.Series(differs, index=rows.index), col,
                f"{col} on a dated or scenario price differs from the option's undated row", given.get(col),
                expected=f"blank or the undated row's {col}: a dated or scenario row changes the price only",
                hint="caps and rates over time belong in an availability file (per-period max_gpus)"
                if col == "max_gpus" else None)


def check_price_scenarios(config: ModelConfig, prices: pd.DataFrame, demand: pd.DataFrame | None, file: str,
                          bad: Collector) -> None:
    """Every ``scenario`` named in the price sheet is a scenario of the model (its ``[scenarios]`` or the demand's)."""
    if "scenario" not in prices:
        return
    known = list(config.scenarios) or ([] if demand is None else list(pd.unique(demand["scenario"])))
    known += [n for n in getattr(config, "price_scenarios", ()) if n not in known]  # evaluate: one history of them
    named = prices["scenario"].ne("")
    for i in np.flatnonzero(named & ~prices["scenario"].isin(known)):
        bad.add(file, "price row for a scenario the model does not have", row=int(prices["row"].iat[i]),
                column="scenario", value=prices["scenario"].iat[i],
                expected="one of " + (", ".join(known) if known else "the demand's scenarios (it has none named)"),
                hint="name the scenario in the model file's [scenarios], or leave the cell blank (every scenario)")


def _queue_columns(raw: RawTable, bad: Collector, out: pd.DataFrame, queued: pd.Series) -> None:
    """``queue_hours_p50`` / ``queue_hours_p90`` (required) and ``max_run_hours`` of queued capacity rows (flex_start),
    blank on every other row."""
    d = raw.data
    columns = (("queue_hours_p50", True, False), ("queue_hours_p90", True, False),  # (column, required, > 0)
               ("max_run_hours", False, True))
    if not queued.any() and not any(c in d for c, _, _ in columns):
        for col, _, _ in columns:  # no queued row, none of its columns: nothing to check, each row as the checks
            out[col] = np.nan  # below leave it
        return
    got = {}
    for col, need, low_open in columns:
        v = numbers(raw, col, bad, blank_ok=True, low=0, low_open=low_open, high=8760,
                    expected="hours >= 0" if not low_open else "hours > 0")
        text = d.get(col, pd.Series("", index=d.index))
        if need:
            _report(bad, raw, queued & text.eq(""), col, "flex_start row without its queue time", None,
                    expected="hours from a request to its GPUs (0 if granted at once)",
                    hint="take the 50th and 90th percentiles of your own waits, or the provider's obtainability data")
        _report(bad, raw, ~queued & text.ne(""), col, f"{col} on a row that is not queued capacity", text,
                expected="blank except on flex_start rows")
        got[col] = v.where(queued)
    _report(bad, raw, queued & (got["queue_hours_p90"] < got["queue_hours_p50"]), "queue_hours_p90",
            "90th percentile below the median", d.get("queue_hours_p90"), expected="queue_hours_p90 >= queue_hours_p50")
    _report(bad, raw, queued & got["queue_hours_p50"].eq(0) & got["queue_hours_p90"].gt(0), "queue_hours_p50",
            "median wait of 0 with a longer 90th percentile", d.get("queue_hours_p50"),
            expected="a median > 0 (the wait is lognormal through the two), or both 0 for GPUs granted at once",
            hint="if most requests are granted at once, give a small median such as 0.1")
    for col, v in got.items():
        out[col] = v


def _site_columns(raw: RawTable, bad: Collector, out: pd.DataFrame, is_res: pd.Series) -> None:
    """``site`` and ``kw_per_gpu``: the site an owned GPU draws power at, and how much (reserved rows only)."""
    d = raw.data
    site = d.get("site", pd.Series("", index=d.index)).astype(str).str.strip()
    kw = numbers(raw, "kw_per_gpu", bad, blank_ok=True, low=0, low_open=True, high=100,
                 expected="kW per GPU > 0 (e.g. 1.4 for an H100 with its share of the server)")
    _report(bad, raw, ~is_res & (site.ne("") | kw.notna()), "site", "site or kw_per_gpu on a row that is not "
            "reserved", d.get("site", d.get("kw_per_gpu")), expected="blank except on reserved rows (owned hardware)")
    _report(bad, raw, is_res & site.ne("") & kw.isna(), "kw_per_gpu", "reserved row with a site but no "
            "kw_per_gpu", d.get("kw_per_gpu"), expected="the power one GPU draws at the site, in kW (> 0)")
    out["site"] = site.where(is_res, "")
    out["kw_per_gpu"] = kw.where(is_res & site.ne("")).fillna(0.0)


# capacity blocks: what each provider sells (docs/commitments.md, "Capacity blocks")
BLOCK_PROVIDERS = ("aws", "gcp")
AWS_BLOCK_MAX_INSTANCES = 64  # instances in one AWS Capacity Block
AWS_BLOCK_START = (11, 30)  # AWS Capacity Blocks start and end at 11:30 UTC
GCP_BLOCK_MAX_DAYS = 90  # GCP DWS calendar mode
MAX_BLOCK_DAYS = 366  # no provider named: any whole number of days up to a year


def aws_block_days_ok(days: pd.Series) -> pd.Series:
    """AWS Capacity Blocks for ML: 1-14 days, or a multiple of 7 days up to 182."""
    return days.between(1, 14) | ((days % 7 == 0) & days.between(7, 182))


def _capacity_blocks(raw: RawTable, bad: Collector, out: pd.DataFrame, is_block: pd.Series,
                     hourly: pd.Series) -> None:
    """The columns of capacity_block rows (block_start, block_days, provider) and each provider's rules.

    Adds ``block_start``, ``block_days``, ``provider`` to ``out``. A block is stored as what it is, a
    prepaid commitment: ``term_months`` is its window (days x 24 / 730), ``upfront_usd`` its price x 24 x
    days per GPU and ``hourly_usd`` 0, so that the term arithmetic of every commitment (effective rate,
    liability, cash, the workbook's formulas) applies to it unchanged.
    """
    d = raw.data
    if not is_block.any() and not any(c in d for c in ("block_start", "block_days", "provider")):
        out["block_start"] = pd.Series(pd.NaT, index=out.index, dtype="datetime64[ns]")  # no block, none of its
        out["block_days"] = np.nan  # columns: nothing to check, each row as the checks below leave it
        out["provider"] = ""
        return
    start = times(raw, "block_start", bad, blank_ok=True)
    days = numbers(raw, "block_days", bad, blank_ok=True, low=1, high=MAX_BLOCK_DAYS,
                   expected=f"a whole number of days, 1 to {MAX_BLOCK_DAYS}")
    provider = d.get("provider", pd.Series("", index=d.index)).astype(str).str.strip().str.lower()
    blank = pd.Series("", index=d.index)
    _report(bad, raw, is_block & start.isna() & d.get("block_start", blank).eq(""), "block_start",
            "capacity_block row without block_start", None, expected="the window's first hour, e.g. 2027-02-01T11:30")
    _report(bad, raw, is_block & days.isna() & d.get("block_days", blank).eq(""), "block_days",
            "capacity_block row without block_days", None, expected="the window's length in whole days, e.g. 14")
    _report(bad, raw, is_block & days.notna() & (days != np.round(days)), "block_days",
            "block_days is not a whole number of days", d.get("block_days"), expected="e.g. 7 or 14")
    for col, present in (("block_start", start.notna()), ("block_days", days.notna()), ("provider", provider.ne(""))):
        _report(bad, raw, ~is_block & present, col, f"{col} on a row that is not a capacity_block", d.get(col),
                expected="blank except on capacity_block rows")
    _report(bad, raw, is_block & provider.ne("") & ~provider.isin(BLOCK_PROVIDERS), "provider", "unknown provider",
            d.get("provider"), expected=" or ".join(BLOCK_PROVIDERS) + " (or blank: no provider rules)")
    aws, gcp = is_block & provider.eq("aws"), is_block & provider.eq("gcp")
    _report(bad, raw, aws & days.notna() & ~aws_block_days_ok(days), "block_days",
            "AWS does not sell a Capacity Block of this length", d.get("block_days"),
            expected="1 to 14 days, or a multiple of 7 days up to 182")
    hm = start.dt.hour * 3600 + start.dt.minute * 60 + start.dt.second
    _report(bad, raw, aws & start.notna() & (hm != AWS_BLOCK_START[0] * 3600 + AWS_BLOCK_START[1] * 60), "block_start",
            "AWS Capacity Blocks start at 11:30 UTC", d.get("block_start"), expected="a start at T11:30 (UTC)")
    _report(bad, raw, gcp & days.notna() & (days > GCP_BLOCK_MAX_DAYS), "block_days",
            "GCP calendar-mode reservations last at most 90 days", d.get("block_days"), expected="1 to 90 days")
    m = out["gpus_per_instance"]
    over = aws & out["max_gpus"].notna() & (out["max_gpus"] / m > AWS_BLOCK_MAX_INSTANCES + 1e-9)
    _report(bad, raw, over, "max_gpus", f"over AWS's limit of {AWS_BLOCK_MAX_INSTANCES} instances in one Capacity "
            "Block", d.get("max_gpus"), expected=f"at most {AWS_BLOCK_MAX_INSTANCES} x gpus_per_instance GPUs")
    whole = out["max_gpus"] / m
    _report(bad, raw, is_block & out["max_gpus"].notna() & ((whole < 1 - 1e-9) | ((whole - np.round(whole)).abs() > 1e-9)),
            "max_gpus", "a capacity block's max_gpus is not a whole number of instances", d.get("max_gpus"),
            expected="the offer's instances x gpus_per_instance, e.g. 64 for 8 instances of 8 GPUs")
    out["max_gpus"] = out["max_gpus"].where(~aws | out["max_gpus"].notna(), AWS_BLOCK_MAX_INSTANCES * m)
    out["block_start"] = start.where(is_block)
    out["block_days"] = days.where(is_block)
    out["provider"] = provider.where(is_block, "")
    out["term_months"] = out["term_months"].where(~is_block, days * 24.0 / 730.0)
    # prepaid: the window's whole price is its upfront (per GPU), nothing by the hour; the effective rate,
    # upfront / (term x 730), is the price per GPU-hour the row was given
    out["upfront_usd"] = out["upfront_usd"].where(~is_block, hourly * 24.0 * days)
    out["hourly_usd"] = out["hourly_usd"].where(~is_block, 0.0)


def _spend_rows(raw: RawTable, bad: Collector, out: pd.DataFrame, is_spend: pd.Series) -> None:
    """Savings-plan rows (kind "spend"): one per eligible pool, ``hourly_usd`` its discounted rate per GPU-hour,
    ``upfront_usd`` per USD/h committed (at most the term's hours: all upfront), ``plan_family`` the commitment
    it belongs to (default: the option). Adds ``plan_family``; the rate must beat the pool's on-demand price,
    and the rows of one commitment must agree on its term and upfront."""
    d = raw.data
    family = d.get("plan_family", pd.Series("", index=d.index)).astype(str).str.strip()
    _report(bad, raw, ~is_spend & family.ne(""), "plan_family", "plan_family on a row that is not a savings plan",
            family, expected="blank except on savings_plan_* rows")
    _report(bad, raw, is_spend & out["max_gpus"].notna(), "max_gpus", "max_gpus on a savings plan row",
            d.get("max_gpus"), expected="blank: a savings plan is a dollar commitment, not capacity",
            hint="cap the pool's on_demand row instead")
    if not is_spend.any():  # no savings plan: every check below is of its rows
        out["plan_family"] = ""
        return
    hours = out["term_months"] * 730.0
    _report(bad, raw, is_spend & (out["upfront_usd"] > hours + 1e-9), "upfront_usd",
            "savings plan upfront above the whole term's commitment", d.get("upfront_usd"),
            expected="USD per USD/h committed, at most term_months x 730 (all upfront)")
    od = out[out["option"].isin(supply.names(covered_by_spend=True)) & out["valid_from"].isna()
             & out["scenario"].eq("")].drop_duplicates(["gpu_type", "region"]).set_index(["gpu_type", "region"])
    od_rate = pd.Series([od["hourly_usd"].get((g, r), np.nan) for g, r in zip(out["gpu_type"], out["region"])],
                        index=out.index)
    _report(bad, raw, is_spend & od_rate.isna(), "gpu_type", "savings plan row for a pool without an on_demand row",
            out["gpu_type"] + "/" + out["region"], expected="a gpu_type and region with an on_demand price (what the "
            "plan discounts)", hint="add the pool's on_demand row, or drop the savings plan row")
    _report(bad, raw, is_spend & od_rate.notna() & (out["hourly_usd"] >= od_rate), "hourly_usd",
            "savings plan rate not below the pool's on-demand price", d["hourly_usd"],
            expected="the discounted USD per GPU-hour under the plan, below on_demand's",
            hint="a rate at or above on-demand saves nothing: drop the row")
    _report(bad, raw, is_spend & out["hourly_usd"].eq(0), "hourly_usd", "savings plan rate of zero", d["hourly_usd"],
            expected="the discounted USD per GPU-hour under the plan, > 0")
    out["plan_family"] = family.where(is_spend & family.ne(""), out["option"]).where(is_spend, "")
    spend = out[is_spend]
    for col in ("term_months", "upfront_usd"):
        spread = spend.groupby(["option", "plan_family"])[col].nunique()
        for (opt, fam) in spread[spread > 1].index:
            rows = spend[(spend["option"] == opt) & (spend["plan_family"] == fam)]
            bad.add(raw.file, f"rows of savings plan {opt} (family {fam}) disagree on {col}",
                    row=int(raw.rows.loc[rows.index[1]]), column=col,
                    value=", ".join(f"{v:g}" for v in rows[col].unique()),
                    expected=f"one {col} per savings plan and family (one commitment)")


def _spelling(bad: Collector, raw: RawTable, df: pd.DataFrame, col: str) -> None:
    """Flag names that differ only in case, spaces, '-' or '_' (a region spelled two ways)."""
    names = df[col][df[col].ne("")].unique()
    folded = {}
    for n in names:
        folded.setdefault(re.sub(r"[\s_\-]", "", n.casefold()), []).append(n)
    for variants in folded.values():
        if len(variants) > 1:
            second = df.index[df[col] == variants[1]][0]
            bad.add(raw.file, f"{col} spelled two ways: " + " and ".join(f"'{v}'" for v in variants),
                    row=int(raw.rows.iloc[second]), column=col, value=variants[1],
                    expected=f"one spelling, e.g. '{variants[0]}'")


# ---------------------------------------------------------------------------- demand

def validate_demand(raw: RawTable, config: ModelConfig, bad: Collector) -> pd.DataFrame | None:
    """The demand as a long table (scenario, period, hours, class, gpus), or None after reporting."""
    what = "demand file"
    d = raw.data
    quantiles = [c for c in d.columns if QUANTILE.fullmatch(c)]
    if "workload_class" in d.columns or "gpus" in d.columns:
        if quantiles and "gpus" not in d.columns and "scenario" not in d.columns:
            # quantile forecast: p10, p50, p90 ... columns instead of gpus, one scenario per column
            d = d.assign(gpus="0")
        elif quantiles:
            bad.add(raw.file, "quantile columns beside a 'gpus' or 'scenario' column", row=1,
                    column=quantiles[0], expected="either gpus (with an optional scenario) or quantile columns "
                    "such as p10, p50, p90")
            return None
        if not check_columns(RawTable(raw.file, d, raw.rows, raw.decimal_comma), schema.DEMAND, bad, what,
                             extra=quantiles):
            return None
        hours = _hours_column(raw, d, bad)
        period = times(raw, "period", bad)
        parts = []
        for col in quantiles or ["gpus"]:
            gpus = numbers(raw, col, bad, blank_ok=False, high=ABSURD_GPUS, expected="average concurrent GPUs >= 0")
            part = pd.DataFrame({"workload_class": d["workload_class"], "row": raw.rows, "gpus_col": col,
                                 "gpus": gpus.values, "period": period.values})
            if quantiles:
                part["scenario_text"] = col
            elif "scenario" in d.columns:
                part["scenario_text"] = d["scenario"]
            if hours is not None:
                part["hours"] = hours.values
            parts.append(part)
        long = pd.concat(parts, ignore_index=True)
        _report(bad, raw, d["workload_class"].eq(""), "workload_class", "blank class name", None,
                expected="a class defined in the model file")
        unknown = ~d["workload_class"].isin(list(config.classes)) & d["workload_class"].ne("")
        first_unknown = unknown & ~d["workload_class"].duplicated()
        for i in np.flatnonzero(first_unknown.to_numpy())[:MAX_ROWS_PER_CHECK]:
            name = d["workload_class"].iat[i]
            close = _close(name, list(config.classes))
            bad.add(raw.file, "class not defined in the model file", row=int(raw.rows.iat[i]),
                    column="workload_class", value=name, expected="one of " + ", ".join(config.classes),
                    hint=f"did you mean '{close}'?" if close else
                    "add a [classes.<name>] table to the model file or fix the name")
    else:
        if "period" not in d.columns:
            bad.add(raw.file, "missing column 'period' in the demand file", row=1,
                    expected="long form (period, workload_class, gpus) or wide form (period, <class>...)")
            return None
        class_cols = [c for c in d.columns if c not in ("period", "hours", "scenario")]
        for c in class_cols:
            if c not in config.classes:
                close = _close(c, list(config.classes))
                bad.add(raw.file, "column is not a class defined in the model file", row=1, column=c,
                        expected="period, hours, scenario or a class name: " + ", ".join(config.classes),
                        hint=f"did you mean '{close}'?" if close else "add the class to the model file")
        if not class_cols:
            bad.add(raw.file, "wide-form demand file without class columns", row=1,
                    expected="one column per workload class")
            return None
        if d.empty:
            bad.add(raw.file, "the demand file has a header but no data rows", row=2)
            return None
        period = times(raw, "period", bad)
        hours = _hours_column(raw, d, bad)
        parts = []
        for c in class_cols:
            g = numbers(raw, c, bad, blank_ok=False, high=ABSURD_GPUS,
                        expected="average concurrent GPUs >= 0")
            part = pd.DataFrame({"period": period.values, "workload_class": c, "gpus": g.values,
                                 "row": raw.rows.values, "gpus_col": c})
            if hours is not None:
                part["hours"] = hours.values
            if "scenario" in d.columns:
                part["scenario_text"] = d["scenario"].values
            parts.append(part)
        long = pd.concat(parts, ignore_index=True)
    if bad:
        return None

    long["scenario"] = long["scenario_text"] if "scenario_text" in long else DEFAULT_SCENARIO
    if "scenario_text" not in long and config.scenarios:
        # one demand for every scenario of the model file: its scenarios differ in their prices only
        long = pd.concat([long.assign(scenario=name) for name in config.scenarios], ignore_index=True)
    if "scenario_text" in long:
        blank = long["scenario"].eq("")
        if blank.any():
            r = long[blank]
            bad.add(raw.file, "blank scenario name", row=int(r["row"].iloc[0]), column="scenario",
                    expected="a scenario name on every row (or no scenario column)")
            return None
    return _check_demand_grid(raw, long, config, bad)


def _check_demand_grid(raw: RawTable, long: pd.DataFrame, config: ModelConfig,
                       bad: Collector) -> pd.DataFrame | None:
    key = ["scenario", "period", "workload_class"]
    dup = long.duplicated(key, keep=False)
    if dup.any():
        first = long[dup].groupby(key, sort=False)["row"].apply(list)
        for (sc, per, cls), rows in list(first.items())[:MAX_ROWS_PER_CHECK]:
            bad.add(raw.file, f"duplicate rows for class '{cls}' in period {per:%Y-%m-%dT%H:%M}"
                    + (f" (scenario '{sc}')" if sc != DEFAULT_SCENARIO else ""),
                    row=int(rows[1]), column="period", value=f"rows {', '.join(map(str, rows))}",
                    expected="one row per period and class", hint="sum or delete the duplicates")
        return None

    scen_names = list(pd.unique(long["scenario"]))  # in order of first appearance
    if config.scenarios:
        missing = [s for s in config.scenarios if s not in scen_names]
        extra = [s for s in scen_names if s not in config.scenarios]
        for s in extra:
            r = long[long.scenario == s]
            bad.add(raw.file, "scenario not listed in the model file's [scenarios]",
                    row=int(r["row"].iloc[0]), column="scenario", value=s,
                    expected="one of " + ", ".join(config.scenarios))
        for s in missing:
            bad.add(raw.file, f"scenario '{s}' of the model file has no rows in the demand file",
                    column="scenario", expected="rows for every scenario in [scenarios]")
    periods = np.sort(long["period"].unique())
    for cls in config.classes:
        if not (long["workload_class"] == cls).any():
            bad.add(raw.file, f"class '{cls}' of the model file has no demand rows",
                    column="workload_class", expected="rows for every class in the model file",
                    hint="add its demand (0 if none) or remove the class from the model file")
    # every (scenario, class) covers every period
    counts = long.groupby(["scenario", "workload_class"]).size()
    for (sc, cls), n in counts[counts < len(periods)].items():
        have = long.loc[(long.scenario == sc) & (long.workload_class == cls), "period"]
        miss = pd.DatetimeIndex(periods).difference(pd.DatetimeIndex(have))
        shown = ", ".join(f"{p:%Y-%m-%dT%H:%M}" for p in miss[:3]) + (" ..." if len(miss) > 3 else "")
        bad.add(raw.file, f"class '{cls}' has no demand for {len(miss)} of the {len(periods)} periods"
                + (f" in scenario '{sc}'" if sc != DEFAULT_SCENARIO else ""),
                column="period", value=shown, expected="a row for every period and class",
                hint="add the missing periods (gpus = 0 where there is no demand)")
    if bad:
        return None

    hours = _period_hours(raw, long, periods, bad)
    if hours is None:
        return None
    long["hours"] = long["period"].map(hours)
    out = long[["scenario", "period", "workload_class", "gpus", "hours", "row"]]
    return out.sort_values(["scenario", "period", "workload_class"], kind="stable").reset_index(drop=True)


def _hours_column(raw: RawTable, d: pd.DataFrame, bad: Collector) -> pd.Series | None:
    """The optional ``hours`` column: > 0, at least a minute, at most a leap year."""
    if "hours" not in d.columns:
        return None
    hours = numbers(raw, "hours", bad, blank_ok=False, low=0, low_open=True, high=8784,
                    expected="the period's length in hours > 0")
    short = (hours > 0) & (hours < 1 / 60)
    _report(bad, raw, short, "hours", "period shorter than a minute", d["hours"],
            expected="the period's length in hours, at least 1/60")
    return hours.where(~short)


def _period_hours(raw: RawTable, long: pd.DataFrame, periods: np.ndarray,
                  bad: Collector) -> pd.Series | None:
    if "hours" in long.columns:
        spread = long.groupby("period")["hours"].agg(["min", "max"])
        clash = spread[spread["min"] != spread["max"]]
        for per in clash.index[:MAX_ROWS_PER_CHECK]:
            r = long[(long.period == per)]
            bad.add(raw.file, f"period {per:%Y-%m-%dT%H:%M} has different hours on different rows",
                    row=int(r["row"].iloc[-1]), column="hours", value=", ".join(map(str, r["hours"].unique())),
                    expected="one length per period")
        if len(clash):
            return None
        hours = spread["min"]
        ends = pd.DatetimeIndex(hours.index) + pd.to_timedelta(hours.values, unit="h")
        overlap = np.flatnonzero(ends[:-1] > pd.DatetimeIndex(hours.index)[1:])
        for i in overlap[:MAX_ROWS_PER_CHECK]:
            per = hours.index[i]
            r = long[long.period == per]
            bad.add(raw.file, f"period {per:%Y-%m-%dT%H:%M} lasts {hours.iloc[i]:g} h and overlaps the next one",
                    row=int(r["row"].iloc[0]), column="hours", value=hours.iloc[i],
                    expected="periods that do not overlap")
        return None if len(overlap) else hours
    if len(periods) < 2:
        r = long["row"].iloc[0]
        bad.add(raw.file, "a single period and no 'hours' column: the period length is unknown",
                row=int(r), column="hours", expected="an 'hours' column giving the period's length")
        return None
    step = np.diff(periods).astype("timedelta64[ns]").astype(float) / 3.6e12
    if not 1 / 60 <= step[0] <= 8784:
        r = long[long.period == pd.Timestamp(periods[1])]
        bad.add(raw.file, f"periods are {step[0]:.3g} h apart", row=int(r["row"].iloc[0]), column="period",
                value=f"{pd.Timestamp(periods[1])}", expected="periods between one minute and a year apart",
                hint="check the dates, or give an 'hours' column")
        return None
    uneven = np.flatnonzero(~np.isclose(step, step[0]))
    if len(uneven):
        i = uneven[0] + 1
        per = pd.Timestamp(periods[i])
        r = long[long.period == per]
        bad.add(raw.file, f"periods are unevenly spaced: {step[0]:g} h apart until "
                f"{pd.Timestamp(periods[i - 1]):%Y-%m-%dT%H:%M}, then {step[i - 1]:g} h",
                row=int(r["row"].iloc[0]), column="period", value=f"{per:%Y-%m-%dT%H:%M}",
                expected="equally spaced periods, or an 'hours' column",
                hint="add an 'hours' column with each period's length, or fill the gap")
        return None
    return pd.Series(step[0], index=pd.DatetimeIndex(periods))


# ---------------------------------------------------------------------------- inventory

def validate_inventory(raw: RawTable, prices: pd.DataFrame, bad: Collector) -> pd.DataFrame | None:
    """Owned commitments with start and end, or None after reporting every bad cell."""
    what = "inventory file"
    if not check_columns(raw, schema.INVENTORY, bad, what):
        return None
    d = raw.data
    gpus = numbers(raw, "gpus", bad, blank_ok=False, low=0, low_open=True, high=ABSURD_GPUS,
                   expected="GPUs owned > 0")
    start, end = times(raw, "start", bad), times(raw, "end", bad)
    _report(bad, raw, (end <= start).fillna(False), "end", "commitment ends before it starts", d["end"],
            expected="end after start")
    option = normalise_option(d["option"])
    _report(bad, raw, ~commitments.is_term(option), "option", "inventory row is not a reserved option",
            d["option"], expected="a reserved option such as reserved_1y")
    pools = set(zip(prices["gpu_type"], prices["region"]))
    unknown = pd.Series([(g, r) not in pools for g, r in zip(d["gpu_type"], d["region"])], index=d.index)
    _report(bad, raw, unknown, "gpu_type", "pool (gpu_type, region) not in the price sheet",
            d["gpu_type"] + "/" + d["region"], expected="a gpu_type and region priced in the price sheet")
    return pd.DataFrame({"gpu_type": d["gpu_type"], "region": d["region"], "option": option,
                         "gpus": gpus, "start": start, "end": end, "row": raw.rows})


# ---------------------------------------------------------------------------- availability

AVAILABILITY_OPTIONS = supply.names(cap_source="sheet+availability")


def validate_availability(raw: RawTable, prices: pd.DataFrame, bad: Collector) -> pd.DataFrame | None:
    """Per-period caps on on-demand and spot GPUs (spot availability traces, on-demand stock-outs)."""
    what = "availability file"
    if not check_columns(raw, schema.AVAILABILITY, bad, what):
        return None
    d = raw.data
    cap = numbers(raw, "max_gpus", bad, blank_ok=False, low=0, high=ABSURD_GPUS,
                  expected="GPUs obtainable at once (>= 0)")
    period = times(raw, "period", bad)
    option = normalise_option(d["option"])
    _report(bad, raw, ~option.isin(AVAILABILITY_OPTIONS), "option", "availability row is not on_demand or spot",
            d["option"], expected="on_demand or spot (reserved capacity is capped by the price sheet's max_gpus)")
    priced = set(zip(prices["gpu_type"], prices["region"], prices["option"]))
    pools = set(zip(prices["gpu_type"], prices["region"]))
    unknown = pd.Series([(g, r) not in pools for g, r in zip(d["gpu_type"], d["region"])], index=d.index)
    _report(bad, raw, unknown, "gpu_type", "pool (gpu_type, region) not in the price sheet",
            d["gpu_type"] + "/" + d["region"], expected="a gpu_type and region priced in the price sheet")
    unpriced = pd.Series([(g, r) in pools and o in AVAILABILITY_OPTIONS and (g, r, o) not in priced
                          for g, r, o in zip(d["gpu_type"], d["region"], option)], index=d.index)
    _report(bad, raw, unpriced, "option", "the price sheet has no such option in this pool",
            d["gpu_type"] + "/" + d["region"] + "/" + option,
            expected="an option the price sheet prices in the pool (a cap on an option never bought caps nothing)")
    return pd.DataFrame({"period": period, "gpu_type": d["gpu_type"], "region": d["region"], "option": option,
                         "max_gpus": cap, "row": raw.rows})


def availability_caps(availability: pd.DataFrame | None, pools: list[tuple[str, str]],
                      periods: pd.DatetimeIndex, hours: np.ndarray) -> np.ndarray | None:
    """(2, P, T) GPUs obtainable per period (0 on_demand, 1 spot; NaN: no row), the lowest of the rows in a
    period; rows outside the horizon are not used. None without an availability file."""
    if availability is None:
        return None
    P, T = len(pools), len(periods)
    out = np.full((2, P, T), np.nan)
    if not len(availability) or not T:
        return out
    start = periods.asi8
    end = start + (np.asarray(hours, float) * 3600e9).astype(np.int64)
    when = pd.DatetimeIndex(availability["period"]).as_unit("ns").asi8
    t = np.searchsorted(start, when, side="right") - 1
    inside = (t >= 0) & (when < end[np.clip(t, 0, None)])
    pool_of = {k: i for i, k in enumerate(pools)}
    p = np.array([pool_of.get(k, -1) for k in zip(availability["gpu_type"], availability["region"])], dtype=int)
    o = availability["option"].map(
        lambda k: supply.get(k).availability_index if k in AVAILABILITY_OPTIONS else 0).to_numpy(int)
    keep = inside & (p >= 0)
    np.fmin.at(out, (o[keep], p[keep], t[keep]), availability["max_gpus"].to_numpy(float)[keep])
    return out


# ---------------------------------------------------------------------------- model vs prices

def check_sites(config: ModelConfig, prices: pd.DataFrame, prices_file: str, bad: Collector) -> None:
    """With ``[sites]`` in the model file, every site a price row names is one of them (a misspelt site would
    silently lift its cap), and every ``[sites.<name>]`` caps some row (a cap on nothing is a mistake too)."""
    if not config.sites or "site" not in prices:
        return
    file = str(config.path) if config.path else "<model>"
    site = prices["site"].fillna("").astype(str)
    rows = prices["row"] if "row" in prices else pd.Series(range(2, len(prices) + 2), index=prices.index)
    known = ", ".join(sorted(config.sites))
    for i in np.flatnonzero((site.ne("") & ~site.isin(list(config.sites))).to_numpy())[:MAX_ROWS_PER_CHECK]:
        bad.add(prices_file, "site is not one of the model file's [sites]", row=int(rows.iloc[i]), column="site",
                value=site.iloc[i], expected=f"one of {known} (names match exactly: case and spaces count), "
                "or add [sites.<name>] with its max_mw")
    for name in sorted(set(config.sites) - set(site)):
        bad.add(file, f"[sites.{name}] caps no row of the price sheet", value=name,
                expected=f"a site named in the site column of {prices_file}: "
                         + (", ".join(sorted(set(site) - {""})) or "none is named"))


def check_classes(config: ModelConfig, prices: pd.DataFrame, bad: Collector) -> None:
    """Every class may use some priced pool, and names only GPU types and regions the sheet has."""
    file = str(config.path) if config.path else "<model>"
    types, regions = set(prices["gpu_type"]), set(prices["region"])
    pools = set(zip(prices["gpu_type"], prices["region"]))
    for name, c in config.classes.items():
        for t in (c.gpu_types or {}):
            if t not in types:
                close = _close(t, sorted(types))
                key = f"replicas.{t}" if c.slo is not None else "gpu_types"
                bad.add(file, f"'classes.{name}.{key}' names a GPU type not in the price sheet",
                        value=t, expected="one of " + ", ".join(sorted(types)),
                        hint=f"did you mean '{close}'?" if close else None)
        for r in (c.regions or ()):
            if r not in regions:
                close = _close(r, sorted(regions))
                bad.add(file, f"'classes.{name}.regions' names a region not in the price sheet",
                        value=r, expected="one of " + ", ".join(sorted(regions)),
                        hint=f"did you mean '{close}'?" if close else None)
        allowed = [(t, r) for (t, r) in pools
                   if (c.gpu_types is None or c.gpu_types.get(t, 0) > 0)
                   and (c.regions is None or r in c.regions)]
        if not allowed:
            bad.add(file, f"class '{name}' has no allowed pool: no priced (gpu_type, region) "
                    "matches its gpu_types (speed > 0) and regions",
                    expected="at least one GPU type and region in the price sheet",
                    hint="widen gpu_types or regions")


def owned_gpus(inventory: pd.DataFrame, pools: list[tuple[str, str]], periods: pd.DatetimeIndex,
               hours: np.ndarray) -> np.ndarray:
    """E[p, t]: reserved GPUs owned in each pool and period, weighted by the share of the period covered."""
    E = np.zeros((len(pools), len(periods)))
    if inventory.empty:
        return E
    from planner.inputs.ladder import overlap_hours

    pool_of = {pool: i for i, pool in enumerate(pools)}
    share = overlap_hours(inventory["start"], inventory["end"], periods, hours) / np.asarray(hours, float)[None, :]
    rows = [pool_of[(g, r)] for g, r in zip(inventory["gpu_type"], inventory["region"])]
    np.add.at(E, rows, inventory["gpus"].to_numpy(float)[:, None] * share)
    return E


def check_caps(prices: pd.DataFrame, inventory: pd.DataFrame, demand: pd.DataFrame, file: str,
               bad: Collector) -> None:
    """A reserved cap below the most GPUs owned at once in the horizon (max_t E[p,t]) can never be met."""
    if inventory.empty or demand is None:
        return
    res = prices[commitments.is_term(prices["option"]) & prices["max_gpus"].notna()]
    caps = res.groupby(["gpu_type", "region"])["max_gpus"].min()
    if caps.empty:
        return
    periods = demand.drop_duplicates("period").sort_values("period")
    pools = list(caps.index)
    peak = owned_gpus(inventory[[(g, r) in set(pools) for g, r in zip(inventory.gpu_type, inventory.region)]],
                      pools, pd.DatetimeIndex(periods["period"]), periods["hours"].to_numpy(float)).max(axis=1)
    for (pool, cap), owned in zip(caps.items(), peak):
        if owned > cap + 1e-9:
            row = res[(res.gpu_type == pool[0]) & (res.region == pool[1])]
            bad.add(file, f"reserved cap of pool {pool[0]}/{pool[1]} is below the GPUs already owned",
                    row=int(row["row"].iloc[0]), column="max_gpus", value=cap,
                    expected=f"at least {owned:g} (the most GPUs the inventory holds at once in the horizon)",
                    hint="raise max_gpus or correct the inventory")


_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"


def check_control_characters(raw: RawTable, bad: Collector) -> None:
    """Control characters in any cell or header (they break workbooks and scripts): one problem each, at
    most 20 per file, naming row, column and the character."""
    found = 0
    for col in raw.data.columns:
        if pd.Series([col]).str.contains(_CONTROL, regex=True).iat[0]:
            bad.add(raw.file, "a column name has a control character", row=1, value=repr(col),
                    expected="printable text")
            found += 1
        hits = by_distinct(raw.data[col].astype(str), lambda u: u.str.contains(_CONTROL, regex=True))
        for i in np.flatnonzero(hits)[: max(0, 20 - found)]:
            text = raw.data[col].iat[i]
            ch = next(c for c in text if re.fullmatch(_CONTROL, c))
            bad.add(raw.file, f"control character U+{ord(ch):04X} in the text", row=int(raw.rows.iat[i]),
                    column=str(col), value=repr(text), expected="printable text")
            found += 1
        if found >= 20:
            return


def validate(config: ModelConfig, demand_raw: RawTable, prices_raw: RawTable,
             inventory_raw: RawTable | None, availability_raw: RawTable | None = None,
             scenario_prices_raw: dict[str, RawTable] | None = None) -> Tables:
    """Run every check; raise one InputError with all problems found. ``scenario_prices_raw``: each
    ``[scenarios.<name>] prices`` file, its rows that scenario's (a price path)."""
    bad = Collector()
    scenario_prices_raw = scenario_prices_raw or {}
    for raw in (prices_raw, demand_raw, inventory_raw, availability_raw, *scenario_prices_raw.values()):
        if raw is not None:
            check_control_characters(raw, bad)
    demand = validate_demand(demand_raw, config, bad)
    start = None if demand is None or not len(demand) else pd.Timestamp(demand["period"].min())  # purchases' first date
    prices = validate_prices(prices_raw, bad, start=start)
    prices = _with_scenario_sheets(prices, scenario_prices_raw, bad, start)
    inventory = None
    if inventory_raw is not None and prices is not None:
        inventory = validate_inventory(inventory_raw, prices, bad)
    availability = None
    if availability_raw is not None and prices is not None:
        availability = validate_availability(availability_raw, prices, bad)
    if prices is not None and not bad:
        check_classes(config, prices, bad)
        check_price_scenarios(config, prices, demand, prices_raw.file, bad)
        check_sites(config, prices, prices_raw.file, bad)
        if inventory is not None:
            check_caps(prices, inventory, demand, prices_raw.file, bad)
    bad.raise_if_any(InputError)
    if inventory is None:
        inventory = pd.DataFrame({c: pd.Series(dtype=t) for c, t in (
            ("gpu_type", str), ("region", str), ("option", str), ("gpus", float),
            ("start", "datetime64[ns]"), ("end", "datetime64[ns]"), ("row", int))})
    sources = {"demand": {"path": demand_raw.file, "sha256": demand_raw.sha256},
               "prices": {"path": prices_raw.file, "sha256": prices_raw.sha256}}
    if inventory_raw is not None:
        sources["inventory"] = {"path": inventory_raw.file, "sha256": inventory_raw.sha256}
    if availability_raw is not None:
        sources["availability"] = {"path": availability_raw.file, "sha256": availability_raw.sha256}
    for name, raw in scenario_prices_raw.items():
        sources[f"prices:{name}"] = {"path": raw.file, "sha256": raw.sha256}
    return Tables(demand=demand, prices=prices, inventory=inventory, sources=sources, availability=availability)


