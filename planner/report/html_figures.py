"""The plotly figures of ``planner report --html``, one function per picture, from :mod:`planner.report.html_data`.

Figures carry no template (plotly's default template would add kilobytes of styling to every figure) and,
where the x values are evenly spaced, ``x0``/``dx`` instead of an x array: the page's data stay small.
"""

from __future__ import annotations

import html

import plotly.graph_objects as go

from planner.report.html_data import Cash, FleetMix, PoolCurve, Vintages

COLOURS = {"reserved": "#1f5fa8", "on_demand": "#e07b00", "spot": "#2e9e4f", "owned": "#111111",
           "break_even": "#c0392b"}
PALETTE = ["#1f5fa8", "#6aa6e0", "#2e9e4f", "#98d08f", "#e07b00", "#f5b66a", "#8e44ad", "#c39bd3", "#7f8c8d",
           "#b7950b", "#16a085", "#c0392b"]
MS = {"hour": 3_600_000, "day": 86_400_000}


def _layout(fig: go.Figure, title: str, xtitle: str, ytitle: str, height: int = 380) -> go.Figure:
    fig.update_layout(template="none", title={"text": title, "x": 0.01, "font": {"size": 15}}, height=height,
                      margin={"l": 70, "r": 20, "t": 50, "b": 90}, paper_bgcolor="white", plot_bgcolor="white",
                      font={"family": "system-ui, sans-serif", "size": 12},
                      legend={"orientation": "h", "y": -0.12, "x": 0, "yanchor": "top"}, hovermode="x unified")
    fig.update_xaxes(title_text=xtitle, gridcolor="#e5e5e5", zeroline=False, showline=True, linecolor="#999")
    fig.update_yaxes(title_text=ytitle, gridcolor="#e5e5e5", zeroline=False, showline=True, linecolor="#999",
                     rangemode="tozero")
    return fig


def _t(text) -> str:
    """A name from the inputs (pool, region, class, option) as plotly text: its markup (``<b>``, ``<br>``, ``&``)
    escaped as entities, which plotly shows as the characters; ``%{`` kept out of hover templates' reach."""
    return html.escape(str(text), quote=False).replace("%{", "%&#123;")


def _n(x: float) -> str:
    if float(x).is_integer():
        return f"{x:,.0f}"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.1f}"


def _vline(fig: go.Figure, x: float, top: float, label: str, colour: str, dash: str) -> None:
    fig.add_trace(go.Scatter(x=[x, x], y=[0, top], name=label, mode="lines",
                             line={"color": colour, "width": 2, "dash": dash}, hovertemplate=label + "<extra></extra>"))


def load_duration_figure(c: PoolCurve) -> go.Figure:
    """A pool's load-duration curve with its reserved level (horizontal) and the break-even hours (vertical):
    against on-demand, and against spot where the pool uses spot."""
    fig = go.Figure()
    dx = c.hours[1] - c.hours[0] if len(c.hours) > 1 else 1.0
    fig.add_trace(go.Scatter(x0=0, dx=dx, y=c.gpus, name="demand served in the pool, sorted", mode="lines",
                             line={"shape": "hv", "color": COLOURS["on_demand"], "width": 2}, fill="tozeroy",
                             fillcolor="rgba(224,123,0,0.15)",
                             hovertemplate="%{y:,.1f} GPUs or more for %{x:,.0f} h<extra></extra>"))
    top = max(c.peak_gpus, c.reserved_max, 1.0) * 1.08
    if c.reserved_max > 0:
        varies = c.reserved_max - c.reserved_min > 1e-6
        label = f"reserved owned {_n(c.reserved_gpus)} GPUs" + (
            f" (mean; {_n(c.reserved_min)} to {_n(c.reserved_max)})" if varies else "")
        fig.add_trace(go.Scatter(x=[0, c.horizon_hours], y=[c.reserved_gpus] * 2, name=label, mode="lines",
                                 line={"color": COLOURS["reserved"], "width": 2, "dash": "dash"},
                                 hovertemplate=label + "<extra></extra>"))
    notes = []
    if c.break_even_hours is not None and c.break_even_hours <= c.horizon_hours:
        share = c.break_even_hours / c.horizon_hours
        _vline(fig, c.break_even_hours, top, f"break-even vs on-demand {_n(c.break_even_hours)} h ({share:.0%})",
               COLOURS["break_even"], "dot")
    elif c.break_even_hours is not None:
        notes.append("break-even beyond the horizon: reserving never beats on-demand here")
    elif c.reserved_usd_per_gpu_hour is None:
        notes.append("no reserved option in this pool")
    else:
        notes.append("no on-demand price for this pool in plan.json")
    if c.break_even_spot_hours is not None and c.break_even_spot_hours <= c.horizon_hours:
        share = c.break_even_spot_hours / c.horizon_hours
        _vline(fig, c.break_even_spot_hours, top, f"break-even vs spot {_n(c.break_even_spot_hours)} h ({share:.0%})",
               COLOURS["spot"], "dashdot")
    elif c.break_even_spot_hours is not None:
        notes.append("reserved dearer than spot")
    if c.reserved_usd_per_gpu_hour is not None:
        prices = [f"reserved {c.reserved_usd_per_gpu_hour:.3g} ({_t(c.reserved_price_source)})"]
        if c.on_demand_usd_per_gpu_hour:
            prices.append(f"on-demand {c.on_demand_usd_per_gpu_hour:.3g}")
        if c.spot_usd_per_gpu_hour:
            prices.append(f"spot {c.spot_usd_per_gpu_hour:.3g}")
        notes.insert(0, "USD/GPU-h: " + ", ".join(prices))
    if c.resolution == "monthly":
        notes.append("monthly means (no fleet.csv)")
    title = f"{_t(c.pool)}: load-duration curve" + (f"<br><sub>{'; '.join(notes)}</sub>" if notes else "")
    _layout(fig, title, f"hours of the horizon ({_n(c.horizon_hours)} h) at or above the level", "GPUs", height=400)
    fig.update_xaxes(range=[0, c.horizon_hours])
    fig.update_yaxes(range=[0, top])
    fig.update_layout(margin={"t": 70 if notes else 50, "b": 50}, hovermode="closest",
                      legend={"orientation": "v", "x": 0.99, "xanchor": "right", "y": 0.99, "yanchor": "top",
                              "bgcolor": "rgba(255,255,255,0.85)", "bordercolor": "#ddd", "borderwidth": 1})
    return fig


def _x(step: str, when: list[str]) -> dict:
    """x as x0 + dx when the steps are even (hours, days), else the list of dates."""
    if step in MS and when:
        return {"x0": when[0], "dx": MS[step]}
    return {"x": when}


def fleet_mix_figure(m: FleetMix) -> go.Figure:
    """Reserved used, on-demand and spot GPUs stacked over time, with the reserved GPUs owned as a line."""
    fig = go.Figure()
    x = _x(m.step, m.when)
    shape = "hv" if m.step != "month" else "linear"
    for name, ys, colour in (("reserved used", m.reserved_used, COLOURS["reserved"]),
                             ("on-demand", m.on_demand, COLOURS["on_demand"]), ("spot", m.spot, COLOURS["spot"]),
                             *((k.replace("_", "-"), ys, COLOURS.get(k, "#8e44ad")) for k, ys in m.others.items())):
        fig.add_trace(go.Scatter(**x, y=ys, name=name, stackgroup="mix", mode="lines",
                                 line={"width": 0.5, "color": colour, "shape": shape},
                                 hovertemplate="%{y:,.1f}"))
    fig.add_trace(go.Scatter(**x, y=m.reserved_owned, name="reserved owned (bought + inventory)", mode="lines",
                             line={"width": 1.5, "color": COLOURS["owned"], "dash": "dot", "shape": shape},
                             hovertemplate="%{y:,.1f}"))
    per = {"hour": "per period", "day": "mean per day", "month": "mean per month"}[m.step]
    return _layout(fig, f"Fleet mix over time ({per}, every pool)", "", "GPUs (each pool's own type)", height=420)


def vintage_figure(v: Vintages) -> go.Figure:
    """The ladder: GPUs owned per purchase date (and inventory), stacked over the horizon."""
    fig = go.Figure()
    for i, (name, ys, pools) in enumerate(zip(v.vintages, v.gpus, v.pools)):
        label = _t(f"{name} (inventory)" if name.startswith("owned") else f"bought {name}")
        fig.add_trace(go.Scatter(x=v.when, y=ys, name=label, stackgroup="vintage", mode="lines",
                                 line={"shape": "hv", "width": 0.5, "color": PALETTE[i % len(PALETTE)]},
                                 hovertemplate="%{y:,.0f} GPUs: " + _t(pools) + "<extra>" + label + "</extra>"))
    return _layout(fig, "GPUs owned by vintage (purchase date)", "", "GPUs", height=420)


def cash_figure(c: Cash) -> go.Figure:
    """Cash out per calendar month, stacked by kind (money back below zero), with the month's total."""
    from planner.report.html_data import CASH_LABELS

    fig = go.Figure()
    for i, (col, ys) in enumerate(c.kinds.items()):
        fig.add_trace(go.Bar(x=c.months, y=ys, name=CASH_LABELS.get(col, col.removesuffix("_usd").replace("_", " ")),
                             marker_color=PALETTE[(2 * i) % len(PALETTE)], hovertemplate="%{y:,.0f} USD"))
    fig.add_trace(go.Scatter(x=c.months, y=[round(t, 2) for t in c.totals], name="total", mode="markers",
                             marker={"color": "#111", "size": 5, "symbol": "diamond"}, hovertemplate="%{y:,.0f} USD"))
    _layout(fig, "Cash by month (to the end of the last term)", "", "USD", height=420)
    fig.update_layout(barmode="relative")
    fig.update_yaxes(rangemode="normal")
    return fig
