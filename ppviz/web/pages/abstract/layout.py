"""The abstract page: the control panel, metric cards, the Gantt and memory charts on one time axis."""

from __future__ import annotations

import dash_ag_grid as dag
from dash import dcc, html

from ppviz import REGISTRY

from ...common import charts, widgets
from ...common.charts import GRAPH_CONFIG, IMAGE_FORMATS
from . import controls
from .ids import msg_id
from .render import UPLOAD_MAX_BYTES
from .state import SLIDERS, ViewState
from .sync import HOST

UPLOAD_KB = UPLOAD_MAX_BYTES // 1024

STAGE_COLUMNS = [
    {"field": "stage", "headerName": "stage", "editable": False, "cellStyle": {"color": "#667"}},
    *({"field": k, "headerName": k.upper(), "editable": True, "cellDataType": "number"} for k in "fbw"),
    {
        "field": HOST,
        "headerName": "host",
        "headerTooltip": "host overhead of device i: its host's time between two consecutive ops (0: none)",
        "editable": True,
        "cellDataType": "number",
    },
]
WRAPPED = {"wrapText": True, "autoHeight": True, "cellStyle": {"lineHeight": "1.25", "padding": "1px 5px"}}
PERCENT = {"function": "params.value == null ? '' : d3.format('.1%')(params.value)"}
RANKING_COLUMNS = [
    {"field": "rank", "headerName": "rank", "minWidth": 64},
    {"field": "schedule", "headerName": "schedule", "minWidth": 120, **WRAPPED},  # wraps rather than scrolls
    {"field": "makespan", "headerName": "makespan"},
    {"field": "bubble", "headerName": "bubble", "valueFormatter": PERCENT},
    {"field": "span", "headerName": "span"},
    {"field": "peak activation", "headerName": "peak act."},
    {"field": "parameters", "headerName": "params"},
    {"field": "vs baseline", "headerName": "vs baseline", "minWidth": 150, **WRAPPED},
]
COMPARE_BAR_STYLE = {"display": "flex", "flexWrap": "wrap", "gap": "4px 14px", "alignItems": "center"}
EXPORTS = [
    ("ops-csv", "ops CSV"),
    ("run-json", "run JSON"),
    ("torch-csv", "PyTorch order CSV"),
    ("trace", "Chrome / Perfetto trace"),
]


def layout() -> html.Div:
    """The abstract page: its stores, the control panel and the charts."""
    state = ViewState()
    return html.Div(
        [
            dcc.Location(id="url", refresh="callback-nav"),  # see ppviz.web.shell
            dcc.Download(id="download"),
            dcc.Store(id="upload-store"),
            dcc.Store(id="upload-checked"),
            dcc.Store(id="upload-limit", data=UPLOAD_MAX_BYTES),
            dcc.Store(id="job-request"),
            dcc.Store(id="zoom-job"),
            dcc.Store(id="axes-sync"),
            dcc.Store(id="zoom-request"),
            panel(state),
            views(),
        ],
        className="main",
        id="abstract-view",
    )


def panel(state: ViewState) -> html.Aside:
    sliders = [controls.slider(name, getattr(state, name)) for name in SLIDERS]
    sliders.insert(list(SLIDERS).index("microbatches") + 1, controls.batch_row())
    schedule = html.Div(
        [
            dcc.RadioItems(
                id="mode",
                options=[{"label": " one schedule", "value": "single"}, {"label": " compare", "value": "compare"}],
                value=state.mode,
                inline=True,
                className="mode",
            ),
            html.Div(
                [
                    html.Label("schedule", htmlFor="schedule", className="label"),
                    dcc.Dropdown(
                        id="schedule",
                        options=controls.schedule_options(),
                        value=state.schedule,
                        clearable=False,
                        optionHeight=48,
                    ),
                    html.Div(controls.schedule_info(state.schedule), id="schedule-info", className="info"),
                    html.Div(id=msg_id("schedule"), className="control-msg"),
                ],
                id="row-schedule",
                className="control",
            ),
            html.Div(
                [
                    html.Label("compare 2–4 schedules", htmlFor="compare", className="label"),
                    dcc.Dropdown(
                        id="compare", options=controls.compare_options(), value=list(state.compare), multi=True
                    ),
                    html.Div(id=msg_id("compare"), className="control-msg"),
                ],
                id="row-compare",
                className="control",
                style={"display": "none"},
            ),
        ]
    )
    limit = controls.control_row(
        "limit",
        "memory limit line",
        "draw a memory limit on the memory chart, in activation units",
        dcc.Input(id="limit", type="number", min=0, step="any", placeholder="none", debounce=True, className="number"),
    )
    return html.Aside(
        [
            section("schedule", "schedule", [schedule, html.Div(controls.param_blocks(state), id="param-blocks")]),
            section("sizes", "sizes and costs", [*sliders, limit, controls.lines_picker()]),
            section("stages", "per-stage times", stage_table(state), open_=False),
            section("export", "export and import", export_panel(), open_=False),
        ],
        className="panel",
    )


def section(key: str, title: str, children: list, open_: bool = True) -> html.Details:
    """A collapsible group of controls (``#section-KEY``; the browser keeps it as the user left it)."""
    return html.Details(
        [html.Summary(title, className="group-title"), *children],
        open=open_,
        className="group",
        id=f"section-{key}",
    )


def stage_table(state: ViewState) -> list:
    return [
        html.P(
            "One row per device share of the model (1/p of it, in model order). Schedules with more stages "
            "(chunks, V shapes) apply a row to the stages that make up that share. Host: device i's host "
            "overhead, its time between two consecutive ops (as F, B and W; 0: none).",
            className="help",
        ),
        html.Div(
            dag.AgGrid(
                id="stage-table",
                columnDefs=STAGE_COLUMNS,
                rowData=[],
                defaultColDef={"sortable": False, "resizable": False, "minWidth": 48},
                dashGridOptions={"domLayout": "autoHeight", "singleClickEdit": True, "animateRows": False},
                columnSize="responsiveSizeToFit",
                style={"width": "100%"},
            ),
            style={"maxHeight": "260px", "overflowY": "auto"},
        ),
        html.Button("reset to the sliders", id="stage-reset", n_clicks=0, className="button small"),
        html.Div(id=msg_id("stage_times"), className="control-msg"),
    ]


def export_panel() -> list:
    return [
        html.Div(
            [
                html.Span("chart images (camera button on each chart):", className="help"),
                dcc.RadioItems(
                    id="image-format",
                    options=[{"label": f" {f.upper()}", "value": f} for f in IMAGE_FORMATS],
                    value="svg",
                    inline=True,
                    className="mode",
                ),
            ]
        ),
        html.Div(
            [html.Button(label, id=f"export-{key}", n_clicks=0, className="button small") for key, label in EXPORTS],
            className="exports",
        ),
        html.Div(id="export-error", className="control-msg"),
        dcc.Upload(
            id="upload",
            children=html.Div(["drop or ", html.A("choose"), f" a PyTorch-format order CSV (up to {UPLOAD_KB} KB)"]),
            # No max_size or accept: the browser would drop such files silently. checkUpload (assets)
            # refuses a file past the limit with a message before it travels; the server checks the rest.
            max_size=-1,
            multiple=False,
            className="upload",
        ),
        html.Div(id="upload-error", className="control-msg"),
        html.Div(id=msg_id("upload"), className="control-msg"),
    ]


def compare_bar(state: ViewState) -> html.Div:
    """Compare mode's own controls: the baseline of the deltas, charts or sweep, and the sweep's axis."""
    return html.Div(
        [
            html.Label("deltas against", htmlFor="baseline", className="label"),
            dcc.Dropdown(
                id="baseline",
                options=list(state.compare),
                value=state.reference,
                clearable=False,
                style={"minWidth": "150px"},
            ),
            dcc.RadioItems(
                id="compare_show",
                options=[{"label": " Gantt & memory", "value": "charts"}, {"label": " sweep", "value": "sweep"}],
                value=state.compare_show,
                inline=True,
                className="mode",
            ),
            html.Span("sweep along", className="label", title="m microbatches, v chunks per device, p devices"),
            dcc.RadioItems(
                id="sweep_axis",
                options=[
                    {"label": html.Span(" m", title="microbatches"), "value": "m"},
                    {"label": html.Span(" v", title="chunks per device (the chunks parameter)"), "value": "v"},
                    {"label": html.Span(" p", title="devices"), "value": "p"},
                ],
                value=state.sweep_axis,
                inline=True,
                className="mode",
            ),
        ],
        id="compare-bar",
        style={"display": "none"},
    )


def views() -> html.Section:
    state = ViewState()
    return html.Section(
        [
            html.Div(id="link-notes", className="notes"),
            html.Div(id="cards", className="cards"),
            compare_bar(state),
            html.Div(
                dag.AgGrid(
                    id="ranking",
                    columnDefs=RANKING_COLUMNS,
                    rowData=[],
                    defaultColDef={"sortable": True, "resizable": True, "minWidth": 56},
                    # as compact as the table it replaced, so a comparison's time axis stays on an 800 px screen
                    dashGridOptions={
                        "domLayout": "autoHeight",
                        "animateRows": False,
                        "rowHeight": 26,
                        "headerHeight": 28,
                    },
                    columnSize="responsiveSizeToFit",
                    style={"width": "100%"},
                ),
                id="ranking-box",
                style={"display": "none"},
            ),
            job_box(),
            dcc.Loading(
                dcc.Graph(id="gantt", config=GRAPH_CONFIG, figure=charts.empty()),
                custom_spinner=_working(),
                target_components={"gantt": "figure"},
                delay_show=400,
                overlay_style={"visibility": "visible", "opacity": 0.6},
            ),
            html.Div(dcc.Graph(id="memory", config=GRAPH_CONFIG, figure=charts.empty()), id="memory-box"),
            html.Div("", id="render-stamp", className="stamp"),
            html.Div("", id="zoom-stamp", className="stamp"),
            html.Footer(
                [
                    f"{len(REGISTRY)} schedules. Times are per device share of the model; ",
                    "every schedule does the same total work per device, so comparisons are fair.",
                ],
                className="footer",
            ),
        ],
        className="views",
    )


def job_box() -> html.Div:
    """Progress of a view drawn in the background (big sizes, searching schedules), with a stop button."""
    return widgets.job_box()


def _working() -> html.Div:
    """What a redraw taking over 0.4 s shows: a spinner and why it may take a while."""
    searching = ", ".join(name for name, spec in REGISTRY.items() if spec.uses_costs)
    return html.Div(
        [
            html.Div(className="spinner"),
            html.Div(
                [
                    html.Strong("Working… "),
                    f"Schedules that search for their order ({searching}) take a few seconds at large sizes.",
                ]
            ),
        ],
        className="working",
        id="working",
    )
