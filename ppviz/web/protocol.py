"""Malformed requests to Dash's callback endpoint are answered 400, without a traceback in the log.

Dash trusts the shape of the JSON the renderer sends; a hand-made request with a key missing or
of the wrong type made it raise deep inside (a 500 and a traceback per request). ``problem``
checks the shape against the app's callback map first.
"""

from __future__ import annotations

import json
import logging

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 2 * 2**20  # the largest real request carries an upload of 256 KB as base64


def problem(body: object, callback_map: dict) -> str | None:
    """What is wrong with a callback request body, or None when it has the shape Dash expects."""
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    output = body.get("output")
    if not isinstance(output, str) or output not in callback_map:
        return "no such callback output"
    spec = callback_map[output]
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
    parts = output[2:-2].split("...") if output.startswith("..") else None
    outputs = body.get("outputs")
    if parts is None:
        if not _item(outputs):
            return "outputs must be one {id, property}"
    elif not isinstance(outputs, list) or len(outputs) != len(parts):
        return f"outputs must be a list of {len(parts)} items"
    else:
        for item, part in zip(outputs, parts):
            wildcard = part.startswith("{")
            if wildcard and not (isinstance(item, list) and all(_item(i) for i in item)):
                return "outputs: a pattern-matching item must be a list of {id, property}"
            if not wildcard and not _item(item):
                return "outputs: each item needs an id and a property"
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
        return "changedPropIds must be a list of strings"
    return None


def _item(item: object) -> bool:
    return isinstance(item, dict) and isinstance(item.get("property"), str) and "id" in item


def guard(app) -> None:
    """Wrap Dash's callback endpoint: a malformed request gets 400 and one log line."""
    from flask import Response, request

    server = app.server
    server.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    endpoint = app.config.routes_pathname_prefix + "_dash-update-component"
    dispatch = server.view_functions[endpoint]

    def checked(*args, **kwargs):
        body = request.get_json(silent=True)
        why = "the body is not JSON" if body is None else problem(body, app.callback_map)
        if why is not None:
            log.warning("400 for a malformed callback request: %s", why)
            return Response(json.dumps({"error": why}), status=400, mimetype="application/json")
        return dispatch(*args, **kwargs)

    server.view_functions[endpoint] = checked
