"""Earliest slots and exact times of V letter rows (``vfamily``'s letters F f B b W w), at numpy speed.

Building one of the authors' orders squeezes its rows three times (every op one slot, as early as
its row order and its input on the next device allow), and every candidate order is timed under
the real op times: one Python step per op made those most of a V search. The squeeze is solved a
device's whole row at a time: along one device, slot_j = j + max over l ≤ j of (ready_l − l), a
running maximum, so the devices are solved in turn, down then up (F and B come from the device
above, f and b from the one below), until a sweep changes nothing, which takes as many sweeps as
its critical path turns, a handful. Its slots then order the ops (an op's inputs sit in earlier
slots), so the real times are one step per slot, for all candidates and devices at once.
"""

from __future__ import annotations

import numpy as np

SIZE = 6
LETTERS = "FfBbWw"
LETTER_OF = np.full(256, -1, dtype=np.int64)  # ASCII code -> letter (0..5), -1 for any other
LETTER_OF[list(LETTERS.encode("ascii"))] = range(SIZE)
_SWEEPS = 64  # sweeps before the op-by-op pass takes over


class Ops:
    """The ops of p rows of letters (blanks skipped), device by device: letter (0..5), device,
    slot in its row, and the flat index of the op on a neighbouring device each waits for (−1:
    none); ``missing`` when one of those inputs does not exist (the rows cannot run)."""

    def __init__(self, grid: np.ndarray):
        """``grid``: ASCII codes, one row per device (blanks where no op sits)."""
        p = len(grid)
        self.p = p
        letters = LETTER_OF[grid]
        self.dev, self.slot = np.nonzero(letters >= 0)
        self.letter = letters[self.dev, self.slot]
        self.bounds = np.searchsorted(self.dev, np.arange(p + 1))
        rank = np.zeros(grid.shape, dtype=np.int64)  # microbatch: the letter's count so far on its device
        for c in range(SIZE):
            mine = letters == c
            rank += np.where(mine, np.cumsum(mine, axis=1), 0)
        mb = rank[self.dev, self.slot] - 1
        n = len(mb)
        n_mb = int(mb.max()) + 1 if n else 1
        where = np.full(p * SIZE * n_mb, -1, dtype=np.int64)
        where[(self.dev * SIZE + self.letter) * n_mb + mb] = np.arange(n)
        src = np.where(self.letter % 2 == 0, self.dev - 1, self.dev + 1)
        has = (self.letter < 4) & (src >= 0) & (src < p)
        self.dep = np.full(n, -1, dtype=np.int64)
        self.dep[has] = where[(src[has] * SIZE + self.letter[has]) * n_mb + mb[has]]
        self.missing = bool(np.any(has & (self.dep < 0)))

    @classmethod
    def of_rows(cls, rows: list[str]) -> Ops:
        """From letter strings, one per device (no blanks)."""
        width = max(map(len, rows), default=0)
        text = "".join(row.ljust(width) for row in rows).encode("ascii")
        return cls(np.frombuffer(text, dtype=np.uint8).reshape(len(rows), width))


def slots(ops: Ops) -> np.ndarray | None:
    """Each op's earliest slot at one slot per op (the authors' squeeze); None if the rows
    cannot run. Slots only grow from sweep to sweep, so one that leaves their sum unchanged
    changed nothing."""
    if ops.missing:
        return None
    n = len(ops.dep)
    dep = np.where(ops.dep >= 0, ops.dep, n)  # cell n stays 0: an op with no input is ready at 0
    index = np.arange(n) - ops.bounds[ops.dev]  # the op's place on its device
    parts = []
    for i in range(ops.p):
        s = slice(int(ops.bounds[i]), int(ops.bounds[i + 1]))
        if s.start < s.stop:
            parts.append((s, dep[s], index[s], index[s] + 1))
    end = np.zeros(n + 1, dtype=np.int64)  # slot + 1
    down, up = parts, parts[::-1]
    total = -1
    for sweep in range(_SWEEPS):
        for s, dep_s, index_s, after in down if sweep % 2 == 0 else up:
            new = np.maximum.accumulate(end[dep_s] - index_s)
            new += after
            end[s] = new
        now = int(end.sum())
        if now == total:
            return end[:n] - 1
        total = now
    got = _ends_one_by_one(ops, np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
    return None if got is None else got - 1


def _ends_one_by_one(ops: Ops, dur: np.ndarray, lag: np.ndarray) -> np.ndarray | None:
    """Each op's earliest end under ``dur`` and ``lag`` (per op), op by op: devices take turns,
    each running ahead until it waits for an input; None if none can move."""
    dep, dur_l, lag_l = ops.dep.tolist(), dur.tolist(), lag.tolist()
    bounds = ops.bounds.tolist()
    end = [None] * len(dep)
    pos = bounds[:-1]
    free = [0] * ops.p
    left = len(dep)
    while left:
        moved = False
        for i in range(ops.p):
            k, stop, t = pos[i], bounds[i + 1], free[i]
            while k < stop:
                d = dep[k]
                if d >= 0:
                    if end[d] is None:
                        break
                    if end[d] + lag_l[k] > t:
                        t = end[d] + lag_l[k]
                t += dur_l[k]
                end[k] = t
                k += 1
            if k != pos[i]:
                left -= k - pos[i]
                pos[i], free[i] = k, t
                moved = True
        if not moved:
            return None
    return np.asarray(end, dtype=np.result_type(dur, lag))


def spans(group: list[list[str]], times: np.ndarray, lag: np.ndarray) -> list[tuple[float, float] | None]:
    """(longest device span, makespan) of each candidate's letter rows under ``times[device,
    letter]`` and ``lag[device, letter]`` (as ``vfamily.repeated_spans`` takes them), as ppviz's
    simulator times them; None for rows that cannot run. Rows must keep each W after its B and
    the V's turns in order (``vfamily.runs_in_order``): those waits are on the device itself.

    Real op times make the critical path change direction about once a period, too often for
    the sweeps of ``slots``; but the unit-time slots (the squeeze) order the ops so that an op's
    inputs sit in earlier slots. So all candidates are timed together, slot by slot: one step
    per slot does every candidate's every device at once."""
    p = times.shape[0]
    parts, at, offset = [], [], 0
    for k, rows in enumerate(group):
        ops = Ops.of_rows(rows)
        n = len(ops.dep)
        slot = slots(ops)
        if slot is None or not n:
            at.append(None)
            continue
        at.append((offset, ops.bounds + offset))
        # kept narrow until every candidate is read: 11 bytes an op, not Ops' 40
        narrow = (ops.dev.astype(np.int32), ops.letter.astype(np.int8), ops.dep.astype(np.int32))
        parts.append((*narrow, slot.astype(np.int32), k, offset))
        offset += n
    if not parts:
        return [None] * len(group)
    zero, empty = offset, offset + 1  # end[zero] stays 0 (no input); empty cells write to end[empty]
    dep = np.full(offset + 2, zero, dtype=np.int64)
    dur = np.zeros(offset + 2)
    wait = np.zeros(offset + 2)
    depth = max(int(part[3].max()) for part in parts) + 1
    grid = np.full((depth, len(group) * p), empty, dtype=np.int64)
    for dev, letter, needs, slot, k, base in parts:
        cells = slice(base, base + len(needs))
        has = needs >= 0
        dep[cells] = np.where(has, needs.astype(np.int64) + base, zero)
        dur[cells] = times[dev, letter]
        wait[cells] = np.where(has, lag[dev, letter], 0.0)
        grid[slot, k * p + dev] = np.arange(base, base + len(needs))
    end = np.zeros(offset + 2)
    free = np.zeros(len(group) * p)
    for cells in grid:
        free = np.maximum(free, end[dep[cells]] + wait[cells]) + dur[cells]
        end[cells] = free
    out: list[tuple[float, float] | None] = []
    for place in at:
        if place is None:
            out.append(None)
            continue
        base, bounds = place
        first, last = bounds[:-1], bounds[1:] - 1
        busy = first <= last
        start = end[first[busy]] - dur[first[busy]]
        out.append((float(np.max(end[last[busy]] - start)), float(end[base : bounds[-1]].max())))
    return out
