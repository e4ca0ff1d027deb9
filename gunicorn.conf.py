"""gunicorn settings for the page: `gunicorn app:server -c gunicorn.conf.py`.

Alone it serves on $PORT (7860); in the container (deploy/serve.py) it listens on a private unix
socket ($GUNICORN_BIND) behind nginx, which reads each request whole before passing it on.
"""

import os

from ppviz.web.common import job_table, jobs

# One private jobs folder for this server (mode 0700, removed at exit), shared by the workers
# through the environment; $PPVIZ_JOBS_DIR, when set, is checked to be this user's alone.
job_table.private_dir()

bind = os.environ.get("GUNICORN_BIND", f"0.0.0.0:{os.environ.get('PORT', '7860')}")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))  # the page keeps no state in workers: any can answer
threads = 4
# gunicorn's gthread worker, plus a deadline on reading each request: headers within 10 s, the body
# within 15 s more, else 408 (ppviz.web.serving; gunicorn 27 has no read timeout of its own); on the
# container's unix socket the client's address is the one nginx passes in X-Real-IP.
worker_class = "ppviz.web.serving.Worker"
# Import the app once in the master, set up before any worker serves (the cold-start race of
# plotly/dash#3971 needs app.py's eager setup; preloading also shares that work between workers).
preload_app = True
timeout = 60  # with gthread this only checks the worker is alive: requests are bounded by ppviz.web.common.limits
graceful_timeout = 20
# A worker is replaced after about this many requests (the jitter staggers the workers' restarts),
# so whatever a long-lived process accumulates (caches, fragmentation) is handed back.
max_requests = 2000
max_requests_jitter = 200
keepalive = 5
limit_request_line = 8190  # a link carries an uploaded order (up to ~6,000 characters) in its query string
control_socket_disable = True  # gunicorn ≥ 25.1 would open a control socket under $HOME (--no-control-socket)
accesslog = "-"
errorlog = "-"
loglevel = "info"


def post_worker_init(worker):
    """Start the worker's job server now: the first background job then starts in milliseconds."""
    jobs.warm()


def worker_exit(server, worker):
    """Stop the worker's job server with it (its jobs live on, known to the table)."""
    jobs.stop_server()


def on_exit(server):
    """End every background job of this server, and remove its jobs folder if it made one."""
    job_table.stop_all()
    job_table.remove_private_dir()
