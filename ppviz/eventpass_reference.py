"""The event pass in plain Python: the reference the compiled pass (``ppviz.eventpass``) is tested
against, what runs when numba is missing or cannot compile, and what a process runs before its
passes repay loading numba (``eventpass.LOAD_AFTER_STEPS``).

Each device runs its steps in order. A step starts when its device is free and the step it
depends on has ended plus that step's latency. The pass is a worklist over devices: a device runs
ahead until it meets an unfinished dependency, parks on it, and is woken when that step ends.
"""

from __future__ import annotations

import numpy as np


def run(bounds: np.ndarray, dep: np.ndarray, p2p: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The start of every step, and where each device stopped (``bounds[d + 1]`` once it finished).

    Steps ``bounds[d]..bounds[d + 1]`` run on device d. Every dependency left is on another
    device, so a step waits until its dependency ``a`` has ended plus that step's latency:
    ``start[a] + dur[a] + p2p[a]`` (a ``p2p`` of length 1 is every step's latency); -1 is no
    dependency. The arrays are read and written in place through memoryviews, not copied to lists
    (a list holds ~36 B a step more and takes longer to build than the pass to run); ``done`` marks
    the steps run, and ``waiting`` the devices parked on a step, in the order they parked.
    """
    n = len(dur)
    out = np.zeros(n)
    start = memoryview(out)
    dep, dur = memoryview(np.ascontiguousarray(dep)), memoryview(np.ascontiguousarray(dur, dtype=np.float64))
    uniform = len(p2p) == 1
    latency = float(p2p[0]) if uniform else 0.0
    p2p = memoryview(np.ascontiguousarray(p2p, dtype=np.float64))
    done = bytearray(n)
    waiting: dict[int, list[int]] = {}
    bounds = bounds.tolist()
    devices = len(bounds) - 1
    ptr = bounds[:-1]
    free = [0.0] * devices
    todo = list(range(devices - 1, -1, -1))
    while todo:
        d = todo.pop()
        i, hi, t_free = ptr[d], bounds[d + 1], free[d]
        while i < hi:
            a = dep[i]
            t = t_free
            if a >= 0:
                if not done[a]:
                    waiting.setdefault(a, []).append(d)
                    break
                t = start[a] + dur[a] + (latency if uniform else p2p[a])
                if t < t_free:
                    t = t_free
            start[i] = t
            t_free = t + dur[i]
            done[i] = 1
            if waiting and i in waiting:
                todo.extend(waiting.pop(i))
            i += 1
        ptr[d] = i
        free[d] = t_free
    return out, np.array(ptr, dtype=np.int64)
