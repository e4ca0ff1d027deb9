"""The page served by gunicorn with gunicorn.conf.py, as the Dockerfile runs it (behind nginx, deploy/serve.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUNICORN = Path(sys.executable).with_name("gunicorn")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read()


@pytest.fixture(scope="module")
def served():
    """gunicorn app:server with the project's config, on a free port, one worker."""
    if not GUNICORN.exists():
        pytest.skip("gunicorn is not installed in this environment")
    port = free_port()
    env = {**os.environ, "WEB_CONCURRENCY": "1", "PPVIZ_JOB_ABANDONED_S": "1"}
    cmd = [str(GUNICORN), "app:server", "-b", f"127.0.0.1:{port}", "-c", "gunicorn.conf.py"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            if proc.poll() is not None:
                raise RuntimeError("gunicorn exited:\n" + proc.stdout.read().decode())
            try:
                fetch(base + "/")
                break
            except OSError:
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_page_is_served_with_its_title(served):
    """The index page answers 200 and carries the app's title."""
    status, body = fetch(served + "/")
    assert status == 200
    assert b"<title>ppviz</title>" in body


def test_layout_holds_the_controls_and_charts(served):
    """/_dash-layout is the frame (its location, the links to the pages, the page container); the pages
    router answers / with the abstract page: its location, the sliders and both charts."""
    status, body = fetch(served + "/_dash-layout")
    assert status == 200
    text = body.decode()
    for component_id in ('"here"', '"nav-model"', '"nav-search"', '"_pages_content"'):
        assert component_id in text
    deps = json.loads(fetch(served + "/_dash-dependencies")[1])
    (router,) = [d for d in deps if "_pages_content.children" in d["output"]]
    inputs = [{"id": "_pages_location", "property": "pathname", "value": "/"}]
    inputs.append({"id": "_pages_location", "property": "search", "value": ""})
    outputs = [{"id": "_pages_content", "property": "children"}, {"id": "_pages_store", "property": "data"}]
    body = {"output": router["output"], "outputs": outputs, "inputs": inputs, "state": []}
    body["changedPropIds"] = ["_pages_location.pathname"]
    request = urllib.request.Request(
        served + "/_dash-update-component", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        text = r.read().decode()
    for component_id in ('"url"', '"devices"', '"microbatches"', '"gantt"', '"memory"', '"stage-table"'):
        assert component_id in text


def test_dependencies_list_the_page_callback(served):
    """/_dash-dependencies declares the callback that writes the URL and draws the charts."""
    status, body = fetch(served + "/_dash-dependencies")
    assert status == 200
    outputs = [dep["output"] for dep in json.loads(body)]
    assert any("url.hash" in out and "gantt.figure" in out for out in outputs)


def test_a_shared_link_with_an_order_fits_the_request_line(served):
    """A long query string (an uploaded order travels in the link) is accepted, not refused with 414."""
    status, _ = fetch(served + "/?schedule=1f1b&order=" + "A" * 6000)
    assert status == 200


def test_an_abandoned_heavy_request_stops_within_a_bounded_time(served):
    """Under gunicorn, a background job nobody polls (the tab closed) ends PPVIZ_JOB_ABANDONED_S after its start."""
    import re

    import psutil
    from web_dispatch import Page

    import app

    page = Page.open(app.server)  # the callback map and props; the page load's token comes from the server
    status, index = fetch(served + "/")
    config = re.search(rb'<script id="_dash-config" type="application/json">(.*?)</script>', index, re.S)
    end_id = json.loads(config.group(1))["end_id"]
    page.set(
        "job-request",
        "data",
        {"hash": "#mode=compare&compare=v-auto,v-half,v-zb,zb-auto&devices=64&microbatches=256", "at": 1},
    )
    body = json.dumps(page.body(page.callback("job-error.children"), [("job-request", "data")])).encode()
    request = urllib.request.Request(
        f"{served}/_dash-update-component?endId={end_id}", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        pid = int(json.loads(r.read())["job"].split("~")[0])
    started = time.monotonic()
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() - started < 1 + 2, "the abandoned job is still running (PPVIZ_JOB_ABANDONED_S=1)"
        time.sleep(0.1)
