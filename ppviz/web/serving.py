"""Read deadlines for gunicorn's threaded workers: a client must send its request in bounded time.

gunicorn 27's gthread worker reads a request with blocking reads and no time limit (its `timeout`
only checks that the worker process is alive), so a client that trickles a byte every few seconds
holds one of the worker's threads for as long as it likes. ``Worker`` (gunicorn.conf.py's
``worker_class``) gives each request ``HEADER_SECONDS`` for its headers and ``BODY_SECONDS`` more
for its body; past either, the socket's read side is shut, which ends the blocked read, and the
client is answered 408. This bounds how long a slow client holds a thread; it cannot stop eight of
them holding all eight threads for that long: the shipped deployment puts nginx in front, which
reads whole requests before gunicorn sees them (deploy/).
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time

from gunicorn.workers.gthread import ThreadWorker

from ppviz.web.protocol import MAX_BODY_BYTES

TICK_SECONDS = 0.25  # how often the deadlines are checked: cheaper than waking on every request
HEADER_SECONDS = 10.0  # from the moment a thread takes the connection (gunicorn waits 5 s for a first byte)
BODY_SECONDS = 15.0  # the largest real body (~350 kB) needs 23 kB/s; behind nginx it arrives at once
TIMEOUT_TEXT = b"the request did not arrive in time; send it again\n"
TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: text/plain\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(TIMEOUT_TEXT), TIMEOUT_TEXT)
)


class Deadlines:
    """Sockets being read, each with a deadline; one thread per worker, looking every
    ``TICK_SECONDS``, shuts the late ones' reads."""

    def __init__(self):
        self._lock = threading.Lock()
        self._due: dict[int, tuple[float, socket.socket]] = {}  # by file descriptor
        self._late: set[int] = set()
        self._thread: threading.Thread | None = None

    def arm(self, sock: socket.socket, seconds: float) -> None:
        """Watch this socket until ``disarm``: its read side is shut ``seconds`` from now."""
        with self._lock:
            self._late.discard(sock.fileno())
            self._due[sock.fileno()] = (time.monotonic() + seconds, sock)
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="read-deadlines", daemon=True)
                self._thread.start()

    def disarm(self, fd: int) -> bool:
        """Stop watching the socket of this file descriptor (taken while it was open); False if
        its deadline passed (once: the next call says True)."""
        with self._lock:
            self._due.pop(fd, None)
            if fd in self._late:
                self._late.discard(fd)
                return False
            return True

    def _watch(self) -> None:
        while True:
            time.sleep(TICK_SECONDS)
            with self._lock:
                now = time.monotonic()
                for fd, (due, sock) in list(self._due.items()):
                    if due <= now:
                        del self._due[fd]
                        self._late.add(fd)
                        with contextlib.suppress(OSError):  # the blocked recv() returns b"" at once
                            sock.shutdown(socket.SHUT_RD)


class Worker(ThreadWorker):
    """gunicorn's gthread worker, with a deadline on reading each request's headers and body."""

    def init_process(self):
        self.deadlines = Deadlines()  # per worker process, after the fork
        super().init_process()

    def load_wsgi(self):
        super().load_wsgi()
        self.wsgi = BodyDeadline(client_behind_proxy(self.wsgi), self.deadlines)

    def handle(self, conn):
        sock, fd = conn.sock, conn.sock.fileno()
        self.deadlines.arm(sock, HEADER_SECONDS)  # BodyDeadline disarms it once the headers are in
        try:
            keepalive = super().handle(conn)
        finally:
            on_time = self.deadlines.disarm(fd)
        if on_time:
            return keepalive
        self.log.info("408: a request's headers did not arrive within %g s", HEADER_SECONDS)
        with contextlib.suppress(OSError):
            sock.sendall(TIMEOUT_RESPONSE)
        return False


class BodyDeadline:
    """WSGI middleware: reads the request's body within ``BODY_SECONDS`` before the app sees it."""

    def __init__(self, app, deadlines: Deadlines):
        self.app, self.deadlines = app, deadlines

    def __call__(self, environ, start_response):
        sock = environ.get("gunicorn.socket")
        if sock is None:
            return self.app(environ, start_response)
        fd = sock.fileno()
        if not self.deadlines.disarm(fd):  # the headers came in just as their time ran out
            return _timed_out(start_response)
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        length = environ.get("CONTENT_LENGTH") or "0"
        if not chunked and (not length.isdigit() or not 0 < int(length) <= MAX_BODY_BYTES):
            return self.app(environ, start_response)  # no body, or one Flask refuses (413) unread
        self.deadlines.arm(sock, BODY_SECONDS)
        try:
            body = environ["wsgi.input"].read(MAX_BODY_BYTES + 1)
        finally:
            on_time = self.deadlines.disarm(fd)
        if not on_time or (not chunked and len(body) < int(length)):
            return _timed_out(start_response)
        if len(body) > MAX_BODY_BYTES:  # a chunked body, whose length was not announced
            text = b"the request body is larger than %d bytes\n" % MAX_BODY_BYTES
            start_response(
                "413 Content Too Large", [("Content-Type", "text/plain"), ("Content-Length", str(len(text)))]
            )
            return [text]
        environ["wsgi.input"] = io.BytesIO(body)
        return self.app(environ, start_response)


def client_behind_proxy(app):
    """WSGI middleware: on a unix socket (no peer address), the client is nginx's X-Real-IP.

    In the container that socket sits in a private folder only nginx reaches (deploy/serve.py), and
    nginx sets the header itself, so per-client limits and the access log see the real client
    instead of one empty address for everyone. A TCP peer's address is never replaced.
    """

    def with_client(environ, start_response):
        if not environ.get("REMOTE_ADDR") and environ.get("HTTP_X_REAL_IP"):
            environ["REMOTE_ADDR"] = environ["HTTP_X_REAL_IP"]
        return app(environ, start_response)

    return with_client


def _timed_out(start_response):
    """408; the socket's read side is shut (or the client closed it), so gunicorn keeps it no longer."""
    start_response("408 Request Timeout", [("Content-Type", "text/plain"), ("Content-Length", str(len(TIMEOUT_TEXT)))])
    return [TIMEOUT_TEXT]
