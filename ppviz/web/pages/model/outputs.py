"""What the model view's callbacks send for a view, and only what changed since the last one.

Dash applies a callback's answer as store updates that every component of the page re-checks, and
each new element in an answer (a card rebuilt as a Div) costs one more such pass: a move of the
global batch spent more time there than drawing a chart. So the page keeps the cards' and the
breakdown's elements and an answer sets their text and style only, and an output whose value the
page shows already is ``no_update`` (``sent-model`` keeps a digest of each one shown).
"""

from __future__ import annotations

import hashlib

from dash import Output, html, no_update

from ...common.cluster import MAX_COMPARE
from .ids import bar_id, card_id
from .layout import RANKING_COLUMNS
from .render import CARD_LABELS, ModelView

HIDDEN = {"display": "none"}
CARD_KEYS = tuple(CARD_LABELS)
ROWS = tuple(range(MAX_COMPARE))
# (component id, property, part of ``view_parts``) of every output a view sets, named by its part:
# one output per card and per breakdown row (string ids; pattern ids cost the renderer a
# search of the page for each, twice a move).
OUTPUT_PARTS = (
    ("gantt-model", "figure", "gantt"),
    ("memory-model", "figure", "memory"),
    ("cards-model", "style", "cards"),
    *[(card_id("value", k), "children", f"value {k}") for k in CARD_KEYS],
    *[(card_id("detail", k), "children", f"detail {k}") for k in CARD_KEYS],
    *[(card_id("detail", k), "className", f"class {k}") for k in CARD_KEYS],
    ("ranking-model", "children", "ranking"),
    ("breakdown-model", "style", "breakdown"),
    *[(bar_id("row", i), "style", f"row {i}") for i in ROWS],
    *[(bar_id("label", i), "children", f"label {i}") for i in ROWS],
    *[(bar_id("bar", i), "style", f"bar {i}") for i in ROWS],
    *[(bar_id("bar", i), "title", f"title {i}") for i in ROWS],
    *[(bar_id("text", i), "children", f"text {i}") for i in ROWS],
    ("breakdown-legend-model", "children", "legend"),
)


def view_outputs(allow_duplicate: bool = False) -> dict[str, Output]:
    """Every output a view sets, keyed by its part's name."""
    return {part: Output(cid, prop, allow_duplicate=allow_duplicate) for cid, prop, part in OUTPUT_PARTS}


def digest(value: object) -> str:
    """A short fingerprint of the plain value (strings, numbers, tuples, dicts) an output is built from."""
    return hashlib.blake2b(repr(value).encode(), digest_size=8).hexdigest()


def unsent(parts: dict[str, tuple[object, object]], sent: dict | None) -> tuple[dict, dict]:
    """Each part's output built from its value, or ``no_update`` when the page shows it already
    (``sent`` holds the digests of what it shows); and the digests of what it will show."""
    sent = sent if isinstance(sent, dict) else {}
    out, shown = {}, {}
    for name, (value, build) in parts.items():
        shown[name] = digest(value)
        out[name] = no_update if sent.get(name) == shown[name] else build(value)
    return out, shown


def _same(value):
    return value


def _style(hide: bool) -> dict:
    return HIDDEN if hide else {}


def view_parts(view: ModelView) -> dict[str, tuple[object, object]]:
    """Every small output of a view as (the plain value it shows, how to build the output from it)."""
    cards = {key: (value, detail) for key, _, value, detail in view.cards}
    parts: dict[str, tuple[object, object]] = {"cards": (not cards, _style), "ranking": (view.ranking, _ranking)}
    for key in CARD_KEYS:
        value, detail = cards.get(key, ("", ""))
        over = detail.startswith("device") and "does not fit" in detail
        parts |= {f"value {key}": (value, _same), f"detail {key}": (detail, _same)}
        parts[f"class {key}"] = ("msg-error" if over else None, _same)
    rows = view.breakdown.rows if view.breakdown is not None else []
    parts["breakdown"] = (not rows, _style)
    for i in ROWS:
        row = rows[i] if i < len(rows) else None
        parts[f"row {i}"] = (row is None, _style)
        if row is not None:  # a hidden row keeps its last content
            parts |= {f"label {i}": (row.label, _same), f"bar {i}": (row.style, _same)}
            parts |= {f"title {i}": (row.title, _same), f"text {i}": (row.text, _same)}
    parts["legend"] = (view.breakdown.legend if view.breakdown is not None else [], _legend)
    return parts


def values(view: ModelView, out: dict) -> dict:
    """The outputs of ``view_outputs`` from ``out`` (built parts, see ``unsent``); the charts always."""
    charts = {"gantt": view.gantt, "memory": view.memory if view.memory is not None else no_update}
    return {part: charts[part] if part in charts else out.get(part, no_update) for _, _, part in OUTPUT_PARTS}


def unchanged() -> dict:
    """Every output of ``view_outputs`` left as it is."""
    return {part: no_update for _, _, part in OUTPUT_PARTS}


def _legend(items: list[tuple[str, str]]) -> list:
    """A square of each part's color, then its name."""
    return [
        html.Span(
            [html.Span(className="breakdown-swatch", style={"background": color}), name], className="breakdown-key"
        )
        for name, color in items
    ]


def _ranking(rows: list[dict]):
    if not rows:
        return None
    pad = {"padding": "3px 12px 3px 0", "textAlign": "left"}
    head = html.Tr([html.Th(c, style=pad) for c in RANKING_COLUMNS])
    body = [html.Tr([html.Td(_cell(c, r[c]), style=pad) for c in RANKING_COLUMNS]) for r in rows]
    return html.Table([html.Thead(head), html.Tbody(body)], className="ranking", id="ranking-table-model")


def _cell(column: str, value: object) -> str:
    if column == "MFU":
        return f"{value:.1%}"
    if column == "tokens/s":
        return f"{value:,}"
    if column.endswith("(ms)"):
        return f"{value:,.1f}"
    if column.endswith("(GiB)"):
        return f"{value:,.2f}"
    return str(value)
