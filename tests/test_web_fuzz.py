"""Random and malformed values for every input of every server callback, through Dash's real dispatch.

Wrong types, null, huge and negative numbers, empty and nested lists, junk dicts: the answer is a
200 (with a message on the page where a value was refused) or a 400, never a 500, and never
unbounded work (each request answers within a few seconds; a background job is polled to its end).
"""

from __future__ import annotations

import json

import pytest
from fuzzing import check_answer, damaged, fuzz_settings, junk, randomised
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from web_dispatch import Page

import app as page_app
from ppviz.web.pages.abstract import callbacks, render

JUNK = junk("1f1b", "v-auto", "compare", "single", "custom", "#devices=1e308", "nan", "inf")
# The callbacks of this page (ppviz/web/pages/abstract/callbacks.py); other views are fuzzed by their own tests.
OWN = {
    k
    for k, v in page_app.app.callback_map.items()
    if getattr(v.get("callback"), "__module__", "") == callbacks.__name__
}
# Values the page itself sends, so that junk in one input meets every mode and schedule in the others.
PLAUSIBLE = {
    "mode": ["single", "compare"],
    "schedule": ["1f1b", "v-auto", "interleaved-1f1b", "custom"],
    "compare": [["1f1b", "zb-h1"], [], ["v-auto", "zb-auto", "v-zb", "v-min"]],
    "devices": [1, 8, 64],
    "microbatches": [1, 32, 512],
    "limit": [None, 0, 3.5],
    "upload-store": [None, "0F0,0B0\n"],
    "baseline": ["1f1b", "zb-h1", "v-auto"],
    "compare_show": ["charts", "sweep"],
    "sweep_axis": ["m", "v", "p"],
}  # the slowest synchronous answer allowed (the budget is about 0.5 s of CPU)


pytestmark = pytest.mark.slow  # fuzz at full example counts


@pytest.fixture(scope="module")
def page() -> Page:
    render.clear_run_cache()
    p = Page.open(page_app.server)
    p.load()
    return p


@fuzz_settings(150)
@given(data=st.data())
def test_random_values_for_every_input_never_give_a_500(page, data):
    dep = data.draw(st.sampled_from([d for d in page.server_callbacks() if d["output"] in OWN]))
    check_answer(page, dep, randomised(page, dep, data, JUNK, PLAUSIBLE))


@fuzz_settings(150)
@given(data=st.data())
def test_damaged_request_bodies_get_400_or_200_never_500(page, data):
    """Protocol damage (tests/fuzzing.py ``damaged``) to a request for any server callback of the app."""
    dep = data.draw(st.sampled_from(page.server_callbacks()))
    check_answer(page, dep, damaged(page, dep, data, JUNK))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_pattern_matching_groups_that_disagree_get_400_never_500(page, data):
    """The groups of one pattern in a request (an input's and an output's) shortened, reordered or
    given made-up members: a callback answering per input must not return a list of another length."""
    grouped = [d for d in page.server_callbacks() if "ALL" in json.dumps(d)]
    dep = data.draw(st.sampled_from(grouped))
    check_answer(page, dep, damaged(page, dep, data, JUNK, attacks=["group"]))
