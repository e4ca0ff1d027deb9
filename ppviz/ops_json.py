"""The ``ops[]`` array of the JSON contract, written from the result's columns.

A dict per op costs more than the simulation itself (0.45 s to build and 0.86 s for ``json.dumps``
at 524k ops); here each row is a few shared strings and two numbers joined once: the integers come
from small tables indexed by numpy, the times from orjson's float formatting of whole columns
(shortest round-trip digits, as ``repr``), so the parsed values are the simulator's exact float64.
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import orjson

from .ir import KINDS
from .simulator import Result

_NUMPY = orjson.OPT_SERIALIZE_NUMPY


def ops_json(result: Result, head: str = "", tail: str = "") -> str:
    """``[{"device": …, "stage": …, "microbatch": …, "kind": …, "start": …, "end": …}, …]`` in device
    order, spaced as ``json.dumps`` spaces it, between ``head`` and ``tail`` (the text around it,
    joined in the same single copy)."""
    n = len(result)
    if n == 0:
        return head + "[]" + tail
    kinds = len(KINDS)
    micro = [
        f', "microbatch": {m}, "kind": "{k.value}", "start": ' for m in range(_top(result.microbatch)) for k in KINDS
    ]
    pieces = [', "end": '] * (6 * n)
    pieces[0::6] = _table('}, {"device": ', _top(result.device))[result.device].tolist()
    pieces[1::6] = _table(', "stage": ', _top(result.stage))[result.stage].tolist()
    pieces[2::6] = np.array(micro, dtype=object)[result.microbatch.astype(np.int64) * kinds + result.kind].tolist()
    pieces[3::6], pieces[5::6] = _times(result.start, result.end)
    pieces[0] = head + "[" + pieces[0][3:]  # the first row opens the array, no "}, "
    pieces.append("}]" + tail)
    return "".join(pieces)


def dumps_with_ops(obj: dict, result: Result, at: tuple[str, ...] = ()) -> str:
    """``json.dumps(obj)`` with ``result``'s ``ops[]`` added as the last field of the dict at path
    ``at`` in ``obj`` (``obj`` itself left as it was): the rest keeps ``json.dumps``'s own rules."""
    marker = json.dumps(f"ops-{uuid.uuid4().hex}")  # a placeholder no value of obj can spell
    head, found, tail = json.dumps(_with(obj, (*at, "ops"), json.loads(marker))).partition(marker)
    assert found
    return ops_json(result, head=head, tail=tail)


def _with(obj: dict, at: tuple[str, ...], value) -> dict:
    """A copy of ``obj`` along the path ``at`` with ``value`` set at its end."""
    return {**obj, at[0]: value if len(at) == 1 else _with(obj[at[0]], at[1:], value)}


def _top(column: np.ndarray) -> int:
    return int(column.max()) + 1


def _table(prefix: str, size: int) -> np.ndarray:
    """``prefix + str(i)`` for every i below ``size``, to index with a column."""
    return np.array([f"{prefix}{i}" for i in range(size)], dtype=object)


def _times(start: np.ndarray, end: np.ndarray) -> tuple[list[str], list[str]]:
    """Each time of the two columns as JSON text (as ``repr`` writes it).

    Times that are all multiples of one 1/2^k (abstract units with costs such as 1, 1.5 or a 1/v
    chunk share) come from one table of ``repr(i / 2^k)``, shared strings; others from orjson's
    formatting of each whole column.
    """
    scale = _binary_scale(end)
    if scale is not None and _binary_scale(start, scale, int(end.max() * scale)):
        steps = np.array([repr(i / scale) for i in range(int(end.max() * scale) + 1)], dtype=object)
        return steps[(start * scale).astype(np.int64)].tolist(), steps[(end * scale).astype(np.int64)].tolist()
    return _numbers(start), _numbers(end)


def _binary_scale(column: np.ndarray, scale: int | None = None, top: int | None = None) -> int | None:
    """The least 2^k (k ≤ 6, or ``scale``) that makes every value of ``column`` a whole number in
    0 … ``top`` (by default: fewer than half the values, so that the table pays), if one does."""
    top = len(column) // 2 if top is None else top
    sample = column[:256]
    for s in [scale] if scale else [1 << k for k in range(7)]:
        if np.array_equal(np.floor(sample * s), sample * s):
            steps = column * s
            whole = np.array_equal(np.floor(steps), steps) and steps.min() >= 0 and steps.max() <= top
            return s if whole else None
    return None


def _numbers(column: np.ndarray) -> list[str]:
    """Each float of ``column`` as JSON text: orjson's shortest round-trip digits."""
    text = orjson.dumps(np.ascontiguousarray(column), option=_NUMPY).decode()
    return text[1:-1].split(",")
