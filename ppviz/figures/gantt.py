"""The Gantt chart: devices on y, time on x, a few filled-outline traces however many ops.

Each trace has one colour (per-bar colours draw several times slower) and draws its bars as one SVG
path (one element per bar was most of a redraw); hover and labels are built in the browser from
``customdata`` rather than sent as strings. ``bench/bench_figures.py`` measures build time, JSON
bytes and draw time, ``bench/bench_model_page.py`` a page's redraw.
"""

from __future__ import annotations

import numpy as np

from ..api import Run
from ..ir import KIND_INDEX, KINDS, Kind
from ..iterations import iteration_ends, iterations, optimizer_steps
from .encoding import Figure, decode_typed_array, figure, int_dtype, time_dtype
from .style import (
    CHUNK_NAMES,
    CHUNK_PATTERNS,
    GRID,
    KIND_COLORS,
    KIND_LABELS,
    LABEL_PLOT_PX,
    LEGEND,
    LEGEND_RANK,
    MARGIN,
    PAIR_LABEL,
    PAIR_OUTLINE,
    device_axis,
    gantt_height,
    run_title,
    scaled,
    time_range,
    time_title,
    title_band,
    unit_suffix,
    window_range,
)

# Past this many ops, no labels inside bars. Measured in headless Chromium: labels add 0.15-0.3 ms
# of drawing per bar (1,984 ops: 412 ms with, 115 ms without; 4,992 ops: 1.8 s against 0.5 s), and
# at that density a whole-schedule view has bars too narrow to hold a number anyway.
TEXT_LIMIT = 2_000
LABEL_MIN_PX = 6.5  # the smallest label font
BAR_WIDTH = 0.8  # of one device row
_F = KIND_INDEX[Kind.F]


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


def bar_traces(
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
    lo, hi = time_range([run]) if span is None else (0.0, span)
    px_per_time = LABEL_PLOT_PX / ((hi - lo) * scale) if hi > lo else 0.0
    tdt = time_dtype(run, scale)
    start, end = r.start * scale, r.end * scale
    # Hover only: 7 significant digits are shown, so float32 always suffices (stage, mb < 2**24).
    custom = np.column_stack([r.stage, r.microbatch, start, end - start, end]).astype(np.float32)
    chunks = max(run.schedule.placement.chunks, 1)
    device_dtype = int_dtype(run.schedule.devices)  # a whole bar's middle is its device's row
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
    """The rectangles (x0, x1, y0, y1) of a Gantt chart's filled bar trace (plain, encoded or plotly),
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
            tip = f"iteration {i} ends on device {d} at t {t * scale:.7g}{unit_suffix(unit)}"
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


def gantt(
    run: Run,
    *,
    title: str | None = None,
    height: int | None = None,
    window: tuple[float, float] | None = None,
    time_scale: float = 1.0,
    time_unit: str = "",
) -> Figure:
    """Devices on y (device 0 on top), time on x; a few bar traces, however many ops.

    With ``window`` (t0, t1), only the ops overlapping it are drawn, on that time range: the
    page's detail view of a zoomed-in overview. A run timed in seconds is drawn in ms with
    ``time_scale=1e3, time_unit="ms"`` (``window`` stays in the run's own time).
    """
    p = run.schedule.devices
    time_range = window_range(run, window)
    keep = in_window(run, window)
    text = run_title(run, title)
    if window is not None:
        text += f" · {int(keep.sum()):,} ops in view"
    layout = dict(
        title=dict(text=text, x=0, xanchor="left", font=dict(size=14)),
        height=height or gantt_height(p, pairs=bool(run.result.paired.any())),
        barmode="overlay",
        margin=MARGIN,
        legend=LEGEND,
        xaxis=dict(title=time_title(time_unit), range=scaled(time_range, time_scale), zeroline=False, gridcolor=GRID),
        yaxis=device_axis(p, height),
        plot_bgcolor="white",
        hovermode="closest",
    )
    traces = bar_traces(run, keep=keep, span=time_range[1] - time_range[0], scale=time_scale, unit=time_unit)
    step = optimizer_trace(run, time_scale, time_unit, window)
    traces += [step] if step else []
    ends = iteration_trace(run, time_scale, time_unit)
    traces += [ends] if ends else []
    title_band(layout, traces)
    return figure(traces, layout)
