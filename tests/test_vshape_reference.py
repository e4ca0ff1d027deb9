"""A faithful re-implementation of the controllable-memory authors' V-schedule search (seed 000).

Written from the seed's algorithm for the test suite, as the reference ppviz is measured against:
the same repeated 6-slot patterns, per-device offsets and split points, the same warm-up rule
(min(i+1, peak//2) second-chunk forwards reserved before the first B), the same cool-down rule
((peak+1)//2 second-chunk backwards kept after the last forward), the same squeezes and the same
exact timing and span measure. It is deliberately slow and literal: rows of characters.

Letters, per device i: ``F`` first-chunk forward (stage i), ``f`` second-chunk forward
(stage 2p−1−i), ``B`` second-chunk backward (it runs first, going down the devices), ``b``
first-chunk backward, ``W``/``w`` their weight gradients. Memory counts F/f as +1, W/w as −1,
in half device shares (ppviz's unit is twice as large). Op times are per chunk.
"""

from __future__ import annotations

from ppviz.ir import Action, B, F, W

SIZE = 6
LETTERS = "FfBbWw"


def pattern_row(pos: list[int]) -> str:
    row = [" "] * SIZE
    for letter, at in zip(LETTERS, pos):
        if at >= 0:
            row[at] = letter
    return "".join(row)


def peaks(rows) -> list[int]:
    out = []
    for row in rows:
        level = top = 0
        for c in row:
            if c in "Ff":
                level += 1
            elif c in "Ww":
                level -= 1
            top = max(top, level)
        out.append(top)
    return out


def repeated(p: int, m: int, patterns) -> list[list[str]]:
    return [list(pattern_row(patterns[i]) * (4 * p + m + 1)) for i in range(p)]


def _blank_every_period(row: list[str], pos: int, step: int) -> None:
    while 0 <= pos < len(row):
        row[pos] = " "
        pos += step * SIZE


def keep_m_microbatches(rows: list[list[str]], m: int) -> None:
    """Microbatch 0 of each letter sits after the previous device's (F, B going down, f, b up);
    every copy before it and from the m-th on is blanked."""
    p = len(rows)
    index = SIZE
    for letter in "FfBb":
        for i in range(p) if letter in "FB" else range(p - 1, -1, -1):
            row = rows[i]
            for _ in range(SIZE):
                if row[index] == letter:
                    _blank_every_period(row, index - SIZE, -1)
                    _blank_every_period(row, index + SIZE * m, 1)
                    index += 1
                    if letter in "Bb":
                        wl = "W" if letter == "B" else "w"
                        for k in range(SIZE):
                            if row[index + k] == wl:
                                _blank_every_period(row, index + k - SIZE, -1)
                                _blank_every_period(row, index + k + SIZE * m, 1)
                                break
                    break
                index += 1


def warm_up(rows: list[list[str]], m: int) -> None:
    """Rewrite every device's ops before its first b: F first, then (F, f) pairs with
    min(i+1, peak//2) f, then (B, W, f-or-F) triples; ops after the first b that this moves
    forward follow the seed's conditions."""
    p = len(rows)
    peak = min(max(peaks(rows)), 2 * p)
    n_ff = [min(i + 1, peak // 2, m) for i in range(p)]
    n_f = [min(peak - n_ff[i], m) for i in range(p)]
    gap = 0
    last = rows[p - 1]
    if "B" in last:
        j = last.index("B")
        if "b" in last[j:]:
            gap = last.index("b", j) - j
    for i in range(p):
        row = rows[i]
        c_f = c_ff = c_b = c_w = 0
        for j in range(len(row)):
            c = row[j]
            if c == "F":
                c_f += 1
            elif c == "f":
                c_ff += 1
            elif c == "B":
                c_b += 1
            elif c == "W":
                c_w += 1
            elif c == "b":
                start = j
                while j < len(row):
                    c = row[j]
                    if c == "f" and c_ff < n_ff[p - 1]:
                        row[j] = " "
                        c_ff += 1
                    if c == "B" and c_b < c_ff and (c_b < (2 * (p - i) + gap) // 3 or c_b < n_ff[p - 1] - n_ff[i]):
                        row[j] = " "
                        c_b += 1
                    if c == "W" and c_w < c_b and (c_w < (2 * (p - i) + gap - 1) // 3 or c_w < n_ff[p - 1] - n_ff[i]):
                        row[j] = " "
                        c_w += 1
                    j += 1
                j = start
                while j < len(row):
                    if row[j] == "F" and (c_f < c_ff or c_f < n_f[i] or c_f - n_f[i] + c_ff - n_ff[i] < c_w - 1):
                        row[j] = " "
                        c_f += 1
                    j += 1
                break
            else:
                assert c == " "
            row[j] = " "
        assert c_f >= n_f[i] and c_ff >= n_ff[i]
        assert c_w >= n_ff[p - 1] - n_ff[i] and c_b >= n_ff[p - 1] - n_ff[i]
        j = i
        u_f = u_ff = u_b = u_w = 0
        for _ in range(2 * (p - 1 - i)):
            if u_f < n_f[i] and u_f < c_f:
                row[j] = "F"
                u_f += 1
            j += 1
        for _ in range(i + 1):
            if u_f < n_f[i] and u_f < c_f:
                row[j] = "F"
                u_f += 1
            j += 1
            if u_ff < n_ff[i] and u_ff < c_ff:
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
                assert u_ff < u_f
                row[j] = "f"
                u_ff += 1
            elif u_f < c_f:
                row[j] = "F"
                u_f += 1
            j += 1


def squeeze(rows: list[list[str]], m: int) -> list[list[str]]:
    """Each op as early as its row order and its cross-device input allow, one slot per op."""
    p = len(rows)
    out = [[" "] * len(r) for r in rows]
    width = len(rows[0])
    assert all(len(r) == width for r in rows)
    count = [dict.fromkeys(LETTERS, 0) for _ in range(p)]
    placed = [dict.fromkeys(LETTERS, -1) for _ in range(p * m)]
    nxt = [0] * p
    for j in range(width):
        for down in (True, False):
            for i in range(p) if down else range(p - 1, -1, -1):
                c = rows[i][j]
                if c == " " or (down and c in "fbw") or (not down and c in "FBW"):
                    continue
                k = count[i][c]
                assert k < m, (i, c, k)
                if c in "Ww" or (i == 0 and c in "FB") or (i == p - 1 and c in "fb"):
                    if i == 0 and c == "B":
                        assert placed[k * p + i]["f"] >= 0
                    if i == p - 1 and c == "f":
                        assert placed[k * p + i]["F"] >= 0
                    if i == p - 1 and c == "b":
                        assert placed[k * p + i]["B"] >= 0
                    at = nxt[i]
                elif c in "FB":
                    assert placed[k * p + i - 1][c] >= 0, (i, c, k)
                    at = max(placed[k * p + i - 1][c] + 1, nxt[i])
                else:
                    assert placed[k * p + i + 1][c] >= 0, (i, c, k)
                    at = max(placed[k * p + i + 1][c] + 1, nxt[i])
                out[i][at] = c
                count[i][c] += 1
                placed[k * p + i][c] = at
                nxt[i] = at + 1
    return out


def cool_down(rows: list[list[str]], m: int) -> list[list[str]]:
    """After the last f: (peak+1)//2 b and min(i+1, peak − that) B placed tight, the tail W/w
    taken out, squeezed, and the W/w put back into the free slots after the remaining ones."""
    p = len(rows)
    peak = max(peaks(rows))
    assert peak <= 2 * p
    n_bb = min((peak + 1) // 2, m)
    n_b = min(peak - n_bb, m)
    start = -1
    for i in range(p):
        row = rows[i]
        c_b = c_bb = c_w = c_ww = 0
        last_ff = -1
        for j in range(len(row) - 1, -1, -1):
            c = row[j]
            if c == "f" and last_ff == -1:
                last_ff = j
            if c == "B" and c_b < i + 1 and c_b < n_b:
                row[j] = " "
                c_b += 1
            if c == "b" and c_bb < n_bb:
                row[j] = " "
                c_bb += 1
        for j in range(len(row) - 1, -1, -1):
            c = row[j]
            if c == "W" and c_w + c_ww < peak:
                row[j] = " "
                c_w += 1
            if c == "w" and c_w + c_ww < peak:
                row[j] = " "
                c_ww += 1
        if i == 0:
            start = last_ff
        for k in range(c_bb):
            at = start - i + 2 * p - 2 * k
            assert row[at] == " ", (row[at], k, i)
            row[at] = "b"
        for k in range(c_b):
            at = start + 1 + i - 2 * k
            assert row[at] == " ", row[at]
            row[at] = "B"
    rows = squeeze(rows, m)
    for i in range(p):
        row = rows[i]
        c_w = c_ww = 0
        last_w = -2
        for j in range(len(row) - 1, -1, -1):
            if row[j] in "Ww":
                if last_w < 0:
                    row[j] = " "
                    last_w += 1
                else:
                    last_w = j
                    break
        for j in range(len(row)):
            c = row[j]
            if c == "B":
                c_w += 1
            elif c == "b":
                c_ww += 1
            elif c == "W":
                c_w -= 1
            elif c == "w":
                c_ww -= 1
            if c == " " and j > last_w:
                if c_w > 0:
                    row[j] = "W"
                    c_w -= 1
                elif c_ww > 0:
                    row[j] = "w"
                    c_ww -= 1
    return squeeze(rows, m)


def by_pattern(p: int, m: int, patterns):
    """(rows, peak) of one whole pattern, or (None, peak) when the seed rejects it."""
    big = max(m, 2 * p)
    rows = repeated(p, big, patterns)
    keep_m_microbatches(rows, big)
    first_peak = max(peaks(rows))
    if first_peak > 2 * p:
        return None, first_peak
    warm_up(rows, big)
    for row in rows:
        seen = dict.fromkeys(LETTERS, 0)
        for j, c in enumerate(row):
            if c == " ":
                continue
            if seen[c] >= m:
                row[j] = " "
            else:
                seen[c] += 1
    if max(peaks(rows)) > first_peak:
        return None, first_peak
    rows = squeeze(rows, m)
    rows = cool_down(rows, m)
    peak = max(peaks(rows))
    if peak > first_peak:
        return None, first_peak
    return rows, peak


def span(rows, f: float, b: float, w: float, c: float) -> float:
    """The seed's measure: per device, its last W (or w) end minus its first F start; the largest.

    Op times are per chunk; ``c`` is added to every dependency between devices."""
    p = len(rows)
    cost = {"F": f, "f": f, "B": b, "b": b, "W": w, "w": w}
    orders = []
    for row in rows:
        seen: dict[str, int] = {}
        order = []
        for x in row:
            if x != " ":
                order.append((x, seen.get(x, 0)))
                seen[x] = seen.get(x, 0) + 1
        orders.append(order)
    end: dict[tuple[int, str, int], float] = {}
    pos = [0] * p
    free = [0.0] * p
    progress = True
    while progress:
        progress = False
        for i in range(p):
            while pos[i] < len(orders[i]):
                x, k = orders[i][pos[i]]
                t = free[i]
                src = i - 1 if x in "FB" else i + 1 if x in "fb" else None
                if src is not None and 0 <= src < p:
                    if (src, x, k) not in end:
                        break
                    t = max(t, end[src, x, k] + c)
                end[i, x, k] = free[i] = t + cost[x]
                pos[i] += 1
                progress = True
    assert all(pos[i] == len(orders[i]) for i in range(p)), "the order deadlocks"
    n = max(len([o for o in orders[i] if o[0] == "W"]) for i in range(p))
    first = [end[i, "F", 0] - f for i in range(p)]
    return max(max(end[i, "W", n - 1], end[i, "w", n - 1]) - first[i] for i in range(p))


def fill_w(pattern: list[int]) -> list[int]:
    taken = [False] * SIZE
    for v in pattern:
        if v >= 0:
            taken[v] = True
    for back, weight in ((2, 4), (3, 5)):
        for j in range(SIZE):
            at = (pattern[back] + j) % SIZE
            if not taken[at]:
                pattern[weight] = at
                taken[at] = True
                break
    return pattern


def whole_pattern(first: list[int], off0: list[int], off1: list[int], len0: int, p: int):
    out = [first]
    for i in range(p - 1):
        off = off0 if i < len0 else off1
        new = [-1] * SIZE
        taken = [False] * SIZE
        for v, o in enumerate(off):
            at = (out[i][v] + o + SIZE) % SIZE
            if taken[at]:
                return None
            taken[at] = True
            new[v] = at
        out.append(fill_w(new))
    return out


OFFSETS = [[o, -1, o, -1] for o in range(1, 6)]


def first_patterns() -> list[list[int]]:
    out = []
    for at_f in range(1, SIZE):
        for at_big_b in range(1, SIZE):
            for at_b in range(1, SIZE):
                if len({at_f, at_big_b, at_b}) == 3:
                    out.append(fill_w([0, at_f, at_big_b, at_b, -1, -1]))
    return out


def candidates(p: int):
    """Every whole pattern the seed tries, in its order (repeats included)."""
    for first in first_patterns():
        for i0 in range(len(OFFSETS)):
            for i1 in range(i0 + 1):
                for len0 in range(1, p):
                    whole = whole_pattern(list(first), OFFSETS[i0], OFFSETS[i1], len0, p)
                    if whole is not None:
                        yield whole


def search(p: int, m: int, cost: tuple[float, float, float, float], max_mem: int):
    """The seed's ``schedule``: the least span among the whole patterns whose peak fits ``max_mem``
    (half device shares). Returns (span, rows) or (None, None) when none fits."""
    best = None
    done: dict[tuple, tuple] = {}
    for whole in candidates(p):
        key = tuple(map(tuple, whole))
        if key not in done:
            done[key] = by_pattern(p, m, whole)
        rows, peak = done[key]
        if rows is None or peak > 2 * p or peak > max_mem:
            continue
        s = span(rows, *cost)
        if best is None or s < best[0]:
            best = (s, rows)
    return best if best is not None else (None, None)


def to_order(rows) -> list[list[Action]]:
    """The rows as ppviz per-device orders on the V placement (stage i and 2p−1−i on device i)."""
    p = len(rows)
    out = []
    for i, row in enumerate(rows):
        seen: dict[str, int] = {}
        order = []
        upper = 2 * p - 1 - i
        where = {"F": (i, F), "f": (upper, F), "B": (upper, B), "b": (i, B), "W": (upper, W), "w": (i, W)}
        for x in row:
            if x == " ":
                continue
            k = seen.get(x, 0)
            seen[x] = k + 1
            stage, kind = where[x]
            order.append(Action(stage, k, kind))
        out.append(order)
    return out


# --- the tests ----------------------------------------------------------------------------------
# ppviz's own build of the family (ppviz/schedules/vfamily.py) must equal this reference order
# for order, and its V schedules must never be longer than the reference search's choice.

import functools  # noqa: E402

import pytest  # noqa: E402
from checks import assert_valid  # noqa: E402

import ppviz  # noqa: E402
from ppviz.ir import Placement, Schedule, make_schedule  # noqa: E402
from ppviz.schedules import vfamily  # noqa: E402

COSTS = {  # per chunk, as the authors give them: (f, b, w, c)
    "equal": (1, 1, 1, 0),
    "latency": (1, 1, 1, 0.5),
    "b > w": (1, 2, 1, 0),
    "uneven": (1, 1.5, 0.5, 0),
    "f > b": (2, 1, 1, 0),
}


@functools.cache
def reference_family(p: int, m: int) -> tuple[tuple[list[list[str]], int], ...]:
    """(rows, peak) of every whole pattern the reference keeps, built once per size."""
    seen: dict[tuple, tuple] = {}
    for whole in candidates(p):
        key = tuple(map(tuple, whole))
        if key not in seen:
            seen[key] = by_pattern(p, m, whole)
    return tuple((rows, peak) for rows, peak in seen.values() if rows is not None and peak <= 2 * p)


@functools.cache
def reference_best(p: int, m: int, cost: tuple, max_mem: int) -> float | None:
    spans = [span(rows, *cost) for rows, peak in reference_family(p, m) if peak <= max_mem]
    return min(spans) if spans else None


def ppviz_span(name: str, p: int, m: int, cost: tuple, **params) -> tuple[float, float]:
    """(longest span, peak) of a ppviz V schedule under the authors' per-chunk cost: a V chunk
    is half a device share, so ppviz's f is twice the authors'."""
    f, b, w, c = cost
    run = ppviz.simulate(name, p, m, f=2 * f, b=2 * b, w=2 * w, p2p=c, **params)
    assert_valid(run)
    return max(run.metrics.span), max(run.metrics.peak_activation)


@pytest.mark.parametrize(("p", "m"), [(2, 4), (3, 5), (3, 6), (4, 4), (4, 9), (5, 10), (6, 12), (8, 16)])
def test_ppviz_builds_every_block_exactly_as_the_reference(p, m):
    """Same blocks, same rejections, same peaks, same orders, letter for letter."""
    ref = {}
    for whole in candidates(p):
        key = tuple(map(tuple, whole))
        if key not in ref:
            rows, peak = by_pattern(p, m, whole)
            ref[key] = None if rows is None else (["".join(c for c in r if c != " ") for r in rows], peak)
    assert set(vfamily.blocks(p)) == set(ref)
    for block, expected in ref.items():
        assert vfamily.build_rows(p, m, block) == expected


@pytest.mark.parametrize("p", [3, 4, 6, 8, 12])
def test_block_peaks_are_the_repeated_rows_peaks(p):
    """ppviz reads a block's peak from one steady period; the reference counts whole rows."""
    family = vfamily.blocks(p)
    got = vfamily.block_peaks(p, family).tolist()
    for whole, peak in zip(family, got):
        rows = repeated(p, 2 * p, whole)
        keep_m_microbatches(rows, 2 * p)
        assert max(peaks(rows)) == peak


@pytest.mark.parametrize("cost", list(COSTS))
def test_the_reference_timing_is_ppviz_timing(cost):
    """Every reference order at p = 4, m = 8 runs in ppviz's simulator with the same longest span
    (ppviz's f = 2 × the authors' per-chunk f) and the same peak (ppviz's unit = 2 of theirs)."""
    f, b, w, c = COSTS[cost]
    for rows, peak in reference_family(4, 8):
        sched = make_schedule(Placement.vshape(4), 8, to_order(rows))
        run = ppviz.evaluate(sched, ppviz.make_costs(f=2 * f, b=2 * b, w=2 * w, p2p=c))
        assert max(run.metrics.span) == pytest.approx(span(rows, *COSTS[cost]))
        assert max(run.metrics.peak_activation) == peak / 2


def test_letter_rows_read_as_the_reference_reads_them():
    """``vfamily.to_columns`` gives each letter the stage and microbatch the reference's ``to_order`` does."""
    for rows, _ in reference_family(4, 8):
        letters = ["".join(row).replace(" ", "") for row in rows]
        assert vfamily.to_columns(letters).rows() == tuple(map(tuple, to_order(rows)))


SIZES = [(4, 8), (4, 16), (5, 10), (6, 12), (6, 18), (8, 16)]


@pytest.mark.parametrize("cost", list(COSTS))
@pytest.mark.parametrize(("p", "m"), SIZES)
def test_v_auto_is_never_longer_than_the_authors_search(p, m, cost):
    """At every limit from V-Min's to V-ZB's (in the authors' half-share units), v-auto's longest
    span is at most the reference search's, and its peak stays within the limit."""
    lowest = min(peak for _, peak in reference_family(p, m))
    for limit in range(lowest, 2 * p + 1):
        expected = reference_best(p, m, COSTS[cost], limit)
        got, peak = ppviz_span("v-auto", p, m, COSTS[cost], max_memory=limit / 2)
        assert got <= expected + 1e-9, f"limit {limit}: {got} > {expected}"
        assert peak <= limit / 2


@pytest.mark.parametrize("cost", list(COSTS))
@pytest.mark.parametrize(("p", "m"), SIZES)
def test_v_min_v_half_v_zb_are_never_longer_than_the_authors_search_at_their_memory(p, m, cost):
    """Each at its own peak ((p+4)//3, (p+2)//2 and p device shares), against the reference at
    that limit."""
    for name, limit in (("v-min", (p + 4) // 3), ("v-half", (p + 2) // 2), ("v-zb", p)):
        expected = reference_best(p, m, COSTS[cost], 2 * limit)
        got, peak = ppviz_span(name, p, m, COSTS[cost])
        assert peak <= limit
        if expected is not None:
            assert got <= expected + 1e-9, f"{name}: {got} > {expected}"


def test_v_min_and_v_half_now_match_the_authors_where_they_were_one_f_longer():
    """Issue 11's cases: V-Min at p = 8 and V-Half at every p were one f longer than the
    authors'; under equal costs both now equal the reference exactly."""
    cost = COSTS["equal"]
    for p, m in [(8, 16), (4, 8), (6, 12)]:
        for name, limit in (("v-min", (p + 4) // 3), ("v-half", (p + 2) // 2)):
            assert ppviz_span(name, p, m, cost)[0] == reference_best(p, m, cost, 2 * limit)


def test_an_order_with_a_w_before_its_b_gets_the_w_deferred():
    """At p = 16 the authors' cool-down leaves some W ahead of its own B (their timing does not
    check it); ppviz moves each such W to just after its B, and the order then runs."""
    block = vfamily.levels(16)[12][0]  # V-Min's level
    rows, _ = vfamily.build_rows(16, 32, block)
    assert not vfamily.runs_in_order(rows)
    fixed = vfamily.defer_early_w(rows)
    assert fixed is not None and vfamily.runs_in_order(fixed)
    assert sorted("".join(fixed)) == sorted("".join(rows))
    assert_valid(ppviz.evaluate(Schedule(Placement.vshape(16), 32, vfamily.to_columns(fixed))))


def test_a_late_b_pulled_forward_keeps_the_authors_peak_and_runs():
    """The other repair of such an order: each B that comes after its W moves to just before it.
    Every F and W stays where the authors put it, so the peak is theirs, and the order runs."""
    block = vfamily.levels(16)[12][0]
    rows, peak = vfamily.build_rows(16, 32, block)
    pulled = vfamily.pull_late_b(rows)
    assert pulled is not None and vfamily.runs_in_order(pulled)
    assert sorted("".join(pulled)) == sorted("".join(rows))
    assert max(peaks(pulled)) == peak
    assert_valid(ppviz.evaluate(Schedule(Placement.vshape(16), 32, vfamily.to_columns(pulled))))


@pytest.mark.parametrize(
    ("m", "cost", "limit", "first", "o0", "o1", "len0", "theirs"),
    [
        (64, "latency", 19, [0, 1, 2, 4, 3, 5], 5, 2, 5, 554),
        (64, "b > w", 25.5, [0, 3, 4, 5, 1, 2], 5, 3, 9, 624),
        (128, "b > w", 17.5, [0, 1, 3, 5, 4, 2], 5, 2, 1, 1307),
        (128, "b > w", 13, [0, 3, 4, 5, 1, 2], 3, 1, 3, 1683),
        (128, "b > w", 14, [0, 3, 4, 5, 1, 2], 3, 1, 6, 1671),
    ],
)
def test_v_auto_at_p32_is_not_longer_where_it_was(m, cost, limit, first, o0, o1, len0, theirs):
    """Issue 11's three cases at p = 32 where v-auto was longer than the authors' whole search
    (560, 625 and 1,308). Their best there is this one block's order (found by timing every
    order of the family their way, as bench/bench_vshape.py --authors does), with a W ahead of
    its B that their timing lets run early. Built and timed here by the reference, it gives their
    figure; v-auto, with a valid order within the limit, is no longer. The third block is the
    14th that v-auto's cost-aware order builds at that level. Issue 22's two at 32 × 128 (v-auto
    1,685 and 1,673 there; the same held at 15 and 16): the block is the 22nd so built, past the
    budget, and its order runs only with the W deferred, which needs one more half share; the
    greedy re-timings, now run up to p × m = 4,096, are shorter (1,563 and 1,452)."""
    whole = whole_pattern(first, OFFSETS[o0 - 1], OFFSETS[o1 - 1], len0, 32)
    rows, peak = by_pattern(32, m, whole)
    assert peak <= 2 * limit
    assert span(rows, *COSTS[cost]) == theirs
    got, top = ppviz_span("v-auto", 32, m, COSTS[cost], max_memory=limit)
    assert got <= theirs
    assert top <= limit


@pytest.mark.parametrize("p", [4, 6])
def test_the_cost_aware_guess_times_the_repeated_rows_as_the_simulator_does(p):
    """``repeated_spans`` times every block's bare repeated rows at once; each must equal ppviz's
    simulator on those rows, under uneven op times and a latency."""
    from ppviz.schedules.vshape import _letter_times

    costs = ppviz.make_costs(f=2, b=3, w=1, p2p=0.5)
    times, lag = _letter_times(p, costs)
    family = vfamily.blocks(p)[::7]
    got = vfamily.repeated_spans(p, family, times, lag, n=6)
    for block, guess in zip(family, got):
        rows = ["".join(row).replace(" ", "") for row in vfamily._repeated(p, 6, block)]
        run = ppviz.evaluate(Schedule(Placement.vshape(p), 6, vfamily.to_columns(rows)), costs)
        assert guess == pytest.approx(max(run.metrics.span))
    level = max(vfamily.levels(p).values(), key=len)
    ranked = vfamily.likely_first(p, level, times, lag)
    assert sorted(ranked) == sorted(level) and ranked[: vfamily.AUTHORS_FIRST] == list(level[: vfamily.AUTHORS_FIRST])


def _spans_over_limits(p: int, m: int, cost: tuple, limits) -> list[float]:
    out = []
    for limit in limits:
        got, peak = ppviz_span("v-auto", p, m, cost, max_memory=limit)
        assert peak <= limit
        out.append(got)
    return out


@pytest.mark.parametrize("cost", list(COSTS))
@pytest.mark.parametrize(("p", "m"), [(4, 8), (6, 18), (8, 16)])
def test_more_memory_never_makes_v_auto_longer(p, m, cost):
    """Every half share from the family's least peak to p: v-auto's longest span never grows
    (at 6 × 18 under b = 2f it did: 199 at 3.5 shares against 198 at 3)."""
    lowest = vfamily.lowest_peak(p)
    limits = [lowest + k / 2 for k in range(int(2 * (p - lowest)) + 1)]
    got = _spans_over_limits(p, m, COSTS[cost], limits)
    assert all(later <= earlier for earlier, later in zip(got, got[1:])), list(zip(limits, got))


def test_more_memory_never_makes_v_auto_longer_at_p16():
    """Issue 11's case, p = 16, m = 64, b = 2f: 732 at 7 shares and 745 at 7.5, 604 at 9 and 610
    at 9.5, where a greedy re-timing under the higher limit ran forwards earlier and ended later."""
    limits = [7 + k / 2 for k in range(6)]
    got = _spans_over_limits(16, 64, COSTS["b > w"], limits)
    assert all(later <= earlier for earlier, later in zip(got, got[1:])), list(zip(limits, got))
    assert got[limits.index(9.5)] <= 604


@pytest.mark.parametrize("cost", [(1, 1, 1, 0.1), (0.5, 0.5, 0.5, 0.1)])
@pytest.mark.parametrize("limit", [4, 4.5])
def test_issue_22_example_is_not_longer_than_the_authors(cost, limit):
    """Issue 22's case: p = 8, m = 32, equal costs with a latency of 0.1 (per chunk as the authors
    give it, and ppviz's defaults f = b = w = 1 per device share), limits of 4 and 4.5 shares.
    v-auto's longest span is at most the literal reference search's at that limit, within it."""
    expected = reference_best(8, 32, cost, int(2 * limit))
    got, peak = ppviz_span("v-auto", 8, 32, cost, max_memory=limit)
    assert got <= expected + 1e-9
    assert peak <= limit
    if limit == 4:  # V-Min's memory
        assert ppviz_span("v-min", 8, 32, cost)[0] <= expected + 1e-9


def test_the_search_does_not_depend_on_the_clock(monkeypatch):
    """The V search is bounded in work (blocks built), never in time: at a size where the budget
    cuts the level (p = 32, m = 64: 39 of 54 blocks), the order is the same from cold caches with
    every clock jumping an hour a call as with the real clocks, and again from warm caches."""
    import time

    from ppviz.schedules import vshape

    def build():
        for cached in (vfamily.build_rows, vfamily.levels, vfamily.blocks):
            cached.cache_clear()
        return vshape.v_auto(32, 64, 18, ppviz.make_costs(p2p=0.1)).order

    assert len(vfamily.levels(32)[36]) * 32 * 64 > vshape.FAMILY_WORK  # the budget does cut this level
    calm = build()
    warm = vshape.v_auto(32, 64, 18, ppviz.make_costs(p2p=0.1)).order
    hour = iter(range(10**9))
    for name in ("time", "monotonic", "perf_counter", "process_time", "thread_time"):
        monkeypatch.setattr(time, name, lambda: 3600.0 * next(hour))
        monkeypatch.setattr(time, name + "_ns", lambda: 3600 * 10**9 * next(hour))
    assert build() == calm == warm


def test_more_memory_never_makes_v_auto_longer_at_p32_m128():
    """Where the greedy re-timings run beyond p × m = 2,048 the half share below is searched too:
    at 32 × 128 under b = 2f, re-timing the limit's own level alone gave 1,653 at 12.5 shares
    against 1,632 at 12."""
    limits = [12, 12.5, 13, 13.5]
    got = _spans_over_limits(32, 128, COSTS["b > w"], limits)
    assert all(later <= earlier for earlier, later in zip(got, got[1:])), list(zip(limits, got))
