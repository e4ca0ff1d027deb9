"""The advice card of a view that does not fit: ``ppviz.search.advice.advise`` of its schedule, among the
layouts the page draws at once (a callback of its own after the view is drawn, so the view never waits)."""

from __future__ import annotations

from dataclasses import dataclass

from ppviz import units
from ppviz.search.advice import advise

from ...common import caches, cluster
from ...common.cluster import ModelState, Reading
from . import render
from .state import state_of

ADVICE = caches.Cache(render.CACHE_SIZE)  # advice is a few dozen small searches: kept like the estimates
ADVICE_ROWS = 3


@dataclass(frozen=True)
class AdviceCard:
    """Why the view's layout does not fit, and the nearest that do: (what changed and their figures, the
    state that shows it)."""

    why: str
    rows: tuple[tuple[str, ModelState], ...]


def advice_card(reading: Reading) -> AdviceCard | None:
    """The advice of the view's schedule when it does not fit (one schedule on screen), among the layouts
    the page draws at once; None when it fits or cannot be estimated."""
    state = reading.state
    if state.mode != "single" or not render.drawable(reading):  # a background job's view: not estimated here
        return None
    try:
        est = render.estimate_of(reading, state.schedule)
    except ValueError:
        return None
    if est.fits:
        return None
    key = (est.model, est.gpu, est.layout)
    advised = ADVICE.get(key)
    if advised is None:
        advised = advise(est.model, est.gpu, est.layout, count=ADVICE_ROWS, est=est,
                         accept=lambda lay: render.drawable(cluster.derive(state_of(state, lay))))  # fmt: skip
        ADVICE.put(key, advised)
    rows = tuple((_advice_text(a), state_of(state, a.layout)) for a in advised.advice)
    return AdviceCard(advised.why, rows)


def _advice_text(a) -> str:
    return (
        f"{', '.join(a.changes)}: {units.duration(a.iteration_s)}, MFU {a.mfu:.1%}, peak "
        f"{units.gib(a.peak_bytes)} of {units.gib(a.usable_bytes)} usable"
    )


def clear_cache() -> None:
    ADVICE.clear()
