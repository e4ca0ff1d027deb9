"""The compiled event pass against its plain-Python reference: bit-identical start times on every
registered schedule and on random orders, the same deadlocks, and the fallback without numba."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppviz
from ppviz import Costs, DeadlockError, ScheduleError, eventpass, eventpass_reference
from ppviz.simulator import simulate

ROOT = Path(__file__).resolve().parents[1]
NAMES = sorted(ppviz.REGISTRY)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal as IEEE bit patterns: stricter than ==, which takes -0.0 for 0.0."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _compiled():
    assert eventpass.warm(), "numba is installed here, so the compiled pass must load"
    return eventpass._kernel


@pytest.fixture
def both(monkeypatch):
    """Every pass that ``simulate`` runs is run by both passes, which must agree bit for bit."""
    compiled, calls = _compiled(), []

    def run(bounds, dep, p2p, dur):
        got = compiled(*eventpass.typed(bounds, dep, p2p, dur))
        want = eventpass_reference.run(bounds, dep, p2p, dur)
        assert _same_bits(got[0], want[0]), "the compiled pass's start times differ from the reference's"
        assert np.array_equal(got[1], want[1]), "the compiled pass stopped elsewhere than the reference"
        calls.append(len(dur))
        return got

    monkeypatch.setattr(eventpass, "run", run)
    return calls


def _links(p: int) -> list[list[float]]:
    """Uneven, asymmetric link latencies (0 to self), so the slowest link of a step matters."""
    return [[0.0 if a == b else 0.05 * (1 + (3 * a + 7 * b) % 5) for b in range(p)] for a in range(p)]


SETTINGS = {
    "uniform": lambda p: Costs(),
    "uneven with latency": lambda p: Costs(1.1, 2.3, 0.7, p2p=0.3),
    "link latencies": lambda p: Costs(1.0, 1.7, 0.9, link_p2p=_links(p)),
    "overlapped pairs": lambda p: Costs(1.0, 2.0, 1.0, p2p=0.1, overlap=0.7),
    "heavy last share": lambda p: Costs(stage_times={p - 1: (2.0, 3.1, 1.3)}, p2p=0.2),
}


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("name", NAMES)
def test_every_schedule_times_bit_identically(name, setting, both):
    spec = ppviz.REGISTRY[name]
    for p in (1, 2, 3, 4, 6):
        for m in (1, 3, 8, 12):
            for v in (1, 2, 3) if spec.param("chunks") is not None else (None,):
                try:
                    schedule = ppviz.build(name, p, m, **({} if v is None else {"chunks": v}))
                except ValueError:
                    continue
                simulate(schedule, SETTINGS[setting](schedule.devices))
    assert both, f"{name} built on none of the sizes"


@pytest.mark.parametrize("name", [n for n in NAMES if ppviz.REGISTRY[n].param("iterations") is not None])
def test_optimizer_steps_between_iterations_time_bit_identically(name, both):
    for p, m, k in ((2, 4, 2), (4, 8, 3), (5, 10, 2)):
        schedule = ppviz.build(name, p, m, iterations=k)
        steps = [0.5 + 1.25 * d for d in range(p)]
        simulate(schedule, Costs(1.0, 2.0, 0.5, p2p=0.15, optimizer_step=steps))
        simulate(schedule, Costs(1.0, 2.0, 0.5, link_p2p=_links(p), optimizer_step=steps[::-1]))
    assert len(both) == 6


@st.composite
def pass_inputs(draw):
    """Random steps on 1–5 devices: each depends on nothing or on any step (cycles included, so
    many deadlock), with durations and latencies from a few awkward floats."""
    lengths = draw(st.lists(st.integers(0, 12), min_size=1, max_size=5))
    n = sum(lengths)
    bounds = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    dep = np.array(draw(st.lists(st.integers(-1, max(n - 1, -1)), min_size=n, max_size=n)), dtype=np.int64)
    times = st.sampled_from([0.0, 0.1, 0.3, 1.0, 1 / 3, 2.5, 1e-9, 7e8])
    dur = np.array(draw(st.lists(times, min_size=n, max_size=n)), dtype=np.float64)
    p2p = np.array(draw(st.lists(times, min_size=n, max_size=n)), dtype=np.float64)
    return bounds, dep, p2p, dur


@settings(max_examples=200)  # cheap: each example is two passes over at most 60 steps
@given(pass_inputs())
def test_random_steps_run_and_stop_exactly_as_the_reference(inputs):
    start, stopped = _compiled()(*inputs)
    want_start, want_stopped = eventpass_reference.run(*inputs)
    assert np.array_equal(stopped, want_stopped)
    done = np.concatenate([np.arange(lo, hi) for lo, hi in zip(inputs[0][:-1], stopped)] + [np.arange(0)])
    assert _same_bits(start[done], want_start[done])  # steps never reached have no start


@st.composite
def shuffled(draw):
    """A small registered schedule with some device rows shuffled: often a deadlock."""
    name = draw(st.sampled_from(NAMES))
    kwargs = {"chunks": draw(st.integers(1, 2))} if ppviz.REGISTRY[name].param("chunks") is not None else {}
    try:
        sched = ppviz.build(name, draw(st.integers(2, 4)), draw(st.integers(1, 6)), **kwargs)
    except ValueError:
        sched = ppviz.build("1f1b", 3, 4)
    rng = draw(st.randoms(use_true_random=False))
    rows = [list(r) for r in sched.order]
    for row in rows:
        if rng.random() < 0.5:
            rng.shuffle(row)
    return dataclasses.replace(sched, steps=tuple(map(tuple, rows)))


@given(shuffled(), st.sampled_from([Costs(), Costs(1.0, 2.0, 0.5, p2p=0.5), Costs(overlap=0.6, p2p=0.1)]))
def test_shuffled_orders_run_or_deadlock_alike(sched, costs):
    """Compiled and reference give the same times, or the same deadlock message word for word."""
    outcomes = []
    for kernel in (_compiled(), eventpass_reference.run):
        try:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(eventpass, "_kernel", kernel)
                result = simulate(sched, costs)
            outcomes.append(result.start.tobytes())
        except DeadlockError as e:
            outcomes.append(str(e))
        except ScheduleError:
            return
    assert outcomes[0] == outcomes[1]


def test_without_numba_the_reference_runs_after_one_warning():
    compiled = _compiled()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(eventpass, "_kernel", None)
        mp.setattr(eventpass, "LOAD_AFTER_STEPS", 0)
        mp.setitem(sys.modules, "numba", None)  # import numba now raises ImportError
        with pytest.warns(RuntimeWarning, match="compiled event pass is unavailable.*pure-Python"):
            run = ppviz.simulate("interleaved-1f1b", 4, 8, chunks=2, p2p=0.25)
        assert eventpass._kernel is eventpass_reference.run
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            again = ppviz.simulate("interleaved-1f1b", 4, 8, chunks=2, p2p=0.25)
        assert not eventpass.warm()
    assert eventpass._kernel is compiled
    assert _same_bits(run.result.start, ppviz.simulate("interleaved-1f1b", 4, 8, chunks=2, p2p=0.25).result.start)
    assert _same_bits(again.result.end, run.result.end)


def test_a_pass_that_fails_to_compile_falls_back_too(monkeypatch):
    def broken():
        raise RuntimeError("no LLVM target for this CPU")

    monkeypatch.setattr(eventpass, "_kernel", None)
    monkeypatch.setattr(eventpass, "LOAD_AFTER_STEPS", 0)
    monkeypatch.setattr(eventpass, "_compile", broken)
    with pytest.warns(RuntimeWarning, match="RuntimeError: no LLVM target"):
        run = ppviz.simulate("1f1b", 3, 5)
    assert run.metrics.makespan == (5 + 3 - 1) * 3.0


def test_a_process_loads_numba_only_once_its_passes_would_repay_the_load():
    """Small passes run the reference and never import numba; one whose steps (with those run
    before) reach LOAD_AFTER_STEPS loads the compiled pass, which runs every pass after it."""
    code = """
import sys, ppviz
from ppviz import eventpass, eventpass_reference
assert 'numba' not in sys.modules
eventpass.LOAD_AFTER_STEPS = 150
ppviz.simulate('1f1b', 4, 8)  # 64 steps
ppviz.simulate('1f1b', 4, 8)
assert 'numba' not in sys.modules and eventpass._kernel is None
ppviz.simulate('1f1b', 4, 8)  # 192 steps in all
assert 'numba' in sys.modules and eventpass._kernel not in (None, eventpass_reference.run)
"""
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_one_pass_past_the_threshold_loads_numba_at_once():
    code = """
import sys, ppviz
from ppviz import eventpass
ppviz.simulate('1f1b', 64, 768)  # 98,304 steps
assert 'numba' not in sys.modules and 98_304 < eventpass.LOAD_AFTER_STEPS <= 1_048_576
ppviz.simulate('1f1b', 64, 8192)  # 1,048,576 steps
assert 'numba' in sys.modules
"""
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# --- loaded before the first request and in every background job ----------------------------

LOADED = (
    "from ppviz import eventpass, eventpass_reference; "
    "assert eventpass._kernel not in (None, eventpass_reference.run), eventpass._kernel"
)


def test_the_page_loads_the_compiled_pass_before_any_request():
    subprocess.run([sys.executable, "-c", "import app; " + LOADED], check=True, cwd=ROOT)


def record_pass(path: str) -> None:
    """A job body: writes whether the compiled pass was loaded before the job ran anything."""
    from ppviz import eventpass_reference

    with open(path, "w") as f:
        f.write(str(eventpass._kernel not in (None, eventpass_reference.run)))


def test_a_background_job_starts_with_the_compiled_pass_loaded(tmp_path, monkeypatch):
    import app  # noqa: F401  (the page's job manager, as in tests/test_web_jobs.py)
    from ppviz.web.common import job_runner, job_table

    monkeypatch.setenv(job_table.ENV_DIR, str(tmp_path / "jobs"))
    job_table.private_dir()
    limits = job_table.Limits(
        run_s=20, queue_s=20, abandoned_s=600, memory_bytes=2**30, running=2, queued=8, per_client=2
    )
    out = tmp_path / "loaded.txt"
    pid = job_runner.start(record_pass, (str(out),), "a", limits)
    try:
        deadline = time.monotonic() + 30
        while not (out.exists() and out.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert out.read_text() == "True"
    finally:
        job_table.kill(pid)
