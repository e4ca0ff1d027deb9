"""The model page's part of the URL: its state and its key (the page owns the whole hash of ``/model``).

The state itself (``ModelState``, its fields, bounds and link form) is ``common.cluster``'s, because
the search page opens its rows in this page and so writes the same keys.
"""

from __future__ import annotations

from ...common import cluster, url_hash
from ...common.cluster import ModelState


def read(hash_: object) -> cluster.Parsed:
    """The bounded state in the hash, with a note for everything not understood or clamped."""
    return cluster.parse(hash_)


def key_of(state: ModelState) -> str:
    """The state as hash text: the page's hash, what it drew last (the same state is not drawn twice)
    and a job's request."""
    return url_hash.write_hash(cluster.encode(state))
