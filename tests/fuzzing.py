"""Junk for every input of a page's server callbacks, sent through Dash's real dispatch (shared by the fuzz tests).

The rule checked: a 200 (with a message on the page where a value was refused) or a 400, never a
500, and never unbounded work (each synchronous answer within ``REQUEST_S``; a background job is
polled to its end, within 30 s).
"""

from __future__ import annotations

import json
import time

from hypothesis import strategies as st
from web_dispatch import Page

REQUEST_S = 5.0  # the slowest synchronous answer allowed (the budget is about 0.5 s of CPU)


def junk(*typical: object):
    """Wrong types, null, huge and negative numbers, NaN, text, and lists and dicts of them, plus ``typical``."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.sampled_from([0, 1, 3, 8, 64, 65, 512, 513, 8192, 10**6, -1, 0.5]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=30),
        st.sampled_from(list(typical) or ["nan"]),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
        max_leaves=12,
    )


def randomised(page: Page, dep: dict, data, values, plausible: dict | None = None) -> dict:
    """A request for ``dep`` with each input and state kept, set to a value the page itself sends
    (``plausible``, by component id), or replaced by junk (also inside wildcard groups)."""
    plausible = plausible or {}
    body = page.body(dep, [])
    for group in ("inputs", "state"):
        for item in body[group]:
            for member in item if isinstance(item, list) else [item]:
                choice = data.draw(st.sampled_from(["keep", "plausible", "junk", "junk"]))
                if choice == "plausible" and isinstance(member["id"], str) and member["id"] in plausible:
                    member["value"] = data.draw(st.sampled_from(plausible[member["id"]]))
                elif choice != "keep":
                    member["value"] = data.draw(values)
    triggers = [i for i in body["inputs"] if isinstance(i, dict)] or [body["inputs"][0][0]]
    chosen = data.draw(st.sampled_from(triggers))
    key = chosen["id"] if isinstance(chosen["id"], str) else json.dumps(chosen["id"], separators=(",", ":"))
    body["changedPropIds"] = [f"{key}.{chosen['property']}"]
    return body


def damaged(page: Page, dep: dict, data, values) -> dict:
    """A request for ``dep`` with one of its protocol fields missing or junk."""
    body = page.body(dep, [])
    key = data.draw(st.sampled_from(["output", "outputs", "inputs", "state", "changedPropIds"]))
    if data.draw(st.booleans()):
        body.pop(key)
    else:
        body[key] = data.draw(values)
    return body


def check_answer(page: Page, dep: dict, body: dict) -> None:
    """Post ``body``: 200, 204 or 400 within ``REQUEST_S``; a started background job polled to its end."""
    started = time.monotonic()
    response = page.post(body)
    assert time.monotonic() - started < REQUEST_S, f"{dep['output'][:60]} took {time.monotonic() - started:.1f} s"
    assert response.status_code in (200, 204, 400), (dep["output"][:80], response.get_data(as_text=True)[:2000])
    handles = response.get_json() if response.status_code == 200 else {}
    started = time.monotonic()
    while "cacheKey" in (handles or {}):
        assert time.monotonic() - started < 30, "a background job ran for 30 s"
        time.sleep(0.05)
        response = page.post(body, cacheKey=handles["cacheKey"], job=handles["job"])
        assert response.status_code in (200, 204), response.get_data(as_text=True)[:2000]
        handles = response.get_json() if response.status_code == 200 else {}
