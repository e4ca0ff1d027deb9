"""Small pieces of page markup that every view shows the same way: a message beside a control, a list of notes."""

from __future__ import annotations

from dash import dcc, html


def message(message: tuple[str, str] | None):
    """A (kind, text) message as a span styled by kind ("error" is announced to screen readers)."""
    if message is None:
        return None
    kind, text = message
    return html.Span(text, className=f"msg-{kind}", role="alert" if kind == "error" else None)


def notes(items: list[str]):
    """What a link or a request held that was not used, and what was used instead."""
    return html.Ul([html.Li(n) for n in items], className="msg-note") if items else None


def job_box(prefix: str = "job-", suffix: str = "", cancel: str = "stop", top: int = 2, error: bool = True) -> html.Div:
    """Progress of background work (hidden until a job runs) with its cancel button; ids are
    ``{prefix}progress{suffix}``, ``…status…``, ``…cancel…``, ``…box…`` and, with ``error``, ``…error…``."""
    box = html.Div(
        [
            html.Progress(id=f"{prefix}progress{suffix}", value=0, max=top),
            html.Span("", id=f"{prefix}status{suffix}", className="help"),
            html.Button(cancel, id=f"{prefix}cancel{suffix}", n_clicks=0, className="button small"),
        ],
        id=f"{prefix}box{suffix}",
        className="job",
        style={"display": "none"},
    )
    return html.Div([box, html.Div(id=f"{prefix}error{suffix}", className="control-msg")] if error else [box])


def device_options(devices: int) -> list[dict]:
    """The picker's choices: every device of the view."""
    return [{"label": f"device {d}", "value": d} for d in range(max(int(devices), 0))]


def row(
    label: str,
    widget,
    *,
    for_id: str | None,
    help_text: str = "",
    show_help: bool = False,
    message_id: str | dict | None = None,
    row_id: str | None = None,
) -> html.Div:
    """A labelled control of any page: the label (its help as a tooltip), the widget, the help under it
    when shown, and the box its errors and reasons go to."""
    children = [html.Label(label, htmlFor=for_id, title=help_text or None, className="label"), widget]
    if show_help and help_text:
        children.append(html.Div(help_text, className="help"))
    if message_id is not None:
        children.append(html.Div(id=message_id, className="control-msg"))
    return html.Div(children, className="control", **({"id": row_id} if row_id else {}))


COMMAND_STYLE = {"whiteSpace": "pre-wrap", "overflowWrap": "anywhere", "fontSize": "12px"}


def export_buttons(buttons: dict[str, str], suffix: str) -> list[html.Button]:
    """One download button per export (``export-<what>-<suffix>``), labelled."""
    return [
        html.Button(label, id=f"export-{what}-{suffix}", n_clicks=0, className="button small")
        for what, label in buttons.items()
    ]


def command_box(suffix: str) -> html.Div:
    """The page's ``ppviz`` command (``command-<suffix>``) with a button that copies it, spaces and all."""
    return html.Div(
        [
            html.Pre(id=f"command-{suffix}", className="command", style=COMMAND_STYLE),
            dcc.Clipboard(
                id=f"copy-command-{suffix}",
                target_id=f"command-{suffix}",
                title="copy the command",
                className="clipboard",
            ),
        ],
        className="command-box",
    )
