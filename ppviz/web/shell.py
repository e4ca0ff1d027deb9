"""The page frame: the header with a link to each page, and Dash's page container.

Each view is a Dash page (``register_pages``): only the page on screen is in the DOM, so a move on
one page never fires another page's callbacks. Each page holds its own ``dcc.Location`` (a callback
with an output in this frame would be run while another page is drawn, its inputs missing); they
all use ``refresh="callback-nav"``, so a write by one reaches the others, the router's and this
frame's (``here``), which keeps each page's last hash on its link. The pages never import each
other; this module is the one place that knows them all.
"""

from __future__ import annotations

import json

import dash
from dash import Input, Output, State, clientside_callback, dcc, html

from .pages.abstract import ids as abstract_ids
from .pages.abstract import layout as abstract_layout
from .pages.measured import ids as measured_ids
from .pages.measured import layout as measured_layout
from .pages.model import ids as model_ids
from .pages.model import layout as model_layout
from .pages.search import ids as search_ids
from .pages.search import layout as search_layout

# (path, link text, layout): the order of the links in the header
PAGES = (
    (abstract_ids.PATH, "abstract schedules", abstract_layout.layout),
    (model_ids.PATH, "model & cluster", model_layout.model_view),
    (search_ids.PATH, "search layouts", search_layout.search_view),
    (measured_ids.PATH, "measured run", measured_layout.measured_view),
)


def register_pages() -> None:
    """Register each view as a Dash page (call once the app exists: ``Dash(use_pages=True, pages_folder="")``)."""
    for order, (path, name, build) in enumerate(PAGES):
        dash.register_page(_module(path), path=path, name=name, order=order, layout=_ignoring_query(build))


def _module(path: str) -> str:
    return "ppviz.web.pages." + (path.strip("/") or "abstract")


def _ignoring_query(build):
    """The router passes a query string's pairs to a page's layout; every page keeps its state in the hash."""

    def layout(**_query):
        return build()

    return layout


def layout() -> html.Div:
    return html.Div(
        [
            dcc.Location(id="here", refresh="callback-nav"),
            dcc.Store(id="page-hashes", storage_type="session"),  # each page's last hash, for the links
            header(),
            dash.page_container,
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
            nav(),  # in the header row: a row of its own cost the charts 36 px of an 800 px screen
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


def nav_id(path: str) -> str:
    return "nav-" + (path.strip("/") or "abstract")


def nav() -> html.Nav:
    """A link to each page; its href carries the page's last hash (set in the browser, see below)."""
    links = [
        dcc.Link(name, href=dash.get_relative_path(path), id=nav_id(path), className="tab") for path, name, _ in PAGES
    ]
    return html.Nav(links, id="view-tabs")


clientside_callback(
    """function(pathname, hash, saved) {
        // Each page's last hash, so that a link back to a page opens it as it was left.
        const paths = PATHS;
        const prefix = ((window.dash_clientside && document.getElementById("_dash-config"))
            ? JSON.parse(document.getElementById("_dash-config").textContent).requests_pathname_prefix : "/") || "/";
        const here = "/" + (pathname || prefix).slice(prefix.length).replace(/\\/+$/, "");
        const hashes = Object.assign({}, saved || {});
        if (paths.includes(here)) {
            hashes[here] = hash || "";
        }
        const href = paths.map(p => prefix + p.slice(1) + (hashes[p] || ""));
        const cls = paths.map(p => p === here ? "tab tab--selected" : "tab");
        return [hashes, ...href, ...cls];
    }""".replace("PATHS", json.dumps([path for path, _, _ in PAGES])),
    Output("page-hashes", "data"),
    *[Output(nav_id(path), "href") for path, _, _ in PAGES],
    *[Output(nav_id(path), "className") for path, _, _ in PAGES],
    Input("here", "pathname"),
    Input("here", "hash"),
    State("page-hashes", "data"),
)

clientside_callback(
    "function(n) { return window.location.href; }",
    Output("copy-link", "content"),
    Input("copy-link", "n_clicks"),
    prevent_initial_call=True,
)
