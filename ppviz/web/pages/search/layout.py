"""The search view: inputs, progress and cancel, the ranked table and the time-against-memory scatter."""

from __future__ import annotations

import dash_ag_grid as dag
from dash import dcc, html

from ppviz import REGISTRY
from ppviz.estimate import specs

from ...common import charts, widgets
from ...common.charts import GRAPH_CONFIG
from .ids import URL, cid
from .state import FIELDS, SearchState

CONTROLS = ("model", "gpu", *FIELDS, "schedules", "tp_mode")
# minWidth: what the values need in the grid's 12 px font, so that at 1280 px the columns are not squeezed
# to "1…" (the grid scrolls sideways instead)
COLUMNS = [
    {"field": "rank", "headerName": "#", "width": 60, "minWidth": 44, "pinned": "left"},
    {"field": "schedule", "headerName": "schedule", "width": 130, "minWidth": 112},
    *({"field": k, "headerName": k, "width": 64, "minWidth": 42} for k in ("tp", "pp", "dp", "cp", "vpp", "mbs")),
    {"field": "recompute", "headerName": "recompute", "width": 100, "minWidth": 76},
    {"field": "sp", "headerName": "SP", "width": 60, "minWidth": 42},
    {"field": "tp_text", "headerName": "TP mode", "width": 90, "minWidth": 64},
    {"field": "nvlink_text", "headerName": "NVLink dp×pp", "width": 100, "minWidth": 76},
    {"field": "zero", "headerName": "ZeRO", "width": 70, "minWidth": 50},
    {"field": "iteration_s", "headerName": "iteration (s)", "width": 110, "minWidth": 70},
    {"field": "tokens_per_s", "headerName": "tokens/s", "width": 110, "minWidth": 70},
    {"field": "mfu_pct", "headerName": "MFU (%)", "width": 90, "minWidth": 52},
    {"field": "peak_gb", "headerName": "peak (GB)", "width": 100, "minWidth": 56},
    {"field": "bubble_pct", "headerName": "bubble (%)", "width": 100, "minWidth": 56},
]


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
            html.Aside(_panel(values), className="panel"),
            html.Section(_results(), className="views"),
        ],
        id="search-view",
        className="main",
    )


def _row(name: str, label: str, widget, help_text: str = "") -> html.Div:
    return widgets.row(label, widget, for_id=cid(name), help_text=help_text, show_help=True)


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
                *numbers,
                _row(
                    "schedules",
                    "schedules to consider",
                    dcc.Dropdown(id=cid("schedules"), options=list(REGISTRY), value=values["schedules"], multi=True),
                    "searching schedules (v-*, zb-auto) get a 2 s budget",
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
                    "2D: every grid R × C = tp, as NERSC's model searches it (seed 003)",
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
        dcc.Graph(id="scatter-search", config=GRAPH_CONFIG, figure=charts.empty(120)),
    ]
