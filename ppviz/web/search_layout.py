"""The search view: inputs, progress and cancel, the ranked table and the time-against-memory scatter."""

from __future__ import annotations

from dash import html


def search_view() -> html.Div:
    return html.Div([], id="search-view", className="main", style={"display": "none"})
