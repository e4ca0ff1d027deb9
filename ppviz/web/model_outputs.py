"""What the model view's callbacks send for a view, and only what changed since the last one.

Dash applies a callback's answer as store updates that every component of the page re-checks, and
each new element in an answer (a card rebuilt as a Div) costs one more such pass: a move of the
global batch spent more time there than drawing a chart. So the page keeps the cards' and the
breakdown's elements and an answer sets their text and style only, and an output whose value the
page shows already is ``no_update`` (``sent-model`` keeps a digest of each one shown).
"""

from __future__ import annotations

import hashlib

from dash import ALL, Output, html, no_update

from .model_layout import RANKING_COLUMNS, bar_id, card_id
from .model_state import MAX_COMPARE
from .model_views import CARD_LABELS, ModelView

HIDDEN = {"display": "none"}
CARD_KEYS = tuple(CARD_LABELS)
ROWS = tuple(range(MAX_COMPARE))
# (component id, property) of every output a view sets, in the order ``values`` returns them.
VIEW_OUTPUTS = (
    ("gantt-model", "figure"),
    ("memory-model", "figure"),
    ("cards-model", "style"),
    (card_id("value", ALL), "children"),
    (card_id("detail", ALL), "children"),
    (card_id("detail", ALL), "className"),
    ("ranking-model", "children"),
    ("breakdown-model", "style"),
    (bar_id("row", ALL), "style"),
    (bar_id("label", ALL), "children"),
    (bar_id("bar", ALL), "style"),
    (bar_id("bar", ALL), "title"),
    (bar_id("text", ALL), "children"),
    ("breakdown-legend-model", "children"),
)


def view_outputs(allow_duplicate: bool = False) -> list[Output]:
    return [Output(cid, prop, allow_duplicate=allow_duplicate) for cid, prop in VIEW_OUTPUTS]


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


def values(view: ModelView, out: dict, groups: list | None = None) -> tuple:
    """The outputs of ``VIEW_OUTPUTS`` from ``out`` (built parts, see ``unsent``); the charts always.
    ``groups`` is the callback's ``ctx.outputs_list``: the order of the cards and rows it asks for."""
    keys = [i.get("key") for i in ids(groups, "card-value-model")] if groups else list(CARD_KEYS)
    rows = [i.get("row") for i in ids(groups, "breakdown-row-model")] if groups else list(ROWS)

    def each(prefix: str, names) -> list:
        return [out.get(f"{prefix} {k}", no_update) for k in names]

    return (
        view.gantt,
        view.memory if view.memory is not None else no_update,
        out["cards"],
        each("value", keys),
        each("detail", keys),
        each("class", keys),
        out["ranking"],
        out["breakdown"],
        each("row", rows),
        each("label", rows),
        each("bar", rows),
        each("title", rows),
        each("text", rows),
        out["legend"],
    )


def unchanged(groups: list) -> tuple:
    """``VIEW_OUTPUTS`` all ``no_update`` (a list of them for each pattern of ids)."""
    keys, rows = ids(groups, "card-value-model"), ids(groups, "breakdown-row-model")
    return tuple(
        [no_update] * len(keys if cid["type"].startswith("card") else rows) if isinstance(cid, dict) else no_update
        for cid, _ in VIEW_OUTPUTS
    )


def ids(groups: list, kind: str) -> list[dict]:
    """The ids of the pattern output of type ``kind`` in ``ctx.outputs_list``, in the order asked."""
    for group in groups:
        first = group[0].get("id") if isinstance(group, list) and group and isinstance(group[0], dict) else None
        if isinstance(first, dict) and first.get("type") == kind:
            return [item.get("id") if isinstance(item, dict) else {} for item in group]
    return []


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
    return str(value)
