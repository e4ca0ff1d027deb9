"""The model page's part of the URL hash: whether the hash is this page's, its state, and its key.

The state itself (``ModelState``, its fields, bounds and link form) is ``common.cluster``'s, because
the search page opens its rows in this page and so writes the same keys.
"""

from __future__ import annotations

from ...common import cluster, url_hash
from ...common.cluster import ModelState


def in_view(hash_: object) -> bool:
    """Whether the hash is the model view's (``view=model``)."""
    return url_hash.view_of(hash_) == "model"


def read(hash_: object) -> cluster.Parsed:
    """The bounded state in the hash, with a note for everything not understood or clamped."""
    return cluster.parse(hash_)


def key_of(state: ModelState) -> str:
    """The state as hash text: what the page drew last (the same state is not drawn twice) and a job's request."""
    return url_hash.write_hash(cluster.encode(state))
