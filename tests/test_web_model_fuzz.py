"""Random and malformed values for every input of the model & cluster and search views' callbacks, through
Dash's real dispatch: a 200 (with a message where a value was refused) or a 400, never a 500, and never
unbounded work (each synchronous answer within a few seconds; background jobs polled to their end).
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from web_dispatch import Page

import app as page_app
from ppviz.web import model_callbacks, model_views, search_callbacks

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, 1, 3, 8, 64, 65, 512, 513, 10**6, -1, 0.5]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["llama3-8b", "h200", "zb-v", "compare", "#view=model&tp=3", "#view=search&s.gpus=0", "on"]),
)
JUNK = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
MODULES = {model_callbacks.__name__, search_callbacks.__name__}
OWN = {k for k, v in page_app.app.callback_map.items() if getattr(v.get("callback"), "__module__", "") in MODULES}
REQUEST_S = 5.0


@pytest.fixture(scope="module")
def page() -> Page:
    model_views.clear_cache()
    p = Page.open(page_app.server)
    p.load()
    return p


def randomised(page: Page, dep: dict, data) -> dict:
    body = page.body(dep, [])
    for group in ("inputs", "state"):
        for item in body[group]:
            for member in item if isinstance(item, list) else [item]:
                if data.draw(st.booleans()):
                    member["value"] = data.draw(JUNK)
    triggers = [i for i in body["inputs"] if isinstance(i, dict)]
    if triggers:
        chosen = data.draw(st.sampled_from(triggers))
        key = chosen["id"] if isinstance(chosen["id"], str) else json.dumps(chosen["id"], separators=(",", ":"))
        body["changedPropIds"] = [f"{key}.{chosen['property']}"]
    return body


def finish(page: Page, body: dict, response) -> None:
    handles = response.get_json() or {}
    started = time.monotonic()
    while "cacheKey" in handles:
        assert time.monotonic() - started < 30, "a background job ran for 30 s"
        time.sleep(0.05)
        response = page.post(body, cacheKey=handles["cacheKey"], job=handles["job"])
        assert response.status_code in (200, 204), response.get_data(as_text=True)[:2000]
        handles = response.get_json() if response.status_code == 200 else {}


def test_the_views_have_callbacks_to_fuzz(page):
    assert len([d for d in page.server_callbacks() if d["output"] in OWN]) == 5


@settings(
    max_examples=120,
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
