"""Prices over time and by scenario (a forward curve, price paths): which price-sheet row prices what, when.

The price sheet may date a price (``valid_from``) and give it to one scenario (``scenario``):

- **Dated rows.** A reserved row prices purchases dated on or after its ``valid_from`` (a purchase keeps the
  price of its date, :mod:`planner.inputs.ladder`). An on-demand, spot or flex-start row prices every GPU-hour
  from its ``valid_from`` on; the option's undated row prices the hours before (the validator requires one).
- **Scenario rows.** A row naming a scenario prices that scenario only; blank rows price every scenario. Where a
  scenario has rows of its own for a pool and option, they replace the sheet's rows of that pool and option
  from the scenario's first ``valid_from`` on (an undated scenario row replaces them all): a scenario's price
  file (``[scenarios.<name>] prices``) is its forward curve, not a patch interleaved with the sheet's.
- **The rule.** Among the rows that apply, the one with the latest ``valid_from`` on or before the instant
  prices it.

``row_index`` applies the rule; :class:`PricePaths` gives what the model needs: the rented prices per scenario,
kind, pool and period (S, J, P, T), each purchase row's price per scenario (R, S), and the signature by which
the scenario tree tells scenarios apart (spec/contracts.md: a purchase on date s is shared by the scenarios
whose demand *and prices* coincide in every period before s). A purchase shared by scenarios whose prices at
its own date differ is charged their probability-weighted mean price (its expected cost, exactly: the cost is
linear in the price). Nothing here knows about PuLP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.inputs import supply

_NEVER = np.iinfo(np.int64).min  # an undated row: valid from the beginning of time


def _vf(prices: pd.DataFrame) -> np.ndarray:
    """(N,) each row's ``valid_from`` in ns (undated: :data:`_NEVER`)."""
    if "valid_from" not in prices:
        return np.full(len(prices), _NEVER, dtype=np.int64)
    v = pd.to_datetime(prices["valid_from"])
    out = v.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    return np.where(v.isna().to_numpy(), _NEVER, out)


def scenario_column(prices: pd.DataFrame) -> np.ndarray:
    """(N,) each row's scenario ("" = every scenario)."""
    if "scenario" not in prices:
        return np.full(len(prices), "", dtype=object)
    return prices["scenario"].fillna("").astype(str).to_numpy(dtype=object)


def has_rented_paths(prices: pd.DataFrame) -> bool:
    """True when a rented price (on-demand, spot, flex-start) changes over time or by scenario."""
    rented = prices["option"].isin(supply.RENTED).to_numpy()
    return bool((rented & ((_vf(prices) != _NEVER) | (scenario_column(prices) != ""))).any())


def has_reserved_scenarios(prices: pd.DataFrame) -> bool:
    """True when a commitment's price differs by scenario."""
    rented = prices["option"].isin(supply.RENTED).to_numpy()
    return bool((~rented & (scenario_column(prices) != "")).any())


def base_rows(prices: pd.DataFrame) -> pd.DataFrame:
    """The sheet's own rows: no scenario, and for rented options undated (one price per pool and option: what
    the pools table and every "today's price" figure read)."""
    rented = prices["option"].isin(supply.RENTED).to_numpy()
    keep = (scenario_column(prices) == "") & (~rented | (_vf(prices) == _NEVER))
    return prices[keep]


def commitment_rows(prices: pd.DataFrame) -> pd.DataFrame:
    """The rows the commitments table is built from: the sheet's own (scenario rows re-price it later)."""
    return prices[scenario_column(prices) == ""]


def row_index(prices: pd.DataFrame, keys: pd.DataFrame, names: list[str], when: np.ndarray) -> np.ndarray:
    """(S, len(keys), len(when)) the position in ``prices`` of the row pricing key (gpu_type, region, option) for
    scenario ``names[s]`` at instant ``when[t]`` (ns or datetime64; -1: none applies)."""
    if isinstance(when, np.ndarray) and when.dtype.kind in "iu":
        when = when.astype(np.int64)
    else:
        when = pd.DatetimeIndex(when).as_unit("ns").asi8
    S, Kk, T = len(names), len(keys), len(when)
    out = np.full((S, Kk, T), -1, dtype=np.int64)
    if not S or not Kk or not T:
        return out
    vf, scen = _vf(prices), scenario_column(prices)
    key_of = (prices["gpu_type"].astype(str) + "\x1f" + prices["region"].astype(str) + "\x1f"
              + prices["option"].astype(str)).to_numpy()
    want = (keys["gpu_type"].astype(str) + "\x1f" + keys["region"].astype(str) + "\x1f"
            + keys["option"].astype(str)).to_numpy()
    positions = pd.Series(np.arange(len(prices))).groupby(key_of).apply(np.asarray).to_dict() if len(prices) else {}
    distinct = list(dict.fromkeys(names))
    for i, k in enumerate(want):
        rows = positions.get(k)
        if rows is None:
            continue
        base = rows[scen[rows] == ""]
        for name in distinct:
            own = rows[scen[rows] == name]
            cand = base if not len(own) else np.concatenate([base[vf[base] < vf[own].min()], own])
            if not len(cand):
                continue
            order = cand[np.argsort(vf[cand], kind="stable")]
            at = np.searchsorted(vf[order], when, side="right") - 1
            got = np.where(at >= 0, order[np.clip(at, 0, None)], -1)
            for s in [j for j, n in enumerate(names) if n == name]:
                out[s, i] = got
    return out


@dataclass(frozen=True)
class PricePaths:
    """The price sheet's dated and scenario rows for one set of pools and scenarios (``names[s]``: the price-sheet
    scenario scenario ``s`` takes its prices from)."""
    prices: pd.DataFrame
    pools: pd.DataFrame
    names: tuple

    @property
    def rented(self) -> bool:
        """True when rented prices change over time or by scenario."""
        return has_rented_paths(self.prices)

    @property
    def reserved(self) -> bool:
        """True when commitment prices differ by scenario."""
        return has_reserved_scenarios(self.prices)

    def rented_keys(self) -> pd.DataFrame:
        """(J * P) rows (gpu_type, region, option) in kind-major order (:data:`planner.inputs.rented.KINDS`)."""
        from planner.inputs import rented

        return pd.DataFrame({"gpu_type": np.tile(self.pools["gpu_type"].to_numpy(), len(rented.KINDS)),
                             "region": np.tile(self.pools["region"].to_numpy(), len(rented.KINDS)),
                             "option": np.repeat(list(rented.KINDS), len(self.pools))})

    def rented_rows(self, periods: pd.DatetimeIndex) -> np.ndarray:
        """(S, J, P, T) the price-sheet row pricing each rented kind's GPU-hour (-1: the kind is not sold)."""
        from planner.inputs import rented

        idx = row_index(self.prices, self.rented_keys(), list(self.names), pd.DatetimeIndex(periods))
        return idx.reshape(len(self.names), len(rented.KINDS), len(self.pools), len(periods))

    def rented_price(self, periods: pd.DatetimeIndex) -> np.ndarray:
        """(S, J, P, T) USD per GPU-hour of each rented kind (NaN: not sold)."""
        idx = self.rented_rows(periods)
        hourly = self.prices["hourly_usd"].to_numpy(float)
        return np.where(idx >= 0, hourly[np.clip(idx, 0, None)], np.nan)

    def reserved_rows(self, table: pd.DataFrame) -> np.ndarray:
        """(R, S) the price-sheet row pricing each commitments-table row in each scenario (-1: the row keeps its
        own price: a capacity block, a savings plan, a resale, or no scenario row applies)."""
        R, S = len(table), len(self.names)
        out = np.full((R, S), -1, dtype=np.int64)
        if not R or not self.reserved:
            return out
        kind = table["kind"].astype(str).to_numpy()
        term = np.isin(kind, supply.names(dated_by="term", unit="instance"))
        rows = np.flatnonzero(term & table["option"].isin(self.prices.loc[scenario_column(self.prices) != "",
                                                                         "option"]).to_numpy())
        if not len(rows):
            return out
        sub = table.iloc[rows]
        when = pd.DatetimeIndex(sub["purchase_date"]).as_unit("ns").asi8
        key = (sub["gpu_type"].astype(str) + "\x1f" + sub["region"].astype(str) + "\x1f"
               + sub["option"].astype(str)).to_numpy()
        for k in pd.unique(key):  # one call per option: its rows' purchase dates, each row its own date
            at = np.flatnonzero(key == k)
            got = row_index(self.prices, sub.iloc[at[:1]][["gpu_type", "region", "option"]], list(self.names),
                            when[at])  # (S, 1, len(at))
            out[rows[at]] = got[:, 0, :].T
        return out

    def price_commitments(self, table: pd.DataFrame, member: np.ndarray | None,
                          probability: np.ndarray) -> pd.DataFrame:
        """``table`` with each term row priced at the probability-weighted mean, over the scenarios it serves
        (``member`` (R, S); None = all), of each scenario's price at its purchase date (its expected cost)."""
        idx = self.reserved_rows(table)
        priced = (idx >= 0).any(axis=1)
        if not priced.any():
            return table
        from planner.core.units import effective_rate

        R, S = idx.shape
        mem = np.ones((R, S), dtype=bool) if member is None else np.asarray(member, bool)
        w = mem * np.asarray(probability, float)[None, :]
        w = w / np.where(w.sum(axis=1, keepdims=True) > 0, w.sum(axis=1, keepdims=True), 1.0)
        out = table.copy()
        per = {}
        for col in ("hourly_usd", "upfront_usd", "residual_usd"):
            own = out[col].to_numpy(float)
            sheet = self.prices[col].to_numpy(float) if col in self.prices else np.zeros(len(self.prices))
            per[col] = np.where(idx >= 0, sheet[np.clip(idx, 0, None)], own[:, None])  # (R, S)
            out[col] = np.where(priced, (per[col] * w).sum(axis=1), own)
        r = effective_rate(out["hourly_usd"], out["upfront_usd"] - out["residual_usd"], out["term_months"])
        out["r"] = np.where(priced, np.asarray(r, float), out["r"].to_numpy(float))
        return _price_resales(out, priced, per["hourly_usd"], per["upfront_usd"], w)

    def signature(self, periods: pd.DatetimeIndex) -> np.ndarray | None:
        """(S, X, T) what distinguishes the scenarios' prices in each period (rented prices, and every
        commitment's price a purchase in that period would pay), for the tree's node test; None when the
        prices are the same in every scenario."""
        if len(set(self.names)) < 2 or not (scenario_column(self.prices) != "").any():
            return None
        parts = []
        if self.rented:
            parts.append(np.nan_to_num(self.rented_price(periods), nan=-1.0).reshape(len(self.names), -1,
                                                                                       len(periods)))
        if self.reserved:
            res = self.prices[~self.prices["option"].isin(supply.RENTED)]
            keys = res[["gpu_type", "region", "option"]].drop_duplicates().reset_index(drop=True)
            idx = row_index(self.prices, keys, list(self.names), pd.DatetimeIndex(periods))
            cols = [self.prices[c].to_numpy(float) for c in ("hourly_usd", "upfront_usd") if c in self.prices]
            for v in cols:
                parts.append(np.where(idx >= 0, v[np.clip(idx, 0, None)], -1.0))
        return np.concatenate(parts, axis=1) if parts else None


def _price_resales(table: pd.DataFrame, priced: np.ndarray, hourly: np.ndarray, upfront: np.ndarray,
                   w: np.ndarray) -> pd.DataFrame:
    """``table`` with each resale (kind ``exit``) of a row priced by scenario re-priced from its parent's price in
    the scenarios it serves (``hourly``, ``upfront``: (R, S) every row's price per scenario; ``w``: each row's
    weights over the scenarios). A resale stops the fee its parent pays and returns the rest of the upfront its
    parent paid (:func:`planner.inputs.commitments.exit_rows`), both linear in the parent's price: built from the
    sheet's own rows, it would stop the sheet's fee where a scenario's parent pays another (a resale worth more
    than its parent cost: a purchase the plan could sell at a profit without bound)."""
    if "parent" not in table:
        return table
    par = table["parent"].to_numpy(int)
    ex = np.flatnonzero(supply.table_mask(table, dated_by="resale") & (par >= 0))
    ex = ex[priced[par[ex]]]
    if not len(ex):
        return table
    from planner.inputs.commitments import resale_price

    p = par[ex]
    months = table["term_months"].to_numpy(float)
    column = lambda a: np.asarray(a, float)[:, None]  # noqa: E731  (one value per resale, over the scenarios)
    prices = resale_price(hourly[p], upfront[p], column(months[p] * 730.0), column(months[ex] * 730.0),
                          column(table["resale_haircut"].to_numpy(float)[ex]),
                          column(table["hours_active"].to_numpy(float)[ex]))  # (E, S) each: the parent's price
    out = table.copy()
    for col, per in zip(("hourly_usd", "upfront_usd", "r"), prices):
        v = out[col].to_numpy(float).copy()
        v[ex] = (per * w[ex]).sum(axis=1)
        out[col] = v
    return out


def paths_for(prices: pd.DataFrame, pools: pd.DataFrame, names) -> PricePaths | None:
    """The :class:`PricePaths` of a sheet, or None when no price is dated (rented) or given per scenario."""
    if not (has_rented_paths(prices) or has_reserved_scenarios(prices)):
        return None
    return PricePaths(prices=prices, pools=pools, names=tuple(names))
