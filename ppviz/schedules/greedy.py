"""A memory-bounded greedy list scheduler: the engine behind zb-auto and the V schedules.

It plays the pipeline forward in time. Whenever a device is free it runs, among the actions
whose inputs are ready, the one a priority function ranks first; a forward runs only if the
device's activation stays within the limit. Times are exact (same cost convention and memory
units as the simulator), so the order it returns simulates to the times it planned.

Dependencies are those of the simulator: F(s) after F(s−1), B(s) after B(s+1) (or after F on the
last stage), W(s) after B(s). Only single-direction placements with split backward are handled.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

from ..costs import Costs
from ..ir import Action, B, F, Kind, Placement, W

_EPS = 1e-9


class Candidate(NamedTuple):
    """An action a device could run next, with the device's activation when it would start."""

    stage: int
    microbatch: int
    kind: Kind
    in_flight: float


Priority = Callable[[Candidate], tuple]


def greedy_order(
    placement: Placement, m: int, costs: Costs, limit: float, priority: Priority
) -> list[list[Action]] | None:
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
    order: list[list[Action]] = [[] for _ in range(P)]
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
                cands.append((ready(s, next_f[s], F), Candidate(s, next_f[s], F, mem[d])))
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
    for _ in range(total):
        d = min(range(P), key=lambda i: decision[i][0])
        t, cands = decision[d]
        if t == math.inf:
            return None
        c = min(cands, key=priority)
        s, mb, kind = c.stage, c.microbatch, c.kind
        if kind == F:
            end = t + t_f[s]
            end_f[s][mb] = end
            next_f[s] += 1
            mem[d] += unit
            touched = (d, where[s + 1]) if s + 1 < S else (d,)
        elif kind == B:
            end = t + t_b[s]
            end_b[s][mb] = end
            next_b[s] += 1
            waiting_w[d].append((s, mb))
            touched = (d, where[s - 1]) if s > 0 else (d,)
        else:
            end = t + t_w[s]
            waiting_w[d].popleft()
            mem[d] -= unit  # freed at W's end, which is when this device is next free
            touched = (d,)
        free[d] = end
        order[d].append(Action(s, mb, kind))
        for e in set(touched):
            decision[e] = options(e)
    return order
