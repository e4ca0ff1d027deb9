"""A run as a standalone HTML page: plotly.js inlined, its Gantt over its memory chart, its facts."""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..api import Run
from .compare import stacked
from .encoding import to_plotly
from .gantt import gantt
from .memory import memory
from .overview import overview
from .style import run_title

# Past this many ops the page draws the overview instead of bars (20k bars: about 2 s to draw)
HTML_GANTT_LIMIT = 20_000


def to_html(
    run: Run,
    *,
    limit: float | None = None,
    max_bars: int = HTML_GANTT_LIMIT,
    gantt_kwargs: dict | None = None,
    memory_kwargs: dict | None = None,
    facts: Sequence[tuple[str, str]] | None = None,
) -> str:
    """A self-contained page (plotly.js inlined, no network): the Gantt over the memory chart, in
    one figure on one time axis (``stacked``), under the run's facts.

    Past ``max_bars`` ops the Gantt is replaced by the raster overview, which a browser draws at
    once; the exact times are in ``ppviz simulate --csv``. Real units: ``gantt_kwargs`` (the time
    unit, for both charts) and ``memory_kwargs`` as ``real_units.gantt_kwargs(est)`` /
    ``memory_kwargs(est)`` give them (ms; GiB, static base, capacity line, reserve band), and ``facts`` (label,
    value) replace the abstract run's.
    """
    big = len(run.result) > max_bars
    gk = gantt_kwargs or {}
    top = overview(run, **gk) if big else gantt(run, **gk)
    both = stacked(top, memory(run, limit=limit, **gk, **(memory_kwargs or {})))
    config = {"displaylogo": False, "toImageButtonOptions": {"format": "svg"}}
    chart = to_plotly(both).to_html(full_html=False, include_plotlyjs=True, config=config)
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
    name = html.escape(run_title(run, None))
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
{chart}
</body></html>
"""
