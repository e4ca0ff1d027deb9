"""The model page's work: what a view of it costs and what the page refuses, before anything is built.

Prices are ``common.limits.price``, the one price of every page, with the estimate's extra per action.
"""

from __future__ import annotations

from dataclasses import replace

from ppviz import REGISTRY
from ppviz.errors import InputError

from ...common import limits
from ...common.cluster import LAYOUT_FIELDS, ModelState, cli_command, iterations_of


def check(state: ModelState) -> None:
    """Refuse a view past what the page computes, saying what to change (cheap: nothing is built)."""
    m = state.microbatches
    if m is not None and m > limits.MAX_MICROBATCHES:
        raise InputError(
            f"gbs {state.gbs} / (dp·mbs = {state.dp}·{state.mbs}) gives {m:,} microbatches; the page draws at most "
            f"{limits.MAX_MICROBATCHES}: raise mbs or dp, or lower gbs, or use the CLI: "
            f"{cli_command(state, state.shown[0] if state.shown else state.schedule)}",
            field="gbs",
        )
    for name in state.shown:
        k = iterations_of(state, name)
        if m is not None and k > 1 and m * k > limits.MAX_MICROBATCHES:
            raise InputError(
                f"iterations {k} × {m} microbatches make {m * k:,} in the run; the page draws at most "
                f"{limits.MAX_MICROBATCHES}: lower iterations or gbs, or use the CLI: {cli_command(state, name)}",
                field="iterations",
            )
        units = cost(state, name)
        if units > limits.BACKGROUND_WORK:
            raise InputError(
                f"{name} at pp {state.pp} × {m} microbatches is about {units:,} work units, past what the page "
                f"computes ({limits.BACKGROUND_WORK:,}): lower pp or the microbatches, or use the CLI: "
                f"{cli_command(state, name)}",
                field="pp",
            )


def actions(state: ModelState, name: str) -> int:
    spec = REGISTRY.get(name)
    m = state.microbatches
    if spec is None or m is None:
        return 0
    chunks = state.vpp if spec.param("chunks") is not None else (spec.chunks or 1)
    return state.pp * m * iterations_of(state, name) * chunks * (3 if spec.split_backward else 2)


def cost(state: ModelState, name: str) -> int:
    """The price of one schedule of the view: ``limits.price``, as the abstract view's, estimated."""
    return limits.price(name, state.pp, state.microbatches or 0, actions(state, name), estimated=True)


def work(state: ModelState) -> int:
    """The price of the view: its schedules, and their sweep when it is on screen."""
    return sum(cost(state, n) for n in state.shown) + sweep_work(state)


MAX_VPP = int(LAYOUT_FIELDS["vpp"].high)


def sweep_values(state: ModelState) -> list[int]:
    """Powers of two around the view's own m, vpp or pp, within the page's bounds."""
    from ppviz.sweep import values_around

    if state.sweep_axis == "m":
        return values_around(min(state.microbatches or 1, limits.MAX_MICROBATCHES), 1, limits.MAX_MICROBATCHES)
    if state.sweep_axis == "p":
        return values_around(state.pp, 1, limits.MAX_DEVICES)
    return values_around(state.vpp, 1, MAX_VPP)


def at_value(state: ModelState, value: int) -> ModelState:
    """The view with the sweep's axis at ``value`` (m sets the global batch to m·dp·mbs)."""
    field_name = {"m": "gbs", "v": "vpp", "p": "pp"}[state.sweep_axis]
    return replace(state, **{field_name: value * state.dp * state.mbs if state.sweep_axis == "m" else value})


def sweep_plan(state: ModelState) -> tuple[set[tuple[str, int]], int]:
    """The sweep's points the page estimates, cheapest first within ``limits.SWEEP_WORK`` (the view's
    own value is free: it is estimated anyway), and their price; the rest are gaps naming the CLI."""
    if state.mode != "compare" or state.compare_show != "sweep":
        return set(), 0
    own = {"m": state.microbatches, "v": state.vpp, "p": state.pp}[state.sweep_axis]
    priced = sorted(
        (0 if v == own else cost(at_value(state, v), n), n, v) for n in state.compare for v in sweep_values(state)
    )
    return limits.cheapest_within(priced, limits.SWEEP_WORK)


def sweep_work(state: ModelState) -> int:
    return sweep_plan(state)[1]


def in_background(state: ModelState) -> bool:
    return work(state) > limits.SYNC_WORK
