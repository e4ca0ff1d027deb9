"""Crafted requests against the page as served: gunicorn with the shipped gunicorn.conf.py, on loopback.

    python bench/bench_malformed.py               # every shape of tests/malformed.py, 3 rounds
    python bench/bench_malformed.py --rounds 20
    python bench/bench_malformed.py --cost        # CPU of the check itself, per request (no server)

Sends each shape (built from the app's own callback map) over a raw HTTP connection, so bodies that
no client library would send (not UTF-8, nested 100,000 deep, no Content-Type) travel as written.
Prints, per shape, the statuses seen; then the number of 500s, of answers outside each shape's
expected statuses, and of tracebacks and ERROR lines in the server's log. Bounded: at most
``rounds`` × the number of shapes requests, each with a 30 s timeout; the server is stopped by its PID.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(log) -> tuple[subprocess.Popen, int]:
    """gunicorn app:server -c gunicorn.conf.py on a free loopback port, its log (stdout and stderr) to ``log``."""
    port = free_port()
    gunicorn = Path(sys.executable).with_name("gunicorn")
    cmd = [str(gunicorn), "app:server", "-c", "gunicorn.conf.py", "-b", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/_dash-layout")
            if conn.getresponse().status == 200:
                return proc, port
        except OSError:
            time.sleep(0.2)
    stop(proc)
    raise RuntimeError("gunicorn did not start")


def stop(proc: subprocess.Popen) -> None:
    """Stop gunicorn and every job it forked (its own process group)."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def send(port: int, request) -> tuple[int, dict | None]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": request.content_type} if request.content_type else {}
    try:
        conn.request(request.method, request.path, request.body, headers)
        response = conn.getresponse()
        data = response.read()
    except (OSError, http.client.HTTPException):
        return 599, None  # the connection failed: counted as an error, not a 500
    finally:
        conn.close()
    try:
        answer = json.loads(data) if response.status == 200 else None
    except ValueError:
        answer = None
    return response.status, answer if isinstance(answer, dict) else None


def poll(port: int, request, answer: dict | None) -> None:
    """A background job a shape started, polled to its end (at most 30 s) so none is left running."""
    from dataclasses import replace
    from urllib.parse import urlencode

    deadline = time.monotonic() + 30
    while answer and "cacheKey" in answer and time.monotonic() < deadline:
        time.sleep(0.1)
        query = urlencode({"cacheKey": answer["cacheKey"], "job": answer["job"]})
        sep = "&" if "?" in request.path else "?"
        _, answer = send(port, replace(request, path=f"{request.path}{sep}{query}"))


def cost() -> None:
    """CPU time of ppviz.web.protocol's checks (problem and nesting) per request: the page's own
    requests, and the costliest 2 MB bodies an attacker can send."""
    import malformed
    from web_dispatch import Page

    import app
    from ppviz.web import protocol

    page = Page.open(app.server)
    page.load()

    def per_call(body: dict, raw: bytes, n: int) -> float:
        started = time.process_time()
        for _ in range(n):
            protocol.problem(body, app.app.callback_map)
            protocol.nesting(raw)
        return (time.process_time() - started) / n

    own = [page.body(d, []) for d in page.server_callbacks()]
    times = sorted(per_call(b, json.dumps(b).encode(), 200) for b in own)
    median, top = times[len(times) // 2] * 1e6, times[-1] * 1e6
    print(f"the page's {len(own)} server callbacks' requests: median {median:.0f} µs, max {top:.0f} µs")
    page_body = page.body(page.callback(malformed.PAGE), [])
    worst = {
        "lists of one number": {"output": "x", "inputs": [[[0]] * 250_000]},
        "lists 31 deep": {"output": "x", "inputs": [[json.loads("[" * 29 + "]" * 29)] * 30_000]},
        "short strings with escapes": {"output": "x", "inputs": [['a\\"'] * 200_000]},
        "the page callback with pattern ids in changedPropIds": {
            **page_body,
            "changedPropIds": ['{"a":1}.x'] * 120_000,
        },
    }
    for name, body in worst.items():
        raw = json.dumps(body).encode()
        print(f"{len(raw) / 2**20:.1f} MiB of {name}: {per_call(body, raw, 5) * 1e3:.1f} ms")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="times each shape is sent (bounded: at most 100)")
    ap.add_argument("--cost", action="store_true", help="CPU of the protocol check per request, in process")
    args = ap.parse_args()
    if args.cost:
        cost()
        return
    rounds = max(1, min(args.rounds, 100))

    import malformed
    from web_dispatch import Page

    import app

    page = Page.open(app.server)  # builds the shapes from the app's callback map, as the server has it
    with tempfile.NamedTemporaryFile("w+", prefix="ppviz-malformed-", suffix=".log") as log:
        proc, port = start(log)
        try:
            end_id = json.loads(_config(port))["end_id"]  # the served page's token, not the test client's
            page.end_id = end_id
            seen: dict[str, collections.Counter] = {}
            outside = fives = 0
            for _ in range(rounds):
                for name, make in malformed.SHAPES.items():
                    request = make(page)
                    status, answer = send(port, request)
                    poll(port, request, answer)
                    seen.setdefault(name, collections.Counter())[status] += 1
                    fives += status == 500
                    outside += status not in request.expect
        finally:
            stop(proc)
        log.seek(0)
        lines = log.read().splitlines()
    for name, counts in seen.items():
        print(f"{name:45s} {dict(counts)}")
    errors = [line for line in lines if " ERROR " in line or "[ERROR]" in line]
    tracebacks = sum("Traceback (most recent call last)" in line for line in lines)
    print(
        f"\n{rounds * len(malformed.SHAPES)} requests ({len(malformed.SHAPES)} shapes × {rounds}): "
        f"{fives} × 500, {outside} outside the expected statuses, {tracebacks} tracebacks and "
        f"{len(errors)} ERROR lines in the server's log"
    )
    for line in errors[:5]:
        print("  ", line[:200])
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min)")


def _config(port: int) -> str:
    import re

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/")
    index = conn.getresponse().read().decode()
    return re.search(r'<script id="_dash-config" type="application/json">(.*?)</script>', index, re.S).group(1)


if __name__ == "__main__":
    main()
