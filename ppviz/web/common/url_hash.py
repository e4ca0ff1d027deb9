"""The URL hash as key/value pairs: each page keeps its whole state there (``validation.read_hash`` reads
it back, as every value entering the server).

Dash's pages router draws a page again on a change of path or query string, never of the hash, so
a page writes its state to the hash without being drawn again. Each page owns the whole hash of
its path (``/#…``, ``/model#…``, ``/search#…``); no page reads another's.
"""

from __future__ import annotations

from urllib.parse import urlencode

SAFE = ",:"  # left as they are in a hash's values ("compare=1f1b,zb-h1"); read back by ``validation.read_hash``


def write_hash(pairs: dict[str, str]) -> str:
    return "#" + urlencode(pairs, safe=SAFE) if pairs else ""
