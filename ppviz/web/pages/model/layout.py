"""The model & cluster page's controls and charts (the Dash page at ``/model``; its state is the URL's hash)."""

from __future__ import annotations

from dash import dcc, html

from ppviz import REGISTRY
from ppviz.estimate import specs
from ppviz.estimate.specs import PRECISIONS, RECOMPUTE

from ...common import charts, profile_upload, widgets
from ...common.charts import GRAPH_CONFIG
from ...common.cluster import (
    GPU_FIELDS,
    LAYOUT_FIELDS,
    MAX_COMPARE,
    MODEL_FIELDS,
    NUMBER_FIELDS,
    ZERO,
    ModelState,
    control_values,
)
from ...common.widgets import device_options
from .advice import ADVICE_ROWS
from .handoff import calibration_row, export_section, plan_section, upload_row
from .ids import URL, advice_id, bar_id, card_id, cid, msg_id
from .render import CARD_LABELS

CONTROLS = ("mode", "schedule", "compare", "model", "gpu", *NUMBER_FIELDS, "sp", "recompute", "zero", "precision")
CONTROLS += ("split", "lines")
CONTROLS += ("baseline", "compare_show", "sweep_axis", "tpo")
# The controls with a row of their own, and so a message box under it (the compare bar's share compare's).
MESSAGE_NAMES = tuple(n for n in CONTROLS if n not in ("mode", "baseline", "compare_show", "sweep_axis"))
ZERO_LABELS = {
    0: "0: none",
    1: "1: optimizer state sharded (distributed optimizer)",
    2: "2: + gradients sharded",
    3: "3: + weights sharded",
}
RANKING_COLUMNS = ("rank", "schedule", "iteration", "tokens/s", "MFU", "bubble", "peak (GiB)", "fits")
RANKING_COLUMNS += ("vs baseline",)


def model_view() -> html.Div:
    state = ModelState()
    values = control_values(state)
    return html.Div(
        [
            dcc.Location(id=URL, refresh="callback-nav"),  # see ppviz.web.shell
            dcc.Store(id="drawn-model"),
            dcc.Store(id="sent-model"),  # digests of the small outputs on screen (see model_callbacks)
            dcc.Store(id="job-model"),
            dcc.Store(id="calibration-store-model"),  # an upload within the page's limit (see handoff_callbacks)
            html.Aside(_panel(values), className="panel"),
            html.Section(_charts(), className="views"),
        ],
        id="model-view",
        className="main",
    )


def _row(name: str, label: str, widget, help_text: str = "") -> html.Div:
    return widgets.row(
        label,
        widget,
        for_id=cid(name),
        help_text=help_text,
        show_help=True,
        message_id=msg_id(name),
        row_id=f"row-{name}-model",
    )


def _number(name: str, value: object) -> html.Div:
    f = NUMBER_FIELDS[name]
    box = dcc.Input(
        id=cid(name),
        type="number",
        min=f.low,
        max=f.high,
        step=1 if f.integer else "any",
        value=value,
        debounce=True,
        className="number",
    )
    return _row(name, f.label, box)


def _compare_bar(values: dict) -> list:
    """Compare mode's own controls: the baseline of the deltas, charts or sweep, and the sweep's axis."""
    return [
        html.Label("deltas against", htmlFor=cid("baseline"), className="label"),
        dcc.Dropdown(id=cid("baseline"), options=values["compare"], value=values["baseline"], clearable=False),
        dcc.RadioItems(
            id=cid("compare_show"),
            options=[{"label": " Gantt & memory", "value": "charts"}, {"label": " sweep", "value": "sweep"}],
            value=values["compare_show"],
            inline=True,
            className="mode",
        ),
        dcc.RadioItems(
            id=cid("sweep_axis"),
            options=[
                {"label": " m (microbatches)", "value": "m"},
                {"label": " v (vpp)", "value": "v"},
                {"label": " p (pp)", "value": "p"},
            ],
            value=values["sweep_axis"],
            inline=True,
            className="mode",
        ),
        html.Div("the sweep runs along the chosen size, the rest of the layout as set", className="help"),
    ]


def _panel(values: dict) -> list:
    schedules = [{"label": f"{n}: {s.description}", "value": n} for n, s in REGISTRY.items()]
    mode = dcc.RadioItems(
        id=cid("mode"),
        options=[{"label": " one schedule", "value": "single"}, {"label": " compare", "value": "compare"}],
        value=values["mode"],
        inline=True,
        className="mode",
    )
    schedule = _row(
        "schedule",
        "schedule",
        dcc.Dropdown(id=cid("schedule"), options=schedules, value=values["schedule"], clearable=False, optionHeight=48),
    )
    compare = _row(
        "compare",
        "compare 2–4 schedules (same model, GPU and layout)",
        dcc.Dropdown(id=cid("compare"), options=list(REGISTRY), value=values["compare"], multi=True),
    )
    compare.children = [*compare.children[:-1], *_compare_bar(values), compare.children[-1]]
    compare.style = {"display": "none"}
    model = _row(
        "model",
        "model preset",
        dcc.Dropdown(id=cid("model"), options=specs.model_names(), value=values["model"], clearable=False),
        "its fields below can be edited",
    )
    gpu = _row(
        "gpu",
        "GPU preset",
        dcc.Dropdown(id=cid("gpu"), options=specs.gpu_names(), value=values["gpu"], clearable=False),
        "its fields below can be edited",
    )
    sp = _row(
        "sp",
        "sequence parallel",
        dcc.Checklist(
            id=cid("sp"), options=[{"label": " on (needs tp > 1)", "value": "on"}], value=values["sp"], inline=True
        ),
    )
    tpo = _row(
        "tpo",
        "TP communication overlapped with the GEMMs",
        dcc.Checklist(
            id=cid("tpo"),
            options=[{"label": " on (Megatron --tp-comm-overlap; with sequence parallel)", "value": "on"}],
            value=values["tpo"],
            inline=True,
        ),
    )
    recompute = _row(
        "recompute",
        "activation recompute",
        dcc.Dropdown(id=cid("recompute"), options=list(RECOMPUTE), value=values["recompute"], clearable=False),
    )
    zero = _row(
        "zero",
        "ZeRO stage / distributed optimizer",
        dcc.Dropdown(
            id=cid("zero"),
            options=[{"label": ZERO_LABELS[z], "value": z} for z in ZERO],
            value=values["zero"],
            clearable=False,
        ),
    )
    precision = _row(
        "precision",
        "precision of the GEMMs",
        dcc.Dropdown(id=cid("precision"), options=list(PRECISIONS), value=values["precision"], clearable=False),
        "fp8 runs the GEMMs at the GPU's FP8 peak (Transformer Engine); weights and activations stay bf16",
    )
    split = _row(
        "split",
        "layers per stage (optional)",
        dcc.Input(id=cid("split"), type="text", value=values["split"], debounce=True, placeholder="even"),
        "e.g. 9,10,10,…: one count per stage of the schedule (empty: even)",
    )
    lines = _row(
        "lines",
        "memory: devices drawn as lines",
        dcc.Dropdown(  # every device a view can have until the link's view narrows them (see controls.lines_picker)
            id=cid("lines"),
            options=device_options(int(LAYOUT_FIELDS["pp"].high)),
            value=values["lines"],
            multi=True,
            placeholder="highest and lowest peak",
        ),
        "past 8 devices the memory chart is a min–max band, with these devices as lines (empty: the highest and "
        "the lowest peak)",
    )
    return [
        html.Section([mode, schedule, compare], className="group"),
        html.Section(
            [html.H3("model"), model, upload_row(), *[_number(n, values[n]) for n in MODEL_FIELDS]],
            className="group",
        ),
        html.Section(
            [
                html.H3("GPU"),
                gpu,
                calibration_row(profile_upload.MAX_BYTES),
                *[_number(n, values[n]) for n in GPU_FIELDS],
            ],
            className="group",
        ),
        html.Section(
            [
                html.H3("parallel layout"),
                *[_number(n, values[n]) for n in LAYOUT_FIELDS],
                *(sp, tpo, recompute, zero, precision, split),
            ],
            className="group",
        ),
        html.Section([html.H3("memory chart"), lines], className="group"),
        plan_section(),
        export_section(),
    ]


def _charts() -> list:
    return [
        html.Div(id="notes-model", className="notes"),
        html.Div([_card(k, label) for k, label in CARD_LABELS.items()], id="cards-model", className="cards"),
        _advice(),
        html.Div(id="ranking-model"),
        widgets.job_box(suffix="-model"),
        dcc.Graph(id="gantt-model", config=GRAPH_CONFIG, figure=charts.empty(120)),
        html.Div(dcc.Graph(id="memory-model", config=GRAPH_CONFIG, figure=charts.empty(120)), id="memory-box-model"),
        _breakdown(),
        html.Footer(
            [
                "Times in ms and memory in GiB (2³⁰ bytes, as nvidia-smi counts) from ppviz.estimate: the model, ",
                "GPU and layout give each stage's F, B and W time and activation bytes, and the schedule is simulated ",
                "exactly. A layout fits when every device's peak stays within the HBM less the reserve. The same ",
                "numbers as `ppviz estimate` with the same inputs (its defaults are the page's).",
            ],
            className="footer",
        ),
    ]


def _card(key: str, label: str) -> html.Div:
    return html.Div(
        [
            html.Div(label, className="card-label"),
            html.Div(id=card_id("value", key), className="card-value"),
            html.Div(id=card_id("detail", key)),
        ],
        className="card",
        id=f"card-{key}-model",
    )


def _advice() -> html.Div:
    """The card of a layout that does not fit: why, and a row per nearest layout that fits with a button that
    opens it (hidden until needed; a view sets the text and style only, as the cards')."""
    rows = [
        html.Div(
            [
                html.Button(
                    "apply",
                    id=advice_id("apply", i),
                    n_clicks=0,
                    className="button small",
                    style={"margin": "1px 8px 1px 0", "padding": "0 8px"},
                ),
                html.Span(id=advice_id("text", i)),
            ],
            id=advice_id("row", i),
            style={"display": "none"},
        )
        for i in range(ADVICE_ROWS)
    ]
    return html.Div(
        [
            html.Div("does not fit: the nearest layouts that fit", className="card-label"),
            html.Div(id="advice-why-model", className="msg-error"),
            *rows,
            html.Div(id="advice-none-model"),
            dcc.Store(id="advice-targets-model"),
        ],
        id="advice-model",
        className="card",
        style={"display": "none"},
    )


def _breakdown() -> html.Div:
    """The iteration breakdown: a title, a row per schedule (hidden until used) and the parts' legend."""
    rows = [
        html.Div(
            [
                html.Div(id=bar_id("label", i), className="breakdown-label"),
                html.Div(html.Div(id=bar_id("bar", i), className="breakdown-bar"), className="breakdown-track"),
                html.Div(id=bar_id("text", i), className="breakdown-text"),
            ],
            id=bar_id("row", i),
            className="breakdown-row",
            style={"display": "none"},
        )
        for i in range(MAX_COMPARE)
    ]
    title = html.Div("iteration breakdown on the busiest device (ms)", className="breakdown-title")
    legend = html.Div(id="breakdown-legend-model", className="breakdown-legend")
    return html.Div([title, *rows, legend], id="breakdown-model", className="breakdown", style={"display": "none"})
