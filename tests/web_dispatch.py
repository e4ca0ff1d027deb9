"""Drive the page's callbacks through Dash's real dispatch, as the browser does.

The callback map comes from ``/_dash-dependencies`` and the starting values from ``/_dash-layout``
(the frame), then the pages router's answer for the path opened (the page's own components); each
request is posted to ``/_dash-update-component`` and its answer applied to the page's props, so a
sequence of requests follows the page as a browser would see it (Dash's own validation of return
values included, which calling a callback function directly skips).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

WILDCARDS = ('["ALL"]', '["MATCH"]', '["ALLSMALLER"]')
CONTENT = "_pages_content"  # Dash's page container and the location its router reads
LOCATION = "_pages_location"


def id_key(cid) -> str:
    """A component id as Dash writes it: a string, or a dict as sorted compact JSON."""
    return cid if isinstance(cid, str) else json.dumps(cid, sort_keys=True, separators=(",", ":"))


def _split_output(spec: str) -> list[tuple[object, str]]:
    parts = spec[2:-2].split("...") if spec.startswith("..") else [spec]
    out = []
    for part in parts:
        cid, _, prop = part.rpartition(".")
        out.append((json.loads(cid) if cid.startswith("{") else cid, prop))
    return out


def _matches(pattern: dict, cid: object) -> bool:
    if not isinstance(cid, dict) or set(cid) != set(pattern):
        return False
    return all(isinstance(v, list) or cid[k] == v for k, v in pattern.items())


@dataclass
class Page:
    """The page's props as a browser holds them, and the callbacks that change them."""

    client: object
    deps: list[dict] = field(default_factory=list)
    props: dict[str, dict] = field(default_factory=dict)  # id key -> prop -> value
    ids: dict[str, object] = field(default_factory=dict)  # id key -> id
    types: dict[str, str] = field(default_factory=dict)  # id key -> component type ("Location", …)
    end_id: str = ""  # the page load's signed token, echoed on every request (binds background jobs)

    @classmethod
    def open(cls, server, path: str = "/", hash_: str = "") -> Page:
        """The page at ``path`` (``/``, ``/model``, ``/search``) with ``hash_``, as the browser has it
        once the router has drawn it (before its own callbacks' first calls: see ``load``)."""
        page = cls(server.test_client())
        index = page.client.get(path).get_data(as_text=True)
        config = re.search(r'<script id="_dash-config" type="application/json">(.*?)</script>', index, re.S)
        page.end_id = json.loads(config.group(1))["end_id"]
        page.deps = page.client.get("/_dash-dependencies").get_json()
        page._walk(page.client.get("/_dash-layout").get_json())
        page.go(path, hash_)
        return page

    def go(self, path: str, hash_: str = "") -> None:
        """Follow a link to another page: the router draws it, and the components of the page left go."""
        old = self.value(CONTENT, "children")
        for key in self._ids_in(old):
            for held in (self.ids, self.props, self.types):
                held.pop(key, None)
        values = {(LOCATION, "pathname"): path, (LOCATION, "search"): ""}
        answer = self.fire(self.callback(CONTENT + ".children"), [(LOCATION, "pathname")], values)
        assert answer.status_code == 200, answer.get_data(as_text=True)[:2000]
        self._walk(self.value(CONTENT, "children"))
        for key, kind in self.types.items():  # every location reads the browser's address as it mounts
            if kind == "Location" and key != LOCATION:
                self.set(key, "pathname", path)
                self.set(key, "hash", hash_)

    def _ids_in(self, node) -> list[str]:
        if isinstance(node, list):
            return [k for child in node for k in self._ids_in(child)]
        if not isinstance(node, dict) or "props" not in node:
            return []
        props = node["props"]
        found = [id_key(props["id"])] if "id" in props else []
        return found + [k for v in props.values() if isinstance(v, (dict, list)) for k in self._ids_in(v)]

    def _walk(self, node) -> None:
        if isinstance(node, list):
            for child in node:
                self._walk(child)
            return
        if not isinstance(node, dict) or "props" not in node:
            return
        props = node["props"]
        if "id" in props:
            key = id_key(props["id"])
            self.ids[key] = props["id"]
            self.types[key] = node.get("type", "")
            self.props[key] = {k: v for k, v in props.items() if k != "id"}
        for value in props.values():
            if isinstance(value, (dict, list)):
                self._walk(value)

    def server_callbacks(self) -> list[dict]:
        return [d for d in self.deps if not d.get("clientside_function")]

    def callback(self, output_part: str) -> dict:
        """The server callback whose output spec contains ``output_part`` (e.g. "gantt.figure")."""
        (dep,) = [d for d in self.server_callbacks() if output_part in d["output"]]
        return dep

    def value(self, cid, prop: str):
        return self.props.get(id_key(cid), {}).get(prop)

    def text(self, cid) -> str:
        """The text a component shows now: its children, each descendant with an id as its latest props
        say (a callback may set a box's text inside a layout it never sends); hidden ones show nothing."""
        return "" if self._hidden(cid) else self._text(self.value(cid, "children"))

    def _hidden(self, cid) -> bool:
        return (self.value(cid, "style") or {}).get("display") == "none"

    def _text(self, node) -> str:
        if isinstance(node, dict) and "id" in node.get("props", {}) and id_key(node["props"]["id"]) in self.props:
            return self.text(node["props"]["id"])
        if isinstance(node, list):
            return " ".join(self._text(n) for n in node)
        if isinstance(node, dict):
            return self._text(node.get("props", {}).get("children"))
        return text_of(node)

    def set(self, cid, prop: str, value) -> None:
        self.props.setdefault(id_key(cid), {})[prop] = value

    def _item(self, spec: dict, values: dict) -> list | dict:
        cid, prop = spec["id"], spec["property"]
        if isinstance(cid, str) and cid.startswith("{"):
            cid = json.loads(cid)
        if isinstance(cid, dict) and any(isinstance(v, list) for v in cid.values()):
            return [
                {"id": self.ids[k], "property": prop, "value": values.get((k, prop), self.props[k].get(prop))}
                for k in self.ids
                if _matches(cid, self.ids[k])
            ]
        key = id_key(cid)
        return {"id": cid, "property": prop, "value": values.get((key, prop), self.value(cid, prop))}

    def body(self, dep: dict, changed: list[tuple[object, str]] = (), values: dict | None = None) -> dict:
        """The request the renderer sends for ``dep`` after ``changed`` props changed to ``values``."""
        values = {(id_key(k[0]), k[1]): v for k, v in (values or {}).items()}
        outputs = []
        for cid, prop in _split_output(dep["output"]):
            spec = {"id": cid if isinstance(cid, str) else json.dumps(cid), "property": prop}
            outputs.append(self._item(spec, {}) if isinstance(cid, dict) else {"id": cid, "property": prop})
        changed_ids = []
        for cid, prop in changed:
            changed_ids.append(f"{id_key(cid)}.{prop}")
        multi = dep["output"].startswith("..")
        return {
            "output": dep["output"],
            "outputs": outputs if multi else outputs[0],
            "inputs": [self._item(i, values) for i in dep["inputs"]],
            "state": [self._item(s, values) for s in dep["state"]],
            "changedPropIds": changed_ids,
        }

    def post(self, body: dict, **query):
        query = {"endId": self.end_id, **query}
        return self.client.post("/_dash-update-component?" + urlencode(query), json=body)

    def run_background(self, dep: dict, changed=(), values: dict | None = None, timeout_s: float = 60.0):
        """Start a background callback and poll it as the renderer does until it answers.

        Returns (first response, final response, seconds until the answer). Every progress update
        seen on the way is kept in ``self.progress_seen`` (a poll hands each update over once, so
        the last one may come with any poll, the answer's included).
        """
        self.progress_seen = []
        for (cid, prop), value in (values or {}).items():
            self.set(cid, prop, value)
        body = self.body(dep, changed, values)
        started = time.monotonic()
        first = self.post(body)
        handles = first.get_json()
        final = first
        while time.monotonic() - started < timeout_s:
            time.sleep(0.1)
            final = self.post(body, cacheKey=handles["cacheKey"], job=handles["job"])
            if final.status_code == 200 and "progress" in (final.get_json() or {}):
                self.progress_seen.append(final.get_json()["progress"])
            if final.status_code != 200 or "cacheKey" not in (final.get_json() or {}):
                answer = final.get_json() or {}
                if "response" in answer:
                    self.apply(answer)
                    break
        return first, final, time.monotonic() - started

    def fire(self, dep: dict, changed: list[tuple[object, str]] = (), values: dict | None = None):
        """Set ``values``, send the callback as the renderer would, apply its answer; returns the response."""
        for (cid, prop), value in (values or {}).items():
            self.set(cid, prop, value)
        response = self.post(self.body(dep, changed, values))
        if response.status_code == 200:
            self.apply(response.get_json())
        return response

    def apply(self, answer: dict) -> None:
        for key, props in answer.get("response", {}).items():
            for prop, value in props.items():
                prop = prop.split("@")[0]
                if isinstance(value, dict) and "__dash_patch_update" in value:
                    value = patched(self.props.get(key, {}).get(prop), value["operations"])
                self.props.setdefault(key, {})[prop] = value

    def load(self) -> None:
        """What the renderer does once a page is drawn: every callback of its components (its outputs
        and inputs on the page) without prevent_initial_call, once."""
        for dep in self.server_callbacks():
            if not dep.get("prevent_initial_call") and self.has(dep):
                response = self.fire(dep)
                assert response.status_code in (200, 204), response.get_data(as_text=True)[:2000]

    def has(self, dep: dict) -> bool:
        """Whether the callback's components (its outputs and inputs named by id, not by pattern) are on the page."""
        named = [cid for cid, _ in _split_output(dep["output"]) if isinstance(cid, str)]
        named += [i["id"] for i in dep["inputs"] if not i["id"].startswith("{")]
        return all(cid in self.ids for cid in named)


def text_of(node) -> str:
    """The visible text of a rendered component tree (as sent in a callback answer)."""
    if node is None:
        return ""
    if isinstance(node, (str, int, float)):
        return str(node)
    if isinstance(node, list):
        return " ".join(text_of(n) for n in node)
    if isinstance(node, dict):
        return text_of(node.get("props", {}).get("children"))
    return ""


def patched(value, operations: list[dict]):
    """A prop after a Dash ``Patch`` (the operations the page's callbacks use: Assign, Append, Delete)."""
    value = json.loads(json.dumps(value))
    for op in operations:
        *path, last = op["location"]
        target = value
        for step in path:
            target = target[step]
        if op["operation"] == "Assign":
            target[last] = op["params"]["value"]
        elif op["operation"] == "Append":
            target[last].append(op["params"]["value"])
        elif op["operation"] == "Delete":
            del target[last]
        else:
            raise NotImplementedError(op["operation"])
    return value


def answer(response) -> dict:
    """The outputs of a callback's 200 answer (anything else fails the test with the body)."""
    assert response.status_code == 200, response.get_data(as_text=True)[:3000]
    return response.get_json()["response"]
