"""The URL hash as key/value pairs: each page keeps its whole state there (``validation.read_hash`` reads
it back, as every value entering the server).

Dash's pages router draws a page again on a change of path or query string, never of the hash, so
a page writes its state to the hash without being drawn again. Each page owns the whole hash of
its path (``/#…``, ``/model#…``, ``/search#…``); no page reads another's.
"""

from __future__ import annotations

from urllib.parse import urlencode

import dash

SAFE = ",:"  # left as they are in a hash's values ("compare=1f1b,zb-h1"); read back by ``validation.read_hash``


def write_hash(pairs: dict[str, str]) -> str:
    return "#" + urlencode(pairs, safe=SAFE) if pairs else ""


def elsewhere(pathname: object, path: str) -> bool:
    """Whether the browser is at another page than ``path`` (the app's path of a page, e.g. ``/model``).

    A link between pages changes the path and the hash at once, while the page left is still drawn:
    its callbacks then see the next page's hash, and must leave it alone. An unknown path is not elsewhere.
    """
    if not isinstance(pathname, str):
        return False
    return pathname.rstrip("/") != dash.get_relative_path(path).rstrip("/")
