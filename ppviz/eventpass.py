"""The event pass compiled with numba: the same steps and floating-point operations, in the same
order, as ``ppviz.eventpass_reference``, so start times are bit-identical and ~70× sooner.

Loading it costs a process ~0.35–0.4 s of CPU and ~114 MB (numba's import, then its machine code
from the cache on disk: ``NUMBA_CACHE_DIR``, else ``__pycache__`` beside this file), ~1.5 s with
an empty cache (compiling it there). The reference takes ~0.4 µs and holds ~9 B a step (the
compiled pass ~13 B), so it costs less memory at any size and less time below ~1M steps. So a
process runs the reference until its passes reach ``LOAD_AFTER_STEPS`` steps, then loads the
compiled one: a one-off CLI run below 1M actions never imports numba (nor does ``import ppviz``),
and repeated use loads it once it pays. A server calls ``warm()`` at its start instead
(``ppviz.web.common.compiled``). Without numba, or if it fails to compile, the reference pass
runs instead, after one warning.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import eventpass_reference

LOAD_AFTER_STEPS = 1_000_000  # the reference's steps in ~0.4 s, numba's load: past them the load pays

_kernel = None  # the compiled pass once loaded; eventpass_reference.run when it cannot be
_reference_steps = 0  # steps this process has timed with the reference before loading


def run(bounds: np.ndarray, dep: np.ndarray, p2p: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The start of every step, and where each device stopped: see ``eventpass_reference.run``."""
    global _reference_steps
    if _kernel is None and _reference_steps + len(dur) < LOAD_AFTER_STEPS:
        _reference_steps += len(dur)
        return eventpass_reference.run(bounds, dep, p2p, dur)
    kernel = _kernel or _load()
    return kernel(*typed(bounds, dep, p2p, dur))


def typed(bounds, dep, p2p, dur) -> tuple[np.ndarray, ...]:
    """The pass's inputs in a type it is compiled for, copying only what is not: ``dep`` int32 (the
    simulator's, below 2³¹ steps) or int64, the rest int64 and float64."""
    index = dep.dtype if dep.dtype in (np.int32, np.int64) else np.int64
    return (
        np.ascontiguousarray(bounds, dtype=np.int64),
        np.ascontiguousarray(dep, dtype=index),
        np.ascontiguousarray(p2p, dtype=np.float64),
        np.ascontiguousarray(dur, dtype=np.float64),
    )


def warm() -> bool:
    """Load (or compile and cache) the compiled pass now; False if the reference pass will run."""
    return (_kernel or _load()) is not eventpass_reference.run


def _load():
    global _kernel
    try:
        _kernel = _compile()
    except Exception as e:  # numba missing, or unable to compile on this machine
        warnings.warn(
            f"ppviz: the compiled event pass is unavailable ({type(e).__name__}: {e}); "
            "using the pure-Python pass, about 70× slower",
            RuntimeWarning,
            stacklevel=3,
        )
        _kernel = eventpass_reference.run
    return _kernel


def _compile():
    """The pass for int32 step indices (what the simulator gives), loaded now; the int64 one (2³¹
    steps and more, or a caller's int64) is loaded by numba on its first call."""
    import numba

    kernel = numba.njit(cache=True, nogil=True)(_pass)
    kernel(*typed(np.zeros(2), np.full(1, -1, dtype=np.int32), np.zeros(1), np.ones(1)))
    return kernel


def _pass(bounds, dep, p2p, dur):
    """``eventpass_reference.run`` over arrays, with the same float operations in the same order.
    When a step ends its dependents may start at ``start + dur + p2p``: recomputed when read, the
    same sum as the reference's ``ready``, so no array holds it. ``p2p`` of length 1 is every step's
    latency. A parked device is pushed on the list of the step it waits for (``waiter`` →
    ``next_waiter``), as a device waits for one step at a time."""
    n = len(dur)
    devices = len(bounds) - 1
    uniform = len(p2p) == 1
    start = np.zeros(n)
    done = np.zeros(n, dtype=np.bool_)
    waiter = np.full(n, -1, dtype=np.int32)
    next_waiter = np.full(devices, -1, dtype=np.int32)
    ptr = bounds[:-1].copy()
    free = np.zeros(devices)
    todo = np.empty(devices, dtype=np.int32)
    for k in range(devices):
        todo[k] = devices - 1 - k
    top = devices
    while top > 0:
        top -= 1
        d = todo[top]
        i, hi, t_free = ptr[d], bounds[d + 1], free[d]
        while i < hi:
            a = dep[i]
            t = t_free
            if a >= 0:
                if not done[a]:
                    next_waiter[d] = waiter[a]
                    waiter[a] = d
                    break
                t = start[a] + dur[a] + (p2p[0] if uniform else p2p[a])
                if t < t_free:
                    t = t_free
            start[i] = t
            t_free = t + dur[i]
            done[i] = True
            w = waiter[i]
            while w >= 0:
                todo[top] = w
                top += 1
                w = next_waiter[w]
            i += 1
        ptr[d] = i
        free[d] = t_free
    return start, ptr
