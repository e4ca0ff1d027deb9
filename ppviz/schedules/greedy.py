"""A memory-bounded greedy list scheduler: the engine behind zb-auto and the V schedules.

It plays the pipeline forward in time. Whenever a device is free it runs, among the actions
whose inputs are ready, the one a priority function ranks first; a forward runs only if the
device's activation stays within the limit. Times are exact (same cost convention and memory
units as the simulator), so the order it returns simulates to the times it planned.

Dependencies are those of the simulator: F(s) after F(s−1), B(s) after B(s+1) (or after F on the
last stage), W(s) after B(s). Only single-direction placements with split backward are handled.

Orders come and go as ``Columns``; inside, an action is one small int, its *code*
(stage·m + microbatch)·3 + kind (F 0, B 1, W 2, as ``KINDS``), so no ``Action`` is made.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from typing import NamedTuple, Protocol

import numpy as np

from ..costs import Costs
from ..ir import KIND_INDEX, B, Columns, F, Kind, Placement, Row, Schedule, W, stack_rows

_EPS = 1e-9


class Candidate(NamedTuple):
    """An action a device could run next, with the device's activation when it would start."""

    stage: int
    microbatch: int
    kind: Kind
    in_flight: float


Priority = Callable[[Candidate], tuple]


class Guard(Protocol):
    """Optional veto on forwards (e.g. keep a reference order feasible under the limit)."""

    def allows(self, device: int, forward: Candidate) -> bool: ...

    def ran(self, device: int, code: int) -> None: ...


def greedy_order(
    placement: Placement, m: int, costs: Costs, limit: float, priority: Priority, guard: Guard | None = None
) -> Columns | None:
    """Per-device orders built greedily, or None if the limit leaves some device stuck."""
    S, P = placement.stages, placement.devices
    where = placement.devices_of[0]
    durations = costs.durations(S, P)
    t_f, t_b, t_w = (durations[i].tolist() for i in range(3))
    unit = P / S
    held = [[s for s in range(S) if where[s] == d] for d in range(P)]
    end_f = [[math.inf] * m for _ in range(S)]
    end_b = [[math.inf] * m for _ in range(S)]
    next_f, next_b = [0] * S, [0] * S
    waiting_w: list[deque] = [deque() for _ in range(P)]
    free, mem = [0.0] * P, [0.0] * P
    order: list[list[int]] = [[] for _ in range(P)]  # per device, the codes of its actions
    p2p = costs.p2p

    def ready(s: int, mb: int, kind: Kind) -> float:
        if kind == F:
            if s == 0:
                return 0.0
            t = end_f[s - 1][mb]
            return t + p2p if where[s - 1] != where[s] else t
        if s == S - 1:
            return end_f[s][mb]
        t = end_b[s + 1][mb]
        return t + p2p if where[s + 1] != where[s] else t

    def options(d: int) -> tuple[float, list[tuple[float, Candidate]]]:
        """The device's decision time and the candidates ready by then."""
        cands: list[tuple[float, Candidate]] = []
        for s in held[d]:
            if next_f[s] < m and mem[d] + unit <= limit + _EPS:
                fwd = Candidate(s, next_f[s], F, mem[d])
                if guard is None or guard.allows(d, fwd):
                    cands.append((ready(s, next_f[s], F), fwd))
            if next_b[s] < m:
                cands.append((ready(s, next_b[s], B), Candidate(s, next_b[s], B, mem[d])))
        if waiting_w[d]:
            s, mb = waiting_w[d][0]
            cands.append((free[d], Candidate(s, mb, W, mem[d])))
        if not cands:
            return math.inf, []
        t = max(free[d], min(r for r, _ in cands))
        return t, [c for r, c in cands if r <= t]

    total = 3 * S * m
    decision = [options(d) for d in range(P)]
    heap = [(decision[d][0], d) for d in range(P)]  # (decision time, device); stale entries skipped
    heapq.heapify(heap)
    for _ in range(total):
        while True:
            t, d = heapq.heappop(heap)
            if t == decision[d][0]:
                break
        if t == math.inf:
            return None
        cands = decision[d][1]
        c = min(cands, key=priority)
        s, mb, kind = c.stage, c.microbatch, c.kind
        code = (s * m + mb) * 3
        if kind == F:
            end = t + t_f[s]
            end_f[s][mb] = end
            next_f[s] += 1
            mem[d] += unit
            touched = (d, where[s + 1]) if s + 1 < S else (d,)
        elif kind == B:
            end = t + t_b[s]
            code += 1
            end_b[s][mb] = end
            next_b[s] += 1
            waiting_w[d].append((s, mb))
            touched = (d, where[s - 1]) if s > 0 else (d,)
        else:
            end = t + t_w[s]
            code += 2
            waiting_w[d].popleft()
            mem[d] -= unit  # freed at W's end, which is when this device is next free
            touched = (d,)
        free[d] = end
        order[d].append(code)
        if guard is not None:
            guard.ran(d, code)
        for e in set(touched):
            decision[e] = options(e)
            heapq.heappush(heap, (decision[e][0], e))
    return _columns(order, S, m)


def _columns(order: list[list[int]], stages: int, m: int) -> Columns:
    """Per-device lists of codes as narrow columns."""
    rows = (np.array(codes, dtype=np.int64) for codes in order)
    return stack_rows((Row(c % 3, c // 3 // m, c // 3 % m) for c in rows), stages, m)


def _positions(order: Columns, m: int) -> list[int]:
    """Each action's place in its device's row, indexed by its code."""
    codes = (order.stage.astype(np.int64) * m + order.microbatch) * 3 + order.kind
    at = np.zeros(int(codes.max()) + 1 if len(codes) else 0, dtype=np.int64)
    at[codes] = np.arange(len(codes)) - np.repeat(order.bounds[:-1], np.diff(order.bounds))
    return at.tolist()


def _activation_steps(order: Columns, unit: float) -> np.ndarray:
    """How each action changes its device's activation: F adds ``unit``, W frees it."""
    return np.where(order.kind == KIND_INDEX[F], unit, np.where(order.kind == KIND_INDEX[W], -unit, 0.0))


class ReferenceGuard:
    """Lets a forward jump ahead only if finishing the reference order afterwards stays in the limit.

    Running a forward early raises the activation of every step of the reference order it jumps
    over by one chunk, so it is allowed when the reference's own levels over that stretch leave
    room for it. The first remaining reference step is then always allowed, and the earliest
    such step over all devices always has its inputs ready, so the greedy pass cannot get stuck.
    The highest level over a stretch is a range query on a per-device prefix-sum tree, so each
    question costs O(log n), not a walk over the stretch.
    """

    def __init__(self, reference: Columns, m: int, limit: float, unit: float):
        self.m = m
        self.limit = limit
        self.unit = unit
        self.position = _positions(reference, m)
        step = _activation_steps(reference, unit)
        bounds = reference.bounds.tolist()
        self.trees = [_PrefixTree(step[lo:hi].tolist()) for lo, hi in zip(bounds, bounds[1:])]
        self.done = [bytearray(hi - lo) for lo, hi in zip(bounds, bounds[1:])]
        self.first = [0] * reference.devices

    def allows(self, device: int, forward: Candidate) -> bool:
        end = self.position[(forward.stage * self.m + forward.microbatch) * 3]
        rise = self.trees[device].best_prefix(self.first[device], end)
        return forward.in_flight + max(0.0, rise) + self.unit <= self.limit + _EPS

    def ran(self, device: int, code: int) -> None:
        done = self.done[device]
        i = self.position[code]
        done[i] = 1
        self.trees[device].clear(i)
        i, n = self.first[device], len(done)
        while i < n and done[i]:
            i += 1
        self.first[device] = i


class _PrefixTree:
    """Segment tree over step deltas: each node keeps (sum, highest prefix sum) of its range."""

    def __init__(self, values: list[float]):
        size = 1
        while size < max(len(values), 1):
            size *= 2
        self.size = size
        self.sum = [0.0] * (2 * size)
        self.best = [-math.inf] * (2 * size)
        self.sum[size : size + len(values)] = values
        self.best[size : size + len(values)] = values
        for i in range(size - 1, 0, -1):
            self._pull(i)

    def _pull(self, i: int) -> None:
        left, right = 2 * i, 2 * i + 1
        self.sum[i] = self.sum[left] + self.sum[right]
        self.best[i] = max(self.best[left], self.sum[left] + self.best[right])

    def clear(self, index: int) -> None:
        """A step that has run no longer changes the level: its delta becomes 0.

        ``_pull`` inlined: this runs once per scheduled action at every tree level.
        """
        sums, best = self.sum, self.best
        i = index + self.size
        sums[i] = best[i] = 0.0
        i >>= 1
        while i:
            left = 2 * i
            left_sum = sums[left]
            sums[i] = left_sum + sums[left + 1]
            through = left_sum + best[left + 1]
            best[i] = best[left] if best[left] > through else through
            i >>= 1

    def best_prefix(self, lo: int, hi: int) -> float:
        """Highest running sum over steps lo..hi-1 (-inf for an empty range)."""
        lo += self.size
        hi += self.size
        acc_sum, acc_best = 0.0, -math.inf
        right: list[int] = []
        sums, best = self.sum, self.best
        while lo < hi:
            if lo & 1:
                acc_best = max(acc_best, acc_sum + best[lo])
                acc_sum += sums[lo]
                lo += 1
            if hi & 1:
                hi -= 1
                right.append(hi)
            lo //= 2
            hi //= 2
        for i in reversed(right):
            acc_best = max(acc_best, acc_sum + best[i])
            acc_sum += sums[i]
        return acc_best


def repairs(
    placement: Placement, m: int, reference: Columns, limit: float, costs: Costs, defer_w_only: bool = True
) -> list[Columns]:
    """Greedy re-timings of a reference order that never exceed ``limit``: the reference's
    priority with every W deferred until nothing else is ready (and, unless ``defer_w_only``,
    the reference's priority as it is)."""
    rank = _positions(reference, m)
    unit = placement.devices / placement.stages
    in_order = lambda c: rank[(c.stage * m + c.microbatch) * 3 + KIND_INDEX[c.kind]]
    w_last = lambda c: (c.kind == W, in_order(c))
    out = []
    for priority in (w_last,) if defer_w_only else (in_order, w_last):
        order = greedy_order(placement, m, costs, limit, priority, ReferenceGuard(reference, m, limit, unit))
        if order is not None:
            out.append(order)
    return out


def order_peak(order: Columns, unit: float) -> float:
    """The largest activation any device reaches running ``order`` (F adds at start, W frees)."""
    step = _activation_steps(order, unit)
    forward = order.kind == KIND_INDEX[F]
    peak = 0.0
    bounds = order.bounds.tolist()
    for lo, hi in zip(bounds, bounds[1:]):
        levels = np.cumsum(step[lo:hi])[forward[lo:hi]]  # added in turn, as the device runs them
        if len(levels):
            peak = max(peak, float(levels.max()))
    return peak


def score(placement: Placement, m: int, order: Columns, limit: float, costs: Costs):
    """(key, schedule) of one order, key = (longest span, makespan, peak) as ``pick_best`` ranks
    them; None when its peak passes ``limit``."""
    from ..memory import activation
    from ..simulator import simulate

    schedule = Schedule(placement, m, order)
    result = simulate(schedule, costs)
    peak = float(activation(result).peak.max())
    if peak > limit + _EPS:
        return None
    first = np.full(placement.devices, np.inf)
    last = np.full(placement.devices, -np.inf)
    np.minimum.at(first, result.slot_device, result.slot_start)
    np.maximum.at(last, result.slot_device, result.slot_end)
    span = float(np.max(np.where(np.isfinite(first), last - first, 0.0)))
    return (span, float(result.slot_end.max()), peak), schedule


def pick_best(placement: Placement, m: int, orders: list[Columns], limit: float, costs: Costs):
    """The order with the shortest longest span (the zero-bubble papers' measure), then the
    shortest makespan, then the lowest peak, among those within ``limit``; None if none fits."""
    best = None
    for order in orders:
        scored = score(placement, m, order, limit, costs)
        if scored is not None and (best is None or scored[0] < best[0]):
            best = scored
    return None if best is None else best[1]
