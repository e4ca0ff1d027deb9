"""The measured view: the upload and its reading options, the what-if schedule; the Gantt of the run
against its simulation, the fitted costs, the idle split, the late ops and the CLI's command."""

from __future__ import annotations

from dash import dcc, html

from ppviz import REGISTRY

from ...common import charts, widgets
from ...common.charts import GRAPH_CONFIG
from . import uploads
from .ids import URL, cid
from .state import MAX_CORES, MAX_ITERATION, NAMINGS, MeasuredState

CONTROLS = ("iteration", "pattern", "naming", "cores", "schedule")
LINK_TEXT = "open in the abstract view"


def control_values(state: MeasuredState) -> dict[str, object]:
    return {name: getattr(state, name) for name in CONTROLS}


def measured_view() -> html.Div:
    return html.Div(
        [
            dcc.Location(id=URL, refresh="callback-nav"),  # see ppviz.web.shell
            html.Aside(_panel(control_values(MeasuredState())), className="panel"),
            html.Section(_results(), className="views"),
        ],
        id="measured-view",
        className="main",
    )


def _row(name: str, label: str, widget, help_text: str = "") -> html.Div:
    return widgets.row(
        label, widget, for_id=cid(name), help_text=help_text, show_help=True, message_id=f"msg-{name}-measured"
    )


def _whole_number(name: str, low: int, high: int, values: dict, empty: str) -> dcc.Input:
    """A box for a whole number in [low, high]; ``empty`` says what leaving it empty means."""
    return dcc.Input(id=cid(name), type="number", min=low, max=high, step=1, value=values[name], debounce=True,
                     className="number", placeholder=empty, style={"width": "170px"})  # fmt: skip


def _panel(values: dict) -> list:
    mb = uploads.MAX_UPLOAD_BYTES / 2**20
    return [
        html.Section(
            [
                html.H3("a measured run against its simulation"),
                _row(
                    "upload",
                    "files of one run",
                    dcc.Upload(
                        id=cid("upload"),
                        children=html.Div(["drop or ", html.A("choose"), " the files (several at once)"]),
                        max_size=-1,  # a browser drops a larger file silently: the server says why instead
                        multiple=True,
                        className="upload",
                    ),
                    f"{uploads.WHAT}; up to {mb:.1f} MB in all (gzipped traces are smaller). "
                    "Larger runs: `ppviz measured FILES…`.",
                ),
                html.Div(id=cid("upload-error"), className="control-msg"),
                dcc.Store(id=cid("checked")),  # the upload once the browser has checked its size
                _row(
                    "iteration",
                    "iteration (ProfilerStep#N)",
                    _whole_number("iteration", 0, MAX_ITERATION, values, "the last complete one"),
                    "which profiled step of the traces to read",
                ),
                _row(
                    "pattern",
                    "annotation pattern (other frameworks)",
                    dcc.Input(
                        id=cid("pattern"),
                        type="text",
                        value=values["pattern"] or "",
                        debounce=True,
                        placeholder="PyTorch pipelining's own annotations",
                        style={"width": "100%"},
                    ),
                    "a regex with named groups kind (F, I, W, B, BW), microbatch and optionally stage, e.g. "
                    r"(?P<kind>[FIWB])_s(?P<stage>\d+)_mb(?P<microbatch>\d+)",
                ),
                _row(
                    "naming",
                    "action naming of an order CSV",
                    dcc.Dropdown(id=cid("naming"), options=list(NAMINGS), value=values["naming"], clearable=False),
                    "auto reads it from the tokens; torch-old: B = input gradient, BW = full backward",
                ),
                _row(
                    "cores",
                    "host cores the ranks shared (CPU runs)",
                    _whole_number("cores", 1, MAX_CORES, values, "a device per rank"),
                    "a CPU run with more ranks than cores: fit each op's own work and simulate the ranks "
                    "sharing the cores",
                ),
                _row(
                    "schedule",
                    "the same costs under",
                    dcc.Dropdown(id=cid("schedule"), options=list(REGISTRY), value=values["schedule"], clearable=False),
                    "its makespan beside the measured one, and a link opening it in the abstract view",
                ),
                dcc.Link(LINK_TEXT, id=cid("what-if-link"), href="/", className="button"),
            ],
            className="group",
        ),
        html.P(
            "Per-stage F, B and W (or the full backward) are fitted from the run's own ops (mean, with spread), "
            "with the p2p latency and each rank's host overhead between ops; "
            "the run's own order is simulated under them. Idle time beyond the simulation's (the bubble this "
            "schedule implies) is the excess: time the run lost. The same figures as `ppviz measured FILES --json`.",
            className="help",
        ),
    ]


def table(header: tuple[str, ...], rows: list[list[str]], table_id: str) -> html.Table:
    return html.Table(
        [
            html.Thead(html.Tr([html.Th(h) for h in header])),
            html.Tbody([html.Tr([html.Td(c) for c in r]) for r in rows]),
        ],
        id=table_id,
        className="measured-table",
    )


def _results() -> list:
    return [
        html.Div(id=cid("notes"), className="notes"),
        html.Div(id=cid("summary"), className="help"),
        dcc.Graph(id=cid("gantt"), config=GRAPH_CONFIG, figure=charts.message_figure(uploads.WHAT)),
        html.Div(id=cid("what-if"), className="help"),
        html.H4("fitted costs"),
        html.Div(id=cid("fitted")),
        html.H4("idle time: the schedule's bubble and the excess"),
        html.Div(id=cid("idle")),
        html.H4("ops that start latest against the model"),
        html.Div(id=cid("late")),
        html.Pre(id=cid("text"), className="command"),
        widgets.command_box("measured"),
        dcc.Store(id=cid("data")),  # `ppviz measured --json`'s object of the view
    ]
