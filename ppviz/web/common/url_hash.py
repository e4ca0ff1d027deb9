"""The URL hash as key/value pairs: each page keeps its state there, under its own keys.

The pages router re-renders a page on a change of path or query string, never of the hash, so a
page writes its state to the hash without being drawn again.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from .limits import MAX_SEARCH_CHARS

VIEWS = ("abstract", "model", "search")


# --- the link --------------------------------------------------------------------------------


def read_hash(hash_: object) -> dict[str, str]:
    """The hash's key/value pairs (any input type; junk gives {})."""
    if not isinstance(hash_, str) or len(hash_) > MAX_SEARCH_CHARS:
        return {}
    return dict(parse_qsl(hash_.lstrip("#"), keep_blank_values=True))


def write_hash(pairs: dict[str, str]) -> str:
    return "#" + urlencode(pairs, safe=",:") if pairs else ""


def view_of(hash_: object) -> str:
    view = read_hash(hash_).get("view")
    return view if view in VIEWS else "abstract"


def merge(hash_: object, own: dict[str, str], mine: set[str] | None = None, prefix: str = "") -> str:
    """A hash with this view's keys replaced by ``own``, every other view's keys kept as they were."""
    others = {k: v for k, v in read_hash(hash_).items() if not _owned(k, mine, prefix)}
    return write_hash({**others, **own})


def _owned(key: str, mine: set[str] | None, prefix: str) -> bool:
    return key.startswith(prefix) if prefix else key in (mine or set())
