"""Property tests: any input gives a valid schedule or a clean ValueError, never another exception.

Every registered schedule is drawn at test time, so schedules added later are covered too.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from checks import assert_valid
from hypothesis import assume, event, given
from hypothesis import strategies as st

import ppviz
from ppviz import Costs, DeadlockError, ScheduleError
from ppviz.ir import Overlap, from_torch_csv, to_torch_csv
from ppviz.simulator import simulate

NAMES = sorted(ppviz.REGISTRY)
ODD = st.sampled_from([0, -1, 2.5, math.nan, math.inf, True, None, "3", 10**9])
BAD_TIMES = st.sampled_from([-1.0, -1e-9, math.nan, math.inf, 1e300, "1", None])
TIMES = st.one_of(st.floats(0, 4), st.sampled_from([0.0]), BAD_TIMES)


def _pick(draw, wild: bool, sensible, odd=ODD):
    """A sensible value, or (in a wild example, one time in three) an odd one."""
    if wild and draw(st.integers(0, 2)) == 0:
        return draw(odd)
    return draw(sensible)


def _param(draw, wild: bool, q):
    """A value for a schedule parameter: inside its range, or around and outside it when wild."""
    if q.type is int:
        high = int(q.low) + 6 if q.high is None else min(int(q.high), int(q.low) + 6)
        return _pick(draw, wild, st.integers(int(q.low), high), st.one_of(st.integers(int(q.low) - 2, high + 2), ODD))
    return _pick(draw, wild, st.floats(q.low, q.low + 8), st.one_of(st.floats(q.low - 2, q.low), ODD))


@st.composite
def arguments(draw):
    """Schedule, sizes and keyword arguments; half the examples are sensible, half wild."""
    wild = draw(st.booleans())
    name = draw(st.sampled_from(NAMES))
    spec = ppviz.REGISTRY[name]
    kwargs = {}
    for q in spec.params:
        if draw(st.booleans()):
            kwargs[q.name] = _param(draw, wild, q)
    if wild and spec.param("chunks") is None and draw(st.booleans()):
        kwargs["chunks"] = draw(st.one_of(st.integers(0, 3), ODD))
    if wild and draw(st.integers(0, 4)) == 0:
        kwargs["bogus"] = 1
    for cost in ("f", "b", "w"):
        if draw(st.booleans()):
            kwargs[cost] = _pick(draw, wild, st.floats(0, 4), BAD_TIMES)
    if draw(st.booleans()):
        kwargs["p2p"] = _pick(draw, wild, st.floats(0, 2), BAD_TIMES)
    if draw(st.booleans()):
        kwargs["b_frees"] = _pick(draw, wild, st.floats(0, 1), st.sampled_from([-0.25, 1.25, math.nan, "0.5"]))
    if draw(st.integers(0, 3)) == 0:
        kwargs["overlap"] = _pick(draw, wild, st.floats(0.1, 2), st.sampled_from([0.0, -0.5, math.inf]))
    if draw(st.integers(0, 3)) == 0:
        triple = st.tuples(*[st.floats(0, 4)] * 3)
        odd = st.one_of(st.tuples(*[TIMES] * 3), st.tuples(TIMES, TIMES))
        keys = st.integers(-1, 12) if wild else st.integers(0, 3)
        kwargs["stage_times"] = draw(st.dictionaries(keys, odd if wild else triple, max_size=3))
    devices = _pick(draw, wild, st.integers(1, 8), st.one_of(st.integers(-1, 0), ODD))
    microbatches = _pick(draw, wild, st.integers(1, 12), st.one_of(st.integers(-1, 0), ODD))
    return name, devices, microbatches, kwargs


@given(arguments())
def test_any_arguments_give_a_valid_schedule_or_a_value_error(args):
    """Random valid and invalid sizes, times, latencies, fractions, params: valid or ValueError.

    A ScheduleError (or DeadlockError) would mean a generator built a bad order from accepted
    arguments, so it fails the test like any other exception.
    """
    name, devices, microbatches, kwargs = args
    try:
        run = ppviz.simulate(name, devices, microbatches, **kwargs)
    except ScheduleError as e:
        pytest.fail(f"{name} built an invalid order from {devices}, {microbatches}, {kwargs}: {e}")
    except ValueError as e:
        assert str(e), "a ValueError needs a message"
        event("refused")
        return
    event("valid")
    assert_valid(run)
    assert math.isfinite(run.metrics.makespan)


@st.composite
def mutated_orders(draw):
    """A valid small schedule whose device rows are shuffled, and sometimes further damaged."""
    name = draw(st.sampled_from(NAMES))
    spec = ppviz.REGISTRY[name]
    kwargs = {"chunks": draw(st.integers(1, 3))} if spec.param("chunks") is not None else {}
    try:
        sched = ppviz.build(name, draw(st.integers(1, 4)), draw(st.integers(1, 6)), **kwargs)
    except ValueError:
        assume(False)
    rng = draw(st.randoms(use_true_random=False))
    rows = [list(r) for r in sched.order]
    reorder = draw(st.sampled_from(["shuffle", "swap", "swap"]))
    for row in rows:
        if reorder == "shuffle" and rng.random() < 0.5:
            rng.shuffle(row)
        elif reorder == "swap" and len(row) > 1 and rng.random() < 0.5:
            i = rng.randrange(len(row) - 1)  # one adjacent swap often keeps the order runnable
            row[i], row[i + 1] = row[i + 1], row[i]
    damage = draw(st.sampled_from(["none", "none", "pair", "move", "drop", "duplicate", "retype"]))
    busy = [r for r in rows if len(r) >= 2]
    if damage == "pair" and busy:  # merge two adjacent plain actions into one overlapped slot
        row = rng.choice(busy)
        i = rng.randrange(len(row) - 1)
        if not isinstance(row[i], Overlap) and not isinstance(row[i + 1], Overlap):
            row[i : i + 2] = [Overlap(row[i], row[i + 1])]
    elif damage == "move" and len(rows) > 1 and busy:
        src = rng.choice(busy)
        rng.choice([r for r in rows if r is not src]).append(src.pop(rng.randrange(len(src))))
    elif damage == "drop" and busy:
        row = rng.choice(busy)
        row.pop(rng.randrange(len(row)))
    elif damage == "duplicate" and busy:
        row = rng.choice(busy)
        row.insert(rng.randrange(len(row)), row[rng.randrange(len(row))])
    elif damage == "retype" and busy:  # a stage or microbatch of the wrong type or far out of range
        row = rng.choice(busy)
        i = rng.randrange(len(row))
        if not isinstance(row[i], Overlap):
            field = rng.choice(["stage", "microbatch"])
            row[i] = row[i]._replace(**{field: draw(st.sampled_from([2.5, 1.0, "1", None, 10**30, -(10**30)]))})
    return dataclasses.replace(sched, steps=tuple(map(tuple, rows)))


@given(mutated_orders(), st.sampled_from([Costs(), Costs(1.0, 2.0, 0.5, p2p=0.5), Costs(overlap=0.6)]))
def test_shuffled_or_damaged_orders_are_valid_or_a_schedule_error(sched, costs):
    """Any reordering runs (and then passes the validator) or is refused as a ScheduleError.

    A deadlock names every stuck device; a valid order survives the PyTorch CSV round trip.
    """
    try:
        result = simulate(sched, costs)
    except DeadlockError as e:
        assert "is stuck at step" in str(e)
        event("deadlock")
        return
    except ScheduleError as e:
        assert str(e)
        event("invalid")
        return
    event("valid")
    assert_valid(result)
    back = simulate(from_torch_csv(to_torch_csv(sched)), costs)
    assert back.ops() == result.ops()


@pytest.mark.parametrize("name", NAMES)
def test_every_parameter_below_its_range_is_a_value_error_naming_it(name):
    """Each schedule parameter refuses a value under its lower bound and says which one."""
    spec = ppviz.REGISTRY[name]
    for q in spec.params:
        with pytest.raises(ValueError, match=q.name):
            ppviz.simulate(name, 4, 8, **{q.name: q.low - 1})


def test_per_stage_times_that_are_not_triples_are_value_errors():
    """``stage_times={0: 3}`` should be refused like ``{0: (1, 2)}`` is."""
    with pytest.raises(ValueError, match="stage 0"):
        ppviz.simulate("1f1b", 2, 2, stage_times={0: 3})


def test_huge_times_are_refused_rather_than_overflowing():
    """f = b = 1e308 would sum to an infinite makespan, so such times are refused by name."""
    with pytest.raises(ValueError, match="^f must be"):
        ppviz.simulate("1f1b", 2, 2, f=1e308, b=1e308)
    with pytest.raises(ValueError, match="stage 0 w must be"):
        ppviz.simulate("1f1b", 2, 2, stage_times={0: (1.0, 1.0, 1e300)})
