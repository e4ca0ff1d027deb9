"""The ``ops[]`` array of the JSON contract, written from the result's columns.

A dict per op costs more than the simulation itself (0.45 s to build and 0.86 s for ``json.dumps``
at 524k ops). Here each row is three shared strings: its place (device and stage), its microbatch
with its kind, and its two times, each from a table of the distinct values present, indexed by
numpy. Rows are joined a chunk at a time: a chunk's pieces and text stay in the CPU's caches, and
no whole-output string (50 MB at 524k ops) is built, encoded or page-faulted in. Times are
orjson's shortest round-trip digits, so the parsed values are the simulator's exact float64.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO

import numpy as np
import orjson

from .ir import KINDS
from .simulator import Result

CHUNK_ROWS = 4096  # rows joined at once: ~0.4 MB of text, with its pieces, stays in the caches
_NUMPY = orjson.OPT_SERIALIZE_NUMPY

Texts = Callable[[int, int], Sequence[str]]  # the text of rows lo … hi of a column


def ops_json(result: Result, head: str = "", tail: str = "") -> str:
    """``[{"device": …, "stage": …, "microbatch": …, "kind": …, "start": …, "end": …}, …]`` in device
    order, spaced as ``json.dumps`` spaces it, between ``head`` and ``tail``."""
    return "".join(ops_chunks(result, head, tail))


def write_ops(out: BinaryIO, result: Result, head: str = "", tail: str = "") -> None:
    """``ops_json``'s text written to a binary stream, a chunk at a time."""
    for text in ops_chunks(result, head, tail):
        out.write(text.encode())


def ops_chunks(result: Result, head: str = "", tail: str = "") -> Iterator[str]:
    """``ops_json``'s text in pieces of ``CHUNK_ROWS`` rows (the first opens with ``head``, the
    last closes with ``tail``)."""
    n = len(result)
    if n == 0:
        yield head + "[]" + tail
        return
    stages, kinds = _top(result.stage), len(KINDS)
    place = _lookup(
        _keys(result.device, result.stage, stages),
        lambda keys: [f'}}, {{"device": {k // stages}, "stage": {k % stages}, "microbatch": ' for k in keys.tolist()],
    )
    names = [k.value for k in KINDS]
    what = _lookup(
        _keys(result.microbatch, result.kind, kinds),
        lambda keys: [f'{k // kinds}, "kind": "{names[k % kinds]}", "start": ' for k in keys.tolist()],
    )
    columns = [place, what, *_times(result.start, result.end)]
    rows = np.empty((min(CHUNK_ROWS, n), len(columns)), dtype=object)
    for i, column in enumerate(columns):
        if isinstance(column, str):
            rows[:, i] = column
    for lo in range(0, n, CHUNK_ROWS):
        hi = min(lo + CHUNK_ROWS, n)
        chunk = rows[: hi - lo]
        for i, column in enumerate(columns):
            if not isinstance(column, str):
                chunk[:, i] = column(lo, hi)
        text = "".join(chunk.ravel().tolist())
        yield head + "[" + text[3:] if lo == 0 else text  # the first row opens the array, no "}, "
    yield "}]" + tail


def dumps_with_ops(obj: dict, result: Result, at: tuple[str, ...] = ()) -> str:
    """``json.dumps(obj)`` with ``result``'s ``ops[]`` added as the last field of the dict at path
    ``at`` in ``obj`` (``obj`` itself left as it was): the rest keeps ``json.dumps``'s own rules."""
    return ops_json(result, *_around_ops(obj, at))


def write_with_ops(out: BinaryIO, obj: dict, result: Result, at: tuple[str, ...] = ()) -> None:
    """``dumps_with_ops``'s text written to a binary stream, a chunk at a time."""
    write_ops(out, result, *_around_ops(obj, at))


def _around_ops(obj: dict, at: tuple[str, ...]) -> tuple[str, str]:
    """The text of ``obj`` before and after its ``ops[]``."""
    marker = json.dumps(f"ops-{uuid.uuid4().hex}")  # a placeholder no value of obj can spell
    head, found, tail = json.dumps(_with(obj, (*at, "ops"), json.loads(marker))).partition(marker)
    assert found
    return head, tail


def _with(obj: dict, at: tuple[str, ...], value) -> dict:
    """A copy of ``obj`` along the path ``at`` with ``value`` set at its end."""
    return {**obj, at[0]: value if len(at) == 1 else _with(obj[at[0]], at[1:], value)}


def _top(column: np.ndarray) -> int:
    return int(column.max()) + 1


def _keys(high: np.ndarray, low: np.ndarray, size: int) -> np.ndarray:
    """``high * size + low``, in int32 where it fits (half the memory traffic of int64)."""
    return high.astype(np.int32 if _top(high) * size < 2**31 else np.int64) * size + low


def _lookup(keys: np.ndarray, spell: Callable[[np.ndarray], list[str]]) -> Texts:
    """The text of each row from a table of the keys present (``spell`` writes them, in order)."""
    present = np.zeros(_top(keys), dtype=bool)
    present[keys] = True
    table = np.empty(len(present), dtype=object)
    used = np.flatnonzero(present)
    table[used] = spell(used)
    return lambda lo, hi: table[keys[lo:hi]]


def _times(start: np.ndarray, end: np.ndarray) -> list[Texts | str]:
    """The row's ``start, "end": end`` text, as columns (a string is the same in every row), in
    orjson's shortest round-trip digits: the text of ``repr`` for every value below 1e15.

    Times that are all multiples of one 1/2^k (abstract units with costs such as 1, 1.5 or a 1/v
    chunk share) come from one table of the (start, duration) pairs present: few, as durations
    are the few costs. Others are orjson's formatting of each chunk.
    """
    last = _steps(end)
    first = _steps(start, last[0], int(last[1].max())) if last else None
    if first:
        scale, first = first
        length = last[1] - first
        present = np.zeros(_top(length), dtype=bool)
        present[length] = True
        durations = np.flatnonzero(present)
        if _top(first) * len(durations) <= 2 * len(first):  # the table's keys stay few
            rank = present.cumsum(dtype=first.dtype) - 1  # of each duration present, among them

            def spell(keys: np.ndarray) -> list[str]:
                at, of = divmod(keys, len(durations))
                pairs = orjson.dumps(np.column_stack([at, at + durations[of]]) / scale, option=_NUMPY).decode()
                return pairs[2:-2].replace("],[", "\n").replace(",", ', "end": ').split("\n")  # [[s,e],…]

            return [_lookup(_keys(first, rank[length], len(durations)), spell)]
    return [_numbers(start), ', "end": ', _numbers(end)]


def _spell(values: np.ndarray) -> list[str]:
    """Each value's JSON text, from one orjson call."""
    return orjson.dumps(values, option=_NUMPY).decode()[1:-1].split(",")


def _steps(column: np.ndarray, scale: int | None = None, top: int | None = None) -> tuple[int, np.ndarray] | None:
    """The least 2^k (k ≤ 6, or ``scale``) that makes every value of ``column`` a whole number of
    steps in 0 … ``top`` (by default: fewer than half the values, so that a table of them pays),
    with those steps; None if none does."""
    top = len(column) // 2 if top is None else top
    sample = column[:256]
    for s in [scale] if scale else [1 << k for k in range(7)]:
        if np.array_equal(np.floor(sample * s), sample * s):
            steps = column * s
            if steps.min() < 0 or steps.max() > top:
                return None
            whole = steps.astype(np.int32 if top < 2**31 else np.int64)
            return (s, whole) if np.array_equal(whole, steps) else None
    return None


def _numbers(column: np.ndarray) -> Texts:
    """Each float of ``column`` as JSON text, a chunk at a time."""
    return lambda lo, hi: _spell(np.ascontiguousarray(column[lo:hi]))
