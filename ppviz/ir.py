"""The schedule IR: per-device ordered actions on (stage, microbatch, kind).

Schedules are plain data. Generators build them, the simulator times them, and the text form
(PyTorch ``torch.distributed.pipelining`` compute-only CSV) imports and exports them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from itertools import chain, pairwise, repeat
from typing import NamedTuple

import numpy as np

from .errors import InputError


class ScheduleError(InputError):
    """The order is not a valid schedule (missing, duplicate or misplaced actions)."""


class Kind(StrEnum):
    """What an action computes. BW is a full backward (B and W fused)."""

    F = "F"
    B = "B"
    W = "W"
    BW = "BW"


KINDS: tuple[Kind, ...] = (Kind.F, Kind.B, Kind.W, Kind.BW)
KIND_INDEX = {k: i for i, k in enumerate(KINDS)}


class Action(NamedTuple):
    """One unit of work: a kind of pass of one microbatch through one stage."""

    stage: int
    microbatch: int
    kind: Kind

    def __str__(self) -> str:
        return f"{self.stage}{_TO_TORCH[self.kind]}{self.microbatch}"


class Overlap(NamedTuple):
    """Two actions run as one slot (a forward and a backward chunk overlapped, as in DualPipe)."""

    first: Action
    second: Action

    def __str__(self) -> str:
        return f"({self.first};{self.second})OVERLAP_F_B"


Step = Action | Overlap

F, B, W, BW = Kind.F, Kind.B, Kind.W, Kind.BW


@dataclass(frozen=True)
class Placement:
    """Which device runs each stage, per microbatch direction.

    ``devices_of[d][s]`` is the device of stage ``s`` for microbatches of direction ``d``.
    Almost every schedule has one direction; DualPipe has two opposite pipes.
    """

    devices: int
    stages: int
    devices_of: tuple[tuple[int, ...], ...]
    style: str = "custom"

    def __post_init__(self) -> None:
        if self.devices < 1 or self.stages < 1 or not self.devices_of:
            raise ValueError(f"a placement needs devices, stages and a direction (got {self.devices}, {self.stages})")
        for d, row in enumerate(self.devices_of):
            if len(row) != self.stages or any(not 0 <= dev < self.devices for dev in row):
                raise ValueError(
                    f"placement direction {d} must give a device in 0..{self.devices - 1} for each of "
                    f"{self.stages} stages (got {row})"
                )

    @staticmethod
    def standard(devices: int) -> Placement:
        """One stage per device."""
        return Placement(devices, devices, (tuple(range(devices)),), "standard")

    @staticmethod
    def looped(devices: int, chunks: int) -> Placement:
        """Interleaved: stage s on device s mod p (PyTorch's "loop" style)."""
        stages = devices * chunks
        return Placement(devices, stages, (tuple(s % devices for s in range(stages)),), "loop")

    @staticmethod
    def vshape(devices: int) -> Placement:
        """V shape: device d holds stages d and 2p-1-d, so the turn stays on the last device."""
        p = devices
        return Placement(p, 2 * p, (tuple(s if s < p else 2 * p - 1 - s for s in range(2 * p)),), "v")

    @staticmethod
    def dualpipe(devices: int) -> Placement:
        """Two opposite pipes: direction 0 runs stage s on device s, direction 1 on p-1-s."""
        p = devices
        return Placement(p, p, (tuple(range(p)), tuple(range(p - 1, -1, -1))), "dualpipe")

    def device(self, stage: int, direction: int = 0) -> int:
        return self.devices_of[direction][stage]

    def held(self) -> list[list[tuple[int, int]]]:
        """Per device, the (direction, stage) chunks it holds, in stage order."""
        out: list[list[tuple[int, int]]] = [[] for _ in range(self.devices)]
        for d, row in enumerate(self.devices_of):
            for s, dev in enumerate(row):
                out[dev].append((d, s))
        return out

    @property
    def chunks(self) -> int:
        """Model chunks per device (the most any device holds)."""
        return max((len(h) for h in self.held()), default=0)

    def chunk_index(self) -> list[list[int]]:
        """``chunk_index()[d][s]``: which of its device's chunks stage s is (for colour shades)."""
        out = [[0] * self.stages for _ in self.devices_of]
        for chunks in self.held():
            for i, (d, s) in enumerate(chunks):
                out[d][s] = i
        return out


_WIDTHS = (np.int8, np.int16, np.int32, np.int64)


def narrowest(low: int, high: int) -> np.dtype:
    """The smallest signed integer type holding every value in ``low..high``."""
    for t in _WIDTHS:
        info = np.iinfo(t)
        if info.min <= low and high <= info.max:
            return np.dtype(t)
    raise OverflowError(f"{low}..{high} does not fit 64 bits")


def narrow(values: np.ndarray) -> np.ndarray:
    """``values`` (integers) in the narrowest type that holds them."""
    if not len(values):
        return values.astype(np.int8)
    return values.astype(narrowest(int(values.min()), int(values.max())), copy=False)


def _offsets(lengths: Sequence[int]) -> np.ndarray:
    bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    return bounds


@dataclass(frozen=True, eq=False)
class Columns:
    """A schedule's steps as typed columns, one entry per action, in device order.

    Device d's actions are ``[bounds[d], bounds[d + 1])``. ``kind`` indexes ``KINDS``; stage and
    microbatch are in the narrowest type that holds them. ``slot`` is each action's step in its
    device's row, counting idle steps; the two actions of a pair share one. Where every step is
    one action (every generated schedule without overlapped pairs) ``slot`` and ``widths`` are None;
    otherwise ``widths`` holds each row's length in steps, so idle steps survive a round trip.
    """

    kind: np.ndarray
    stage: np.ndarray
    microbatch: np.ndarray
    bounds: np.ndarray
    slot: np.ndarray | None = None
    widths: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        # Schedules and results share these arrays: read-only, so no one changes another's steps.
        for column in (self.kind, self.stage, self.microbatch, self.bounds, self.slot):
            if column is not None:
                column.flags.writeable = False

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def devices(self) -> int:
        return len(self.bounds) - 1

    def device(self) -> np.ndarray:
        """The device of every action."""
        p = self.devices
        return np.repeat(np.arange(p, dtype=narrowest(0, max(p - 1, 0))), np.diff(self.bounds))

    def actions(self) -> list[Action]:
        """Every action as an ``Action``, in device order (a pair's two halves one after the other)."""
        kinds = map(KINDS.__getitem__, self.kind.tolist())
        return list(map(tuple.__new__, repeat(Action), zip(self.stage.tolist(), self.microbatch.tolist(), kinds)))

    def rows(self) -> tuple[tuple[Step | None, ...], ...]:
        """The order: per device a tuple of steps (``Action``, ``Overlap`` or ``None``)."""
        acts = self.actions()
        bounds = self.bounds.tolist()
        if self.slot is None:
            return tuple(tuple(acts[lo:hi]) for lo, hi in pairwise(bounds))
        slot = self.slot.tolist()
        out = []
        for (lo, hi), width in zip(pairwise(bounds), self.widths or ()):
            row: list[Step | None] = [None] * width
            for i in range(lo, hi):
                if i > lo and slot[i] == slot[i - 1]:
                    row[slot[i]] = Overlap(acts[i - 1], acts[i])
                else:
                    row[slot[i]] = acts[i]
            out.append(tuple(row))
        return tuple(out)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Columns):
            return NotImplemented
        same = self.widths == other.widths and (self.slot is None) == (other.slot is None)
        pairs = ((self.kind, other.kind), (self.stage, other.stage), (self.microbatch, other.microbatch))
        pairs += ((self.bounds, other.bounds),) + (((self.slot, other.slot),) if self.slot is not None else ())
        return same and all(np.array_equal(a, b) for a, b in pairs)

    __hash__ = None  # type: ignore[assignment]  # arrays: equal by value, not hashable


class Row(NamedTuple):
    """One device's steps as columns, while a generator builds them. ``slot``, when given, is
    each action's step in the row (a pair's two actions share one); None: every step one action."""

    kind: np.ndarray
    stage: np.ndarray
    microbatch: np.ndarray
    slot: np.ndarray | None = None

    @staticmethod
    def of(kind: Kind, stage, microbatch) -> Row:
        """Actions of one kind; ``stage`` may be one number for all."""
        mb = np.asarray(microbatch, dtype=np.int64)
        return Row(np.full(len(mb), KIND_INDEX[kind], dtype=np.int8), np.broadcast_to(stage, mb.shape), mb)

    def __add__(self, other: Row) -> Row:  # type: ignore[override]
        """The two rows' actions one after the other (both of single-action steps)."""
        return Row(*(np.concatenate(pair) for pair in zip(self[:3], other[:3])))

    def take(self, index: np.ndarray) -> Row:
        return Row(*(c[index] for c in self[:3]))


def stack_rows(rows: Iterable[Row], stages: int, microbatches: int) -> Columns:
    """Columns from per-device rows, each cast to the narrow types as it comes (so a generator
    that yields its rows holds one wide row at a time)."""
    st, mb = narrowest(0, max(stages - 1, 0)), narrowest(0, max(microbatches - 1, 0))
    kinds, stage, micro, slots, lengths = [], [], [], [], []
    for row in rows:
        kinds.append(row.kind.astype(np.int8, copy=False))
        stage.append(np.asarray(row.stage).astype(st))
        micro.append(np.asarray(row.microbatch).astype(mb))
        slots.append(row.slot)
        lengths.append(len(row.kind))
    cat = np.concatenate
    kind, stage, micro = (cat(c) if c else np.zeros(0, t) for c, t in ((kinds, np.int8), (stage, st), (micro, mb)))
    if all(s is None for s in slots):
        return Columns(kind, stage, micro, _offsets(lengths))
    slots = [np.arange(n) if s is None else s for s, n in zip(slots, lengths)]
    widths = [int(s[-1]) + 1 if len(s) else 0 for s in slots]
    return _with_slots(kind, stage, micro, _offsets(lengths), cat(slots), widths)


def _with_slots(kind, stage, microbatch, bounds, slot, widths) -> Columns:
    """Columns with a slot column, dropped when every step is one action (the canonical form)."""
    in_row = np.arange(len(slot)) - np.repeat(bounds[:-1], np.diff(bounds))
    if len(slot) == sum(widths) and np.array_equal(slot, in_row):
        return Columns(kind, stage, microbatch, bounds)
    return Columns(kind, stage, microbatch, bounds, narrow(slot), tuple(widths))


_KIND_BY_ID = {id(k): i for k, i in KIND_INDEX.items()}
_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


def columns_of_order(order: Sequence[Sequence[Step | None]]) -> Columns:
    """Read an order into columns: a whole order of plain actions is transposed at C speed in
    one go; otherwise each row of plain actions is, and rows with pairs or idle slots (or plain
    tuples and kind strings) take the per-step path. Raises ScheduleError for what is no action."""
    lengths = [len(steps) for steps in order]
    fast = _plain_columns(list(chain.from_iterable(order)))
    if fast is not None:
        kind, stage, mb = fast
        return Columns(kind, narrow(stage), narrow(mb), _offsets(lengths))
    parts = []
    for steps in order:
        fast = _plain_columns(steps)
        parts.append((*fast, np.arange(len(steps))) if fast is not None else _step_columns(steps))
    kind, stage, mb, slot = (np.concatenate(c) for c in zip(*parts)) if parts else [np.zeros(0, np.int64)] * 4
    bounds = _offsets([len(p[0]) for p in parts])
    return _with_slots(kind.astype(np.int8), narrow(stage), narrow(mb), bounds, slot, lengths)


def _plain_columns(steps):
    """(kind, stage, microbatch) columns of a sequence of plain Actions; None if it holds others."""
    try:
        flat = list(chain.from_iterable(steps))
    except TypeError:  # an idle slot (None)
        return None
    if len(flat) != 3 * len(steps):
        return None
    st, mb, kd = flat[0::3], flat[1::3], flat[2::3]
    ids = np.fromiter(map(id, kd), dtype=np.int64, count=len(kd))
    kind = np.full(len(kd), -1, dtype=np.int8)
    for k_id, i in _KIND_BY_ID.items():
        kind[ids == k_id] = i
    if (kind < 0).any():
        return None
    stage, micro = np.array(st), np.array(mb)  # dtype inferred, so 1.5 is not read as 1
    if stage.dtype != np.int64 or micro.dtype != np.int64:
        return None
    return kind, stage, micro


def _step_columns(steps):
    """Per-step path: pairs, idle slots, plain tuples and kind strings; slot = position in the row."""
    stage, mb, kind, slot = [], [], [], []
    for n, step in enumerate(steps):
        if step is None:
            continue
        for a in step if isinstance(step, Overlap) else (step,):
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
    return tuple(np.array(x, dtype=np.int64) for x in (kind, stage, mb, slot))


@dataclass(frozen=True, eq=False)
class Schedule:
    """The ordered steps each device runs, held as ``Columns`` (or as the order it was given,
    read into columns on first use, so a malformed order is reported by the validator).

    ``order`` gives the steps as ``Action``/``Overlap`` tuples per device, ``None`` for a
    deliberate idle slot (kept for CSV); it is built on demand for the code that reads actions.
    """

    placement: Placement
    microbatches: int
    steps: Columns | tuple[tuple[Step | None, ...], ...]
    name: str = "custom"
    directions: tuple[int, ...] | None = None  # per microbatch; None means all direction 0
    params: dict = field(default_factory=dict)
    param_versions: int = 1  # weight versions each chunk keeps (PipeDream-2BW keeps two)

    @property
    def devices(self) -> int:
        return self.placement.devices

    @property
    def stages(self) -> int:
        return self.placement.stages

    @cached_property
    def columns(self) -> Columns:
        """The steps as columns; raises ScheduleError for a step that is not an action."""
        return self.steps if isinstance(self.steps, Columns) else columns_of_order(self.steps)

    @cached_property
    def order(self) -> tuple[tuple[Step | None, ...], ...]:
        return self.steps.rows() if isinstance(self.steps, Columns) else self.steps

    def direction(self, microbatch: int) -> int:
        return self.directions[microbatch] if self.directions is not None else 0

    def actions(self) -> Iterable[tuple[int, Action]]:
        """Every action with its device, in device order (pairs yield both halves)."""
        c = self.columns
        return zip(c.device().tolist(), c.actions())

    @property
    def size(self) -> int:
        """Number of actions (an overlapped pair counts two)."""
        return len(self.columns)

    def _head(self) -> tuple:
        return (self.placement, self.microbatches, self.name, self.directions, self.param_versions)

    def __eq__(self, other: object) -> bool:
        """Same placement, name, directions and steps (``params`` are not compared)."""
        if not isinstance(other, Schedule):
            return NotImplemented
        if self._head() != other._head():
            return False
        try:
            return self.columns == other.columns
        except ScheduleError:  # a malformed order: compare the steps as given
            return self.order == other.order

    def __hash__(self) -> int:
        return hash(self._head())


def make_schedule(
    placement: Placement,
    microbatches: int,
    order: Sequence[Sequence[Step | None]],
    name: str = "custom",
    **kw,
) -> Schedule:
    """A schedule from per-device rows of steps (read into columns on first use)."""
    return Schedule(placement, microbatches, tuple(tuple(o) for o in order), name, **kw)


def iterations(schedule: Schedule) -> tuple[int, int]:
    """(iterations, microbatches per iteration) of a generated schedule; (1, m) otherwise."""
    k = int(schedule.params.get("iterations") or 1)
    if k < 1 or schedule.microbatches % k:
        return 1, schedule.microbatches
    return k, schedule.microbatches // k


# --- PyTorch's text form ------------------------------------------------------------------

_TO_TORCH = {Kind.F: "F", Kind.B: "I", Kind.W: "W", Kind.BW: "B"}


def parse_action(text: str) -> Step:
    """One action or pair in the IR's own naming (torch 2.13's), as ``str`` prints it: ``0F3``,
    ``2I1``, ``2W1``, ``1B0`` or ``(0F7;7B3)OVERLAP_F_B``."""
    try:
        step = _step(text.strip(), KIND_TABLES["torch"], f"action {text!r}")
    except InputError:  # a letter of the older naming (BW)
        step = None
    if step is None:
        raise InputError(
            f"cannot read action {text!r}: expected stage, one of F/I/W/B, microbatch "
            "(e.g. 0F3, 2I1, 1B0) or a pair like (0F7;7B3)OVERLAP_F_B",
            field="order",
        )
    return step


def format_step(step: Step | None) -> str:
    return "" if step is None else str(step)


def to_torch_csv(schedule: Schedule) -> str:
    """One row per rank, cells padded with empty (idle) slots to a common width."""
    width = max((len(r) for r in schedule.order), default=0)
    lines = []
    for row in schedule.order:
        cells = [format_step(s) for s in row] + [""] * (width - len(row))
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def torch_lines(text: str) -> list[str]:
    """The order's rows, one per rank, without trailing blank lines.

    Any line ending (LF, CRLF, old Mac CR) is a row break, and a UTF-8 byte-order mark (Excel's
    "CSV UTF-8") is ignored, since all are valid CSV.
    """
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def parse_torch_rows(text: str, naming: str = "auto", source: str = "the order") -> list[list[Step | None]]:
    """Rows of steps; trailing idle cells are dropped, inner ones kept as ``None``. Every form PyTorch
    writes is read (``read_torch_order``; communication tokens are left out of the rows)."""
    return [list(row) for row in read_torch_order(text, source=source, naming=naming).rows]


def split_cells(line: str) -> list[str]:
    """Split on commas outside parentheses (pairs contain a ';', not a comma, but be safe)."""
    out, depth, cur = [], 0, []
    for ch in line:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


# --- every form PyTorch writes: compute-only or compute+comms, torch 2.13's naming or the older one ----

NAMINGS = ("auto", "torch", "torch-old")  # as `ppviz measured --naming`
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
_NAMING_TEXT = {
    "torch": "torch 2.13's (F, I = input gradient, W = weight gradient, B = full backward)",
    "torch-old": "torch's older one (F, B = input gradient, W = weight gradient, BW or B without W = full backward)",
}


class CommToken(NamedTuple):
    """A communication token of an order CSV: ``what`` is ``send``/``recv`` (``direction`` F or B) or the
    token itself (UNSHARD, RESHARD, REDUCE_GRAD)."""

    rank: int
    what: str
    stage: int
    microbatch: int | None = None
    direction: str | None = None


class TorchOrder(NamedTuple):
    """An order CSV read: per rank its compute steps (``None``: idle slot), its comms, the naming used."""

    rows: tuple[tuple[Step | None, ...], ...]
    comms: tuple[CommToken, ...]
    naming: str
    notes: tuple[str, ...]


def read_torch_order(text: str, *, source: str = "the order", naming: str = "auto") -> TorchOrder:
    """The one reader of PyTorch's order CSVs: one row per rank, one action per cell, an empty cell an
    idle slot. Torch 2.13 names the kinds ``F``, ``I`` (input gradient), ``W`` (weight gradient), ``B``
    (full backward); earlier torch named them ``F``, ``B`` (input gradient when the schedule has ``W``,
    else the full backward), ``W``, ``BW`` (full backward), and batched a send with the opposite receive
    into one token (``0SEND_F1_1RECV_B0``). ``naming`` "auto" reads it from the tokens. Communication
    tokens (``SEND_F``, ``RECV_B``, ``UNSHARD``, ``RESHARD``, ``REDUCE_GRAD``) are kept apart, never
    refused, with a note. A bad cell raises an InputError naming ``source``, its row and column."""
    if naming not in NAMINGS:
        raise InputError(f"naming must be one of {', '.join(NAMINGS)} (got {naming!r})", field="naming")
    lines = torch_lines(text)
    if not lines:
        raise InputError(f"{source} is empty: expected one CSV row per rank", field="order")
    if lines[0].lstrip()[:1] in ("{", "["):
        raise InputError(f"{source} holds JSON, not an order CSV: a PyTorch profiler trace is read by "
                         "`ppviz measured TRACES…` (ppviz.measured.read_run)", field="order")  # fmt: skip
    cells = [[c.strip() for c in split_cells(line)] for line in lines]
    kinds = {m.group(2) for row in cells for c in row for m in _compute_tokens(c)}
    batched = any(_BATCHED.fullmatch(c) for row in cells for c in row)
    used = choose_naming(kinds, batched, naming, source)
    table = KIND_TABLES["torch-old-full" if used == "torch-old" and "W" not in kinds else used]
    rows: list[tuple[Step | None, ...]] = []
    comms: list[CommToken] = []
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
    return TorchOrder(tuple(rows), tuple(comms), used, tuple(notes))


def choose_naming(kinds: set[str], batched: bool, naming: str, source: str) -> str:
    """The naming of an order whose compute tokens use the letters ``kinds``: ``naming`` checked, or read."""
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


def parse_comms(cell: str, rank: int) -> list[CommToken] | None:
    """The communication events of one cell (a batched token gives two), or None when it is none."""
    m = _BATCHED.fullmatch(cell)
    if m:
        g = m.groups()
        return [_p2p(rank, *g[:4]), _p2p(rank, *g[4:])]
    m = _P2P.fullmatch(cell)
    if m:
        return [_p2p(rank, *m.groups())]
    m = _STAGE_ONLY.fullmatch(cell)
    if m:
        return [CommToken(rank, m.group(2), int(m.group(1)))]
    return None


def _p2p(rank: int, stage: str, what: str, direction: str, mb: str) -> CommToken:
    return CommToken(rank, what.lower(), int(stage), int(mb), direction)


def from_torch_csv(text: str, name: str = "custom", naming: str = "auto") -> Schedule:
    """Build a schedule from an order CSV in any form PyTorch writes (``read_torch_order``; ``naming``
    ``"auto"``, ``"torch"`` or ``"torch-old"`` as ``ppviz measured --naming``), inferring placement
    from where stages run.

    A stage that runs on several ranks (DualPipe's two pipes) splits microbatches into
    directions by the rank sequence each microbatch's forwards follow.
    """
    return schedule_from_rows(parse_torch_rows(text, naming), name)


def schedule_from_rows(rows: Sequence[Sequence[Step | None]], name: str = "custom") -> Schedule:
    """A schedule from per-rank rows of steps (``None``: an idle slot), placement inferred as above."""
    devices = len(rows)
    where: dict[tuple[int, int], int] = {}  # (stage, microbatch) -> device
    stages = microbatches = 0
    for dev, row in enumerate(rows):
        for step in row:
            if step is None:
                continue
            for a in step if isinstance(step, Overlap) else (step,):
                stages = max(stages, a.stage + 1)
                microbatches = max(microbatches, a.microbatch + 1)
                prev = where.setdefault((a.stage, a.microbatch), dev)
                if prev != dev:
                    raise InputError(
                        f"stage {a.stage} microbatch {a.microbatch} runs on ranks {prev} and {dev}: "
                        "all actions of one stage and microbatch must be on one rank",
                        field="order",
                    )
    if not where:
        raise InputError("the order holds no actions", field="order")
    # Every (stage, microbatch) needs a forward, so numbers past the action count cannot be whole.
    for what, top in (("stage", stages), ("microbatch", microbatches)):
        if top > len(where):
            raise InputError(
                f"{what} {top - 1} appears, but the order has only {len(where)} stage×microbatch pairs: "
                f"number {what}s from 0 without gaps",
                field="order",
            )
    path_index: dict[tuple[int, ...], int] = {}
    directions = []
    for mb in range(microbatches):
        path = tuple(where.get((s, mb), -1) for s in range(stages))
        if -1 in path:
            missing = path.index(-1)
            raise InputError(f"stage {missing} of microbatch {mb} never runs in the order", field="order")
        directions.append(path_index.setdefault(path, len(path_index)))
    paths = tuple(sorted(path_index, key=path_index.get))
    placement = Placement(devices, stages, paths, "custom")
    return make_schedule(
        placement,
        microbatches,
        rows,
        name,
        directions=tuple(directions) if len(paths) > 1 else None,
    )
