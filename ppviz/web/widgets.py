"""Small pieces of page markup that every view shows the same way: a message beside a control, a list of notes."""

from __future__ import annotations

from dash import html


def message(message: tuple[str, str] | None):
    """A (kind, text) message as a span styled by kind ("error" is announced to screen readers)."""
    if message is None:
        return None
    kind, text = message
    return html.Span(text, className=f"msg-{kind}", role="alert" if kind == "error" else None)


def notes(items: list[str]):
    """What a link or a request held that was not used, and what was used instead."""
    return html.Ul([html.Li(n) for n in items], className="msg-note") if items else None
