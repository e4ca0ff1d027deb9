"""Callbacks of the model & cluster page.

One callback keeps the controls and the URL's hash in step (in both directions) and draws the
view from the resulting state, like the abstract view's; a view past the synchronous budget is
drawn by a background job (``jobs.manager()``) with progress and a stop button. Both send only
the outputs that changed (see ``outputs``).
"""

from __future__ import annotations

import time

from dash import Input, Output, State, callback, ctx, no_update

from ...common import charts, cluster, jobs, url_hash, widgets
from ...common.cluster import ModelState
from . import outputs, render
from .ids import PATH, URL, cid, msg_id
from .layout import CONTROLS, GPU_FIELDS, MESSAGE_NAMES, MODEL_FIELDS, control_values
from .outputs import unsent, view_parts
from .state import key_of, read


@callback(
    output={
        "hash": Output(URL, "hash"),
        "controls": {name: Output(cid(name), "value") for name in CONTROLS},
        "notes": Output("notes-model", "children"),
        "view": outputs.view_outputs(),
        "memory_box": Output("memory-box-model", "style"),
        "messages": {name: Output(msg_id(name), "children") for name in MESSAGE_NAMES},
        "schedule_row": Output("row-schedule-model", "style"),
        "compare_row": Output("row-compare-model", "style"),
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
    controls → hash otherwise. Draws only what changed."""
    trigger = ctx.triggered_id
    if trigger in (None, URL):
        if url_hash.elsewhere(pathname, PATH):  # a link to another page: the hash is that page's
            return _unchanged()
        state, notes = read(hash_)
        key = key_of(state)
        if key == drawn:
            return _unchanged()
        controls = control_values(state)
        new_hash = no_update
    else:
        previous = read(hash_).state
        state, notes = _from_controls(values, previous, trigger)
        key = key_of(state)
        new_hash = key if key != hash_ else no_update
        preset = trigger in (cid("model"), cid("gpu"))
        controls = control_values(state) if notes or preset else None
        if controls is not None and not preset:
            controls = {k: v for k, v in controls.items() if k != "compare"}
        if values.get("baseline") != state.reference:  # the baseline left the comparison: the first is used
            controls = {**(controls or {}), "baseline": state.reference}
    view = render.render(state)
    job = {"hash": key_of(state), "at": time.time()}
    compare = state.mode == "compare"
    drawn_parts = view_parts(view)
    small = {
        **drawn_parts,
        "notes": (notes, widgets.notes),
        "memory-box": (view.memory is None, _hidden),
        "row-schedule": (compare, _hidden),
        "row-compare": (not compare, _hidden),
    }
    small |= {f"msg {n}": (view.messages.get(n), widgets.message) for n in MESSAGE_NAMES}
    out, shown = unsent(small, sent)
    if view.drawn_as == "queued":  # a job draws these next: what they show then is not known here
        shown = {k: v for k, v in shown.items() if k not in drawn_parts}
    return {
        "hash": new_hash,
        "controls": {n: (controls or {}).get(n, no_update) for n in CONTROLS},
        "notes": out["notes"],
        "view": outputs.values(view, out),
        "memory_box": out["memory-box"],
        "messages": {n: out[f"msg {n}"] for n in MESSAGE_NAMES},
        "schedule_row": out["row-schedule"],
        "compare_row": out["row-compare"],
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
        "view": outputs.unchanged(),
        "memory_box": no_update,
        "messages": {n: no_update for n in MESSAGE_NAMES},
        **dict.fromkeys(("schedule_row", "compare_row", "drawn", "job", "sent"), no_update),
    }


def _hidden(hide: bool) -> dict:
    return {"display": "none"} if hide else {}


@callback(
    output={"view": outputs.view_outputs(allow_duplicate=True), "error": Output("job-error-model", "children")},
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
    state = read(hash_).state
    names = " and ".join(state.shown)
    try:
        jobs.watch(on_wait=lambda text: set_progress((0, f"{names}: {text}")))
        set_progress((1, f"{names}: building the schedule and simulating…"))
        view = render.render(state, background=True)
    except jobs.STOPPED as e:
        cli = cluster.cli_command(state, state.shown[0]) if state.shown else "ppviz estimate"
        text = f"{names}: {jobs.why(e)}; or use the CLI: {cli}"
        view = render.ModelView(charts.message_figure(text), None, None, [], [])
        return {"view": drawn_outputs(view), "error": widgets.message(("error", text))}
    error = next((m for m in view.messages.values() if m[0] == "error"), None)
    return {"view": drawn_outputs(view), "error": widgets.message(error)}


@callback(
    output={"options": Output(cid("lines"), "options"), "disabled": Output(cid("lines"), "disabled")},
    inputs=[Input(URL, "hash")],
    state=[State(URL, "pathname"), State(cid("lines"), "options"), State(cid("lines"), "disabled")],
)
def line_options(hash_, pathname, shown, was_disabled):
    """The memory-lines picker offers the pipeline's devices; up to 8 (or comparing) it has nothing to choose.
    Sent only when that changes (every move writes the hash)."""
    if url_hash.elsewhere(pathname, PATH):
        return {"options": no_update, "disabled": no_update}
    state = read(hash_).state
    options = widgets.device_options(state.pp)
    disabled = state.pp <= charts.MEMORY_LINES or state.mode == "compare"
    return {
        "options": no_update if options == shown else options,
        "disabled": no_update if disabled == was_disabled else disabled,
    }


@callback(
    Output(cid("baseline"), "options"),
    Input(cid("compare"), "value"),
)
def list_baselines(compare):
    """The baseline picker offers the compared schedules."""
    return list(dict.fromkeys(n for n in compare if isinstance(n, str))) if isinstance(compare, list) else []


def drawn_outputs(view: render.ModelView) -> dict:
    """Every output of a view (a job's answer: what the page shows before it is not known)."""
    return outputs.values(view, unsent(view_parts(view), None)[0])


def _from_controls(values: dict, previous: ModelState, trigger) -> tuple[ModelState, list[str]]:
    """The state the controls show; a preset's change resets that preset's fields to its values."""
    raw = {k: values.get(k) for k in ("mode", "schedule", "model", "gpu", "recompute", "zero")}
    raw |= {k: values.get(k) for k in ("baseline", "compare_show", "sweep_axis")}
    compare = values.get("compare")
    raw["compare"] = compare if isinstance(compare, (list, tuple)) else ()
    for key in ("sp", "tpo"):
        raw[key] = values.get(key) if isinstance(values.get(key), list) else getattr(previous, key)
    raw["split"] = values.get("split") if values.get("split") is not None else ",".join(map(str, previous.split or ()))
    raw["lines"] = values.get("lines") or ()
    if previous.tp_mode == "2d":  # set by a search row (no control): kept while it still fits the layout
        raw |= {"tp_mode": "2d", "tp2d": previous.tp2d, "summa_blocks": previous.summa_blocks}
    if previous.nvlink_dp_pp:
        raw["nvlink"] = previous.nvlink_dp_pp
    skip = set(MODEL_FIELDS) if trigger == cid("model") else set(GPU_FIELDS) if trigger == cid("gpu") else set()
    numbers = {}
    for name in cluster.NUMBER_FIELDS:
        if name in skip:
            continue
        value = values.get(name)
        numbers[name] = previous.field_value(name) if value is None else value
    if not isinstance(raw["model"], str) or not raw["model"]:
        raw["model"] = previous.model
    if not isinstance(raw["gpu"], str) or not raw["gpu"]:
        raw["gpu"] = previous.gpu
    return cluster.bounded({k: v for k, v in raw.items() if v is not None}, numbers)
