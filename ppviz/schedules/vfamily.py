"""The controllable-memory authors' family of V schedules (Qi et al., NeurIPS 2024), rebuilt for ppviz.

Device i of p holds stage i and stage 2p−1−i. One microbatch is six ops per device, written as
letters: ``F`` (first chunk's forward), ``f`` (second chunk's forward), ``B`` (second chunk's
backward, which runs first), ``b`` (first chunk's backward), ``W``/``w`` (their weight
gradients). A *block* gives each letter a slot in a 6-slot period per device; repeated every 6
slots, it is the steady state, and how far apart its ops sit sets the peak memory.

The family is the authors': device 0's block (F at 0, f, B, b anywhere in 1..5, each W in the
first free slot after its B), then per device hop F and B move ``o`` slots (o in 1..5) while f
and b move one, with one stretch ``o0`` for the first ``len0`` hops and a smaller ``o1`` after.
Each block is turned into a whole order by their rules, kept as they are:

- warm-up: device i runs forwards first, then holds min(i+1, peak//2) second-chunk forwards
  before its first B, then (B, W, forward) triples, moving the needed ops from after its first b;
- cool-down: after the last f, (peak+1)//2 second-chunk backwards and min(i+1, peak − that)
  first-chunk ones are packed tight, the tail W moved after them;
- squeezes in between: every op as early as its order and inputs allow, one slot each.

Building an order does not depend on op times, so each (p, m, block) is built once and cached;
the times choose among them (``vshape.py``) and, where the budget cannot build a whole level,
which blocks are built first (``likely_first``). Memory counts are in half device shares.
"""

from __future__ import annotations

import threading
from functools import cache, lru_cache
from itertools import chain

import numpy as np
from cachetools import LRUCache, cached

from ..ir import Columns, Row, stack_rows
from . import vtiming

SIZE = 6
LETTERS = "FfBbWw"
OFFSETS = tuple(range(1, 6))  # slots F and B move per device hop (f and b move one)
LEVELS = 1  # peak levels searched, from the highest under the limit down
AUTHORS_FIRST = 4  # blocks of a level built in the authors' order before the cost-aware guess joins in
Block = tuple[tuple[int, ...], ...]  # per device, the slot (0..5) of each letter of LETTERS
_STEP = np.zeros(256, dtype=np.int64)
_STEP[[ord("F"), ord("f")]] = 1
_STEP[[ord("W"), ord("w")]] = -1


def _fill_w(slots: list[int]) -> list[int]:
    taken = {s for s in slots[:4]}
    for back, weight in ((2, 4), (3, 5)):
        t = slots[back]
        while t % SIZE in taken:
            t += 1
        slots[weight] = t % SIZE
        taken.add(t % SIZE)
    return slots


def _first_blocks() -> list[list[int]]:
    slots = range(1, SIZE)
    return [_fill_w([0, f, bb, b, -1, -1]) for f in slots for bb in slots for b in slots if len({f, bb, b}) == 3]


@cache
def _hop(row: tuple[int, ...], o: int) -> tuple[int, ...] | None:
    """The next device's slots: F and B ``o`` on, f and b one back; None if two collide."""
    moved = [(row[0] + o) % SIZE, (row[1] - 1) % SIZE, (row[2] + o) % SIZE, (row[3] - 1) % SIZE]
    if len(set(moved)) < 4:
        return None
    return tuple(_fill_w(moved + [-1, -1]))


@cache
def _chain(row: tuple[int, ...], o: int, hops: int) -> tuple[tuple[int, ...], ...]:
    """``row`` and the rows of up to ``hops`` further devices at stretch ``o`` (fewer on a collision)."""
    out = [row]
    for _ in range(hops):
        nxt = _hop(out[-1], o)
        if nxt is None:
            break
        out.append(nxt)
    return tuple(out)


@lru_cache(maxsize=8)
def blocks(p: int) -> tuple[Block, ...]:
    """Every distinct whole block of the family for p devices, in the authors' search order:
    device 0's block, stretch o0 for the first len0 hops, then o1 ≤ o0."""
    out: dict[Block, None] = {}
    for first in map(tuple, _first_blocks()) if p > 1 else ():  # one device: no hop, no block
        for i0, o0 in enumerate(OFFSETS):
            head = _chain(first, o0, p - 1)
            for o1 in OFFSETS[: i0 + 1]:
                for len0 in range(1, p) if o1 != o0 else (p - 1,):
                    if len0 >= len(head):
                        break
                    tail = _chain(head[len0], o1, p - 1 - len0)
                    if len(tail) == p - len0:
                        out.setdefault(head[:len0] + tail)
    return tuple(out)


# --- from a block to an order ------------------------------------------------------------------


def _peaks(rows) -> list[int]:
    """Each row's highest activation (F, f add one; W, w free one), counted at C speed."""
    out = []
    for row in rows:
        codes = np.frombuffer("".join(row).encode("ascii"), dtype=np.uint8)
        levels = np.cumsum(_STEP[codes])
        out.append(max(0, int(levels.max())) if len(levels) else 0)
    return out


def peak(rows: list[str]) -> int:
    """The highest activation of letter rows, in half device shares."""
    return max(_peaks(rows), default=0)


def _first_slots(p: int, block: Block) -> list[dict[str, int]]:
    """Per device, the slot of each letter's microbatch 0: after the previous device's (F and B
    going down the devices, f and b going up), each W in the first of its slots after its B."""
    first: list[dict[str, int]] = [{} for _ in range(p)]
    index = SIZE
    for letter in "FfBb":
        li = LETTERS.index(letter)
        for i in range(p) if letter in "FB" else range(p - 1, -1, -1):
            at = index + (block[i][li] - index) % SIZE
            first[i][letter] = at
            index = at + 1
            if letter in "Bb":
                first[i][LETTERS[li + 2]] = index + (block[i][li + 2] - index) % SIZE
    return first


def _repeated(p: int, n: int, block: Block) -> list[list[str]]:
    """Microbatches 0..n−1 of every letter, each 6 slots after the one before."""
    width = SIZE * (4 * p + n + 1)
    rows = [[" "] * width for _ in range(p)]
    for row, first in zip(rows, _first_slots(p, block)):
        for letter, at in first.items():
            row[at : at + SIZE * n : SIZE] = [letter] * n
    return rows


def _warm_up(rows: list[list[str]], n: int) -> bool:
    """The authors' warm-up rule (see the module docstring), in place; False where their checks fail."""
    p = len(rows)
    peak = min(max(_peaks(rows)), 2 * p)
    n_ff = [min(i + 1, peak // 2, n) for i in range(p)]
    n_f = [min(peak - n_ff[i], n) for i in range(p)]
    last = rows[p - 1]
    gap = 0
    if "B" in last:
        j = last.index("B")
        if "b" in last[j:]:
            gap = last.index("b", j) - j
    for i, row in enumerate(rows):
        start = row.index("b")
        head = row[:start]
        if "w" in head:
            return False
        c_f, c_ff, c_b, c_w = (head.count(x) for x in "FfBW")
        extra = n_ff[p - 1] - n_ff[i]
        cap_b = max((2 * (p - i) + gap) // 3, extra)
        cap_w = max((2 * (p - i) + gap - 1) // 3, extra)
        for j in range(start, len(row)):
            c = row[j]
            if c == "f" and c_ff < n_ff[p - 1]:
                row[j] = " "
                c_ff += 1
            elif c == "B" and c_b < c_ff and c_b < cap_b:
                row[j] = " "
                c_b += 1
            elif c == "W" and c_w < c_b and c_w < cap_w:
                row[j] = " "
                c_w += 1
            elif c_ff >= n_ff[p - 1] and c_b >= min(c_ff, cap_b) and c_w >= min(c_b, cap_w):
                break
        for j in range(start, len(row)):
            if row[j] == "F":
                if c_f < c_ff or c_f < n_f[i] or c_f - n_f[i] + c_ff - n_ff[i] < c_w - 1:
                    row[j] = " "
                    c_f += 1
                else:
                    break
        if c_f < n_f[i] or c_ff < n_ff[i] or c_w < extra or c_b < extra:
            return False
        row[:start] = [" "] * start
        if not _rewrite_head(row, i, p, n_f[i], n_ff[i], c_f, c_ff, c_b, c_w):
            return False
    return True


def _rewrite_head(row: list[str], i: int, p: int, n_f: int, n_ff: int, c_f: int, c_ff: int, c_b: int, c_w: int):
    """Forwards first, then (F, f) pairs, then (B, W, f-or-F) triples, from slot i."""
    j = i
    u_f = u_ff = u_b = u_w = 0
    for _ in range(2 * (p - 1 - i)):
        if u_f < n_f and u_f < c_f:
            row[j] = "F"
            u_f += 1
        j += 1
    for _ in range(i + 1):
        if u_f < n_f and u_f < c_f:
            row[j] = "F"
            u_f += 1
        j += 1
        if u_ff < n_ff and u_ff < c_ff:
            row[j] = "f"
            u_ff += 1
        j += 1
    while u_f < c_f or u_ff < c_ff or u_b < c_b or u_w < c_w:
        if u_b < c_b:
            row[j] = "B"
            u_b += 1
        j += 1
        if u_w < c_w:
            row[j] = "W"
            u_w += 1
        j += 1
        if u_ff < c_ff:
            if u_ff >= u_f:
                return False
            row[j] = "f"
            u_ff += 1
        elif u_f < c_f:
            row[j] = "F"
            u_f += 1
        j += 1
    return True


def _squeeze(rows: list[list[str]]) -> list[list[str]] | None:
    """Every op one slot, as early as its row order and its input on the next device allow
    (F, B from the device above, f, b from the one below); None if the rows cannot run.

    ``vtiming.slots`` finds them, all devices at once."""
    p = len(rows)
    width = len(rows[0])
    codes = np.frombuffer("".join("".join(row) for row in rows).encode("ascii"), dtype=np.uint8).reshape(p, width)
    ops = vtiming.Ops(codes)
    at = vtiming.slots(ops)
    if at is None or (len(at) and int(at.max()) >= width):
        return None
    out = np.full((p, width), ord(" "), dtype=np.uint8)
    out[ops.dev, at] = codes[ops.dev, ops.slot]
    return [list(row.tobytes().decode("ascii")) for row in out]


def _cool_down(rows: list[list[str]], m: int) -> list[list[str]] | None:
    """The authors' cool-down rule (see the module docstring); None if it does not fit."""
    p = len(rows)
    peak = max(_peaks(rows))
    n_bb = min((peak + 1) // 2, m)
    n_b = min(peak - n_bb, m)
    start = -1
    for i, row in enumerate(rows):
        c_b = c_bb = c_w = c_ww = 0
        last_ff = -1
        end = len("".join(row).rstrip())  # past the last op: only blanks after it
        for j in range(end - 1, -1, -1):
            c = row[j]
            if c == "f" and last_ff == -1:
                last_ff = j
            elif c == "B" and c_b < i + 1 and c_b < n_b:
                row[j] = " "
                c_b += 1
            elif c == "b" and c_bb < n_bb:
                row[j] = " "
                c_bb += 1
            if last_ff >= 0 and c_bb >= n_bb and c_b >= min(i + 1, n_b):
                break
        for j in range(end - 1, -1, -1):
            if c_w + c_ww >= peak:
                break
            c = row[j]
            if c == "W":
                row[j] = " "
                c_w += 1
            elif c == "w":
                row[j] = " "
                c_ww += 1
        if i == 0:
            start = last_ff
        for k in range(c_bb):
            at = start - i + 2 * p - 2 * k
            if not 0 <= at < len(row) or row[at] != " ":
                return None
            row[at] = "b"
        for k in range(c_b):
            at = start + 1 + i - 2 * k
            if not 0 <= at < len(row) or row[at] != " ":
                return None
            row[at] = "B"
    rows = _squeeze(rows)
    if rows is None:
        return None
    for row in rows:
        last_w = -2  # the two last W/w go; the third from the end marks where refilling starts
        end = len("".join(row).rstrip())
        for j in range(end - 1, -1, -1):
            if row[j] in "Ww":
                if last_w < 0:
                    row[j] = " "
                    last_w += 1
                else:
                    last_w = j
                    break
        head = row[: max(0, last_w + 1)]
        c_w = head.count("B") - head.count("W")
        c_ww = head.count("b") - head.count("w")
        for j in range(last_w + 1, len(row)):
            if j >= end and c_w <= 0 and c_ww <= 0:
                break  # only blanks left, and nothing to put back
            c = row[j]
            if c == "B":
                c_w += 1
            elif c == "b":
                c_ww += 1
            elif c == "W":
                c_w -= 1
            elif c == "w":
                c_ww -= 1
            elif c == " ":
                if c_w > 0:
                    row[j] = "W"
                    c_w -= 1
                elif c_ww > 0:
                    row[j] = "w"
                    c_ww -= 1
    return _squeeze(rows)


def _cut(rows: list[list[str]], m: int) -> None:
    for row in rows:
        seen = dict.fromkeys(LETTERS, 0)
        for j, c in enumerate(row):
            if c != " ":
                if seen[c] >= m:
                    row[j] = " "
                else:
                    seen[c] += 1


def _letters(built: tuple[list[str], int] | None) -> int:
    """What a built block holds: its ops (one letter each)."""
    return 1 if built is None else max(1, sum(map(len, built[0])))


@cached(LRUCache(maxsize=4_000_000, getsizeof=_letters), lock=threading.Lock())  # about 10 MB of ops
def build_rows(p: int, m: int, block: Block) -> tuple[list[str], int] | None:
    """(per-device letter strings, peak in half shares) of one block, or None where the
    authors' rules reject it (peak above 2p, or raised by the warm-up or cool-down).

    Orders do not depend on op times, so the recent ones are kept (least recently used dropped
    first, locked for the server's threads): a search at another limit or under other times, or
    another V schedule at the same size, builds nothing twice."""
    n = max(m, 2 * p)
    rows = _repeated(p, n, block)
    first_peak = max(_peaks(rows))
    if first_peak > 2 * p:
        return None
    if not _warm_up(rows, n):
        return None
    if n > m:
        _cut(rows, m)
    if max(_peaks(rows)) > first_peak:
        return None
    rows = _squeeze(rows)
    if rows is None:
        return None
    rows = _cool_down(rows, m)
    if rows is None:
        return None
    peak = max(_peaks(rows))
    if peak > first_peak:
        return None
    out = ["".join(r).replace(" ", "") for r in rows]
    if any(row.count(x) != m for row in out for x in LETTERS):
        return None  # an op fell off the end of its row
    return out, peak


def _first_all(p: int, family) -> np.ndarray:
    """``_first_slots`` for many blocks at once: array [block, device, letter] of microbatch 0's slot."""
    flat = chain.from_iterable(chain.from_iterable(family))
    slots = np.fromiter(flat, dtype=np.int64, count=len(family) * p * SIZE).reshape(len(family), p, SIZE)
    first = np.zeros_like(slots)
    index = np.full(len(family), SIZE, dtype=np.int64)
    for letter in range(4):  # F, f, B, b
        for i in range(p) if letter in (0, 2) else range(p - 1, -1, -1):
            at = index + (slots[:, i, letter] - index) % SIZE
            first[:, i, letter] = at
            index = at + 1
            if letter >= 2:
                first[:, i, letter + 2] = index + (slots[:, i, letter + 2] - index) % SIZE
    return first


def block_peaks(p: int, family: tuple[Block, ...]) -> np.ndarray:
    """Each repeated block's peak (before the warm-up and cool-down rules, which never raise it),
    for all blocks at once: every letter's microbatch-0 slot as in ``_first_slots``, then the
    highest level over one period once every letter has started. In batches of blocks, so the
    [block, device, phase, letter] counts stay a few MB (42 MB at once for p = 32's 1,824 blocks)."""
    first_all = _first_all(p, family)
    sign = np.array([1, 1, 0, 0, -1, -1])
    out = np.empty(len(family), dtype=np.int64)
    for lo in range(0, len(family), _BATCH):
        first = first_all[lo : lo + _BATCH]
        t = first.max(axis=2, keepdims=True) + np.arange(SIZE)  # [block, device, phase]
        level = ((t[..., None] - first[:, :, None, :]) // SIZE * sign).sum(axis=3)
        out[lo : lo + _BATCH] = level.max(axis=(1, 2))
    return out


_BATCH = 128


def _inputs(p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (device, letter): the device and letter of the op it waits for, and whether there is one
    (F and B come from the device above, f and b from the one below, W and w follow their B and b;
    at the V's turns f follows F and b follows B on device p−1, and B follows f on device 0)."""
    dev = np.arange(p)
    src = np.stack([dev - 1, dev + 1, dev - 1, dev + 1, dev, dev], axis=1)
    letter = np.tile(np.array([0, 1, 2, 3, 2, 3]), (p, 1))
    src[p - 1, 1], letter[p - 1, 1] = p - 1, 0
    src[0, 2], letter[0, 2] = 0, 1
    src[p - 1, 3], letter[p - 1, 3] = p - 1, 2
    has = np.ones((p, SIZE), dtype=bool)
    has[0, 0] = False
    return np.clip(src, 0, p - 1), letter, has


def repeated_spans(p: int, family, times: np.ndarray, lag: np.ndarray, n: int = 6) -> np.ndarray:
    """Each block's longest device span when its repeated rows (``_repeated``: n microbatches, no
    warm-up or cool-down rule) run under real op times: ``times[device, letter]``, plus
    ``lag[device, letter]`` on an op's input from another device. A cheap cost-aware guess at how
    the built order will fare, for all blocks at once: every op's input sits in an earlier slot,
    so one pass over the slots, all blocks and devices together, times them exactly."""
    k_all = len(family)
    first = _first_all(p, family)
    rows, devs = np.arange(k_all)[:, None], np.arange(p)[None, :]
    letter_at = np.empty_like(first)
    letter_at[rows[..., None], devs[..., None], first % SIZE] = np.arange(SIZE)
    src, src_letter, has = _inputs(p)
    lag = np.where(src != np.arange(p)[:, None], lag, 0.0)
    # end times, flat: cell 0 stays 0 (read by ops with no input), then [block, device, letter,
    # microbatch + 1], where microbatch −1 and n are spare cells for slots outside 0..n−1
    width = n + 2
    end = np.zeros(1 + k_all * p * SIZE * width)
    cell = lambda d, letter: ((rows * p + d) * SIZE + letter) * width + 2  # noqa: E731
    per_phase = []
    for phase in range(SIZE):
        letter = letter_at[:, :, phase]
        needs = has[devs, letter]
        from_cell = np.where(needs, cell(src[devs, letter], src_letter[devs, letter]), 0)
        per_phase.append((first[rows, devs, letter], cell(devs, letter), from_cell, needs.astype(np.int64),
                          np.where(needs, lag[devs, letter], 0.0), times[devs, letter]))  # fmt: skip
    free = np.zeros((k_all, p))
    for t in range(int(first.min()), int(first.max()) + SIZE * n):
        at, mine, theirs, needs, wait, take = per_phase[t % SIZE]
        k = (t - at) // SIZE
        ok = (k >= 0) & (k < n)
        k = np.minimum(np.maximum(k, -1), n)
        ready = end[theirs + needs * k] + wait
        done = np.maximum(free, ready) + take
        end[mine + k] = done
        free = np.where(ok, done, free)
    start = end[cell(devs, 0)] - times[devs, 0]  # each device starts with its microbatch-0 F
    return np.max(free - start, axis=1)


def likely_first(p: int, family: tuple[Block, ...], times: np.ndarray, lag: np.ndarray) -> list[Block]:
    """The blocks in the order to build them: the authors' first ``AUTHORS_FIRST``, then turns
    between the shortest repeated rows under the real times (``repeated_spans``) and the authors'
    order. Over every peak level at p = 16 and 32, the best order was among the first 15 so
    ranked in all but 3 of 186 level × cost cases (12 in the authors' order alone)."""
    guess = np.argsort(repeated_spans(p, family, times, lag), kind="stable").tolist()
    order = list(range(min(AUTHORS_FIRST, len(family))))
    seen = set(order)
    for pair in zip(guess, range(AUTHORS_FIRST, len(family) + AUTHORS_FIRST)):
        for i in pair:
            if i < len(family) and i not in seen:
                seen.add(i)
                order.append(i)
    return [family[i] for i in order]


@lru_cache(maxsize=8)
def levels(p: int) -> dict[int, tuple[Block, ...]]:
    """The family's blocks by peak (half device shares), each level in the authors' order;
    blocks above 2p, which the authors drop, are left out."""
    family = blocks(p)
    if p > 2:
        peaks = block_peaks(p, family).tolist()
    else:  # too short for a steady state: count the repeated rows
        peaks = [max(_peaks(_repeated(p, 2 * p, b))) for b in family]
    out: dict[int, list[Block]] = {}
    for block, peak in zip(family, peaks):
        if peak <= 2 * p:
            out.setdefault(peak, []).append(block)
    return {k: tuple(v) for k, v in sorted(out.items())}


def runs_in_order(rows: list[str]) -> bool:
    """True when every op follows, on its own device, the op it needs there: W after its B, w
    after its b, and at the V's turn and top the second op after the first."""
    p = len(rows)
    for i, row in enumerate(rows):
        codes = np.frombuffer(row.encode("ascii"), dtype=np.uint8)
        need = [("B", "W"), ("b", "w")] + ([("F", "f"), ("B", "b")] if i == p - 1 else [])
        for first, then in need + ([("f", "B")] if i == 0 else []):
            if not np.all(np.flatnonzero(codes == ord(then)) > np.flatnonzero(codes == ord(first))):
                return False
    return True


def defer_early_w(rows: list[str]) -> list[str] | None:
    """The rows with each W (w) that comes before its own B (b) moved to just after it; None if
    another op comes before the op it needs.

    The authors' timing does not check that a W follows its B, and their cool-down, which moves
    the last B later, leaves some W ahead of it in a few orders at larger p (all of them run as
    they are up to p = 8). Deferring such a W is the least change that makes the order run.
    """
    out = []
    for row in rows:
        j = _first_early_w(row)
        if j is None:
            out.append(row)
            continue
        count = {c: row.count(c, 0, j) for c in LETTERS}
        waiting = {"W": 0, "w": 0}
        fixed = [row[:j]]
        for c in row[j:]:
            if c in "Ww" and count["B" if c == "W" else "b"] <= count[c] + waiting[c]:
                waiting[c] += 1
                continue
            fixed.append(c)
            count[c] += 1
            if c in "Bb":
                wl = "W" if c == "B" else "w"
                while waiting[wl] and count[wl] < count[c]:
                    fixed.append(wl)
                    count[wl] += 1
                    waiting[wl] -= 1
        out.append("".join(fixed))
    return out if runs_in_order(out) else None


def _first_early_w(row: str) -> int | None:
    """Where the first W (w) ahead of its own B (b) sits in ``row``; None if there is none."""
    codes = np.frombuffer(row.encode("ascii"), dtype=np.uint8)
    early = []
    for back, weight in (("B", "W"), ("b", "w")):
        at_w = np.flatnonzero(codes == ord(weight))
        at_b = np.flatnonzero(codes == ord(back))
        k = min(len(at_w), len(at_b))
        bad = np.flatnonzero(at_w[:k] < at_b[:k])
        if len(bad):
            early.append(int(at_w[bad[0]]))
        elif len(at_w) > k:
            early.append(int(at_w[k]))
    return min(early, default=None)


def pull_late_b(rows: list[str]) -> list[str] | None:
    """The rows with each B (b) that comes after its own W (w) moved to just before it; None if
    another op still comes before the op it needs.

    The other least change: it keeps every F and W where the authors put them, so the peak stays
    theirs, where deferring the W can raise it by one chunk; the B may then wait longer."""
    out = []
    for row in rows:
        letters = list(row)
        count = dict.fromkeys(LETTERS, 0)
        j = 0
        while j < len(letters):
            c = letters[j]
            if c in "Ww":
                back = "B" if c == "W" else "b"
                need = count[c] + 1 - count[back]
                if need > 0:  # bring the next ``need`` backwards of this chunk to here
                    later = [k for k in range(j + 1, len(letters)) if letters[k] == back][:need]
                    if len(later) < need:
                        return None
                    for k in reversed(later):
                        del letters[k]
                    letters[j:j] = [back] * need
                    continue
            count[c] += 1
            j += 1
        out.append("".join(letters))
    return out if runs_in_order(out) else None


def search(p: int, m: int, limit: float, work: int, times: np.ndarray | None = None, lag: np.ndarray | None = None):
    """The family's orders within ``limit`` (device shares): the blocks of the ``LEVELS`` highest
    peaks under it, built until ``work`` (p × max(m, 2p) per block) is spent; where that leaves
    some of a level unbuilt and the op times are given (``times``, ``lag`` as in
    ``repeated_spans``), the likely best first (``likely_first``), else the authors' order.
    An order with a W ahead of its B comes back repaired: the W deferred (``defer_early_w``),
    or, where that passes the limit, the B pulled forward (``pull_late_b``, the authors' peak);
    the caller drops any that cannot run. One order per block is timed: where both fitted, in
    the best blocks at p = 32, m = 64, deferring the W was as short or shorter.

    Compared over the whole family at p = 4..32 (under equal, uneven and latency costs), the
    authors' choice at a limit always had the highest peak under it.
    """
    half = int(2 * limit + 1e-9)
    per = p * max(m, 2 * p)
    spent, out = 0, []
    for peak in sorted((k for k in levels(p) if k <= half), reverse=True)[:LEVELS]:
        level = levels(p)[peak]
        if times is not None and len(level) * per > work:
            level = likely_first(p, level, times, lag if lag is not None else np.zeros_like(times))
        for block in level:
            if spent + per > work and (out or spent + per > 2 * work):
                return out
            spent += per
            built = build_rows(p, m, block)
            if built is None:
                continue
            if runs_in_order(built[0]):
                out.append(built[0])
            else:
                fixed = defer_early_w(built[0])
                if fixed is None or max(_peaks(fixed)) > half:
                    fixed = pull_late_b(built[0])
                if fixed is not None:
                    out.append(fixed)
    return out


def lowest_peak(p: int) -> float:
    """The family's least peak, in device shares (V-Min's); infinite with no block (p = 1)."""
    return min(levels(p), default=float("inf")) / 2


def to_columns(rows: list[str]) -> Columns:
    """Letter strings as a V-placement order (microbatch = the letter's count so far in its row)."""
    p = len(rows)
    out, n = [], 1
    for i, row in enumerate(rows):
        letter = vtiming.LETTER_OF[np.frombuffer(row.encode("ascii"), dtype=np.uint8)]
        mb = np.empty(len(row), dtype=np.int64)
        for c in range(SIZE):
            at = letter == c
            mb[at] = np.arange(int(at.sum()))
        n = max(n, int(mb.max()) + 1 if len(mb) else 1)
        upper = np.isin(letter, _UPPER)  # f, B, W: the second chunk, stage 2p−1−i
        out.append(Row(letter // 2, np.where(upper, 2 * p - 1 - i, i), mb))
    return stack_rows(out, 2 * p, n)


_UPPER = [LETTERS.index(c) for c in "fBW"]  # letters // 2 is the kind: F f → F, B b → B, W w → W
_NAMES = np.frombuffer(b"FfbBwW", dtype=np.uint8)  # [2·kind + on the second chunk]


def to_letters(order: Columns) -> list[str]:
    """A V-placement order as letter strings (``to_columns``'s inverse for orders that run each
    letter's microbatches in turn, as ppviz's own V orders do)."""
    second = order.stage != order.device()
    codes = _NAMES[2 * order.kind.astype(np.int64) + second]
    bounds = order.bounds.tolist()
    return [codes[lo:hi].tobytes().decode("ascii") for lo, hi in zip(bounds, bounds[1:])]
