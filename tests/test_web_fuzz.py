"""Random and malformed values for every input of every server callback, through Dash's real dispatch.

Wrong types, null, huge and negative numbers, empty and nested lists, junk dicts: the answer is a
200 (with a message on the page where a value was refused) or a 400, never a 500, and never
unbounded work (each request answers within a few seconds; a background job is polled to its end).
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from web_dispatch import Page

import app as page_app
from ppviz.web import callbacks, views

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, 1, 64, 65, 512, 513, 8192, 10**6, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["1f1b", "v-auto", "compare", "single", "custom", "?devices=1e308", "nan", "inf"]),
)
JUNK = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
# The callbacks of this page (ppviz/web/callbacks.py); other views are fuzzed by their own tests.
OWN = {
    k
    for k, v in page_app.app.callback_map.items()
    if getattr(v.get("callback"), "__module__", "") == callbacks.__name__
}
REQUEST_S = 5.0
# Values the page itself sends, so that junk in one input meets every mode and schedule in the others.
PLAUSIBLE = {
    "mode": ["single", "compare"],
    "schedule": ["1f1b", "v-auto", "interleaved-1f1b", "custom"],
    "compare": [["1f1b", "zb-h1"], [], ["v-auto", "zb-auto", "v-zb", "v-min"]],
    "devices": [1, 8, 64],
    "microbatches": [1, 32, 512],
    "limit": [None, 0, 3.5],
    "upload-store": [None, "0F0,0B0\n"],
}  # the slowest synchronous answer allowed (the budget is about 0.5 s of CPU)


@pytest.fixture(scope="module")
def page() -> Page:
    views.clear_run_cache()
    p = Page.open(page_app.server)
    p.load()
    return p


def randomised(page: Page, dep: dict, data) -> dict:
    """A request for ``dep`` with each input and state replaced, or not, by junk (also inside wildcard groups)."""
    body = page.body(dep, [])
    for group in ("inputs", "state"):
        for item in body[group]:
            members = item if isinstance(item, list) else [item]
            for member in members:
                choice = data.draw(st.sampled_from(["keep", "plausible", "junk", "junk"]))
                if choice == "plausible" and isinstance(member["id"], str) and member["id"] in PLAUSIBLE:
                    member["value"] = data.draw(st.sampled_from(PLAUSIBLE[member["id"]]))
                elif choice == "junk":
                    member["value"] = data.draw(JUNK)
    triggers = [i for i in body["inputs"] if isinstance(i, dict)] or [body["inputs"][0][0]]
    chosen = data.draw(st.sampled_from(triggers)) if triggers else None
    if chosen is not None:
        key = chosen["id"] if isinstance(chosen["id"], str) else json.dumps(chosen["id"], separators=(",", ":"))
        body["changedPropIds"] = [f"{key}.{chosen['property']}"]
    return body


def finish(page: Page, body: dict, response) -> None:
    """Poll a background job to its end (bounded), as the page would."""
    handles = response.get_json() or {}
    started = time.monotonic()
    while "cacheKey" in handles:
        assert time.monotonic() - started < 30, "a background job ran for 30 s"
        time.sleep(0.05)
        response = page.post(body, cacheKey=handles["cacheKey"], job=handles["job"])
        assert response.status_code in (200, 204), response.get_data(as_text=True)[:2000]
        handles = response.get_json() if response.status_code == 200 else {}


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_random_values_for_every_input_never_give_a_500(page, data):
    dep = data.draw(st.sampled_from([d for d in page.server_callbacks() if d["output"] in OWN]))
    body = randomised(page, dep, data)
    started = time.monotonic()
    response = page.post(body)
    assert time.monotonic() - started < REQUEST_S, f"{dep['output'][:60]} took {time.monotonic() - started:.1f} s"
    assert response.status_code in (200, 204, 400), (dep["output"][:80], response.get_data(as_text=True)[:2000])
    if response.status_code == 200:
        finish(page, body, response)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_request_bodies_get_400_or_200_never_500(page, data):
    dep = data.draw(st.sampled_from([d for d in page.server_callbacks() if d["output"] in OWN]))
    body = page.body(dep, [])
    key = data.draw(st.sampled_from(["output", "outputs", "inputs", "state", "changedPropIds"]))
    if data.draw(st.booleans()):
        body.pop(key)
    else:
        body[key] = data.draw(JUNK)
    response = page.post(body)
    assert response.status_code in (200, 204, 400), response.get_data(as_text=True)[:2000]
    if response.status_code == 200:
        finish(page, body, response)
