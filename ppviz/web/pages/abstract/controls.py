"""Control widgets built from data: the page's sliders and each registered schedule's parameters.

A schedule registered in ``ppviz.REGISTRY`` gets its picker entry, description and parameter
controls from its ``Spec``, so a new schedule needs no page change.
"""

from __future__ import annotations

from dash import dcc, html

from ppviz import REGISTRY
from ppviz.schedules.registry import Param, Spec

from ...common import widgets
from .ids import msg_id, param_id, pick_id
from .state import CUSTOM, SLIDERS, ViewState


def schedule_options(with_custom: bool = False) -> list[dict]:
    options = [{"label": f"{name}: {spec.description}", "value": name} for name, spec in REGISTRY.items()]
    if with_custom:
        options.append({"label": "custom: the uploaded order", "value": CUSTOM})
    return options


def compare_options() -> list[dict]:
    return [{"label": name, "value": name} for name in REGISTRY]


# Common microbatch counts, one click each (the 1-512 slider puts them all in its first pixels).
MICROBATCH_PICKS = (4, 8, 16, 32, 64, 128, 256)


def slider(name: str, value: float) -> html.Div:
    """A labelled slider whose number box shows (and accepts, on Enter or leaving it) the exact value.

    No tooltip: the box shows the value, and a tooltip stayed on after release, over the next label."""
    spec = SLIDERS[name]
    widget = dcc.Slider(
        id=name,
        min=spec.low,
        max=spec.high,
        step=spec.step,
        value=value,
        marks=_pow2_marks(spec.high) if name == "microbatches" else _marks(spec.low, spec.high, name == "devices"),
        updatemode="mouseup",
    )
    if name == "microbatches":
        picks = [
            html.Button(str(n), id=pick_id(n), n_clicks=0, className="pick", title=f"{n} microbatches")
            for n in MICROBATCH_PICKS
        ]
        widget = html.Div([widget, html.Div(picks, className="picks", id="microbatch-picks")])
    return control_row(name, spec.label, spec.help, widget)


def _pow2_marks(high: float) -> dict:
    """Marks at the powers of two that have room on a linear slider (1, 64, 128, 256, 512)."""
    return {n: str(n) for n in (1, 64, 128, 256, 512) if n <= high}


def batch_row() -> html.Div:
    """Another way to give the microbatch count: global batch ÷ micro-batch size (both boxes commit on Enter)."""
    boxes = [
        dcc.Input(id=name, type="number", min=1, step=1, placeholder=hint, debounce=True, className="number batch")
        for name, hint in (("gbs", "global batch"), ("mbs", "micro-batch"))
    ]
    return control_row(
        "gbs",
        "or: global batch ÷ micro-batch size",
        "microbatches m = global batch / micro-batch size (they must divide); the slider clears the global batch",
        html.Div([boxes[0], html.Span("÷", className="batch-op"), boxes[1]], className="batch-row"),
    )


def lines_picker() -> html.Div:
    """Which devices the memory chart draws as lines over its min–max band (past 8 devices)."""
    return control_row(
        "lines",
        "memory: devices drawn as lines",
        "past 8 devices the memory chart is a min–max band over all devices, with these devices drawn as lines "
        "(empty: the devices of the highest and the lowest peak)",
        # every device a view can have until the link's view narrows them: a dropdown drops a value it does
        # not offer, so a link's lines=20 arriving before the options of its 32 devices was lost
        dcc.Dropdown(
            id="lines",
            options=widgets.device_options(int(SLIDERS["devices"].high)),
            value=[],
            multi=True,
            placeholder="highest and lowest peak",
        ),
    )


def control_row(name: str, label: str, help_text: str, widget) -> html.Div:
    return widgets.row(label, widget, for_id=name, help_text=help_text, message_id=msg_id(name), row_id=f"row-{name}")


def param_control(spec: Spec, param: Param, value: object) -> html.Div:
    """A slider for a bounded parameter with a default, else a number box (empty = derived)."""
    pid = param_id(spec.name, param.name)
    bounded = param.high is not None and param.default is not None
    if bounded and (param.type is float or param.high - param.low <= 1000):
        step = 1 if param.type is int else (param.high - param.low) / 100
        widget = dcc.Slider(
            id=pid,
            min=param.low,
            max=param.high,
            step=step,
            value=value if value is not None else param.default,
            marks=_marks(param.low, param.high, param.type is int),
            updatemode="mouseup",
        )
    else:
        placeholder = "auto" if param.default is None else str(param.default)
        widget = dcc.Input(
            id=pid,
            type="number",
            min=param.low,
            max=param.high,
            step=1 if param.type is int else "any",
            value=value,
            placeholder=placeholder,
            debounce=True,
            className="number",
        )
    label = param.name.replace("_", " ")
    return html.Div(
        [
            html.Label(label, title=param.help, className="label"),
            widget,
            html.Div(param.help, className="help"),
            html.Div(id=msg_id(f"{spec.name}.{param.name}"), className="control-msg"),
        ],
        className="control",
    )


def param_blocks(state: ViewState) -> list[html.Div]:
    """One block per schedule with parameters; only the blocks of schedules on screen are shown."""
    blocks = []
    for name, spec in REGISTRY.items():
        if not spec.params:
            continue
        chosen = state.params.get(name, {})
        blocks.append(
            html.Div(
                [html.Div(f"{name} settings", className="block-title")]
                + [param_control(spec, p, chosen.get(p.name, p.default)) for p in spec.params],
                id={"type": "param-block", "schedule": name},
                className="param-block",
                style=block_style(name, state.mode, state.schedule, state.compare),
            )
        )
    return blocks


def block_style(name: str, mode: str, schedule: str, compare: list | tuple | None) -> dict:
    compare = list(compare) if isinstance(compare, (list, tuple)) else []  # any value a request sends
    shown = compare if mode == "compare" else [schedule]
    return {} if name in shown else {"display": "none"}


def schedule_info(name: str | None) -> list:
    """Description, reference and formulas of a schedule, under the picker."""
    if name == CUSTOM:
        return [html.P("An uploaded order, timed under the costs set here.")]
    spec = REGISTRY.get(name or "")
    if spec is None:
        return []
    facts = [("reference", spec.reference), ("makespan", spec.formula_text), ("peak activation", spec.memory_text)]
    return [html.P(spec.description, className="description")] + [
        html.Div([html.Span(f"{k}: ", className="fact-key"), v], className="fact") for k, v in facts if v
    ]


def _marks(low: float, high: float, integer: bool) -> dict:
    """Marks at both ends and evenly between, at round numbers."""
    parts = 4 if integer and high - low >= 8 else 2
    points = {low, high}
    for i in range(1, parts):
        points.add(round(high * i / parts) if integer and low <= 1 else low + (high - low) * i / parts)
    return {(int(x) if integer else x): f"{x:g}" for x in sorted(points)}
