"""The container's entrypoint: nginx on $PORT (7860) in front of gunicorn on a private unix socket.

nginx reads each request whole before gunicorn sees it (deploy/nginx.conf.template), so slow
clients cost nginx a connection each instead of holding gunicorn's threads. This renders the
template into a fresh private folder, starts gunicorn (gunicorn.conf.py), then nginx once gunicorn
listens (so the port opens when the page can be served), passes SIGTERM and SIGINT on to both,
and exits when either exits: with 0 after a SIGTERM or SIGINT, else with the status of the one
that stopped (1 if that was 0), so that the container ends and is restarted. As the container's
PID 1 it also reaps any orphaned process.

    python deploy/serve.py        # listens on $HOST:$PORT, 0.0.0.0:7860 unless set
"""

from __future__ import annotations

import os
import shutil
import signal
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from ppviz.web.protocol import MAX_BODY_BYTES  # noqa: E402

STOP_SECONDS = 25  # gunicorn's graceful_timeout (20 s) and a margin; then both are killed


def render(run_dir: Path, listen: str) -> Path:
    """deploy/nginx.conf.template with the run folder, the address and the body limit filled in."""
    template = string.Template((ROOT / "deploy" / "nginx.conf.template").read_text())
    conf = run_dir / "nginx.conf"
    conf.write_text(template.safe_substitute(RUN_DIR=run_dir, LISTEN=listen, MAX_BODY_BYTES=MAX_BODY_BYTES))
    return conf


def commands(run_dir: Path, conf: Path) -> tuple[list[str], list[str]]:
    """gunicorn's and nginx's command lines."""
    gunicorn = Path(sys.executable).with_name("gunicorn")
    nginx = os.environ.get("NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
    nginx_cmd = [nginx, "-p", str(run_dir), "-c", str(conf), "-e", "stderr"]
    if os.geteuid() == 0:
        # nginx started by root hands its workers to "nobody", who cannot enter the private run
        # folder; the container runs as uid 1000, where nginx keeps its own user.
        nginx_cmd += ["-g", "user root;"]
    return [str(gunicorn) if gunicorn.exists() else "gunicorn", "app:server", "-c", "gunicorn.conf.py"], nginx_cmd


def start(cmd: list[str], cwd: Path, env: dict, stop_signal: int, ours: dict) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, cwd=cwd, env=env)
    ours[proc.pid] = (proc, stop_signal)
    return proc


def first_exit(ours: dict) -> int:
    """The exit status of the first of ``ours`` to end; any other child (an orphan) is reaped."""
    for proc, _ in ours.values():
        if proc.returncode is not None:
            return proc.returncode
    while True:
        pid, status = os.wait()
        if pid in ours:
            ours[pid][0].returncode = code = os.waitstatus_to_exitcode(status)
            return code


def main() -> int:
    listen = f"{os.environ.get('HOST', '0.0.0.0')}:{int(os.environ.get('PORT', '7860'))}"
    run_dir = Path(tempfile.mkdtemp(prefix="ppviz-serve-"))  # mode 0700, new on every start
    ours: dict[int, tuple[subprocess.Popen, int]] = {}  # pid -> (process, its graceful stop signal)
    asked = []

    def stop_both(signum=None, frame=None):
        if signum is not None:
            asked.append(signum)
        for proc, sig in ours.values():
            if proc.returncode is None:
                proc.send_signal(sig)

    signal.signal(signal.SIGTERM, stop_both)
    signal.signal(signal.SIGINT, stop_both)
    try:
        gunicorn_cmd, nginx_cmd = commands(run_dir, render(run_dir, listen))
        sock = run_dir / "gunicorn.sock"  # there once the app is imported (preload_app): then nginx
        env = {**os.environ, "GUNICORN_BIND": f"unix:{sock}"}
        gunicorn = start(gunicorn_cmd, ROOT, env, signal.SIGTERM, ours)
        while not sock.exists() and gunicorn.poll() is None and not asked:
            time.sleep(0.1)
        if gunicorn.returncode is None and not asked:
            start(nginx_cmd, run_dir, env, signal.SIGQUIT, ours)
        code = first_exit(ours)
        stop_both()
        for proc, _ in ours.values():
            try:
                proc.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if asked:
            return 0
        return 1 if code == 0 else code if code > 0 else 128 - code
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
