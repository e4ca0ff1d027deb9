"""PyTorch pipelining's order CSVs as measured runs: compute-only and compute+comms, in torch's two
namings, read by the IR's one order reader (``ppviz.ir.read_torch_order``); its communication tokens
become events with their peer rank, never refused.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir import Action, Overlap, Step, read_torch_order
from .run import Comm, MeasuredRun, Op, peer_of


@dataclass(frozen=True)
class CsvOrder:
    """An order CSV read: per rank its compute steps (``None``: idle slot), its comms, the naming used."""

    rows: tuple[tuple[Step | None, ...], ...]
    comms: tuple[Comm, ...]
    naming: str
    notes: tuple[str, ...]
    source: str

    def run(self) -> MeasuredRun:
        """The order as a measured run without times (an overlapped pair gives its two ops in turn)."""
        ops = tuple(
            tuple(Op(r, a.stage, a.microbatch, a.kind) for step in row if step is not None for a in _halves(step))
            for r, row in enumerate(self.rows)
        )
        return MeasuredRun("torch-csv", len(self.rows), ops, self.comms, None, (self.source,) * len(self.rows),
                           self.notes)  # fmt: skip


def _halves(step: Step) -> tuple[Action, ...]:
    return (step.first, step.second) if isinstance(step, Overlap) else (step,)


def read_order(text: str, *, source: str = "the order", naming: str = "auto") -> CsvOrder:
    """Parse an order CSV; an InputError names the file, line and column and what was expected."""
    order = read_torch_order(text, source=source, naming=naming)
    rows = order.rows
    stage_rank = {a.stage: r for r, row in enumerate(rows) for s in row if s is not None for a in _halves(s)}
    comms = [Comm(c.rank, c.what, c.stage, c.microbatch, c.direction) for c in order.comms]
    comms = [c if c.direction is None else _with_peer(c, stage_rank) for c in comms]
    return CsvOrder(rows, tuple(comms), order.naming, order.notes, source)


def _with_peer(c: Comm, stage_rank: dict[int, int]) -> Comm:
    return replace(c, peer=peer_of(c, stage_rank))
