"""Plotly figures of a simulated run: Gantt chart, memory curves, raster overview, comparison.

The only module of ppviz that imports plotly. Builders draw a ``Run`` and never compute schedule
facts: times come from ``run.result``, peaks from ``ppviz.memory.activation``. Big schedules stay
cheap: the number of traces depends on kinds and chunks, never on ops; each trace has one colour
(per-bar colours draw several times slower) and draws its bars as one SVG path (one element per
bar was most of a redraw); its data are compact numpy arrays that travel base64-encoded; and hover
and labels are built in the browser from ``customdata`` rather than sent as strings.
``bench/bench_figures.py`` measures build time, JSON bytes and draw time, ``bench/bench_model_page.py``
a page's redraw.
"""

from __future__ import annotations

import base64
import html
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from . import memory as _memory
from .api import Run
from .ir import KIND_INDEX, KINDS, Kind
from .iterations import iteration_ends, iterations, optimizer_steps

# Okabe-Ito: distinguishable with the common colour-vision deficiencies. One colour per kind in
# every schedule (B orange and BW reddish purple, never two oranges); the chunk is a fill pattern
# (CHUNK_PATTERNS) and an overlapped pair's halves are outlined (PAIR_OUTLINE), never another hue.
KIND_COLORS = {Kind.F: "#0072B2", Kind.B: "#E69F00", Kind.W: "#009E73", Kind.BW: "#CC79A7"}
PAIR_COLOR = "#4D4D4D"  # the overview's class of overlapped slots; in bars, the halves' outline
PAIR_OUTLINE = dict(color="#1A1A1A", width=1.5)
# Legend order, the same in every chart: kinds, then the chunks' patterns, the pairs' outline, iterations.
LEGEND_RANK = {"F": 1, "B": 2, "W": 3, "BW": 4, "chunk": 10, "overlapped": 50, "optimizer": 55, "iterations": 60}
CHUNK_PATTERNS = ("", "/", "x", "\\", ".", "-", "|", "+")  # chunk c's fill: solid, hatched, crossed, …
CHUNK_NAMES = {"": "solid", "/": "hatched /", "x": "cross-hatched", "\\": "hatched \\", ".": "dotted"}
IDLE_COLOR = "#F4F4F4"
KIND_LABELS = {Kind.F: "F forward", Kind.B: "B backward (input)", Kind.W: "W backward (weight)", Kind.BW: "BW backward"}
PAIR_LABEL = "overlapped pair (outlined): F on top, B/BW below"

# Past this many ops, no labels inside bars. Measured in headless Chromium: labels add 0.15-0.3 ms
# of drawing per bar (1,984 ops: 412 ms with, 115 ms without; 4,992 ops: 1.8 s against 0.5 s), and
# at that density a whole-schedule view has bars too narrow to hold a number anyway.
TEXT_LIMIT = 2_000
LABEL_PLOT_PX = 900  # nominal plot width at which a label must fit inside its bar
LABEL_MIN_PX = 6.5  # the smallest label font
# to_html draws the overview instead of bars past this many ops (20k bars: about 2 s to draw)
HTML_GANTT_LIMIT = 20_000
BAR_WIDTH = 0.8  # of one device row
_F = KIND_INDEX[Kind.F]
_MARGIN = dict(l=70, r=30, t=50, b=45)
_GRID = "#E6E6E6"
_LEGEND = dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom")
TITLE_BAND_PX = 28  # the chart title and the modebar's icons, above the legend (see _title_band)


# --- colours ---------------------------------------------------------------------------------


def _mix(color: str, other: str, t: float) -> str:
    a = np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)
    b = np.array([int(other[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)
    r, g, bl = np.rint(a + (b - a) * t).astype(int)
    return f"#{r:02X}{g:02X}{bl:02X}"


def shades(color: str, n: int) -> list[str]:
    """``n`` shades of ``color``, light to dark, one per model chunk (the base colour when n = 1)."""
    if n <= 1:
        return [color]
    out = []
    for i in range(n):
        t = -0.45 + 0.75 * i / (n - 1)  # from 45% towards white to 30% towards black
        out.append(_mix(color, "#FFFFFF", -t) if t < 0 else _mix(color, "#000000", t))
    return out


# --- compact arrays --------------------------------------------------------------------------


def _time_dtype(run: Run, scale: float = 1.0) -> type:
    """float32 when it places every bar edge within 0.1% of the shortest bar, else float64.

    Hover prints 7 significant digits, which float32 holds, so the saving costs no precision a
    reader can see; exports (CSV, JSON, trace) always carry the exact float64 times.
    """
    r = run.result
    times = np.concatenate([r.slot_start, r.slot_end]) * scale
    err = np.abs(times.astype(np.float32).astype(np.float64) - times).max()
    widths = (r.slot_end - r.slot_start) * scale
    shortest = widths[widths > 0].min() if (widths > 0).any() else 1.0
    return np.float32 if err <= 1e-3 * shortest else np.float64


def typed_array(values: np.ndarray) -> dict:
    """Plotly.js's base64 typed-array form, for attributes plotly.py would send as a JSON list.

    plotly.py encodes numpy arrays itself only for data-array attributes; ``base`` is typed
    "any", so it would cost ~10 bytes a bar as text instead of 4 as float32.
    """
    a = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<"))
    return {"dtype": a.dtype.str[1:], "bdata": base64.b64encode(a.tobytes()).decode("ascii")}


def decode_typed_array(spec) -> np.ndarray:
    """Inverse of ``typed_array`` (also accepts plain sequences), for tests and callers."""
    if isinstance(spec, dict):
        return np.frombuffer(base64.b64decode(spec["bdata"]), dtype="<" + spec["dtype"])
    return np.asarray(spec)


def _int_dtype(high: int) -> type:
    return np.int8 if high < 2**7 else np.int16 if high < 2**15 else np.int32


# --- Gantt -----------------------------------------------------------------------------------


def _top_halves(result) -> np.ndarray:
    """Which half of each overlapped pair is drawn on top: the forward one (else the first)."""
    top = result.kind == _F
    idx = np.flatnonzero(result.paired)
    if len(idx):
        first = np.ones(len(idx), dtype=bool)
        first[1:] = result.slot[idx[1:]] != result.slot[idx[:-1]]
        a, b = idx[first], idx[np.flatnonzero(first) + 1]
        same = top[a] == top[b]
        top[a[same]], top[b[same]] = True, False
    return top


def _hover(kind: Kind, paired: bool, chunk: int | None, unit: str = "") -> str:
    what = f"<b>{kind.value}</b>" + (" (half of an overlapped F&B pair)" if paired else "")
    where = "stage %{customdata[0]}" + (f" (chunk {chunk})" if chunk is not None else "")
    u = f" {unit or 'units'}"
    return (
        f"{what} · device %{{y}}<br>{where} · microbatch %{{customdata[1]}}"
        f"<br>start %{{customdata[2]:.7~g}}{u} · end %{{customdata[4]:.7~g}}{u}"
        f"<br>duration %{{customdata[3]:.7~g}}{u}<extra></extra>"
    )


def _pattern(chunk: int, chunks: int) -> dict | None:
    shape = CHUNK_PATTERNS[chunk % len(CHUNK_PATTERNS)] if chunks > 1 else ""
    if not shape:
        return None
    return dict(shape=shape, fillmode="overlay", fgcolor="#FFFFFF", fgopacity=0.55, size=8, solidity=0.25)


def _legend_only(name: str, group: str, marker: dict, **axes) -> dict:
    """A legend entry for something drawn on several traces (a chunk's pattern, the pairs' outline)."""
    kind, _, number = group.partition(" ")  # "chunk 1" or "overlapped"
    rank = LEGEND_RANK.get(kind, 1000) + (int(number) if number.isdigit() else 0)
    return dict(
        type="bar", orientation="h", name=name, legendgroup=group, legendrank=rank, x=[None], y=[None],
        marker=marker, hoverinfo="skip", **axes,
    )  # fmt: skip


def in_window(run: Run, window: tuple[float, float] | None) -> np.ndarray:
    """Which actions overlap the time window [t0, t1] (all of them for ``None``)."""
    r = run.result
    if window is None:
        return np.ones(len(r), dtype=bool)
    t0, t1 = window
    return (r.end > t0) & (r.start < t1) | (r.start == r.end) & (r.start >= t0) & (r.start <= t1)


def _bar_traces(
    run: Run,
    *,
    xaxis: str = "x",
    yaxis: str = "y",
    seen: set | None = None,
    span: float | None = None,
    keep: np.ndarray | None = None,
    scale: float = 1.0,
    unit: str = "",
) -> list[dict]:
    """Per kind and chunk present (and per half of overlapped pairs): the bars as one filled outline
    (``rects`` reads it back) and an invisible trace of hover points over them.

    One SVG path per trace instead of one per bar: at pp 8 × 64 microbatches (3,072 ZB-V ops) a
    redraw took about a third of the browser CPU of bar traces (``bench/bench_model_page.py``), and
    the chunk's fill pattern is one pattern per trace, not per bar. ``seen`` collects legend groups
    already shown, so one legend entry serves each kind, across chunks and across stacked charts.
    ``keep`` limits the bars to some actions (those of a zoomed-in window). ``scale`` multiplies
    every time shown (seconds to ms: 1e3), named ``unit`` in hover; ``span`` stays in the run's own time.
    """
    r = run.result
    seen = set() if seen is None else seen
    if keep is None:
        keep = np.ones(len(r), dtype=bool)
    labelled = int(keep.sum()) <= TEXT_LIMIT
    label_color = np.empty(len(r), dtype=object) if labelled else None
    label_y = np.zeros(len(r))
    lo, hi = _time_range([run]) if span is None else (0.0, span)
    px_per_time = LABEL_PLOT_PX / ((hi - lo) * scale) if hi > lo else 0.0
    tdt = _time_dtype(run, scale)
    start, end = r.start * scale, r.end * scale
    # Hover only: 7 significant digits are shown, so float32 always suffices (stage, mb < 2**24).
    custom = np.column_stack([r.stage, r.microbatch, start, end - start, end]).astype(np.float32)
    chunks = max(run.schedule.placement.chunks, 1)
    device_dtype = _int_dtype(run.schedule.devices)  # a whole bar's middle is its device's row
    paired = r.paired
    top = _top_halves(r) if paired.any() else paired
    halves = [(~paired, BAR_WIDTH, -BAR_WIDTH / 2), (paired & top, BAR_WIDTH / 2, -BAR_WIDTH / 2)]
    halves.append((paired & ~top, BAR_WIDTH / 2, 0.0))
    traces = []
    legend: list[dict] = []  # what the patterns and outlines mean, after the kinds
    axes = dict(xaxis=xaxis, yaxis=yaxis)
    for mask, bar_width, offset in halves:
        for kind in KINDS:
            is_pair = bar_width < BAR_WIDTH
            color = KIND_COLORS[kind]
            of_kind = mask & keep & (r.kind == KIND_INDEX[kind])
            for c in range(chunks):
                sel = np.flatnonzero(of_kind & (r.chunk == c)) if chunks > 1 else np.flatnonzero(of_kind)
                if not len(sel):
                    continue
                y0 = r.device[sel] + offset
                fill = dict(
                    type="scatter",
                    name=KIND_LABELS[kind],
                    legendgroup=kind.value,
                    legendrank=LEGEND_RANK[kind.value],
                    showlegend=kind.value not in seen,
                    fill="toself",
                    fillcolor=color,
                    hoverinfo="skip",
                    **axes,
                )
                pattern = _pattern(c, chunks)
                if pattern:
                    fill["fillpattern"] = pattern
                if is_pair:  # outlined, so each rectangle is its own closed piece (few: pairs are rare)
                    xs, ys = _rect_pieces(start[sel], end[sel], y0, y0 + bar_width)
                    fill.update(mode="lines", line=dict(PAIR_OUTLINE, simplify=False))
                else:
                    gap = 1.0 / px_per_time if px_per_time else 0.0
                    xs, ys = _rect_outline(start[sel], end[sel], y0, y0 + bar_width, gap)
                    fill.update(mode="lines", line=dict(width=0, shape="hv", simplify=False))
                fill.update(x=xs.astype(tdt), y=ys.astype(np.float32))
                at, offset_in_bar = _hover_points(start[sel], end[sel], px_per_time)
                hover = dict(
                    type="scatter",
                    mode="none",
                    name=KIND_LABELS[kind],
                    legendgroup=kind.value,
                    showlegend=False,
                    x=(start[sel][at] + offset_in_bar).astype(tdt),
                    y=(y0 + bar_width / 2)[at].astype(np.float32 if is_pair else device_dtype),
                    customdata=custom[sel][at],
                    hovertemplate=_hover(kind, is_pair, c if chunks > 1 else None, unit),
                    **axes,
                )
                seen.add(kind.value)
                traces += [fill, hover]
                if chunks > 1 and f"chunk {c}" not in seen:
                    seen.add(f"chunk {c}")
                    shape = CHUNK_PATTERNS[c % len(CHUNK_PATTERNS)]
                    swatch = dict(color="#8C8C8C", line=dict(width=0))
                    if pattern:
                        swatch["pattern"] = pattern
                    name = f"chunk {c}: {CHUNK_NAMES.get(shape, shape)}"
                    legend.append(_legend_only(name, f"chunk {c}", swatch, **axes))
                if is_pair and "overlapped" not in seen:
                    seen.add("overlapped")
                    outline = dict(color="#FFFFFF", line=PAIR_OUTLINE)
                    legend.append(_legend_only(PAIR_LABEL, "overlapped", outline, **axes))
                if label_color is not None:
                    label_color[sel] = _ink(color)
                    label_y[sel] = r.device[sel] + offset + bar_width / 2
    traces += sorted(legend, key=lambda t: t["legendgroup"])
    if label_color is not None:
        label = _label_trace(run, label_color, label_y, hi - lo, keep, scale, **axes)
        if label is not None:
            traces.append(label)
    return traces


# Hover points every HOVER_STEP_PX or less along a bar at the nominal plot width: with Plotly's 20 px
# hover distance, the cursor anywhere on a bar finds one of that bar's points (its own row's points are
# nearer than the next row's), still when zoomed in about 4× in the browser (the abstract view redraws a
# zoomed window, so its points are spread anew; the model view zooms in the browser). About 110 points
# a row more than one a bar.
HOVER_STEP_PX = 8


def _hover_points(start: np.ndarray, end: np.ndarray, px_per_time: float) -> tuple[np.ndarray, np.ndarray]:
    """Which bar each hover point belongs to and its offset from that bar's start: one point at the
    middle of a narrow bar, evenly spread points (at most HOVER_STEP_PX apart) along a wide one."""
    width = end - start
    count = np.maximum(1, np.ceil(width * px_per_time / HOVER_STEP_PX)).astype(np.int64)
    index = np.repeat(np.arange(len(start)), count)
    rank = np.arange(len(index)) - np.repeat(np.cumsum(count) - count, count)
    return index, width[index] * (rank + 0.5) / count[index]


def _rect_outline(x0, x1, y0, y1, gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Rectangles as ONE closed outline for a ``fill="toself"`` trace with ``line.shape="hv"``, drawn
    as one SVG path: two points a bar, its start and end (a path of None-separated pieces instead
    would cost Plotly a DOM element per piece).

    Row by row, from a point at the trace's earliest start on the row's bottom edge, each bar is the
    step up at (x0, top) and the step down at (x1, bottom); the row's last point returns along the
    bottom edge to its start, and the next row is reached straight down from there (the close goes
    straight back up). So every joining line is walked once each way and encloses nothing, and none
    runs slanted across the chart (a browser draws a faint line along a doubled slanted edge).
    A bar followed on its row by one of the same trace less than ``gap`` (one nominal pixel) later
    ends ``gap`` before it (shortened by at most a quarter), so that the two stay two bars, as
    separate bar elements did; every other bar keeps its exact extent.
    """
    order = np.lexsort((x0, y0))
    x0, x1, y0, y1 = x0[order], x1[order], y0[order], y1[order]
    x1 = x1.copy()
    near = np.flatnonzero((y0[1:] == y0[:-1]) & (x0[1:] - x1[:-1] < gap))  # less than a pixel apart
    x1[near] = np.maximum(np.minimum(x1[near], x0[near + 1] - gap), x1[near] - 0.25 * (x1[near] - x0[near]))
    left = x0.min() if len(x0) else 0.0
    xs, ys = [], []
    rows = np.flatnonzero(np.r_[True, y0[1:] != y0[:-1], True])
    for a, b in zip(rows[:-1], rows[1:]):
        bottom = y1[a]
        xs += [[left], np.stack([x0[a:b], x1[a:b]], axis=1).ravel(), [left]]
        ys += [[bottom], np.stack([y0[a:b], y1[a:b]], axis=1).ravel(), [bottom]]
    return np.concatenate(xs), np.concatenate(ys)


def _rect_pieces(x0, x1, y0, y1) -> tuple[np.ndarray, np.ndarray]:
    """Rectangles as closed pieces separated by gaps (NaN), for outlined bars: no joining lines."""
    gap = np.full(len(x0), np.nan)
    xs = np.stack([x0, x1, x1, x0, x0, gap], axis=1).ravel()[:-1]
    ys = np.stack([y0, y0, y1, y1, y0, gap], axis=1).ravel()[:-1]
    return xs, ys


def rects(trace) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rectangles (x0, x1, y0, y1) of a Gantt chart's filled bar trace (plotly object or dict),
    in drawing order: the inverse of ``_rect_outline`` / ``_rect_pieces``, for tests and callers."""
    get = trace.get if isinstance(trace, dict) else lambda k: getattr(trace, k)
    xs = decode_typed_array(get("x")).astype(float)
    ys = decode_typed_array(get("y")).astype(float)
    if np.isnan(xs).any():  # pieces: 5 corners and a gap each
        xs, ys = np.append(xs, np.nan).reshape(-1, 6), np.append(ys, np.nan).reshape(-1, 6)
        return xs[:, 0], xs[:, 1], ys[:, 0], ys[:, 2]
    out: list[list[float]] = [[], [], [], []]
    i = 0
    while i < len(xs):  # a row: its start point on the bottom edge, (x0, top) and (x1, bottom) a bar, its end
        bottom, k = ys[i], i + 1
        while k + 1 < len(xs) and ys[k] != bottom:
            for column, value in zip(out, (xs[k], xs[k + 1], ys[k], ys[k + 1])):
                column.append(value)
            k += 2
        i = k + 1
    return tuple(np.asarray(c, dtype=float) for c in out)


ITERATION_COLOR = "#222222"
ITERATION_LABEL = "iteration end"


def iteration_trace(run: Run, scale: float = 1.0, unit: str = "", **axes) -> dict | None:
    """Where each iteration ends on each device (its last backward op, from ``ppviz.iterations``): a
    short vertical line across that device's row, one legend entry; None for a single iteration.

    With a flush every device then waits for the slowest one (the optimizer step); without one
    (2BW) each device switches weight version at its own line. The last iteration's end is the run's.
    """
    k, _ = iterations(run.schedule)
    if k < 2:
        return None
    ends = iteration_ends(run.result)[:-1]
    xs: list = []
    ys: list = []
    text: list = []
    for i, row in enumerate(ends):
        for d, t in enumerate(row):
            if not np.isfinite(t):
                continue
            tip = f"iteration {i} ends on device {d} at t {t * scale:.7g}{_suffix(unit)}"
            xs += [float(t * scale), float(t * scale), None]
            ys += [d - 0.5, d + 0.5, None]
            text += [tip, tip, None]
    return dict(
        type="scatter",
        mode="lines",
        name=f"{ITERATION_LABEL} ({k} iterations)",
        x=xs,
        y=ys,
        text=text,
        hoverinfo="text",
        line=dict(color=ITERATION_COLOR, width=2),
        legendgroup="iterations",
        legendrank=LEGEND_RANK["iterations"],
        **axes,
    )


OPTIMIZER_COLOR = "#A0A0A0"
OPTIMIZER_LABEL = "optimizer step (exposed DP sync + optimizer)"


def optimizer_trace(run: Run, scale: float = 1.0, unit: str = "", window=None, **axes) -> dict | None:
    """The optimizer steps the simulator placed between iterations (``ppviz.iterations``, real units
    only): one grey bar per device and boundary, one legend entry; None when there are none (the
    abstract view). ``window`` (t0, t1) keeps the steps overlapping it, in the run's own time."""
    st = optimizer_steps(run.result)
    keep = np.ones(len(st.device), dtype=bool)
    if window is not None:
        keep = (st.end > window[0]) & (st.start < window[1])
    if not keep.any():
        return None
    start, end = st.start[keep] * scale, st.end[keep] * scale
    u = f" {unit or 'units'}"
    return dict(
        type="bar",
        orientation="h",
        name=OPTIMIZER_LABEL,
        legendgroup="optimizer",
        legendrank=LEGEND_RANK["optimizer"],
        base=start.tolist(),
        x=(end - start).tolist(),
        y=st.device[keep].tolist(),
        width=BAR_WIDTH,
        offset=-BAR_WIDTH / 2,
        marker=dict(color=OPTIMIZER_COLOR, line=dict(width=0)),
        customdata=np.column_stack([st.iteration[keep], start, end, end - start]).tolist(),
        hovertemplate=(
            "<b>optimizer step</b> after iteration %{customdata[0]} · device %{y}"
            f"<br>start %{{customdata[1]:.7~g}}{u} · end %{{customdata[2]:.7~g}}{u}"
            f"<br>duration %{{customdata[3]:.7~g}}{u}<extra></extra>"
        ),
        **axes,
    )


def _ink(background: str) -> str:
    """Dark text on light bars, white on dark ones (relative luminance threshold)."""
    red, green, blue = (int(background[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return "#1A1A1A" if 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.55 else "#FFFFFF"


def _label_trace(
    run: Run, colors: np.ndarray, y: np.ndarray, span: float, keep: np.ndarray, scale: float = 1.0, **axes
) -> dict | None:
    """Microbatch numbers as one text trace, only on bars wide enough to hold them.

    Text inside bar traces makes Plotly measure every label at each redraw (150-400 ms at 512
    ops in Chromium); one scatter trace of the labels that fit a nominal plot width draws in a
    fraction of that. Fit is judged at LABEL_PLOT_PX wide, about the page's chart.
    """
    r = run.result
    if span <= 0:
        return None
    text = r.microbatch.astype(str)
    px = (r.end - r.start) * LABEL_PLOT_PX / span
    # 9 px text where it fits, smaller (down to 6.5 px) for numbers of more digits, so that 10 and up
    # show on the bars where 0-9 do (a digit is about 0.62 of the font size wide, plus 3 px of margin)
    size = np.minimum(9.0, (px - 3) / (0.62 * np.char.str_len(text)))
    fits = np.flatnonzero(keep & (size >= LABEL_MIN_PX))
    if not len(fits):
        return None
    sizes = np.floor(size[fits] * 2) / 2
    return dict(
        type="scatter",
        mode="text",
        x=((r.start + r.end) * (scale / 2))[fits].astype(np.float32),
        y=y[fits].astype(np.float32),
        text=text[fits].tolist(),
        textfont=dict(size=sizes.tolist() if (sizes < 9).any() else 9, color=colors[fits].tolist()),
        hoverinfo="skip",
        showlegend=False,
        name="microbatch",
        **axes,
    )


def _time_range(runs: Sequence[Run]) -> list[float]:
    lo = min(float(run.result.slot_start.min()) for run in runs)
    hi = max(float(run.result.slot_end.max()) for run in runs)
    return [lo, hi if hi > lo else lo + 1.0]


def _suffix(unit: str) -> str:
    return f" {unit}" if unit else ""


def _time_title(unit: str) -> dict:
    """The time axis's title with its unit: "time (ms)" in real units, "time (units)" in the cost
    convention's own units (those of the F, B and W times)."""
    return dict(text=f"time ({unit or 'units'})")


def _scaled(pair: Sequence[float], scale: float) -> list[float]:
    return [float(t) * scale for t in pair]


def _device_axis(devices: int, height: int | None = None, **extra) -> dict:
    """Devices top to bottom: device 0 at the top row; a tick label every 14 px or more of a chart
    ``height`` px tall (every device up to 32 when the height is not given)."""
    step = 1 if devices <= 32 else int(np.ceil(devices / 32))
    if height is not None:
        row = max(height - _MARGIN["t"] - _MARGIN["b"], 1) / devices
        step = max(1, int(np.ceil(14 / row)))
    return dict(
        title=dict(text="device"),
        range=[devices - 0.5, -0.5],
        tickmode="linear",
        tick0=0,
        dtick=step,
        zeroline=False,
        showgrid=False,
        **extra,
    )


def gantt_height(devices: int, *, pairs: bool = False) -> int:
    """Pixels for a Gantt chart of ``devices`` rows plus room for axes and legend.

    28 px a row; 40 with overlapped pairs, so that a half-height bar still holds a label.
    """
    return int(min(120 + (40 if pairs else 28) * devices, 1400))


def _title(run: Run, title: str | None) -> str:
    if title is not None:
        return title
    s = run.schedule
    return f"{s.name} · {s.devices} devices · {s.microbatches} microbatches"


def _figure(data: list[dict], layout: dict) -> go.Figure:
    """Wrap ready dicts in a Figure, unvalidated: they are built here in plotly.js's own terms, and
    validation took more than half of a page redraw's server CPU (8×32: 28 → 12 ms a request).

    The empty template (what plotly's "none" resolves to) keeps plotly's default theme (about
    9 kB of JSON) out of every figure; the few styles ppviz wants are set in the layout itself.
    """
    layout = {**layout, "template": _NO_TEMPLATE, "font": dict(family="system-ui, sans-serif", size=12)}
    if getattr(_PLAIN, "on", False):
        return {"data": data, "layout": layout}
    return go.Figure(dict(data=data, layout=layout), _validate=False)


_PLAIN = threading.local()


@contextmanager
def plain() -> Iterator[None]:
    """Within this block (in this thread) the figure functions return plain ``{"data", "layout"}``
    dicts (numpy arrays left in them), not ``go.Figure``: building the plotly objects took two
    thirds of a web redraw's server CPU (8×32 Gantt + memory: 17 ms → 5.5 ms)."""
    was = getattr(_PLAIN, "on", False)
    _PLAIN.on = True
    try:
        yield
    finally:
        _PLAIN.on = was


_NO_TEMPLATE = {"data": {"scatter": [{"type": "scatter"}]}}


def gantt(
    run: Run,
    *,
    title: str | None = None,
    height: int | None = None,
    window: tuple[float, float] | None = None,
    time_scale: float = 1.0,
    time_unit: str = "",
) -> go.Figure:
    """Devices on y (device 0 on top), time on x; a few bar traces, however many ops.

    With ``window`` (t0, t1), only the ops overlapping it are drawn, on that time range: the
    page's detail view of a zoomed-in overview. A run timed in seconds is drawn in ms with
    ``time_scale=1e3, time_unit="ms"`` (``window`` stays in the run's own time).
    """
    p = run.schedule.devices
    time_range = _window_range(run, window)
    keep = in_window(run, window)
    text = _title(run, title)
    if window is not None:
        text += f" · {int(keep.sum()):,} ops in view"
    layout = dict(
        title=dict(text=text, x=0, xanchor="left", font=dict(size=14)),
        height=height or gantt_height(p, pairs=bool(run.result.paired.any())),
        barmode="overlay",
        margin=_MARGIN,
        legend=_LEGEND,
        xaxis=dict(
            title=_time_title(time_unit), range=_scaled(time_range, time_scale), zeroline=False, gridcolor=_GRID
        ),
        yaxis=_device_axis(p, height),
        plot_bgcolor="white",
        hovermode="closest",
    )
    traces = _bar_traces(run, keep=keep, span=time_range[1] - time_range[0], scale=time_scale, unit=time_unit)
    step = optimizer_trace(run, time_scale, time_unit, window)
    traces += [step] if step else []
    ends = iteration_trace(run, time_scale, time_unit)
    traces += [ends] if ends else []
    _title_band(layout, traces)
    return _figure(traces, layout)


def _title_band(layout: dict, traces: list[dict]) -> None:
    """The title (left) and the modebar (right) in a band at the top, the legend's rows under it.

    The legend is placed from the figure's top (``yref="container"``), so plotly reserves its height
    above the plot however many rows it wraps to at the page's width; placed from the plot's top, a
    legend of more rows than estimated ran under the title and its last entries under the modebar.
    The height grows by the rows estimated, so that the plot keeps about its size.
    """
    height = layout["height"] + _legend_room(traces)
    layout.update(height=height, margin=dict(layout.get("margin", _MARGIN), t=TITLE_BAND_PX))
    layout["legend"] = _band_legend(height)
    layout["title"].update(yref="container", y=1, yanchor="top", pad=dict(t=8))


def _band_legend(height: float) -> dict:
    """A horizontal legend whose first row starts under the title band (clear of the modebar)."""
    return dict(_LEGEND, yref="container", y=1 - TITLE_BAND_PX / height, yanchor="top")


def _legend_room(traces: list[dict], width: float = LABEL_PLOT_PX - 40) -> int:
    """Pixels to add above the plot for the rows past the first of a horizontal legend (estimated at
    ~6.2 px a character plus the symbol, wrapped at about the page's plot width)."""
    rows, used = 1, 0.0
    for t in traces:
        if t.get("showlegend", True) is False or t.get("type") == "heatmap":
            continue
        item = 46 + 6.2 * len(str(t.get("name", "")))
        if used and used + item > width:
            rows, used = rows + 1, 0.0
        used += item
    return 19 * (rows - 1)


def _window_range(run: Run, window: tuple[float, float] | None) -> list[float]:
    if window is None:
        return _time_range([run])
    t0, t1 = (float(t) for t in window)
    if not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0):
        raise ValueError(f"a time window needs finite t0 < t1 (got {window!r})")
    return [t0, t1]


# --- memory ----------------------------------------------------------------------------------


def device_colors(devices: int) -> list[str]:
    """One line colour per device along a colour-blind-safe sequential scale."""
    return list(_device_colors(devices))


@cache
def _device_colors(devices: int) -> tuple[str, ...]:
    """Sampled once per device count (plotly's sampling took a fifth of a web redraw's CPU)."""
    if devices == 1:
        return (KIND_COLORS[Kind.F],)
    return tuple(sample_colorscale("Viridis", [0.9 * i / (devices - 1) for i in range(devices)]))


def memory(
    run: Run,
    *,
    limit: float | None = None,
    title: str | None = None,
    height: int | None = None,
    time_scale: float = 1.0,
    time_unit: str = "",
    stage_sizes: Sequence[float] | None = None,
    base: Sequence[float] | None = None,
    scale: float = 1.0,
    unit: str = "units",
    capacity: float | None = None,
    band_over: int | None = None,
    lines: Sequence[int] | None = None,
    device_legend: bool = True,
) -> go.Figure:
    """Activation per device over time as step lines, each device's peak marked.

    With ``band_over`` and more devices than that, the devices are drawn as one min–max band with
    lines for the ``lines`` devices over it (32 lines could not be told apart; by default those of the
    highest and the lowest peak, ``band_lines``); every device's peak stays marked.
    ``memory_traces`` says how many traces precede a limit line.

    Real units: ``stage_sizes`` (one microbatch's activation per stage, e.g. bytes), ``base`` (each
    device's static memory, drawn under its curve), ``scale`` and ``unit`` (bytes to GB: 1e-9,
    "GB"), ``capacity`` (a line, e.g. the GPU's HBM) and ``time_scale``/``time_unit`` as in gantt.
    ``limit`` and ``capacity`` are in the unscaled unit of the curves.
    Without ``device_legend`` the lines of up to ``band_over`` devices have no legend entries (their
    colour goes dark to light with the device; hover names each): eight entries were a tenth of a
    redraw of the model view (``bench/bench_model_page.py``).
    """
    curves = _memory.activation(run.result, None if stage_sizes is None else np.asarray(stage_sizes, dtype=float))
    p = run.schedule.devices
    static = np.zeros(p) if base is None else np.asarray(base, dtype=float)
    if static.shape != (p,):
        raise ValueError(f"base needs one static size per device ({p}), got shape {static.shape}")
    span = _time_range([run])
    tdt = _time_dtype(run, time_scale)
    colors = device_colors(p)
    tu, what = _suffix(time_unit), "memory" if base is not None else "activation"
    data = []
    drawn = range(p)
    banded = band_over is not None and p > band_over
    if banded:
        drawn = _checked_lines(lines, p) if lines is not None else band_lines(curves.peak + static)
        data += _band(curves, static, span, scale, time_scale, tdt, unit, tu)
    for d in drawn:
        t, v = curves.times[d], curves.values[d]
        t, v = np.append(t, span[1]), np.append(v, v[-1])  # hold the last level to the end
        data.append(
            dict(
                type="scatter",
                mode="lines",
                name=f"device {d}" + (_band_role(d, curves.peak + static) if banded else ""),
                showlegend=banded or (p <= 8 and device_legend),  # past 8 a legend would crowd the title
                x=(t * time_scale).astype(tdt),
                y=((v + static[d]) * scale).astype(np.float32),
                line=dict(shape="hv", width=1.5, color=colors[d]),
                hovertemplate=f"device {d}<br>t %{{x:.7~g}}{tu}: %{{y:.4~g}} {unit}<extra></extra>",
            )
        )
    data.append(
        dict(
            type="scatter",
            mode="markers",
            name="peak",
            x=(curves.peak_time * time_scale).astype(tdt),
            y=((curves.peak + static) * scale).astype(np.float64),
            customdata=np.arange(p, dtype=_int_dtype(p)),
            marker=dict(symbol="diamond", size=9, color=colors, line=dict(width=1, color="#333333")),
            hovertemplate=f"device %{{customdata}} peak %{{y:.4~g}} {unit} at t %{{x:.7~g}}{tu}<extra></extra>",
        )
    )
    for label, level, color in (("limit", limit, "#C00000"), ("capacity", capacity, "#7A0000")):
        if level is None:
            continue
        shown = level * scale
        data.append(
            dict(
                type="scatter",
                mode="lines",
                name=f"{label} {shown:g}" + ("" if unit == "units" else f" {unit}"),
                x=_scaled(span, time_scale),
                y=[shown, shown],
                line=dict(color=color, dash="dash" if label == "limit" else "dot", width=2),
                hovertemplate=f"memory {label} {shown:g} {unit}<extra></extra>",
            )
        )
    default_title = "memory per device: static + activation" if base is not None else "activation memory per device"
    layout = dict(
        title=dict(text=title or default_title, x=0, xanchor="left", font=dict(size=14)),
        height=height or 320,
        margin=_MARGIN,
        legend=_LEGEND,
        xaxis=dict(title=_time_title(time_unit), range=_scaled(span, time_scale), zeroline=False, gridcolor=_GRID),
        yaxis=dict(title=dict(text=f"{what} ({unit})"), rangemode="tozero", gridcolor=_GRID),
        plot_bgcolor="white",
        hovermode="closest",
    )
    _title_band(layout, data)
    return _figure(data, layout)


def memory_traces(run: Run, band_over: int | None = None, lines: Sequence[int] | None = None) -> int:
    """How many traces ``memory`` (abstract units) draws before its limit line: lines (or the band and
    its lines) and the peaks."""
    p = run.schedule.devices
    if band_over is not None and p > band_over:
        peaks = np.asarray(run.metrics.peak_activation, dtype=float)
        return 2 + len(_checked_lines(lines, p) if lines is not None else band_lines(peaks)) + 1
    return p + 1


def band_lines(peaks: Sequence[float]) -> list[int]:
    """The devices drawn as lines over the band by default: the highest peak and the lowest (first of ties)."""
    peaks = np.asarray(peaks, dtype=float)
    return sorted({int(np.argmax(peaks)), int(np.argmin(peaks))})


def _checked_lines(lines: Sequence[int], devices: int) -> list[int]:
    """Chosen devices in order, each once; a device that is not there is an error saying which."""
    out = sorted({int(d) for d in lines})
    if out and not 0 <= out[0] <= out[-1] < devices:
        raise ValueError(f"lines: devices {out} are not all among the {devices} devices (0–{devices - 1})")
    return out


def _band_role(d: int, peaks: np.ndarray) -> str:
    """What sets a line apart: the highest or lowest peak, or nothing for another chosen device."""
    if d == int(np.argmax(peaks)):
        return " (highest peak)"
    return " (lowest peak)" if d == int(np.argmin(peaks)) else ""


def _band(curves, static, span, scale: float, time_scale: float, tdt, unit: str, tu: str) -> list[dict]:
    """The min and max over devices of their memory at every moment, as a filled step band."""
    grid = np.unique(np.concatenate([*curves.times, [span[1]]]))
    low = np.full(len(grid), np.inf)
    high = np.full(len(grid), -np.inf)
    for d, (t, v) in enumerate(zip(curves.times, curves.values)):
        at = np.searchsorted(t, grid, side="right") - 1
        level = np.where(at >= 0, v[np.maximum(at, 0)], 0.0) + static[d]
        np.minimum(low, level, out=low)
        np.maximum(high, level, out=high)
    x = (grid * time_scale).astype(tdt)
    name = f"min–max of {len(curves.times)} devices"
    common = dict(type="scatter", mode="lines", x=x, legendgroup="band")
    return [
        dict(common, name="min", y=(low * scale).astype(np.float32), showlegend=False,
             line=dict(shape="hv", width=0.5, color="#8FA3C8"),
             hovertemplate=f"lowest device at t %{{x:.7~g}}{tu}: %{{y:.4~g}} {unit}<extra></extra>"),
        dict(common, name=name, y=(high * scale).astype(np.float32), fill="tonexty",
             fillcolor="rgba(120, 145, 200, 0.3)", line=dict(shape="hv", width=0.5, color="#8FA3C8"),
             hovertemplate=f"highest device at t %{{x:.7~g}}{tu}: %{{y:.4~g}} {unit}<extra></extra>"),
    ]  # fmt: skip


# --- raster overview -------------------------------------------------------------------------

OVERVIEW_CLASSES = ("idle", *(k.value for k in KINDS), "overlapped")
# About one time bin per pixel of the page's plot (~770 px at 1280 wide): 1,500 bins squeezed into
# it were resampled by the browser into a moiré of stripes.
OVERVIEW_BINS = 760
OVERVIEW_COLORS = (IDLE_COLOR, *(KIND_COLORS[k] for k in KINDS), PAIR_COLOR)


def occupancy(run: Run, bins: int, window: tuple[float, float] | None = None) -> tuple[np.ndarray, float, float]:
    """Time each device spends in each class within each of ``bins`` equal time bins.

    The bins cover the whole run, or the time ``window`` (t0, t1). Returns ``(occ, t0, width)``:
    ``occ[device, class, bin]`` as a fraction of the bin (classes as in ``OVERVIEW_CLASSES``, idle
    included), the first edge and the bin width. Each slot adds its two partial end bins directly
    and its whole bins through a difference array, so the cost is linear in slots plus bins.
    """
    if bins < 1:
        raise ValueError(f"an overview needs at least one time bin (got {bins})")
    r = run.result
    p, n_cls = run.schedule.devices, len(OVERVIEW_CLASSES)
    t0, t1 = _window_range(run, window)
    width = (t1 - t0) / bins
    cls = np.zeros(len(r.slot_start), dtype=np.int64)
    cls[r.slot] = r.kind + 1
    cls[r.slot[r.paired]] = n_cls - 1
    a = np.clip((r.slot_start - t0) / width, 0, bins)
    b = np.clip((r.slot_end - t0) / width, 0, bins)
    ia = np.minimum(np.floor(a).astype(np.int64), bins - 1)
    ib = np.minimum(np.floor(b).astype(np.int64), bins - 1)
    row = (r.slot_device * n_cls + cls) * (bins + 1)
    size = p * n_cls * (bins + 1)
    one = ia == ib
    many = ~one
    part = np.zeros(size)
    part += np.bincount(row[one] + ia[one], weights=(b - a)[one], minlength=size)
    part += np.bincount(row[many] + ia[many], weights=(ia + 1 - a)[many], minlength=size)
    part += np.bincount(row[many] + ib[many], weights=(b - ib)[many], minlength=size)
    whole = np.bincount(row[many] + ia[many] + 1, minlength=size) - np.bincount(row[many] + ib[many], minlength=size)
    occ = (part + np.cumsum(whole.reshape(-1, bins + 1), axis=1).ravel()).reshape(p, n_cls, bins + 1)[:, :, :bins]
    occ[:, 0, :] = np.clip(1.0 - occ[:, 1:, :].sum(axis=1), 0.0, 1.0)
    return occ, t0, width


def _heat_trace(
    run: Run,
    bins: int,
    *,
    xaxis: str = "x",
    yaxis: str = "y",
    showscale: bool = True,
    window: tuple[float, float] | None = None,
    scale: float = 1.0,
    unit: str = "",
) -> dict:
    occ, t0, width = occupancy(run, bins, window)
    t0, width = t0 * scale, width * scale
    top = occ.argmax(axis=1)
    present = [i for i in range(len(OVERVIEW_CLASSES)) if (top == i).any()]  # the colour bar names only these
    index = np.zeros(len(OVERVIEW_CLASSES), dtype=np.int8)
    index[present] = np.arange(len(present))
    n_cls = len(present)
    steps = []
    for i, c in enumerate(present):
        steps += [[i / n_cls, OVERVIEW_COLORS[c]], [(i + 1) / n_cls, OVERVIEW_COLORS[c]]]  # one flat step each
    names = [OVERVIEW_CLASSES[c] for c in present]
    return dict(
        type="heatmap",
        z=index[top],
        x0=t0 + width / 2,
        dx=width,
        y0=0,
        dy=1,
        zmin=-0.5,
        zmax=n_cls - 0.5,
        colorscale=steps,
        customdata=np.rint(100 * (1.0 - occ[:, 0, :])).astype(np.uint8),
        showscale=showscale,
        colorbar=dict(tickmode="array", tickvals=list(range(n_cls)), ticktext=names, thickness=12),
        hovertemplate=f"device %{{y}} · t %{{x:.6~g}}{_suffix(unit)}<br>busy %{{customdata}}%<extra></extra>",
        xaxis=xaxis,
        yaxis=yaxis,
    )


def overview(
    run: Run,
    *,
    bins: int | None = None,
    window: tuple[float, float] | None = None,
    note: str = "",
    time_scale: float = 1.0,
    time_unit: str = "",
    height: int | None = None,
) -> go.Figure:
    """Raster of devices × time bins, each cell the class (kind, overlapped or idle) filling most of it.

    Its size depends on devices × bins only, so it draws in a moment at any number of ops. With
    ``window`` (t0, t1) the bins cover that time range only, so a zoomed-in view gets finer
    cells. ``note`` is appended to the title (the page says how to get bars).
    """
    p = run.schedule.devices
    layout = dict(
        title=dict(text=_title(run, None) + " · overview" + note, x=0, xanchor="left", font=dict(size=14)),
        height=height or gantt_height(p),
        margin=_MARGIN,
        xaxis=dict(
            title=_time_title(time_unit),
            range=_scaled(_window_range(run, window), time_scale),
            zeroline=False,
            gridcolor=_GRID,
        ),
        yaxis=_device_axis(p, height),
        plot_bgcolor="white",
    )
    ends = iteration_trace(run, time_scale, time_unit)
    step = optimizer_trace(run, time_scale, time_unit, window)
    if ends or step:
        layout["legend"] = _LEGEND
    heat = _heat_trace(run, OVERVIEW_BINS if bins is None else bins, window=window, scale=time_scale, unit=time_unit)
    return _figure([heat] + ([step] if step else []) + ([ends] if ends else []), layout)


# --- one figure of two charts ----------------------------------------------------------------

_LEGEND_ROW_PX = 19  # a row of a horizontal legend (font 12), as _legend_room counts
_LEGEND_PAD_PX = 10  # a legend's padding above and below its rows
_TICKS_PX = 22  # an x axis's tick labels without a title
_BLOCK_TITLE_PX = 22  # a chart's title over its legend, inside a stacked figure


def _legend_px(traces: list[dict], width: float = LABEL_PLOT_PX - 40) -> int:
    """Height of the horizontal legend of ``traces`` wrapped at ``width`` px (0 when none is shown)."""
    shown = any(t.get("showlegend", True) is not False and t.get("type") != "heatmap" for t in traces)
    return _LEGEND_ROW_PX + _LEGEND_PAD_PX + _legend_room(traces, width) if shown else 0


def _plot_px(fig: dict) -> int:
    """The plot area of a chart built here: its height less the margins and the legend over the plot."""
    layout = fig["layout"]
    margin = layout.get("margin", _MARGIN)
    return int(layout["height"] - margin["t"] - margin["b"] - _legend_px(fig["data"]))


def _legend_title(layout: dict) -> dict:
    title = layout.get("legend", {}).get("title")
    return {"title": title} if title else {}


def stacked(top: dict, bottom: dict) -> go.Figure:
    """Two charts of one run on one time axis, in one figure: ``top`` (a Gantt or its overview) over
    ``bottom`` (its memory chart), each keeping its plot's height, legend and title.

    One plot instead of two: a redraw in the browser pays plotly's fixed cost of a plot once (the
    model view's redraw, ``bench/bench_model_page.py``), and a zoom on either chart zooms both
    (the bottom time axis ``matches`` the top). Takes the plain dicts built under ``plain()``.
    """
    top_data, bottom_data = list(top["data"]), [dict(t, xaxis="x2", yaxis="y2") for t in bottom["data"]]
    for trace in bottom_data:
        trace["legend"] = "legend2"
    top_plot, bottom_plot = _plot_px(top), _plot_px(bottom)
    # wrapped at a narrow plot's width (1280 px screens, an overview's colour bar): on the bottom
    # chart's top, a row more than estimated would run into its title
    bottom_legend = _legend_px(bottom_data, width=640)
    gap = _TICKS_PX + _BLOCK_TITLE_PX + bottom_legend  # the top's tick labels, then the bottom's title and legend
    top_legend = _legend_px(top_data)
    # The top legend, placed from the figure's top under the title band (see _title_band), reserves
    # the band and itself; with a legend placed on the plot area (the bottom's), plotly adds that to
    # the top margin rather than taking the larger, so the margin is 0 under a top legend.
    margin = dict(_MARGIN, t=0 if top_legend else TITLE_BAND_PX)
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
        legend=_band_legend(height),
        legend2=dict(_LEGEND, y=split, yanchor="bottom", **_legend_title(bl)),  # over the bottom chart, under its title
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
    return _figure(top_data + bottom_data, layout)


# --- comparison ------------------------------------------------------------------------------


def _gantt_block(run: Run, data: list, seen: set, span: float, max_bars, time_scale, time_unit, **axes) -> None:
    """One run's Gantt among stacked ones (appended to ``data``): its bars, or an overview past
    ``max_bars``, then its optimizer steps and iteration lines, each named once in the legend."""
    if max_bars is not None and len(run.result) > max_bars:
        first_heat = not any(t["type"] == "heatmap" for t in data)
        data.append(_heat_trace(run, OVERVIEW_BINS, showscale=first_heat, scale=time_scale, unit=time_unit, **axes))
    else:
        data += _bar_traces(run, seen=seen, span=span, scale=time_scale, unit=time_unit, **axes)
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
) -> go.Figure:
    """2–4 Gantt charts stacked on one shared time axis, row heights in proportion to devices.

    A run with more than ``max_bars`` ops (no limit by default) is drawn as its raster overview.
    ``time_scale``/``time_unit`` as in gantt.
    """
    runs = list(runs)
    if not 1 <= len(runs) <= 4:
        raise ValueError(f"compare draws 1 to 4 runs (got {len(runs)})")
    titles = list(titles) if titles is not None else [_title(run, None) for run in runs]
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
    lo, hi = _time_range(runs)
    for i, run in enumerate(runs):
        axes = dict(xaxis=f"x{'' if i == 0 else i + 1}", yaxis=f"y{'' if i == 0 else i + 1}")
        _gantt_block(run, data, seen, hi - lo, max_bars, time_scale, time_unit, **axes)
    layout = fig.layout.to_plotly_json()
    for i, p in enumerate(devices):
        layout[f"yaxis{'' if i == 0 else i + 1}"].update(_device_axis(p))
    span = _scaled(_time_range(runs), time_scale)
    for i in range(rows):
        layout[f"xaxis{'' if i == 0 else i + 1}"].update(range=span, zeroline=False, gridcolor=_GRID)
    layout[f"xaxis{'' if rows == 1 else rows}"]["title"] = _time_title(time_unit)
    for annotation in layout["annotations"]:
        annotation.update(x=0, xanchor="left", font=dict(size=13))
    # the modebar's band, the legend (rows estimated at a laptop's plot width: the first schedule's
    # title sits above its plot, where a legend row more than estimated would run into it), the title
    top = TITLE_BAND_PX + 24 + _legend_room(data, width=700) + 20
    height = min(sum(gantt_height(p, pairs=pairs) - 40 for p, pairs in zip(devices, with_pairs)) + top - 10, 2400)
    layout.update(
        height=height,
        barmode="overlay",
        margin=dict(_MARGIN, t=top),
        legend=dict(_band_legend(height), tracegroupgap=0),
        plot_bgcolor="white",
        hovermode="closest",
    )
    return _figure(data, layout)


# --- standalone page -------------------------------------------------------------------------


def to_html(
    run: Run,
    *,
    limit: float | None = None,
    max_bars: int = HTML_GANTT_LIMIT,
    gantt_kwargs: dict | None = None,
    memory_kwargs: dict | None = None,
    facts: Sequence[tuple[str, str]] | None = None,
) -> str:
    """A self-contained page (plotly.js inlined, no network) with the Gantt and memory charts.

    Past ``max_bars`` ops the Gantt is replaced by the raster overview, which a browser draws at
    once; the exact times are in ``ppviz simulate --csv``. Real units: ``gantt_kwargs`` and
    ``memory_kwargs`` as ``Estimate.gantt_kwargs()`` / ``memory_kwargs()`` give them (ms, GB,
    static base, capacity line), and ``facts`` (label, value) replace the abstract run's.
    """
    big = len(run.result) > max_bars
    gk = gantt_kwargs or {}
    top = overview(run, **gk) if big else gantt(run, **gk)
    config = {"displaylogo": False, "toImageButtonOptions": {"format": "svg"}}
    first = top.to_html(full_html=False, include_plotlyjs=True, config=config)
    mem = memory(run, limit=limit, **(memory_kwargs or {}))
    second = mem.to_html(full_html=False, include_plotlyjs=False, config=config)
    m = run.metrics
    if facts is None:
        facts = [
            ("makespan", f"{m.makespan:.6g}"),
            ("bubble", f"{m.bubble_fraction:.2%}"),
            ("longest span", f"{max(m.span):.6g}"),
            ("peak activation", f"{max(m.peak_activation):.4g} units"),
            ("ops", f"{len(run.result):,}"),
        ]
        if m.formula_bubble_fraction is not None:
            facts.insert(2, ("formula bubble", f"{m.formula_bubble_fraction:.2%}"))
    cells = "".join(f"<div><b>{html.escape(v)}</b><span>{html.escape(k)}</span></div>" for k, v in facts)
    note = (
        f"<p class='note'>{len(run.result):,} ops: drawn as an overview (each cell shows what fills most of it).</p>"
        if big
        else ""
    )
    name = html.escape(_title(run, None))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ppviz · {name}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }}
h1 {{ font-size: 1.3rem; margin: 0 0 .8rem; }}
.facts {{ display: flex; gap: 1.5rem; flex-wrap: wrap; margin-bottom: .8rem; }}
.facts div {{ display: flex; flex-direction: column; }}
.facts b {{ font-size: 1.2rem; }}
.facts span, .note {{ color: #666; font-size: .85rem; }}
</style></head>
<body>
<h1>ppviz · {name}</h1>
<div class="facts">{cells}</div>
{note}
{first}
{second}
</body></html>
"""


# --- real units: iteration breakdown and the layout search --------------------------------

BREAKDOWN_COLORS = ("#0072B2", "#56B4E9", "#CC79A7", "#BBBBBB", "#E69F00", "#009E73", "#D55E00", "#F0E442")


def tradeoff(
    x: Sequence[float],
    y: Sequence[float],
    *,
    labels: Sequence[str],
    front: Sequence[bool],
    capacity: float | None = None,
    x_unit: str = "s",
    y_unit: str = "GB",
    title: str | None = None,
) -> go.Figure:
    """Iteration time (x) against peak memory (y), one point per layout, the Pareto front joined
    and marked, and the capacity as a line. Values are drawn as given (already in their units)."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    on = np.asarray(front, dtype=bool)
    tip = "%{text}<br>iteration %{x:.4~g} " + x_unit + "<br>peak %{y:.4~g} " + y_unit + "<extra></extra>"
    data = [
        dict(
            type="scatter",
            mode="markers",
            name="layouts",
            x=xs[~on],
            y=ys[~on],
            text=[labels[i] for i in np.flatnonzero(~on)],
            marker=dict(color="#56B4E9", size=7, opacity=0.7),
            hovertemplate=tip,
        )
    ]
    order = np.flatnonzero(on)[np.argsort(xs[on], kind="stable")]
    data.append(
        dict(
            type="scatter",
            mode="lines+markers",
            name="Pareto front",
            x=xs[order],
            y=ys[order],
            text=[labels[i] for i in order],
            line=dict(shape="hv", color="#D55E00", width=1.5),
            marker=dict(color="#D55E00", size=10, symbol="diamond", line=dict(width=1, color="#333333")),
            hovertemplate=tip,
        )
    )
    if capacity is not None:
        lo = float(xs.min()) if len(xs) else 0.0
        hi = float(xs.max()) if len(xs) else 1.0
        data.append(
            dict(
                type="scatter",
                mode="lines",
                name=f"capacity {capacity:.4g} {y_unit}",
                x=[lo, hi if hi > lo else lo + 1.0],
                y=[capacity, capacity],
                line=dict(color="#7A0000", dash="dot", width=2),
                hovertemplate=f"capacity {capacity:.4g} {y_unit}<extra></extra>",
            )
        )
    layout = dict(
        title=dict(text=title or "iteration time against peak memory", x=0, xanchor="left", font=dict(size=14)),
        height=360,
        margin=dict(_MARGIN, t=75),
        legend=_LEGEND,
        xaxis=dict(title=dict(text=f"iteration time ({x_unit})"), gridcolor=_GRID),
        yaxis=dict(title=dict(text=f"peak memory ({y_unit})"), gridcolor=_GRID, rangemode="tozero"),
        plot_bgcolor="white",
        hovermode="closest",
    )
    return _figure(data, layout)


def peaks(
    rows: dict[str, Sequence[float]], *, capacity: float | None = None, unit: str = "GB", title: str | None = None
) -> go.Figure:
    """Each device's peak memory, one bar group per device and one bar per row (e.g. per schedule),
    with the capacity as a line: several schedules' memory side by side, in the same unit."""
    data = []
    widest = max((len(v) for v in rows.values()), default=1)
    for i, (label, values) in enumerate(rows.items()):
        data.append(
            dict(
                type="bar",
                name=label,
                x=np.arange(len(values)),
                y=np.asarray(values, dtype=float),
                marker=dict(color=BREAKDOWN_COLORS[i % len(BREAKDOWN_COLORS)]),
                hovertemplate=f"{html.escape(label)}<br>device %{{x}}: %{{y:.4~g}} {unit}<extra></extra>",
            )
        )
    if capacity is not None:
        data.append(
            dict(
                type="scatter",
                mode="lines",
                name=f"capacity {capacity:.4g} {unit}",
                x=[-0.5, widest - 0.5],
                y=[capacity, capacity],
                line=dict(color="#7A0000", dash="dot", width=2),
                hovertemplate=f"capacity {capacity:.4g} {unit}<extra></extra>",
            )
        )
    layout = dict(
        title=dict(text=title or f"peak memory per device ({unit})", x=0, xanchor="left", font=dict(size=14)),
        barmode="group",
        height=300,
        margin=dict(_MARGIN, t=75),
        legend=_LEGEND,
        xaxis=dict(title=dict(text="device"), tickmode="linear", dtick=1 if widest <= 32 else None, gridcolor=_GRID),
        yaxis=dict(title=dict(text=f"peak memory ({unit})"), rangemode="tozero", gridcolor=_GRID),
        plot_bgcolor="white",
    )
    return _figure(data, layout)


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
) -> go.Figure:
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
    titles = list(titles) if titles is not None else [_title(run, None) for run in runs]
    kwargs = list(memory_kwargs) if memory_kwargs is not None else [{} for _ in runs]
    if len(titles) != len(runs) or len(kwargs) != len(runs):
        raise ValueError(f"compare got {len(titles)} titles and {len(kwargs)} memory settings for {len(runs)} runs")
    lo, hi = _time_range(runs)
    span = _scaled([lo, hi], time_scale)
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
        with plain():
            mem = memory(run, time_scale=time_scale, time_unit=time_unit, band_over=band_over, **kwargs[i])
        for trace in mem["data"]:
            line = trace["name"].split(" ")[0] in ("limit", "capacity")
            trace.update(xaxis=f"x{m}", yaxis=f"y{m}", legendgroup=trace["name"] if line else f"mem-{i}")
            trace["showlegend"] = line and trace["name"] not in seen
            seen.add(trace["name"])
            trace["hovertemplate"] = f"{html.escape(titles[i])}<br>" + trace.get("hovertemplate", "")
        data += mem["data"]
        top = max((float(np.max(t["y"])) for t in mem["data"] if len(t["y"])), default=1.0)
        blocks[-1] += (mem["layout"]["yaxis"]["title"]["text"], top)
    # the modebar's band, then the legend's rows (plotly adds a margin for rows past the estimate)
    legend_px = TITLE_BAND_PX + 24 + _legend_room(data)
    plot_px = sum(_COMPARE_TITLE_PX + g + 8 + m + _COMPARE_TICKS_PX for g, m, *_ in blocks)
    height = legend_px + plot_px + 30  # the bottom margin holds the time axis's title
    layout: dict = dict(
        height=height,
        barmode="overlay",
        margin=dict(_MARGIN, t=legend_px, b=30),
        legend=dict(_band_legend(height), tracegroupgap=0),
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
        x_common = dict(range=span, zeroline=False, gridcolor=_GRID)
        layout[f"xaxis{g}"] = dict(x_common, anchor=f"y{g}", showticklabels=False, **({"matches": "x"} if i else {}))
        layout[f"xaxis{m}"] = dict(x_common, anchor=f"y{m}", showticklabels=True, matches="x")
        devices = _device_axis(run.schedule.devices, g_px + _MARGIN["t"] + _MARGIN["b"], domain=g_dom, anchor=f"x{g}")
        devices["title"] = dict(text="device", standoff=4)
        layout[f"yaxis{g}"] = devices
        mem_axis = dict(
            domain=m_dom, anchor=f"x{m}", title=dict(text=m_title, font=dict(size=10)), gridcolor=_GRID, nticks=4
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
    layout[f"xaxis{last}"]["title"] = dict(_time_title(time_unit), standoff=4)
    return _figure(data, layout)


SWEEP_AXES = {"m": "microbatches m", "v": "chunks per device v", "p": "devices p"}


def sweep(
    rows: Sequence[dict],
    axis: str,
    metrics: Sequence[tuple[str, str, float]],
    *,
    current: float | None = None,
    capacity: tuple[str, float] | None = None,
    title: str | None = None,
) -> go.Figure:
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
        height=80 + 125 * n,  # with the title band and a legend row above the panels (_title_band)
        margin=dict(_MARGIN),
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
            gridcolor=_GRID,
            anchor=f"y{suffix}",
            showticklabels=k == n - 1,
            **({"matches": "x"} if k else {}),
        )
        layout[f"yaxis{suffix}"] = dict(
            domain=[max(top - height_each, 0.0), top], title=dict(text=label, font=dict(size=11)), gridcolor=_GRID
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
                    name=f"capacity {capacity[1]:.4g}",
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
    _title_band(layout, data)
    return _figure(data, layout)


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
