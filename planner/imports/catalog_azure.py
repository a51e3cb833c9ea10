"""``--from azure-retail``: Azure Retail Prices API JSON pages (``{"Items": [...], "NextPageLink": ...}``) -> offer
rows. Each FILE is one page as saved; ``NextPageLink`` is not followed (save every page and pass them all).

Rules: Virtual Machines items priced per ``1 Hour``, not Windows (``productName``), in the items' currency (USD
expected); ``type = Consumption``: the plain meter is ``on_demand``, a ``skuName`` with ``Spot`` is ``spot``
(``Low Priority``, Spot's retired predecessor, is left out); ``DevTestConsumption`` is left out; ``type =
Reservation``: the price is the **total for the term** (``reservationTerm`` "1 Year" / "3 Years"), written as two
payment options of one price: ``reserved_<n>y_all_upfront`` (upfront = the total) and ``reserved_<n>y_no_upfront``
(monthly, hourly = total / (n x 8,760 h)), as Azure charges either at no extra cost; a Consumption item's
``savingsPlan`` entries are ``savings_plan_<n>y`` rows at their ``retailPrice`` (else ``unitPrice``). The API has
no GPU count: it comes from the built-in table (``catalog_gpus.AZURE_SKUS``) or ``--catalog`` (a SkyPilot file).
An item in another currency than USD (``currencyCode``) is converted at ``--fx CUR=RATE``, else exits 2 naming it;
a kept item priced 0, or a ``savingsPlan`` entry whose price or term is bad, exits 2 naming the page and item.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from planner.core.errors import Collector, InputError, Problem
from planner.imports.catalog import ImportOptions, Notes, offers, unknown_interruptions
from planner.imports.catalog_gpus import azure_sku_table
from planner.imports.catalog_read import load_json, numbers
from planner.imports.guards import usd_rates

ITEM_FIELDS = ["armSkuName", "armRegionName", "retailPrice", "unitPrice", "unitOfMeasure", "type", "skuName",
               "productName", "reservationTerm", "currencyCode", "serviceName", "savingsPlan"]
TERMS = {"1 Year": 1, "3 Years": 3}


def read(paths: list[Path], opts: ImportOptions, notes: Notes) -> pd.DataFrame:
    """Every page's GPU VM items as offer rows; exit 2 on a page without ``Items`` or an item without a price."""
    bad = Collector()
    pages = [_page(p, bad) for p in paths]
    bad.raise_if_any()
    items = pd.concat(pages, ignore_index=True)
    if opts.catalog is not None:
        from planner.imports.catalog_skypilot import gpu_table
        sizes = gpu_table(Path(opts.catalog))
        notes.add(f"GPUs per VM size from --catalog {opts.catalog} (sizes of the built-in table keep its values).")
    else:
        sizes = azure_sku_table()
        notes.add("The Retail Prices API gives no GPU count: GPUs per VM size come from the built-in table of Azure "
                  "NC/ND/NV sizes (planner/imports/catalog_gpus.py); sizes not in it are left out (--catalog adds a "
                  "SkyPilot Azure catalog's sizes).")
    vm = items["unitOfMeasure"].eq("1 Hour") & ~items["productName"].str.contains("Windows", regex=False)
    vm &= items["serviceName"].isin(["Virtual Machines", ""])
    low = items["skuName"].str.contains("Low Priority", regex=False)
    if "tierMinimumUnits" in items:  # a meter's higher usage tiers: the base tier (from 0 units) is the hourly price
        tier = pd.to_numeric(items["tierMinimumUnits"], errors="coerce").fillna(0.0)
        upper = vm & (tier > 0)
        if upper.any():
            notes.add(f"{int(upper.sum())} items of a meter's higher usage tiers (tierMinimumUnits > 0) were left out: "
                      "the base tier is the price per hour.")
            vm &= ~upper
    key = ["armSkuName", "armRegionName", "type", "skuName", "productName", "reservationTerm"]
    dup = items.duplicated(key)
    wanted = vm & ~low & items["type"].isin(["Consumption", "Reservation"])  # the items a sheet row can come from
    if dup.any():  # the same meter at two prices: which one is meant is not ours to guess (the items kept only:
        # a storage meter's price tiers, left out anyway, are not a conflict)
        _refuse_conflicts(items[wanted], key)
        dup = items[vm].duplicated(key).reindex(items.index, fill_value=False) | (dup & ~vm)
        if dup.any():
            notes.add(f"{int(dup.sum())} items repeated across pages were read once.")
    kept = items[wanted & ~dup].merge(
        sizes, left_on="armSkuName", right_on="instance_type", how="inner")
    unknown = sorted(set(items.loc[vm & ~items["armSkuName"].isin(sizes["instance_type"]), "armSkuName"]))
    if unknown:
        notes.add(f"{len(unknown)} VM sizes without a known GPU count were left out: {', '.join(unknown[:8])}"
                  + (" ..." if len(unknown) > 8 else "") + ".")
    notes.add("Azure items: Linux (productName without 'Windows'), per '1 Hour'; Low Priority and DevTestConsumption "
              "items left out.")
    reasons = {"not per '1 Hour'": ~items["unitOfMeasure"].eq("1 Hour"),
               "Windows": items["productName"].str.contains("Windows", regex=False),
               "not Virtual Machines": ~items["serviceName"].isin(["Virtual Machines", ""]),
               "Low Priority": low, "type not Consumption or Reservation (DevTest...)":
               ~items["type"].isin(["Consumption", "Reservation"])}
    taken = pd.Series(False, index=items.index)
    counted = []
    for why, mask in reasons.items():  # each item counted once, under its first reason
        n = int((mask & ~taken & ~dup).sum())
        taken |= mask
        if n:
            counted.append(f"{why} {n}")
    if counted:
        notes.add("Items left out, by reason: " + ", ".join(counted) + ".")
    zero = kept["price"].le(0)
    if zero.any():
        z = kept[zero]
        raise InputError([Problem(f, f"Items entry {r} ({k}, {t}) has a price of zero", row=int(r),
                                  column=f"Items[{int(r) - 1}].retailPrice", value=v,
                                  expected="the item's price (> 0): the price sheet refuses a zero price")
                          for f, r, k, t, v in z[["_file", "_row", "armSkuName", "type", "retailPrice"]]
                          .head(20).itertuples(index=False)])
    rate = usd_rates(kept["currencyCode"], opts.fx, kept["_file"], kept["_row"],
                     "Items[" + (kept["_row"] - 1).astype(str) + "].currencyCode", notes, "Azure items")
    kept = kept.assign(price=kept["price"] * rate, _fx=rate)
    return offers(pd.concat([_consumption(kept, opts, notes), _reservations(kept, notes), _savings(kept, notes)],
                            ignore_index=True))


def _refuse_conflicts(items: pd.DataFrame, key: list[str]) -> None:
    """Exit 2 naming both items where one meter (``key``) is priced twice differently (``retailPrice``)."""
    k = items[key].fillna("").astype(str).agg("|".join, axis=1)
    first = ~k.duplicated()
    ref = pd.Series(items["retailPrice"].to_numpy(float)[first.to_numpy()], index=k[first].to_numpy())
    other = ref.reindex(k.to_numpy()).to_numpy()
    price = items["retailPrice"].to_numpy(float)
    clash = np.flatnonzero(~np.isclose(price, other, rtol=1e-12, atol=0.0))
    if not len(clash):
        return
    origin = {kk: i for i, kk in zip(np.flatnonzero(first.to_numpy()), k[first])}
    problems = []
    for i in clash[:10]:
        j = origin[k.iat[i]]
        a, b = items.iloc[j], items.iloc[i]
        problems.append(Problem(str(b["_file"]), f"Items entry {int(b['_row'])} prices {b['armSkuName']} in "
                                f"{b['armRegionName']} ({b['type']}, {b['skuName']}) at {price[i]:g}, where Items entry "
                                f"{int(a['_row'])} of {a['_file']} prices the same meter at {price[j]:g}",
                                row=int(b["_row"]), column="retailPrice", value=price[i],
                                expected="one price per meter: pages saved at one time"))
    raise InputError(problems)


def _page(path: Path, priced: Collector) -> pd.DataFrame:
    doc = load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("Items"), list):
        raise InputError(Problem(str(path), "not a Retail Prices API page: no 'Items' list", column="Items",
                                 expected='{"Items": [...], "NextPageLink": ...} as the API returns it'))
    odd = [i for i, item in enumerate(doc["Items"]) if not isinstance(item, dict)]
    if odd:
        raise InputError([Problem(str(path), f"Items entry {i + 1} is not an object", row=i + 1, column=f"Items[{i}]",
                                  value=repr(doc["Items"][i])[:60], expected="an item {armSkuName, retailPrice, ...}")
                          for i in odd[:20]])
    df = pd.DataFrame(doc["Items"])
    for col in ITEM_FIELDS:
        if col not in df:
            df[col] = None
    bad = Collector()
    missing = df["retailPrice"].isna() & df["unitPrice"].isna()
    for i in np.flatnonzero(missing.to_numpy())[:10]:
        bad.add(str(path), f"Items entry {i + 1} has no price", row=i + 1, column="retailPrice",
                expected="retailPrice (or unitPrice) in USD")
    for i in np.flatnonzero((df["armSkuName"].isna() | df["armRegionName"].isna()).to_numpy())[:10]:
        bad.add(str(path), f"Items entry {i + 1} has no armSkuName or armRegionName", row=i + 1, column="armSkuName",
                expected="the VM size and region of the meter")
    bad.raise_if_any()
    df["retailPrice"] = df["retailPrice"].where(df["retailPrice"].notna(), df["unitPrice"])
    df["_row"] = np.arange(1, len(df) + 1)
    df["_file"] = str(path)
    df["source"] = path.name + ": Items entry " + df["_row"].astype(str)
    text = ["armSkuName", "armRegionName", "unitOfMeasure", "type", "skuName", "productName", "reservationTerm",
            "currencyCode", "serviceName"]
    df[text] = df[text].fillna("").astype(str)
    df["retailPrice"] = df["retailPrice"].astype(str)
    df["price"] = numbers(df, "retailPrice", str(path), priced, blank_ok=False, low=0,
                          expected="the item's price in its currency (>= 0)")
    return df


def _base(df: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"gpu_type": df["gpu_type"], "region": df["armRegionName"], "instance_type": df["armSkuName"],
                         "gpus_per_instance": df["gpus_per_instance"], "source": df["source"]})


def _consumption(df: pd.DataFrame, opts: ImportOptions, notes: Notes) -> pd.DataFrame:
    use = df[df["type"].eq("Consumption")]
    spot = use["skuName"].str.contains("Spot", regex=False)
    od = _base(use[~spot]).assign(option="on_demand", hourly_usd=use.loc[~spot, "price"].to_numpy(),
                                  basis="Retail Prices API Consumption (pay-as-you-go)")
    sp = _base(use[spot]).assign(option="spot", hourly_usd=use.loc[spot, "price"].to_numpy(),
                                 basis="Retail Prices API Consumption, Spot meter; interruption rate assumed")
    if len(sp):
        sp["interruptions_per_hour"] = unknown_interruptions(opts, notes, "Azure publishes no spot interruption rate")
    return pd.concat([od, sp], ignore_index=True)


def _reservations(df: pd.DataFrame, notes: Notes) -> pd.DataFrame:
    res = df[df["type"].eq("Reservation") & df["reservationTerm"].isin(list(TERMS))]
    if res.empty:
        return pd.DataFrame()
    years = res["reservationTerm"].map(TERMS).to_numpy()
    total = res["price"].to_numpy()
    notes.add("Azure reservations: retailPrice is the total for the term, written as reserved_<n>y_all_upfront "
              "(upfront_usd = total / GPUs, hourly 0) and reserved_<n>y_no_upfront (monthly payments: hourly_usd = "
              "total / (n x 8760 h) / GPUs), the same money paid now or monthly.")
    term = "reserved_" + pd.Series(years, index=res.index).astype(str) + "y"
    up = _base(res).assign(option=term + "_all_upfront", hourly_usd=0.0, upfront_usd=total, payment="all_upfront",
                           basis="Retail Prices API Reservation " + res["reservationTerm"] + " total, paid upfront")
    monthly = _base(res).assign(option=term + "_no_upfront", hourly_usd=total / (years * 8760.0),
                                payment="no_upfront",
                                basis="Retail Prices API Reservation " + res["reservationTerm"] + " total / term hours, paid monthly")
    return pd.concat([up, monthly], ignore_index=True)


def _plain(v):
    """A JSON value as it goes into an error: text and numbers as they are, anything else as short text."""
    return v if isinstance(v, (str, int, float)) else repr(v)[:60]


def _savings(df: pd.DataFrame, notes: Notes) -> pd.DataFrame:
    use = df[df["type"].eq("Consumption") & ~df["skuName"].str.contains("Spot", regex=False)]
    listed = use["savingsPlan"].map(lambda v: v is not None and not (isinstance(v, float) and np.isnan(v)))
    not_list = listed & ~use["savingsPlan"].map(lambda v: isinstance(v, list))
    if not_list.any():
        raise InputError([Problem(f, f"Items entry {r}: savingsPlan is not a list", row=int(r),
                                  column=f"Items[{int(r) - 1}].savingsPlan", value=_plain(v),
                                  expected='a list of {"term": "1 Year" | "3 Years", "retailPrice": ...}')
                          for f, r, v in use.loc[not_list, ["_file", "_row", "savingsPlan"]].head(20)
                          .itertuples(index=False)])
    use = use[use["savingsPlan"].map(lambda v: isinstance(v, list) and len(v) > 0)]
    if use.empty:
        return pd.DataFrame()
    plans = use[["gpu_type", "armRegionName", "armSkuName", "gpus_per_instance", "source", "savingsPlan", "_file",
                 "_row", "_fx"]].explode("savingsPlan")
    plans["_j"] = plans.groupby(level=0).cumcount()
    plans = plans.reset_index(drop=True)
    entry = plans["savingsPlan"]
    is_dict = entry.map(lambda v: isinstance(v, dict))
    field = entry.map(lambda v: v.get("retailPrice", v.get("unitPrice")) if isinstance(v, dict) else None)
    price = pd.to_numeric(field.map(lambda v: v if isinstance(v, (int, float, str)) and not isinstance(v, bool)
                                    else None), errors="coerce")
    term = entry.map(lambda v: v.get("term") if isinstance(v, dict) else None)
    years = term.map(lambda t: TERMS.get(t) if isinstance(t, str) else None)
    at = "Items[" + (plans["_row"] - 1).astype(str) + "].savingsPlan[" + plans["_j"].astype(str) + "]"
    checks = (
        (~is_dict, "", "a savingsPlan entry is not an object", entry, '{"term": "1 Year", "retailPrice": 2.5}'),
        (is_dict & ~(price.gt(0) & np.isfinite(price)), ".retailPrice", "a savingsPlan entry's price is not a "
         "number > 0", field, "the plan's price per hour (> 0)"),
        (is_dict & years.isna(), ".term", "a savingsPlan entry's term is not 1 Year or 3 Years", term,
         '"1 Year" or "3 Years"'),
    )
    problems = []
    for mask, suffix, message, value, expected in checks:
        for i in np.flatnonzero(mask.to_numpy())[:20]:
            problems.append(Problem(plans["_file"].iat[i], f"Items entry {plans['_row'].iat[i]}: {message}",
                                    row=int(plans["_row"].iat[i]), column=at.iat[i] + suffix,
                                    value=_plain(value.iat[i]), expected=expected))
    if problems:
        raise InputError(problems)
    notes.add("Azure savings plan for compute: each Consumption item's savingsPlan entries (term 1 Year / 3 Years, "
              "retailPrice per hour) are savings_plan_<n>y rows, one commitment over every region and size, no upfront.")
    return _base(plans).assign(option="savings_plan_" + years.astype("Int64").astype(str) + "y",
                               hourly_usd=price * plans["_fx"],
                               basis="Retail Prices API savingsPlan " + term.astype(str))
