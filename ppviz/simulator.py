"""Validation and exact event timing of a schedule.

Each device runs its steps in order. A step starts when its device is free and every action it
depends on has ended (plus the p2p latency when that action ran on another device). The pass is
a worklist over devices: a device runs ahead until it meets an unfinished dependency, parks on
it, and is woken when that action ends. Every step is timed once, so the cost is linear in the
number of actions, and an order that cannot finish is reported, never looped on. The pass is
``ppviz.eventpass``: compiled with numba once a process has enough steps to time, before that its
plain-Python reference (``eventpass_reference``), with bit-identical results.

Optimizer steps between iterations (``Costs.optimizer_step``, real units) are extra steps with no
dependency, inserted after each device's last backward slot of an iteration: the device is busy
for their time, and nothing else changes. Without them (the abstract view) nothing is inserted.
A device's host overhead (``Costs.host_overhead``, fitted from measured runs) is inserted the same
way after each of its slots but the last: the next op starts no earlier than that gap's end.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property

import numpy as np

from . import eventpass
from .costs import Costs
from .ir import KIND_INDEX, KINDS, Action, Columns, Kind, Schedule, ScheduleError, iterations, narrow, narrowest

_F, _B, _W, _BW = (KIND_INDEX[k] for k in (Kind.F, Kind.B, Kind.W, Kind.BW))


class DeadlockError(ScheduleError):
    """The order cannot run: some device waits forever."""


class Result:
    """A timed schedule, as columns: one row per action in device order.

    The two actions of an overlapped pair share a slot, so they have the same start and end.
    Integer columns are in the narrowest type that holds them (cast to int64 before computing
    indices from them); start and end are float64, exact. Without pairs each action is its own
    slot, so the slot columns are the action columns themselves, not copies.
    """

    def __init__(self, schedule: Schedule, costs: Costs, device, stage, microbatch, kind, slot, start, end,
                 slot_device, slot_start, slot_end):  # fmt: skip
        self.schedule, self.costs = schedule, costs
        self.device, self.stage, self.microbatch, self.kind = (narrow(c) for c in (device, stage, microbatch, kind))
        self.start, self.end = start, end
        own = len(slot_start) == len(start) and all(
            a is b or np.array_equal(a, b) for a, b in ((slot_start, start), (slot_end, end), (slot_device, device))
        )
        self._slots = None if own else (narrow(slot), narrow(slot_device), slot_start, slot_end)

    @cached_property
    def slot(self) -> np.ndarray:
        """Slot of each action; a pair's two actions share one."""
        if self._slots is None:
            return np.arange(len(self), dtype=narrowest(0, len(self)))
        return self._slots[0]

    @property
    def slot_device(self) -> np.ndarray:
        return self.device if self._slots is None else self._slots[1]

    @property
    def slot_start(self) -> np.ndarray:
        return self.start if self._slots is None else self._slots[2]

    @property
    def slot_end(self) -> np.ndarray:
        return self.end if self._slots is None else self._slots[3]

    def __len__(self) -> int:
        return len(self.start)

    @cached_property
    def paired(self) -> np.ndarray:
        """True for actions that run as half of an overlapped pair."""
        counts = np.bincount(self.slot, minlength=len(self.slot_start))
        return counts[self.slot] > 1

    @cached_property
    def chunk(self) -> np.ndarray:
        """Which of its device's model chunks each action runs (0 for single-chunk devices)."""
        table = np.array(self.schedule.placement.chunk_index(), dtype=np.int64)
        direction = _directions(self.schedule)[self.microbatch]
        return table[direction, self.stage]

    def rows(self) -> Iterator[tuple[int, int, int, str, float, float]]:
        """(device, stage, microbatch, kind letter, start, end) per action, in device order."""
        names = [k.value for k in KINDS]
        return zip(
            self.device.tolist(),
            self.stage.tolist(),
            self.microbatch.tolist(),
            [names[k] for k in self.kind.tolist()],
            self.start.tolist(),
            self.end.tolist(),
        )

    def ops(self) -> list[dict]:
        """The CLI contract's ``ops[]`` rows."""
        keys = ("device", "stage", "microbatch", "kind", "start", "end")
        return [dict(zip(keys, row)) for row in self.rows()]


def _directions(schedule: Schedule) -> np.ndarray:
    if schedule.directions is None:
        return np.zeros(schedule.microbatches, dtype=np.int64)
    return np.asarray(schedule.directions, dtype=np.int64)


def _flatten(schedule: Schedule):
    """Columns of every action in device order, plus the device of each slot.

    Read from the schedule's columns; slots number the steps that hold actions (an idle step is
    no slot, a pair is two actions in one slot).
    """
    c = schedule.columns
    dev = c.device()
    if c.slot is None:
        return dev, c.stage, c.microbatch, c.kind, np.arange(len(c), dtype=narrowest(0, len(c))), dev
    new = np.ones(len(c), dtype=bool)
    new[1:] = (dev[1:] != dev[:-1]) | (c.slot[1:] != c.slot[:-1])
    slot = np.cumsum(new, dtype=np.int64) - 1
    return dev, c.stage, c.microbatch, c.kind, slot.astype(narrowest(0, len(c)), copy=False), dev[new]


def _label(stage: int, mb: int, kind: int) -> str:
    return str(Action(stage, mb, KINDS[kind]))


def _index_type(n: int) -> np.dtype:
    """int32 for indices below n < 2³¹ (half the memory of int64), int64 past that."""
    return np.dtype(np.int32 if n < 2**31 else np.int64)


def validate(schedule: Schedule) -> None:
    """Raise ScheduleError unless every action appears once, on the device holding its stage."""
    _prepare(schedule)


def _prepare(schedule: Schedule):
    """Validate and build the key → action index table used for dependencies."""
    S, M, P = schedule.stages, schedule.microbatches, schedule.devices
    rows = schedule.steps.devices if isinstance(schedule.steps, Columns) else len(schedule.steps)
    if rows != P:
        raise ScheduleError(f"the order has {rows} device rows but the placement has {P} devices")
    if M < 1:
        raise ScheduleError(f"a schedule needs at least one microbatch (got {M})")
    if schedule.directions is not None and len(schedule.directions) != M:
        raise ScheduleError(f"directions has {len(schedule.directions)} entries for {M} microbatches")
    n_dirs = len(schedule.placement.devices_of)
    if schedule.directions is not None and any(not 0 <= d < n_dirs for d in schedule.directions):
        bad = next(d for d in schedule.directions if not 0 <= d < n_dirs)
        raise ScheduleError(f"microbatch direction {bad} is not one of the placement's directions 0..{n_dirs - 1}")
    dev, stage, mb, kind, slot, slot_device = _flatten(schedule)
    bad = np.flatnonzero((stage < 0) | (stage >= S) | (mb < 0) | (mb >= M))
    if len(bad):
        i = bad[0]
        raise ScheduleError(
            f"device {dev[i]} runs {_label(stage[i], mb[i], kind[i])}, but the schedule has stages "
            f"0..{S - 1} and microbatches 0..{M - 1}"
        )
    placement = np.array(schedule.placement.devices_of, dtype=dev.dtype)
    home = placement[0, stage] if schedule.directions is None else placement[_directions(schedule)[mb], stage]
    bad = np.flatnonzero(home != dev)
    if len(bad):
        i = bad[0]
        raise ScheduleError(
            f"{_label(stage[i], mb[i], kind[i])} is on device {dev[i]}, but stage {stage[i]} "
            f"of microbatch {mb[i]} belongs on device {home[i]}"
        )
    del home
    key = kind.astype(_index_type(len(KINDS) * S * M))  # (kind · S + stage) · M + microbatch, in place
    key *= S
    key += stage
    key *= M
    key += mb
    pos = np.full(len(KINDS) * S * M, -1, dtype=_index_type(len(key)))
    pos[key] = np.arange(len(key), dtype=pos.dtype)
    if np.count_nonzero(pos >= 0) < len(key):  # a key written twice
        seen = np.bincount(key, minlength=len(pos)).reshape(len(KINDS), S, M)
        k, s, m = np.argwhere(seen > 1)[0]
        raise ScheduleError(f"action {_label(s, m, k)} appears {seen[k, s, m]} times; each must appear once")
    seen = (pos >= 0).reshape(len(KINDS), S, M)  # each action at most once from here
    problems = [
        (~seen[_F], "forward {} never runs"),
        (~(seen[_B] | seen[_BW]), "backward of {} never runs (need B and W, or BW)"),
        (seen[_B] & seen[_BW], "{} has both a split backward (B) and a full one (BW)"),
        (seen[_B] & ~seen[_W], "{} has B but no W"),
        (seen[_W] & ~seen[_B], "{} has W but no B"),
    ]
    for mask, text in problems:
        if mask.any():
            s, m = np.argwhere(mask)[0]
            raise ScheduleError(text.format(f"stage {s} microbatch {m}"))
    return dev, stage, mb, kind, slot, slot_device, key, pos


def step_slots(schedule: Schedule, device: np.ndarray, microbatch: np.ndarray, kind: np.ndarray, slot: np.ndarray):
    """``[iteration, device]`` for iterations 0..k−2: the slot after which the device runs its optimizer
    step (its last backward slot of that iteration), −1 where it has none. Columns as in ``Result``."""
    k, m = iterations(schedule)
    out = np.full((max(k - 1, 0), schedule.devices), -1, dtype=np.int64)
    if k < 2:
        return out
    backward = kind != _F
    it = microbatch[backward] // m
    early = it < k - 1
    np.maximum.at(out, (it[early], device[backward][early]), slot[backward][early])
    return out


def simulate(schedule: Schedule, costs: Costs | None = None) -> Result:
    """Validate the order and compute exact start and end times of every action.

    Lean at its peak (the event pass): index columns stay int32, temporaries are dropped before
    the pass, and without pairs or optimizer steps each action is its own step, so no step → slot
    map is built (``step_slot`` None: the identity)."""
    costs = costs or Costs()
    S = schedule.stages
    dev, stage, mb, kind, slot, slot_device, key, pos = _prepare(schedule)
    dep_act = _dependency_table(pos.reshape(len(KINDS), S, schedule.microbatches)).ravel()[key]
    del key, pos
    act_dur = costs.durations(S, schedule.devices)[kind, stage]
    step_slot = first = second = main = None
    if len(slot_device) == len(slot):  # no overlapped pairs: each action is its own step
        step_dep, step_dur = _cross_device(dep_act, dev), act_dur
    else:
        step_dep, step_dur, step_slot, first, second, main = _paired_steps(dep_act, act_dur, slot, slot_device, costs)
    del dep_act, act_dur
    if any(costs.optimizer_step) or any(costs.host_overhead):
        at, times = _inserted(schedule, costs, dev, mb, kind, slot, slot_device)
        if len(at):
            if step_slot is None:
                step_slot = main = np.arange(len(step_dep), dtype=step_dep.dtype)
            step_dep, step_dur, step_slot, main = _with_inserted_steps(step_dep, step_dur, step_slot, main, at, times)
    step_device = slot_device if step_slot is None else slot_device[step_slot]
    bounds = np.searchsorted(step_device, np.arange(schedule.devices + 1))
    latency = _latencies(costs, step_dep, step_device)
    del step_device
    start, stopped = eventpass.run(bounds, step_dep, latency, step_dur)
    del latency
    stuck = [(d, int(stopped[d])) for d in np.flatnonzero(stopped < bounds[1:]).tolist()]
    if stuck:
        _deadlock(stuck, step_slot, step_dep, first, second, stage, mb, kind, slot_device)
    if step_slot is None:
        slot_start, slot_end = start, start + step_dur  # the same float sum as in the pass, so exact
        return Result(schedule, costs, dev, stage, mb, kind, None, slot_start, slot_end, dev, slot_start, slot_end)
    slot_start = start[main]
    slot_end = slot_start + step_dur[main]
    del start, step_dep, step_dur, step_slot
    return Result(schedule, costs, dev, stage, mb, kind, slot, slot_start[slot], slot_end[slot], slot_device,
                  slot_start, slot_end)  # fmt: skip


def _dependency_table(pos: np.ndarray) -> np.ndarray:
    """For each (kind, stage, microbatch), the index of the action it waits for (-1: none).

    F(s) follows F(s−1); the backward (B or BW) of s follows that of s+1, or its own F on the
    last stage; W follows its own B. ``pos`` maps the same keys to action indices (-1: absent).
    """
    dep = np.full_like(pos, -1)
    dep[_F, 1:] = pos[_F, :-1]
    next_back = np.where(pos[_B, 1:] >= 0, pos[_B, 1:], pos[_BW, 1:])
    for k in (_B, _BW):
        dep[k, :-1] = next_back
        dep[k, -1] = pos[_F, -1]
    dep[_W] = pos[_B]
    return dep


def _cross_device(dep: np.ndarray, device: np.ndarray) -> np.ndarray:
    """``dep`` (changed in place) with dependencies earlier on the same device dropped (the
    device's order implies them). All that remain cross devices, or deadlock, so each carries the
    p2p latency."""
    implied = dep >= 0
    implied &= dep < np.arange(len(dep), dtype=dep.dtype)
    implied &= device[dep] == device
    dep[implied] = -1
    return dep


def _paired_steps(dep_act, act_dur, slot, slot_device, costs: Costs):
    """Steps of an order with pairs: a pair has two actions, hence up to two dependencies and a
    summed duration, so it gets a zero-time barrier step before it that waits for its second
    dependency, and the event pass handles one dependency per step."""
    n_slots = len(slot_device)
    dep_slot = np.where(dep_act >= 0, slot[dep_act], -1)
    slot_dur = np.bincount(slot, weights=act_dur, minlength=n_slots)
    size = np.bincount(slot, minlength=n_slots)
    slot_dur = np.where(size > 1, slot_dur * costs.overlap, slot_dur)
    first = np.full(n_slots, -1, dtype=_index_type(len(slot)))
    first[slot[::-1]] = np.arange(len(slot), dtype=first.dtype)[::-1]
    second = np.where(size > 1, first + 1, -1)
    dep1 = _cross_device(dep_slot[first], slot_device)
    dep2 = _cross_device(np.where(second >= 0, dep_slot[second], -1), slot_device)
    slots = np.arange(n_slots)
    pair = second >= 0
    main = slots + np.cumsum(pair)  # step index of each slot
    barrier = main[pair] - 1
    n_steps = n_slots + int(pair.sum())
    step_dep = np.full(n_steps, -1, dtype=_index_type(n_steps))
    step_dur = np.zeros(n_steps)
    step_slot = np.empty(n_steps, dtype=_index_type(n_steps))
    step_dep[main] = np.where(dep1 >= 0, main[dep1], -1)
    step_dur[main] = slot_dur
    step_slot[main] = slots
    step_dep[barrier] = np.where(dep2[pair] >= 0, main[dep2[pair]], -1)
    step_slot[barrier] = slots[pair]
    return step_dep, step_dur, step_slot, first, second, main


def _inserted(schedule: Schedule, costs: Costs, dev, mb, kind, slot, slot_device):
    """The slots after which a step without dependency is inserted, and its duration: each device's
    optimizer step after its iteration's last backward slot, and its host overhead after each of its
    slots but its last."""
    at, times = [], []
    if any(costs.optimizer_step):
        after = step_slots(schedule, dev, mb, kind, slot)
        it, d = np.nonzero(after >= 0)
        at.append(after[it, d])
        times.append(np.asarray(costs.optimizer_step, dtype=float)[d])
    if any(costs.host_overhead):
        gap = np.asarray(costs.host_overhead, dtype=float)
        slots = np.flatnonzero(slot_device[:-1] == slot_device[1:])  # not its device's last slot
        slots = slots[gap[slot_device[slots]] > 0]
        at.append(slots)
        times.append(gap[slot_device[slots]])
    if not at:
        return np.empty(0, dtype=np.int64), np.empty(0)
    return np.concatenate(at), np.concatenate(times)


def _with_inserted_steps(step_dep, step_dur, step_slot, main, at_slot, times):
    """The steps with one more after the main step of each slot in ``at_slot``: no dependency, its
    ``times`` entry as its duration (several after one slot run back to back). Indices are renumbered."""
    at = main[at_slot]  # the step each follows
    order = np.argsort(at, kind="stable")
    at, times = at[order], np.asarray(times, dtype=float)[order]
    n = len(step_dep)
    new_of_old = np.arange(n) + np.searchsorted(at, np.arange(n), side="left")
    added = at + 1 + np.arange(len(at))  # after its step, past the earlier additions
    total = n + len(at)
    dep = np.full(total, -1, dtype=_index_type(total))
    dur = np.empty(total)
    slot = np.empty(total, dtype=_index_type(total))
    dep[new_of_old] = np.where(step_dep >= 0, new_of_old[step_dep], -1)
    dur[new_of_old] = step_dur
    dur[added] = times
    slot[new_of_old] = step_slot
    slot[added] = step_slot[at]
    return dep, dur, slot, new_of_old[main]


def _latencies(costs: Costs, step_dep: np.ndarray, step_device: np.ndarray) -> np.ndarray:
    """Per step, the latency its dependents wait after it ends: ``p2p`` (one number for all), or
    with ``link_p2p`` the slowest link from its device to a dependent's (a step's dependents sit on
    one other device, except an overlapped pair's, whose two actions may send two ways)."""
    if not costs.link_p2p:
        return np.full(1, float(costs.p2p))  # one for every step, not a column
    link = np.asarray(costs.link_p2p, dtype=float)
    has = step_dep >= 0
    producer = step_dep[has]
    latency = np.zeros(len(step_dep))
    np.maximum.at(latency, producer, link[step_device[producer], step_device[has]])
    return latency


def _deadlock(stuck, step_slot, step_dep, first, second, stage, mb, kind, slot_device):
    """Name each stuck device's action and what it waits for (``step_slot`` None: each action is its
    own step and slot)."""

    def slot_label(i: int) -> str:
        a = i if first is None else first[i]
        text = _label(stage[a], mb[a], kind[a])
        if second is not None and second[i] >= 0:
            b = second[i]
            text = f"({text};{_label(stage[b], mb[b], kind[b])})"
        return text

    lines = []
    for d, i in stuck:
        slot, on = (i, step_dep[i]) if step_slot is None else (step_slot[i], step_slot[step_dep[i]])
        step = slot - int(np.searchsorted(slot_device, d))
        lines.append(
            f"device {d} is stuck at step {step} ({slot_label(slot)}), waiting for {slot_label(on)} "
            f"on device {slot_device[on]}"
        )
    raise DeadlockError("deadlock: the order cannot run; " + "; ".join(lines))


def dependencies(result: Result) -> np.ndarray:
    """For each action of ``result``, the index of the action it waits for (-1: none), by the
    simulator's own rule, so exports draw exactly the dependencies that timed the run."""
    s = result.schedule
    key = (result.kind.astype(np.int64) * s.stages + result.stage) * s.microbatches + result.microbatch
    pos = np.full(len(KINDS) * s.stages * s.microbatches, -1, dtype=_index_type(len(key)))
    pos[key] = np.arange(len(key))
    return _dependency_table(pos.reshape(len(KINDS), s.stages, s.microbatches)).ravel()[key]
