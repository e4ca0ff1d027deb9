"""The Celery path of background jobs: a real local redis-server (Debian's package) and a real Celery
worker (``celery -A app:celery_app worker`` with ``REDIS_URL``), both started here on loopback and
stopped by their PIDs. The page, served by a separate ``python app.py`` with the same ``REDIS_URL``,
hands the search to the worker; its table equals ``ppviz.search``'s own ranking.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from web_dispatch import Page

import ppviz
from ppviz.estimate import model

ROOT = Path(__file__).resolve().parents[1]
CELERY = Path(sys.executable).with_name("celery")
REDIS = shutil.which("redis-server")
STARTUP_S = 60


def _missing() -> str | None:
    if REDIS is None:
        return "redis-server is not installed (Debian: apt-get install redis-server; scripts/test.sh does it)"
    if not CELERY.exists():
        return "celery is not installed in this venv (pip install -r requirements-dev.txt)"
    try:
        import redis  # noqa: F401
    except ImportError:
        return "the redis client is not installed (pip install -r requirements-dev.txt)"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(_missing() is not None, reason=_missing() or "")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Response:
    def __init__(self, r):
        self.status_code, self._r = r.status_code, r

    def get_data(self, as_text: bool = False):
        return self._r.text if as_text else self._r.content

    def get_json(self):
        return self._r.json() if self._r.content else None


class _Http:
    """The few methods of Flask's test client that web_dispatch.Page uses, over real HTTP."""

    def __init__(self, base: str):
        import requests

        self.base, self.session = base, requests.Session()

    def test_client(self):
        return self

    def get(self, path: str) -> _Response:
        return _Response(self.session.get(self.base + path, timeout=30))

    def post(self, path: str, json=None) -> _Response:
        return _Response(self.session.post(self.base + path, json=json, timeout=30))


def _stop(proc: subprocess.Popen) -> None:
    """Stop one process we started, by its PID: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def _wait(check, what: str, procs: list[subprocess.Popen], timeout: float = STARTUP_S) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except Exception:
            pass
        for p in procs:
            assert p.poll() is None, f"{p.args[0]} exited ({p.returncode}) while waiting for {what}"
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.2)


@pytest.fixture
def cluster(tmp_path):
    """redis-server, a Celery worker and the page, on loopback; every process stopped by its PID."""
    import redis
    import requests

    redis_port, web_port = free_port(), free_port()
    url = f"redis://127.0.0.1:{redis_port}/0"
    env = {**os.environ, "REDIS_URL": url, "PYTHONPATH": str(ROOT), "HOST": "127.0.0.1", "PORT": str(web_port)}
    env["PPVIZ_JOBS_DIR"] = str(tmp_path / "jobs")
    procs: list[subprocess.Popen] = []
    log = open(tmp_path / "processes.log", "w")  # noqa: SIM115  (closed below)
    try:
        procs.append(subprocess.Popen(
            [REDIS, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=log, stderr=subprocess.STDOUT))  # fmt: skip
        client = redis.Redis.from_url(url)
        _wait(client.ping, "redis-server answers", procs)
        procs.append(subprocess.Popen(
            [str(CELERY), "-A", "app:celery_app", "worker", "--pool=solo", "--concurrency=1", "--loglevel=INFO",
             "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))  # fmt: skip
        procs.append(
            subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        )
        base = f"http://127.0.0.1:{web_port}"
        _wait(lambda: requests.get(base + "/", timeout=5).status_code == 200, "the page answers", procs)
        _wait(lambda: "ready" in (tmp_path / "processes.log").read_text(), "the Celery worker is ready", procs)
        yield base, tmp_path / "processes.log"
    finally:
        for p in reversed(procs):
            _stop(p)
        log.close()
    assert all(p.poll() is not None for p in procs)


def test_a_search_runs_on_a_celery_worker_through_redis(cluster):
    base, log = cluster
    page = Page.open(_Http(base), "/search")
    page.load()
    values = {("model-search", "value"): "llama3-8b", ("gpus-search", "value"): 16, ("gbs-search", "value"): 32}
    values |= {("seq-search", "value"): 4096, ("schedules-search", "value"): ["1f1b", "zb-v"]}
    values |= {("headroom-search", "value"): 10, ("run-search", "n_clicks"): 1}
    sync = page.fire(page.callback("ran-search.data"), [("run-search", "n_clicks")], values)
    assert sync.status_code == 200, sync.get_data(as_text=True)[:2000]
    first, final, _ = page.run_background(
        page.callback("error-search.children"), [("request-search", "data")], timeout_s=120
    )
    handles = first.get_json()
    # A Celery task id (a UUID), not the PID of a local process as with the diskcache manager.
    task = handles["job"].split("~", 1)[0]  # Dash signs the handle after the "~"
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", task), handles
    rows = page.value("grid-search", "rowData")
    expected = ppviz.search(
        model("llama3-8b", seq=4096), "h100-sxm", 16, 32, top=20, schedules=["1f1b", "zb-v"], headroom=0.1
    )
    assert rows and [r["command"] for r in rows] == [r["command"] for r in expected.layouts]
    assert f"[{task}] succeeded" in log.read_text(), log.read_text()[-3000:]  # the worker ran it
