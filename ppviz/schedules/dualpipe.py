"""DualPipe, DualPipeV and 1F1B with overlapped forward-and-backward pairs.

DualPipe (DeepSeek-V3 report; deepseek-ai/DualPipe) feeds half the microbatches in at each end of
the pipeline, so device d holds stage d of the down pipe and stage p−1−d of the up pipe. DualPipeV
folds the same order onto a V placement (2p stages on p devices). One generator serves both: a
device's "chunk 0" is the stage it meets early in a pipe (stage h, its half rank), "chunk 1" the
stage it meets late, and the eight phases of DeepSeek's order only ever talk about chunks 0 and 1.
In the steady state a forward of one chunk runs overlapped with the full backward of the other,
as one slot (``Overlap``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..costs import Costs
from ..errors import InputError
from ..ir import BW, KIND_INDEX, B, F, Placement, Row, Schedule, W, stack_rows
from . import rows
from .interleaved import CHUNKS, GROUP_SIZE, check_interleaved, table_columns
from .registry import Spec, register

_F, _B, _W, _BW = (KIND_INDEX[k] for k in (F, B, W, BW))


@dataclass
class _Device:
    """One device's two chunks (stage and microbatch sequence each), its running counters and
    its row as columns (kind, stage, microbatch, slot): actions are (kind, stage, microbatch)."""

    stages: tuple[int, int]
    microbatches: tuple[list[int], list[int]]
    columns: tuple[list[int], ...] = field(default_factory=lambda: ([], [], [], []))
    steps: int = 0
    next_f: list[int] = field(default_factory=lambda: [0, 0])
    next_b: list[int] = field(default_factory=lambda: [0, 0])
    weights: deque = field(default_factory=deque)  # split backwards whose W is still to run

    def forward(self, c: int) -> tuple[int, int, int]:
        a = (_F, self.stages[c], self.microbatches[c][self.next_f[c]])
        self.next_f[c] += 1
        return a

    def backward(self, c: int, split: bool) -> tuple[int, int, int]:
        a = (_B if split else _BW, self.stages[c], self.microbatches[c][self.next_b[c]])
        self.next_b[c] += 1
        if split:
            self.weights.append((_W, *a[1:]))
        return a

    def run(self, *actions: tuple[int, int, int]) -> None:
        """One step: an action, or two overlapped as a pair (one slot)."""
        for a in actions:
            for column, value in zip(self.columns, (*a, self.steps)):
                column.append(value)
        self.steps += 1

    def weight(self) -> None:
        if self.weights:
            self.run(self.weights.popleft())

    def row(self) -> Row:
        kind, stage, micro, slot = (np.array(c, dtype=np.int64) for c in self.columns)
        return Row(kind, stage, micro, slot)


def _dual_row(dev: _Device, n: int, h: int, per_chunk: int) -> Row:
    """DeepSeek's eight phases for a device at half rank h of n, with per_chunk microbatches a chunk."""
    # Step 1: nF0
    for _ in range(2 * (n - h - 1)):
        dev.run(dev.forward(0))
    # Step 2: nF0F1
    for _ in range(h + 1):
        dev.run(dev.forward(0))
        dev.run(dev.forward(1))
    # Step 3: nB1W1F1 (split backward: its W fills the gap)
    for _ in range(n - h - 1):
        dev.run(dev.backward(1, split=True))
        dev.weight()
        dev.run(dev.forward(1))
    # Step 4 (main): n(F0 & B1)(F1 & B0); the middle device runs its first pair apart
    for i in range(per_chunk - 2 * n + h + 1):
        if i == 0 and h == n - 1:
            dev.run(dev.forward(0))
            dev.run(dev.backward(1, split=False))
        else:
            dev.run(dev.forward(0), dev.backward(1, split=False))
        dev.run(dev.forward(1), dev.backward(0, split=False))
    # Step 5: nB1(F1 & B0)
    for _ in range(n - h - 1):
        dev.run(dev.backward(1, split=False))
        dev.run(dev.forward(1), dev.backward(0, split=False))
    # Step 6: nB1B0, the second half with split backward
    split = False
    for i in range(h + 1):
        if i == (h + 1) // 2 and h % 2 == 1:
            split = True
        dev.run(dev.backward(1, split))
        if i == (h + 1) // 2 and h % 2 == 0:
            split = True
        dev.run(dev.backward(0, split))
    # Step 7: nWB0
    for _ in range(n - h - 1):
        dev.weight()
        dev.run(dev.backward(0, split=True))
    # Step 8: nW
    while dev.weights:
        dev.weight()
    return dev.row()


def dualpipe(p: int, m: int) -> Schedule:
    """Microbatches 0..m/2−1 flow down from device 0, m/2..m−1 flow up from device p−1."""
    half = m // 2
    pipes = (list(range(half)), list(range(half, m)))
    device_rows = []
    for r in range(p):
        h = min(r, p - 1 - r)
        first = 0 if r < p // 2 else 1  # the pipe in which device r is an early stage
        dev = _Device((h, p - 1 - h), (pipes[first], pipes[1 - first]))
        device_rows.append(_dual_row(dev, p // 2, h, half))
    directions = tuple([0] * half + [1] * (m - half))
    return Schedule(Placement.dualpipe(p), m, stack_rows(device_rows, p, m), directions=directions)


def dualpipe_v(p: int, m: int) -> Schedule:
    """The V fold: device r runs stage r on the way down and stage 2p−1−r on the way up."""
    every = list(range(m))
    device_rows = (_dual_row(_Device((r, 2 * p - 1 - r), (every, every)), p, r, m) for r in range(p))
    return Schedule(Placement.vshape(p), m, stack_rows(device_rows, 2 * p, m))


def _check_dualpipe(p: int, m: int) -> None:
    if p % 2:
        raise InputError(
            f"dualpipe needs an even number of devices (got {p}): use {p + 1} or try dualpipe-v", field="devices"
        )
    if m % 2:
        raise InputError(
            f"dualpipe needs an even number of microbatches, half for each pipe (got {m})", field="microbatches"
        )
    if m < 2 * p:
        raise InputError(f"dualpipe needs microbatches ≥ 2 × devices = {2 * p} (got {m})", field="microbatches")


def _check_dualpipe_v(p: int, m: int) -> None:
    if m < 2 * p:
        raise InputError(f"dualpipe-v needs microbatches ≥ 2 × devices = {2 * p} (got {m})", field="microbatches")


def _dual_bubble(ranks: int, chunk: float, c: Costs) -> float:
    """DeepSeek's (PP/2−1)(F&B + B − 3W), with F, B, W the times of one chunk."""
    f, b, w = c.f * chunk, (c.b + c.w) * chunk, c.w * chunk
    return (ranks / 2 - 1) * ((f + b) * c.overlap + b - 3 * w)


def _symmetric(c: Costs) -> bool:
    """The case where DeepSeek's bubble is exact: f = b = w and no overlap gain."""
    return c.f == c.b == c.w and c.overlap == 1


# --- 1F1B with overlapped pairs ---------------------------------------------------------------


def one_f_one_b_overlap(p: int, m: int) -> Schedule:
    """1F1B with 2(p−d−1)+1 warm-up forwards, then each forward overlapped with the oldest backward."""
    mb = np.arange(m)
    device_rows = (rows.paired(Row.of(F, d, mb), Row.of(BW, d, mb), min(2 * (p - d - 1) + 1, m)) for d in range(p))
    return Schedule(Placement.standard(p), m, stack_rows(device_rows, p, m))


def interleaved_overlap(p: int, m: int, chunks: int = 2, group_size: int | None = None) -> Schedule:
    """Megatron's interleaved table, one more warm-up forward, and F & BW pairs in the steady state."""
    v, n = chunks, group_size or p
    micro, chunk = table_columns(m, v, n)

    def row(d: int) -> Row:
        warm = min(2 * (p - d - 1) + (v - 1) * n + 1, len(micro))
        return rows.paired(Row.of(F, chunk * p + d, micro), Row.of(BW, (v - 1 - chunk) * p + d, micro), warm)

    return Schedule(Placement.looped(p, v), m, stack_rows(map(row, range(p)), p * v, m))


def _check_interleaved_overlap(p: int, m: int, chunks: int, group_size: int | None) -> None:
    try:
        check_interleaved(p, m, chunks, group_size)
    except InputError as e:
        raise InputError(str(e).replace("interleaved-1f1b", "interleaved-1f1b-overlap"), field=e.field) from None


def _overlap_1f1b_makespan(p: int, m: int, c: Costs) -> float | None:
    """Without overlap gain (factor 1) pairing changes no critical path: 1F1B's (m+p−1)(f+b+w)."""
    return (m + p - 1) * (c.f + c.b + c.w) if c.overlap == 1 else None


def _overlap_interleaved_makespan(p, m, c, chunks, group_size=None):
    """At factor 1, interleaved 1F1B's m(f+b+w) + (p−1)(f+b+w)/v, for m a multiple of p."""
    if c.overlap != 1 or m % p or (group_size or p) != p:
        return None
    return (m + (p - 1) / chunks) * (c.f + c.b + c.w)


register(
    Spec(
        name="dualpipe",
        description="DualPipe: two opposite pipes, each device holds two stages; steady state overlaps F&B.",
        reference="DeepSeek-AI, DeepSeek-V3 Technical Report 2024; github.com/deepseek-ai/DualPipe",
        build=dualpipe,
        check=_check_dualpipe,
        chunks=2,
        split_backward=True,
        formula=lambda p, m, c: m * (c.f + c.b + c.w) + _dual_bubble(p, 1, c) if _symmetric(c) else None,
        formula_text="m(f+b+w) + (p/2−1)(F&B + B − 3W), chunk = 1/p of the model, f = b = w, overlap 1",
        memory_text="activation p+1 chunks; parameters 2×",
    )
)
register(
    Spec(
        name="dualpipe-v",
        description="DualPipeV: DualPipe folded onto a V placement; half the devices, 1× parameters.",
        reference="DeepSeek-AI DualPipe (DualPipeV, 'cut-in-half'); Sea AI Lab; PyTorch ScheduleDualPipeV",
        build=dualpipe_v,
        check=_check_dualpipe_v,
        chunks=2,
        split_backward=True,
        formula=lambda p, m, c: m * (c.f + c.b + c.w) + _dual_bubble(2 * p, 0.5, c) if _symmetric(c) else None,
        formula_text="m(f+b+w) + (p−1)(F&B + B − 3W), chunk = 1/(2p) of the model, f = b = w, overlap 1",
        memory_text="activation 2p+1 half chunks",
    )
)
register(
    Spec(
        name="1f1b-overlap",
        description="1F1B whose steady state overlaps each F with another microbatch's backward (MoE a2a hiding).",
        reference="DeepSeek-V3 Technical Report 2024 (F&B overlap); Megatron-LM combined 1F1B for MoE",
        build=one_f_one_b_overlap,
        formula=_overlap_1f1b_makespan,
        formula_text="(m+p−1)(f+b+w) at overlap factor 1",
        memory_text="min(2(p−i), m)",
    )
)
register(
    Spec(
        name="interleaved-1f1b-overlap",
        description="Interleaved 1F1B with one more warm-up forward and overlapped F&B pairs in the steady state.",
        reference="Megatron-LM interleaved 1F1B with overlap_moe_expert_parallel_comm",
        build=interleaved_overlap,
        params=(
            CHUNKS,
            GROUP_SIZE,
        ),
        check=_check_interleaved_overlap,
        formula=_overlap_interleaved_makespan,
        formula_text="m(f+b+w) + (p−1)(f+b+w)/v at overlap factor 1, m a multiple of p",
        chunks=None,
        memory_text="interleaved-1f1b's + one forward",
    )
)
