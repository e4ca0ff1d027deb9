"""Every synchronously served view stays under the documented budget from cold caches (issue #18).

For each schedule, the largest view the pricing still serves synchronously (``largest_sync`` in
bench/cold_render.py: the most work units within ``limits.SYNC_WORK``) is drawn in a fresh process,
so that every cache (functools caches, the run and estimate caches) starts empty, and its render
call must take under 0.5 s of CPU (``time.process_time``, ``limits.SYNC_BUDGET_S``), the promise of
the README's serving section (SYNC_WORK is priced at 0.3 s: the rest is margin). CPU time, not wall
time, so other work on the machine slows it little; a busy neighbour can still inflate one process's
CPU time, so a view gets up to three fresh runs and the least counts (a view that really takes
longer fails all three).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ppviz import REGISTRY
from ppviz.web.common import limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import cold_render  # noqa: E402

BUDGET_S = limits.SYNC_BUDGET_S  # 0.5 s of CPU, as the README says
TRIES = 3
SEARCHING = [n for n, s in REGISTRY.items() if s.uses_costs]
# every schedule's largest synchronous view, and the searching ones' widest too (the most devices that
# still have one: their search grows with the devices); the model & cluster view's of some schedules
CASES = [(n, "largest") for n in REGISTRY] + [(n, "widest") for n in SEARCHING]
MODEL_CASES = [("zb-v", "largest"), ("v-zb", "largest"), ("v-auto", "largest"), ("v-auto", "widest")]


def find(largest, name: str, which: str):
    """``largest`` (cold_render.largest_sync or largest_sync_model) overall, or at the most devices."""
    if which == "largest":
        return largest(name)
    return next(filter(None, (largest(name, [p]) for p in range(limits.MAX_DEVICES, 0, -1))), None)


def cold_cpu(view: str, link: str) -> dict:
    run = cold_render.in_fresh_process(view, link, timeout_s=120)
    assert "error" not in run, run
    return run


def least_cpu(view: str, link: str) -> dict:
    """The run with the least CPU of up to TRIES fresh processes (the first under budget ends it)."""
    runs = []
    for _ in range(TRIES):
        runs.append(cold_cpu(view, link))
        if runs[-1]["cpu_s"] < BUDGET_S:
            break
    return min(runs, key=lambda r: r["cpu_s"])


@pytest.mark.slow  # a fresh process per view: empty caches are what it measures
@pytest.mark.parametrize(
    ("view", "name", "which"),
    [("abstract", n, w) for n, w in CASES] + [("model", n, w) for n, w in MODEL_CASES],
    ids=[f"{n}-{w}" for n, w in CASES] + [f"model-{n}-{w}" for n, w in MODEL_CASES],
)
def test_the_largest_synchronous_view_takes_under_the_budget_from_cold_caches(view, name, which):
    """Both views are priced by one function (the model view's v-auto devices² term included)."""
    link, units = find(cold_render.largest_sync if view == "abstract" else cold_render.largest_sync_model, name, which)
    assert 0 < units <= limits.SYNC_WORK
    run = least_cpu(view, link)
    assert run["sync"] and run["units"] == units and run["drawn"] not in ("none", "queued"), run
    assert run["cpu_s"] < BUDGET_S, f"{link}: {run['cpu_s']:.3f} s of CPU from cold caches"
