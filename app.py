"""ppviz web page: `gunicorn app:server`, or `python app.py` to serve on $PORT (default 8050)."""

import os

from dash import Dash
from flask import request

from ppviz.web import protocol, shell
from ppviz.web.common import compiled, jobs  # noqa: F401  (compiled: the event pass, loaded before any request)
from ppviz.web.pages.abstract import callbacks as abstract_callbacks  # noqa: F401  (registers its callbacks)
from ppviz.web.pages.measured import callbacks as measured_callbacks  # noqa: F401
from ppviz.web.pages.model import callbacks as model_callbacks  # noqa: F401
from ppviz.web.pages.search import callbacks as search_callbacks  # noqa: F401

app = Dash(
    __name__,
    use_pages=True,
    pages_folder="",  # the pages are registered by ppviz.web.shell, not found in a folder
    compress=True,
    title="ppviz",
    update_title=None,
    background_callback_manager=jobs.manager(),
)
shell.register_pages()
app.layout = shell.layout
server = app.server
server.secret_key = jobs.secret_key()  # signs background-job handles alike in every worker
# gzip level 1: a redraw's 33 kB of JSON compresses in 0.2 ms instead of 0.9 ms (7.8 kB instead of
# 6.5 kB), and plotly.js (4.6 MB, compressed again on every fetch) in a quarter of the time.
server.config["COMPRESS_LEVEL"] = 1
celery_app = jobs.celery_app()  # `celery -A app:celery_app worker` when REDIS_URL is set

# Dash sets itself up on the first request, and under a threaded server a second request could
# arrive while that was half done ("dash is not a registered library", plotly/dash#3971). Doing it
# here, at import, finishes it before any request (and, with gunicorn's preload_app, once for all workers).
# The pages router registers its callback on the first request too: run it here for the same reason.
with server.test_request_context():
    app._setup_server()
    server.preprocess_request()
protocol.guard(app)


if os.environ.get("PPVIZ_PROXY_HOPS"):  # behind the shipped nginx: the client is the address it forwards
    from werkzeug.middleware.proxy_fix import ProxyFix

    server.wsgi_app = ProxyFix(server.wsgi_app, x_for=int(os.environ["PPVIZ_PROXY_HOPS"]))


@server.before_request
def _record_poll():
    """A page polling for a background job is still open (see ppviz.web.common.jobs)."""
    jobs.on_request(request.path, request.args)


if __name__ == "__main__":
    jobs.warm()
    app.run(host=os.environ.get("HOST", "127.0.0.1"), port=int(os.environ.get("PORT", "8050")), debug=False)
