"""An independent validator of simulated schedules, used by every schedule test.

It is written from the rules of issue 2, not from the simulator's code: it re-reads the
schedule's per-device orders, finds each action's row in the result's op columns, and checks
coverage, placement, durations, device exclusivity, dependencies with latency, exact start times
and the activation curve. Everything per op is a numpy array operation, so thousands of ops
check in milliseconds.
"""

from __future__ import annotations

import numpy as np

from ppviz import memory
from ppviz.ir import KINDS, Kind, Overlap

F, B, W, BW = (KINDS.index(k) for k in (Kind.F, Kind.B, Kind.W, Kind.BW))
_INDEX = {k: i for i, k in enumerate(KINDS)}


def schedule_kwargs(spec, chunks: int) -> dict:
    """The schedule-specific arguments of a grid point: ``chunks`` only where the spec takes it."""
    return {"chunks": chunks} if spec.param("chunks") is not None else {}


def assert_valid(run, *, exact: bool = True) -> None:
    """Fail with a readable message unless ``run`` (a Run or a Result) is a valid timed schedule.

    ``exact`` also checks that each step starts as early as the rules allow: when its device is
    free and its dependencies (plus latency) have ended.
    """
    result = getattr(run, "result", run)
    sched, costs = result.schedule, result.costs
    S, M, P = sched.stages, sched.microbatches, sched.devices
    dev, stage, mb, kind, step, step_dev = _actions(sched)
    n = len(dev)
    label = _labeller(stage, mb, kind)

    _check(len(sched.order) == P, f"{len(sched.order)} device rows for {P} devices")
    _check(len(result.start) == n, f"the result has {len(result.start)} ops; the order holds {n} actions")
    bad = np.flatnonzero((stage < 0) | (stage >= S) | (mb < 0) | (mb >= M))
    _check(not len(bad), lambda: f"{label(bad[0])} is outside stages 0..{S - 1} / microbatches 0..{M - 1}")

    # Every (stage, microbatch, kind) at most once, and the result holds exactly those actions.
    key = (kind * S + stage) * M + mb
    counts = np.bincount(key, minlength=len(KINDS) * S * M)
    _check(counts.max(initial=0) <= 1, lambda: f"{label(np.flatnonzero(counts[key] > 1)[0])} appears twice")
    r_key = (np.asarray(result.kind, dtype=np.int64) * S + result.stage) * M + result.microbatch
    _check(np.array_equal(np.sort(r_key), np.sort(key)), "the result's ops are not the order's actions")
    pos = np.full(len(counts), -1, dtype=np.int64)
    pos[r_key] = np.arange(n)
    row = pos[key]  # result row of each action, in order
    moved = np.flatnonzero(np.asarray(result.device)[row] != dev)
    _check(not len(moved), lambda: f"{label(moved[0])} is reported on another device than its order row")

    # Coverage: F everywhere; per (stage, microbatch) BW xor (B and W).
    has = counts.reshape(len(KINDS), S, M).astype(bool)
    _first_bad(~has[F], "forward never runs")
    _first_bad(has[B] != has[W], "has only one of B and W")
    _first_bad(has[BW] == has[B], "needs exactly one of BW or (B and W)")

    # Placement: each action on the device its stage has for its microbatch's direction.
    directions = np.zeros(M, dtype=np.int64) if sched.directions is None else np.asarray(sched.directions)
    home = np.asarray(sched.placement.devices_of, dtype=np.int64)[directions[mb], stage]
    wrong = np.flatnonzero(home != dev)
    _check(not len(wrong), lambda: f"{label(wrong[0])} runs on device {dev[wrong[0]]}, not {home[wrong[0]]}")

    # Durations: stage s takes device share ⌊s·P/S⌋'s f, b, w scaled by P/S, or its exact times;
    # BW = b + w; a pair = sum × overlap.
    start, end = np.asarray(result.start, float)[row], np.asarray(result.end, float)[row]
    tol = 1e-9 * max(1.0, float(np.abs(end).max(initial=0.0)))
    table = np.empty((len(KINDS), S))
    for s in range(S):
        if costs.exact_stage_times:
            f, b, w = costs.exact_stage_times[s]
            table[[F, B, W, BW], s] = [f, b, w, b + w]
            continue
        f, b, w = costs.stage_times.get(s * P // S, (costs.f, costs.b, costs.w))
        table[[F, B, W, BW], s] = np.array([f, b, w, b + w], dtype=float) * (P / S)
    n_steps = len(step_dev)
    size = np.bincount(step, minlength=n_steps)
    step_dur = np.bincount(step, weights=table[kind, stage], minlength=n_steps)
    step_dur = np.where(size > 1, step_dur * costs.overlap, step_dur)
    first = np.searchsorted(step, np.arange(n_steps))  # first action of each step
    step_start, step_end = start[first], end[first]
    split = np.flatnonzero((np.abs(start - step_start[step]) > tol) | (np.abs(end - step_end[step]) > tol))
    _check(not len(split), lambda: f"the halves of the pair holding {label(split[0])} have different times")
    off = np.flatnonzero(np.abs(step_end - step_start - step_dur) > tol)
    _check(
        not len(off),
        lambda: (
            f"{label(first[off[0]])} lasts {step_end[off[0]] - step_start[off[0]]:g}, expected {step_dur[off[0]]:g}"
        ),
    )

    # The result's slot columns (used by metrics and figures) agree with the op columns.
    slot = np.asarray(result.slot)[row]
    _check(
        np.array_equal(np.asarray(result.slot_device)[slot], dev)
        and np.allclose(np.asarray(result.slot_start)[slot], start, atol=tol)
        and np.allclose(np.asarray(result.slot_end)[slot], end, atol=tol)
        and len(result.slot_start) == n_steps
        and np.array_equal(np.bincount(slot, minlength=n_steps), size),
        "the result's slot columns disagree with its ops or with the order's pairs",
    )

    # Each device runs its steps in order, one at a time, from time 0 on.
    same = np.append(False, step_dev[1:] == step_dev[:-1])
    prev_end = np.where(same, np.append(0.0, step_end[:-1]), 0.0)
    clash = np.flatnonzero(step_start < prev_end - tol)
    _check(not len(clash), lambda: f"{label(first[clash[0]])} starts before its device is free")

    # Dependencies, with the p2p latency when they cross devices.
    dep_key = np.full(n, -1, dtype=np.int64)
    fwd = (kind == F) & (stage > 0)
    dep_key[fwd] = (F * S + stage[fwd] - 1) * M + mb[fwd]
    back = (kind == B) | (kind == BW)
    last = back & (stage == S - 1)
    dep_key[last] = (F * S + stage[last]) * M + mb[last]
    inner = back & (stage < S - 1)
    next_b = (B * S + stage[inner] + 1) * M + mb[inner]
    next_bw = (BW * S + stage[inner] + 1) * M + mb[inner]
    dep_key[inner] = np.where(counts[next_b] > 0, next_b, next_bw)
    is_w = kind == W
    dep_key[is_w] = (B * S + stage[is_w]) * M + mb[is_w]
    has_dep = dep_key >= 0
    dep_row = np.where(has_dep, pos[np.maximum(dep_key, 0)], -1)
    order_pos = np.empty(n, dtype=np.int64)
    order_pos[row] = np.arange(n)
    dep = np.where(has_dep, order_pos[np.maximum(dep_row, 0)], 0)  # dependency's index in order
    latency = np.where(dev[dep] != dev, costs.p2p, 0.0)
    ready = np.where(has_dep, end[dep] + latency, -np.inf)
    early = np.flatnonzero(start < ready - tol)
    _check(
        not len(early),
        lambda: (
            f"{label(early[0])} starts at {start[early[0]]:g} before {label(dep[early[0]])} "
            f"(+ latency) allows, {ready[early[0]]:g}"
        ),
    )

    if exact:
        step_ready = np.maximum(prev_end, np.maximum.reduceat(ready, first) if n else ready)
        late = np.flatnonzero(np.abs(step_start - step_ready) > tol)
        _check(
            not len(late),
            lambda: (
                f"{label(first[late[0]])} starts at {step_start[late[0]]:g}, but could start at {step_ready[late[0]]:g}"
            ),
        )

    _check_memory(result, dev, kind, start, end, P, S, costs.b_frees, tol)


def _check_memory(result, dev, kind, start, end, P, S, b_frees, tol) -> None:
    """Own activation curve: F adds p/S at its start; B, W and BW free at their ends, frees first."""
    unit = P / S
    delta = np.select(
        [kind == F, kind == BW, kind == B, kind == W], [unit, -unit, -unit * b_frees, -unit * (1 - b_frees)]
    )
    is_add = kind == F
    time = np.where(is_add, start, end)
    order = np.lexsort((is_add, time, dev))
    d, t, level = dev[order], time[order], np.cumsum(delta[order])
    base = np.zeros(P)
    steps = []
    bounds = np.searchsorted(d, np.arange(P + 1))
    for i in range(P):
        lo, hi = bounds[i], bounds[i + 1]
        lv = level[lo:hi] - (level[lo - 1] if lo > 0 else 0.0)
        instant_end = np.append(t[lo + 1 : hi] != t[lo : hi - 1], True) if hi > lo else np.zeros(0, bool)
        lv = lv[instant_end]
        steps.append((t[lo:hi][instant_end], lv))
        _check(lv.min(initial=0.0) >= -tol, f"device {i}'s activation goes below zero ({lv.min():g})")
        _check(abs(lv[-1] if len(lv) else 0.0) <= tol, f"device {i}'s activation ends at {lv[-1]:g}, not 0")
        base[i] = lv.max(initial=0.0)
    curves = memory.activation(result)
    for i in range(P):
        values = np.asarray(curves.values[i])
        _check(values.min() >= -tol, f"memory.activation: device {i} goes below zero")
        _check(abs(values[-1]) <= tol, f"memory.activation: device {i} ends at {values[-1]:g}, not 0")
        _check(
            abs(curves.peak[i] - base[i]) <= 1e-6,
            f"memory.activation: device {i} peaks at {curves.peak[i]:g}; the ops give {base[i]:g}",
        )
        own_t, own_v = steps[i]
        got_t = np.asarray(curves.times[i])
        at = np.union1d(own_t, got_t)  # compare both step curves everywhere either changes
        _check(
            np.allclose(_level_at(got_t, values, at), _level_at(own_t, own_v, at), atol=1e-6),
            f"memory.activation: device {i}'s curve differs from the one the ops give",
        )


def _level_at(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Step-curve value at each time in ``at`` (0 before the first change; the last change wins)."""
    i = np.searchsorted(times, at, side="right") - 1
    return np.where(i >= 0, values[np.maximum(i, 0)], 0.0)


def _actions(sched):
    """Columns of every action in order (pairs give both halves) and the device of each step."""
    dev, stage, mb, kind, step, step_dev = [], [], [], [], [], []
    for d, steps in enumerate(sched.order):
        for item in steps:
            if item is None:
                continue
            for a in (item.first, item.second) if isinstance(item, Overlap) else (item,):
                dev.append(d)
                stage.append(a.stage)
                mb.append(a.microbatch)
                kind.append(_INDEX[a.kind])
                step.append(len(step_dev))
            step_dev.append(d)
    cols = (dev, stage, mb, kind, step, step_dev)
    return tuple(np.array(c, dtype=np.int64) for c in cols)


def _labeller(stage, mb, kind):
    names = {F: "F", B: "B", W: "W", BW: "BW"}
    return lambda i: f"{names[int(kind[i])]}(stage {int(stage[i])}, mb {int(mb[i])})"


def _first_bad(mask: np.ndarray, text: str) -> None:
    if mask.any():
        s, m = np.argwhere(mask)[0]
        raise AssertionError(f"stage {s} microbatch {m} {text}")


def _check(ok: bool, message) -> None:
    if not ok:
        raise AssertionError(message() if callable(message) else message)
