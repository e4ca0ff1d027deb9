"""The page as served, on free loopback ports, and clients that send slowly: for the tests and bench.

``serve`` starts the container's command (the Dockerfile's CMD: nginx in front of gunicorn) or
gunicorn alone with the shipped config, each in its own session so that it and everything under
it stop together. ``Tricklers`` are connections that send a request a byte at a time.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NGINX = shutil.which("nginx") or next((p for p in ["/usr/sbin/nginx"] if Path(p).exists()), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dockerfile_command(instruction: str) -> list[str]:
    """The exec-form command of the Dockerfile's CMD or HEALTHCHECK, with `python` this interpreter."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    line = next(line for line in text.splitlines() if line.startswith(instruction + " "))
    cmd = json.loads(re.search(r"(?:^|\s)CMD\s+(\[.*\])\s*$", line).group(1))
    return [sys.executable if cmd[0] == "python" else cmd[0], *cmd[1:]]


class Served:
    """A server started by ``serve``; ``stop`` ends it and everything it started."""

    def __init__(self, cmd: list[str], port: int, env: dict):
        self.port = port
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while get(port, timeout=5)[0] != 200:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{cmd} did not serve the page on port {port}")
            time.sleep(0.2)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int | None:
        """Its exit status after ``sig`` (None if it had to be killed). ``left_behind`` then says
        whether any process of its session outlived it; all are killed."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            self.left_behind = self.group_alive()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def group_alive(self) -> bool:
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        return True


def serve(proxy: bool) -> Served:
    """The container's command (nginx + gunicorn) if ``proxy``, else gunicorn alone, on loopback."""
    port = free_port()
    if proxy:
        return Served(dockerfile_command("CMD"), port, {"HOST": "127.0.0.1", "PORT": str(port)})
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    cmd = [gunicorn, "app:server", "-c", "gunicorn.conf.py", "-b", f"127.0.0.1:{port}"]
    return Served(cmd, port, {"WEB_CONCURRENCY": "2"})


def get(port: int, path: str = "/_dash-layout", timeout: float = 30) -> tuple[int, float]:
    """Status and seconds of a GET on a new connection (599 when it failed or timed out)."""
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    except OSError:
        status = 599
    return status, time.perf_counter() - started


class Tricklers:
    """``n`` connections sending a request a byte every ``every`` s: the body (headers sent whole)
    or the headers themselves. Each records when the server answered or closed it."""

    BODY_HEAD = (
        b"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    )
    HEADERS = b"GET /_dash-layout HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"x" * 100000

    def __init__(self, port: int, n: int, what: str = "body", every: float = 1.0):
        self.started = time.monotonic()
        self.socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(n)]
        self.data = self.HEADERS if what == "headers" else b"x" * 100000
        for s in self.socks:
            if what == "body":
                s.sendall(self.BODY_HEAD)
            s.setblocking(False)
        self.answers: dict[int, tuple[float, bytes]] = {}  # index -> (seconds after start, first bytes)
        self.every, self._stop = every, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        for i, s in enumerate(self.socks):
            selector.register(s, selectors.EVENT_READ, i)
        sent, next_send = 0, time.monotonic()
        while not self._stop.is_set() and len(self.answers) < len(self.socks):
            if time.monotonic() >= next_send and sent < len(self.data):
                for i, s in enumerate(self.socks):
                    if i not in self.answers:
                        with contextlib.suppress(OSError):
                            s.send(self.data[sent : sent + 1])
                sent, next_send = sent + 1, next_send + self.every
            for key, _ in selector.select(timeout=min(max(next_send - time.monotonic(), 0), 0.1)):
                try:
                    got = key.fileobj.recv(200)
                except OSError:
                    got = b""
                self.answers[key.data] = (time.monotonic() - self.started, got)
                selector.unregister(key.fileobj)
        selector.close()

    def waiting(self) -> int:
        """How many are still unanswered, the server still reading them."""
        return len(self.socks) - len(self.answers)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for s in self.socks:
            s.close()
