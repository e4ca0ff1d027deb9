"""ppviz web page: `gunicorn app:server`, or `python app.py` to serve on $PORT (default 8050)."""

import os

from dash import Dash

from ppviz.web import callbacks  # noqa: F401  (registers the callbacks)
from ppviz.web.layout import layout

app = Dash(__name__, compress=True, title="ppviz", update_title=None)
app.layout = layout
server = app.server

if __name__ == "__main__":
    app.run(host=os.environ.get("HOST", "127.0.0.1"), port=int(os.environ.get("PORT", "8050")), debug=False)
