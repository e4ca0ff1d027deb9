"""What the model & cluster view shows: ``ppviz.estimate`` of each schedule, drawn in ms and GiB.

Plain functions, no Dash. The page holds no cost logic: every number comes from the Estimate
(iteration time, tokens/s, MFU, per-device static and activation bytes, the fit, the breakdowns);
this module only picks units (ms on time axes, GiB = 2³⁰ bytes for memory, as nvidia-smi counts),
says which control an estimate error is about, and prices the view's work (``limits.price``, the one
price of every page, with the estimate's extra per action) before anything is built.

It is given a ``cluster.Reading``, the request read once with everything derived from it (model,
GPU, each schedule's layout and command, microbatches, iterations): a move enters no other module of
``ppviz/web`` but ``common.limits`` (once, for the prices), and the estimates come from a cachetools
LRU around ``ppviz.estimate`` itself.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import ppviz
from ppviz import REGISTRY, figures, units
from ppviz import sweep as sweeps
from ppviz.errors import InputError
from ppviz.units import GIB, percent_change, signed

from ...common import caches, charts, cluster, limits
from ...common.cluster import ITERATED, MAX_COMPARE, Reading
from . import ids

log = logging.getLogger(__name__)

MS = 1e3  # seconds → ms on every time axis
CACHE_SIZE = 8  # estimates kept per worker (a control change usually touches one schedule)
# The cards of one schedule, in order (the page holds one box each and fills in its value and detail).
CARD_LABELS = {
    "iteration": "iteration time",
    "tokens": "tokens/s",
    "mfu": "MFU",
    "peak": "peak memory",
    "layout": "GPUs",
}


@dataclass
class ModelView:
    gantt: object  # one schedule: its Gantt with its memory chart under it, in one figure; comparing: each's
    memory: object | None  # each device's memory by part (one schedule) or peak per schedule; None hides it
    breakdown: dict[str, dict[str, float]] | None  # per schedule, its iteration's parts in seconds (the bars)
    cards: list[tuple[str, str, str, str]]  # (key, label, value, detail); detail kind "error" when over capacity
    ranking: list[dict]
    messages: dict[str, tuple[str, str]] = field(default_factory=dict)  # control -> (kind, text)
    drawn_as: str = "bars"  # "bars", "overview", "none" or "queued"
    estimates: list = field(default_factory=list)


ESTIMATE = caches.memoized(CACHE_SIZE, ppviz.estimate)  # keyed by (model, GPU, layout)


def estimate_of(reading: Reading, schedule: str) -> ppviz.Estimate:
    """``ppviz.estimate`` of one schedule of the view, remembering the last few (keyed by their inputs)."""
    return ESTIMATE(reading.model, reading.gpu, reading.layouts[schedule])


def clear_cache() -> None:
    ESTIMATE.cache_clear()


ADVICE_PX = 120  # the advice card's height at 1280 px: the Gantt gives it up, to keep the time axis in view
GANTT_MIN_PX = 160
# the model page's controls (model, GPU with its reserve and efficiencies, layout, upload) stand taller than the
# abstract page's: its Gantt is this much shorter, to keep the time axis on a 1280×800 screen
GANTT_MAX_PX = charts.GANTT_MAX_PX - 20


# --- the view's work ---------------------------------------------------------------------------


def actions(reading: Reading, name: str) -> int:
    spec = REGISTRY.get(name)
    m, state = reading.microbatches, reading.state
    if spec is None or m is None:
        return 0
    chunks = state.vpp if spec.param("chunks") is not None else (spec.chunks or 1)
    k = reading.iterations.get(name, 1)
    return state.pp * m * k * chunks * (3 if spec.split_backward else 2)


def costs(reading: Reading) -> dict[str, int]:
    """The price of each schedule of the view: ``limits.price``, as the abstract view's, estimated."""
    m = reading.microbatches or 0
    items = [(name, reading.state.pp, m, actions(reading, name)) for name in reading.shown]
    return dict(zip(reading.shown, limits.prices(items, estimated=True), strict=True))


def refusal(reading: Reading, priced: dict[str, int]) -> InputError | None:
    """Why the page does not compute this view, saying what to change (cheap: nothing is built); None if it does."""
    state, m = reading.state, reading.microbatches
    first = reading.shown[0] if reading.shown else state.schedule
    if m is not None and m > limits.MAX_MICROBATCHES:
        return InputError(
            f"gbs {state.gbs} / (dp·mbs = {state.dp}·{state.mbs}) gives {m:,} microbatches; the page draws at most "
            f"{limits.MAX_MICROBATCHES}: raise mbs or dp, or lower gbs, or use the CLI: {_command(reading, first)}",
            field="gbs",
        )
    for name in reading.shown:
        k = reading.iterations.get(name, 1)
        if m is not None and k > 1 and m * k > limits.MAX_MICROBATCHES:
            return InputError(
                f"iterations {k} × {m} microbatches make {m * k:,} in the run; the page draws at most "
                f"{limits.MAX_MICROBATCHES}: lower iterations or gbs, or use the CLI: {_command(reading, name)}",
                field="iterations",
            )
        if priced[name] > limits.BACKGROUND_WORK:
            return InputError(
                f"{name} at pp {state.pp} × {m} microbatches is about {priced[name]:,} work units, past what the page "
                f"computes ({limits.BACKGROUND_WORK:,}): lower pp or the microbatches, or use the CLI: "
                f"{_command(reading, name)}",
                field="pp",
            )
    return None


def check(reading: Reading) -> None:
    """Raise the view's ``refusal``, if any."""
    error = refusal(reading, costs(reading))
    if error is not None:
        raise error


def work(reading: Reading) -> int:
    """The price of the view: its schedules, and their sweep when it is on screen."""
    return sum(costs(reading).values()) + sweep_plan(reading)[1]


def in_background(reading: Reading) -> bool:
    return work(reading) > limits.SYNC_WORK


def drawable(reading: Reading) -> bool:
    """The page draws this view at once (within its bounds, no background job)."""
    priced = costs(reading)
    if reading.error is not None or refusal(reading, priced) is not None:
        return False
    return sum(priced.values()) + sweep_plan(reading)[1] <= limits.SYNC_WORK


def _command(reading: Reading, name: str) -> str:
    return reading.commands.get(name) or "ppviz estimate"


MAX_VPP = int(cluster.LAYOUT_FIELDS["vpp"].high)


def sweep_values(reading: Reading) -> list[int]:
    """Powers of two around the view's own m, vpp or pp, within the page's bounds."""
    state = reading.state
    if state.sweep_axis == "m":
        return sweeps.values_around(min(reading.microbatches or 1, limits.MAX_MICROBATCHES), 1, limits.MAX_MICROBATCHES)
    if state.sweep_axis == "p":
        return sweeps.values_around(state.pp, 1, limits.MAX_DEVICES)
    return sweeps.values_around(state.vpp, 1, MAX_VPP)


def at_value(reading: Reading, value: int) -> Reading:
    """The view with the sweep's axis at ``value`` (m sets the global batch to m·dp·mbs)."""
    state = reading.state
    name = {"m": "gbs", "v": "vpp", "p": "pp"}[state.sweep_axis]
    return cluster.derive(replace(state, **{name: value * state.dp * state.mbs if state.sweep_axis == "m" else value}))


def sweep_plan(reading: Reading) -> tuple[set[tuple[str, int]], int]:
    """The sweep's points the page estimates, cheapest first within ``limits.SWEEP_WORK`` (the view's
    own value is free: it is estimated anyway), and their price; the rest are gaps naming the CLI."""
    state = reading.state
    if state.mode != "compare" or state.compare_show != "sweep":
        return set(), 0
    own = {"m": reading.microbatches, "v": state.vpp, "p": state.pp}[state.sweep_axis]
    priced = []
    for v in sweep_values(reading):
        point = None if v == own else costs(at_value(reading, v))
        priced += [(0 if point is None else point[n], n, v) for n in state.compare]
    return limits.cheapest_within(priced, limits.SWEEP_WORK)


# --- the view ------------------------------------------------------------------------------------


def render(reading: Reading, background: bool = False) -> ModelView:
    """Estimate the schedules on screen and build the view; past the synchronous budget, "queued"
    (a background job draws it) unless ``background``."""
    state, names = reading.state, reading.shown
    if not names:
        text = f"pick 2–{MAX_COMPARE} schedules to compare"
        return _failed(text, {"compare": ("error", text)})
    priced = costs(reading)
    error = reading.error or refusal(reading, priced)
    if error is not None:
        return _failed(str(error), {control_for(error, state.mode): ("error", str(error))})
    if not background and sum(priced.values()) + sweep_plan(reading)[1] > limits.SYNC_WORK:
        at = f"pp {state.pp} × {reading.microbatches} microbatches"
        text = f"Estimating {' and '.join(names)} at {at} in the background…"
        return ModelView(charts.message_figure(text), None, None, [], [], {}, "queued")
    estimates = []
    for name in names:
        try:
            estimates.append(estimate_of(reading, name))
        except ValueError as e:
            text = f"{name}: {e}" if len(names) > 1 else str(e)
            return _failed(text, {control_for(e, state.mode): ("error", text)})
        except Exception as e:  # a bug, not a bad input: say so on the page, never a 500
            log.exception("estimating %s failed", name)
            text = f"ppviz failed on these settings ({type(e).__name__}: {e}); please report it"
            return _failed(text, {"schedule": ("error", text)})
    notes = _iteration_notes(reading)
    breakdown = {_title(e): e.breakdown for e in estimates}
    if state.mode == "compare":
        capacity = max(e.capacity_bytes for e in estimates) / GIB
        usable = max(e.usable_bytes for e in estimates) / GIB
        peaks = {_title(e): e.peak_bytes / GIB for e in estimates}
        memory = figures.encode(figures.peaks(peaks, capacity=capacity, usable=usable, unit="GiB"))
        table = ranking(estimates, reading.reference)
        if state.compare_show == "sweep":
            return ModelView(sweep_figure(reading), memory, breakdown, [], table, notes, "sweep", estimates)
        fig = figures.compare_memory(
            [e.run for e in estimates],
            titles=[_title(e) for e in estimates],
            max_bars=charts.BARS_MAX_OPS // len(estimates),
            time_scale=MS,
            time_unit="ms",
            memory_kwargs=[figures.memory_kwargs(e) for e in estimates],
        )
        return ModelView(figures.encode(fig), memory, breakdown, [], table, notes, "bars", estimates)
    est = estimates[0]
    gantt, drawn_as = gantt_figure(est, room=ADVICE_PX if not est.fits and not background else 0)
    lines = list(reading.lines) or None
    both = figures.encode(figures.stacked(gantt, memory_figure(est, lines)))
    note = figures.lines_note(state.pp, charts.MEMORY_LINES, lines, est.peak_bytes)
    notes = {**notes, "lines": ("reason", note)}
    parts = figures.encode(figures.memory_breakdown(est))
    return ModelView(both, parts, breakdown, cards(est), [], notes, drawn_as, estimates)


def _iteration_notes(reading: Reading) -> dict[str, tuple[str, str]]:
    """Beside the iterations box: which schedules on screen run one iteration whatever it says."""
    single = [n for n in reading.shown if reading.iterations[n] == 1]
    if reading.state.iterations == 1 or not single:
        return {}
    text = f"{', '.join(single)} run{'s' if len(single) == 1 else ''} one iteration: only {ITERATED} take more"
    return {"iterations": ("reason", text)}


def gantt_figure(est, room: int = 0) -> tuple[dict, str]:
    """The Gantt in ms (its overview past ``charts.BARS_MAX_OPS`` ops) as a plain figure, and which it is;
    ``room`` px shorter at most (the advice card's, so that the time axis stays on a 1280×800 screen)."""
    run = est.run
    k = est.iterations
    of = f"{k} iterations of {est.microbatches} microbatches" if k > 1 else f"{est.microbatches} microbatches"
    title = f"{_title(est)} · {run.schedule.devices} devices · {of}"
    # capped as in the abstract view, so that the cards, both charts and the time axis fit a 1280×800 screen
    height = min(figures.gantt_height(run.schedule.devices, pairs=bool(run.result.paired.any())), GANTT_MAX_PX)
    height = max(min(height, GANTT_MAX_PX - room), GANTT_MIN_PX)
    if len(run.result) <= charts.BARS_MAX_OPS:
        return figures.gantt(run, title=title, time_scale=MS, time_unit="ms", height=height), "bars"
    return figures.overview(run, time_scale=MS, time_unit="ms", height=height), "overview"


def memory_figure(est, lines: list[int] | None = None) -> dict:
    """Each device's static bytes as the base of its activation curve, in GiB, with the HBM capacity
    and the reserve band under it;
    past 8 devices a min–max band with the ``lines`` devices (default: highest and lowest peak) over it.
    A plain figure: ``render`` draws it under the Gantt, in the same figure."""
    static = est.static_bytes
    base = static["weight"] + static["grad"] + static["optimizer"]
    fig = figures.memory(
        est.run,
        stage_sizes=est.plan.activation_bytes,
        base=base,
        scale=1 / GIB,
        unit="GiB",
        capacity=est.capacity_bytes,
        reserve=est.reserve_bytes,
        time_scale=MS,
        time_unit="ms",
        height=charts.MEMORY_PX,
        band_over=charts.MEMORY_LINES,
        lines=lines,
        device_legend=False,
        title=f"memory per device (GiB): static {base.max() / GIB:,.2f} GiB + activation, against {est.gpu.name}'s "
        "HBM and its reserve",
    )
    key = _colour_key(est.run.schedule.devices)
    if key:  # the lines' colours, at the head of their legend
        fig["layout"]["legend"]["title"] = dict(text=key)
    top = [0, max(float(est.peak_bytes.max()), est.capacity_bytes) / GIB * 1.08]  # the capacity line in view
    fig["layout"]["yaxis"]["range"] = top
    return fig


def _colour_key(devices: int) -> str:
    """What the memory lines' colours mean: up to MEMORY_LINES devices they have no legend entries
    (see ``figures.memory``'s ``device_legend``)."""
    if devices <= 1 or devices > charts.MEMORY_LINES:
        return ""
    return f"line colour: device 0 dark → {devices - 1} light"


def cards(est) -> list[tuple[str, str, str, str]]:
    """(key, label, value, detail): iteration time, tokens/s, MFU, peak GiB against the usable HBM
    (with the fullest device's memory by part), layout."""
    peak = float(est.peak_bytes.max())
    device = est.fullest_device
    usable = est.usable_bytes
    if est.fits:
        fit = f"device {device}; fits with {(usable - peak) / GIB:,.2f} GiB free"
    else:
        fit = f"device {device}; does not fit by {est.over_bytes / GIB:,.2f} GiB"
    parts = " · ".join(f"{k} {v / GIB:,.2f}" for k, v in est.memory_breakdown().items())
    fit += f" ({parts} GiB, of {est.capacity_bytes / GIB:,.2f} GiB HBM)"
    lay = est.layout
    hfu = f" · HFU {est.hfu:.1%} (with recompute)" if lay.recompute != "none" else ""
    sched = "schedule"
    if est.iterations > 1:
        steps = est.optimizer_step_s * MS
        sched = (
            f"average of {est.iterations} iterations; steps between them {steps.min():.1f}–{steps.max():.1f} ms; "
            f"run {est.run_s * MS:,.0f} ms = schedule with the steps"
        )
    time = (
        f"{sched} {est.makespan_s * MS:,.0f} ms + DP sync {est.dp_sync_s * MS:.1f} ms + optimizer "
        f"{est.optimizer_s * MS:.1f} ms"
    )
    unfit = "" if est.fits else "(does not fit) "  # in the detail: a longer value would wrap the cards' row
    return [
        ("iteration", CARD_LABELS["iteration"], units.duration(est.iteration_s), time),
        (
            "tokens",
            CARD_LABELS["tokens"],
            f"{est.tokens_per_s:,.0f}",
            f"{unfit}{est.samples_per_s:.3g} samples/s · {est.global_batch} × {est.model.seq} tokens",
        ),
        ("mfu", CARD_LABELS["mfu"], f"{est.mfu:.1%}", f"{unfit}{est.tflops_per_gpu:.0f} TFLOP/s per GPU{hfu}"),
        ("peak", CARD_LABELS["peak"], f"{peak / GIB:,.2f} / {usable / GIB:,.2f} GiB usable", fit),
        (
            "layout",
            CARD_LABELS["layout"],
            f"{lay.gpus:,}",
            f"tp {lay.tp} · pp {lay.pp} · dp {lay.dp} · {est.microbatches} microbatches · {est.run.schedule.stages} "
            "stages",
        ),
    ]


def ranking(estimates: list, baseline: str | None = None) -> list[dict]:
    """Compare mode's table: the same model, GPU and layout under each schedule, fastest first, each
    with its change against the ``baseline`` schedule (default: the first): "−12.0% iteration, +3.10 GiB peak"."""
    base = next((e for e in estimates if e.layout.schedule == baseline), estimates[0] if estimates else None)
    scale, unit = units.time_unit([e.iteration_s for e in estimates])  # one unit for the table's times
    rows = []
    for e in estimates:
        peak = float(e.peak_bytes.max())
        rows.append(
            {
                "schedule": _title(e),
                "iteration": round(e.iteration_s * scale, 1 if unit == "ms" else 3),
                "tokens/s": round(e.tokens_per_s),
                "MFU": round(e.mfu, 4),
                "bubble": round(e.breakdown["bubble_s"] * scale, 1 if unit == "ms" else 3),
                "peak (GiB)": round(peak / GIB, 2),
                "fits": "yes" if e.fits else f"no: over by {e.over_bytes / GIB:,.2f} GiB",
                "vs baseline": "baseline" if e is base else _delta(e, base),
                "unit": unit,
            }
        )
    rows.sort(key=lambda r: (r["iteration"], r["peak (GiB)"]))
    for i, row in enumerate(rows, 1):
        row["rank"] = i
    return rows


def _delta(est, base) -> str:
    """An estimate against the baseline's: iteration time in percent, peak memory in GiB."""
    peak = (float(est.peak_bytes.max()) - float(base.peak_bytes.max())) / GIB
    return f"{percent_change(est.iteration_s, base.iteration_s)} iteration, {signed(round(peak, 2), '.2f')} GiB peak"


SWEEP_METRICS = [
    ("iteration_s", "iteration (ms)", MS),
    ("bubble_s", "bubble (ms)", MS),
    ("peak_bytes", "peak memory (GiB)", 1 / GIB),
]


def sweep_rows(reading: Reading) -> list[dict]:
    """``ppviz.sweep_estimate`` of the compared schedules along the view's axis (m, vpp or pp), the
    rest of the layout as set; points past the page's work limit are gaps that say so."""
    state = reading.state
    allowed, _ = sweep_plan(reading)

    def guard(name: str, lay) -> str | None:
        axis = state.sweep_axis
        value = lay.gbs // (lay.dp * lay.mbs) if axis == "m" else lay.vpp if axis == "v" else lay.pp
        if (name, value) in allowed or (state.sweep_axis == "v" and not sweeps.takes_chunks(name)):
            return None
        point = replace(state, pp=lay.pp, vpp=lay.vpp, gbs=lay.gbs)
        return f"past the page's work limit: use the CLI: {cluster.cli_command(point, name)}"

    return sweeps.sweep_estimate(
        list(state.compare),
        state.sweep_axis,
        sweep_values(reading),
        model=reading.model,
        gpu=reading.gpu,
        layout=reading.layouts[state.compare[0]],
        layout_for=lambda name, lay: cluster.layout_of(replace(state, pp=lay.pp, vpp=lay.vpp, gbs=lay.gbs), name),
        guard=guard,
    )


def sweep_figure(reading: Reading) -> dict:
    """The sweep chart in real units: iteration and bubble in ms, peak memory in GiB with the usable HBM line."""
    state = reading.state
    rows = sweep_rows(reading)
    current = {"m": reading.microbatches, "v": state.vpp, "p": state.pp}[state.sweep_axis]
    capacity = ("peak_bytes", reading.gpu.usable_bytes / GIB)
    title = f"the compared schedules along {figures.SWEEP_AXES[state.sweep_axis]} ({state.model} on {state.gpu})"
    sweep = figures.sweep(rows, state.sweep_axis, SWEEP_METRICS, current=current, capacity=capacity, title=title)
    return figures.encode(sweep)


def control_for(error: Exception, mode: str) -> str:
    """The control an error belongs to, by the field it names (``InputError.field``, see ``ids.FIELD_CONTROLS``);
    the schedule picker (compare's in compare mode) for the rest."""
    name = getattr(error, "field", None)
    return ids.FIELD_CONTROLS.get(name, "schedule" if mode == "single" else "compare")


def _failed(text: str, messages: dict) -> ModelView:
    fig = charts.message_figure(f"Nothing to draw. {text}")
    return ModelView(fig, None, None, [], [], messages, "none")


def _title(est) -> str:
    lay = est.layout
    return lay.schedule + (f" (vpp {lay.vpp})" if lay.vpp > 1 else "")
