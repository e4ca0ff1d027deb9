"""Callbacks of the model & cluster page.

One callback keeps the controls and the URL's hash in step (in both directions) and draws the
view from the resulting state, like the abstract view's; a view past the synchronous budget is
drawn by a background job (``jobs.manager()``) with progress and a stop button. Both send only
the outputs that changed.

Dash applies a callback's answer as store updates that every component of the page re-checks, and
each new element in an answer (a card rebuilt as a Div) costs one more such pass: a move of the
global batch spent more time there than drawing a chart. So the page keeps the cards' and the
breakdown's elements and an answer sets their text and style only, and an output whose value the
page shows already is ``no_update`` (``sent-model`` keeps a digest of each one shown).
"""

from __future__ import annotations

import hashlib
import time
from typing import NamedTuple

from dash import Input, Output, State, callback, ctx, html, no_update

from ppviz.figures import BREAKDOWN_COLORS as COLORS  # the palette of the real-units charts

from ...common import charts, cluster, jobs, widgets
from ...common.cluster import MAX_COMPARE
from . import advice, handoff_callbacks, render  # noqa: F401  (handoff_callbacks: registers its callbacks)
from .ids import URL, advice_id, bar_id, card_id, cid, msg_id
from .layout import CONTROLS, MESSAGE_NAMES, RANKING_COLUMNS
from .render import CARD_LABELS, MS, ModelView

MODEL, GPU = cid("model"), cid("gpu")  # the preset pickers (a move names its trigger by id)

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
    rows = bar_rows(view.breakdown or {}, scale=MS, unit="ms")
    parts["breakdown"] = (not rows, _style)
    for i in ROWS:
        row = rows[i] if i < len(rows) else None
        parts[f"row {i}"] = (row is None, _style)
        if row is not None:  # a hidden row keeps its last content
            parts |= {f"label {i}": (row.label, _same), f"bar {i}": (row.style, _same)}
            parts |= {f"title {i}": (row.title, _same), f"text {i}": (row.text, _same)}
    parts["legend"] = (bar_legend(view.breakdown or {}), _legend)
    return parts


def view_values(view: ModelView, out: dict) -> dict:
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
    unit = rows[0]["unit"]  # the table's times, all in one unit (ms below 10 s, else s)
    heads = [f"{c} ({unit})" if c in TIME_COLUMNS else c for c in RANKING_COLUMNS]
    head = html.Tr([html.Th(c, style=pad) for c in heads])
    body = [html.Tr([html.Td(_cell(c, r[c], unit), style=pad) for c in RANKING_COLUMNS]) for r in rows]
    return html.Table([html.Thead(head), html.Tbody(body)], className="ranking", id="ranking-table-model")


TIME_COLUMNS = ("iteration", "bubble")


def _cell(column: str, value: object, unit: str) -> str:
    if column == "MFU":
        return f"{value:.1%}"
    if column == "tokens/s":
        return f"{value:,}"
    if column in TIME_COLUMNS:
        return f"{value:,.1f}" if unit == "ms" else f"{value:,.3f}"
    if column.endswith("(GiB)"):
        return f"{value:,.2f}"
    return str(value)


@callback(
    output={
        "hash": Output(URL, "hash"),
        "controls": {name: Output(cid(name), "value") for name in CONTROLS},
        "notes": Output("notes-model", "children"),
        "view": view_outputs(),
        "memory_box": Output("memory-box-model", "style"),
        "messages": {name: Output(msg_id(name), "children") for name in MESSAGE_NAMES},
        "schedule_row": Output("row-schedule-model", "style"),
        "compare_row": Output("row-compare-model", "style"),
        "line_options": Output(cid("lines"), "options"),
        "line_disabled": Output(cid("lines"), "disabled"),
        "drawn": Output("drawn-model", "data"),
        "job": Output("job-model", "data"),
        "sent": Output("sent-model", "data"),
    },
    inputs={
        "hash_": Input(URL, "hash"),
        "values": {name: Input(cid(name), "value") for name in CONTROLS},
        "pathname": State(URL, "pathname"),
        "drawn": State("drawn-model", "data"),
        "sent": State("sent-model", "data"),
    },
)
def update_model_view(hash_, values, pathname, drawn, sent):
    """URL hash → controls when the hash changed (a link, back/forward, a search row opened);
    controls → hash otherwise. Draws only what changed. The request is read once (``cluster.read``:
    bounded, everything derived) and drawn once (``render.render``)."""
    trigger = ctx.triggered_id
    if trigger in (None, URL):
        reading = cluster.read(hash_, pathname=pathname)  # None: a link to another page, whose hash this is
        if reading is None or reading.key == drawn:
            return _unchanged()
        controls, new_hash = reading.controls, no_update
    else:
        preset = trigger in (MODEL, GPU)
        reading = cluster.read(hash_, values, "model" if trigger == MODEL else "gpu" if preset else None)
        new_hash = reading.key if reading.key != hash_ else no_update
        controls = reading.controls
        if controls is not None and not preset:
            controls = {k: v for k, v in controls.items() if k != "compare"}
        if values.get("baseline") != reading.reference:  # the baseline left the comparison: the first is used
            controls = {**(controls or {}), "baseline": reading.reference}
        if reading.empty:  # boxes holding no valid number keep what they show; the results are the last valid values
            controls = {k: v for k, v in (controls or {}).items() if k not in reading.empty}
    state, notes, key = reading.state, list(reading.notes), reading.key
    view = render.render(reading)
    job = {"hash": key, "at": time.time()}
    compare = state.mode == "compare"
    drawn_parts = view_parts(view)
    small = {
        **drawn_parts,
        "notes": (notes, widgets.notes),
        "memory-box": (view.memory is None, _hidden),
        "row-schedule": (compare, _hidden),
        "row-compare": (not compare, _hidden),
        # the memory-lines picker offers the pipeline's devices, with its value in one answer (a value the
        # options lacked would be dropped); up to 8 devices, or comparing, it has nothing to choose
        "lines-options": (state.pp, widgets.device_options),
        "lines-disabled": (state.pp <= charts.MEMORY_LINES or compare, _same),
    }
    small |= {f"msg {n}": (reading.empty.get(n) or view.messages.get(n), widgets.message) for n in MESSAGE_NAMES}
    out, shown = unsent(small, sent)
    if view.drawn_as == "queued":  # a job draws these next: what they show then is not known here
        shown = {k: v for k, v in shown.items() if k not in drawn_parts}
    return {
        "hash": new_hash,
        "controls": {n: (controls or {}).get(n, no_update) for n in CONTROLS},
        "notes": out["notes"],
        "view": view_values(view, out),
        "memory_box": out["memory-box"],
        "messages": {n: out[f"msg {n}"] for n in MESSAGE_NAMES},
        "schedule_row": out["row-schedule"],
        "compare_row": out["row-compare"],
        "line_options": out["lines-options"],
        "line_disabled": out["lines-disabled"],
        "drawn": key,
        "job": job if view.drawn_as == "queued" else no_update,
        "sent": shown if shown != sent else no_update,
    }


def _unchanged() -> dict:
    """Nothing to send: this state is drawn already, or the browser is leaving for another page."""
    return {
        "hash": no_update,
        "controls": {n: no_update for n in CONTROLS},
        "notes": no_update,
        "view": unchanged(),
        "memory_box": no_update,
        "messages": {n: no_update for n in MESSAGE_NAMES},
        **dict.fromkeys(("schedule_row", "compare_row", "line_options", "line_disabled"), no_update),
        **dict.fromkeys(("drawn", "job", "sent"), no_update),
    }


def _hidden(hide: bool) -> dict:
    return {"display": "none"} if hide else {}


@callback(
    output={"view": view_outputs(allow_duplicate=True), "error": Output("job-error-model", "children")},
    inputs=[Input("job-model", "data")],
    background=True,
    manager=jobs.manager(),
    interval=jobs.POLL_MS,
    progress=[Output("job-progress-model", "value"), Output("job-status-model", "children")],
    running=[(Output("job-box-model", "style"), {}, {"display": "none"})],
    cancel=[Input("job-cancel-model", "n_clicks")],
    prevent_initial_call=True,
)
def estimate_in_background(set_progress, request):
    """Estimate a view past the synchronous budget (searching schedules at big sizes) in a background job."""
    hash_ = request.get("hash") if isinstance(request, dict) else None
    reading = cluster.read(hash_)
    names = " and ".join(reading.shown)
    try:
        jobs.watch(on_wait=lambda text: set_progress((0, f"{names}: {text}")))
        set_progress((1, f"{names}: building the schedule and simulating…"))
        view = render.render(reading, background=True)
    except jobs.STOPPED as e:
        cli = next(iter(reading.commands.values()), "ppviz estimate")
        text = f"{names}: {jobs.why(e)}; or use the CLI: {cli}"
        view = render.ModelView(charts.message_figure(text), None, None, [], [])
        return {"view": drawn_outputs(view), "error": widgets.message(("error", text))}
    error = next((m for m in view.messages.values() if m[0] == "error"), None)
    return {"view": drawn_outputs(view), "error": widgets.message(error)}


@callback(
    Output(cid("baseline"), "options"),
    Input(cid("compare"), "value"),
)
def list_baselines(compare):
    """The baseline picker offers the compared schedules."""
    return list(dict.fromkeys(n for n in compare if isinstance(n, str))) if isinstance(compare, list) else []


@callback(
    output={
        "card": Output("advice-model", "style"),
        "why": Output("advice-why-model", "children"),
        "none": Output("advice-none-model", "children"),
        "rows": [Output(advice_id("row", i), "style") for i in range(advice.ADVICE_ROWS)],
        "texts": [Output(advice_id("text", i), "children") for i in range(advice.ADVICE_ROWS)],
        "targets": Output("advice-targets-model", "data"),
    },
    inputs={"drawn": Input("drawn-model", "data")},
    prevent_initial_call=True,
)
def show_advice(drawn):
    """After a view is drawn: when its layout does not fit, why, and the nearest layouts that do (a separate
    callback, so that the view's own answer never waits for the search)."""
    card = advice.advice_card(cluster.read(drawn)) if isinstance(drawn, str) else None
    n = advice.ADVICE_ROWS
    if card is None:
        return {"card": HIDDEN, "why": None, "none": None, "rows": [HIDDEN] * n, "texts": [None] * n, "targets": []}
    rows = list(card.rows)
    none = None if rows else "no layout near this one fits: use more GPUs or a GPU with more memory"
    return {
        "card": {},
        "why": card.why,
        "none": none,
        "rows": [{} if i < len(rows) else HIDDEN for i in range(n)],
        "texts": [rows[i][0] if i < len(rows) else None for i in range(n)],
        "targets": [cluster.key_of(target) for _, target in rows],
    }


@callback(
    Output(URL, "hash", allow_duplicate=True),
    inputs={"clicks": [Input(advice_id("apply", i), "n_clicks") for i in range(advice.ADVICE_ROWS)]},
    state={"targets": State("advice-targets-model", "data")},
    prevent_initial_call=True,
)
def apply_advice(clicks, targets):
    """An advice row's button opens its layout: the hash, and so the controls and the view."""
    trigger = ctx.triggered_id
    row = next((i for i in range(advice.ADVICE_ROWS) if trigger == advice_id("apply", i)), None)
    if row is None or not clicks[row] or not isinstance(targets, list) or row >= len(targets):
        return no_update
    target = targets[row]
    if not isinstance(target, str):
        return no_update
    return cluster.read(target).key  # read bounds it as any link


def drawn_outputs(view: render.ModelView) -> dict:
    """Every output of a view (a job's answer: what the page shows before it is not known)."""
    return view_values(view, unsent(view_parts(view), None)[0])


def bar_rows(parts: dict[str, dict[str, float]], *, scale: float = 1.0, unit: str = "") -> list[Row]:
    """The iteration breakdown as small stacked bars in plain HTML (a Plotly chart cost the browser about
    30 ms a redraw for a handful of numbers): one row per label of ``parts`` ({label: {part: seconds}},
    every row the same parts), a div whose background is the stacked parts (a CSS gradient) and whose
    width is its total against the longest row's, in ``unit`` after ``scale``."""
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
        out.append(Row(label, style, "\n".join(lines), " · ".join(shown) + f" = {total:,.1f}{u}"))
    return out


class Row(NamedTuple):
    label: str  # the schedule
    style: dict  # the bar's width and its parts as gradient stops
    title: str  # hover: every part in the unit, with its share
    text: str  # the parts shown beside the bar (those above zero) and the total


def part_name(key: str) -> str:
    """ "tp_comm_s" → "tp comm" (the estimate's breakdown keys are seconds)."""
    return key.removesuffix("_s").replace("_", " ")


def bar_legend(parts: dict[str, dict[str, float]]) -> list[tuple[str, str]]:
    """(name, color) of each part, in the order of the bars."""
    keys = list(next(iter(parts.values()))) if parts else []
    return [(part_name(k), COLORS[i % len(COLORS)]) for i, k in enumerate(keys)]
