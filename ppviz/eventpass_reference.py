"""The event pass in plain Python: the reference the compiled pass (``ppviz.eventpass``) is tested
against, and what runs when numba is missing or cannot compile.

Each device runs its steps in order. A step starts when its device is free and the step it
depends on has ended plus that step's latency. The pass is a worklist over devices: a device runs
ahead until it meets an unfinished dependency, parks on it, and is woken when that step ends.
"""

from __future__ import annotations

import math

import numpy as np


def run(bounds: np.ndarray, dep: np.ndarray, p2p: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The start of every step, and where each device stopped (``bounds[d + 1]`` once it finished).

    Steps ``bounds[d]..bounds[d + 1]`` run on device d. Every dependency left is on another
    device, so each step records when its dependents may start: its end plus its latency
    ``p2p[i]`` (``ready``; a ``p2p`` of length 1 is every step's latency). ``ready`` has one extra entry, -inf, so a missing dependency (index -1)
    never delays a step; ``None`` marks a step not yet run. A parked device is noted in ``waiter``
    of the step it waits for (``more`` holds a rare second one).
    """
    bounds, dep, p2p, dur = bounds.tolist(), dep.tolist(), p2p.tolist(), dur.tolist()
    n = len(dur)
    if len(p2p) == 1:
        p2p *= n
    start = [0.0] * n
    ready: list = [None] * n + [-math.inf]
    waiter = [-1] * n
    more: dict[int, list[int]] = {}
    devices = len(bounds) - 1
    ptr = bounds[:-1]
    free = [0.0] * devices
    todo = list(range(devices - 1, -1, -1))
    while todo:
        d = todo.pop()
        i, hi, t_free = ptr[d], bounds[d + 1], free[d]
        while i < hi:
            t = ready[dep[i]]
            if t is None:
                a = dep[i]
                if waiter[a] < 0:
                    waiter[a] = d
                else:
                    more.setdefault(a, []).append(d)
                break
            if t < t_free:
                t = t_free
            start[i] = t
            t_free = t + dur[i]
            ready[i] = t_free + p2p[i]
            w = waiter[i]
            if w >= 0:
                todo.append(w)
                if more:
                    todo.extend(more.pop(i, ()))
            i += 1
        ptr[d] = i
        free[d] = t_free
    return np.array(start, dtype=np.float64), np.array(ptr, dtype=np.int64)
