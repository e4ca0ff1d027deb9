"""The model page's hand-off controls: the config.json and calibration profile uploads, the training plan
card, and the exports (CSV, JSON, the ``ppviz`` command, Megatron-LM and torchtitan launch settings).
Layout only; their callbacks are ``handoff_callbacks``."""

from __future__ import annotations

from dash import dcc, html

from ...common import widgets

# a long command wraps in its box; the copy (the element's text) keeps it on one line with its spaces
EXPORT_BUTTONS = {"csv": "CSV", "json": "JSON", "megatron": "Megatron-LM args", "torchtitan": "torchtitan TOML"}
PLAN_FIELDS = {  # id name -> (label, placeholder, help)
    "tokens": ("token budget", "e.g. 1e12", "tokens to train on, e.g. 15e12 for 15 trillion"),
    "price": ("price per GPU-hour (optional)", "e.g. 2.5", "in any currency: the cost is in the same one"),
}


def calibration_row(limit: int) -> html.Div:
    """A drop zone for a calibration profile (``ppviz calibrate -o FILE``, up to ``limit`` bytes), and the
    box its errors and its summary go to."""
    zone = dcc.Upload(
        html.Div(["drop or ", html.A("choose"), " a calibration profile (.json)"]),
        id="calibration-upload-model",
        # No max_size or accept: the browser would drop such files silently. The page refuses a file past the
        # limit with a message before it travels; the server checks the rest.
        max_size=-1,
        className="upload",
    )
    return widgets.row(
        "Calibration profile (.json)",
        zone,
        for_id="calibration-upload-model",
        help_text=f"written by `ppviz calibrate -o FILE` (up to {limit / 1e6:.1f} MB): its GPU preset and its four "
        "efficiencies fill the boxes below",
        show_help=True,
        message_id="calibration-msg-model",
    )


def upload_row() -> html.Div:
    """A drop zone for a Hugging Face config.json, and the box its errors and notes go to."""
    zone = dcc.Upload(
        html.Div(["drop or ", html.A("choose"), " a Hugging Face config.json"]),
        id="hf-upload-model",
        accept=".json,application/json",
        max_size=1 << 20,
        className="upload",
    )
    return widgets.row(
        "model from config.json",
        zone,
        for_id="hf-upload-model",
        help_text="Llama, Mistral, Mixtral, Qwen2/3 (MoE), DeepSeek-V3 or GPT-2; read by this page's server, "
        "never sent anywhere else",
        show_help=True,
        message_id="upload-msg-model",
    )


def plan_section() -> html.Section:
    """Token budget and price → days, GPU-hours and cost of the schedule on screen."""
    rows = [
        widgets.row(
            label,
            dcc.Input(
                id=f"plan-{name}-model",
                type="number",  # no min: a negative value reaches the server, which says why beside the box
                step="any",
                placeholder=placeholder,
                debounce=True,
                persistence=True,
                className="number",
            ),
            for_id=f"plan-{name}-model",
            help_text=help_text,
            message_id=f"plan-{name}-msg-model",
        )
        for name, (label, placeholder, help_text) in PLAN_FIELDS.items()
    ]
    card = html.Div(id="plan-model", className="card plan", **{"aria-live": "polite"})
    return html.Section([html.H3("training plan"), *rows, card], className="group")


def export_section() -> html.Section:
    """Downloads of what is shown and the command that computes it, with a copy button."""
    buttons = widgets.export_buttons(EXPORT_BUTTONS, "model")
    command = widgets.command_box("model")
    return html.Section(
        [
            html.H3("export & hand-off"),
            html.Div(buttons, className="exports"),
            html.Div(id="export-msg-model", className="control-msg"),
            dcc.Download(id="download-model"),
            html.Div("the same numbers from the command line:", className="help"),
            command,
        ],
        className="group",
    )
