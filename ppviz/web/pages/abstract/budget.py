"""The abstract page's work: how many actions and units a view asks for, and what the page refuses.

Prices are ``common.limits.price``, the one price of every page.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import ppviz
from ppviz import REGISTRY
from ppviz.errors import InputError
from ppviz.schedules.registry import resolve

from ...common import commands, limits, validation
from .state import CUSTOM, ViewState

# Exports of more ops than this would be tens of MB: the CLI writes them instead.
EXPORT_MAX_OPS = 100_000


def actions(state: ViewState, name: str) -> int:
    """The number of actions the schedule will have, from its sizes (0 if the core will refuse it)."""
    if name == CUSTOM:
        return validation.order_tokens(state.order or "")
    spec = REGISTRY.get(name)
    if spec is None:
        return 0
    try:
        _, _, params = resolve(spec, state.devices, state.microbatches, dict(state.params_of(name)))
    except ValueError:
        return 0  # the core says why when it is asked
    chunks = params.get("chunks") or spec.chunks or 1
    iterations = params.get("iterations") or 1
    return state.devices * state.microbatches * chunks * iterations * (3 if spec.split_backward else 2)


def cost(state: ViewState, name: str) -> int:
    """The price of one schedule of the view, in units (see the module docstring)."""
    return limits.price(name, state.devices, state.microbatches, actions(state, name))


def work(state: ViewState) -> int:
    """The price of drawing the view: the sum over the schedules on screen, and their sweep when shown."""
    return sum(cost(state, name) for name in state.shown) + sweep_work(state)


MAX_CHUNKS = 16  # the sweep along v stops at the chunks parameter's own bound


def sweep_values(state: ViewState) -> list[int]:
    """The sweep's values: powers of two around the view's own (m, p, or the first chunked schedule's
    chunks), within the page's bounds."""
    from ppviz.sweep import takes_chunks, values_around

    if state.sweep_axis == "m":
        return values_around(state.microbatches, 1, limits.MAX_MICROBATCHES)
    if state.sweep_axis == "p":
        return values_around(state.devices, 1, limits.MAX_DEVICES)
    chunked = [n for n in state.compare if takes_chunks(n)]
    current = state.params_of(chunked[0]).get("chunks", 2) if chunked else 2
    return values_around(min(max(int(current), 1), MAX_CHUNKS), 1, MAX_CHUNKS)


def at_value(state: ViewState, name: str, value: int) -> ViewState:
    """The view with the sweep's axis set to ``value`` for schedule ``name``."""
    if state.sweep_axis == "m":
        return replace(state, microbatches=value, gbs=None, mbs=None)
    if state.sweep_axis == "p":
        return replace(state, devices=value)
    spec = REGISTRY.get(name)
    if spec is None or spec.param("chunks") is None:
        return state
    return replace(state, params={**state.params, name: {**state.params.get(name, {}), "chunks": value}})


def own_point(state: ViewState, name: str, value: int) -> bool:
    """Whether the sweep's point is the view's own run (already drawn, so free): its m or p, its
    chunks, or any v for a schedule without chunks."""
    if state.sweep_axis == "m":
        return value == state.microbatches
    if state.sweep_axis == "p":
        return value == state.devices
    spec = REGISTRY.get(name)
    return spec is None or spec.param("chunks") is None or value == state.params_of(name).get("chunks")


def sweep_plan(state: ViewState) -> tuple[set[tuple[str, int]], int]:
    """The sweep's points the page computes, cheapest first while their total stays within
    ``limits.SWEEP_WORK`` (the rest are gaps giving the CLI command), and their price."""
    if state.mode != "compare" or state.compare_show != "sweep":
        return set(), 0
    priced = sorted(
        (0 if own_point(state, n, v) else cost(at_value(state, n, v), n), n, v)
        for n in state.compare
        for v in sweep_values(state)
    )
    return limits.cheapest_within(priced, limits.SWEEP_WORK)


def sweep_work(state: ViewState) -> int:
    """The sweep's price (0 unless the sweep is on screen)."""
    return sweep_plan(state)[1]


def in_background(state: ViewState) -> bool:
    """Whether drawing this view may take more than a synchronous request's budget."""
    return work(state) > limits.SYNC_WORK


def check(state: ViewState) -> None:
    """Refuse a view the page will not compute, saying what to change. Cheap: nothing is built."""
    if state.schedule == CUSTOM and state.mode == "single":
        validation.check_order(state.order or "")
    for name in state.shown:
        units = cost(state, name)
        if units > limits.BACKGROUND_WORK:
            raise InputError(too_big(state, name, units), field="devices")


def too_big(state: ViewState, name: str, units: int) -> str:
    verb = "searches for its order" if limits.factor(name) > 1 else "has"
    what = f"about {actions(state, name):,} actions" + (" to search" if limits.factor(name) > 1 else "")
    return (
        f"{name} at {state.devices} devices × {state.microbatches} microbatches {verb}: {what}, past what the "
        f"page computes ({units:,} work units; the limit is {limits.BACKGROUND_WORK:,}): lower devices or "
        f"microbatches, or use the CLI: {cli_command(state, name)}"
    )


def cli_command(state: ViewState, name: str, extra: str = "") -> str:
    """The ``ppviz simulate`` command of one schedule of the view (what to run past the page's bounds)."""
    if name == CUSTOM:
        return commands.command("simulate", order="order.csv") + cost_flags(state, name) + extra
    size = {"gbs": state.gbs, "mbs": state.mbs} if state.gbs and state.mbs else {}
    short = () if size else ("-m", state.microbatches)
    params = {k: float(v) for k, v in state.params_of(name).items()}
    command = commands.command("simulate", name, "-p", state.devices, *short, **size, **params)
    return command + cost_flags(state, name) + extra


@functools.cache
def _has_pairs(name: str) -> bool:
    """Whether the schedule overlaps F&B pairs (a small instance tells: pairing does not depend on size)."""
    try:
        return bool(ppviz.simulate(name, 4, 8).result.paired.any())
    except ValueError:
        return False


def cost_flags(state: ViewState, name: str = CUSTOM) -> str:
    """The view's costs as ``ppviz simulate`` flags, those not at the CLI's defaults. The overlap factor and
    B frees go only to a schedule that has overlapped pairs or a split backward: the CLI refuses them
    elsewhere, and there they change nothing."""
    num = validation.num
    default = ViewState()
    changed = [k for k in ("f", "b", "w", "p2p") if getattr(state, k) != getattr(default, k)]
    spec = REGISTRY.get(name)
    if state.overlap != default.overlap and spec is not None and _has_pairs(name):
        changed.append("overlap")
    if state.b_frees != default.b_frees and spec is not None and spec.split_backward:
        changed.append("b_frees")
    flags = [f"--{k.replace('_', '-')} {num(getattr(state, k))}" for k in changed]
    flags += [f"--stage-time {i}:{','.join(map(num, fbw))}" for i, fbw in sorted(state.stage_times.items())]
    if state.host_overhead:
        flags.append("--host-overhead " + ",".join(map(num, state.host_overhead)))
    return "".join(" " + flag for flag in flags)
