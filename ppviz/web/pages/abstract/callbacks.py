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

from ...common import charts, jobs, widgets
from . import budget, controls, render, sync
from .layout import COMPARE_BAR_STYLE, EXPORTS

PARAMS = {"type": "param", "schedule": ALL, "name": ALL}
MESSAGES = {"type": "control-msg", "name": ALL}
BLOCKS = {"type": "param-block", "schedule": ALL}
PICKS = {"type": "mb-pick", "value": ALL}
TOGGLED = ("devices", "microbatches", "overlap", "b_frees", "lines")
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
    Output("job-request", "data"),
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
    otherwise. Either way the view is drawn from the resulting state, which ``sync`` has bounded.
    A view past a synchronous request's work budget is handed to ``draw_in_background``.
    """
    n = len(sync.CONTROLS)
    values = dict(zip(sync.CONTROLS, args[:n]))
    param_list, rows, _reset, upload = args[n:]
    ids = _pattern_ids(ctx.inputs_list, "param")
    param_list = param_list if isinstance(param_list, list) and len(param_list) == len(ids) else [None] * len(ids)
    out = sync.sync(_trigger(), search, values, list(zip(ids, param_list)), rows, upload)
    control_out = [out.controls[name] if out.controls and name in out.controls else no_update for name in sync.CONTROLS]
    synced = (
        out.search if out.search is not None else no_update,
        *control_out,
        out.params if out.params is not None else [no_update] * len(ids),
        out.rows if out.rows is not None else no_update,
        out.options if out.options is not None else no_update,
        widgets.notes(out.notes) if out.notes is not None else no_update,
    )
    names = [i.get("name") if isinstance(i, dict) else None for i in _pattern_ids(ctx.outputs_list, "control-msg")]
    trigger = _trigger()
    if trigger == "limit" and out.state.mode == "single":
        patch = _limit_patch(sync.read(search).state, out.state)
        if patch is not None:  # the limit line is all that changed: a Patch of it, nothing drawn again
            kept = [no_update] * VIEW_OUTPUTS
            kept[1], kept[6] = patch, [no_update] * len(names)
            return synced + tuple(kept) + (no_update,)
    view = drawn(out.state, names)
    if view[-1] == "queued":
        job = {"search": out.search or search, "at": time.time()}  # `at`: a repeated request is a new job
        return synced + view[:-1] + (job,)
    if trigger == "limit" and out.state.mode == "single":
        view = _only_memory(view, len(names))  # the limit line is all that changed: send the memory chart alone
    elif trigger == "lines":
        view = _keep_gantt(_keep_layout(view, out.state.mode == "compare"))  # the memory chart and the picker's note
    elif trigger not in LAYOUT_TRIGGERS:
        view = _keep_layout(view, out.state.mode == "compare")  # same schedule and mode: boxes stay
    return synced + view[:-1] + (no_update,)


def drawn(state, message_names: list[str], background: bool = False) -> tuple:
    """The view outputs: charts, cards, ranking, messages next to controls, disabled controls; last,
    how the Gantt chart is drawn ("queued" when the work is left to a background job)."""
    view = render.render(state, background=background)
    compare = state.mode == "compare"
    return (
        view.gantt,
        view.memory if view.memory is not None else no_update,
        {"display": "none"} if view.memory is None else {},
        [_card(*c) for c in view.cards],
        view.ranking,
        {} if compare else {"display": "none"},
        [widgets.message(view.messages.get(name)) for name in message_names],
        *[view.disabled.get(name, False) for name in TOGGLED],
        controls.schedule_info(state.schedule) if not compare else [],
        f"{view.drawn_as}:{sum(len(r.result) for r in view.runs)}",
        view.drawn_as,
    )


def _keep_layout(view: tuple, compare: bool) -> tuple:
    """Leave alone the outputs that only a change of schedule or mode changes."""
    kept = list(view)
    for i in (5, len(view) - 3):  # ranking box, schedule info (the memory box shows or hides with its chart)
        kept[i] = no_update
    if not compare:
        kept[4] = no_update  # the ranking (empty outside compare mode)
    return tuple(kept)


def _keep_gantt(view: tuple) -> tuple:
    """Leave the Gantt chart and the cards as they are (a change of memory lines redraws neither)."""
    kept = list(view)
    kept[0] = kept[3] = no_update
    return tuple(kept)


VIEW_OUTPUTS = 9 + len(TOGGLED)  # what drawn() returns before how the Gantt is drawn


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


def _only_memory(view: tuple, messages: int) -> tuple:
    """Only the memory chart; a wildcard output (the messages) takes a list of no_update."""
    kept = [no_update] * len(view)
    kept[1] = view[1]
    kept[6] = [no_update] * messages
    kept[-1] = view[-1]
    return tuple(kept)


@callback(
    Output("gantt", "figure", allow_duplicate=True),
    Output("memory", "figure", allow_duplicate=True),
    Output("cards", "children", allow_duplicate=True),
    Output("ranking", "data", allow_duplicate=True),
    Output("render-stamp", "children", allow_duplicate=True),
    Output("job-error", "children"),
    Input("job-request", "data"),
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
    search = request.get("search") if isinstance(request, dict) else None
    state = sync.read(search).state
    names = " and ".join(state.shown)
    try:
        jobs.watch(on_wait=lambda text: set_progress((0, f"{names}: {text}")))
        set_progress((1, f"{names}: {'searching and ' if budget.in_background(state) else ''}simulating…"))
        for name in state.shown:
            render.cached_run(state, name)  # the slow part; drawing below reuses it
        set_progress((2, f"{names}: drawing…"))
        view = drawn(state, [], background=True)
    except jobs.STOPPED as e:
        cli = budget.cli_command(state, state.shown[0]) if state.shown else "ppviz simulate"
        text = f"{names}: {jobs.why(e)}; or use the CLI: {cli}"
        return charts.message_figure(text), no_update, [], [], "none:0", widgets.message(("error", text))
    except ValueError as e:  # drawn() shows the core's messages; this is a bound refused on the way
        return charts.message_figure(str(e)), no_update, [], [], "none:0", widgets.message(("error", str(e)))
    gantt, memory, _, cards, ranking = view[:5]
    return gantt, memory, cards, ranking, view[-2], None


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
    Output(BLOCKS, "style"),
    Output("row-schedule", "style"),
    Output("row-compare", "style"),
    Output("compare-bar", "style"),
    Output("baseline", "options"),
    Input("mode", "value"),
    Input("schedule", "value"),
    Input("compare", "value"),
)
def show_controls(mode, schedule, compare):
    """Show the parameter blocks of the schedules on screen, the picker of the mode, and in compare
    mode its bar (baseline, charts or sweep, the sweep's axis) with the compared schedules as baselines."""
    names = [i["schedule"] for i in _pattern_ids(ctx.outputs_list, "param-block")]
    compare_mode = mode == "compare"
    compared = [n for n in compare if isinstance(n, str)] if isinstance(compare, list) else []
    return (
        [controls.block_style(name, mode, schedule, compare) for name in names],
        {"display": "none"} if compare_mode else {},
        {} if compare_mode else {"display": "none"},
        COMPARE_BAR_STYLE if compare_mode else {"display": "none"},
        list(dict.fromkeys(compared)),
    )


@callback(
    Output("download", "data"),
    Output("export-error", "children"),
    *[Input(i, "n_clicks") for i in EXPORT_IDS],
    State("url", "search"),
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
    search = args[-1]
    kind = str(ctx.triggered_id).removeprefix("export-")
    try:
        jobs.watch()
        return render.export(sync.read(search).state, kind), ""
    except jobs.STOPPED as e:
        return no_update, widgets.message(("error", f"the export {jobs.why(e)}; or use the CLI"))
    except ValueError as e:
        return no_update, widgets.message(("error", f"cannot export: {e}"))
    except Exception as e:  # a bug: a message by the buttons, never a 500
        render.log.exception("export %s of %s failed", kind, search)
        return no_update, widgets.message(("error", f"cannot export ({type(e).__name__}); please report it"))


@callback(
    Output("upload-store", "data"),
    Output("upload-error", "children"),
    Input("upload-checked", "data"),
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
        return render.read_upload(checked.get("contents"), filename), widgets.message(("reason", f"showing {filename}"))
    except ValueError as e:  # strict parsing refuses anything but a valid order; say why
        return no_update, widgets.message(("error", str(e)))
    except Exception as e:  # a bug: say so, never a 500
        render.log.exception("reading the upload %s failed", filename)
        return no_update, widgets.message(("error", f"cannot read {filename} ({type(e).__name__}); please report it"))


@callback(
    Output("gantt", "figure", allow_duplicate=True),
    Output("zoom-stamp", "children"),
    Output("zoom-job", "data"),
    Output("cards", "children", allow_duplicate=True),
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
    window = render.zoom_window(relayout)
    nothing = (no_update,) * 4
    if window is None or not str(stamp or "").startswith("overview"):
        return nothing
    key = f"{stamp}|{search}|{window}"
    if (window == "full" and not last) or str(last or "").rsplit("|", 1)[0] == key:
        return nothing  # already drawn so
    state = sync.read(search).state
    if state.mode != "single":
        return nothing
    try:
        figure, drawn_as = render.zoomed(state, window)
        size = _size_patch(state, window, drawn_as)
    except LookupError:  # past the budget and drawn by a background job: zoom in one too
        return no_update, no_update, {"search": search, "window": window, "key": key}, no_update
    except ValueError:  # refused: the overview stays
        return nothing
    except Exception:  # the view drew a moment ago; if it cannot now, the overview stays as it is
        render.log.exception("zooming into %s failed", search)
        return nothing
    return figure, "" if window == "full" else f"{key}|{drawn_as}", no_update, size


def _size_patch(state, window, drawn_as: str) -> Patch:
    """The size card's detail for the window now drawn (the card said "overview" while bars showed)."""
    run = render.cached_run(state, state.schedule)
    patch = Patch()
    detail = render.size_detail(run, drawn_as, None if window == "full" else window)
    patch[render.SIZE_CARD]["props"]["children"][2]["props"]["children"] = detail
    return patch


@callback(
    Output("gantt", "figure", allow_duplicate=True),
    Output("zoom-stamp", "children", allow_duplicate=True),
    Output("cards", "children", allow_duplicate=True),
    Input("zoom-job", "data"),
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
    state = sync.read(request.get("search")).state
    if checked is None or state.mode != "single":
        return no_update, no_update, no_update
    try:
        jobs.watch()
        figure, drawn_as = render.zoomed(state, checked, background=True)
        size = _size_patch(state, checked, drawn_as)
    except (ValueError, *jobs.STOPPED):
        return no_update, no_update, no_update
    return figure, "" if checked == "full" else f"{request.get('key')}|{drawn_as}", size


@callback(Output("lines", "options"), Input("url", "search"))
def line_options(search):
    """The memory-lines picker offers the devices of the view in the link."""
    return widgets.device_options(sync.read(search).state.devices)


clientside_callback(
    ClientsideFunction(namespace="ppviz", function_name="imageOptions"),
    Output("gantt", "config"),
    Output("memory", "config"),
    Input("image-format", "value"),
    Input("url", "search"),
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
        first = group[0].get("id") if isinstance(group, list) and group and isinstance(group[0], dict) else None
        if isinstance(first, dict) and first.get("type") == kind:
            return [item.get("id") if isinstance(item, dict) else None for item in group]
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
