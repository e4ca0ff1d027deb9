"""CPU of one view drawn from cold caches: a fresh process, the app's modules imported, nothing drawn yet.

    python bench/cold_render.py abstract "#schedule=v-half&devices=32&microbatches=26"
    python bench/cold_render.py model "#schedule=v-auto&pp=56&layers=112&gbs=4&mbs=1&dp=1"

Prints one JSON line: the view's price in work units (``ppviz.web.common.limits``), whether the page
serves it synchronously, and the CPU seconds (``time.process_time``) and wall seconds of the
render call as a background job makes it (``background=True``: the view is drawn whatever its
price). Used by ``bench/bench_load.py --factors`` and by ``tests/test_web_cold_budget.py``: being a
fresh process, every cache (functools caches, the run and estimate caches) starts empty.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def measure(view: str, link: str) -> dict:
    from ppviz.web.common import cluster, compiled  # noqa: F401  (compiled: loaded at the server's start, not per view)
    from ppviz.web.pages.abstract import budget, render
    from ppviz.web.pages.abstract import state as url_state
    from ppviz.web.pages.model import render as model_render

    if view == "model":
        state = cluster.read(link)
        units, sync = model_render.work(state), not model_render.in_background(state)
        draw = model_render.render
    else:
        state, _ = url_state.bounded(url_state.parse(link).state)
        units, sync = budget.work(state), not budget.in_background(state)
        draw = render.render
    wall, cpu = time.perf_counter(), time.process_time()
    shown = draw(state, background=True)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    drawn = getattr(shown, "drawn_as", "")
    return {"view": view, "link": link, "units": units, "sync": sync, "cpu_s": cpu, "wall_s": wall, "drawn": drawn}


def in_fresh_process(view: str, link: str, timeout_s: float = 300) -> dict:
    """``measure`` run by this script in a new Python process: every cache starts empty.
    A failure comes back as ``{"error": its last line}``."""
    out = subprocess.run(
        [sys.executable, __file__, view, link], capture_output=True, text=True, timeout=timeout_s, cwd=ROOT
    )
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else str(out.returncode)}
    return json.loads(out.stdout)


def largest_sync(name: str, devices: list[int] | None = None) -> tuple[str, int] | None:
    """The link of ``name``'s largest view that the page still draws synchronously (the most work
    units within SYNC_WORK, found from the pricing; a view the core refuses costs 0), and its units:
    at each number of devices the most microbatches, then at 512 of them the most of the schedule's
    size parameter (iterations or chunks). None if no view of it is synchronous."""

    from functools import partial

    from ppviz import REGISTRY
    from ppviz.web.common import limits

    size = next((p for p in REGISTRY[name].params if p.name in ("iterations", "chunks")), None)
    best = None
    for p in devices or range(1, limits.MAX_DEVICES + 1):
        m = _last(partial(_units, name, p), 1, limits.MAX_MICROBATCHES)
        if m is None:
            continue
        link, k = f"#schedule={name}&devices={p}&microbatches={m}", None
        if size is not None and m == limits.MAX_MICROBATCHES:
            k = _last(partial(_units, name, p, m, size.name), int(size.low), int(size.high))
            link += f"&{name}.{size.name}={k}"
        units = _units(name, p, m, size.name if k else None, k)
        if units and (best is None or units > best[1]):
            best = (link, units)
    return best


def model_link(name: str, pp: int, microbatches: int) -> str:
    """A model & cluster view of ``name``: Llama 3 8B with 2·pp layers on pp devices, tp = dp = mbs = 1."""
    return f"#schedule={name}&model=llama3-8b&layers={2 * pp}&tp=1&pp={pp}&dp=1&mbs=1&gbs={microbatches}&sp=0"


def largest_sync_model(name: str, devices: list[int] | None = None) -> tuple[str, int] | None:
    """``largest_sync`` of the model & cluster view (``model_link``): at each pp the most microbatches."""
    from functools import partial

    from ppviz.web.common import limits

    best = None
    for pp in devices or range(1, limits.MAX_DEVICES + 1):
        m = _last(partial(_model_units, name, pp), 1, limits.MAX_MICROBATCHES)
        if m is not None and (best is None or _model_units(name, pp, m) > best[1]):
            best = (model_link(name, pp, m), _model_units(name, pp, m))
    return best


def _model_units(name: str, pp: int, microbatches: int) -> int:
    """The view's price, 0 when the schedule refuses these sizes (as some refuse an odd pp)."""
    from ppviz import REGISTRY
    from ppviz.schedules.registry import resolve
    from ppviz.web.common import cluster
    from ppviz.web.pages.model import render as model_render

    try:
        resolve(REGISTRY[name], pp, microbatches, {})
    except ValueError:
        return 0
    return model_render.work(cluster.read(model_link(name, pp, microbatches)))


def _units(name: str, devices: int, microbatches: int, param: str | None = None, value: int | None = None) -> int:
    from ppviz.web.pages.abstract import budget
    from ppviz.web.pages.abstract.state import ViewState

    params = {name: {param: value}} if param else {}
    return budget.cost(ViewState(schedule=name, devices=devices, microbatches=microbatches, params=params), name)


def _last(units, low: int, high: int) -> int | None:
    """The largest value in [low, high] whose ``units(value)`` is within SYNC_WORK and not 0 (0: the
    core refuses it, as some schedules refuse m < p): a bisection on the price, then down to a valid value."""
    from ppviz.web.common import limits

    ok = lambda v: units(v) <= limits.SYNC_WORK  # noqa: E731
    if ok(high):
        low = high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if ok(mid) else (low, mid)
    return next((v for v in range(low, 0, -1) if 0 < units(v) <= limits.SYNC_WORK), None)


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], sys.argv[2])))
