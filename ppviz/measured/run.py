"""One measured run, whatever file it came from: per rank, the ops it ran and its p2p events.

Times are seconds from the run's first op (all ranks on one clock). An order read from a CSV
has no times: its ops keep their order and ``start``/``end`` are ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Action, Kind, Schedule, schedule_from_rows


@dataclass(frozen=True)
class Op:
    """One compute action of a rank: ``kind`` as ppviz names it (B = input gradient, BW = full backward)."""

    rank: int
    stage: int
    microbatch: int
    kind: Kind
    start: float | None = None
    end: float | None = None

    @property
    def action(self) -> Action:
        return Action(self.stage, self.microbatch, self.kind)

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Comm:
    """A communication event: ``what`` is ``send``/``recv`` for p2p, else the token (UNSHARD, REDUCE_GRAD, …).

    ``direction`` is ``F`` (activations) or ``B`` (gradients) when known; stage and microbatch are the
    sending or receiving stage's, ``peer`` the other rank, ``bytes`` the size, each ``None`` when the
    file does not say."""

    rank: int
    what: str
    stage: int | None = None
    microbatch: int | None = None
    direction: str | None = None
    peer: int | None = None
    start: float | None = None
    end: float | None = None
    bytes: int | None = None


@dataclass(frozen=True)
class MeasuredRun:
    """What a set of files says about one iteration of a pipeline run."""

    format: str  # "torch-csv", "kineto"
    ranks: int
    ops: tuple[tuple[Op, ...], ...]  # per rank, in the order it ran them
    comms: tuple[Comm, ...] = ()
    iteration: int | None = None
    sources: tuple[str, ...] = ()  # per rank, the file it came from
    notes: tuple[str, ...] = ()

    @property
    def timed(self) -> bool:
        return any(op.start is not None for row in self.ops for op in row)

    @property
    def stages(self) -> int:
        return 1 + max((op.stage for row in self.ops for op in row), default=-1)

    @property
    def microbatches(self) -> int:
        return 1 + max((op.microbatch for row in self.ops for op in row), default=-1)

    def schedule(self, name: str = "measured") -> Schedule:
        """The order each rank ran, as ppviz's IR (placement inferred from where stages ran)."""
        return schedule_from_rows([[op.action for op in row] for row in self.ops], name=name)


def peer_of(comm: Comm, stage_rank: dict[int, int]) -> int | None:
    """The rank at the other end of a p2p event: forward data goes to stage + 1, gradients to stage - 1."""
    toward_next = (comm.what == "send") == (comm.direction == "F")
    return stage_rank.get(comm.stage + (1 if toward_next else -1)) if comm.stage is not None else None
