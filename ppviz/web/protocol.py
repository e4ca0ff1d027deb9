"""Malformed requests get a 4xx and one log line, never a 500 with a traceback.

Dash trusts the JSON the renderer sends: a hand-made request with a key missing or of the wrong
type, outputs other than the callback's, a clientside callback's name, pattern-matching groups
that disagree, a pattern id in ``changedPropIds`` that is not JSON, or a body nested past
Python's recursion limit made it raise deep inside (a 500 and a traceback per request).
``problem`` and ``nesting`` check a request against the app's callback map first (20–170 µs for
the page's own requests, 20 ms for the costliest 2 MB body: ``bench/bench_malformed.py --cost``).
``guard`` wires them in, answers a poll holding another callback's job with 400, unknown files
under ``/_dash-component-suites/`` with 404, and hides ``/_reload-hash`` (which lists the
installed packages) unless Dash's hot reload is on."""

from __future__ import annotations

import json
import logging
import re
from functools import lru_cache

import numpy as np

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 2 * 2**20  # the largest real request carries an upload of 256 KiB as base64
# The most an upload on a page may hold: its files travel as base64 (4 bytes for 3) in one request of at most
# MAX_BODY_BYTES, with room for the rest of the request.
MAX_UPLOAD_BYTES = MAX_BODY_BYTES * 3 // 4 - 64 * 1024
MAX_DEPTH = 32  # the page's own requests nest at most 6 deep
MAX_GROUP = 512  # components in one pattern-matching group (the page's largest has 29), changed props
_STEP = np.zeros(256, np.int32)  # what each byte does to the nesting depth
_STEP[list(b"[{")], _STEP[list(b"]}")] = 1, -1


def problem(body: object, callback_map: dict) -> str | None:
    """What is wrong with a callback request body, or None when it has the shape Dash expects."""
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    output = body.get("output")
    if not isinstance(output, str) or output not in callback_map:
        return "no such callback output"
    spec = callback_map[output]
    if "callback" not in spec:
        return "that callback runs in the browser, not on the server"
    for key, expected in (("inputs", spec.get("inputs", [])), ("state", spec.get("state", []))):
        items = body.get(key, [])
        if not isinstance(items, list) or len(items) != len(expected):
            return f"{key} must be a list of {len(expected)} items"
        for item, dep in zip(items, expected):
            wildcard = isinstance(dep.get("id"), str) and dep["id"].startswith("{")
            if wildcard:
                if not isinstance(item, list) or not all(_item(i) for i in item):
                    return f"{key}: a pattern-matching item must be a list of {{id, property}}"
            elif not _item(item):
                return f"{key}: each item needs an id and a property"
    why = None if spec.get("no_output") else _outputs_problem(output, body.get("outputs"))
    if why is not None:
        return why
    why = _groups_problem(body, spec, output)
    if why is not None:
        return why
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or len(changed) > MAX_GROUP:
        return f"changedPropIds must be a list of at most {MAX_GROUP} 'id.property' strings"
    if not all(isinstance(c, str) and _prop_id(c) for c in changed):
        return "changedPropIds must be a list of 'id.property' strings"
    return None


ROUTER_OUTPUT = "_pages_content.children"  # Dash's pages router (dash._pages): draws the page of a path


def router_problem(body: dict, prefix: str) -> str | None:
    """What Dash's pages router cannot read in a request of ``problem``'s shape: it takes its location's
    path and query string as text, the path under the app's ``prefix``, and raised on anything else."""
    if ROUTER_OUTPUT not in body["output"]:
        return None
    for item in body["inputs"]:
        value = item.get("value")
        if value is not None and not isinstance(value, str):
            return f"the router's {item.get('property')} must be text"
        if item.get("property") == "pathname" and value is not None and not value.startswith(prefix.rstrip("/") or "/"):
            return f"the path must start with {prefix}"
    return None


def _outputs_problem(output: str, outputs: object) -> str | None:
    """Dash answers 500 unless the outputs name exactly the callback's (wildcards matching)."""
    declared = _declared(output)
    if not output.startswith(".."):
        outputs = [outputs]
    elif not isinstance(outputs, list) or len(outputs) != len(declared):
        return f"outputs must be a list of {len(declared)} items"
    for item, (cid, prop) in zip(outputs, declared):
        if isinstance(cid, dict):
            if not isinstance(item, list) or not all(_matches(i, cid, prop) for i in item):
                return "outputs: a pattern-matching item must be a list of {id, property} matching the callback"
        elif not _matches(item, cid, prop):
            return f"outputs must name {cid}.{prop}"
    return None


def _groups_problem(body: dict, spec: dict, output: str) -> str | None:
    """Every group of one pattern names the same components, and at most ``MAX_GROUP`` of them.

    The renderer resolves all of a request's patterns against one layout, so the groups of one
    pattern (an input's and an output's, say) always agree. A crafted request whose groups differ
    made a callback that answers per input return a list of another length than its outputs, which
    Dash answers with a 500; thousands of made-up components cost seconds of work.
    """
    places = [
        (_pattern(dep["id"]), item)
        for key in ("inputs", "state")
        for dep, item in zip(spec.get(key, []), body.get(key, []))
        if isinstance(item, list)
    ]
    if not spec.get("no_output"):
        outputs = body["outputs"] if output.startswith("..") else [body["outputs"]]
        declared = _declared(output)
        places += [
            (json.dumps(cid, sort_keys=True), item)
            for (cid, _), item in zip(declared, outputs)
            if isinstance(cid, dict)
        ]
    seen: dict[str, list] = {}
    for pattern, group in places:
        if len(group) > MAX_GROUP:
            return f"a pattern-matching group names at most {MAX_GROUP} components"
        ids = [member["id"] for member in group]
        first = seen.setdefault(pattern, ids)
        if first != ids and sorted(map(_canonical, first)) != sorted(map(_canonical, ids)):
            return "the pattern-matching groups of one pattern must name the same components"
    return None


@lru_cache(maxsize=256)
def _pattern(cid: str) -> str:
    return json.dumps(json.loads(cid), sort_keys=True)


def _canonical(cid: object) -> str:
    return json.dumps(cid, sort_keys=True)


@lru_cache(maxsize=256)
def _declared(output: str) -> tuple[tuple[object, str], ...]:
    """The (id, property) of each output of a callback map key; a pattern id as a dict, wildcards as lists."""
    parts = output[2:-2].split("...") if output.startswith("..") else [output]
    out = []
    for part in parts:
        cid, _, prop = part.rpartition(".")
        out.append((json.loads(cid) if cid.startswith("{") else cid, prop.split("@")[0]))
    return tuple(out)


def _matches(item: object, cid: object, prop: str) -> bool:
    """As Dash's ``Output.__eq__``: the same property, and the same id (a wildcard matches any value)."""
    if not _item(item) or item["property"].split("@")[0] != prop:
        return False
    if not isinstance(cid, dict):
        return item["id"] == cid
    other = item["id"]
    if not isinstance(other, dict) or set(other) != set(cid):
        return False
    return all(isinstance(v, list) or other[k] == v for k, v in cid.items())


def _prop_id(prop_id: str) -> bool:
    """'id.property', where a pattern id ('{...}') is a JSON object (Dash parses it for ``ctx.triggered_id``)."""
    cid, dot, _ = prop_id.rpartition(".")
    if not dot:
        return False
    if not cid.startswith("{"):
        return True
    try:
        return isinstance(json.loads(cid), dict)
    except ValueError:
        return False


def _item(item: object) -> bool:
    return isinstance(item, dict) and isinstance(item.get("property"), str) and "id" in item


def nesting(raw: bytes) -> int:
    """How deep the lists and objects of a UTF-8 JSON text nest, strings skipped.

    Counted on the bytes with numpy (2 MB in about 20 ms): walking the parsed value in Python
    took 0.4 s of CPU for a body of 2 MB of small lists.
    """
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")  # every '"' left opens or closes a string
    text = np.frombuffer(unescaped, np.uint8)
    inside = np.cumsum(text == ord('"'), dtype=np.int32) & 1
    steps = _STEP[text] * (1 - inside)  # +1 for '[' and '{', -1 for ']' and '}', outside strings
    return int(np.cumsum(steps).max(initial=0))


_SURROGATE = re.compile(rb"\\[uU][dD][89a-fA-F]")


def lone_surrogate(raw: bytes, body: object) -> bool:
    """Whether a JSON escape left half of a UTF-16 pair in a string: JSON allows it, UTF-8 cannot
    hold it, and the answer echoing it could not be encoded (orjson refuses it)."""
    if not _SURROGATE.search(raw):
        return False
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def guard(app) -> None:
    """Wrap Dash's routes that raise on crafted requests: 400 or 404 and one log line instead."""
    from dash.exceptions import InvalidCallbackReturnValue
    from flask import Response, request

    server = app.server
    server.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    prefix = app.config.routes_pathname_prefix

    def refuse(status: int, why: str) -> Response:
        log.warning("%d for %s %r: %s", status, request.method, request.path[:200], why)
        return Response(json.dumps({"error": why}), status=status, mimetype="application/json")

    dispatch = server.view_functions[prefix + "_dash-update-component"]

    def checked(*args, **kwargs):
        try:
            body = request.get_json(silent=True)
        except RecursionError:  # json raises it past ~1,000 levels, and silent=True does not catch it
            return refuse(400, f"the body nests deeper than {MAX_DEPTH} levels")
        raw = request.get_data()
        if body is None or b"\0" in raw:  # UTF-8 JSON has no NUL byte: UTF-16 and -32 have many
            why = "the body is not a UTF-8 JSON object"
        elif nesting(raw) > MAX_DEPTH:
            why = f"the body nests deeper than {MAX_DEPTH} levels"
        elif lone_surrogate(raw, body):
            why = "a string in the body holds a lone UTF-16 surrogate (\\udXXX): it is not Unicode text"
        else:
            why = problem(body, app.callback_map) or router_problem(body, app.config.requests_pathname_prefix)
        if why is not None:
            return refuse(400, why)
        if "cacheKey" not in request.args:
            return dispatch(*args, **kwargs)
        try:  # a poll for a background job: Dash does not check the job is this callback's
            return dispatch(*args, **kwargs)
        except InvalidCallbackReturnValue:
            return refuse(400, "the job's result does not fit this callback's outputs (another callback's job?)")

    server.view_functions[prefix + "_dash-update-component"] = checked
    _guard_component_suites(app, refuse)

    def reload_hash():
        if not app._dev_tools.hot_reload:  # only `app.run(debug=True)` polls it
            return refuse(404, "not served in production")
        return app.serve_reload_hash()

    server.view_functions[prefix + "_reload-hash"] = reload_hash


def _guard_component_suites(app, refuse) -> None:
    """Dash raises on a package or file it does not serve (or a registered one not installed)."""
    from dash.exceptions import DependencyException

    rule = app.config.routes_pathname_prefix + "_dash-component-suites/<string:package_name>/<path:fingerprinted_path>"
    serve = app.server.view_functions[rule]

    def checked(package_name: str, fingerprinted_path: str):
        try:
            return serve(package_name, fingerprinted_path)
        except (DependencyException, OSError):
            return refuse(404, "no such file")

    app.server.view_functions[rule] = checked
