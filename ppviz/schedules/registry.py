"""One registry entry per schedule: name, description, reference, parameters, constraints and
closed form. The CLI, the page's controls and the README table are all generated from it."""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from ..costs import Costs
from ..errors import InputError
from ..ir import Schedule

MAX_ACTIONS = 2_000_000  # beyond this a schedule is refused rather than exhausting memory


@dataclass(frozen=True)
class Param:
    """A schedule-specific parameter with its range (``high=None``: unbounded)."""

    name: str
    type: type  # int or float
    default: object  # None means "derived", e.g. group size defaults to devices
    low: float
    high: float | None
    help: str
    aliases: tuple[str, ...] = ()  # other accepted names, e.g. Megatron's own for the group size


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    reference: str
    build: Callable[..., Schedule]  # build(devices, microbatches, **params)
    params: tuple[Param, ...] = ()
    check: Callable[..., None] | None = None  # check(devices, microbatches, **params); raises ValueError
    formula: Callable[..., float | None] | None = None  # formula(p, m, costs, **params) -> makespan
    formula_text: str = ""
    chunks: int | None = 1  # fixed chunks per device; None when set by the ``chunks`` parameter
    split_backward: bool = False
    memory_text: str = ""  # peak activation per device, as a formula
    uses_costs: bool = False  # build(..., costs=Costs) searches under the real op times

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


REGISTRY: dict[str, Spec] = {}


def register(spec: Spec) -> Spec:
    if spec.name in REGISTRY:
        raise RuntimeError(f"schedule {spec.name} registered twice")
    REGISTRY[spec.name] = spec
    return spec


def get(name: str) -> Spec:
    try:
        return REGISTRY[name]
    except KeyError:
        raise InputError(f"unknown schedule {name!r}; choose one of: {', '.join(REGISTRY)}", field="schedule") from None


def _check_int(name: str, v: object, low: int, high: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
        raise InputError(f"{name} must be a whole number (got {v!r})", field=name)
    v = int(v)
    if v < low or (high is not None and v > high):
        rng = f"≥ {low}" if high is None else f"between {low} and {high}"
        raise InputError(f"{name} must be {rng} (got {v})", field=name)
    return v


def resolve(spec: Spec, devices: object, microbatches: object, params: dict) -> tuple[int, int, dict]:
    """Check types and ranges and fill defaults; the result is what ``build`` receives."""
    p = _check_int("devices", devices, 1)
    m = _check_int("microbatches", microbatches, 1)
    params = {k: v for k, v in params.items() if v is not None}
    for q in spec.params:
        for alias in q.aliases:
            if alias in params:
                v = params.pop(alias)
                both = params.get(q.name, v)
                if both != v:
                    raise InputError(
                        f"{alias} is another name for {q.name}: give one (got {v} and {both})", field=q.name
                    )
                params[q.name] = v
    chunks = params.pop("chunks", None) if spec.param("chunks") is None else None
    if chunks is not None and chunks != spec.chunks:
        raise InputError(
            f"{spec.name} has {spec.chunks} chunk(s) per device; drop the chunks setting (got {chunks})", field="chunks"
        )
    unknown = sorted(set(params) - {q.name for q in spec.params})
    if unknown:
        takes = ", ".join(q.name for q in spec.params) or "no extra parameters"
        raise InputError(f"{spec.name} does not take {', '.join(unknown)} (it takes {takes})", field=unknown[0])
    out = {}
    for q in spec.params:
        v = params.get(q.name, q.default)
        if v is None:
            out[q.name] = None
            continue
        if q.type is int:
            out[q.name] = _check_int(q.name, v, int(q.low), None if q.high is None else int(q.high))
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise InputError(f"{q.name} must be a number (got {v!r})", field=q.name)
            if v < q.low or (q.high is not None and v > q.high):
                rng = f"≥ {q.low:g}" if q.high is None else f"between {q.low:g} and {q.high:g}"
                raise InputError(f"{q.name} must be {rng} (got {v:g})", field=q.name)
            out[q.name] = float(v)
    if spec.check is not None:
        spec.check(p, m, **out)
    chunks_per_device = out.get("chunks") or spec.chunks or 1
    iterations = out.get("iterations") or 1
    size = p * m * chunks_per_device * iterations * (3 if spec.split_backward else 2)
    if size > MAX_ACTIONS:
        raise InputError(
            f"{spec.name} at {p} devices × {m} microbatches would have about {size:,} actions; "
            f"the limit is {MAX_ACTIONS:,}: use fewer devices, microbatches or chunks",
            field="devices",
        )
    return p, m, out


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector while a generator allocates its actions.

    A generator makes hundreds of thousands of small tuples that cannot form cycles, yet each
    few hundred allocations trigger a collection pass over all of them: with the collector on,
    generation takes about three times as long.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def build(name: str, devices: object, microbatches: object, costs: Costs | None = None, **params) -> Schedule:
    """Generate the named schedule, with its constraints checked up front.

    Schedules that search for the least bubble (``uses_costs``) are also given the op times.
    """
    spec = get(name)
    p, m, args = resolve(spec, devices, microbatches, params)
    extra = {"costs": costs} if spec.uses_costs and costs is not None else {}
    with gc_paused():
        schedule = spec.build(p, m, **args, **extra)
    return replace(schedule, name=spec.name, params={"microbatches": m, **args})


def formula(schedule: Schedule, costs: Costs) -> float | None:
    """The closed-form makespan, where one is known for these sizes (latency 0, uniform stages)."""
    spec = REGISTRY.get(schedule.name)
    if spec is None or spec.formula is None or not costs.uniform or costs.p2p:
        return None
    args = dict(schedule.params)
    m = args.pop("microbatches", schedule.microbatches)
    try:
        return spec.formula(schedule.devices, m, costs, **args)
    except TypeError:  # params of a hand-edited schedule that the formula does not know
        return None
