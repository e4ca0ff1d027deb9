"""What every page's charts share: the chart options, message placeholders and sizes on screen
(figures arrive as plain dicts; ``figures.encode`` turns numpy arrays into plotly.js typed arrays)."""

from __future__ import annotations

import ppviz
from ppviz import figures

# Gantt bars are drawn one per op up to this many ops; past it the chart is a heatmap overview.
# Measured slider-release-to-chart in headless Chromium (bench/bench_page.py --sweep): bars 1.1 s
# at 5k ops, 1.45 s at 10k, 4.8 s at 15k; the overview 0.3-0.7 s up to 20k and 1.1 s at 50k.
BARS_MAX_OPS = 8_000
# Chart heights on the page, so that cards, both charts and the time axis fit a 1280×800 screen:
# the Gantt grows with devices up to GANTT_MAX_PX (zoom on the device axis for a range of them).
GANTT_MAX_PX = 330
MEMORY_PX = 260
MEMORY_LINES = 8  # past this many devices, memory is a min–max band with the highest and lowest as lines
IMAGE_FORMATS = ("svg", "png")


def graph_config(image_format: str = "svg", filename: str = "ppviz") -> dict:
    """Chart options: the modebar's camera button saves the chart as SVG or PNG (at 2× for PNG); no button
    sends a chart to an outside service (plans of private clusters stay in the browser)."""
    fmt = image_format if image_format in IMAGE_FORMATS else "svg"
    return {
        "displaylogo": False,
        "showSendToCloud": False,
        "showEditInChartStudio": False,
        "modeBarButtonsToRemove": ["sendDataToCloud"],
        "toImageButtonOptions": {"format": fmt, "filename": filename, "scale": 2 if fmt == "png" else 1},
    }


GRAPH_CONFIG = graph_config()


def message_figure(text: str) -> dict:
    """A chart-sized placeholder that says why there is no chart (never a blank area)."""
    return {
        "data": [],
        "layout": {
            "xaxis": {"visible": False},
            "yaxis": {"visible": False},
            "height": 180,
            "annotations": [
                {
                    "text": _wrap(text),
                    "showarrow": False,
                    "xref": "paper",
                    "yref": "paper",
                    "x": 0.5,
                    "y": 0.5,
                    "font": {"size": 14, "color": "#1d2433"},
                }
            ],
            "paper_bgcolor": "#f6f7fa",
            "plot_bgcolor": "#f6f7fa",
            "margin": {"l": 20, "r": 20, "t": 20, "b": 20},
        },
    }


def lines_of(state, run: ppviz.Run) -> list[int] | None:
    """The chosen devices the run has, to draw as lines over the memory band; None: the automatic pair."""
    chosen = [d for d in state.lines if d < run.schedule.devices]
    return chosen or None


def lines_reason(state, run: ppviz.Run, peaks) -> tuple[str, str]:
    """What the memory-lines picker does for this run (shown beside it)."""
    return ("reason", figures.lines_note(run.schedule.devices, MEMORY_LINES, lines_of(state, run), peaks))


def _wrap(text: str, width: int = 90) -> str:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    # the space stays at the end of each line: plotly draws a line per <tspan>, and a copy of the text joins
    # them as they are, so a command wrapped as "…70b<br>--gpu" would paste as "…70b--gpu"
    return " <br>".join(lines)


def empty(height: int = 200) -> dict:
    """A blank chart area, before the first drawing."""
    return {"data": [], "layout": {"xaxis": {"visible": False}, "yaxis": {"visible": False}, "height": height}}
