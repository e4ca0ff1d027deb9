"""The pages speak to a user about the tool as it is: no word of the project's history (issues, sessions,
seeds, what something was or is now) in any text they render, and no chart button that sends a chart
to an outside service."""

from __future__ import annotations

import re

import pytest
from web_dispatch import Page, answer

import app as page_app
from ppviz.web.common import charts
from ppviz.web.pages.model import render as model_render

# whole words (case-insensitive) that only the project's history explains
HISTORY_WORDS = ("issue", "issues", "session", "sessions", "seed", "previously", "formerly", "was", "were",
                 "now", "anymore", "legacy", "changelog", "no longer", "used to", "new:", "(new)",
                 "this release")  # fmt: skip
PATTERN = re.compile("|".join(rf"(?<!\w){re.escape(w)}(?!\w)" for w in HISTORY_WORDS), re.I)
TEXT_KEYS = {"children", "title", "label", "placeholder", "text", "name", "hovertemplate", "headerName", "value"}
URLS = {"/": "url", "/model": "url-model", "/search": "url-search", "/measured": "url-measured"}  # each page's location
VIEWS = [
    ("/", ""),
    ("/", "#schedule=zb-v&compare=1f1b,zb-v&mode=compare"),
    ("/model", ""),
    ("/model", "#mode=compare&compare=1f1b,zb-v,interleaved-1f1b&vpp=2"),
    ("/model", "#mode=compare&compare=1f1b,zb-v&show=sweep"),
    ("/model", "#gbs=4096"),  # past the page's limits: the message names the command
    ("/model", "#tp=3"),  # an estimate error beside its control
    ("/search", "#gpus=0"),  # a bad box: its message and the stale note
    ("/measured", ""),
    ("/measured", "#run=" + "0" * 32 + "&iteration=x"),  # files the server does not hold, a bad option
]


def texts(node, key: str = "") -> list[str]:
    """Every string a user can read in a layout, a callback answer or a figure."""
    if isinstance(node, str):
        return [node] if key in TEXT_KEYS else []
    if isinstance(node, dict):
        return [t for k, v in node.items() for t in texts(v, k)]
    if isinstance(node, list):
        return [t for v in node for t in texts(v, key)]
    return []


def history_words(strings: list[str]) -> list[tuple[str, str]]:
    return [(m.group(0), s[:160]) for s in strings for m in PATTERN.finditer(s)]


def test_the_word_list_finds_what_it_should():
    assert history_words(["2D, as NERSC's model searches it (seed 003)", "this was 5 ms", "Now faster"])
    assert not history_words(["each chunk runs all microbatches before the next chunk", "known", "swash"])


def test_the_layout_has_no_history_words():
    layout = page_app.server.test_client().get("/_dash-layout").get_json()
    assert history_words(texts(layout)) == []


@pytest.mark.parametrize(("path", "hash_"), VIEWS)
def test_what_the_views_render_has_no_history_words(path, hash_):
    model_render.clear_cache()
    page = Page.open(page_app.server, path, hash_)
    page.load()
    url = URLS[path]
    found = []
    for dep in page.server_callbacks():
        urls = [(url, i["property"]) for i in dep["inputs"] if i["id"] == url]
        if urls and page.has(dep):
            response = page.fire(dep, urls, {(url, "hash"): hash_})
            if response.status_code == 200:
                found += history_words(texts(answer(response)))
    assert found == []


def test_no_chart_can_be_sent_to_an_outside_service():
    config = charts.graph_config()
    assert config["showSendToCloud"] is False and config["showEditInChartStudio"] is False
    assert "sendDataToCloud" in config["modeBarButtonsToRemove"]
