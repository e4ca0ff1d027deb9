"""PyTorch pipelining's order CSVs: compute-only and compute+comms, in torch's two namings.

One row per rank, one action per cell, an empty cell is an idle slot. Torch 2.13 names the kinds
``F``, ``I`` (input gradient), ``W`` (weight gradient), ``B`` (full backward); earlier torch named
them ``F``, ``B`` (input gradient when the schedule has ``W``, else the full backward), ``W``, ``BW``
(full backward), and batched a send with the opposite receive into one token
(``0SEND_F1_1RECV_B0``). The naming is read from the tokens unless given. Communication tokens
(``SEND_F``, ``RECV_B``, ``UNSHARD``, ``RESHARD``, ``REDUCE_GRAD``) are kept as events, never refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..errors import InputError
from ..ir import Action, Kind, Overlap, Step, split_cells, torch_lines
from .run import Comm, MeasuredRun, Op, peer_of

NAMINGS = ("auto", "torch", "torch-old")
_COMPUTE = re.compile(r"(\d+)(BW|F|I|W|B)(\d+)")
_PAIR = re.compile(r"\(([^;()]+);([^;()]+)\)OVERLAP_F_B")
_P2P = re.compile(r"(\d+)(SEND|RECV)_([FB])(\d+)")
_BATCHED = re.compile(r"(\d+)(SEND|RECV)_([FB])(\d+)_(\d+)(SEND|RECV)_([FB])(\d+)")
_STAGE_ONLY = re.compile(r"(\d+)(UNSHARD|RESHARD|REDUCE_GRAD)")
KIND_TABLES = {
    "torch": {"F": Kind.F, "I": Kind.B, "W": Kind.W, "B": Kind.BW},
    "torch-old": {"F": Kind.F, "B": Kind.B, "W": Kind.W, "BW": Kind.BW},
    "torch-old-full": {"F": Kind.F, "B": Kind.BW, "BW": Kind.BW},  # no W in the file: B is the full backward
}
_EXPECTED = (
    "expected <stage><kind><microbatch> with kind F, I, W, B (or B, W, BW in the older naming), "
    "a comms token such as 0SEND_F1, 1RECV_B0, 0UNSHARD, 0REDUCE_GRAD, or a pair (0F7;7B3)OVERLAP_F_B"
)


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
    if naming not in NAMINGS:
        raise InputError(f"naming must be one of {', '.join(NAMINGS)} (got {naming!r})", field="naming")
    lines = torch_lines(text)
    if not lines:
        raise InputError(f"{source} is empty: expected one CSV row per rank", field="order")
    cells = [[c.strip() for c in split_cells(line)] for line in lines]
    kinds = {m.group(2) for row in cells for c in row for m in _compute_tokens(c)}
    batched = any(_BATCHED.fullmatch(c) for row in cells for c in row)
    used = choose_naming(kinds, batched, naming, source)
    table = KIND_TABLES["torch-old-full" if used == "torch-old" and "W" not in kinds else used]
    rows: list[tuple[Step | None, ...]] = []
    comms: list[Comm] = []
    skipped: dict[str, int] = {}
    for r, row in enumerate(cells):
        steps: list[Step | None] = []
        for c, cell in enumerate(row):
            where = f"{source}: row {r + 1}, column {c + 1} (rank {r})"
            if not cell:
                steps.append(None)
                continue
            step = _step(cell, table, where)
            if step is not None:
                steps.append(step)
                continue
            new = parse_comms(cell, r)
            if new is None:
                raise InputError(f"{where}: cannot read action {cell!r}: {_EXPECTED}", field="order")
            comms += new
            for e in new:
                skipped[e.what] = skipped.get(e.what, 0) + 1
        while steps and steps[-1] is None:
            steps.pop()
        rows.append(tuple(steps))
    notes = [f"naming: {_NAMING_TEXT[used]}" + (" (detected from the tokens)" if naming == "auto" else "")]
    if skipped:
        listed = ", ".join(f"{n} {what}" for what, n in sorted(skipped.items()))
        notes.append(f"communication tokens kept as events, not simulated: {listed}")
    stage_rank = {a.stage: r for r, row in enumerate(rows) for s in row if s is not None for a in _halves(s)}
    comms = [c if c.direction is None else _with_peer(c, stage_rank) for c in comms]
    return CsvOrder(tuple(rows), tuple(comms), used, tuple(notes), source)


_NAMING_TEXT = {
    "torch": "torch 2.13's (F, I = input gradient, W = weight gradient, B = full backward)",
    "torch-old": "torch's older one (F, B = input gradient, W = weight gradient, BW or B without W = full backward)",
}


def choose_naming(kinds: set[str], batched: bool, naming: str, source: str) -> str:
    old = "BW" in kinds or batched or ("W" in kinds and "B" in kinds and "I" not in kinds)
    if naming == "auto":
        if old and "I" in kinds:
            raise InputError(
                f"{source} mixes torch's two namings: I (new) with BW or batched tokens (old); give one naming",
                field="order",
            )
        return "torch-old" if old else "torch"
    if naming == "torch" and ("BW" in kinds or batched):
        raise InputError(f"{source} has BW or batched tokens, which only torch's older naming has", field="naming")
    if naming == "torch-old" and "I" in kinds:
        raise InputError(f"{source} has I actions, which only torch 2.13's naming has", field="naming")
    return naming


def _compute_tokens(cell: str) -> list[re.Match]:
    pair = _PAIR.fullmatch(cell)
    parts = (pair.group(1).strip(), pair.group(2).strip()) if pair else (cell,)
    return [m for m in (_COMPUTE.fullmatch(p) for p in parts) if m]


def _step(cell: str, table: dict[str, Kind], where: str) -> Step | None:
    pair = _PAIR.fullmatch(cell)
    if pair:
        halves = [_action(p.strip(), table, where) for p in pair.groups()]
        if None in halves:
            raise InputError(f"{where}: cannot read the pair {cell!r}: {_EXPECTED}", field="order")
        return Overlap(*halves)
    return _action(cell, table, where)


def _action(token: str, table: dict[str, Kind], where: str) -> Action | None:
    m = _COMPUTE.fullmatch(token)
    if not m:
        return None
    kind = table.get(m.group(2))
    if kind is None:
        raise InputError(f"{where}: {token!r} has kind {m.group(2)}, which this naming does not have", field="order")
    return Action(int(m.group(1)), int(m.group(3)), kind)


def parse_comms(cell: str, rank: int) -> list[Comm] | None:
    m = _BATCHED.fullmatch(cell)
    if m:
        g = m.groups()
        return [_p2p(rank, *g[:4]), _p2p(rank, *g[4:])]
    m = _P2P.fullmatch(cell)
    if m:
        return [_p2p(rank, *m.groups())]
    m = _STAGE_ONLY.fullmatch(cell)
    if m:
        return [Comm(rank, m.group(2), stage=int(m.group(1)))]
    return None


def _p2p(rank: int, stage: str, what: str, direction: str, mb: str) -> Comm:
    return Comm(rank, what.lower(), stage=int(stage), microbatch=int(mb), direction=direction)


def _with_peer(c: Comm, stage_rank: dict[int, int]) -> Comm:
    return replace(c, peer=peer_of(c, stage_rank))
