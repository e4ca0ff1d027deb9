"""The model page's part of the URL: its state and its key (the page owns the whole hash of ``/model``).

The state itself (``ModelState``, its fields, bounds and link form) is ``common.cluster``'s, because
the search page opens its rows in this page and so writes the same keys. A move asks this module
once (``opened`` or ``moved``) for everything it needs of the state.
"""

from __future__ import annotations

from typing import NamedTuple

from ...common import cluster, url_hash
from ...common.cluster import GPU_FIELDS, MODEL_FIELDS, ModelState
from .ids import cid

MODEL, GPU = cid("model"), cid("gpu")  # the preset pickers


class Read(NamedTuple):
    state: ModelState
    notes: list[str]  # what was not understood or was clamped
    key: str  # the state as hash text (``key_of``)
    reference: str | None  # the compared schedule the deltas are against


def read(hash_: object) -> cluster.Parsed:
    """The bounded state in the hash, with a note for everything not understood or clamped."""
    return cluster.parse(hash_)


def key_of(state: ModelState) -> str:
    """The state as hash text: the page's hash, what it drew last (the same state is not drawn twice)
    and a job's request."""
    return url_hash.write_hash(cluster.encode(state))


def opened(hash_: object) -> Read:
    """A link opened (or Back, Forward): the state in the hash."""
    state, notes = read(hash_)
    return Read(state, notes, key_of(state), state.reference)


def moved(hash_: object, values: dict, trigger) -> Read:
    """A control moved: the state the controls show, what the hash does not hold taken from it."""
    state, notes = _from_controls(values, read(hash_).state, trigger)
    return Read(state, notes, key_of(state), state.reference)


def _from_controls(values: dict, previous: ModelState, trigger) -> tuple[ModelState, list[str]]:
    """The state the controls show; a preset's change resets that preset's fields to its values."""
    raw = {k: values.get(k) for k in ("mode", "schedule", "model", "gpu", "recompute", "zero", "precision")}
    raw |= {k: values.get(k) for k in ("baseline", "compare_show", "sweep_axis")}
    compare = values.get("compare")
    raw["compare"] = compare if isinstance(compare, (list, tuple)) else ()
    for key in ("sp", "tpo"):
        raw[key] = values.get(key) if isinstance(values.get(key), list) else getattr(previous, key)
    raw["split"] = values.get("split") if values.get("split") is not None else ",".join(map(str, previous.split or ()))
    raw["lines"] = values.get("lines") or ()
    if previous.tp_mode == "2d":  # set by a search row (no control): kept while it still fits the layout
        raw |= {"tp_mode": "2d", "tp2d": previous.tp2d, "summa_blocks": previous.summa_blocks}
    if previous.nvlink_dp_pp:
        raw["nvlink"] = previous.nvlink_dp_pp
    skip = set(MODEL_FIELDS) if trigger == MODEL else set(GPU_FIELDS) if trigger == GPU else set()
    numbers = {}
    for name in cluster.NUMBER_FIELDS:
        if name in skip:
            continue
        value = values.get(name)
        numbers[name] = previous.field_value(name) if value is None else value
    if not isinstance(raw["model"], str) or not raw["model"]:
        raw["model"] = previous.model
    if not isinstance(raw["gpu"], str) or not raw["gpu"]:
        raw["gpu"] = previous.gpu
    return cluster.bounded({k: v for k, v in raw.items() if v is not None}, numbers)
