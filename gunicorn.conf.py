"""gunicorn settings for the page: `gunicorn app:server` (the Dockerfile adds `-b 0.0.0.0:7860`)."""

import os

bind = os.environ.get("GUNICORN_BIND", f"0.0.0.0:{os.environ.get('PORT', '7860')}")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))  # the page keeps no state in workers: any can answer
threads = 4
worker_class = "gthread"
# Import the app once in the master, set up before any worker serves (the cold-start race of
# plotly/dash#3971 needs app.py's eager setup; preloading also shares that work between workers).
preload_app = True
timeout = 60  # with gthread this only checks the worker is alive: requests are bounded by ppviz.web.limits
graceful_timeout = 20
keepalive = 5
limit_request_line = 8190  # a link carries an uploaded order (up to ~6,000 characters) in its query string
control_socket_disable = True  # gunicorn ≥ 25.1 would open a control socket under $HOME (--no-control-socket)
accesslog = "-"
errorlog = "-"
loglevel = "info"
