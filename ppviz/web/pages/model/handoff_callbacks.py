"""Callbacks of the model page's hand-off controls (``handoff``): the uploads write the link, the plan
card and the command follow the link, and each export button downloads what is on screen. Apart from
the view's own callback: an upload only writes the hash, which that callback then reads and draws."""

from __future__ import annotations

from dash import Input, Output, State, callback, clientside_callback, ctx, html, no_update

from ppviz.errors import InputError
from ppviz.estimate import planning

from ...common import cluster, profile_upload, validation, widgets
from . import calibration, exports, render, upload
from .handoff import EXPORT_BUTTONS
from .ids import PATH, URL


@callback(
    output={"hash": Output(URL, "hash", allow_duplicate=True), "message": Output("upload-msg-model", "children")},
    inputs={"contents": Input("hf-upload-model", "contents")},
    state={"filename": State("hf-upload-model", "filename"), "hash_": State(URL, "hash")},
    prevent_initial_call=True,
)
def upload_config(contents, filename, hash_):
    """A config.json becomes the page's model (a preset's architecture with the file's sizes): written
    into the link, so the view redraws from it and a reload keeps it. Errors name the config's field."""
    name = filename if isinstance(filename, str) and filename else "config.json"
    try:
        config = upload.read(contents, name)
        state, notes = upload.state_with(cluster.read(hash_).state, config, name)
    except InputError as e:
        field = f" ({e.field})" if e.field and e.field != upload.FIELD else ""
        return {"hash": no_update, "message": widgets.message(("error", f"{e}{field}"))}
    except (TypeError, ValueError) as e:  # a field of a type no config has (a string for a width, …)
        text = f"{name} is not a config.json ppviz reads: {e}"
        return {"hash": no_update, "message": widgets.message(("error", text))}
    return {"hash": cluster.key_of(state), "message": widgets.notes(notes)}


# A profile past the page's limit is refused here, before it travels (a request carries at most
# protocol.MAX_BODY_BYTES); one within it goes to the store, which the server reads.
clientside_callback(
    """function(contents, filename) {
        var limit = LIMIT, noUpdate = window.dash_clientside.no_update;
        if (!contents) { return [noUpdate, noUpdate]; }
        var data = contents.slice(contents.indexOf(",") + 1);
        var bytes = Math.floor((data.length * 3) / 4) - (data.length - data.replace(/=+$/, "").length);
        if (bytes > limit) {
            var text = (filename || "the file") + " is " + bytes.toLocaleString("en-US") + " bytes, larger than the " +
                (limit / 1e6).toFixed(1) + " MB the page takes: use the CLI: ppviz estimate --calibration FILE";
            return [noUpdate, {type: "Span", namespace: "dash_html_components",
                               props: {children: text, className: "msg-error", role: "alert"}}];
        }
        return [{contents: contents, filename: filename || "", at: Date.now()}, null];
    }""".replace("LIMIT", str(profile_upload.MAX_BYTES)),
    Output("calibration-store-model", "data"),
    Output("calibration-msg-model", "children", allow_duplicate=True),
    Input("calibration-upload-model", "contents"),
    State("calibration-upload-model", "filename"),
    prevent_initial_call=True,
)


@callback(
    output={"hash": Output(URL, "hash", allow_duplicate=True), "message": Output("calibration-msg-model", "children")},
    inputs={"upload": Input("calibration-store-model", "data")},
    state={"hash_": State(URL, "hash")},
    prevent_initial_call=True,
)
def upload_calibration(upload, hash_):
    """A calibration profile selects its GPU preset and fills the four efficiency boxes: written into the
    link, so the view redraws from it (as ``ppviz estimate --calibration FILE``) and a reload keeps it. A file
    that is not a profile gets a message and changes nothing."""
    upload = upload if isinstance(upload, dict) else {}
    filename = upload.get("filename")
    name = filename if isinstance(filename, str) and filename else "the upload"
    try:
        prof = profile_upload.read(upload.get("contents"), name)
    except InputError as e:
        return {"hash": no_update, "message": widgets.message(("error", str(e)))}
    reading = cluster.read(cluster.key_of(calibration.state_with(cluster.read(hash_).state, prof)))
    return {"hash": reading.key, "message": widgets.message(("reason", profile_upload.line(prof, name)))}


@callback(
    output={
        "card": Output("plan-model", "children"),
        "tokens": Output("plan-tokens-msg-model", "children"),
        "price": Output("plan-price-msg-model", "children"),
    },  # fmt: skip
    inputs={
        "tokens": Input("plan-tokens-model", "value"),
        "price": Input("plan-price-model", "value"),
        "hash_": Input(URL, "hash"),
    },  # fmt: skip
    state={"pathname": State(URL, "pathname")},
)
def show_plan(tokens, price, hash_, pathname):
    """Days, GPU-hours and cost of the token budget at the throughput of the schedule on screen, as
    ``ppviz estimate --tokens --gpu-hour-price`` gives them."""
    if validation.elsewhere(pathname, PATH):  # a link to another page: the hash is that page's
        return {"card": no_update, "tokens": no_update, "price": no_update}
    if tokens is None:
        text = "enter a token budget, a number > 0 (e.g. 1e12), for the days, GPU-hours and cost it takes"
        return {"card": html.Div(text, className="help"), "tokens": None, "price": None}
    state = cluster.read(hash_).state
    schedule = exports.launch_schedule(state)
    try:
        exports.estimates(state)
        est = render.estimate_of(cluster.derive(state), schedule)
    except ValueError as e:  # the view itself has an error: it is shown beside its control
        return {"card": html.Div(f"no plan: {e}", className="help"), "tokens": None, "price": None}
    try:
        plan = planning.training_plan(est.tokens_per_s, est.layout.gpus, tokens, price)
    except InputError as e:
        box = "price" if e.field == "gpu_hour_price" else "tokens"
        out = {"card": html.Div("no plan until the inputs are valid", className="help"), "tokens": None, "price": None}
        return {**out, box: widgets.message(("error", str(e)))}
    return {"card": plan_children(plan, est, schedule), "tokens": None, "price": None}


def plan_children(plan: planning.TrainingPlan, est, schedule: str) -> list:
    cost = [] if plan.cost is None else [html.Div(f"cost {plan.cost:,.0f}", className="card-value")]
    fit = "" if est.fits else " · this layout does not fit: its throughput is not reachable as set"
    return [
        html.Div(f"{plan.days:,.1f} days", className="card-value"),
        html.Div(f"{plan.gpu_hours:,.0f} GPU-hours", className="card-value"),
        *cost,
        html.Div(
            f"{plan.tokens:,.4g} tokens at {plan.tokens_per_s:,.0f} tokens/s on {plan.gpus:,} GPUs ({schedule}){fit}",
            className="help",
        ),
    ]


@callback(
    Output("command-model", "children"),
    Input(URL, "hash"),
    State("command-model", "children"),
    State(URL, "pathname"),
)
def show_command(hash_, shown, pathname):
    """The ``ppviz estimate`` command of each schedule on screen, for the copy button."""
    reading = cluster.read(hash_, pathname=pathname)  # None: a link to another page, whose hash this is
    if reading is None:
        return no_update
    text = exports.commands(reading.state)
    return no_update if text == shown else text


@callback(
    output={"data": Output("download-model", "data"), "message": Output("export-msg-model", "children")},
    inputs={"clicks": [Input(f"export-{what}-model", "n_clicks") for what in EXPORT_BUTTONS]},
    state={"hash_": State(URL, "hash")},
    prevent_initial_call=True,
)
def download_export(clicks, hash_):
    """The download of the button pressed, built from the link (what the view shows)."""
    what = next((w for w in EXPORT_BUTTONS if ctx.triggered_id == f"export-{w}-model"), None)
    if what is None:
        return {"data": no_update, "message": no_update}
    try:
        return {"data": exports.download(cluster.read(hash_).state, what), "message": None}
    except ValueError as e:
        return {"data": no_update, "message": widgets.message(("error", str(e)))}
