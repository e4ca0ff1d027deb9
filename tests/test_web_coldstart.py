"""The first page load after a cold start is whole: gunicorn with the shipped config, 20 starts.

Each start sends the index, the layout, the callback map and every script, stylesheet and lazily
loaded bundle at once, the moment the port accepts connections, as a browser's first load does.
Before the fix, 1 start in 3 answered a bundle 500 "dash is not a registered library" (the race
of plotly/dash#3971 under gthread workers).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from dash import dash_table, dcc

ROOT = Path(__file__).resolve().parents[1]
GUNICORN = Path(sys.executable).with_name("gunicorn")
STARTS = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def asset_paths() -> list[str]:
    """Every file a first load fetches, from a page served once in-process (its names do not change)."""
    import app

    index = app.server.test_client().get("/").get_data(as_text=True)
    found = re.findall(r'(?:src|href)="(/[^"]+)"', index)
    lazy = [
        f"/_dash-component-suites/{d.get('namespace', 'dash')}/{d['relative_package_path']}"
        for d in [*dcc._js_dist, *dash_table._js_dist]
        if d.get("async") and str(d.get("relative_package_path", "")).endswith(".js")
    ]
    return ["/", "/_dash-layout", "/_dash-dependencies", *dict.fromkeys(found), *lazy]


def wait_for_port(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("gunicorn exited:\n" + proc.stdout.read().decode())
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise TimeoutError("gunicorn did not open its port in 30 s")


def stop(proc: subprocess.Popen) -> None:
    """gunicorn's quick shutdown; on a busy machine that can outlast its wait, so then kill its group."""
    proc.send_signal(signal.SIGQUIT)
    try:
        proc.communicate(timeout=20)  # reads its log as it goes, so a full pipe never holds it up
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=20)


@pytest.mark.slow
@pytest.mark.skipif(not GUNICORN.exists(), reason="gunicorn is not installed in this environment")
def test_twenty_cold_starts_serve_every_asset_of_the_first_load():
    paths = asset_paths()
    assert len(paths) >= 20 and any("async-graph" in p for p in paths)
    failures = []
    env = {**os.environ, "WEB_CONCURRENCY": "2"}  # the shipped config: 2 gthread workers × 4 threads
    stopping = []
    # A stop takes seconds of waiting (gunicorn's master outlives its workers): each runs in the
    # background while the next server starts cold; all have ended before the test does.
    with ThreadPoolExecutor(len(paths)) as pool, ThreadPoolExecutor(4) as stops:
        for start in range(STARTS):
            port = free_port()
            cmd = [str(GUNICORN), "app:server", "-c", "gunicorn.conf.py", "-b", f"127.0.0.1:{port}"]
            # Its own session, so that the master and its workers can be stopped together by its PID.
            proc = subprocess.Popen(
                cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
            )
            try:
                wait_for_port(port, proc)
                base = f"http://127.0.0.1:{port}"
                codes = list(pool.map(lambda p, b=base: status(b + p), paths))
                failures += [(start, p, c) for p, c in zip(paths, codes) if c != 200]
            finally:
                stopping.append(stops.submit(stop, proc))
    for stopped in stopping:
        stopped.result()  # a stop that failed fails the test
    assert failures == [], failures[:10]
