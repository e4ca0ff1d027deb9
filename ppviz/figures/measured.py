"""A measured run against its simulation: per rank, the measured ops (filled) on one row and the same
order simulated under the fitted costs (outlined) on the row below, times in ms from the first op.

Drawn from plain per-rank op tuples so that figures need nothing of ``ppviz.measured``: one filled
trace per kind and row type (each a path of rectangles), and one invisible marker per op for hover.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ir import KINDS, Action, Kind
from .encoding import Figure, figure
from .style import GRID, KIND_COLORS, KIND_LABELS, LEGEND, MARGIN

# (stage, microbatch, kind, start_s, end_s): one op as the chart draws it
Bar = tuple[int, int, Kind, float, float]
ROW_PX = 22  # one row (a rank's measured or simulated ops)
HALF = 0.4  # a bar's half height, in rows
SIMULATED_OPACITY = 0.35


def measured_gantt(measured: Sequence[Sequence[Bar]], simulated: Sequence[Sequence[Bar]], title: str = "") -> Figure:
    """Rank r's measured ops on row 2r, its simulated ops on row 2r + 1 (both lists indexed by rank)."""
    data: list[dict] = []
    hover_x, hover_y, hover_text = [], [], []
    for kind in KINDS:
        for which, rows, offset in (("measured", measured, 0), ("simulated", simulated, 1)):
            xs: list[float | None] = []
            ys: list[float | None] = []
            for rank, bars in enumerate(rows):
                y = 2 * rank + offset
                for stage, mb, k, start, end in bars:
                    if k != kind:
                        continue
                    x0, x1 = start * 1e3, end * 1e3
                    xs += [x0, x1, x1, x0, x0, None]
                    ys += [y - HALF, y - HALF, y + HALF, y + HALF, y - HALF, None]
                    hover_x.append((x0 + x1) / 2)
                    hover_y.append(y)
                    hover_text.append(
                        f"{which} <b>{Action(stage, mb, kind)}</b> on rank {rank}: {KIND_LABELS[kind]}"
                        f"<br>stage {stage} · microbatch {mb}"
                        f"<br>start {x0:.3f} ms · end {x1:.3f} ms<br>duration {x1 - x0:.3f} ms"
                    )
            if not xs:
                continue
            data.append(
                {
                    "type": "scatter",
                    "x": xs,
                    "y": ys,
                    "mode": "lines",
                    "fill": "toself",
                    "fillcolor": KIND_COLORS[kind] if which == "measured" else _faded(KIND_COLORS[kind]),
                    "line": {"color": KIND_COLORS[kind] if which == "simulated" else "#FFFFFF", "width": 1},
                    "name": KIND_LABELS[kind] + (" (simulated)" if which == "simulated" else ""),
                    "legendgroup": f"{kind.value}-{which}",
                    "hoverinfo": "skip",
                }
            )
    data.append(
        {
            "type": "scatter",
            "x": hover_x,
            "y": hover_y,
            "mode": "markers",
            "marker": {"size": 8, "opacity": 0},
            "text": hover_text,
            "hovertemplate": "%{text}<extra></extra>",
            "showlegend": False,
        }
    )
    ranks = max(len(measured), len(simulated))
    ticks = list(range(2 * ranks))
    labels = [f"rank {r // 2} {'measured' if r % 2 == 0 else 'simulated'}" for r in ticks]
    layout = {
        "title": {"text": title, "x": 0, "xanchor": "left"},
        "height": MARGIN["t"] + MARGIN["b"] + 60 + ROW_PX * len(ticks),
        "margin": {**MARGIN, "l": 130, "t": MARGIN["t"] + 30},
        "legend": dict(LEGEND, y=1.02),
        "xaxis": {"title": {"text": "time (ms)"}, "gridcolor": GRID, "zeroline": False},
        "yaxis": {"tickvals": ticks, "ticktext": labels, "autorange": "reversed", "gridcolor": GRID, "zeroline": False},
        "plot_bgcolor": "#FFFFFF",
        "hovermode": "closest",
    }
    return figure(data, layout)


def _faded(color: str) -> str:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{SIMULATED_OPACITY})"
