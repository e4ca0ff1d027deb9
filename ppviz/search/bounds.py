"""Lower bounds on a layout's iteration time and peak memory, without simulating it.

A bound must never exceed what ``ppviz.estimate`` reports, or the search could skip a layout that
belongs in the top k. Each one below holds for every order the simulator accepts:

- time: a device runs its ops one after another. Its first op is a forward, which waits for the
  forwards of every earlier stage of that microbatch (plus p2p per device change); its own ops
  take ``busy`` (each op's exact stage time, as the simulator charges it); and when the schedule
  has no separate W, its last op is a full backward whose gradient still has to flow through the
  earlier stages. So makespan ≥ max over devices of first-start + busy + tail. The iteration adds
  the optimizer step (computed by the estimate layer itself) and a DP sync that is ≥ 0.
- memory: static bytes come from the estimate layer's own code (they need the placement, not a
  simulation). Activation memory on a device changes only at its own ops, which run in order
  (a forward adds at its start, a backward frees at its end, frees first at equal times), so its
  peak is the same for every timing of that order: it is computed from the order alone. A schedule
  that searches its order under the op times (v-*, zb-auto) is not built until it is simulated; for
  it the bound is static bytes plus the activation of every stage the device holds for one
  microbatch (all of them are held when it starts the forward of the last one).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..ir import KIND_INDEX, Kind, Placement, Schedule
from ..simulator import _flatten

_F, _B, _W, _BW = (KIND_INDEX[k] for k in (Kind.F, Kind.B, Kind.W, Kind.BW))
SAFETY = 1e-9  # relative slack when comparing a computed peak with a capacity (float summation order)


@dataclass(frozen=True, eq=False)
class Order:
    """What the bounds need from a schedule: its placement, how many microbatches each direction
    carries, and (when the order is known) its action columns for the activation curve."""

    placement: Placement
    microbatches: int
    directions: tuple[int, ...] | None
    param_versions: int
    schedule: Schedule | None  # None: the order is searched at simulation time (v-*, zb-auto)
    split_backward: bool

    @property
    def devices(self) -> int:
        return self.placement.devices

    @property
    def stages(self) -> int:
        return self.placement.stages

    @cached_property
    def used(self) -> tuple[int, ...]:
        """Directions that carry microbatches, with their counts."""
        if self.directions is None:
            return (self.microbatches,) + (0,) * (len(self.placement.devices_of) - 1)
        return tuple(np.bincount(self.directions, minlength=len(self.placement.devices_of)).tolist())

    @cached_property
    def _columns(self):
        return columns(self.schedule)

    @cached_property
    def crossings(self) -> np.ndarray:
        """[direction, stage]: device changes a microbatch of that direction makes before stage s."""
        rows = np.array(self.placement.devices_of)
        change = np.concatenate([np.zeros((len(rows), 1)), (rows[:, 1:] != rows[:, :-1]).astype(float)], axis=1)
        return np.cumsum(change, axis=1)

    @cached_property
    def held_mask(self) -> np.ndarray:
        """[direction, stage, device]: the device holds that stage for a direction that carries microbatches."""
        rows = self.placement.devices_of
        out = np.zeros((len(rows), self.stages, self.devices), bool)
        for r, row in enumerate(rows):
            if self.used[r]:
                out[r, np.arange(self.stages), row] = True
        return out

    @cached_property
    def paired(self) -> bool:
        """Whether some slot runs two actions (an overlapped pair); unknown orders count as paired."""
        if self.schedule is None:
            return True
        stage, _, _, slot_device = self._columns
        return len(slot_device) < len(stage)

    def slot_ceiling_s(self, f: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Per device: no slot lasts longer than this (the longest action it holds, twice with pairs)."""
        longest = np.maximum(f, b + w)
        held = self.held_mask.any(axis=0)  # [stage, device]
        return np.where(held, longest[:, None], 0.0).max(axis=0) * (2.0 if self.paired else 1.0)

    @cached_property
    def _held_flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every (direction, stage, device) held for a used direction, flat: the stage, the device
        changes before it, the device; and [device, stage] microbatch counts (what busy sums)."""
        r, s, d = np.nonzero(self.held_mask)
        counts = np.einsum("rsd,r->ds", self.held_mask, np.asarray(self.used, float))
        return s, self.crossings[r, s], d, counts

    def makespan_floor_s(self, f: np.ndarray, b: np.ndarray, w: np.ndarray, p2p_s: float) -> float:
        """A lower bound on the simulated makespan under exact per-stage times f, b, w (seconds)."""
        # every microbatch of a direction runs F and B + W (or BW, which takes b + w) of each stage once,
        # on the device holding it (the simulator checks this), and a pair takes the sum of its two ops
        s, crossings, d, counts = self._held_flat
        busy = counts @ (f + b + w)
        # a device's first op waits for the forwards of the earlier stages of its microbatch (and p2p per device
        # change); without a separate W its last op is a full backward whose gradient still flows back
        first = np.full(self.devices, np.inf)
        np.minimum.at(first, d, np.concatenate([[0.0], np.cumsum(f)[:-1]])[s] + p2p_s * crossings)
        tail = np.zeros(self.devices)
        if not self.split_backward:
            tail[:] = np.inf
            np.minimum.at(tail, d, np.concatenate([[0.0], np.cumsum(b + w)[:-1]])[s] + p2p_s * crossings)
        return float(np.max(np.where(np.isfinite(first), first, 0.0) + busy + np.where(np.isfinite(tail), tail, 0.0)))

    def activation_peak(self, stage_bytes: np.ndarray, b_frees: float = 0.0) -> tuple[np.ndarray, bool]:
        """Per device: the peak activation bytes, and whether it is exact (the order is known) or a
        lower bound (the stages the device holds, one microbatch each)."""
        if self.schedule is None:
            # when a device starts the forward of the last stage it holds for a microbatch, the activations of
            # its earlier stages for that microbatch are still held: each is freed by a backward (or W) that
            # comes after that stage's backward, which comes after this forward
            return np.einsum("rsd,s->rd", self.held_mask, stage_bytes).max(axis=0), False
        stage, kind, slot, slot_device = self._columns
        size = stage_bytes[stage]
        add = np.where(kind == _F, size, 0.0)
        free = np.select([kind == _BW, kind == _B, kind == _W], [size, b_frees * size, (1 - b_frees) * size], 0.0)
        n = len(slot_device)
        adds = np.bincount(slot, add, minlength=n)
        frees = np.bincount(slot, free, minlength=n)
        level_after = np.cumsum(adds - frees)
        # per device the running level restarts at 0: subtract the level at the end of the previous device
        bounds = np.searchsorted(slot_device, np.arange(self.devices + 1))
        base = np.concatenate([[0.0], level_after])[bounds[:-1]]
        before = np.concatenate([[0.0], level_after[:-1]]) - np.repeat(base, np.diff(bounds))
        at_peak = before + adds
        peak = np.zeros(self.devices)
        np.maximum.at(peak, slot_device, at_peak)
        return peak, True


def columns(schedule: Schedule) -> tuple[np.ndarray, ...]:
    """(stage, kind, slot) of every action in device order and the device of every slot, as the
    simulator numbers them (an idle step is no slot, an overlapped pair is two actions in one slot),
    read from the schedule's columns, for the activation curve (int64, for index arithmetic)."""
    _, stage, _, kind, slot, slot_device = _flatten(schedule)
    return tuple(c.astype(np.int64) for c in (stage, kind, slot, slot_device))


def order_of(schedule: Schedule, split_backward: bool) -> Order:
    return Order(schedule.placement, schedule.microbatches, schedule.directions, schedule.param_versions, schedule,
                 split_backward)  # fmt: skip


def unbuilt_order(placement: Placement, microbatches: int, split_backward: bool, param_versions: int = 1) -> Order:
    """A schedule known only by its placement (one direction carrying every microbatch)."""
    return Order(placement, microbatches, None, param_versions, None, split_backward)
