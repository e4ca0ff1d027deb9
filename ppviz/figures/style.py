"""What every chart shares: the kinds' colours, margins, axes, the title band and the legend's room."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..api import Run
from ..ir import Kind

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
LABEL_PLOT_PX = 900  # nominal plot width at which a label must fit inside its bar
MARGIN = dict(l=70, r=30, t=50, b=45)
GRID = "#E6E6E6"
LEGEND = dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom")
TITLE_BAND_PX = 28  # the chart title and the modebar's icons, above the legend (see title_band)


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


# --- axes and titles ------------------------------------------------------------------------


def time_range(runs: Sequence[Run]) -> list[float]:
    lo = min(float(run.result.slot_start.min()) for run in runs)
    hi = max(float(run.result.slot_end.max()) for run in runs)
    return [lo, hi if hi > lo else lo + 1.0]


def unit_suffix(unit: str) -> str:
    return f" {unit}" if unit else ""


def time_title(unit: str) -> dict:
    """The time axis's title with its unit: "time (ms)" in real units, "time (units)" in the cost
    convention's own units (those of the F, B and W times)."""
    return dict(text=f"time ({unit or 'units'})")


def scaled(pair: Sequence[float], scale: float) -> list[float]:
    return [float(t) * scale for t in pair]


def device_axis(devices: int, height: int | None = None, **extra) -> dict:
    """Devices top to bottom: device 0 at the top row; a tick label every 14 px or more of a chart
    ``height`` px tall (every device up to 32 when the height is not given)."""
    step = 1 if devices <= 32 else int(np.ceil(devices / 32))
    if height is not None:
        row = max(height - MARGIN["t"] - MARGIN["b"], 1) / devices
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


def run_title(run: Run, title: str | None) -> str:
    if title is not None:
        return title
    s = run.schedule
    return f"{s.name} · {s.devices} devices · {s.microbatches} microbatches"


def title_band(layout: dict, traces: list[dict]) -> None:
    """The title (left) and the modebar (right) in a band at the top, the legend's rows under it.

    The legend is placed from the figure's top (``yref="container"``), so plotly reserves its height
    above the plot however many rows it wraps to at the page's width; placed from the plot's top, a
    legend of more rows than estimated ran under the title and its last entries under the modebar.
    The height grows by the rows estimated, so that the plot keeps about its size.
    """
    height = layout["height"] + legend_room(traces)
    layout.update(height=height, margin=dict(layout.get("margin", MARGIN), t=TITLE_BAND_PX))
    layout["legend"] = band_legend(height)
    layout["title"].update(yref="container", y=1, yanchor="top", pad=dict(t=8))


def band_legend(height: float) -> dict:
    """A horizontal legend whose first row starts under the title band (clear of the modebar)."""
    return dict(LEGEND, yref="container", y=1 - TITLE_BAND_PX / height, yanchor="top")


def legend_room(traces: list[dict], width: float = LABEL_PLOT_PX - 40) -> int:
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


def window_range(run: Run, window: tuple[float, float] | None) -> list[float]:
    if window is None:
        return time_range([run])
    t0, t1 = (float(t) for t in window)
    if not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0):
        raise ValueError(f"a time window needs finite t0 < t1 (got {window!r})")
    return [t0, t1]


# --- legends -----------------------------------------------------------------------------------


LEGEND_ROW_PX = 19  # a row of a horizontal legend (font 12), as legend_room counts
LEGEND_PAD_PX = 10  # a legend's padding above and below its rows


def legend_px(traces: list[dict], width: float = LABEL_PLOT_PX - 40) -> int:
    """Height of the horizontal legend of ``traces`` wrapped at ``width`` px (0 when none is shown)."""
    shown = any(t.get("showlegend", True) is not False and t.get("type") != "heatmap" for t in traces)
    return LEGEND_ROW_PX + LEGEND_PAD_PX + legend_room(traces, width) if shown else 0


def plot_px(fig: dict) -> int:
    """The plot area of a chart built here: its height less the margins and the legend over the plot."""
    layout = fig["layout"]
    margin = layout.get("margin", MARGIN)
    return int(layout["height"] - margin["t"] - margin["b"] - legend_px(fig["data"]))
