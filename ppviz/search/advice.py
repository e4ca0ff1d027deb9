"""Advice for a layout that does not fit: the nearest layouts that do, found by the search engine.

Around the user's layout each setting that can lower memory has its alternatives, each some steps
away: more pipeline devices (taken from dp, or more GPUs when dp cannot give them), heavier
recompute, a higher ZeRO stage, a smaller micro-batch, more context parallelism, sequence
parallelism on, fewer chunks, another schedule. Candidates are tried in order of how few settings
change, then how few steps; each is one small ``search`` (its memory bounds skip what cannot fit
without simulating), and within the first rings that hold ``count`` fitting layouts the fastest
come first. The work is bounded by ``budget``, counted in layouts evaluated, never in seconds, so
the same inputs give the same advice on any machine.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .. import schedules
from ..estimate import specs
from ..estimate.iteration import Estimate, estimate, resolve
from ..estimate.specs import RECOMPUTE, Gpu, Layout, Model
from ..units import GIB
from . import result, space
from .engine import search

BUDGET = 200  # candidate layouts evaluated at most (each a small search: a few ms, most pruned by a bound)
MAX_CHANGES = 3  # settings changed at once
# Schedules offered in place of the user's: the common non-searching families (the searching ones, v-* and
# zb-auto, build and time up to thousands of candidate orders per layout: too dear for a ring of advice)
SCHEDULES = ("1f1b", "zb-v", "interleaved-1f1b", "zb-h1")
CARRIED = ("precision", "dp_overlap", "b_frees", "pair_overlap")  # kept as the user set them


@dataclass(frozen=True)
class Advice:
    """One layout that fits: what changed from the user's, its time and memory, and its command."""

    changes: tuple[str, ...]  # "pp 4 → 8", "recompute selective → full", ...
    layout: Layout
    iteration_s: float
    tokens_per_s: float
    mfu: float
    peak_bytes: float  # the fullest device's
    capacity_bytes: float
    usable_bytes: float  # the capacity less the GPU's reserve: what "fits" is measured against
    command: str

    def to_dict(self) -> dict:
        lay = {k: getattr(self.layout, k) for k in (*result.LAYOUT_FIELDS, "gbs", "layer_split")}
        lay = {k: list(v) if isinstance(v, tuple) else v for k, v in lay.items()}
        return {
            "changes": list(self.changes),
            "layout": lay,
            "gpus": self.layout.gpus,
            "iteration_s": self.iteration_s,
            "tokens_per_s": self.tokens_per_s,
            "mfu": self.mfu,
            "peak_bytes": self.peak_bytes,
            "capacity_bytes": self.capacity_bytes,
            "usable_bytes": self.usable_bytes,
            "command": self.command,
        }


@dataclass(frozen=True)
class Advised:
    """Why a layout does not fit, and the nearest layouts that do (empty when none was found)."""

    why: str
    advice: tuple[Advice, ...]
    evaluated: int  # candidate layouts evaluated
    budget: int

    @property
    def exhausted(self) -> bool:
        """The budget ran out before ``count`` fitting layouts were found."""
        return self.evaluated >= self.budget


@dataclass(frozen=True)
class _Change:
    """One setting moved ``steps`` away from the user's value."""

    name: str
    value: object
    steps: int


def why(est: Estimate) -> str:
    """One line from the breakdown: what fills the fullest device, and a ZeRO stage that shards nothing."""
    d = int(np.argmax(est.peak_bytes))
    st = est.static_bytes
    static = float(st["weight"][d] + st["grad"][d] + st["optimizer"][d])
    cap = est.usable_bytes
    usable = f"{_gib(cap)} usable ({_gib(est.capacity_bytes)} HBM − {_gib(est.reserve_bytes)} reserve)"
    if static > cap:
        text = f"weights + gradients + optimizer alone take {_gib(static)} of {usable} (device {d})"
    else:
        act = float(est.activation.peak[d])
        text = (
            f"weights + gradients + optimizer take {_gib(static)} and activations {_gib(act)} at their peak: "
            f"{_gib(static + act)} of {usable} (device {d})"
        )
    lay = est.layout
    shard = lay.dp * lay.cp
    if lay.zero and shard == 1:
        text += f"; ZeRO-{lay.zero} over dp 1 shards nothing"
    elif not lay.zero and shard > 1:
        text += f"; ZeRO 0: each of the {shard} data-parallel ranks holds the whole optimizer state"
    return text


def _gib(n: float) -> str:
    return f"{n / GIB:,.2f} GiB"


def advise(
    model: Model | str,
    gpu: Gpu | str,
    layout: Layout,
    *,
    count: int = 3,
    budget: int = BUDGET,
    headroom: float = 0.0,
    est: Estimate | None = None,
    accept: Callable[[Layout], bool] | None = None,
) -> Advised:
    """The ``count`` nearest layouts to ``layout`` that fit ``gpu`` (fewest settings changed, then the
    smallest changes, then the fastest), evaluating at most ``budget`` candidate layouts, and why
    ``layout`` itself does not fit. ``est``: its estimate, when the caller has it. ``accept``: which
    candidate layouts the caller can use (the page: those it draws at once); the rest are not evaluated.
    A layout that fits gets no advice."""
    model, gpu = resolve(model, gpu)
    for name, v in (("count", count), ("budget", budget)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"advice {name} must be a whole number ≥ 1 (got {v!r})")
    est = est if est is not None else estimate(model, gpu, layout)
    if est.fits:
        return Advised("", (), 0, budget)
    layout = replace(layout, gbs=est.global_batch)  # None: one microbatch per DP rank, as estimated
    found: dict[Layout, tuple] = {}  # layout -> (distance, time, advice)
    evaluated = 0
    for distance, ring in itertools.groupby(_candidates(model, layout), key=_distance):
        for changes in ring:
            lay, names = _apply(layout, changes)
            if accept is not None:
                names = tuple(n for n in names if accept(replace(lay, schedule=n, vpp=_vpp(lay, n))))
            if not names:
                continue
            if evaluated + len(names) > budget:
                evaluated = budget
                break
            evaluated += len(names)
            for a in _fitting(model, gpu, layout, lay, names, headroom):
                found.setdefault(a.layout, (distance, a.iteration_s, a))
        if len(found) >= count or evaluated >= budget:
            break
    nearest = tuple(a for _, _, a in sorted(found.values(), key=lambda f: f[:2]))[:count]
    return Advised(why(est), nearest, evaluated, budget)


def _distance(changes: tuple[_Change, ...]) -> tuple[int, int]:
    """Settings changed (a GPU count that changes is one of them), then the steps they moved."""
    return len(changes), sum(c.steps for c in changes)


def _alternatives(model: Model, lay: Layout) -> dict[str, list[_Change]]:
    """Each setting's values that can lower the peak, with their steps from the user's value."""
    alt: dict[str, list[_Change]] = {}
    alt["pp"] = [_Change("pp", lay.pp * 2**k, k) for k in (1, 2, 3) if lay.pp * 2**k <= model.layers]
    rec = space.default_recompute(model) if lay.recompute != "selective" else RECOMPUTE
    heavier = [r for r in rec if RECOMPUTE.index(r) > RECOMPUTE.index(lay.recompute)]
    alt["recompute"] = [_Change("recompute", r, i + 1) for i, r in enumerate(heavier)]
    if lay.dp * lay.cp > 1:  # over one rank ZeRO shards nothing
        alt["zero"] = [_Change("zero", z, z - lay.zero) for z in range(lay.zero + 1, 4)]
    smaller = [b for b in reversed(space.divisors(lay.mbs)) if b < lay.mbs]
    alt["mbs"] = [_Change("mbs", b, i + 1) for i, b in enumerate(smaller)]
    alt["cp"] = [_Change("cp", lay.cp * 2**k, k) for k in (1, 2) if model.seq % (lay.cp * 2**k) == 0]
    if lay.tp > 1 and not lay.sequence_parallel and lay.tp_mode == "1d":
        alt["sequence_parallel"] = [_Change("sequence_parallel", True, 1)]
    if lay.vpp > 2:
        alt["vpp"] = [_Change("vpp", v, lay.vpp - v) for v in range(lay.vpp - 1, 1, -1)]
    if any(s != lay.schedule for s in SCHEDULES):  # one change: every other schedule in one search
        alt["schedule"] = [_Change("schedule", None, 1)]
    return {k: v for k, v in alt.items() if v}


def _candidates(model: Model, lay: Layout):
    """Every combination of up to MAX_CHANGES alternatives, nearest first (a stable order)."""
    alt = _alternatives(model, lay)
    out = []
    for k in range(1, MAX_CHANGES + 1):
        for names in itertools.combinations(alt, k):
            if "schedule" in names and "vpp" in names:
                continue
            for picks in itertools.product(*(alt[n] for n in names)):
                # from dp when it can give it, else more GPUs: a change of its own, a step per doubling and one
                # more, so that a layout on the same GPUs comes first among equally near ones
                grow = _growth(lay, picks)
                out.append(picks + ((_Change("gpus", None, grow.bit_length()),) if lay.dp % grow else ()))
    out.sort(key=_distance)
    return out


def _growth(user: Layout, changes: tuple[_Change, ...]) -> int:
    """How many times more pp · cp the changes ask for."""
    out = 1
    for c in changes:
        if c.name in ("pp", "cp"):
            out *= c.value // getattr(user, c.name)
    return out


def _apply(user: Layout, changes: tuple[_Change, ...]) -> tuple[Layout, tuple[str, ...]]:
    """The user's layout with ``changes``; more pp or cp comes out of dp, or adds GPUs when dp cannot give it.
    The schedules to search (every other one when the schedule changes)."""
    grow = _growth(user, changes)
    lay = replace(user, dp=user.dp // grow if user.dp % grow == 0 else user.dp)
    names: tuple[str, ...] = (user.schedule,)
    for c in changes:
        if c.name == "schedule":
            names = tuple(s for s in SCHEDULES if s != user.schedule)
        elif c.name != "gpus":
            lay = replace(lay, **{c.name: c.value})
    return lay, names


def _fitting(model, gpu, user: Layout, lay: Layout, names: tuple[str, ...], headroom: float) -> list[Advice]:
    """The fastest layout of this candidate that fits, found by one small search (none when nothing fits)."""
    mode = (lay.tp_mode,)
    opt = space.Options(
        tp=[lay.tp], cp=[lay.cp], pp=[lay.pp], dp=[lay.dp], ep=[lay.ep], mbs=[lay.mbs], schedules=list(names),
        vpp=[max(lay.vpp, 2)], recompute=[lay.recompute], sequence_parallel=[lay.sequence_parallel],
        zero=[lay.zero], headroom=headroom, nvlink_placements=False, tp_mode=mode,
        tp2d=[lay.tp2d] if lay.tp2d else None, summa_blocks=[lay.summa_blocks] if lay.tp2d else None,
        tp_comm_overlap=user.tp_comm_overlap and lay.sequence_parallel,
        carry=tuple((k, getattr(user, k)) for k in CARRIED),
    )  # fmt: skip
    # partition (0, 1) is the whole space, answered with no rows (not an error that looks for the closest
    # layout) when nothing divides or fits
    res = search(model, gpu, lay.gpus, lay.gbs, top=1, options=opt, pareto=False, partition=(0, 1))
    if not res.layouts:
        return []
    row = res.layouts[0]
    found = _layout_of(row, user)
    return [
        Advice(
            changes=_describe(user, found), layout=found, iteration_s=row["iteration_s"],
            tokens_per_s=row["tokens_per_s"], mfu=row["mfu"], peak_bytes=max(row["peak_bytes"]),
            capacity_bytes=row["capacity_bytes"], usable_bytes=row["capacity_bytes"] - row["reserve_bytes"],
            command=row["command"],
        )
    ]  # fmt: skip


def _layout_of(row: dict, user: Layout) -> Layout:
    """A ranked row's layout, with the user's carried settings."""
    fields = {k: row[k] for k in result.LAYOUT_FIELDS}
    for k in ("tp2d", "nvlink_dp_pp"):
        fields[k] = tuple(fields[k]) if fields[k] else None
    split = tuple(row["layer_split"]) if row["layer_split"] else None
    return specs.Layout(**fields, gbs=row["gbs"], layer_split=split, **{k: getattr(user, k) for k in CARRIED})


def _describe(user: Layout, lay: Layout) -> tuple[str, ...]:
    """What differs, in the user's words: "pp 4 → 8", "GPUs 32 → 64", "sequence parallel off → on"."""
    out = []
    for k, label in (("schedule", "schedule"), ("pp", "pp"), ("dp", "dp"), ("cp", "cp"), ("vpp", "vpp"),
                     ("mbs", "mbs"), ("recompute", "recompute"), ("zero", "ZeRO"),
                     ("sequence_parallel", "sequence parallel")):  # fmt: skip
        a, b = getattr(user, k), getattr(lay, k)
        if k == "vpp" and (_chunks(user) is None or _chunks(lay) is None):
            continue  # vpp of a schedule that takes no chunks means nothing
        if a != b:
            out.append(f"{label} {_word(a)} → {_word(b)}")
        if k == "schedule" and a != b and _chunks(lay) is not None:
            out[-1] += f" (vpp {lay.vpp})"
    if user.gpus != lay.gpus:
        out.append(f"GPUs {user.gpus:,} → {lay.gpus:,}")
    return tuple(out)


def _vpp(lay: Layout, name: str) -> int:
    """The chunks ``name`` runs with: the layout's (at least 2) when it takes chunks, else its own count."""
    spec = schedules.get(name)
    return max(lay.vpp, 2) if spec.param("chunks") is not None else spec.chunks or 1


def _chunks(lay: Layout):
    return schedules.get(lay.schedule).param("chunks")


def _word(v: object) -> str:
    return {True: "on", False: "off"}.get(v, str(v)) if isinstance(v, bool) else str(v)


__all__ = ["Advice", "Advised", "advise", "why"]
