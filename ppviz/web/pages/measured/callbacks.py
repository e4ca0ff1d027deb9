"""Callbacks of the measured view: the upload and the options ↔ the URL's hash, and the view of the
files the hash names (kept by the server, ``uploads``) drawn from it."""

from __future__ import annotations

from dash import Input, Output, State, callback, clientside_callback, ctx, html, no_update

from ppviz.errors import InputError

from ...common import charts, url_hash, validation, widgets
from . import render, uploads
from . import state as measured_state
from .ids import FIELD_CONTROLS, MESSAGES, PATH, URL, cid
from .layout import CONTROLS, LINK_TEXT, control_values, table

clientside_callback(
    """function(contents, names) {
        // Files past the page's cap get a message here and never travel (the server would refuse the request).
        const noUpdate = window.dash_clientside.no_update;
        const limit = LIMIT;
        if (!contents) {
            return [noUpdate, noUpdate];
        }
        const list = Array.isArray(contents) ? contents : [contents];
        let bytes = 0;
        for (const c of list) {
            const data = String(c).slice(String(c).indexOf(",") + 1);
            bytes += Math.floor((data.length * 3) / 4) - (data.length - data.replace(/=+$/, "").length);
        }
        if (bytes > limit) {
            const text = "the files hold " + bytes.toLocaleString("en-US") + " bytes; the page takes up to " +
                limit.toLocaleString("en-US") + " bytes in all (gzip the traces, or run `ppviz measured FILES…`, " +
                "which has no such cap)";
            return [noUpdate, {type: "Span", namespace: "dash_html_components",
                               props: {children: text, className: "msg-error", role: "alert"}}];
        }
        return [{contents: list, filenames: names || [], at: Date.now()}, null];
    }""".replace("LIMIT", str(uploads.MAX_UPLOAD_BYTES)),
    Output(cid("checked"), "data"),
    Output(cid("upload-error"), "children", allow_duplicate=True),
    Input(cid("upload"), "contents"),
    State(cid("upload"), "filename"),
    prevent_initial_call=True,
)


@callback(
    output={
        "hash": Output(URL, "hash"),
        "controls": {name: Output(cid(name), "value") for name in CONTROLS},
        "upload_error": Output(cid("upload-error"), "children"),
        "notes": Output(cid("notes"), "children"),
    },
    inputs={
        "hash_": Input(URL, "hash"),
        "checked": Input(cid("checked"), "data"),
        "values": {name: Input(cid(name), "value") for name in CONTROLS},
        "pathname": State(URL, "pathname"),
    },
)
def update_hash(hash_, checked, values, pathname):
    """An upload (past the browser's size check) or a changed option writes the hash; a hash (a link, a
    reload) sets the options."""
    nothing = {"hash": no_update, "controls": dict.fromkeys(CONTROLS, no_update), "upload_error": no_update,
               "notes": no_update}  # fmt: skip
    if validation.elsewhere(pathname, PATH):  # a link to another page: the hash is that page's
        return nothing
    current, notes = measured_state.parse(hash_)
    trigger = ctx.triggered_id
    if trigger == cid("checked"):
        checked = checked if isinstance(checked, dict) else {}
        try:
            key = uploads.keep(uploads.decoded(checked.get("contents"), checked.get("filenames")))
        except InputError as e:
            return {**nothing, "upload_error": _error(str(e))}
        state = measured_state.bounded({**measured_state.encode(current), "run": key})[0]
        return {**nothing, "hash": _hash_if_new(state, hash_), "upload_error": None}
    if trigger in {cid(name) for name in CONTROLS}:
        raw = {**measured_state.encode(current), **values}
        state, notes = measured_state.bounded(raw)
        return {**nothing, "hash": _hash_if_new(state, hash_), "notes": widgets.notes(notes)}
    shown = control_values(current)  # the hash changed (or the page opened): the options follow it
    controls = {name: no_update if _same(values.get(name), shown[name]) else shown[name] for name in CONTROLS}
    return {**nothing, "controls": controls, "notes": widgets.notes(notes)}


def _same(shown: object, value: object) -> bool:
    """Whether a control already shows ``value`` (an empty text box shows None)."""
    return (None if shown == "" else shown) == value


def _hash_if_new(state: measured_state.MeasuredState, hash_: object) -> object:
    new = url_hash.write_hash(measured_state.encode(state))
    return no_update if new == hash_ else new


OUTPUTS = {
    "figure": Output(cid("gantt"), "figure"),
    "summary": Output(cid("summary"), "children"),
    "what_if": Output(cid("what-if"), "children"),
    "link": Output(cid("what-if-link"), "href"),
    "link_text": Output(cid("what-if-link"), "children"),
    "fitted": Output(cid("fitted"), "children"),
    "idle": Output(cid("idle"), "children"),
    "late": Output(cid("late"), "children"),
    "text": Output(cid("text"), "children"),
    "command": Output("command-measured", "children"),
    "data": Output(cid("data"), "data"),
    "messages": {name: Output(f"msg-{name}-measured", "children") for name in MESSAGES},
}


@callback(output=OUTPUTS, inputs={"hash_": Input(URL, "hash"), "pathname": State(URL, "pathname")})
def show(hash_, pathname):
    """The view of the files the hash names, read with its options (the same figures as the CLI's)."""
    if validation.elsewhere(pathname, PATH):
        return {name: no_update if name != "messages" else dict.fromkeys(MESSAGES, no_update) for name in OUTPUTS}
    state = measured_state.parse(hash_).state
    files = uploads.held(state.run)
    names = [name for name, _ in files or ()]
    try:
        order = uploads.order_in(files or ())
    except InputError:  # shown by the view below
        order = None
    empty = {"summary": "", "what_if": "", "link": "/", "link_text": LINK_TEXT, "fitted": None, "idle": None,
             "late": None, "text": "", "command": measured_state.cli_command(state, names, order), "data": None,
             "messages": dict.fromkeys(MESSAGES, None)}  # fmt: skip
    if state.run is None:
        return {**empty, "figure": charts.message_figure(uploads.WHAT)}
    if files is None:
        text = ("the server does not hold this run's files (it keeps them for a while; the link names them): "
                "upload the files again; the options in the link are kept")  # fmt: skip
        return {
            **empty,
            "figure": charts.message_figure(text),
            "messages": {**empty["messages"], "upload": _error(text)},
        }
    try:
        view = render.view(state, files)
    except InputError as e:
        where = FIELD_CONTROLS.get(e.field or "", "upload")
        return {**empty, "figure": charts.message_figure(str(e)),
                "messages": {**empty["messages"], where: _error(str(e))}}  # fmt: skip
    if view.data is None:  # read, but nothing to fit (a Megatron-LM log, an order without times)
        return {**empty, "figure": charts.message_figure(view.summary), "summary": view.summary, "text": view.text}
    d = view.data
    return {
        **empty,
        "figure": view.figure,
        "summary": view.summary,
        "what_if": render.what_if_text(d),
        "link": view.what_if_link or "/",
        "link_text": LINK_TEXT
        if view.what_if_error
        else f"open {state.schedule} with these costs in the abstract view",
        "fitted": [
            table(render.FITTED_HEADER, render.fitted_rows(d), cid("fitted-table")),
            html.Div(render.SPREAD_NOTE, className="help"),
        ],
        "idle": table(render.IDLE_HEADER, render.idle_rows(d), cid("idle-table")),
        "late": table(render.LATE_HEADER, render.late_rows(d), cid("late-table"))
        if d["late_ops"]
        else html.Div("no op starts later than the model", className="help"),
        "text": "\n".join(f"note: {n}" for n in d["notes"]),
        "data": d,
        "messages": {**empty["messages"], "schedule": view.what_if_error and _error(view.what_if_error)},
    }


def _error(text: str) -> html.Span:
    return html.Span(text, className="msg-error", role="alert")
