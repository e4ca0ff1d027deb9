"""The page frame: the header with the view tabs, the three pages, and the switch between them.

The pages never import each other; this module is the one place that knows all three.
"""

from __future__ import annotations

from dash import Input, Output, State, clientside_callback, dcc, html

from .pages.abstract import layout as abstract_layout
from .pages.model import layout as model_layout
from .pages.search import layout as search_layout


def layout() -> html.Div:
    return html.Div(
        [
            dcc.Location(id="url", refresh=False),
            header(),
            abstract_layout.layout(),
            model_layout.model_view(),
            search_layout.search_view(),
        ],
        className="page",
    )


def header() -> html.Header:
    return html.Header(
        [
            html.Div(
                [
                    html.H1("ppviz"),
                    html.Span(
                        "exact simulation of pipeline-parallel training schedules",
                        className="subtitle",
                    ),
                ],
                className="brand",
            ),
            view_tabs(),  # in the header row: a row of its own cost the charts 36 px of an 800 px screen
            html.Div(
                [
                    html.Span("copy link", className="copy-label"),
                    dcc.Clipboard(id="copy-link", title="copy a link to this exact view", className="clipboard"),
                ],
                className="share",
            ),
        ],
        className="header",
    )


def view_tabs() -> dcc.Tabs:
    return dcc.Tabs(
        id="view-tabs",
        value="abstract",
        children=[
            dcc.Tab(label="abstract schedules", value="abstract"),
            dcc.Tab(label="model & cluster", value="model"),
            dcc.Tab(label="search layouts", value="search"),
        ],
    )


clientside_callback(
    """function(hash, tab, a, m, s) {
        const nu = window.dash_clientside.no_update;
        const views = ["abstract", "model", "search"];
        const trig = (window.dash_clientside.callback_context.triggered || []).map(t => t.prop_id);
        const params = new URLSearchParams((hash || "").replace(/^#/, ""));
        let view = views.includes(params.get("view")) ? params.get("view") : "abstract";
        let newHash = nu;
        if (trig.includes("view-tabs.value") && views.includes(tab) && tab !== view) {
            view = tab;
            params.set("view", view);
            const only = Array.from(params.keys()).length === 1;
            newHash = view === "abstract" && only ? "" : "#" + params.toString();
        }
        // Only the styles that change: an unchanged view is not rendered again.
        const show = (v, now) => {
            const hidden = !!(now && now.display === "none");
            return hidden === (v !== view) ? nu : (v === view ? {} : {display: "none"});
        };
        return [newHash, tab === view ? nu : view, show("abstract", a), show("model", m), show("search", s)];
    }""",
    Output("url", "hash", allow_duplicate=True),
    Output("view-tabs", "value"),
    Output("abstract-view", "style"),
    Output("model-view", "style"),
    Output("search-view", "style"),
    Input("url", "hash"),
    Input("view-tabs", "value"),
    State("abstract-view", "style"),
    State("model-view", "style"),
    State("search-view", "style"),
    prevent_initial_call="initial_duplicate",
)
