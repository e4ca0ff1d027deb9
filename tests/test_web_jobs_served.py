"""Background jobs under gunicorn with the shipped config: bursts of jobs all end within their
limits and leave no process behind; one client cannot hold more than its share."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from job_targets import jobs_under
from web_dispatch import Page

ROOT = Path(__file__).resolve().parents[1]
GUNICORN = Path(sys.executable).with_name("gunicorn")
# Four searching schedules compared at 64 × 256: about 4 s of CPU, past the run limit below.
HEAVY = "#mode=compare&compare=v-auto,v-half,v-zb,zb-auto&devices=64&microbatches=256"
RUN_S, QUEUE_S = 2, 3
GRACE_S = 3  # the reaper's grace (2 s) and its round (1 s)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """gunicorn app:server -c gunicorn.conf.py on a free loopback port, stopped by its PID."""

    def __init__(self, tmp_path: Path, **env: str):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        cmd = [str(GUNICORN), "app:server", "-b", f"127.0.0.1:{self.port}", "-c", "gunicorn.conf.py"]
        full_env = {**os.environ, "WEB_CONCURRENCY": "2", "PPVIZ_JOBS_DIR": str(tmp_path / "jobs"), **env}
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                index = urllib.request.urlopen(self.base + "/", timeout=5).read()
                break
            except OSError:
                assert self.proc.poll() is None, "gunicorn exited"
                time.sleep(0.2)
        config = re.search(rb'<script id="_dash-config" type="application/json">(.*?)</script>', index, re.S)
        self.end_id = json.loads(config.group(1))["end_id"]

    def post(self, body: dict, forwarded: str | None = None, **query: str) -> dict:
        from urllib.parse import urlencode

        url = f"{self.base}/_dash-update-component?" + urlencode({"endId": self.end_id, **query})
        headers = {"Content-Type": "application/json", **({"X-Forwarded-For": forwarded} if forwarded else {})}
        request = urllib.request.Request(url, json.dumps(body).encode(), headers)
        with urllib.request.urlopen(request, timeout=30) as r:
            return json.loads(r.read() or b"{}") if r.status == 200 else {}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def page() -> Page:
    import app

    return Page.open(app.server)


def job_body(page: Page, at: int) -> dict:
    page.set("job-request", "data", {"hash": HEAVY, "at": at})
    return page.body(page.callback("job-error.children"), [("job-request", "data")])


def created(pid: int) -> float:
    """When the job's process started (time.time()); now if it is already gone."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return time.time()


def ended(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.slow  # its own gunicorn, started with this test's limits
@pytest.mark.skipif(not GUNICORN.exists(), reason="gunicorn is not installed")
def test_a_hundred_jobs_in_bursts_all_end_within_their_limits(page, tmp_path):
    """Five bursts of 20 jobs, a second apart, nobody polling: each job runs (2 slots) or waits,
    and ends by its limit (queue 3 s, run 2 s); no job hangs, and no process is left."""
    env = {"PPVIZ_JOB_MAX_S": str(RUN_S), "PPVIZ_JOB_QUEUE_S": str(QUEUE_S), "PPVIZ_JOB_ABANDONED_S": "600",
           "PPVIZ_JOBS_RUNNING": "2", "PPVIZ_JOBS_QUEUED": "200", "PPVIZ_JOBS_PER_CLIENT": "200"}  # fmt: skip
    served = Served(tmp_path, **env)
    try:
        started: dict[int, float] = {}
        with ThreadPoolExecutor(20) as pool:
            for burst in range(5):
                bodies = [job_body(page, burst * 20 + i) for i in range(20)]
                for answer in pool.map(served.post, bodies):
                    started[int(answer["job"].split("~")[0])] = created(int(answer["job"].split("~")[0]))
                time.sleep(1)
        assert len(started) == 100
        late = []
        deadline = max(started.values()) + QUEUE_S + RUN_S + GRACE_S
        while time.time() < deadline and not all(ended(p) for p in started):
            time.sleep(0.1)
            for pid, t0 in started.items():
                if not ended(pid) and time.time() > t0 + QUEUE_S + RUN_S + GRACE_S and pid not in late:
                    late.append(pid)
        assert not late, f"{len(late)} jobs outlived their limits"
        assert all(ended(p) for p in started), "jobs still running"
        assert jobs_under(served.proc.pid) == [], "processes left under the job servers"
        assert urllib.request.urlopen(served.base + "/_dash-layout", timeout=5).status == 200
    finally:
        served.stop()


@pytest.mark.slow  # its own gunicorn, started with this test's limits
@pytest.mark.skipif(not GUNICORN.exists(), reason="gunicorn is not installed")
def test_one_client_cannot_hold_more_than_its_share(page, tmp_path):
    """Behind the proxy (PPVIZ_PROXY_HOPS=1) each forwarded address is a client with 1 job at most:
    its second job is refused with the reason on the page; another client's job runs."""
    served = Served(tmp_path, PPVIZ_JOBS_PER_CLIENT="1", PPVIZ_PROXY_HOPS="1", PPVIZ_JOB_MAX_S="20")
    try:
        first = served.post(job_body(page, 1), forwarded="10.0.0.1")
        body = job_body(page, 2)
        second = served.post(body, forwarded="10.0.0.1")
        other = served.post(job_body(page, 3), forwarded="10.0.0.2")
        answer = {}
        for _ in range(100):
            answer = served.post(body, forwarded="10.0.0.1", cacheKey=second["cacheKey"], job=second["job"])
            if "response" in answer:
                break
            time.sleep(0.1)
        error = json.dumps(answer.get("response", {}).get("job-error", {}))
        assert "you already have 1 background job running or waiting (at most 1 per user)" in error
        for handle in (first, other):
            assert not ended(int(handle["job"].split("~")[0])), "a job within its client's share was stopped"
    finally:
        served.stop()
    for handle in (first, other):
        assert ended(int(handle["job"].split("~")[0])), "a job outlived its server"
