"""The page's callbacks. Each reads its inputs, calls a plain function and returns the result.

Registered with ``dash.callback`` on import, so they never import the app (no import cycle).
"""

from __future__ import annotations

from dash import ALL, ClientsideFunction, Input, Output, State, callback, clientside_callback, ctx, html, no_update

from . import controls, sync, views
from .layout import EXPORTS
from .url_state import parse

PARAMS = {"type": "param", "schedule": ALL, "name": ALL}
MESSAGES = {"type": "control-msg", "name": ALL}
BLOCKS = {"type": "param-block", "schedule": ALL}
TOGGLED = ("devices", "microbatches", "overlap", "b_frees")
LAYOUT_TRIGGERS = {None, "url", "mode", "schedule", "compare", "upload-store"}
EXPORT_IDS = [f"export-{key}" for key, _ in EXPORTS]


@callback(
    Output("url", "search"),
    *[Output(name, "value") for name in sync.CONTROLS],
    Output(PARAMS, "value"),
    Output("stage-table", "data"),
    Output("schedule", "options"),
    Output("link-notes", "children"),
    Output("gantt", "figure"),
    Output("memory", "figure"),
    Output("memory-box", "style"),
    Output("cards", "children"),
    Output("ranking", "data"),
    Output("ranking-box", "style"),
    Output(MESSAGES, "children"),
    *[Output(name, "disabled") for name in TOGGLED],
    Output("schedule-info", "children"),
    Output("render-stamp", "children"),
    Input("url", "search"),
    *[Input(name, "value") for name in sync.CONTROLS],
    Input(PARAMS, "value"),
    Input("stage-table", "data"),
    Input("stage-reset", "n_clicks"),
    Input("upload-store", "data"),
)
def update_page(search, *args):
    """One callback for both directions and the charts, so a slider release costs one round trip.

    URL → controls when the URL changed (page load, a shared link, back/forward); controls → URL
    otherwise. Either way the view is drawn from the resulting state.
    """
    n = len(sync.CONTROLS)
    values = dict(zip(sync.CONTROLS, args[:n]))
    param_list, rows, _reset, upload = args[n:]
    ids = _pattern_ids(ctx.inputs_list, "param")
    out = sync.sync(_trigger(), search, values, list(zip(ids, param_list)), rows, upload)
    control_out = [out.controls[name] if out.controls and name in out.controls else no_update for name in sync.CONTROLS]
    synced = (
        out.search if out.search is not None else no_update,
        *control_out,
        out.params if out.params is not None else [no_update] * len(ids),
        out.rows if out.rows is not None else no_update,
        out.options if out.options is not None else no_update,
        _notes(out.notes) if out.notes is not None else no_update,
    )
    view = drawn(out.state, [i["name"] for i in _pattern_ids(ctx.outputs_list, "control-msg")])
    trigger = _trigger()
    if trigger == "limit" and out.state.mode == "single":
        view = _only_memory(view)  # the limit line is all that changed: send the memory chart alone
    elif trigger not in LAYOUT_TRIGGERS:
        view = _keep_layout(view, out.state.mode == "compare")  # same schedule and mode: boxes stay
    return synced + view


def drawn(state, message_names: list[str]) -> tuple:
    """The view outputs: charts, cards, ranking, messages next to controls, disabled controls."""
    view = views.render(state)
    compare = state.mode == "compare"
    return (
        view.gantt,
        view.memory if view.memory is not None else no_update,
        {"display": "none"} if view.memory is None else {},
        [_card(*c) for c in view.cards],
        view.ranking,
        {} if compare else {"display": "none"},
        [_message(view.messages.get(name)) for name in message_names],
        *[view.disabled.get(name, False) for name in TOGGLED],
        controls.schedule_info(state.schedule) if not compare else [],
        f"{view.drawn_as}:{sum(len(r.result) for r in view.runs)}",
    )


def _keep_layout(view: tuple, compare: bool) -> tuple:
    """Leave alone the outputs that only a change of schedule or mode changes."""
    kept = list(view)
    for i in (2, 5, len(view) - 2):  # memory-box style, ranking box, schedule info
        kept[i] = no_update
    if not compare:
        kept[4] = no_update  # the ranking (empty outside compare mode)
    return tuple(kept)


def _only_memory(view: tuple) -> tuple:
    return (no_update, view[1]) + (no_update,) * (len(view) - 2)


@callback(
    Output("gantt", "config"),
    Output("memory", "config"),
    Input("image-format", "value"),
    prevent_initial_call=True,
)
def set_image_format(fmt):
    """The camera button on each chart downloads this format (drawn in the browser, no server)."""
    config = views.graph_config(fmt)
    return config, config


@callback(
    Output(BLOCKS, "style"),
    Output("row-schedule", "style"),
    Output("row-compare", "style"),
    Input("mode", "value"),
    Input("schedule", "value"),
    Input("compare", "value"),
)
def show_controls(mode, schedule, compare):
    """Show the parameter blocks of the schedules on screen, and the picker of the mode."""
    names = [i["schedule"] for i in _pattern_ids(ctx.outputs_list, "param-block")]
    compare_mode = mode == "compare"
    return (
        [controls.block_style(name, mode, schedule, compare) for name in names],
        {"display": "none"} if compare_mode else {},
        {} if compare_mode else {"display": "none"},
    )


@callback(
    Output("download", "data"),
    Output("export-error", "children"),
    *[Input(i, "n_clicks") for i in EXPORT_IDS],
    State("url", "search"),
    prevent_initial_call=True,
)
def download_export(*args):
    """Build the chosen export from the view in the URL."""
    search = args[-1]
    kind = str(ctx.triggered_id).removeprefix("export-")
    try:
        return views.export(parse(search).state, kind), ""
    except Exception as e:  # a bad view or a bug: a message by the buttons, never a 500
        return no_update, _message(("error", f"cannot export: {e}"))


@callback(
    Output("upload-store", "data"),
    Output("upload-error", "children"),
    Input("upload", "contents"),
    State("upload", "filename"),
    prevent_initial_call=True,
)
def read_upload(contents, filename):
    """Check an uploaded order strictly; on success it becomes the custom schedule."""
    try:
        return views.read_upload(contents, filename), _message(("reason", f"showing {filename}"))
    except Exception as e:  # strict parsing refuses anything but a valid order; say why, never a 500
        return no_update, _message(("error", str(e)))


@callback(
    Output("gantt", "figure", allow_duplicate=True),
    Output("zoom-stamp", "children"),
    Input("zoom-request", "data"),
    State("url", "search"),
    State("render-stamp", "children"),
    State("zoom-stamp", "children"),
    prevent_initial_call=True,
)
def zoom_detail(relayout, search, stamp, last):
    """Zooming into an overview redraws the window in detail: bars once few enough ops are in view.

    Fed by ``zoomRequest`` (assets/sync_axes.js), which passes on only time-axis zooms and resets.
    Acts only on a single view drawn as an overview; the stamp of the window last drawn keeps a
    repeated event (the memory chart's axis sync echoes zooms) from drawing it twice.
    """
    window = views.zoom_window(relayout)
    if window is None or not str(stamp or "").startswith("overview"):
        return no_update, no_update
    key = f"{stamp}|{search}|{window}"
    if (window == "full" and not last) or str(last or "").rsplit("|", 1)[0] == key:
        return no_update, no_update  # already drawn so
    state = parse(search).state
    if state.mode != "single":
        return no_update, no_update
    try:
        figure, drawn_as = views.zoomed(state, window)
    except Exception:  # the view drew a moment ago; if it cannot now, the overview stays as it is
        views.log.exception("zooming into %s failed", search)
        return no_update, no_update
    return figure, "" if window == "full" else f"{key}|{drawn_as}"


clientside_callback(
    "function(n) { return window.location.href; }",
    Output("copy-link", "content"),
    Input("copy-link", "n_clicks"),
    prevent_initial_call=True,
)

clientside_callback(
    ClientsideFunction(namespace="ppviz", function_name="zoomRequest"),
    Output("zoom-request", "data"),
    Input("gantt", "relayoutData"),
    prevent_initial_call=True,
)

clientside_callback(
    ClientsideFunction(namespace="ppviz", function_name="syncAxes"),
    Output("axes-sync", "data"),
    Input("gantt", "relayoutData"),
    Input("memory", "relayoutData"),
    prevent_initial_call=True,
)


def _pattern_ids(groups: list, kind: str) -> list[dict]:
    """The ids matched by the pattern-matching input or output of this type."""
    for group in groups:
        first = group[0]["id"] if isinstance(group, list) and group else None
        if isinstance(first, dict) and first.get("type") == kind:
            return [item["id"] for item in group]
    return []


def _trigger() -> str | None:
    """The id of the input that fired ("param" for any schedule parameter)."""
    trigger = ctx.triggered_id
    return "param" if isinstance(trigger, dict) else trigger


def _card(label: str, value: str, detail: str) -> html.Div:
    return html.Div(
        [html.Div(label, className="card-label"), html.Div(value, className="card-value"), html.Div(detail)],
        className="card",
        id=f"card-{label.replace(' ', '-')}",
    )


def _message(message: tuple[str, str] | None):
    if message is None:
        return None
    kind, text = message
    return html.Span(text, className=f"msg-{kind}", role="alert" if kind == "error" else None)


def _notes(notes: list[str]):
    if not notes:
        return None
    return html.Ul([html.Li(n) for n in notes], className="msg-note")
