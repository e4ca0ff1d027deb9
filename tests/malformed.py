"""Requests an attacker would craft against the served page, each with the statuses it may get.

Shared by the dispatch tests (through Flask's test client) and ``bench/bench_malformed.py`` (against
gunicorn on loopback). Every shape is built from the app's own callback map (``/_dash-dependencies``)
and page load, so it names real callbacks and stays right as the page changes. None may get a 500.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlencode

from web_dispatch import Page

UPDATE = "/_dash-update-component"
PAGE = "gantt.figure...memory.figure"  # the page callback (synchronous)
JOB = "job-error.children"  # the page's background job


@dataclass(frozen=True)
class Request:
    """One crafted HTTP request and the statuses it may get (never 500)."""

    method: str
    path: str
    body: bytes = b""
    content_type: str | None = "application/json"
    expect: tuple[int, ...] = (400,)


def _post(page: Page, body, expect=(400,), content_type="application/json", **query) -> Request:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    query = {"endId": page.end_id, **query}
    return Request("POST", f"{UPDATE}?{urlencode(query)}", data, content_type, expect)


def _dep(page: Page, part: str) -> dict:
    return page.callback(part)


def _body(page: Page, part: str = PAGE) -> dict:
    dep = _dep(page, part)
    return page.body(dep, [("url", "search")] if part in (PAGE, "lines.options") else [])


def _nested(depth: int, leaf=0):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _with_value(page: Page, value) -> dict:
    body = _body(page)
    body["inputs"][0]["value"] = value
    return body


def _clientside(page: Page) -> list[dict]:
    return [d for d in page.deps if d.get("clientside_function")]


def _outputs_changed(page: Page, change: Callable[[list], None]) -> dict:
    body = _body(page)
    change(body["outputs"])
    return body


def _wildcard_outputs(page: Page, ids: list) -> dict:
    body = _body(page, "row-compare.style")
    body["outputs"][0] = [{"id": i, "property": "style"} for i in ids]
    return body


def _param_group(page: Page, change: Callable[[list], list], where: str = "outputs") -> dict:
    """The page callback's request with its group of schedule parameters (an input and an output) changed."""
    body = _body(page)
    group = "param"
    index = next(i for i, item in enumerate(body[where]) if isinstance(item, list) and item[0]["id"]["type"] == group)
    body[where][index] = change(body[where][index])
    return body


def _made_up(group: list) -> list:
    return group + [{**group[0], "id": {**group[0]["id"], "name": "made-up"}}]


def _many(group: list) -> list:
    return [{**group[0], "id": {**group[0]["id"], "name": f"n{i}"}} for i in range(20_000)]


def _background(page: Page, **query) -> Request:
    dep = _dep(page, JOB)
    return _post(page, page.body(dep, [("job-request", "data")]), expect=(200, 204, 400), **query)


def _foreign_handles(page: Page) -> Request:
    """A poll for the page's drawing job with the handles of a finished export job (another callback)."""
    from ppviz.web.common import jobs

    dep = _dep(page, "download.data")
    body = page.body(dep, [("export-ops-csv", "n_clicks")], {("export-ops-csv", "n_clicks"): 1})
    handles = page.post(body).get_json()
    deadline = time.monotonic() + 30
    while not jobs.manager().result_ready(handles["cacheKey"].split("~")[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    job = page.body(_dep(page, JOB), [("job-request", "data")])
    return _post(page, job, cacheKey=handles["cacheKey"], job=handles["job"])


def _get(path: str, expect=(404,)) -> Request:
    return Request("GET", path, b"", None, expect)


# name -> the request, built from a page that was opened (and loaded) as a browser does.
SHAPES: dict[str, Callable[[Page], Request]] = {
    # the body
    "body nested 1,000 lists deep": lambda p: _post(p, b"[" * 1000 + b"]" * 1000),
    "body nested 100,000 objects deep": lambda p: _post(p, b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
    "a value nested 900 lists deep": lambda p: _post(p, _with_value(p, _nested(900))),
    "a value nested 200 lists deep": lambda p: _post(p, _with_value(p, _nested(200))),
    "a lone surrogate in a value": lambda p: _post(p, _with_value(p, "?schedule=\ud800"), expect=(400,)),
    "a string of 1.5 MB": lambda p: _post(p, _with_value(p, "?" + "x" * 1_500_000), expect=(200, 400)),
    "a body past the size limit": lambda p: _post(p, _with_value(p, "x" * 3_000_000), expect=(413,)),
    "an integer of 5,000 digits": lambda p: _post(p, b'{"output":"lines.options","x":' + b"9" * 5000 + b"}"),
    "not UTF-8": lambda p: _post(p, b'{"output":"\xff\xfe"}'),
    "UTF-16 JSON": lambda p: _post(p, json.dumps(_body(p)).encode("utf-16")),
    "an empty body": lambda p: _post(p, b""),
    "text/plain": lambda p: _post(p, _body(p), content_type="text/plain", expect=(400, 415)),
    "no Content-Type": lambda p: _post(p, _body(p), content_type=None, expect=(400, 415)),
    "form-encoded": lambda p: _post(p, b"output=lines.options", content_type="application/x-www-form-urlencoded"),
    # callbacks that are not the server's
    "a clientside callback's outputs": lambda p: _post(p, p.body(_clientside(p)[0])),
    "every clientside callback": lambda p: _post(p, p.body(_clientside(p)[-1])),
    "Dash's cancel callback without a job": lambda p: _post(p, p.body(_dep(p, "job-cancel.id")), expect=(200, 204)),
    # outputs that do not match the callback
    "outputs naming another component": lambda p: _post(
        p, _outputs_changed(p, lambda o: o.__setitem__(0, {"id": "cards", "property": "figure"}))
    ),
    "outputs naming another property": lambda p: _post(
        p, _outputs_changed(p, lambda o: o.__setitem__(0, {"id": "gantt", "property": "config"}))
    ),
    "outputs in another order": lambda p: _post(p, _outputs_changed(p, lambda o: o.reverse())),
    "an output id that is a number": lambda p: _post(
        p, _outputs_changed(p, lambda o: o.__setitem__(0, {"id": 5, "property": "figure"}))
    ),
    "a wildcard output with other keys": lambda p: _post(p, _wildcard_outputs(p, [{"type": "param-block"}])),
    "a wildcard output of another type": lambda p: _post(
        p, _wildcard_outputs(p, [{"schedule": "1f1b", "type": "param"}])
    ),
    "a wildcard output that is a string": lambda p: _post(p, _wildcard_outputs(p, ["row-schedule"])),
    "a pattern group emptied in the outputs": lambda p: _post(p, _param_group(p, lambda g: [])),
    "a pattern group emptied in the inputs": lambda p: _post(p, _param_group(p, lambda g: [], "inputs")),
    "a made-up member of a pattern group": lambda p: _post(p, _param_group(p, _made_up)),
    "a pattern group of 20,000 members": lambda p: _post(p, _param_group(p, _many, "inputs")),
    "a single output given as a list": lambda p: _post(
        p, {**_body(p, "lines.options"), "outputs": [{"id": "lines", "property": "options"}]}
    ),
    # inputs, state and changedPropIds
    "inputs as a dict": lambda p: _post(p, {**_body(p), "inputs": {"id": "url"}}),
    "an input id that is a list": lambda p: _post(
        p, {**_body(p, "lines.options"), "inputs": [{"id": [1], "property": "search"}]}, expect=(200, 204, 400)
    ),
    "an input id that is a dict of junk": lambda p: _post(
        p, {**_body(p, "lines.options"), "inputs": [{"id": {"a": [[]]}, "property": "search"}]}, expect=(200, 204, 400)
    ),
    "state as a string": lambda p: _post(p, {**_body(p), "state": "x"}),
    "changedPropIds naming a bad pattern id": lambda p: _post(p, {**_body(p), "changedPropIds": ["{bad.value"]}),
    "changedPropIds naming a list id": lambda p: _post(
        p, {**_body(p), "changedPropIds": ["[1].value"]}, expect=(200, 204, 400)
    ),
    "changedPropIds without a property": lambda p: _post(
        p, {**_body(p), "changedPropIds": ["devices"]}, expect=(200, 204, 400)
    ),
    "changedPropIds as a string": lambda p: _post(p, {**_body(p), "changedPropIds": "url.search"}),
    "changedPropIds of 100,000 pattern ids": lambda p: _post(
        p, {**_body(p), "changedPropIds": ['{"a":1}.x'] * 100_000}
    ),
    "changedPropIds of numbers": lambda p: _post(p, {**_body(p), "changedPropIds": [1, 2]}),
    # background callbacks with forged handles
    "a forged cacheKey": lambda p: _background(p, cacheKey="x" * 100, job="1~x"),
    "a forged job": lambda p: _background(p, cacheKey="abc", job="1~" + "9" * 8000),
    "a forged oldJob": lambda p: _background(p, oldJob="1~junk"),
    "a forged cancelJob": lambda p: _post(p, p.body(_dep(p, "job-cancel.id")), expect=(200, 204), cancelJob="1~x"),
    "another callback's job handles": _foreign_handles,
    "a forged endId": lambda p: _background(p, endId="junk"),
    "no endId": lambda p: Request("POST", UPDATE, json.dumps(_body(p, "lines.options")).encode(), expect=(200, 204)),
    # other routes
    "GET on the callback endpoint": lambda p: _get(UPDATE, expect=(200, 404, 405)),
    "an unknown asset of a known package": lambda p: _get("/_dash-component-suites/dash/nope.js"),
    "an unknown package": lambda p: _get("/_dash-component-suites/nopkg/nope.js"),
    "a path out of the package": lambda p: _get("/_dash-component-suites/dash/../../app.py"),
    "a fingerprint of another version": lambda p: _get(
        "/_dash-component-suites/dash/dcc/dash_core_components.v0_0_0m1.js", expect=(200, 404)
    ),
    "a registered source map not installed": lambda p: _get("/_dash-component-suites/dash/dcc/async-mathjax.js.map"),
    "an unknown asset": lambda p: _get("/assets/nope.css"),
    "an asset path out of the folder": lambda p: _get("/assets/../app.py"),
    "the hot-reload hash": lambda p: _get("/_reload-hash"),
    "a layout POST": lambda p: Request("POST", "/_dash-layout", b"{}", expect=(405,)),
}


def send(client, request: Request, timeout_s: float = 30.0):
    """Send ``request`` with a Flask test client; a background job it starts is polled to its end.

    Returns the first response (the one whose status is checked).
    """
    headers = {"Content-Type": request.content_type} if request.content_type else {}
    first = client.open(request.path, method=request.method, data=request.body, headers=headers)
    handles = first.get_json(silent=True) if first.status_code == 200 else None
    started = time.monotonic()
    while isinstance(handles, dict) and "cacheKey" in handles and time.monotonic() - started < timeout_s:
        time.sleep(0.05)
        query = urlencode({"cacheKey": handles["cacheKey"], "job": handles["job"]})
        poll = client.open(f"{request.path}&{query}", method="POST", data=request.body, headers=headers)
        handles = poll.get_json(silent=True) if poll.status_code == 200 else None
    return first
