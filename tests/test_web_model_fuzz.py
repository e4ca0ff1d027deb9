"""Random and malformed values for every input of the model & cluster and search views' callbacks, through
Dash's real dispatch: a 200 (with a message where a value was refused) or a 400, never a 500, and never
unbounded work (each synchronous answer within a few seconds; background jobs polled to their end).
"""

from __future__ import annotations

import pytest
from fuzzing import check_answer, fuzz_settings, junk, randomised
from hypothesis import given
from hypothesis import strategies as st
from web_dispatch import Page

import app as page_app
from ppviz.web.common import cluster
from ppviz.web.pages.model import callbacks as model_callbacks
from ppviz.web.pages.model import handoff_callbacks
from ppviz.web.pages.model import render as model_render
from ppviz.web.pages.search import callbacks as search_callbacks

JUNK = junk("llama3-8b", "h200", "zb-v", "compare", "#tp=3", "#gpus=0", "on")
MODULES = {model_callbacks.__name__, search_callbacks.__name__, handoff_callbacks.__name__}
OWN = {k for k, v in page_app.app.callback_map.items() if getattr(v.get("callback"), "__module__", "") in MODULES}


@pytest.fixture(scope="module")
def pages() -> list[Page]:
    """The model page and the search page, each opened at its own path."""
    model_render.clear_cache()
    opened = [Page.open(page_app.server, path) for path in (cluster.MODEL_PATH, "/search")]
    for page in opened:
        page.load()
    return opened


def test_the_views_have_callbacks_to_fuzz(pages):
    own = [d for d in pages[0].server_callbacks() if d["output"] in OWN]
    assert len(own) == 16  # list_baselines, the advice card's two, the model page's three uploads, plan, commands,
    # exports, and the search page's calibration upload
    assert all(any(page.has(dep) for page in pages) for dep in own)  # each on its page


@pytest.mark.slow  # fuzz at its full example count
@fuzz_settings(120)
@given(data=st.data())
def test_random_values_for_every_input_never_give_a_500(pages, data):
    dep = data.draw(st.sampled_from([d for d in pages[0].server_callbacks() if d["output"] in OWN]))
    page = next(p for p in pages if p.has(dep))
    check_answer(page, dep, randomised(page, dep, data, JUNK))
