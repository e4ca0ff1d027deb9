"""What the page shows for a view state: runs, figures, metric cards, ranking and messages.

Plain functions with no Dash in them, so the callbacks stay one-liners and the tests can call
these directly. The simulation itself is ``ppviz``'s: this module only chooses what to ask for
and how to show it, including which control a core error message is about.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field, replace

import ppviz
from ppviz import REGISTRY, figures, formats
from ppviz import sweep as sweeps
from ppviz.errors import InputError
from ppviz.ir import KIND_INDEX, Kind
from ppviz.units import percent_change, signed

from ...common import caches, limits, validation
from ...common.charts import (
    BARS_MAX_OPS,
    GANTT_MAX_PX,
    MEMORY_LINES,
    MEMORY_PX,
    lines_of,
    lines_reason,
    message_figure,
)
from . import budget, ids
from .state import CUSTOM, MAX_ORDER_CHARS, ViewState, batch_error, pack_order

log = logging.getLogger(__name__)

# Runs kept per worker, by the bytes they hold, so that a zoom or a limit-line move simulates nothing again.
RUN_CACHE_BYTES = int(float(os.environ.get("PPVIZ_RUN_CACHE_MB", "48")) * 2**20)
# Bytes of a run's Python objects besides its numpy columns (measured with tracemalloc: ~57 per action).
ACTION_BYTES = 64
DEVICE_BYTES = 512
UPLOAD_MAX_BYTES = limits.MAX_ORDER_BYTES
OVERVIEW_NOTE = " · zoom in for bars"
SLIDER_CONTROLS = ("devices", "microbatches", "f", "b", "w", "p2p", "overlap", "b_frees")


def file_stem(state: ViewState) -> str:
    """Downloads are named after what is shown: ``zb-v_p8_m32`` (``compare_…`` in compare mode)."""
    name = state.schedule if state.mode == "single" else "compare"
    return f"{name}_p{state.devices}_m{state.microbatches}"


@dataclass
class View:
    """Everything the render callback sends to the page."""

    gantt: object
    memory: object | None  # None in compare mode
    cards: list[tuple[str, str, str]]  # (label, value, detail)
    ranking: list[dict]  # compare mode only
    messages: dict[str, tuple[str, str]] = field(default_factory=dict)  # control -> (kind, text)
    disabled: dict[str, bool] = field(default_factory=dict)
    runs: list = field(default_factory=list)
    drawn_as: str = "bars"  # "bars", "overview" or "none"


def costs_of(state: ViewState) -> ppviz.Costs:
    """The view's costs: the sliders, the per-stage table's times and its devices' host overheads."""
    sliders = {k: getattr(state, k) for k in ("f", "b", "w", "p2p", "overlap", "b_frees")}
    return ppviz.make_costs(**sliders, stage_times=state.stage_times, host_overhead=state.host_overhead)


def schedule_of(state: ViewState, name: str, costs: ppviz.Costs | None = None) -> ppviz.Schedule:
    """The order to show; searching schedules are built under ``costs`` (the view's op times)."""
    if name == CUSTOM:
        if state.order is None:
            raise InputError("no order uploaded: upload a PyTorch-format order CSV", field="order")
        validation.check_order(state.order)
        schedule = formats.read_torch_csv(state.order, max_bytes=UPLOAD_MAX_BYTES)
        validation.check_order_size(schedule.devices, schedule.microbatches)
        return schedule
    return ppviz.build(name, state.devices, state.microbatches, costs=costs, **state.params_of(name))


def run_of(state: ViewState, name: str) -> ppviz.Run:
    """Simulate one schedule of the view; raises ValueError saying what to change.

    The per-stage table's rows are device shares of the model, as everywhere in ppviz, so every
    schedule runs the same heterogeneous model; searching schedules search under those times.
    """
    costs = costs_of(state)
    return ppviz.evaluate(schedule_of(state, name, costs), costs)


def held_bytes(entry: tuple[ppviz.Run, int]) -> int:
    """What a cached (run, bytes) entry holds (``run_bytes``, measured once when it was kept)."""
    return entry[1]


RUNS = caches.Cache(RUN_CACHE_BYTES, getsizeof=held_bytes)


def cached_run(state: ViewState, name: str) -> ppviz.Run:
    """``run_of``, remembering the last few runs of this worker (least recently used go first).

    The key holds every value a run depends on, exactly, and nothing else: moving the memory
    limit line, switching mode or going back to a schedule shown before simulates nothing.
    """
    key = run_key(state, name)
    hit = RUNS.get(key)
    if hit is not None:
        return hit[0]
    run = run_of(state, name)
    RUNS.put(key, (run, run_bytes(run, key)))  # bigger than the whole cache: kept only while it is drawn
    return run


def is_cached(state: ViewState, name: str) -> bool:
    return run_key(state, name) in RUNS


def run_bytes(run: ppviz.Run, key: tuple = ()) -> int:
    """The memory a cached run holds: its numpy columns, its schedule's actions and any order text."""
    columns = sum(v.nbytes for v in vars(run.result).values() if hasattr(v, "nbytes"))
    order = sum(len(k) for k in key if isinstance(k, str))
    return columns + ACTION_BYTES * len(run.result) + DEVICE_BYTES * run.schedule.devices + order


def run_cache_bytes() -> int:
    return RUNS.held


def run_key(state: ViewState, name: str) -> tuple:
    """What ``run_of(state, name)`` depends on (floats by value, so equal keys mean equal runs)."""
    return (
        name,
        *(getattr(state, k) for k in SLIDER_CONTROLS),
        tuple(sorted(state.params_of(name).items())),
        tuple(sorted(state.stage_times.items())),
        state.host_overhead,
        state.order if name == CUSTOM else None,
    )


def clear_run_cache() -> None:
    RUNS.clear()
    SWEEPS.clear()


def gantt_figure(run: ppviz.Run, title: str | None = None, window: tuple[float, float] | None = None):
    """Bars per op while a browser draws them fast enough, else the heatmap overview.

    With a zoomed-in time ``window``, the count is of the ops in view: zooming into an overview
    turns it into bars once few enough ops are left, and into a finer overview before that.
    """
    shown = len(run.result) if window is None else int(figures.in_window(run, window).sum())
    height = min(figures.gantt_height(run.schedule.devices, pairs=bool(run.result.paired.any())), GANTT_MAX_PX)
    if shown <= BARS_MAX_OPS:
        return figures.encode(figures.gantt(run, title=title, window=window, height=height)), "bars"
    return figures.encode(figures.overview(run, window=window, note=OVERVIEW_NOTE, height=height)), "overview"


def zoom_window(relayout: dict | None) -> tuple[float, float] | str | None:
    """The time range a chart's relayout event asks for: (t0, t1), "full" for a reset, or None
    when the event leaves the time axis alone (a y-only zoom, a resize)."""
    if not isinstance(relayout, dict):
        return None
    if relayout.get("xaxis.autorange"):
        return "full"
    pair = relayout.get("xaxis.range") or (relayout.get("xaxis.range[0]"), relayout.get("xaxis.range[1]"))
    try:
        t0, t1 = (float(t) for t in pair)
    except (TypeError, ValueError):
        return None
    return (t0, t1) if math.isfinite(t0) and math.isfinite(t1) and t0 < t1 else None


def zoomed(state: ViewState, window: tuple[float, float] | str, background: bool = False) -> tuple[object, str]:
    """The single view's Gantt chart for a time window ("full": the whole run), and how it is drawn.

    A run past a synchronous request's budget that this worker does not hold (a background job
    drew it) raises LookupError unless ``background``: the zoom is then left to a background job.
    """
    budget.check(state)
    if not background and budget.in_background(state) and not is_cached(state, state.schedule):
        raise LookupError("the run is not held by this worker")
    run = cached_run(state, state.schedule)
    return gantt_figure(run, window=None if window == "full" else window)


def render(state: ViewState, background: bool = False) -> View:
    """Simulate the schedules on screen and build what the page shows.

    Work past a synchronous request's budget is done only when ``background`` (in a background
    job); otherwise the view comes back "queued", with a placeholder saying what is being drawn.
    """
    names = state.shown
    runs, errors = [], {}
    if not names:
        text = f"pick 2–{limits.MAX_COMPARE} schedules to compare"
        return View(message_figure(text), None, [], [], {"compare": ("error", text)}, _disabled(state, [])[0])
    try:
        batch = batch_error(state.gbs, state.mbs)
        if batch is not None and CUSTOM not in names:
            raise InputError(batch, field="gbs")
        budget.check(state)
    except ValueError as e:
        errors[names[0]] = e
        names = names[:1]
    if not errors and not background and budget.in_background(state):
        text = f"Drawing {' and '.join(names)} at {state.devices} × {state.microbatches} in the background…"
        placeholder = message_figure(text)
        memory = None if state.mode == "compare" else placeholder
        return View(placeholder, memory, [], [], {}, _disabled(state, [])[0], [], "queued")
    for name in names if not errors else ():
        try:
            runs.append(cached_run(state, name))
        except ValueError as e:
            errors[name] = e
        except Exception as e:  # a bug, not a bad input: say so on the page instead of answering 500
            log.exception("simulating %s failed", name)
            errors[name] = ValueError(f"ppviz failed on these settings ({type(e).__name__}: {e}); please report it")
    disabled, messages = _disabled(state, runs)
    if errors:
        name, error = next(iter(errors.items()))
        shown = f"{name}: {error}" if len(names) > 1 else str(error)
        messages[control_for(error, state, name)] = ("error", shown)
        # One empty state that says why (the memory chart is hidden, not drawn empty)
        return View(message_figure(f"Nothing to draw. {shown}"), None, [], [], messages, disabled, runs, "none")
    if state.mode == "compare":
        table = ranking(runs, state.reference)
        if state.compare_show == "sweep":
            return View(sweep_figure(state), None, [], table, messages, disabled, runs, "sweep")
        fig = figures.compare_memory(
            runs,
            titles=[_title(r) for r in runs],
            max_bars=BARS_MAX_OPS // len(runs),
            memory_kwargs=[{"limit": _own_limit(state, r.schedule.name)} for r in runs],
            band_over=MEMORY_LINES,
        )
        return View(figures.encode(fig), None, [], table, messages, disabled, runs, "bars")
    run = runs[0]
    gantt, drawn_as = gantt_figure(run)
    memory = figures.encode(
        figures.memory(run, limit=_limit(state), height=MEMORY_PX, band_over=MEMORY_LINES, lines=lines_of(state, run))
    )
    memory["layout"]["xaxis"]["range"] = list(gantt["layout"]["xaxis"]["range"])  # one time axis
    return View(gantt, memory, cards(run, drawn_as), [], messages, disabled, runs, drawn_as)


def cards(
    run: ppviz.Run, drawn_as: str = "bars", window: tuple[float, float] | None = None
) -> list[tuple[str, str, str]]:
    """Metric cards: (label, value, detail); zoomed into a time ``window``, the size card counts the ops in view."""
    m = run.metrics
    peak = max(m.peak_activation)
    peak_dev = m.peak_activation.index(peak)
    spec = REGISTRY.get(run.schedule.name)
    fm, fb = m.formula_makespan, m.formula_bubble_fraction
    ops = size_detail(run, drawn_as, window)
    return [
        ("makespan", f"{m.makespan:g}", f"closed form {fm:g}" if fm is not None else "no closed form here"),
        (
            "bubble fraction",
            f"{m.bubble_fraction:.1%}",
            f"closed form {fb:.1%}" if fb is not None else "no closed form here",
        ),
        (
            "steady-state span",
            f"{max(m.span):g}",
            f"longest device span; its bubble {m.span_bubble_fraction:.1%}",
        ),
        (
            "peak activation",
            f"{peak:g}",
            f"device {peak_dev}" + (f"; formula {spec.memory_text}" if spec and spec.memory_text else ""),
        ),
        ("size", f"{run.schedule.devices}×{run.schedule.microbatches}", ops),
    ]


def size_detail(run: ppviz.Run, drawn_as: str, window: tuple[float, float] | None = None) -> str:
    """The size card's detail: the ops, how they are drawn and, zoomed in, how many are in view."""
    ops = f"{len(run.result):,} ops"
    if window is None:
        return ops + (", drawn as an overview" if drawn_as == "overview" else "")
    shown = int(figures.in_window(run, window).sum())
    how = "bars" if drawn_as == "bars" else "a finer overview (zoom in further for bars)"
    return f"{ops}; {shown:,} in view, drawn as {how}"


def ranking(runs: list[ppviz.Run], baseline: str | None = None) -> list[dict]:
    """Rows ranked by makespan, then bubble, then peak activation (same costs for all), each with
    its change against the ``baseline`` schedule (default: the first run): "−12.0% makespan, +3 peak"."""
    rows = [
        {
            "schedule": _title(r),
            "makespan": _shown(r.metrics.makespan),
            "bubble": round(r.metrics.bubble_fraction, 4),
            "span": _shown(max(r.metrics.span)),
            "peak activation": _shown(max(r.metrics.peak_activation)),
            "parameters": _shown(max(r.metrics.parameters)),
        }
        for r in runs
    ]
    base = next((r for r in runs if r.schedule.name == baseline), runs[0] if runs else None)
    for run, row in zip(runs, rows):
        if run is base:
            row["vs baseline"] = "baseline"
            continue
        m, b = run.metrics, base.metrics
        row["vs baseline"] = (
            f"{percent_change(m.makespan, b.makespan)} makespan, "
            f"{signed(max(m.peak_activation) - max(b.peak_activation))} peak"
        )
    rows.sort(key=lambda r: (r["makespan"], r["bubble"], r["peak activation"]))
    for i, row in enumerate(rows, 1):
        row["rank"] = i
    return rows


SWEEP_METRICS = [
    ("makespan", "makespan (units)", 1.0),
    ("bubble_fraction", "bubble (%)", 100.0),
    ("peak_activation", "peak activation (units)", 1.0),
]
SWEEPS = caches.Cache(8)  # the last few sweeps of this worker


def sweep_rows(state: ViewState) -> list[dict]:
    """``ppviz.sweep`` of the compared schedules along the view's sweep axis, under the view's costs.

    Points past the page's work limit (``budget.sweep_plan``: the cheapest first) are gaps that
    say so and give the CLI command instead. The last few sweeps are kept per worker.
    """
    values = budget.sweep_values(state)
    costs = costs_of(state)
    names = [n for n in state.compare if n != CUSTOM]
    params = {n: state.params_of(n) for n in names}
    key = (tuple(names), state.sweep_axis, tuple(values), state.devices, state.microbatches, repr(costs), repr(params))
    hit = SWEEPS.get(key)
    if hit is not None:
        return hit
    allowed, _ = budget.sweep_plan(state)

    def guard(name: str, devices: int, microbatches: int, own: dict) -> str | None:
        if state.host_overhead and devices != state.devices:
            return (
                f"the host overhead is given per device, for {state.devices} devices: clear the per-stage "
                "table's host column to sweep devices"
            )
        value = {"m": microbatches, "p": devices}.get(state.sweep_axis, own.get("chunks"))
        if value is None or (name, value) in allowed:
            return None
        return (
            f"past the page's work limit: use the CLI: {budget.cli_command(budget.at_value(state, name, value), name)}"
        )

    known = {(n, v): cached_run(state, n) for n in names for v in values if budget.own_point(state, n, v)}
    rows = sweeps.sweep(
        names,
        state.sweep_axis,
        values,
        devices=state.devices,
        microbatches=state.microbatches,
        costs=costs,
        params=params,
        guard=guard,
        known=known,
    )
    SWEEPS.put(key, rows)
    return rows


def sweep_figure(state: ViewState) -> dict:
    """The sweep chart of the compared schedules (makespan, bubble, peak against m, v or p)."""
    rows = sweep_rows(state)
    current = {"m": state.microbatches, "p": state.devices}.get(state.sweep_axis)
    if current is None:
        current = next((r["value"] for r in rows if r["value"] == _chunks_of(state)), None)
    return figures.encode(figures.sweep(rows, state.sweep_axis, SWEEP_METRICS, current=current))


def _chunks_of(state: ViewState) -> int | None:
    chunked = [n for n in state.compare if sweeps.takes_chunks(n)]
    return state.params_of(chunked[0]).get("chunks", 2) if chunked else None


def _own_limit(state: ViewState, name: str) -> float | None:
    """A compared schedule's memory-limit line: its own max_memory, else the page's limit."""
    own = state.params_of(name).get("max_memory")
    return own if own is not None else state.limit


def control_for(error: Exception, state: ViewState, schedule: str) -> str:
    """The control an error belongs to, by the field it names (``InputError.field``): a parameter of
    ``schedule``, a control of ``ids.FIELD_CONTROLS``, else the schedule picker (compare's in compare mode)."""
    name = getattr(error, "field", None)
    spec = REGISTRY.get(schedule)
    if name is not None and spec is not None and spec.param(name) is not None:
        return f"{schedule}.{name}"
    if schedule == CUSTOM and name in ids.SET_BY_ORDER:
        return "upload"
    return ids.FIELD_CONTROLS.get(name, "compare" if state.mode == "compare" else "schedule")


def export(state: ViewState, kind: str) -> dict:
    """A download of the first schedule on screen: {content, filename, type}."""
    if not state.shown:
        raise ValueError("nothing on screen to export: pick a schedule")
    name = state.shown[0]
    one = replace(state, mode="single", schedule=name)
    budget.check(one)
    size = budget.actions(one, name)
    if size > budget.EXPORT_MAX_OPS:
        raise ValueError(
            f"{name} has about {size:,} ops, more than the page exports ({budget.EXPORT_MAX_OPS:,}): "
            f"use the CLI: {budget.cli_command(one, name, ' --json > run.json')}"
        )
    run = cached_run(one, name)
    stem = f"{name}_p{run.schedule.devices}_m{run.schedule.microbatches}"
    if kind == "ops-csv":
        return {"content": formats.ops_csv(run), "filename": f"{stem}_ops.csv", "type": "text/csv"}
    if kind == "run-json":
        return {"content": formats.run_json(run), "filename": f"{stem}.json", "type": "application/json"}
    if kind == "torch-csv":
        return {"content": formats.torch_csv(run), "filename": f"{stem}_order.csv", "type": "text/csv"}
    if kind == "trace":
        return {"content": formats.chrome_trace(run), "filename": f"{stem}_trace.json", "type": "application/json"}
    raise ValueError(f"unknown export {kind!r}")


def read_upload(contents: str, filename: str | None) -> str:
    """The text of an uploaded order, checked by the strict parser (never evaluated as code)."""
    name = filename if isinstance(filename, str) and filename else "the file"
    text = validation.uploaded_text(contents, name, UPLOAD_MAX_BYTES, field="order")
    validation.check_order(text)
    schedule = formats.read_torch_csv(text, max_bytes=UPLOAD_MAX_BYTES)  # ValueError on anything but a valid order
    validation.check_order_size(schedule.devices, schedule.microbatches)
    if len(pack_order(text)) > MAX_ORDER_CHARS:
        raise InputError(
            f"{name} is too large to keep in a shareable link "
            f"(more than {MAX_ORDER_CHARS:,} characters compressed): upload a smaller order",
            field="order",
        )
    return text


def _disabled(state: ViewState, runs: list) -> tuple[dict[str, bool], dict[str, tuple[str, str]]]:
    """Controls that the schedules on screen do not use, with the reason."""
    disabled = {name: False for name in SLIDER_CONTROLS}
    reasons: dict[str, tuple[str, str]] = {}
    names = state.shown
    if CUSTOM in names:
        for name in ("devices", "microbatches"):
            disabled[name] = True
            reasons[name] = ("reason", "set by the uploaded order")
    splits = [n for n in names if REGISTRY.get(n) is not None and REGISTRY[n].split_backward]
    if CUSTOM in names and runs and (runs[0].result.kind == KIND_INDEX[Kind.B]).any():
        splits.append(CUSTOM)
    if not splits:
        disabled["b_frees"] = True
        verb = "runs" if len(names) == 1 else "run"
        why = f"{' and '.join(names)} {verb} a fused backward (BW) that frees everything at once"
        reasons["b_frees"] = ("reason", why)
    if runs and len(runs) == len(names) and not any(r.result.paired.any() for r in runs):
        disabled["overlap"] = True
        which = "these schedules" if len(names) > 1 else "this schedule"
        reasons["overlap"] = ("reason", f"no overlapped F&B pairs in {which}")
    if CUSTOM not in names and (state.gbs is None) != (state.mbs is None):
        reasons["gbs"] = ("reason", "give both to set the microbatches (global batch ÷ micro-batch size)")
    elif CUSTOM not in names and state.gbs is not None and batch_error(state.gbs, state.mbs) is None:
        reasons["gbs"] = ("reason", f"{state.gbs} ÷ {state.mbs} = {state.microbatches} microbatches")
    if state.devices == 1 and CUSTOM not in names:
        reasons["p2p"] = ("reason", "one device: nothing crosses devices")
    if state.mode == "compare":
        disabled["lines"] = True
        reasons["lines"] = ("reason", "for the memory chart of one schedule")
    elif runs:
        disabled["lines"] = runs[0].schedule.devices <= MEMORY_LINES
        reasons["lines"] = lines_reason(state, runs[0], runs[0].metrics.peak_activation)
    return disabled, reasons


def limit_change(before: ViewState, after: ViewState) -> tuple[int, bool, dict | None] | None:
    """How the memory chart's limit line changes between two views that differ only in the limit:
    None if it does not, else (the line's index among the traces, whether there was a line, the
    new line or None). Raises LookupError when the run is not at hand within the request's budget."""
    old, new = _limit(before), _limit(after)
    if old == new:
        return None
    if budget.in_background(after) and not is_cached(after, after.schedule):
        raise LookupError("the run is not held by this worker")
    run = cached_run(after, after.schedule)
    line = None
    if new is not None:
        memory = figures.memory(run, limit=new, band_over=MEMORY_LINES, lines=lines_of(after, run))
        line = figures.encode(memory["data"][-1])
    return figures.memory_traces(run, MEMORY_LINES, lines_of(after, run)), old is not None, line  # after the peaks


def _limit(state: ViewState) -> float | None:
    """The memory-limit line: the schedule's own max_memory when it has one, else the page's limit."""
    own = state.params_of(state.schedule).get("max_memory")
    return own if own is not None else state.limit


def _shown(value: float) -> float:
    """A number as the cards print it (``:g``, 6 significant digits): 58.10000000000002 → 58.1."""
    return float(f"{value:g}")


def _title(run: ppviz.Run) -> str:
    """A schedule's name with the parameters that change it ("1f1b", not "1f1b (iterations=1)")."""
    s = run.schedule
    quiet = {"iterations": 1}  # one iteration is what a run is unless it says otherwise
    extra = ", ".join(
        f"{k}={v}" for k, v in s.params.items() if k != "microbatches" and v is not None and quiet.get(k) != v
    )
    return s.name + (f" ({extra})" if extra else "")
