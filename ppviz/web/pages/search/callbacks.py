"""Callbacks of the search view: inputs ↔ the URL's hash, the search as a background job with progress
and cancel (``jobs.manager()``: diskcache here, Celery workers with ``REDIS_URL``), and a ranked row
opened in the model & cluster view.
"""

from __future__ import annotations

import time

from dash import Input, Output, State, callback, clientside_callback, ctx, html, no_update

from ppviz.errors import InputError

from ...common import charts, cluster, jobs, profile_upload, url_hash, validation, widgets
from . import exports, render
from . import state as search_state
from .ids import PATH, URL, cid
from .layout import CALIBRATION, CONTROLS, EXPORT_BUTTONS, control_values

DEADLINE_S = max(jobs.JOB_MAX_S - 5, 1)  # the search stops itself (and returns what it has) before the job limit


@callback(
    output={
        "hash": Output(URL, "hash"),
        "controls": {name: Output(cid(name), "value") for name in CONTROLS},
        "notes": Output("notes-search", "children"),
        "request": Output("request-search", "data"),
        "ran": Output("ran-search", "data"),
        "messages": {name: Output(f"msg-{name}-search", "children") for name in search_state.FIELDS},
        "calibration": Output(CALIBRATION, "data"),
        "calibration_msg": Output("msg-calibration-search", "children"),
    },
    inputs={
        "hash_": Input(URL, "hash"),
        "clicks": Input("run-search", "n_clicks"),
        "values": {name: State(cid(name), "value") for name in CONTROLS},
        "stored": State(CALIBRATION, "data"),
        "pathname": State(URL, "pathname"),
        "ran": State("ran-search", "data"),
    },
)
def update_search(hash_, clicks, values, stored, pathname, ran):
    """The search button writes the inputs (and the uploaded profile's efficiencies) into the hash and
    starts the search; a link that carries search inputs sets the inputs and its efficiencies, and reruns it."""
    nothing = {
        "hash": no_update,
        "controls": {name: no_update for name in CONTROLS},
        **dict.fromkeys(("notes", "request", "ran", "calibration", "calibration_msg"), no_update),
        "messages": {name: no_update for name in search_state.FIELDS},
    }
    cleared = {name: None for name in search_state.FIELDS}
    if ctx.triggered_id == "run-search":
        bad = validation.bad_numbers(values, search_state.FIELDS, "the search waits for it")
        if bad:  # a box holds no number in its range: say so beside it, and search nothing
            stale = "the results below are from the last search: enter valid values to search again"
            shown = {**cleared, **{n: widgets.message(m) for n, m in bad.items()}}
            return {**nothing, "notes": widgets.notes([stale]), "messages": shown}
        notes: list[str] = []
        state, bound = search_state.bounded(search_state.with_calibration(values, stored, notes))
        notes += bound
        new_hash = url_hash.write_hash(search_state.encode(state))
        controls = control_values(state) if notes else {}
        calibration = calibration_msg = no_update  # the profile stays, for the next search
    else:
        if validation.elsewhere(pathname, PATH):  # a link to another page (a row opened): the hash is that page's
            return nothing
        state, notes, given = search_state.parse(hash_)
        if not given or search_state.key_of(state) == ran:
            return nothing
        new_hash, controls = no_update, control_values(state)
        calibration = {"gpu": state.gpu, "efficiencies": state.efficiencies} if state.efficiencies else None
        calibration_msg = widgets.message(("reason", line)) if (line := search_state.calibration_line(state)) else None
    key = search_state.key_of(state)
    request = {"search": key, "at": time.time()}  # `at`: the same search asked again is a new job
    return {
        "hash": new_hash,
        "controls": {name: controls.get(name, no_update) for name in CONTROLS},
        "notes": widgets.notes(notes),
        "request": request,
        "ran": key,
        "messages": cleared,
        "calibration": calibration,
        "calibration_msg": calibration_msg,
    }


clientside_callback(
    """function(contents, filename, limit) {
        const noUpdate = window.dash_clientside.no_update;
        if (!contents) { return [noUpdate, noUpdate]; }
        const data = contents.slice(contents.indexOf(",") + 1);
        const bytes = Math.floor((data.length * 3) / 4) - (data.length - data.replace(/=+$/, "").length);
        if (bytes > limit) {
            const text = (filename || "the file") + " is " + bytes.toLocaleString("en-US") + " bytes, larger than " +
                limit / 1024 + " KB: upload a smaller profile (or use the CLI: ppviz search --calibration FILE)";
            return [noUpdate, {type: "Span", namespace: "dash_html_components",
                               props: {children: text, className: "msg-error", role: "alert"}}];
        }
        return [{contents: contents, filename: filename || "", at: Date.now()}, null];
    }""",
    Output(cid("calibration-checked"), "data"),
    Output("msg-calibration-search", "children", allow_duplicate=True),
    Input(cid("calibration-upload"), "contents"),
    State(cid("calibration-upload"), "filename"),
    State(cid("calibration-limit"), "data"),
    prevent_initial_call=True,
)  # a file past the page's size is refused in the browser, before it travels (the server checks it again)


@callback(
    output={
        "gpu": Output(cid("gpu"), "value", allow_duplicate=True),
        "calibration": Output(CALIBRATION, "data", allow_duplicate=True),
        "message": Output("msg-calibration-search", "children", allow_duplicate=True),
    },
    inputs={"checked": Input(cid("calibration-checked"), "data")},
    prevent_initial_call=True,
)
def upload_calibration(checked):
    """A calibration profile sets the GPU to its preset and keeps its efficiencies for the next search;
    a file that is not one changes nothing and says why under the upload."""
    checked = checked if isinstance(checked, dict) else {}
    name = checked.get("filename") if isinstance(checked.get("filename"), str) and checked["filename"] else "the file"
    try:
        prof = profile_upload.read(checked.get("contents"), name)
    except InputError as e:
        return {"gpu": no_update, "calibration": no_update, "message": widgets.message(("error", str(e)))}
    stored = {"gpu": prof.gpu, "efficiencies": dict(prof.efficiencies)}
    line = profile_upload.line(prof, name) + ": press search to use it"
    return {"gpu": prof.gpu, "calibration": stored, "message": widgets.message(("reason", line))}


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
    if validation.elsewhere(pathname, PATH):  # a link to another page: the hash is that page's
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
