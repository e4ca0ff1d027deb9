"""Looped placements: v chunks per device, stage s on device s mod p.

Megatron's interleaved 1F1B walks microbatches in groups of N (``group_size``, Megatron's
``microbatch_group_size_per_vp_stage``) through each chunk in turn, with a warm-up of
2(p−d−1) + (v−1)·N forwards. Looped BFS runs every microbatch through a chunk before the next.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..ir import BW, F, Placement, Row, Schedule, stack_rows
from . import rows
from .registry import Param, Spec, register

CHUNKS = Param("chunks", int, 2, 1, 16, "model chunks per device (virtual pipeline size v)")
GROUP_SIZE = Param(
    "group_size",
    int,
    None,
    1,
    None,
    "microbatches per group through each chunk (default: devices)",
    aliases=("microbatch_group_size_per_vp_stage",),
)


def megatron_table(m: int, v: int, group: int) -> list[tuple[int, int]]:
    """(microbatch, chunk) in the order forwards are issued; the last group takes what is left."""
    table = []
    for lo in range(0, m, group):
        hi = m if lo + group >= m else lo + group
        table.extend((mb, c) for c in range(v) for mb in range(lo, hi))
    return table


def table_columns(m: int, v: int, group: int) -> tuple[np.ndarray, np.ndarray]:
    """``megatron_table`` as two columns: microbatch, chunk."""
    micro, chunk = np.array(megatron_table(m, v, group), dtype=np.int64).reshape(-1, 2).T
    return micro, chunk


def interleaved_1f1b(p: int, m: int, chunks: int = 2, group_size: int | None = None) -> Schedule:
    v, n = chunks, group_size or p
    micro, chunk = table_columns(m, v, n)
    total = len(micro)

    def row(d: int) -> Row:
        warm = min(2 * (p - d - 1) + (v - 1) * n, total)
        return rows.one_f_one_b(Row.of(F, chunk * p + d, micro), Row.of(BW, (v - 1 - chunk) * p + d, micro), warm)

    return Schedule(Placement.looped(p, v), m, stack_rows(map(row, range(p)), p * v, m))


def check_interleaved(p: int, m: int, chunks: int, group_size: int | None) -> None:
    n = group_size or p
    if m < p:
        raise InputError(
            f"interleaved-1f1b needs microbatches ≥ devices (got {m} with {p} devices)", field="microbatches"
        )
    if not p <= n <= m:
        raise InputError(
            f"interleaved-1f1b needs group_size between devices ({p}) and microbatches ({m}) (got {n})",
            field="group_size",
        )
    rest = m % n
    if rest and rest < p:
        what = "devices" if group_size is None else f"the group size {n}"
        raise InputError(
            field="microbatches",
            message=f"interleaved-1f1b needs microbatches to be a multiple of {what}, or to leave at least "
            f"{p} in the last group (got {m} with {p} devices)",
        )


def looped_bfs(p: int, m: int, chunks: int = 2) -> Schedule:
    micro, chunk = np.tile(np.arange(m), chunks), np.repeat(np.arange(chunks), m)

    def row(d: int) -> Row:
        return Row.of(F, chunk * p + d, micro) + Row.of(BW, (chunks - 1 - chunk) * p + d, micro)

    return Schedule(Placement.looped(p, chunks), m, stack_rows(map(row, range(p)), p * chunks, m))


def _interleaved_formula(p, m, c, chunks, group_size=None):
    """Exact for every size the constraints accept (any valid group size; tests sweep p ≤ 6, m ≤ 24)."""
    return m * (c.f + c.b + c.w) + (p - 1) * (c.f + c.b + c.w) / chunks


def _looped_bfs_formula(p, m, c, chunks):
    """Each chunk is a p-stage pipeline of m microbatches: (max(m,p) + (min(m,p)−1)/v)(f+b+w), any m."""
    return (max(m, p) + (min(m, p) - 1) / chunks) * (c.f + c.b + c.w)


register(
    Spec(
        name="interleaved-1f1b",
        description="Megatron interleaved 1F1B (virtual pipeline): v chunks per device cut the bubble by v.",
        reference="Narayanan et al., Efficient Large-Scale LM Training on GPU Clusters, SC 2021 (Megatron-LM)",
        build=interleaved_1f1b,
        params=(
            CHUNKS,
            GROUP_SIZE,
        ),
        check=check_interleaved,
        formula=_interleaved_formula,
        formula_text="m(f+b+w) + (p−1)(f+b+w)/v",
        chunks=None,
        memory_text="(2(p−i−1) + (v−1)p + 1)/v, group size p",
    )
)
register(
    Spec(
        name="looped-bfs",
        description="Breadth-first looped: each chunk runs all microbatches before the next chunk.",
        reference="Lamy-Poirier, Breadth-First Pipeline Parallelism, MLSys 2023",
        build=looped_bfs,
        params=(CHUNKS,),
        formula=_looped_bfs_formula,
        formula_text="m(f+b+w) + (p−1)(f+b+w)/v for m ≥ p; p(f+b+w) + (m−1)(f+b+w)/v for m < p",
        chunks=None,
        memory_text="m",
    )
)
