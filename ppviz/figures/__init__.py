"""Plotly figures of a simulated run: Gantt chart, memory curves, raster overview, comparison.

The only package of ppviz outside ``ppviz.web`` that imports plotly. Builders draw a ``Run`` and
never compute schedule facts: times come from ``run.result``, peaks from ``ppviz.memory``. Every
builder returns a plain ``Figure`` dict (``encoding``): ``encode`` makes it JSON as the page sends
it, ``to_plotly`` a ``go.Figure`` where one is needed. Big schedules stay cheap: the number of
traces depends on kinds and chunks, never on ops, and arrays travel base64-encoded.

Modules: ``gantt``, ``overview``, ``memory``, ``compare`` (a Gantt over its memory chart, several
runs, the sweep), ``measured`` (a measured run's ops against its simulation), ``real_units``
(estimates' charts and units), ``html`` (a standalone page), and the shared ``style`` and ``encoding``.
"""

from .compare import SCHEDULE_COLORS, SWEEP_AXES, compare, compare_memory, stacked, sweep
from .encoding import Figure, decode_typed_array, encode, to_plotly
from .gantt import (
    BAR_WIDTH,
    HOVER_STEP_PX,
    ITERATION_LABEL,
    LABEL_MIN_PX,
    OPTIMIZER_COLOR,
    OPTIMIZER_LABEL,
    TEXT_LIMIT,
    gantt,
    in_window,
    rects,
)
from .html import HTML_GANTT_LIMIT, to_html
from .measured import measured_gantt
from .memory import band_lines, device_colors, lines_note, memory, memory_traces
from .overview import OVERVIEW_BINS, OVERVIEW_CLASSES, occupancy, overview
from .real_units import BREAKDOWN_COLORS, MEMORY_PARTS, gantt_kwargs, memory_breakdown, memory_kwargs, peaks, tradeoff
from .style import (
    KIND_COLORS,
    KIND_LABELS,
    LABEL_PLOT_PX,
    PAIR_LABEL,
    PAIR_OUTLINE,
    TITLE_BAND_PX,
    gantt_height,
    shades,
)

__all__ = [
    "BAR_WIDTH", "BREAKDOWN_COLORS", "HOVER_STEP_PX", "HTML_GANTT_LIMIT", "ITERATION_LABEL", "KIND_COLORS",
    "KIND_LABELS", "LABEL_MIN_PX", "LABEL_PLOT_PX", "OPTIMIZER_COLOR", "OPTIMIZER_LABEL", "OVERVIEW_BINS",
    "OVERVIEW_CLASSES", "PAIR_LABEL", "PAIR_OUTLINE", "SCHEDULE_COLORS", "SWEEP_AXES", "TEXT_LIMIT",
    "TITLE_BAND_PX", "Figure", "band_lines", "compare", "compare_memory", "decode_typed_array", "device_colors",
    "MEMORY_PARTS", "encode", "gantt", "gantt_height", "gantt_kwargs", "in_window", "lines_note", "measured_gantt",
    "memory", "memory_breakdown", "memory_kwargs", "memory_traces",
    "occupancy", "overview", "peaks", "rects", "shades", "stacked", "sweep", "tradeoff", "to_html", "to_plotly",
]  # fmt: skip
