"""Callbacks of the search view: inputs ↔ the URL's hash, the search as a background job with progress
and cancel (``jobs.manager()``: diskcache here, Celery workers with ``REDIS_URL``), and a ranked row
opened in the model & cluster view.
"""

from __future__ import annotations

import time

from dash import Input, Output, State, callback, clientside_callback, ctx, html, no_update

from ...common import charts, cluster, jobs, url_hash, validation, widgets
from . import exports, render
from . import state as search_state
from .ids import PATH, URL, cid
from .layout import CONTROLS, EXPORT_BUTTONS, control_values

DEADLINE_S = max(jobs.JOB_MAX_S - 5, 1)  # the search stops itself (and returns what it has) before the job limit


@callback(
    output={
        "hash": Output(URL, "hash"),
        "controls": {name: Output(cid(name), "value") for name in CONTROLS},
        "notes": Output("notes-search", "children"),
        "request": Output("request-search", "data"),
        "ran": Output("ran-search", "data"),
        "messages": {name: Output(f"msg-{name}-search", "children") for name in search_state.FIELDS},
    },
    inputs={
        "hash_": Input(URL, "hash"),
        "clicks": Input("run-search", "n_clicks"),
        "values": {name: State(cid(name), "value") for name in CONTROLS},
        "pathname": State(URL, "pathname"),
        "ran": State("ran-search", "data"),
    },
)
def update_search(hash_, clicks, values, pathname, ran):
    """The search button writes the inputs into the hash and starts the search; a link that carries
    search inputs sets the inputs and reruns it."""
    nothing = {
        "hash": no_update,
        "controls": {name: no_update for name in CONTROLS},
        **dict.fromkeys(("notes", "request", "ran"), no_update),
        "messages": {name: no_update for name in search_state.FIELDS},
    }
    cleared = {name: None for name in search_state.FIELDS}
    if ctx.triggered_id == "run-search":
        bad = validation.bad_numbers(values, search_state.FIELDS, "the search waits for it")
        if bad:  # a box holds no number in its range: say so beside it, and search nothing
            stale = "the results below are from the last search: enter valid values to search again"
            shown = {**cleared, **{n: widgets.message(m) for n, m in bad.items()}}
            return {**nothing, "notes": widgets.notes([stale]), "messages": shown}
        state, notes = search_state.bounded(values)
        new_hash = url_hash.write_hash(search_state.encode(state))
        controls = control_values(state) if notes else {}
    else:
        if url_hash.elsewhere(pathname, PATH):  # a link to another page (a row opened): the hash is that page's
            return nothing
        state, notes, given = search_state.parse(hash_)
        if not given or search_state.key_of(state) == ran:
            return nothing
        new_hash, controls = no_update, control_values(state)
    key = search_state.key_of(state)
    request = {"search": key, "at": time.time()}  # `at`: the same search asked again is a new job
    return {
        "hash": new_hash,
        "controls": {name: controls.get(name, no_update) for name in CONTROLS},
        "notes": widgets.notes(notes),
        "request": request,
        "ran": key,
        "messages": cleared,
    }


@callback(
    output={
        "rows": Output("grid-search", "rowData"),
        "scatter": Output("scatter-search", "figure"),
        "summary": Output("summary-search", "children"),
        "error": Output("error-search", "children"),
    },
    inputs=[Input("request-search", "data")],
    background=True,
    manager=jobs.manager(),
    interval=jobs.POLL_MS,
    progress=[
        Output("progress-search", "value"),
        Output("progress-search", "max"),
        Output("status-search", "children"),
    ],
    running=[
        (Output("box-search", "style"), {}, {"display": "none"}),
        (Output("run-search", "disabled"), True, False),
    ],
    cancel=[Input("cancel-search", "n_clicks")],
    prevent_initial_call=True,
)
def search_in_background(set_progress, request):
    """Run ``ppviz.search`` in a background job; progress is the layouts decided out of the space."""
    key = request.get("search") if isinstance(request, dict) else None
    state, _, given = search_state.parse("#" + key if isinstance(key, str) else "")
    if not given:  # not a request this page made (it always names its inputs): nothing to search
        return dict.fromkeys(("rows", "scatter", "summary", "error"), no_update)

    def progress(done: int, total: int) -> None:
        set_progress((done, max(total, 1), f"{done:,} of {total:,} layouts decided…"))

    try:
        jobs.watch(on_wait=lambda text: set_progress((0, 1, f"the search is {text}")))
        set_progress((0, 1, f"{state.model} on {state.gpus:,} × {state.gpu}: listing the layouts…"))
        result = render.run(state, progress=progress, deadline_s=DEADLINE_S)
    except jobs.STOPPED as e:
        text = f"the search {jobs.why(e)}: restrict it, or use the CLI: {search_state.cli_command(state)}"
    except ValueError as e:  # nothing divides, nothing fits: the search says what to change
        text = str(e)
    else:
        return {
            "rows": render.rows(result),
            "scatter": render.scatter(result),
            "summary": render.summary(result),
            "error": None,
        }
    return {"rows": [], "scatter": charts.message_figure(text), "summary": "", "error": _error(text)}


@callback(
    Output(URL, "href"),
    Input("grid-search", "selectedRows"),
    State(URL, "hash"),
    prevent_initial_call=True,
)
def open_row(selected, hash_):
    """A clicked row opens that layout in the model & cluster page (Gantt in ms, memory in GiB)."""
    row = selected[0] if isinstance(selected, list) and selected and isinstance(selected[0], dict) else None
    if row is None:
        return no_update
    state = search_state.parse(hash_).state
    try:
        target = search_state.model_link(state, row)
    except (KeyError, TypeError, ValueError):  # not a row of ours (a crafted request): nothing to open
        return no_update
    pairs = cluster.encode(target)
    checked = cluster.parse(url_hash.write_hash(pairs)).state  # the same bounds as any link
    return cluster.link(checked)


clientside_callback(
    """function(n) {
        const text = "cancelled: the search stopped; change the inputs or search again";
        return n ? text : window.dash_clientside.no_update;
    }""",
    Output("summary-search", "children", allow_duplicate=True),
    Input("cancel-search", "n_clicks"),
    prevent_initial_call=True,
)


@callback(
    Output("command-search", "children"),
    Input(URL, "hash"),
    State("command-search", "children"),
    State(URL, "pathname"),
)
def show_command(hash_, shown, pathname):
    """The ``ppviz search`` command of the inputs in the link, for the copy button."""
    if url_hash.elsewhere(pathname, PATH):  # a link to another page: the hash is that page's
        return no_update
    text = search_state.cli_command(search_state.parse(hash_).state)
    return no_update if text == shown else text


@callback(
    output={"data": Output("download-search", "data"), "message": Output("export-msg-search", "children")},
    inputs={"clicks": [Input(f"export-{what}-search", "n_clicks") for what in EXPORT_BUTTONS]},
    state={"rows": State("grid-search", "rowData"), "hash_": State(URL, "hash")},
    prevent_initial_call=True,
)
def download_export(clicks, rows, hash_):
    """The download of the button pressed: the table on screen, or its best layout's launch settings."""
    what = next((w for w in EXPORT_BUTTONS if ctx.triggered_id == f"export-{w}-search"), None)
    if what is None:
        return {"data": no_update, "message": no_update}
    try:
        return {"data": exports.download(search_state.parse(hash_).state, rows, what), "message": None}
    except (KeyError, TypeError, ValueError) as e:  # ValueError: no table yet; the others: rows not of ours
        text = str(e) if isinstance(e, ValueError) else "the table holds rows this page did not make: search again"
        return {"data": no_update, "message": _error(text)}


def _error(text: str) -> html.Span:
    return html.Span(text, className="msg-error", role="alert")
