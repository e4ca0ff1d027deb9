"""The rows of ``ops_json`` written by a numba kernel from its tables' bytes, 16 bytes at a time.

CPython spends ~14 ns on each piece of a row (indexing an object table, ``tolist``, ``join``): at
524k rows that is more than half the compiled simulation. The kernel copies each piece from a
table of fixed-width rows (its texts padded to whole 16-byte words) into the chunk as whole words,
a fixed number per column: no branch depends on a text's length, and the next piece overwrites
the padding that the last word wrote past the piece's end. A word is numpy's complex128, the one
16-byte scalar numba loads and stores whole (one SSE move, ~25% faster than two 8-byte ones);
it is only ever copied, never computed with, so its bits are the text's.

It runs only in a process that has numba already (``usable``): importing numba costs ~0.4 s of
CPU, more than the whole write it would speed up, so a one-off CLI run below the compiled event
pass's threshold (``eventpass.LOAD_AFTER_STEPS``) never pays it. Loading its machine code from
numba's cache on disk (as the event pass's is) takes ~5–15 ms, so a write loads it only from
``LOAD_AFTER_ROWS`` rows (or ``warm()`` does); once loaded it writes any size. If it cannot
compile, ``ops_json`` joins the pieces instead, after one warning.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import Protocol

import numpy as np


class Table(Protocol):
    """What the kernel reads of ``ops_json.Table`` (named here, not imported: no import circle)."""

    keys: np.ndarray
    used: np.ndarray | None
    texts: np.ndarray


_WORD = 16  # bytes in a word
_CARRIER = np.complex128  # a 16-byte scalar: copied, never computed with
COLUMNS = 4  # ops_json's tables per row: place, microbatch and kind, start, end
LOAD_AFTER_ROWS = 200_000  # CPython's join takes ~60 ns a row longer: past this, the load pays
_kernel = None  # the compiled copy once loaded; False if it cannot be
_mark = None  # the compiled marking of the keys present
_whole = None  # the compiled test of whole steps


def usable(rows: int) -> bool:
    """Whether the kernel writes ``rows`` rows: loaded already, or loaded now, as numba is in this
    process and the rows reach ``LOAD_AFTER_ROWS``."""
    return bool(_kernel) or (rows >= LOAD_AFTER_ROWS and warm())


def warm() -> bool:
    """Load the kernel now if numba is in this process (from its cache, or compiled there); whether
    it is loaded."""
    if _kernel is None and sys.modules.get("numba") is not None:
        _load()
    return bool(_kernel)


def chunks(tables: Sequence[Table], n: int, rows: int) -> Iterator[memoryview]:
    """The text of rows ``0 … n - 1``, ``rows`` at a time: each chunk is valid until the next."""
    padded = [_padded(t) for t in tables]
    words = tuple(p[0] for p in padded)
    lengths = tuple(p[1] for p in padded)
    keys = _same_type([t.keys for t in tables])
    rows = min(rows, n)
    buffer = np.empty(rows * sum(w.shape[1] * _WORD for w in words) + _WORD, dtype=np.uint8)
    out = _unaligned_words(buffer)
    for lo in range(0, n, rows):
        size = _kernel(out, words, lengths, keys, lo, min(lo + rows, n))
        yield memoryview(buffer)[:size]


def present(keys: np.ndarray) -> np.ndarray:
    """Whether each of ``0 … keys.max()`` is among ``keys`` (numpy's count takes ~3× longer)."""
    return _mark(keys, np.zeros(int(keys.max()) + 1, dtype=np.bool_))


def whole(column: np.ndarray, scale: int, top: int) -> np.ndarray | None:
    """``ops_json._whole`` in one pass: ``column * scale`` as integers if each is a whole number
    in 0 … ``top``, else None."""
    steps = np.empty(len(column), dtype=np.int32 if top < 2**31 else np.int64)
    return steps if _whole(column, float(scale), float(top), steps) else None


def _padded(table: Table) -> tuple[np.ndarray, np.ndarray]:
    """The table's texts as rows of whole 16-byte words (NUL-padded) indexed by key, and their
    lengths in bytes."""
    width = -(-table.texts.itemsize // _WORD)
    text = table.texts.astype(f"S{width * _WORD}").view(_CARRIER).reshape(-1, width)
    length = np.strings.str_len(table.texts).astype(np.int64)
    if table.used is None:
        return text, length
    size = int(table.used[-1]) + 1
    words, lengths = np.zeros((size, width), dtype=_CARRIER), np.zeros(size, dtype=np.int64)
    words[table.used], lengths[table.used] = text, length
    return words, lengths


def _same_type(keys: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """The key columns in one integer type (the kernel takes a tuple of like arrays)."""
    wide = np.result_type(np.int32, *keys)
    return tuple(k.astype(wide, copy=False) for k in keys)


def _unaligned_words(buffer: np.ndarray) -> np.ndarray:
    """A view of ``buffer`` in words whose element i is the word starting at byte i."""
    return np.ndarray((len(buffer) - _WORD + 1,), dtype=_CARRIER, buffer=buffer, strides=(1,))


def _load() -> None:
    global _kernel, _mark, _whole
    try:
        import numba

        _mark = numba.njit(cache=True, nogil=True)(_mark_keys)
        _whole = numba.njit(cache=True, nogil=True)(_whole_steps)
        for index in (np.int32, np.int64):
            _mark(np.zeros(1, dtype=index), np.zeros(1, dtype=np.bool_))
            _whole(np.zeros(1), 1.0, 1.0, np.zeros(1, dtype=index))
        kernel = numba.njit(cache=True, nogil=True)(_copy_rows)
        # loaded now for ops_json's columns, not on the first write
        words, lengths = (np.zeros((1, 1), dtype=_CARRIER),) * COLUMNS, (np.ones(1, dtype=np.int64),) * COLUMNS
        kernel(
            _unaligned_words(np.zeros(COLUMNS * _WORD + _WORD, dtype=np.uint8)),
            words,
            lengths,
            (np.zeros(1, dtype=np.int32),) * COLUMNS,
            0,
            1,
        )
        _kernel = kernel
    except Exception as e:  # unable to compile on this machine
        warnings.warn(
            f"ppviz: the compiled --json writer is unavailable ({type(e).__name__}: {e}); joining in Python",
            RuntimeWarning,
            stacklevel=3,
        )
        _kernel = False


def _copy_rows(out, words, lengths, keys, lo, hi):
    """Rows ``lo … hi - 1`` into ``out`` (see ``_unaligned_words``) from byte 0: row i is, for each
    column c, the text of key ``keys[c][i]``. Returns the bytes written."""
    at = 0
    for i in range(lo, hi):
        for c in range(len(keys)):
            key = keys[c][i]
            table = words[c]
            for j in range(table.shape[1]):
                out[at + 16 * j] = table[key, j]
            at += lengths[c][key]
    return at


def _mark_keys(keys, present):
    """``present[k] = True`` for every k of ``keys``; returns ``present``."""
    for k in keys:
        present[k] = True
    return present


def _whole_steps(column, scale, top, steps):
    """``steps[i] = column[i] * scale`` while each is a whole number in 0 … ``top``; whether all were."""
    for i in range(len(column)):
        value = column[i] * scale
        if not 0 <= value <= top:  # NaN too
            return False
        step = int(value)
        if step != value:
            return False
        steps[i] = step
    return True
