"""Slow clients cannot stall the page, in the shipped deployment and in gunicorn alone.

Before: eight connections trickling a POST body a byte every 5 s held all 8 of gunicorn's threads
(2 gthread workers × 4), and a cheap GET waited until they closed. Now the container's command
(deploy/serve.py) puts nginx in front, which reads requests whole before gunicorn sees them, and
gunicorn itself answers 408 to a request not sent in time (ppviz.web.serving).
"""

from __future__ import annotations

import io
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from slow_clients import NGINX, ROOT, Tricklers, dockerfile_command, get, serve

from ppviz.web import serving
from ppviz.web.protocol import MAX_BODY_BYTES

needs_nginx = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (scripts/test.sh installs Debian's)")


@pytest.mark.slow  # its own deployment (nginx and gunicorn), started here
@needs_nginx
def test_sixteen_slow_bodies_and_four_slow_headers_delay_a_cheap_request_by_under_a_second_behind_nginx():
    served = serve(proxy=True)  # the Dockerfile's CMD, as the container runs it
    try:
        health = subprocess.run(dockerfile_command("HEALTHCHECK"), env={"PORT": str(served.port)}, timeout=30)
        assert health.returncode == 0
        alone = [get(served.port, timeout=10) for _ in range(4)]  # the same GET before any slow client
        bodies = Tricklers(served.port, 16, "body")
        headers = Tricklers(served.port, 4, "headers")
        try:
            time.sleep(1)
            answers = []
            for _ in range(8):
                answers.append(get(served.port, timeout=10))
                time.sleep(0.5)
            assert bodies.waiting() == 16 and headers.waiting() == 4  # all still sending meanwhile
        finally:
            bodies.close()
            headers.close()
        assert [status for status, _ in alone + answers] == [200] * 12
        # The bound: delayed by no more than 1 s (gunicorn alone: 14 s and more, bench --slow)
        assert max(seconds for _, seconds in answers) < max(seconds for _, seconds in alone) + 1.0, (alone, answers)
    finally:
        status = served.stop(signal.SIGTERM)
    assert status == 0  # serve.py passed SIGTERM on to nginx and gunicorn, and both ended cleanly
    assert not served.left_behind


@pytest.mark.slow  # its own deployment: the test stops its nginx
@needs_nginx
def test_the_container_command_ends_when_nginx_ends():
    served = serve(proxy=True)
    try:
        children = Path(f"/proc/{served.proc.pid}/task/{served.proc.pid}/children").read_text().split()
        nginx = [int(c) for c in children if b"nginx" in Path(f"/proc/{c}/cmdline").read_bytes()]
        assert len(nginx) == 1
        os.kill(nginx[0], signal.SIGTERM)  # nginx stops on its own: the container must not live on half
        status = served.proc.wait(timeout=40)
    finally:
        served.stop()
    assert status == 1  # nginx's own status was 0; the container's says it did not stop as asked
    assert not served.left_behind


@pytest.mark.slow  # its own gunicorn, whose threads the slow clients hold
def test_gunicorn_alone_answers_408_to_requests_not_sent_in_time():
    served = serve(proxy=False)
    try:
        # 4 at most: each worker has 4 threads, and a 5th connection would wait for one first
        bodies = Tricklers(served.port, 3, "body")
        headers = Tricklers(served.port, 1, "headers")
        deadline = time.monotonic() + serving.HEADER_SECONDS + serving.BODY_SECONDS + 5
        while (bodies.waiting() or headers.waiting()) and time.monotonic() < deadline:
            time.sleep(0.2)
        bodies.close()
        headers.close()
        status, seconds = get(served.port, timeout=10)
    finally:
        served.stop(signal.SIGQUIT)
    for answers, limit in ((headers.answers, serving.HEADER_SECONDS), (bodies.answers, serving.BODY_SECONDS)):
        for after, first in answers.values():
            assert first.startswith(b"HTTP/1.1 408 "), first
            assert limit - 0.5 < after < limit + 3, (after, limit)  # the header phase takes ~0 s for bodies
    assert len(bodies.answers) == 3 and len(headers.answers) == 1
    assert status == 200 and seconds < 5


def test_read_deadline_ends_a_blocked_read_and_says_it_was_late():
    deadlines = serving.Deadlines()
    (a, b), (c, d) = socket.socketpair(), socket.socketpair()
    with a, b, c, d:
        deadlines.arm(a, 0.2)
        deadlines.arm(c, 60)
        started = time.monotonic()
        assert a.recv(10) == b""  # the read side was shut at the deadline
        assert 0.15 < time.monotonic() - started < 5
        assert deadlines.disarm(a.fileno()) is False and deadlines.disarm(a.fileno()) is True
        assert deadlines.disarm(c.fileno()) is True  # disarmed in time: c is still readable
        d.sendall(b"ok")
        assert c.recv(10) == b"ok"


@needs_nginx
def test_the_shipped_nginx_config_is_valid_and_matches_the_app():
    sys.path.insert(0, str(ROOT / "deploy"))
    import serve as entrypoint

    with tempfile.TemporaryDirectory() as run:
        conf = entrypoint.render(Path(run), "127.0.0.1:7860")
        text = conf.read_text()
        assert "${" not in text
        assert re.search(rf"client_max_body_size {MAX_BODY_BYTES};", text)
        assert f"server unix:{run}/gunicorn.sock;" in text
        _, nginx_cmd = entrypoint.commands(Path(run), conf)
        check = subprocess.run([*nginx_cmd, "-t", "-q"], capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stderr


def test_the_dockerfile_pins_its_base_checks_health_and_runs_the_deployment():
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim@sha256:[0-9a-f]{64}$", text, re.M)
    assert "HEALTHCHECK" in text and "USER 1000" in text
    assert dockerfile_command("CMD")[1:] == ["deploy/serve.py"]
    assert re.search(r"^COPY .* deploy \./deploy$", text, re.M)
    assert "apt-get install -y --no-install-recommends nginx" in text


def test_gunicorn_reads_the_read_deadlines_and_worker_recycling_from_the_shipped_config():
    gunicorn = Path(sys.executable).with_name("gunicorn")
    if not gunicorn.exists():
        pytest.skip("gunicorn is not installed in this environment")
    cmd = [str(gunicorn), "--print-config", "-c", "gunicorn.conf.py", "app:server"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    settings = dict(re.findall(r"^(\w+)\s+= (.*)$", out, re.M))
    assert settings["worker_class"] == "ppviz.web.serving.Worker"  # gunicorn ignores a misspelt name
    assert int(settings["max_requests"]) > 0 and int(settings["max_requests_jitter"]) > 0


def _call(environ: dict) -> tuple[str, bytes, bytes | None]:
    """BodyDeadline around an app that reads the body: (status, answer, what the app read)."""
    seen, status = [], []

    def app(environ, start_response):
        seen.append(environ["wsgi.input"].read())
        start_response("200 OK", [])
        return [b"ok"]

    a, b = socket.socketpair()
    with a, b:
        answer = serving.BodyDeadline(app, serving.Deadlines())(
            {"gunicorn.socket": a, **environ}, lambda s, headers: status.append(s)
        )
    return status[0], b"".join(answer), seen[0] if seen else None


def test_the_body_is_read_for_the_app_and_a_short_or_oversized_one_answered_at_once():
    body = b'{"output": "x"}' * 1000
    assert _call({"CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)}) == ("200 OK", b"ok", body)
    chunked = {"HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": io.BytesIO(body)}
    assert _call(chunked) == ("200 OK", b"ok", body)
    short = _call({"CONTENT_LENGTH": str(len(body) + 1), "wsgi.input": io.BytesIO(body)})  # the client gave up
    assert short[0].startswith("408") and short[2] is None
    big = io.BytesIO(b"x" * (MAX_BODY_BYTES + 10))
    assert _call({"HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": big})[0].startswith("413")


def test_behind_nginx_on_the_unix_socket_the_client_is_the_real_ip_and_never_over_tcp():
    seen = []
    app = serving.client_behind_proxy(lambda environ, start_response: seen.append(environ["REMOTE_ADDR"]))
    app({"REMOTE_ADDR": "", "HTTP_X_REAL_IP": "203.0.113.7"}, None)  # gunicorn's environ on a unix socket
    app({"REMOTE_ADDR": "198.51.100.2", "HTTP_X_REAL_IP": "203.0.113.7"}, None)  # a TCP client's own header
    assert seen == ["203.0.113.7", "198.51.100.2"]
