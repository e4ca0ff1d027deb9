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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from itertools import chain

import numpy as np

from . import eventpass
from .costs import Costs
from .errors import InputError
from .ir import KIND_INDEX, KINDS, Action, Kind, Overlap, Schedule, iterations

_F, _B, _W, _BW = (KIND_INDEX[k] for k in (Kind.F, Kind.B, Kind.W, Kind.BW))


class ScheduleError(InputError):
    """The order is not a valid schedule (missing, duplicate or misplaced actions)."""


class DeadlockError(ScheduleError):
    """The order cannot run: some device waits forever."""


@dataclass(frozen=True, eq=False)
class Result:
    """A timed schedule, as columns: one row per action in device order.

    The two actions of an overlapped pair share a slot, so they have the same start and end.
    """

    schedule: Schedule
    costs: Costs
    device: np.ndarray
    stage: np.ndarray
    microbatch: np.ndarray
    kind: np.ndarray  # index into ir.KINDS
    slot: np.ndarray  # slot of each action; a pair's two actions share one
    start: np.ndarray
    end: np.ndarray
    slot_device: np.ndarray
    slot_start: np.ndarray
    slot_end: np.ndarray

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

    A schedule of plain actions is transposed at C speed in one go; otherwise each row of
    plain actions is, and rows with pairs or idle slots take the per-step path.
    """
    lengths = [len(steps) for steps in schedule.order]
    fast = _fast_rows(list(chain.from_iterable(schedule.order)))
    if fast is not None:
        stage, mb, kind = fast
        dev = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        slot = np.arange(len(stage), dtype=np.int64)
        return dev, stage, mb, kind, slot, dev
    cols: list[tuple[np.ndarray, ...]] = []
    n = 0
    for d, steps in enumerate(schedule.order):
        fast = _fast_rows(steps)
        if fast is not None:
            stage, mb, kind = fast
            slot = np.arange(len(steps), dtype=np.int64)
        else:
            stage, mb, kind, slot = _slow_row(steps)
        cols.append((np.full(len(stage), d, dtype=np.int64), stage, mb, kind, slot + n))
        n += int(slot[-1]) + 1 if len(slot) else 0
    dev, stage, mb, kind, slot = (np.concatenate(c) for c in zip(*cols))
    slot_device = np.empty(n, dtype=np.int64)
    slot_device[slot] = dev
    return dev, stage, mb, kind, slot, slot_device


_KIND_BY_ID = {id(k): i for k, i in KIND_INDEX.items()}


def _fast_rows(steps):
    """(stage, microbatch, kind) columns of a sequence of plain Actions; None if it holds others."""
    try:
        flat = list(chain.from_iterable(steps))
    except TypeError:  # an idle slot (None)
        return None
    if len(flat) != 3 * len(steps):
        return None
    st, mb, kd = flat[0::3], flat[1::3], flat[2::3]
    ids = np.fromiter(map(id, kd), dtype=np.int64, count=len(kd))
    kind = np.full(len(kd), -1, dtype=np.int64)
    for k_id, i in _KIND_BY_ID.items():
        kind[ids == k_id] = i
    if (kind < 0).any():
        return None
    stage, micro = np.array(st), np.array(mb)  # dtype inferred, so 1.5 is not read as 1
    if stage.dtype != np.int64 or micro.dtype != np.int64:
        return None
    return stage, micro, kind


_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


def _slow_row(steps):
    """Per-step path: pairs, idle slots, plain tuples and kind strings."""
    stage, mb, kind, slot = [], [], [], []
    n = 0
    for step in steps:
        if step is None:
            continue
        actions = step if isinstance(step, Overlap) else (step,)
        for a in actions:
            try:
                s, m, k = a
                k = KIND_INDEX[Kind(k)]
            except (TypeError, ValueError):
                raise ScheduleError(f"cannot read step {step!r}: expected (stage, microbatch, kind)") from None
            if not (isinstance(s, (int, np.integer)) and isinstance(m, (int, np.integer))):
                raise ScheduleError(f"step {step!r} needs whole-number stage and microbatch")
            if not (_INT64_MIN <= s <= _INT64_MAX and _INT64_MIN <= m <= _INT64_MAX):
                raise ScheduleError(f"step {step!r} names a stage or microbatch far out of range")
            stage.append(s)
            mb.append(m)
            kind.append(k)
            slot.append(n)
        n += 1
    return tuple(np.array(x, dtype=np.int64) for x in (stage, mb, kind, slot))


def _label(stage: int, mb: int, kind: int) -> str:
    return str(Action(stage, mb, KINDS[kind]))


def validate(schedule: Schedule) -> None:
    """Raise ScheduleError unless every action appears once, on the device holding its stage."""
    _prepare(schedule)


def _prepare(schedule: Schedule):
    """Validate and build the key → action index table used for dependencies."""
    S, M, P = schedule.stages, schedule.microbatches, schedule.devices
    if len(schedule.order) != P:
        raise ScheduleError(f"the order has {len(schedule.order)} device rows but the placement has {P} devices")
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
    directions = _directions(schedule)
    placement = np.array(schedule.placement.devices_of, dtype=np.int64)
    home = placement[directions[mb], stage]
    bad = np.flatnonzero(home != dev)
    if len(bad):
        i = bad[0]
        raise ScheduleError(
            f"{_label(stage[i], mb[i], kind[i])} is on device {dev[i]}, but stage {stage[i]} "
            f"of microbatch {mb[i]} belongs on device {home[i]}"
        )
    key = (kind * S + stage) * M + mb
    seen = np.bincount(key, minlength=len(KINDS) * S * M).reshape(len(KINDS), S, M)
    if seen.max(initial=0) > 1:
        k, s, m = np.argwhere(seen > 1)[0]
        raise ScheduleError(f"action {_label(s, m, k)} appears {seen[k, s, m]} times; each must appear once")
    problems = [
        (seen[_F] == 0, "forward {} never runs"),
        ((seen[_B] + seen[_BW]) == 0, "backward of {} never runs (need B and W, or BW)"),
        ((seen[_B] == 1) & (seen[_BW] == 1), "{} has both a split backward (B) and a full one (BW)"),
        ((seen[_B] == 1) & (seen[_W] == 0), "{} has B but no W"),
        ((seen[_W] == 1) & (seen[_B] == 0), "{} has W but no B"),
    ]
    for mask, text in problems:
        if mask.any():
            s, m = np.argwhere(mask)[0]
            raise ScheduleError(text.format(f"stage {s} microbatch {m}"))
    pos = np.full(len(KINDS) * S * M, -1, dtype=np.int64)
    pos[key] = np.arange(len(key))
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
    """Validate the order and compute exact start and end times of every action."""
    costs = costs or Costs()
    S = schedule.stages
    dev, stage, mb, kind, slot, slot_device, key, pos = _prepare(schedule)
    dep_act = _dependency_table(pos.reshape(len(KINDS), S, schedule.microbatches)).ravel()[key]
    act_dur = costs.durations(S, schedule.devices)[kind, stage]
    plain = len(slot_device) == len(slot)  # no overlapped pairs: each action is its own step
    if plain:
        step_dep, step_dur, first, second, main = _plain_steps(dep_act, act_dur, dev)
        step_slot = main
    else:
        step_dep, step_dur, step_slot, first, second, main = _paired_steps(dep_act, act_dur, slot, slot_device, costs)
    if any(costs.optimizer_step):
        after = step_slots(schedule, dev, mb, kind, slot)
        if (after >= 0).any():
            plain = False
            step_dep, step_dur, step_slot, main = _with_optimizer_steps(
                step_dep, step_dur, step_slot, main, after, costs.optimizer_step
            )
    bounds = np.searchsorted(slot_device[step_slot], np.arange(schedule.devices + 1))

    latency = _latencies(costs, step_dep, slot_device[step_slot])
    start, stopped = eventpass.run(bounds, step_dep, latency, step_dur)
    stuck = [(d, int(stopped[d])) for d in np.flatnonzero(stopped < bounds[1:]).tolist()]
    if stuck:
        _deadlock(stuck, step_slot, step_dep, first, second, stage, mb, kind, slot_device)
    slot_start = start if plain else start[main]
    slot_end = slot_start + step_dur[main]  # the same float sum as in the pass, so exact
    start, end = (slot_start, slot_end) if plain else (slot_start[slot], slot_end[slot])
    return Result(schedule, costs, dev, stage, mb, kind, slot, start, end, slot_device, slot_start, slot_end)


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
    """``dep`` with dependencies earlier on the same device dropped (the device's order implies
    them). All that remain cross devices, or deadlock, so each carries the p2p latency."""
    here = np.arange(len(dep))
    implied = (dep >= 0) & (dep < here) & (device[dep] == device)
    return np.where(implied, -1, dep)


def _plain_steps(dep_act, act_dur, dev):
    """Steps of an order without pairs: each action is its own step."""
    n = len(dep_act)
    main = np.arange(n)
    return _cross_device(dep_act, dev), act_dur, main, np.full(n, -1), main


def _paired_steps(dep_act, act_dur, slot, slot_device, costs: Costs):
    """Steps of an order with pairs: a pair has two actions, hence up to two dependencies and a
    summed duration, so it gets a zero-time barrier step before it that waits for its second
    dependency, and the event pass handles one dependency per step."""
    n_slots = len(slot_device)
    dep_slot = np.where(dep_act >= 0, slot[dep_act], -1)
    slot_dur = np.bincount(slot, weights=act_dur, minlength=n_slots)
    size = np.bincount(slot, minlength=n_slots)
    slot_dur = np.where(size > 1, slot_dur * costs.overlap, slot_dur)
    first = np.full(n_slots, -1, dtype=np.int64)
    first[slot[::-1]] = np.arange(len(slot))[::-1]
    second = np.where(size > 1, first + 1, -1)
    dep1 = _cross_device(dep_slot[first], slot_device)
    dep2 = _cross_device(np.where(second >= 0, dep_slot[second], -1), slot_device)
    slots = np.arange(n_slots)
    pair = second >= 0
    main = slots + np.cumsum(pair)  # step index of each slot
    barrier = main[pair] - 1
    n_steps = n_slots + int(pair.sum())
    step_dep = np.full(n_steps, -1, dtype=np.int64)
    step_dur = np.zeros(n_steps)
    step_slot = np.empty(n_steps, dtype=np.int64)
    step_dep[main] = np.where(dep1 >= 0, main[dep1], -1)
    step_dur[main] = slot_dur
    step_slot[main] = slots
    step_dep[barrier] = np.where(dep2[pair] >= 0, main[dep2[pair]], -1)
    step_slot[barrier] = slots[pair]
    return step_dep, step_dur, step_slot, first, second, main


def _with_optimizer_steps(step_dep, step_dur, step_slot, main, after, times):
    """The steps with one more after each slot named in ``after`` ([iteration, device] → slot, −1:
    none): no dependency, the device's ``times`` entry as its duration. Indices are renumbered."""
    it, dev = np.nonzero(after >= 0)
    at = main[after[it, dev]]  # the step each follows
    order = np.argsort(at, kind="stable")
    at, dev = at[order], dev[order]
    n = len(step_dep)
    new_of_old = np.arange(n) + np.searchsorted(at, np.arange(n), side="left")
    added = at + 1 + np.arange(len(at))  # after its step, past the earlier additions
    total = n + len(at)
    dep = np.full(total, -1, dtype=np.int64)
    dur = np.empty(total)
    slot = np.empty(total, dtype=np.int64)
    dep[new_of_old] = np.where(step_dep >= 0, new_of_old[step_dep], -1)
    dur[new_of_old] = step_dur
    dur[added] = np.asarray(times, dtype=float)[dev]
    slot[new_of_old] = step_slot
    slot[added] = step_slot[at]
    return dep, dur, slot, new_of_old[main]


def _latencies(costs: Costs, step_dep: np.ndarray, step_device: np.ndarray) -> np.ndarray:
    """Per step, the latency its dependents wait after it ends: ``p2p``, or with ``link_p2p`` the
    slowest link from its device to a dependent's (a step's dependents sit on one other device,
    except an overlapped pair's, whose two actions may send two ways)."""
    if not costs.link_p2p:
        return np.full(len(step_dep), float(costs.p2p))
    link = np.asarray(costs.link_p2p, dtype=float)
    has = step_dep >= 0
    producer = step_dep[has]
    latency = np.zeros(len(step_dep))
    np.maximum.at(latency, producer, link[step_device[producer], step_device[has]])
    return latency


def _deadlock(stuck, step_slot, step_dep, first, second, stage, mb, kind, slot_device):
    """Name each stuck device's action and what it waits for."""

    def slot_label(i: int) -> str:
        a = first[i]
        text = _label(stage[a], mb[a], kind[a])
        if second[i] >= 0:
            b = second[i]
            text = f"({text};{_label(stage[b], mb[b], kind[b])})"
        return text

    lines = []
    for d, i in stuck:
        slot = step_slot[i]
        on = step_slot[step_dep[i]]
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
    key = (result.kind * s.stages + result.stage) * s.microbatches + result.microbatch
    pos = np.full(len(KINDS) * s.stages * s.microbatches, -1, dtype=np.int64)
    pos[key] = np.arange(len(key))
    return _dependency_table(pos.reshape(len(KINDS), s.stages, s.microbatches)).ravel()[key]
