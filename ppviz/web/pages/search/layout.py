"""The search view: inputs, progress and cancel, the ranked table and the time-against-memory scatter."""

from __future__ import annotations

import dash_ag_grid as dag
from dash import dcc, html

from ppviz import REGISTRY
from ppviz.estimate import specs
from ppviz.search.engine import BUDGET_OPS

from ...common import charts, profile_upload, widgets
from ...common.charts import GRAPH_CONFIG
from .ids import URL, cid
from .state import FIELDS, SearchState

CONTROLS = ("model", "gpu", *FIELDS, "schedules", "tp_mode")
CALIBRATION = cid("calibration")  # the store of the uploaded (or linked) profile's efficiencies
# What a layout is and what it gives, readable at 1280 × 800 without scrolling sideways: the layout in words
# (wrapped), figures in one unit per column; every other field of a row stays in its data (a row opens in the
# model view from it)
_NUMBER = {"type": "rightAligned", "cellStyle": {"fontVariantNumeric": "tabular-nums"}}
COLUMNS = [
    {"field": "rank", "headerName": "#", "width": 48, "minWidth": 40, "maxWidth": 56},
    {"field": "schedule", "headerName": "schedule", "width": 130, "minWidth": 96},
    {"field": "layout", "headerName": "layout", "minWidth": 180, "flex": 1, "wrapText": True, "autoHeight": True,
     "cellStyle": {"lineHeight": "18px", "paddingTop": "5px", "paddingBottom": "5px"}},
    {"field": "iteration", "headerName": "iteration", "width": 96, "minWidth": 80, **_NUMBER,
     "valueFormatter": {"function": "params.value.toLocaleString('en-US') + ' ' + params.data.iteration_unit"}},
    {"field": "tokens_per_s", "headerName": "tokens/s", "width": 100, "minWidth": 84, **_NUMBER,
     "valueFormatter": {"function": "params.value.toLocaleString('en-US')"}},
    {"field": "mfu_pct", "headerName": "MFU", "width": 70, "minWidth": 60, **_NUMBER,
     "valueFormatter": {"function": "params.value.toFixed(1) + '%'"}},
    {"field": "peak_gib", "headerName": "peak (GiB)", "width": 84, "minWidth": 70, **_NUMBER,
     "valueFormatter": {"function": "params.value.toFixed(1)"}},
    {"field": "fits_text", "headerName": "fits", "width": 56, "minWidth": 48},
]  # fmt: skip


def control_values(state: SearchState) -> dict[str, object]:
    values = {name: getattr(state, name) for name in CONTROLS if name != "tp_mode"}
    values["schedules"] = list(state.schedules)
    values["tp_mode"] = list(state.tp_modes)
    return values


def search_view() -> html.Div:
    values = control_values(SearchState())
    return html.Div(
        [
            dcc.Location(id=URL, refresh="callback-nav"),  # see ppviz.web.shell
            dcc.Store(id="request-search"),
            dcc.Store(id="ran-search"),
            dcc.Store(id=CALIBRATION),  # {"gpu", "efficiencies"}: the profile the next search uses
            dcc.Store(id=cid("calibration-checked")),  # an upload that passed the browser's size check
            dcc.Store(id=cid("calibration-limit"), data=profile_upload.MAX_BYTES),
            html.Aside(_panel(values), className="panel"),
            html.Section(_results(), className="views"),
        ],
        id="search-view",
        className="main",
    )


# a long command wraps in its box; the copy (the element's text) keeps it on one line with its spaces
EXPORT_BUTTONS = {"csv": "CSV", "json": "JSON", "megatron": "Megatron-LM args (#1)"}
EXPORT_BUTTONS["torchtitan"] = "torchtitan TOML (#1)"


def _row(name: str, label: str, widget, help_text: str = "", message: bool = False) -> html.Div:
    box = {"message_id": f"msg-{name}-search"} if message else {}
    return widgets.row(label, widget, for_id=cid(name), help_text=help_text, show_help=True, **box)


def _panel(values: dict) -> list:
    numbers = [
        _row(
            name,
            f.label,
            dcc.Input(
                id=cid(name),
                type="number",
                min=f.low,
                max=f.high,
                step=1 if f.integer else "any",
                value=values[name],
                debounce=True,
                className="number",
            ),
            message=True,
        )
        for name, f in FIELDS.items()
    ]
    return [
        html.Section(
            [
                html.H3("find the fastest layout that fits"),
                _row(
                    "model",
                    "model preset",
                    dcc.Dropdown(id=cid("model"), options=specs.model_names(), value=values["model"], clearable=False),
                ),
                _row(
                    "gpu",
                    "GPU preset",
                    dcc.Dropdown(id=cid("gpu"), options=specs.gpu_names(), value=values["gpu"], clearable=False),
                ),
                _calibration_row(),
                *numbers,
                _row(
                    "schedules",
                    "schedules to consider",
                    dcc.Dropdown(
                        id=cid("schedules"),
                        options=list(REGISTRY),
                        value=values["schedules"],
                        multi=True,
                        placeholder="every schedule (as ppviz search); pick some to narrow",
                    ),
                    f"searching schedules (v-*, zb-auto) get a budget of {BUDGET_OPS:,} ops of the orders they "
                    "build: work, not time, so the ranking is the same on any machine",
                ),
                _row(
                    "tp_mode",
                    "tensor parallelism",
                    dcc.Checklist(
                        id=cid("tp_mode"),
                        options=[
                            {"label": "1D (Megatron)", "value": "1d"},
                            {"label": "2D (SUMMA over hidden × sequence)", "value": "2d"},
                        ],
                        value=values["tp_mode"],
                    ),
                    "2D: every grid R × C = tp, as NERSC's performance model searches it",
                ),
                html.Button("search", id="run-search", n_clicks=0, className="button"),
                html.Div(id="error-search", className="control-msg"),
            ],
            className="group",
        ),
        html.P(
            "Every layout (tp, cp, pp, dp, micro-batch size, schedule and its chunks, recompute, sequence parallel, "
            "ZeRO, how dp and pp ranks share the NVLink domain) that divides is ranked by its simulated iteration "
            "time; layouts that cannot enter the top are skipped by a proven bound. The same ranking as "
            "`ppviz search`.",
            className="help",
        ),
    ]


def _calibration_row() -> html.Div:
    """A drop zone for a calibration profile, and the box its line or error goes to."""
    zone = dcc.Upload(
        html.Div(["drop or ", html.A("choose"), f" a profile (up to {profile_upload.MAX_BYTES // 1024} KB)"]),
        id=cid("calibration-upload"),
        # No max_size: the browser would drop a larger file silently; the page's size check says why.
        max_size=-1,
        multiple=False,
        className="upload",
    )
    help_text = ("written by ppviz calibrate: the search takes its GPU and efficiencies (matmul, HBM, NVLink, "
                 "network), as ppviz search --calibration FILE")  # fmt: skip
    return widgets.row("Calibration profile (.json)", zone, for_id=cid("calibration-upload"), help_text=help_text,
                       show_help=True, message_id="msg-calibration-search")  # fmt: skip


def _results() -> list:
    return [
        html.Div(id="notes-search", className="notes"),
        widgets.job_box(prefix="", suffix="-search", cancel="cancel", top=1, error=False),
        html.Div(id="summary-search", className="help"),
        dag.AgGrid(
            id="grid-search",
            columnDefs=COLUMNS,
            rowData=[],
            defaultColDef={
                "sortable": True,
                "resizable": True,
                "wrapHeaderText": True,
                "autoHeaderHeight": True,
                "minWidth": 42,
            },
            dashGridOptions={
                "rowSelection": {"mode": "singleRow", "checkboxes": False, "enableClickSelection": True},
                "domLayout": "autoHeight",
                "suppressColumnVirtualisation": True,
                "animateRows": False,
                "rowHeight": 30,
            },
            getRowId="params.data.command",
            columnSize="responsiveSizeToFit",
            style={"width": "100%"},
        ),
        html.Div("click a row to open that layout in the model & cluster view", className="help"),
        _exports(),
        dcc.Graph(id="scatter-search", config=GRAPH_CONFIG, figure=charts.empty(120)),
    ]


def _exports() -> html.Div:
    """Downloads of the table on screen and its best layout's launch settings; the search's command."""
    buttons = widgets.export_buttons(EXPORT_BUTTONS, "search")
    command = widgets.command_box("search")
    return html.Div(
        [
            html.Div(["export the table: ", *buttons], className="exports"),
            html.Div(id="export-msg-search", className="control-msg"),
            dcc.Download(id="download-search"),
            command,
        ],
        className="handoff",
    )
