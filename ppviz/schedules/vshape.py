"""V-shape schedules: device d holds stage d and stage 2p−1−d, so the V's turn stays on device p−1.

ZB-V is the zero-bubble authors' handcrafted order (identical to PyTorch's
``ScheduleZBVZeroBubble``). V-Min, V-Half and V-ZB follow "Pipeline Parallelism with Controllable
Memory" (Qi et al., NeurIPS 2024): one microbatch's building block of six ops per device
(F, f, B, b, W, w; lower case = the second chunk) is repeated every six slots. How far apart the
block's ops sit sets its lifetime, hence the peak memory; warm-up and cool-down are then repaired
without raising the peak. Each V chunk is half a device share, so its ops take f/2, b/2, w/2 and
its forward adds 1/2 activation unit.

V-Min, V-Half, V-ZB and v-auto are one search at a memory limit (V-Min's, V-Half's and V-ZB's
block peaks, or ``max_memory``): the authors' family of blocks with their warm-up and cool-down
rules (``vfamily.py``), ppviz's own blocks below, and greedy re-timings under the real op times.
"""

from __future__ import annotations

import math

import numpy as np

from ..costs import Costs
from ..errors import InputError
from ..ir import KIND_INDEX, B, Columns, F, Kind, Placement, Row, Schedule, W, stack_rows
from ..simulator import ScheduleError
from . import vfamily, vtiming
from .greedy import order_peak, repairs, score
from .registry import Param, Spec, register

PERIOD = 6  # slots per microbatch per device: F, f, B, b, W, w


def zb_v_row(p: int, m: int, r: int) -> Row:
    """ZB-V on device r, built for n = max(2p−1, m) microbatches, then cut to m: the first
    chunk's (stage r) 2(p−r)−1 forwards; r of (second chunk's F, first chunk's F); p−r of the
    second chunk's (F, B, W); then n−p steady groups (first chunk's F while any are left, B, W,
    then the second chunk's F, B, W); r of (first chunk's B, second's B); p−r of the first chunk's
    (B, W); the W left over, the second chunk's first. Group by group as columns."""
    n = max(2 * p - 1, m)
    lo, hi = r, 2 * p - 1 - r
    with_f = n - (2 * p - 1 - r)  # steady groups that still have a first-chunk forward
    row = _groups(
        ([(lo, F, 0)], 2 * (p - r) - 1),
        ([(hi, F, 0), (lo, F, 2 * (p - r) - 1)], r),
        ([(hi, F, r), (hi, B, 0), (hi, W, 0)], p - r),
        ([(lo, F, 2 * p - 1 - r), (lo, B, 0), (lo, W, 0), (hi, F, p), (hi, B, p - r), (hi, W, p - r)], with_f),
        (
            [(lo, B, with_f), (lo, W, with_f), (hi, F, p + with_f), (hi, B, p - r + with_f), (hi, W, p - r + with_f)],
            n - p - with_f,
        ),
        ([(lo, B, n - p), (hi, B, n - r)], r),
        ([(lo, B, n - p + r), (lo, W, n - p)], p - r),
        ([(hi, W, n - r)], r),
        ([(lo, W, n - r)], r),
    )
    return row.take(np.flatnonzero(row.microbatch < m))


def _groups(*parts: tuple[list[tuple[int, Kind, int]], int]) -> Row:
    """Rows of ``count`` repeats of a group of (stage, kind, first microbatch) ops, one after the
    other; each repeat takes every op's next microbatch."""
    kinds, stages, microbatches = [], [], []
    for ops, count in parts:
        stage, kind, first = zip(*ops)
        kinds.append(np.tile([KIND_INDEX[k] for k in kind], count))
        stages.append(np.tile(stage, count))
        microbatches.append(np.repeat(np.arange(count), len(ops)) + np.tile(first, count))
    return Row(np.concatenate(kinds).astype(np.int8), np.concatenate(stages), np.concatenate(microbatches))


def zb_v(p: int, m: int) -> Schedule:
    return Schedule(Placement.vshape(p), m, stack_rows((zb_v_row(p, m, r) for r in range(p)), 2 * p, m))


def _zb_v_makespan(p: int, m: int, c) -> float | None:
    """With f = b = w and m ≥ 2p each device is busy from its first start (span m(f+b+w));
    device r starts at r·f/2 and device p−1 ends last."""
    if m < 2 * p or not c.f == c.b == c.w:
        return None
    return m * (c.f + c.b + c.w) + (p - 1) * c.f / 2


# --- the repeating-pattern method -----------------------------------------------------------

Block = list[dict[tuple[int, Kind], int]]  # per device: (stage, kind) -> slot of microbatch 0


def v_block(p: int, stretch: int) -> Block | None:
    """The building block: slot of each of microbatch 0's ops, per device; None if none fits.

    Ops going down the devices (the first chunk's forward, the second chunk's backward) move
    ``stretch`` slots per device, ops going up move one. Stretch 1 is V-Min (F at i, f at 2p−1−i,
    B at 2p+δ+i, b at 4p+δ−1−i), stretch 2 is V-Half (F at 2i, f at 3p−2−i, B at 3p+δ+2i−1,
    b at 6p+δ−2−i). δ, the smallest pause before the backward that gives every device's four
    ops distinct slots mod 6, is 2 for V-Min when 3 | p and 3 for V-Half when p is even. Each W
    takes the first free slot after its B. The block's lifetime sets the peak: about
    (stretch+1)·p/6 activation units.
    """
    turn = stretch * (p - 1) + 1 + (p - 1)  # slot of f on device 0
    for delta in range(PERIOD):
        down_b = turn + 1 + delta  # second chunk's backward on device 0
        up_b = down_b + stretch * (p - 1) + stretch + (p - 1)  # first chunk's backward on device 0
        block = []
        for i in range(p):
            first, second = i, 2 * p - 1 - i
            slots = {(first, F): stretch * i, (second, F): turn - i, (second, B): down_b + stretch * i}
            slots[first, B] = up_b - i
            taken = {t % PERIOD for t in slots.values()}
            if len(taken) < 4:
                break
            for stage in (second, first):
                t = slots[stage, B] + 1
                while t % PERIOD in taken:
                    t += 1
                taken.add(t % PERIOD)
                slots[stage, W] = t
            block.append(slots)
        else:
            return block
    return None


def repeat_block(p: int, m: int, block: Block) -> Columns:
    """Microbatch k's block shifted by 6k, read per device in slot order (the squeezed pattern).
    A device's six ops sit in distinct slots mod 6, so no two of its ops share a slot."""
    k = np.arange(m)
    rows = []
    for slots in block:
        ops = list(slots.items())
        at = np.concatenate([t + PERIOD * k for _, t in ops])
        row = Row(np.repeat([KIND_INDEX[kind] for (_, kind), _ in ops], m), np.repeat([s for (s, _), _ in ops], m),
                  np.tile(k, len(ops)))  # fmt: skip
        rows.append(row.take(np.argsort(at, kind="stable")))
    return stack_rows(rows, 2 * p, m)


FAMILY_WORK = 80_000  # blocks built per search × p × max(m, 2p): 19 blocks at 32 × 128, 26 at 32 × 96
# p × m up to which the greedy time-aware repairs run too (about 0.45 s each at 32 × 128), and the
# half share below the limit is searched too, with a quarter of the work: at 32 × 128 under b = 2f
# the repairs make v-auto 1,563 at limit 13 where the authors' search gives 1,683 and the family's
# best order that runs 1,685 (bench_vshape --authors --every), and without the share below, 1,653
# at 12.5 against 1,632 at 12. v-auto at 32 × 128 takes 1.4-3.0 s of CPU (0.6-0.8 s without either).
REPAIR_SIZE = 4_096


def controlled(p: int, m: int, references: list[Columns], limit: float | None, costs: Costs | None):
    """The least-bubble V schedule within ``limit`` (default: the largest reference's own peak).

    Candidates: the authors' family under that limit (``vfamily.search``: their blocks, warm-up
    and cool-down rules, the likely best under these op times built first, orders with a W ahead
    of its B repaired two ways) and ppviz's own reference orders that fit; the best of each, and
    for sizes up to ``REPAIR_SIZE`` their greedy re-timings under the real op times (W deferred
    while anything else is ready). Every candidate is timed exactly (``vtiming``, which times
    them as the simulator does, at numpy speed) and the best of each kind simulated; the
    shortest longest span wins, so the result is never longer than the authors' choice among
    the blocks built.

    Up to ``REPAIR_SIZE``, all this is done at the half share below the limit too (memory comes
    in half shares): a re-timing under a higher limit runs forwards earlier and can end later
    (V-Half's, re-timed at p = 16, m = 64, b = 2f: 604 at 9 shares, 610 at 9.5), and more
    memory should never be slower.
    """
    costs = costs or Costs()
    placement = Placement.vshape(p)
    own = [order_peak(ref, 0.5) for ref in references]
    cap = max(own) if limit is None else limit
    times, lag = _letter_times(p, costs)
    top = math.floor(2 * cap + 1e-9) / 2
    if not any(peak <= top + 1e-9 for peak in own) and vfamily.lowest_peak(p) > top:
        need = min([*own, vfamily.lowest_peak(p)])
        raise ValueError(f"no V schedule fits in max_memory {cap:g}: raise it to at least {need:g}")
    small = p * m <= REPAIR_SIZE
    scored = []
    for at, work in ((top, FAMILY_WORK), (top - 0.5, FAMILY_WORK // 4))[: 2 if small else 1]:
        fits = [vfamily.to_letters(ref) for ref, peak in zip(references, own) if peak <= at + 1e-9]
        found = vfamily.search(p, m, at, work, times, lag)
        best = [s for s in (_best(placement, m, group, at, costs, times, lag) for group in (fits, found)) if s]
        if small:
            repaired = [r for _, schedule in best for r in repairs(placement, m, schedule.columns, at, costs)]
            best += [s for s in (score(placement, m, order, at, costs) for order in repaired) if s is not None]
        scored += best
    if not scored:
        raise ValueError(f"no V schedule fits in max_memory {cap:g}: raise it")
    return min(scored, key=lambda s: s[0])[1]


def _best(placement: Placement, m: int, group: list[list[str]], cap: float, costs: Costs, times, lag):
    """``score`` of the best letter rows of ``group``: all timed by ``vtiming`` (as the
    simulator times them), then simulated from the shortest on until one runs within ``cap``."""
    timed = vtiming.spans(group, times, lag)
    keyed = [(t, vfamily.peak(rows), k) for k, (rows, t) in enumerate(zip(group, timed)) if t is not None]
    for *_, k in sorted(keyed):
        scored = _score(placement, m, vfamily.to_columns(group[k]), cap, costs)
        if scored is not None:
            return scored
    return None


def _letter_times(p: int, costs: Costs):
    """Op times and input latencies per (device, letter F f B b W w), as ``vfamily`` reads them."""
    kind_stage = np.empty((p, 6, 2), dtype=np.int64)  # (kind row of durations, stage) per letter
    dev = np.arange(p)
    low, high = dev, 2 * p - 1 - dev
    for letter, (kind, stage) in enumerate(((0, low), (0, high), (1, high), (1, low), (2, high), (2, low))):
        kind_stage[:, letter, 0], kind_stage[:, letter, 1] = kind, stage
    times = costs.durations(2 * p, p)[kind_stage[..., 0], kind_stage[..., 1]]
    src = np.stack([dev - 1, dev + 1, dev - 1, dev + 1, dev, dev], axis=1).clip(0, p - 1)
    if any(any(row) for row in costs.link_p2p):
        links = np.asarray(costs.link_p2p, dtype=float)
        lag = links[src, dev[:, None]]
    else:
        lag = np.full((p, 6), float(costs.p2p))
    return times, lag


def _score(placement: Placement, m: int, order: Columns, cap: float, costs: Costs):
    """``score``, or None for an order that cannot run (a repaired family order whose pulled B
    waits on an op queued behind it)."""
    try:
        return score(placement, m, order, cap, costs)
    except ScheduleError:
        return None


def _stretch_reference(p: int, m: int, stretch: int) -> Columns:
    block = v_block(p, stretch)
    if block is None:  # stretch 1 and 2 always fit; kept as a guard for other stretches
        raise ValueError(f"no building block with stretch {stretch} fits {p} devices")
    return repeat_block(p, m, block)


def v_min(p: int, m: int, costs: Costs | None = None) -> Schedule:
    """The best V schedule within V-Min's memory (its block's peak, (p+4)//3)."""
    return controlled(p, m, [_stretch_reference(p, m, 1)], None, costs)


def v_half(p: int, m: int, costs: Costs | None = None) -> Schedule:
    """The best V schedule within V-Half's memory (its block's peak, (p+2)//2)."""
    return controlled(p, m, [_stretch_reference(p, m, 2)], None, costs)


def v_zb(p: int, m: int, costs: Costs | None = None) -> Schedule:
    """The best V schedule within V-ZB's memory p; ZB-V's handcrafted order is its reference."""
    return controlled(p, m, [zb_v(p, m).columns], None, costs)


def v_auto(p: int, m: int, max_memory: float | None = None, costs: Costs | None = None) -> Schedule:
    """The best V schedule within ``max_memory`` (default p): the authors' family under that
    limit, and ppviz's own blocks (stretch 1, 2, 3 and ZB-V's) where they fit."""
    limit = p if max_memory is None else max_memory
    refs = [repeat_block(p, m, b) for b in (v_block(p, s) for s in (1, 2, 3)) if b is not None]
    return controlled(p, m, [*refs, zb_v(p, m).columns], limit, costs)


def _check_auto(p: int, m: int, max_memory: float | None) -> None:
    if max_memory is not None and max_memory < 0.5:
        raise InputError(
            field="max_memory", message=f"v-auto needs max_memory ≥ 0.5 (one V chunk) (got {max_memory:g})"
        )


register(
    Spec(
        name="zb-v",
        description="ZB-V: V placement with split backward; zero bubble on the span at 1F1B's memory.",
        reference="Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024 (ZB-V); PyTorch ScheduleZBVZeroBubble",
        build=zb_v,
        chunks=2,
        split_backward=True,
        formula=_zb_v_makespan,
        formula_text="m(f+b+w) + (p−1)f/2, f = b = w, m ≥ 2p (span m(f+b+w))",
        memory_text="≤ p",
    )
)

_PATTERN_REF = "Qi et al., Pipeline Parallelism with Controllable Memory, NeurIPS 2024"
register(
    Spec(
        name="v-min",
        description="V-Min: least-bubble V schedule at the least memory of the block family, about a third of 1F1B's.",
        reference=_PATTERN_REF,
        build=v_min,
        chunks=2,
        split_backward=True,
        uses_costs=True,
        formula_text="searched; never longer than the authors' search at this memory",
        memory_text="(p+4)//3",
    )
)
register(
    Spec(
        name="v-half",
        description="V-Half: least-bubble V schedule at half of 1F1B's memory (V-Half's block peak).",
        reference=_PATTERN_REF,
        build=v_half,
        chunks=2,
        split_backward=True,
        uses_costs=True,
        formula_text="searched; never longer than the authors' search at this memory",
        memory_text="(p+2)//2",
    )
)
register(
    Spec(
        name="v-zb",
        description="V-ZB: least-bubble V schedule at 1F1B's memory p; zero span bubble if f = b = w.",
        reference=_PATTERN_REF,
        build=v_zb,
        chunks=2,
        split_backward=True,
        uses_costs=True,
        formula_text="span m(f+b+w) when f = b = w, m ≥ 2p; searched",
        memory_text="p",
    )
)
register(
    Spec(
        name="v-auto",
        description="V schedule with the least bubble under a memory limit (controllable memory).",
        reference=_PATTERN_REF,
        build=v_auto,
        params=(Param("max_memory", float, None, 0.5, None, "activation limit per device (default p)"),),
        check=_check_auto,
        chunks=2,
        split_backward=True,
        uses_costs=True,
        formula_text="searched; never longer than the authors' search at max_memory",
        memory_text="≤ max_memory",
    )
)
