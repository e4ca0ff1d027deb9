"""The page's callbacks. Each reads its inputs, calls a plain function and returns the result.

Registered with ``dash.callback`` on import, so they never import the app (no import cycle).
"""

from __future__ import annotations

import time

from dash import (
    ALL,
    ClientsideFunction,
    Input,
    Output,
    Patch,
    State,
    callback,
    clientside_callback,
    ctx,
    html,
    no_update,
)

from ...common import charts, jobs, validation, widgets
from . import budget, controls, render, sync
from .ids import PATH
from .layout import COMPARE_BAR_STYLE, EXPORTS

PARAMS = {"type": "param", "schedule": ALL, "name": ALL}
MESSAGES = {"type": "control-msg", "name": ALL}
BLOCKS = {"type": "param-block", "schedule": ALL}
PICKS = {"type": "mb-pick", "value": ALL}
TOGGLED = ("devices", "microbatches", "overlap", "b_frees", "lines")
LAYOUT_TRIGGERS = {None, "url", "mode", "schedule", "compare", "upload-store"}
EXPORT_IDS = [f"export-{key}" for key, _ in EXPORTS]


# What drawing a view sets: the charts, cards, ranking, messages beside controls, disabled controls.
VIEW = {
    "gantt": Output("gantt", "figure"),
    "memory": Output("memory", "figure"),
    "memory_box": Output("memory-box", "style"),
    "cards": Output("cards", "children"),
    "ranking": Output("ranking", "rowData"),
    "ranking_box": Output("ranking-box", "style"),
    "messages": Output(MESSAGES, "children"),
    "disabled": {name: Output(name, "disabled") for name in TOGGLED},
    "info": Output("schedule-info", "children"),
    "stamp": Output("render-stamp", "children"),
}
LAYOUT_PARTS = ("ranking_box", "info")  # what only a change of schedule or mode changes


@callback(
    output={
        "hash": Output("url", "hash"),
        "controls": {name: Output(name, "value") for name in sync.CONTROLS},
        "params": Output(PARAMS, "value"),
        "rows": Output("stage-table", "rowData"),
        "options": Output("schedule", "options"),
        "line_options": Output("lines", "options"),
        "notes": Output("link-notes", "children"),
        **VIEW,
        "job": Output("job-request", "data"),
    },
    inputs={
        "hash_": Input("url", "hash"),
        "controls": {name: Input(name, "value") for name in sync.CONTROLS},
        "params": Input(PARAMS, "value"),
        "edit": Input("stage-table", "cellValueChanged"),
        "rows": State("stage-table", "rowData"),
        "reset": Input("stage-reset", "n_clicks"),
        "upload": Input("upload-store", "data"),
        "pathname": State("url", "pathname"),
    },
)
def update_page(hash_, controls, params, edit, rows, reset, upload, pathname):
    """One callback for both directions and the charts, so a slider release costs one round trip.

    URL → controls when the URL changed (page load, a shared link, back/forward); controls → URL
    otherwise. Either way the view is drawn from the resulting state, which ``sync`` has bounded.
    An edit of the stage table (``edit``, the grid's cellValueChanged) is read from its rows.
    A view past a synchronous request's work budget is handed to ``draw_in_background``.
    """
    ids = _ids(ctx.args_grouping["params"])
    params = params if isinstance(params, list) and len(params) == len(ids) else [None] * len(ids)
    trigger = _trigger()
    if trigger == "url" and validation.elsewhere(pathname, PATH):  # a link to another page: the hash is that page's
        return _nothing(len(ids), len(ctx.outputs_grouping["messages"]))
    out = sync.sync(trigger, hash_, controls, list(zip(ids, params)), rows, upload)
    synced = {
        "hash": out.hash if out.hash is not None else no_update,
        "controls": {name: (out.controls or {}).get(name, no_update) for name in sync.CONTROLS},
        "params": out.params if out.params is not None else [no_update] * len(ids),
        "rows": out.rows if out.rows is not None else no_update,
        "options": out.options if out.options is not None else no_update,
        # with the picker's value, in one answer: a value the options lack would be dropped by the picker
        "line_options": widgets.device_options(out.state.devices)
        if out.previous is None or out.previous.devices != out.state.devices
        else no_update,
        "notes": widgets.notes(out.notes) if out.notes is not None else no_update,
        "job": no_update,
    }
    names = [i.get("name") for i in _ids(ctx.outputs_grouping["messages"])]
    single = out.state.mode == "single"
    if trigger == "limit" and single:
        patch = _limit_patch(sync.read(hash_).state, out.state)
        if patch is not None:  # the limit line is all that changed: a Patch of it, nothing drawn again
            return {**synced, **_unchanged(len(names)), "memory": patch}
    view, drawn_as = drawn(out.state, names)
    if drawn_as == "queued":
        return {**synced, **view, "job": {"hash": out.hash or hash_, "at": time.time()}}  # `at`: a new job
    if trigger == "limit" and single:  # the limit line is all that changed: send the memory chart alone
        return {**synced, **_unchanged(len(names)), "memory": view["memory"]}
    kept = () if trigger in LAYOUT_TRIGGERS else LAYOUT_PARTS + (("ranking",) if single else ())
    if trigger == "lines":  # the memory chart and the picker's note: neither the Gantt chart nor the cards
        kept += ("gantt", "cards")
    return {**synced, **view, **{part: no_update for part in kept}}


def _nothing(params: int, messages: int) -> dict:
    """Every output left as it is."""
    synced = {name: no_update for name in ("hash", "rows", "options", "line_options", "notes", "job")}
    synced |= {"controls": {name: no_update for name in sync.CONTROLS}, "params": [no_update] * params}
    return {**synced, **_unchanged(messages)}


def drawn(state, message_names: list[str], background: bool = False) -> tuple[dict, str]:
    """The view's outputs (``VIEW``'s names) and how the Gantt chart is drawn ("queued" when the work
    is left to a background job)."""
    view = render.render(state, background=background)
    compare = state.mode == "compare"
    return {
        "gantt": view.gantt,
        "memory": view.memory if view.memory is not None else no_update,
        "memory_box": {"display": "none"} if view.memory is None else {},
        "cards": [_card(*c) for c in view.cards],
        "ranking": view.ranking,
        "ranking_box": {} if compare else {"display": "none"},
        "messages": [widgets.message(view.messages.get(name)) for name in message_names],
        "disabled": {name: view.disabled.get(name, False) for name in TOGGLED},
        "info": controls.schedule_info(state.schedule) if not compare else [],
        "stamp": f"{view.drawn_as}:{sum(len(r.result) for r in view.runs)}",
    }, view.drawn_as


def _unchanged(messages: int) -> dict:
    """Every view output left as it is; a wildcard output (the messages) takes a list of no_update."""
    return {
        **{part: no_update for part in VIEW},
        "messages": [no_update] * messages,
        "disabled": {name: no_update for name in TOGGLED},
    }


def _limit_patch(before, after):
    """A Patch of the memory chart's limit line, no_update when the line stays, None to redraw instead."""
    try:
        change = render.limit_change(before, after)
    except (LookupError, ValueError):  # not held here, or the view cannot be drawn: the full path says why
        return None
    if change is None:
        return no_update
    index, had, line = change
    patch = Patch()
    if line is None:
        del patch["data"][index]
    elif had:
        patch["data"][index] = line
    else:
        patch["data"].append(line)
    return patch


BACKGROUND_VIEW = ("gantt", "memory", "cards", "ranking", "stamp")


@callback(
    output={
        **{
            part: Output(VIEW[part].component_id, VIEW[part].component_property, allow_duplicate=True)
            for part in BACKGROUND_VIEW
        },
        "error": Output("job-error", "children"),
    },
    inputs=[Input("job-request", "data")],
    background=True,
    manager=jobs.manager(),
    interval=jobs.POLL_MS,
    progress=[Output("job-progress", "value"), Output("job-status", "children")],
    running=[(Output("job-box", "style"), {}, {"display": "none"})],
    cancel=[Input("job-cancel", "n_clicks"), Input("render-stamp", "children")],
    prevent_initial_call=True,
)
def draw_in_background(set_progress, request):
    """Draw a view past a synchronous request's budget in a background job, with progress and a stop button.

    A newer view (any new drawing changes ``render-stamp``), the stop button or a closed tab ends it.
    """
    hash_ = request.get("hash") if isinstance(request, dict) else None
    state = sync.read(hash_).state
    names = " and ".join(state.shown)
    try:
        jobs.watch(on_wait=lambda text: set_progress((0, f"{names}: {text}")))
        set_progress((1, f"{names}: {'searching and ' if budget.in_background(state) else ''}simulating…"))
        for name in state.shown:
            render.cached_run(state, name)  # the slow part; drawing below reuses it
        set_progress((2, f"{names}: drawing…"))
        view, _ = drawn(state, [], background=True)
    except jobs.STOPPED as e:
        cli = budget.cli_command(state, state.shown[0]) if state.shown else "ppviz simulate"
        return _refused(f"{names}: {jobs.why(e)}; or use the CLI: {cli}")
    except ValueError as e:  # drawn() shows the core's messages; this is a bound refused on the way
        return _refused(str(e))
    return {**{part: view[part] for part in BACKGROUND_VIEW}, "error": None}


def _refused(text: str) -> dict:
    """What a background drawing that could not finish shows: why, on the chart and by the stop button."""
    figure = charts.message_figure(text)
    return {
        "gantt": figure,
        "memory": no_update,
        "cards": [],
        "ranking": [],
        "stamp": "none:0",
        "error": widgets.message(("error", text)),
    }


@callback(
    Output("microbatches", "value", allow_duplicate=True),
    Input(PICKS, "n_clicks"),
    prevent_initial_call=True,
)
def pick_microbatches(_clicks):
    """A quick pick (4, 8, … 256) sets the microbatches slider, which redraws the view as a release does."""
    trigger = ctx.triggered_id
    value = trigger.get("value") if isinstance(trigger, dict) else None
    if isinstance(value, bool) or value not in controls.MICROBATCH_PICKS:
        return no_update
    return value


@callback(
    output={
        "blocks": Output(BLOCKS, "style"),
        "schedule_row": Output("row-schedule", "style"),
        "compare_row": Output("row-compare", "style"),
        "compare_bar": Output("compare-bar", "style"),
        "baselines": Output("baseline", "options"),
    },
    inputs=[Input("mode", "value"), Input("schedule", "value"), Input("compare", "value")],
)
def show_controls(mode, schedule, compare):
    """Show the parameter blocks of the schedules on screen, the picker of the mode, and in compare
    mode its bar (baseline, charts or sweep, the sweep's axis) with the compared schedules as baselines."""
    names = [i.get("schedule") for i in _ids(ctx.outputs_grouping["blocks"])]
    compare_mode = mode == "compare"
    compared = [n for n in compare if isinstance(n, str)] if isinstance(compare, list) else []
    return {
        "blocks": [controls.block_style(name, mode, schedule, compare) for name in names],
        "schedule_row": {"display": "none"} if compare_mode else {},
        "compare_row": {} if compare_mode else {"display": "none"},
        "compare_bar": COMPARE_BAR_STYLE if compare_mode else {"display": "none"},
        "baselines": list(dict.fromkeys(compared)),
    }


@callback(
    output={"download": Output("download", "data"), "error": Output("export-error", "children")},
    inputs=[Input(i, "n_clicks") for i in EXPORT_IDS],
    state=[State("url", "hash")],
    background=True,
    manager=jobs.manager(),
    interval=jobs.POLL_MS,
    running=[(Output(i, "disabled"), True, False) for i in EXPORT_IDS],
    prevent_initial_call=True,
)
def download_export(*args):
    """Build the chosen export from the view in the URL, in a background job (big traces take seconds).

    Named after the schedule and size (``zb-v_p8_m32_ops.csv``); past ``budget.EXPORT_MAX_OPS`` ops
    the message gives the CLI command instead.
    """
    hash_ = args[-1]
    kind = str(ctx.triggered_id).removeprefix("export-")
    try:
        jobs.watch()
        return {"download": render.export(sync.read(hash_).state, kind), "error": ""}
    except jobs.STOPPED as e:
        text = f"the export {jobs.why(e)}; or use the CLI"
    except ValueError as e:
        text = f"cannot export: {e}"
    except Exception as e:  # a bug: a message by the buttons, never a 500
        render.log.exception("export %s of %s failed", kind, hash_)
        text = f"cannot export ({type(e).__name__}); please report it"
    return {"download": no_update, "error": widgets.message(("error", text))}


@callback(
    output={"order": Output("upload-store", "data"), "message": Output("upload-error", "children")},
    inputs=[Input("upload-checked", "data")],
    prevent_initial_call=True,
)
def read_upload(checked):
    """Check an uploaded order strictly; on success it becomes the custom schedule.

    Fed by ``checkUpload`` (assets/sync_axes.js), which refuses a file past the size limit in the
    browser with a message, so that it never travels.
    """
    checked = checked if isinstance(checked, dict) else {}
    filename = checked.get("filename") if isinstance(checked.get("filename"), str) else "the file"
    try:
        order = render.read_upload(checked.get("contents"), filename)
        return {"order": order, "message": widgets.message(("reason", f"showing {filename}"))}
    except ValueError as e:  # strict parsing refuses anything but a valid order; say why
        text = str(e)
    except Exception as e:  # a bug: say so, never a 500
        render.log.exception("reading the upload %s failed", filename)
        text = f"cannot read {filename} ({type(e).__name__}); please report it"
    return {"order": no_update, "message": widgets.message(("error", text))}


@callback(
    output={
        "gantt": Output("gantt", "figure", allow_duplicate=True),
        "stamp": Output("zoom-stamp", "children"),
        "job": Output("zoom-job", "data"),
        "cards": Output("cards", "children", allow_duplicate=True),
    },
    inputs=[Input("zoom-request", "data")],
    state=[State("url", "hash"), State("render-stamp", "children"), State("zoom-stamp", "children")],
    prevent_initial_call=True,
)
def zoom_detail(relayout, hash_, stamp, last):
    """Zooming into an overview redraws the window in detail: bars once few enough ops are in view.

    Fed by ``zoomRequest`` (assets/sync_axes.js), which passes on only time-axis zooms and resets.
    Acts only on a single view drawn as an overview; the stamp of the window last drawn keeps a
    repeated event (the memory chart's axis sync echoes zooms) from drawing it twice.
    """
    window = render.zoom_window(relayout)
    nothing = {"gantt": no_update, "stamp": no_update, "job": no_update, "cards": no_update}
    if window is None or not str(stamp or "").startswith("overview"):
        return nothing
    key = f"{stamp}|{hash_}|{window}"
    if (window == "full" and not last) or str(last or "").rsplit("|", 1)[0] == key:
        return nothing  # already drawn so
    state = sync.read(hash_).state
    if state.mode != "single":
        return nothing
    try:
        figure, drawn_as = render.zoomed(state, window)
    except LookupError:  # past the budget and drawn by a background job: zoom in one too
        return {**nothing, "job": {"hash": hash_, "window": window, "key": key}}
    except ValueError:  # refused: the overview stays
        return nothing
    except Exception:  # the view drew a moment ago; if it cannot now, the overview stays as it is
        render.log.exception("zooming into %s failed", hash_)
        return nothing
    stamp = "" if window == "full" else f"{key}|{drawn_as}"
    return {"gantt": figure, "stamp": stamp, "job": no_update, "cards": _zoomed_cards(state, window, drawn_as)}


def _zoomed_cards(state, window, drawn_as: str) -> list:
    """The cards for the window now drawn: the size card counts the ops in view and says how they are drawn."""
    run = render.cached_run(state, state.schedule)
    return [_card(*c) for c in render.cards(run, drawn_as, None if window == "full" else window)]


@callback(
    output={
        "gantt": Output("gantt", "figure", allow_duplicate=True),
        "stamp": Output("zoom-stamp", "children", allow_duplicate=True),
        "cards": Output("cards", "children", allow_duplicate=True),
    },
    inputs=[Input("zoom-job", "data")],
    background=True,
    manager=jobs.manager(),
    interval=jobs.POLL_MS,
    cancel=[Input("render-stamp", "children")],
    prevent_initial_call=True,
)
def zoom_in_background(request):
    """A zoom into a run past the synchronous budget: simulated again (the job that drew it is gone)."""
    request = request if isinstance(request, dict) else {}
    window = request.get("window")
    window = tuple(window) if isinstance(window, list) and len(window) == 2 else window
    checked = render.zoom_window({"xaxis.range": list(window)} if isinstance(window, tuple) else {"xaxis.autorange": 1})
    state = sync.read(request.get("hash")).state
    nothing = {"gantt": no_update, "stamp": no_update, "cards": no_update}
    if checked is None or state.mode != "single":
        return nothing
    try:
        jobs.watch()
        figure, drawn_as = render.zoomed(state, checked, background=True)
        cards = _zoomed_cards(state, checked, drawn_as)
    except (ValueError, *jobs.STOPPED):
        return nothing
    return {"gantt": figure, "stamp": "" if checked == "full" else f"{request.get('key')}|{drawn_as}", "cards": cards}


clientside_callback(
    ClientsideFunction(namespace="ppviz", function_name="imageOptions"),
    Output("gantt", "config"),
    Output("memory", "config"),
    Input("image-format", "value"),
    Input("url", "hash"),
)

clientside_callback(
    ClientsideFunction(namespace="ppviz", function_name="checkUpload"),
    Output("upload-checked", "data"),
    Output("upload-error", "children", allow_duplicate=True),
    Input("upload", "contents"),
    State("upload", "filename"),
    State("upload-limit", "data"),
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


def _ids(matched: list) -> list[dict]:
    """The ids of the components a pattern-matching input or output matched, in order."""
    return [item["id"] if isinstance(item.get("id"), dict) else {} for item in matched]


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
