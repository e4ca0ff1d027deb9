"""Interleaved zero bubble: interleaved 1F1B with the backward split and W deferred.

Like PyTorch's ``ScheduleInterleavedZeroBubble``: forwards and backwards walk Megatron's
interleaved table, the warm-up is (v−1)·N + (p−1−r) forwards (one per hop to the last device,
not two, since W fills the gaps the shorter warm-up leaves), and device r holds back its first r
weight passes (as ZB-H1 does) so that W fills the cool-down bubble. The peak stays at p, below
interleaved 1F1B's, and the bubble is ZB-H1's divided by v.
"""

from __future__ import annotations

from ..errors import InputError
from ..ir import B, F, Placement, Row, Schedule, W, stack_rows
from . import rows
from .interleaved import CHUNKS, GROUP_SIZE, check_interleaved, table_columns
from .registry import Spec, register


def interleaved_zb(p: int, m: int, chunks: int = 2, group_size: int | None = None) -> Schedule:
    v, n = chunks, group_size or p
    micro, chunk = table_columns(m, v, n)
    total = len(micro)

    def row(r: int) -> Row:
        warm = min((v - 1) * n + (p - 1 - r), total)
        back = (v - 1 - chunk) * p + r
        return rows.zero_bubble(
            Row.of(F, chunk * p + r, micro), Row.of(B, back, micro), Row.of(W, back, micro), warm, r
        )

    return Schedule(Placement.looped(p, v), m, stack_rows(map(row, range(p)), p * v, m))


def _check(p: int, m: int, chunks: int, group_size: int | None) -> None:
    try:
        check_interleaved(p, m, chunks, group_size)
    except InputError as e:
        raise InputError(str(e).replace("interleaved-1f1b", "interleaved-zb"), field=e.field) from None


def _makespan(p, m, c, chunks, group_size=None):
    """ZB-H1's bubble divided by v: m(f+b+w) + (p−1)(f+b−w)/v, while W ≤ B fits its gaps."""
    if c.w > c.b or (group_size or p) != p:
        return None
    return m * (c.f + c.b + c.w) + (p - 1) * (c.f + c.b - c.w) / chunks


register(
    Spec(
        name="interleaved-zb",
        description="Interleaved zero bubble: interleaved 1F1B with split backward and W deferred into bubbles.",
        reference="PyTorch ScheduleInterleavedZeroBubble; Qi et al., Zero Bubble PP, ICLR 2024",
        build=interleaved_zb,
        params=(
            CHUNKS,
            GROUP_SIZE,
        ),
        check=_check,
        chunks=None,
        split_backward=True,
        formula=_makespan,
        formula_text="m(f+b+w) + (p−1)(f+b−w)/v, w ≤ b",
        memory_text="≤ p (interleaved-1f1b's is higher)",
    )
)
