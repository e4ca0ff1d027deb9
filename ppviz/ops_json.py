"""The ``ops[]`` array of the JSON contract, written from the result's columns.

A dict per op costs more than the simulation itself (0.45 s to build and 0.86 s for ``json.dumps``
at 524k ops). Here each row is four shared pieces of text: its place (device and stage), its
microbatch with its kind, its start and its end, each from a table of the values present, indexed
by a key per row. Rows are made a chunk at a time: a chunk's pieces and text stay in the CPU's
caches, and no whole-output text (50 MB at 524k ops) is built or page-faulted in. Where numba is
loaded already (the compiled event pass loads it) ``ops_json_kernel`` copies the tables' bytes
into each chunk; elsewhere CPython joins the pieces. Times are orjson's shortest round-trip
digits, so the parsed values are the simulator's exact float64.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO, NamedTuple

import numpy as np
import orjson

from . import ops_json_kernel
from .ir import KINDS
from .simulator import Result

CHUNK_ROWS = 4096  # rows joined at once: ~0.4 MB of text, with its pieces, stays in the caches
KERNEL_CHUNK_ROWS = 16384  # rows the kernel writes at once (~1.6 MB): fewer calls, as fast
_NUMPY = orjson.OPT_SERIALIZE_NUMPY
_END = b', "end": '


class Table(NamedTuple):
    """A column of text: row i's text is ``texts[j]`` where ``used[j] == keys[i]``. ``used`` is
    ascending, or None when the texts spell every key ``0 … len(texts) - 1``."""

    keys: np.ndarray
    used: np.ndarray | None
    texts: np.ndarray  # of bytes (numpy's S type), ASCII


Texts = Callable[[int, int], Sequence[bytes]]  # the text of rows lo … hi of a column
Present = Callable[[np.ndarray], np.ndarray]  # _present, or the kernel's
Whole = Callable[[np.ndarray, int, int], np.ndarray | None]  # _whole, or the kernel's


def ops_json(result: Result, head: str = "", tail: str = "") -> str:
    """``[{"device": …, "stage": …, "microbatch": …, "kind": …, "start": …, "end": …}, …]`` in device
    order, spaced as ``json.dumps`` spaces it, between ``head`` and ``tail``."""
    out = io.BytesIO()
    write_ops(out, result, head, tail)
    return out.getvalue().decode()


def write_ops(out: BinaryIO, result: Result, head: str = "", tail: str = "") -> None:
    """``ops_json``'s text written to a binary stream, a chunk at a time."""
    n = len(result)
    if n == 0:
        out.write((head + "[]" + tail).encode())
        return
    compiled = ops_json_kernel.usable(n)
    present, whole = (ops_json_kernel.present, ops_json_kernel.whole) if compiled else (_present, _whole)
    columns = [*_places(result, present), *_times(result.start, result.end, whole)]
    tables = [c for c in columns if isinstance(c, Table)]
    if compiled and len(tables) == len(columns):
        chunks = ops_json_kernel.chunks(tables, n, KERNEL_CHUNK_ROWS)
    else:
        chunks = _joined(columns, n)
    for i, chunk in enumerate(chunks):
        if i == 0:  # the first row opens the array, no "}, "
            out.write((head + "[").encode())
            chunk = chunk[3:]
        out.write(chunk)
    out.write(("}]" + tail).encode())


def _joined(columns: list[Table | Texts | bytes], n: int) -> Iterator[bytes]:
    """The rows' text, ``CHUNK_ROWS`` at a time, from CPython's join of each chunk's pieces."""
    columns = [_objects(c) if isinstance(c, Table) else c for c in columns]
    rows = np.empty((min(CHUNK_ROWS, n), len(columns)), dtype=object)
    for i, column in enumerate(columns):
        if isinstance(column, bytes):
            rows[:, i] = column
    for lo in range(0, n, CHUNK_ROWS):
        hi = min(lo + CHUNK_ROWS, n)
        chunk = rows[: hi - lo]
        for i, column in enumerate(columns):
            if not isinstance(column, bytes):
                chunk[:, i] = column(lo, hi)
        yield b"".join(chunk.ravel().tolist())


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


def _places(result: Result, present: Present) -> list[Table]:
    """Each row's ``}, {"device": d, "stage": s, "microbatch": `` and ``m, "kind": "K", "start": ``,
    from tables of the keys ``present`` finds in the rows."""
    stages, kinds, names = _top(result.stage), len(KINDS), [k.value for k in KINDS]
    return [
        _lookup(
            _keys(result.device, result.stage, stages),
            present,
            lambda keys: [f'}}, {{"device": {k // stages}, "stage": {k % stages}, "microbatch": ' for k in keys],
        ),
        _lookup(
            _keys(result.microbatch, result.kind, kinds),
            present,
            lambda keys: [f'{k // kinds}, "kind": "{names[k % kinds]}", "start": ' for k in keys],
        ),
    ]


def _lookup(keys: np.ndarray, present: Present, spell: Callable[[list[int]], list[str]]) -> Table:
    """A table of the keys present, ``spell`` writing their texts (in ascending order)."""
    used = np.flatnonzero(present(keys))
    return Table(keys, used, np.array(spell(used.tolist()), dtype="S"))


def _top(column: np.ndarray) -> int:
    return int(column.max()) + 1


def _keys(high: np.ndarray, low: np.ndarray, size: int) -> np.ndarray:
    """``high * size + low``, in int32 where it fits (half the memory traffic of int64), computed
    in place (one new array: fresh memory costs page faults)."""
    keys = high.astype(np.int32 if _top(high) * size < 2**31 else np.int64)
    keys *= size
    keys += low
    return keys


def _present(keys: np.ndarray) -> np.ndarray:
    """Whether each of ``0 … keys.max()`` is among ``keys`` (a count: no sort)."""
    return np.bincount(keys).astype(bool)


def _objects(table: Table) -> Texts:
    """The table as numpy's object array of ``bytes`` over its keys, for the rows of a chunk."""
    if table.used is None:
        objects = table.texts.astype(object)
    else:
        objects = np.empty(_top(table.keys), dtype=object)
        objects[table.used] = table.texts.astype(object)
    return lambda lo, hi: objects[table.keys[lo:hi]]


def _times(start: np.ndarray, end: np.ndarray, whole: Whole) -> list[Table | Texts | bytes]:
    """The row's ``start, "end": `` and ``end`` text, as columns (``bytes``: the same in every
    row), in orjson's shortest round-trip digits: the text of ``repr`` for every value below 1e15.

    Times that are all whole steps of one 1/2^k (abstract units with costs such as 1, 1.5 or a
    1/v chunk share), fewer steps than half the rows, come from one table of every step's text,
    spelt once. Others are orjson's formatting of each chunk.
    """
    last = _steps(end, whole)
    first = _steps(start, whole, last[0], int(last[1].max())) if last else None
    if first:
        (scale, first), last = first, last[1]
        numbers = np.array(_spell(np.arange(_top(last)) / scale), dtype="S")
        return [Table(first, None, np.strings.add(numbers, _END)), Table(last, None, numbers)]
    return [_numbers(start), _END, _numbers(end)]


def _spell(values: np.ndarray) -> list[bytes]:
    """Each value's JSON text, from one orjson call."""
    return orjson.dumps(values, option=_NUMPY)[1:-1].split(b",")


def _steps(
    column: np.ndarray, whole: Whole, scale: int | None = None, top: int | None = None
) -> tuple[int, np.ndarray] | None:
    """The least 2^k (k ≤ 6, or ``scale``) that makes every value of ``column`` a whole number of
    steps in 0 … ``top`` (by default: fewer than half the values, so that a table of them pays),
    with those steps; None if none does."""
    top = len(column) // 2 if top is None else top
    sample = column[:256]
    for s in [scale] if scale else [1 << k for k in range(7)]:
        if np.array_equal(np.floor(sample * s), sample * s):
            steps = whole(column, s, top)
            return None if steps is None else (s, steps)
    return None


def _whole(column: np.ndarray, scale: int, top: int) -> np.ndarray | None:
    """``column * scale`` as integers if each is a whole number in 0 … ``top``, else None."""
    steps = column * scale
    if not (steps.min() >= 0 and steps.max() <= top):  # NaN too
        return None
    whole = steps.astype(np.int32 if top < 2**31 else np.int64)
    return whole if np.array_equal(whole, steps) else None


def _numbers(column: np.ndarray) -> Texts:
    """Each float of ``column`` as JSON text, a chunk at a time."""
    return lambda lo, hi: _spell(np.ascontiguousarray(column[lo:hi]))
