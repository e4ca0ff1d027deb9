"""Charts combined: a run's Gantt over its memory chart (``stacked``), several runs' Gantts on one
time axis (``compare``, ``compare_memory``), and the compared schedules along m, v or p (``sweep``)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import numpy as np
from plotly.subplots import make_subplots

from ..api import Run
from .encoding import Figure, figure
from .gantt import ITERATION_LABEL, bar_traces, iteration_trace, optimizer_trace
from .memory import memory
from .overview import OVERVIEW_BINS, heat_trace
from .style import (
    GRID,
    LEGEND,
    MARGIN,
    TITLE_BAND_PX,
    band_legend,
    device_axis,
    gantt_height,
    legend_px,
    legend_room,
    plot_px,
    run_title,
    scaled,
    time_range,
    time_title,
    title_band,
)

# --- a run's Gantt over its memory chart ----------------------------------------------------

_TICKS_PX = 22  # an x axis's tick labels without a title
_BLOCK_TITLE_PX = 22  # a chart's title over its legend, inside a stacked figure


def _legend_title(layout: dict) -> dict:
    title = layout.get("legend", {}).get("title")
    return {"title": title} if title else {}


def stacked(top: Figure, bottom: Figure) -> Figure:
    """Two charts of one run on one time axis, in one figure: ``top`` (a Gantt or its overview) over
    ``bottom`` (its memory chart), each keeping its plot's height, legend and title.

    One plot instead of two: a redraw in the browser pays plotly's fixed cost of a plot once (the
    model view's redraw, ``bench/bench_model_page.py``), and a zoom on either chart zooms both
    (the bottom time axis ``matches`` the top).
    """
    top_data, bottom_data = list(top["data"]), [dict(t, xaxis="x2", yaxis="y2") for t in bottom["data"]]
    for trace in bottom_data:
        trace["legend"] = "legend2"
    top_plot, bottom_plot = plot_px(top), plot_px(bottom)
    # wrapped at a narrow plot's width (1280 px screens, an overview's colour bar): on the bottom
    # chart's top, a row more than estimated would run into its title
    bottom_legend = legend_px(bottom_data, width=640)
    gap = _TICKS_PX + _BLOCK_TITLE_PX + bottom_legend  # the top's tick labels, then the bottom's title and legend
    top_legend = legend_px(top_data)
    # The top legend, placed from the figure's top under the title band (see title_band), reserves
    # the band and itself; with a legend placed on the plot area (the bottom's), plotly adds that to
    # the top margin rather than taking the larger, so the margin is 0 under a top legend.
    margin = dict(MARGIN, t=0 if top_legend else TITLE_BAND_PX)
    plot = top_plot + gap + bottom_plot
    height = TITLE_BAND_PX + top_legend + plot + margin["b"]
    split = bottom_plot / plot  # the bottom chart's top, in the plot area's fraction
    tl, bl = top["layout"], bottom["layout"]
    for trace in (t for t in top_data if t.get("type") == "heatmap"):  # the overview's colour bar beside its chart
        trace["colorbar"] = dict(trace.get("colorbar", {}), y=(bottom_plot + gap) / plot, yanchor="bottom")
        trace["colorbar"]["len"] = top_plot / plot
    title = dict(tl["title"], yref="container", y=1, yanchor="top", pad=dict(t=8))
    layout = dict(
        title=title,
        height=height,
        margin=margin,
        legend=band_legend(height),
        legend2=dict(LEGEND, y=split, yanchor="bottom", **_legend_title(bl)),  # over the bottom chart, under its title
        xaxis=dict(tl["xaxis"], title=None, anchor="y"),
        yaxis=dict(tl["yaxis"], domain=[(bottom_plot + gap) / plot, 1.0], anchor="x"),
        xaxis2=dict(bl["xaxis"], anchor="y2", matches="x"),
        yaxis2=dict(bl["yaxis"], domain=[0.0, split], anchor="x2"),
        annotations=[
            dict(
                text=bl["title"]["text"],
                xref="paper",
                yref="paper",
                x=0,
                xanchor="left",
                y=split,
                yanchor="bottom",
                yshift=bottom_legend,
                showarrow=False,
                font=dict(size=14),
            )
        ],
        plot_bgcolor="white",
        hovermode="closest",
    )
    if "barmode" in tl:
        layout["barmode"] = tl["barmode"]
    return figure(top_data + bottom_data, layout)


# --- comparison ------------------------------------------------------------------------------


def _gantt_block(run: Run, data: list, seen: set, span: float, max_bars, time_scale, time_unit, **axes) -> None:
    """One run's Gantt among stacked ones (appended to ``data``): its bars, or an overview past
    ``max_bars``, then its optimizer steps and iteration lines, each named once in the legend."""
    if max_bars is not None and len(run.result) > max_bars:
        first_heat = not any(t["type"] == "heatmap" for t in data)
        data.append(heat_trace(run, OVERVIEW_BINS, showscale=first_heat, scale=time_scale, unit=time_unit, **axes))
    else:
        data += bar_traces(run, seen=seen, span=span, scale=time_scale, unit=time_unit, **axes)
    step = optimizer_trace(run, time_scale, time_unit, **axes)
    if step:
        step.update(showlegend="optimizer" not in seen)
        seen.add("optimizer")
        data.append(step)
    ends = iteration_trace(run, time_scale, time_unit, **axes)
    if ends:
        ends.update(name=ITERATION_LABEL, showlegend="iterations" not in seen)
        seen.add("iterations")
        data.append(ends)


def compare(
    runs: Sequence[Run],
    *,
    titles: Sequence[str] | None = None,
    max_bars: int | None = None,
    time_scale: float = 1.0,
    time_unit: str = "",
) -> Figure:
    """2–4 Gantt charts stacked on one shared time axis, row heights in proportion to devices.

    A run with more than ``max_bars`` ops (no limit by default) is drawn as its raster overview.
    ``time_scale``/``time_unit`` as in gantt.
    """
    runs = list(runs)
    if not 1 <= len(runs) <= 4:
        raise ValueError(f"compare draws 1 to 4 runs (got {len(runs)})")
    titles = list(titles) if titles is not None else [run_title(run, None) for run in runs]
    if len(titles) != len(runs):
        raise ValueError(f"compare got {len(titles)} titles for {len(runs)} runs")
    devices = [run.schedule.devices for run in runs]
    with_pairs = [bool(run.result.paired.any()) for run in runs]
    rows = len(runs)
    fig = make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12 / rows,
        row_heights=[d + 2 for d in devices],
        subplot_titles=[html.escape(t) for t in titles],
    )
    seen: set = set()
    data = []
    lo, hi = time_range(runs)
    for i, run in enumerate(runs):
        axes = dict(xaxis=f"x{'' if i == 0 else i + 1}", yaxis=f"y{'' if i == 0 else i + 1}")
        _gantt_block(run, data, seen, hi - lo, max_bars, time_scale, time_unit, **axes)
    layout = fig.layout.to_plotly_json()
    for i, p in enumerate(devices):
        layout[f"yaxis{'' if i == 0 else i + 1}"].update(device_axis(p))
    span = scaled(time_range(runs), time_scale)
    for i in range(rows):
        layout[f"xaxis{'' if i == 0 else i + 1}"].update(range=span, zeroline=False, gridcolor=GRID)
    layout[f"xaxis{'' if rows == 1 else rows}"]["title"] = time_title(time_unit)
    for annotation in layout["annotations"]:
        annotation.update(x=0, xanchor="left", font=dict(size=13))
    # the modebar's band, the legend (rows estimated at a laptop's plot width: the first schedule's
    # title sits above its plot, where a legend row more than estimated would run into it), the title
    top = TITLE_BAND_PX + 24 + legend_room(data, width=700) + 20
    height = min(sum(gantt_height(p, pairs=pairs) - 40 for p, pairs in zip(devices, with_pairs)) + top - 10, 2400)
    layout.update(
        height=height,
        barmode="overlay",
        margin=dict(MARGIN, t=top),
        legend=dict(band_legend(height), tracegroupgap=0),
        plot_bgcolor="white",
        hovermode="closest",
    )
    return figure(data, layout)


# --- compare mode: Gantt and memory per schedule, and the sweep ------------------------------

# One colour per compared schedule (Paul Tol's "bright", kept clear of the kinds' Okabe-Ito hues
# by order): its title in the comparison and its line in the sweep.
SCHEDULE_COLORS = ("#4477AA", "#EE6677", "#228833", "#AA3377")
COMPARE_ROW_PX = 13  # a device row of a compared Gantt (19 with overlapped pairs, for the half bars)
COMPARE_GANTT_MAX_PX = 200  # a compared Gantt's plot height cap: zoom on its device axis for a range
COMPARE_MEMORY_PX = 64
_COMPARE_TITLE_PX = 26  # above each schedule's Gantt: its title
_COMPARE_TICKS_PX = 22  # below each memory plot: its time tick labels


def compare_memory(
    runs: Sequence[Run],
    *,
    titles: Sequence[str] | None = None,
    max_bars: int | None = None,
    time_scale: float = 1.0,
    time_unit: str = "",
    memory_kwargs: Sequence[dict] | None = None,
    band_over: int | None = 8,
) -> Figure:
    """Each schedule's Gantt with its memory chart right under it, in one figure on one time axis.

    Every time axis matches the first (a zoom anywhere zooms all) and every memory plot shows its
    time tick labels, so the axis is in view beside each schedule; memory plots share one y range.
    Kind colours and chunk patterns are those of ``gantt`` in every block. Heights are capped
    (COMPARE_GANTT_MAX_PX a Gantt), so two schedules at 8 devices fit a 1280×800 screen.
    ``memory_kwargs`` (one dict per run) are ``memory``'s real-units arguments (GB, static base,
    capacity); ``time_scale``/``time_unit`` as in gantt; past ``max_bars`` ops a Gantt is its overview.
    """
    runs = list(runs)
    if not 1 <= len(runs) <= 4:
        raise ValueError(f"compare draws 1 to 4 runs (got {len(runs)})")
    titles = list(titles) if titles is not None else [run_title(run, None) for run in runs]
    kwargs = list(memory_kwargs) if memory_kwargs is not None else [{} for _ in runs]
    if len(titles) != len(runs) or len(kwargs) != len(runs):
        raise ValueError(f"compare got {len(titles)} titles and {len(kwargs)} memory settings for {len(runs)} runs")
    lo, hi = time_range(runs)
    span = scaled([lo, hi], time_scale)
    seen: set = set()
    data: list[dict] = []
    blocks = []  # (gantt px, memory px) per run
    for i, run in enumerate(runs):
        g, m = f"{2 * i + 1 if i else ''}", f"{2 * i + 2}"
        p = run.schedule.devices
        pairs = bool(run.result.paired.any())
        blocks.append((min((19 if pairs else COMPARE_ROW_PX) * p + 8, COMPARE_GANTT_MAX_PX), COMPARE_MEMORY_PX))
        axes = dict(xaxis=f"x{g}", yaxis=f"y{g}")
        _gantt_block(run, data, seen, hi - lo, max_bars, time_scale, time_unit, **axes)
        mem = memory(run, time_scale=time_scale, time_unit=time_unit, band_over=band_over, **kwargs[i])
        for trace in mem["data"]:
            line = trace["name"].split(" ")[0] in ("limit", "capacity", "reserve")
            trace.update(xaxis=f"x{m}", yaxis=f"y{m}", legendgroup=trace["name"] if line else f"mem-{i}")
            trace["showlegend"] = line and trace["name"] not in seen
            seen.add(trace["name"])
            trace["hovertemplate"] = f"{html.escape(titles[i])}<br>" + trace.get("hovertemplate", "")
        data += mem["data"]
        top = max((float(np.max(t["y"])) for t in mem["data"] if len(t["y"])), default=1.0)
        blocks[-1] += (mem["layout"]["yaxis"]["title"]["text"], top)
    # the modebar's band, then the legend's rows (plotly adds a margin for rows past the estimate)
    legend_px = TITLE_BAND_PX + 24 + legend_room(data)
    plot_px = sum(_COMPARE_TITLE_PX + g + 8 + m + _COMPARE_TICKS_PX for g, m, *_ in blocks)
    height = legend_px + plot_px + 30  # the bottom margin holds the time axis's title
    layout: dict = dict(
        height=height,
        barmode="overlay",
        margin=dict(MARGIN, t=legend_px, b=30),
        legend=dict(band_legend(height), tracegroupgap=0),
        plot_bgcolor="white",
        hovermode="closest",
        annotations=[],
    )
    top = plot_px  # pixels from the plot area's bottom, going down block by block
    # One y range for every memory plot, set here: plotly.js left matched axes at [0, 4] in Chromium.
    memory_top = 1.08 * max(top for *_, top in blocks) or 1.0
    for i, (run, (g_px, m_px, m_title, _)) in enumerate(zip(runs, blocks)):
        g, m = f"{2 * i + 1 if i else ''}", f"{2 * i + 2}"
        top -= _COMPARE_TITLE_PX
        g_dom = [(top - g_px) / plot_px, top / plot_px]
        top -= g_px + 8
        m_dom = [(top - m_px) / plot_px, top / plot_px]
        top -= m_px + _COMPARE_TICKS_PX
        x_common = dict(range=span, zeroline=False, gridcolor=GRID)
        layout[f"xaxis{g}"] = dict(x_common, anchor=f"y{g}", showticklabels=False, **({"matches": "x"} if i else {}))
        layout[f"xaxis{m}"] = dict(x_common, anchor=f"y{m}", showticklabels=True, matches="x")
        devices = device_axis(run.schedule.devices, g_px + MARGIN["t"] + MARGIN["b"], domain=g_dom, anchor=f"x{g}")
        devices["title"] = dict(text="device", standoff=4)
        layout[f"yaxis{g}"] = devices
        mem_axis = dict(
            domain=m_dom, anchor=f"x{m}", title=dict(text=m_title, font=dict(size=10)), gridcolor=GRID, nticks=4
        )
        mem_axis.update(**({"matches": "y2"} if i else {}))
        for heat in (t for t in data if t["type"] == "heatmap" and t["yaxis"] == f"y{g}"):
            # the overview's colour bar beside its own Gantt, not the whole figure's height
            heat["colorbar"].update(y=g_dom[0], yanchor="bottom", len=g_dom[1] - g_dom[0])
        mem_axis["range"] = [0, memory_top]
        layout[f"yaxis{m}"] = mem_axis
        color = SCHEDULE_COLORS[i % len(SCHEDULE_COLORS)]
        layout["annotations"].append(
            dict(
                text=f"<b>{html.escape(titles[i])}</b>",
                xref="paper",
                yref="paper",
                x=0,
                xanchor="left",
                y=g_dom[1],
                yanchor="bottom",
                yshift=2,
                showarrow=False,
                font=dict(size=13, color=color),
            )
        )
    last = f"{2 * len(runs)}"
    layout[f"xaxis{last}"]["title"] = dict(time_title(time_unit), standoff=4)
    return figure(data, layout)


SWEEP_AXES = {"m": "microbatches m", "v": "chunks per device v", "p": "devices p"}


def sweep(
    rows: Sequence[dict],
    axis: str,
    metrics: Sequence[tuple[str, str, float]],
    *,
    current: float | None = None,
    capacity: tuple[str, float] | None = None,
    title: str | None = None,
) -> Figure:
    """One line per schedule across the swept values, in small panels sharing x, one per metric.

    ``rows`` are ``ppviz.sweep``'s (one per schedule and value; a row with a ``reason`` has no
    numbers and leaves a gap in its line). ``metrics`` are (row key, axis title with its unit,
    scale to that unit). ``current`` marks the view's own value; ``capacity`` (metric key, level in
    that metric's unit) draws a line in that panel (e.g. the GPU's HBM under peak memory).
    """
    if axis not in SWEEP_AXES:
        raise ValueError(f"a sweep runs along m, v or p (got {axis!r})")
    names = list(dict.fromkeys(r["schedule"] for r in rows))
    values = sorted({r["value"] for r in rows})
    n = len(metrics)
    gap = 0.08
    height_each = (1 - gap * (n - 1)) / max(n, 1)
    data: list[dict] = []
    layout: dict = dict(
        height=80 + 125 * n,  # with the title band and a legend row above the panels (title_band)
        margin=dict(MARGIN),
        plot_bgcolor="white",
        hovermode="closest",
        title=dict(text=title or f"the compared schedules along {SWEEP_AXES[axis]}", x=0, xanchor="left"),
    )
    layout["title"].update(font=dict(size=14))
    for k, (key, label, scale) in enumerate(metrics):
        suffix = "" if k == 0 else str(k + 1)
        top = 1 - k * (height_each + gap)
        layout[f"xaxis{suffix}"] = dict(
            type="log",
            tickvals=values,
            ticktext=[str(v) for v in values],
            gridcolor=GRID,
            anchor=f"y{suffix}",
            showticklabels=k == n - 1,
            **({"matches": "x"} if k else {}),
        )
        layout[f"yaxis{suffix}"] = dict(
            domain=[max(top - height_each, 0.0), top], title=dict(text=label, font=dict(size=11)), gridcolor=GRID
        )
        layout[f"yaxis{suffix}"]["rangemode"] = "tozero"
        for i, name in enumerate(names):
            mine = sorted((r for r in rows if r["schedule"] == name), key=lambda r: r["value"])
            ys = [None if r.get(key) is None else r[key] * scale for r in mine]
            notes = [r.get("reason") or r.get("note") or "" for r in mine]
            data.append(
                dict(
                    type="scatter",
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    showlegend=k == 0,
                    x=[r["value"] for r in mine],
                    y=ys,
                    customdata=notes,
                    connectgaps=False,
                    line=dict(color=SCHEDULE_COLORS[i % len(SCHEDULE_COLORS)], width=2),
                    marker=dict(size=6),
                    hovertemplate=f"{html.escape(name)}<br>{axis} %{{x}}: %{{y:.4~g}} {html.escape(label)}"
                    "<br>%{customdata}<extra></extra>",
                    xaxis=f"x{suffix}",
                    yaxis=f"y{suffix}",
                )
            )
        if capacity is not None and capacity[0] == key and values:
            data.append(
                dict(
                    type="scatter",
                    mode="lines",
                    name=f"usable HBM {capacity[1]:.4g}",
                    x=[values[0], values[-1]],
                    y=[capacity[1], capacity[1]],
                    line=dict(color="#7A0000", dash="dot", width=2),
                    hoverinfo="skip",
                    xaxis=f"x{suffix}",
                    yaxis=f"y{suffix}",
                )
            )
        if current is not None:  # the view's own value: a dotted line across the panel
            layout.setdefault("shapes", []).append(
                dict(type="line", xref=f"x{suffix}", yref=f"y{suffix} domain", x0=current, x1=current, y0=0, y1=1,
                     line=dict(color="#999999", dash="dot", width=1))
            )  # fmt: skip
    last = "" if n == 1 else str(n)
    layout[f"xaxis{last}"]["title"] = dict(text=SWEEP_AXES[axis])
    gaps = _sweep_gaps(rows, axis)
    if gaps:  # why a line has a gap, under the chart
        layout["margin"]["b"] = 70 + 16 * len(gaps)
        layout["height"] += 16 * len(gaps)
        text = "<br>".join(html.escape(g) for g in gaps)
        layout["annotations"] = [
            dict(text=text, xref="paper", yref="paper", x=0, y=0, xanchor="left", yanchor="top", yshift=-58,
                 showarrow=False, align="left", font=dict(size=11, color="#555555"))
        ]  # fmt: skip
    title_band(layout, data)
    return figure(data, layout)


def _sweep_gaps(rows: Sequence[dict], axis: str, width: int = 150) -> list[str]:
    """One line per schedule and reason: "no point for interleaved-1f1b at m 1, 2: needs …"."""
    reasons: dict[tuple[str, str], list] = {}
    for r in rows:
        if r.get("reason"):  # one line for one reason at several values ("(got 1 …)", "(got 2 …)")
            reason = re.sub(r" \(got [^)]*\)", "", r["reason"])
            reasons.setdefault((r["schedule"], reason), []).append(r["value"])
    lines = []
    for (name, reason), values in reasons.items():
        line = f"no point for {name} at {axis} {', '.join(map(str, values))}: {reason}"
        lines.append(line if len(line) <= width else line[: width - 1] + "…")
    return lines
