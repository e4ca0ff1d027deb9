"""Junk for every input of a page's server callbacks, sent through Dash's real dispatch (shared by the fuzz tests).

The rule checked: a 200 (with a message on the page where a value was refused) or a 400, never a
500, and never unbounded work (each synchronous answer within ``REQUEST_S``; a background job is
polled to its end, within 30 s).
"""

from __future__ import annotations

import json
import time

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from web_dispatch import Page

REQUEST_S = 5.0  # the slowest synchronous answer allowed (the budget is about 0.5 s of CPU)


def fuzz_settings(max_examples: int):
    """Hypothesis settings of a page fuzz: no deadline (a request may run a background job), and the
    page fixture reused across examples."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def junk(*typical: object):
    """Wrong types, null, huge and negative numbers, NaN, text, and lists and dicts of them, plus ``typical``."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.sampled_from([0, 1, 3, 8, 64, 65, 512, 513, 8192, 10**6, -1, 0.5]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=30),
        st.text(st.characters(categories=["Cs", "Lu", "Po"]), max_size=4),  # lone surrogates: valid JSON, not UTF-8
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


# changedPropIds an attacker would try: no property, a pattern id that is not JSON, a list id, empty parts
PROP_IDS = ["", ".", "x", "{", "{x.value", "{}.value", '{"a":1}.b', "[1].value", '"x".value', "url.search.x"]


ATTACKS = ["drop", "junk", "deep", "clientside", "outputs", "ids", "changed", "group"]


def damaged(page: Page, dep: dict, data, values, attacks: list[str] = ATTACKS) -> dict:
    """A request for ``dep`` with one of its protocol fields missing or junk, nested deep, naming a
    clientside callback, outputs other than the callback's, junk ids, junk changedPropIds, or a
    pattern-matching group made shorter, longer or of made-up members."""
    body = page.body(dep, [])
    attack = data.draw(st.sampled_from(attacks))
    if attack == "drop":
        body.pop(data.draw(st.sampled_from(sorted(body))))
    elif attack == "junk":
        body[data.draw(st.sampled_from(sorted(body)))] = data.draw(values)
    elif attack == "deep":  # past the guard's bound (32) or not; json.dumps itself stops near 1,000
        value = data.draw(values)
        for _ in range(data.draw(st.sampled_from([1, 5, 30, 31, 32, 33, 100, 500]))):
            value = [value] if data.draw(st.booleans()) else {"k": value}
        _member(body, data)["value"] = value
    elif attack == "clientside":
        clientside = [d for d in page.deps if d.get("clientside_function")]
        body = page.body(data.draw(st.sampled_from(clientside)), [])
    elif attack == "outputs":
        outputs = body["outputs"] if isinstance(body["outputs"], list) else [body["outputs"]]
        index = data.draw(st.integers(0, len(outputs) - 1))
        other = data.draw(st.sampled_from(page.deps))["output"].strip(".").split("...")[0]
        cid, _, prop = other.rpartition(".")
        item = data.draw(
            st.sampled_from([{"id": cid, "property": prop}, {"id": data.draw(values), "property": prop}, [], "x", None])
        )
        outputs[index] = item
    elif attack == "group":  # a pattern-matching group made shorter, longer or of made-up members
        groups = [(g, i) for g in ("inputs", "state") for i, item in enumerate(body[g]) if isinstance(item, list)]
        if isinstance(body["outputs"], list):
            groups += [("outputs", i) for i, item in enumerate(body["outputs"]) if isinstance(item, list)]
        if groups:
            where, index = data.draw(st.sampled_from(groups))
            group = body[where][index]
            made_up = [{**m, "id": {**m["id"], "made": data.draw(values)}} for m in group if isinstance(m["id"], dict)]
            body[where][index] = data.draw(st.sampled_from([group[:-1], group + made_up, group[::-1], made_up, []]))
    elif attack == "ids":
        _member(body, data)["id"] = data.draw(values)
    else:
        body["changedPropIds"] = data.draw(st.lists(st.one_of(st.sampled_from(PROP_IDS), st.text(max_size=12))))
    return body


def _member(body: dict, data) -> dict:
    """One input or state item of ``body`` (a member of a wildcard group included)."""
    items = [m for group in ("inputs", "state") for i in body[group] for m in (i if isinstance(i, list) else [i])]
    return data.draw(st.sampled_from(items)) if items else {}


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
