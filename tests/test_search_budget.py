"""Budgets counted in work, not seconds: the same search (and the same searching schedule) gives the
same answer on an idle machine and under a CPU hog."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

import ppviz
from ppviz.estimate import Model, gpu
from ppviz.search import Options

ROOT = Path(__file__).resolve().parents[1]
TINY = Model(name="tiny", layers=8, hidden=512, heads=8, kv_heads=4, ffn=1536, vocab=2048, seq=1024, gated_mlp=True)
OPT = Options(schedules=("1f1b", "zb-h1", "v-half", "v-auto", "zb-auto"), zero=(1,), recompute=("none",))
CUT = 600  # ops of searched orders: some v-* and zb-auto layouts are simulated, the rest cut

SEARCH = f"""
import json
import ppviz
from ppviz.estimate import Model, gpu
from ppviz.search import Options
tiny = Model(name="tiny", layers=8, hidden=512, heads=8, kv_heads=4, ffn=1536, vocab=2048, seq=1024, gated_mlp=True)
opt = Options(schedules=("1f1b", "zb-h1", "v-half", "v-auto", "zb-auto"), zero=(1,), recompute=("none",))
r = ppviz.search(tiny, gpu("h100-sxm", nvlink_domain=4), 8, 32, top=8, options=opt, budget_ops={CUT})
print(json.dumps([r.simulated, r.budget_cut, [(x["command"], x["iteration_s"]) for x in r.layouts + r.pareto]]))
"""
# v-auto at a memory limit, at a size where its family search is cut by its own work budget (FAMILY_WORK)
SCHEDULE = """
from ppviz import schedules
from ppviz.costs import Costs
s = schedules.build("v-auto", 12, 36, max_memory=7.5, costs=Costs(1.0, 1.3, 0.8, p2p=0.05))
print(repr([[str(a) for a in row] for row in s.order]))
"""


def _fresh(code: str) -> str:
    """``code`` run in a new interpreter (cold caches, as a new command), its stdout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextmanager
def cpu_hog(seconds: float = 20.0):
    """Busy loops on every core (at most two), each ending by itself after ``seconds``; stopped by PID."""
    loop = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
    hogs = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(min(2, os.cpu_count() or 1))]
    try:
        time.sleep(0.2)  # running before the work starts
        assert all(h.poll() is None for h in hogs)
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def test_the_budget_decides_what_is_simulated():
    """A budget of ops cuts some searched-order layouts, a larger one none: the ranking depends on it
    (and only on it)."""
    g = gpu("h100-sxm", nvlink_domain=4)
    runs = {b: ppviz.search(TINY, g, 8, 32, top=8, options=OPT, budget_ops=b) for b in (0, CUT, 10**9)}
    assert runs[0].budget_cut > runs[CUT].budget_cut > 0 == runs[10**9].budget_cut
    assert "ops of orders built" in runs[CUT].notes[0] and runs[CUT].to_dict()["budget_ops"] == CUT
    schedules = {b: {r["schedule"] for r in res.layouts} for b, res in runs.items()}
    searching = {"v-half", "v-auto", "zb-auto"}  # the schedules that search their order
    assert not schedules[0] & searching and schedules[CUT] & searching
    with pytest.raises(ValueError, match="whole number of ops"):
        ppviz.search(TINY, g, 8, 32, budget_ops=2.0)


@pytest.mark.slow
def test_same_answers_under_a_cpu_hog():
    """The search (its budget partly spent) and v-auto at a memory limit, each run as a fresh command
    twice, once beside busy loops on every core: the same ranking, cut and order, to the bit."""
    idle = _fresh(SEARCH), _fresh(SCHEDULE)
    with cpu_hog():
        loaded = _fresh(SEARCH), _fresh(SCHEDULE)
    assert loaded == idle
    simulated, cut, rows = json.loads(idle[0])
    assert cut > 0 and simulated > 0 and rows
