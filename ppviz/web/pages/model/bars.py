"""The iteration breakdown as small stacked bars in plain HTML: each row's CSS and text, no figure.

A Plotly chart cost the browser about 30 ms a redraw for a handful of numbers; a row here is one
div whose background is the stacked parts (a CSS gradient) and whose width is its total against
the longest row's, with the parts in words beside it and in its hover title. Plain values only:
the page (``layout``) holds the row elements and the callback sets their props.
"""

from __future__ import annotations

from dataclasses import dataclass

from ppviz.figures import BREAKDOWN_COLORS as COLORS  # the palette of the real-units charts


@dataclass(frozen=True)
class Row:
    label: str  # e.g. the schedule
    style: dict  # the bar's width and its parts as gradient stops
    title: str  # hover: every part in the unit, with its share
    text: str  # the parts shown beside the bar (those above zero) and the total


@dataclass(frozen=True)
class Bars:
    rows: list[Row]
    legend: list[tuple[str, str]]  # (part, color) in the order of the bars


def breakdown(parts: dict[str, dict[str, float]], *, scale: float = 1.0, unit: str = "") -> Bars:
    """The rows of ``parts`` (see ``rows``) and their legend."""
    return Bars(rows(parts, scale=scale, unit=unit), legend(parts))


def part_name(key: str) -> str:
    """ "tp_comm_s" → "tp comm" (the estimate's breakdown keys are seconds)."""
    return key.removesuffix("_s").replace("_", " ")


def legend(rows: dict[str, dict[str, float]]) -> list[tuple[str, str]]:
    """(name, color) of each part, in the order of the bars."""
    keys = list(next(iter(rows.values()))) if rows else []
    return [(part_name(k), COLORS[i % len(COLORS)]) for i, k in enumerate(keys)]


def rows(parts: dict[str, dict[str, float]], *, scale: float = 1.0, unit: str = "") -> list[Row]:
    """One row per label of ``parts`` ({label: {part: seconds}}, every row the same parts), in
    ``unit`` after ``scale`` (seconds to ms: 1e3, "ms"); the longest row spans the whole width."""
    u = f" {unit}" if unit else ""
    totals = {label: sum(p.values()) * scale for label, p in parts.items()}
    longest = max(totals.values(), default=0.0)
    out = []
    for label, p in parts.items():
        total = totals[label]
        stops, shown, lines, at = [], [], [f"{label}: {total:,.1f}{u} on the busiest device"], 0.0
        for i, (key, seconds) in enumerate(p.items()):
            value = seconds * scale
            share = value / total if total > 0 else 0.0
            color = COLORS[i % len(COLORS)]
            stops.append(f"{color} {100 * at:.3f}% {100 * (at + share):.3f}%")
            at += share
            lines.append(f"{part_name(key)}: {value:,.1f}{u} ({share:.1%})")
            if value > 0:
                shown.append(f"{part_name(key)} {value:,.1f}{u}")
        width = 100 * total / longest if longest > 0 else 0.0
        style = {"width": f"{width:.2f}%", "background": f"linear-gradient(to right, {', '.join(stops)})"}
        text = " · ".join(shown) + f" = {total:,.1f}{u}"
        out.append(Row(label, style, "\n".join(lines), text))
    return out
