"""What the measured view shows for a set of uploaded files, calling ``ppviz.measured`` and
``ppviz.figures`` only: the same figures as ``ppviz measured FILES --json`` (its object is kept
whole, ``MeasuredView.data``), as tables in ms, the Gantt of the run against its simulation, and the
abstract view's link to the fitted costs under another schedule. Plain functions, no Dash.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from ppviz import figures
from ppviz.errors import InputError
from ppviz.ir import KINDS, parse_action
from ppviz.measured import compare, to_dict
from ppviz.measured.cli import megatron_text, step_error
from ppviz.measured.read import read
from ppviz.measured.whatif import MS, host_overhead_ms, share_times, what_if

from ...common import validation
from . import uploads
from .state import MeasuredState, check_pattern

NO_ACTIONS = (
    "no pipeline actions in the traces: their schedule does not annotate its actions (torch 2.13's "
    "Schedule1F1B, for one). Add the order the run ran to the upload, as a CSV (torch's schedule._dump_csv, "
    "compute-only or compute+comms): each rank's k-th forward is named its k-th F, its k-th backward its k-th B; "
    "or give a pattern for your own annotations"
)
ABSTRACT_PATH = "/"  # the abstract view: per-stage times and host overheads in its hash (`stage_times=…`)


@dataclass(frozen=True)
class MeasuredView:
    summary: str
    data: dict | None = None  # `ppviz measured --json`'s object (with its what_if), when the run was fitted
    figure: dict | None = None
    text: str = ""  # what a run that cannot be fitted holds (a Megatron-LM log's summary, an order)
    what_if_link: str | None = None  # the abstract view with the fitted costs under state.schedule
    what_if_error: str | None = None  # why the fitted costs do not run under state.schedule


def view(state: MeasuredState, files: uploads.Files) -> MeasuredView:
    """The view of ``files`` read with the state's options; an InputError names the file and its field."""
    check_pattern(state.pattern)
    order = uploads.order_in(files)
    with uploads.on_disk(files) as (folder, paths):
        named = dict(zip((name for name, _ in files), paths))
        try:
            fmt, got = read([p for name, p in named.items() if name != order], iteration=state.iteration,
                            pattern=state.pattern, naming=state.naming, order=named.get(order))  # fmt: skip
            if fmt == "kineto" and not any(got.ops) and state.pattern is None:
                raise InputError(NO_ACTIONS, field="files")
            if fmt == "megatron":
                held = {"format": "megatron", **got.summary()}
                return MeasuredView(_megatron_summary(held), text=_local(megatron_text(held), folder))
            if got.format == "torch-csv":  # an order: what it holds, nothing to fit (as the CLI)
                return MeasuredView(
                    f"{got.format}: {got.ranks} ranks, {got.stages} stages, {got.microbatches} microbatches: an "
                    "order without times; fitting needs a measured run (one profiler trace per rank)",
                    text="\n".join(f"note: {n}" for n in got.notes),
                )
            c = compare(got, cores=state.cores)
        except ValueError as e:  # the core's refusals (InputError, a ValueError, names its field)
            raise InputError(_local(str(e), folder), field=getattr(e, "field", None) or "files") from None
        data = to_dict(c)
    data["sources"] = [_local(s, folder) for s in data["sources"]]
    data["notes"] = [_local(n, folder) for n in data["notes"]]
    try:
        data["what_if"] = [what_if(c.fit, state.schedule, got.ranks, got.microbatches).to_dict()]
    except ValueError as e:  # this schedule refuses the run's devices or microbatches: the rest still shows
        data["what_if"] = []
        error = f"{state.schedule} on {got.ranks} devices and {got.microbatches} microbatches: {e}"
        link = None
    else:
        error, link = None, abstract_link(c.fit, state.schedule, got.ranks, got.microbatches)
    title = f"measured (filled) against simulated under the fitted costs (outlined): {data['format']}"
    return MeasuredView(
        summary(data),
        data=data,
        figure=figures.encode(figures.measured_gantt(_bars(c.run.ops), _simulated_bars(c), title=title)),
        what_if_link=link,
        what_if_error=error,
    )


def _local(text: str, folder: str) -> str:
    """A message of the core with the files named as uploaded (not by their temporary paths)."""
    return text.replace(folder + "/", "")


def _megatron_summary(s: dict) -> str:
    return (
        f"a Megatron-LM timer log ({s['iterations']} iterations): per-iteration totals, not per-op times, so "
        "nothing to draw against a simulation; what it holds:"
    )


def _bars(ops) -> list[list[tuple]]:
    return [[(op.stage, op.microbatch, op.kind, op.start, op.end) for op in row] for row in ops]


def _simulated_bars(c) -> list[list[tuple]]:
    """The simulation's ops per device (= rank: the measured order's placement), from its first op."""
    r = c.simulated.result
    t0 = float(r.start.min())
    rows: list[list[tuple]] = [[] for _ in range(c.run.ranks)]
    for d, s, mb, k, start, end in zip(
        r.device.tolist(), r.stage.tolist(), r.microbatch.tolist(), r.kind.tolist(), r.start.tolist(), r.end.tolist()
    ):
        rows[d].append((s, mb, KINDS[k], start - t0, end - t0))
    return rows


def abstract_link(fit, schedule: str, devices: int, microbatches: int) -> str:
    """The abstract view of ``schedule`` on the run's devices and microbatches with the fitted costs as
    its per-stage table and each rank's host overhead as its device's, in ms (the numbers
    ``ppviz measured --what-if`` simulates, so the view's makespan is the what-if's)."""
    shares = share_times(fit, devices)
    p2p = 0.0 if fit.p2p is None else fit.p2p.time
    cells = (":".join([str(i), *(_ms6(t) for t in fbw)]) for i, fbw in shares.items())
    pairs = {
        "schedule": schedule,
        "devices": str(devices),
        "microbatches": str(microbatches),
        "p2p": _ms6(p2p),
        "stage_times": ",".join(cells),
    }
    gaps = host_overhead_ms(fit)
    if any(gaps):
        pairs["host_overhead"] = ",".join(map(validation.num, gaps))
    return ABSTRACT_PATH + "#" + urlencode(pairs, safe=",:")


def _ms6(seconds: float) -> str:
    return validation.num(float(f"{seconds * MS:.6g}"))


def ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:,.3f}"


def summary(d: dict) -> str:
    step = "" if d["iteration"] is None else f", ProfilerStep#{d['iteration']}"
    under = "".join(f"; under {w['schedule']}: {ms(w['makespan_s'])} ms" for w in d["what_if"])
    return (
        f"{d['format']}: {d['ranks']} ranks, {d['stages']} stages, {d['microbatches']} microbatches{step}. "
        f"Makespan measured {ms(d['measured']['makespan_s'])} ms, simulated {ms(d['simulated']['makespan_s'])} ms "
        f"(the same order under the fitted costs){under}."
    )


FITTED_HEADER = ("stage", "F (ms)", "B (ms)", "W (ms)")
SPREAD_NOTE = "mean [min–max] × samples; B is the full backward when W is —"


def fitted_rows(d: dict) -> list[list[str]]:
    """Per stage: F, B and W as mean (or median) [min–max] × samples, in ms; then the p2p latency and each
    rank's host overhead between ops."""
    rows = []
    for s in d["fitted"]["stage_times"]:
        cells = [str(s["stage"])]
        for k in "fbw":
            v, spread, n = s[f"{k}_s"], s["spread_s"][k], s["samples"][k]
            cells.append("—" if v is None else f"{ms(v)} [{ms(spread[0])}–{ms(spread[1])}] ×{n}")
        rows.append(cells)
    f = d["fitted"]
    spread = f["p2p_spread_s"]
    p2p = ms(f["p2p_s"]) + ("" if spread is None else f" [{ms(spread[0])}–{ms(spread[1])}]")
    rows.append(["p2p", f"{p2p} ×{f['p2p_samples']}", "", ""])
    rows += [[f"host overhead, rank {r}", f"{ms(h)} ×{n}", "", ""]
             for r, (h, n) in enumerate(zip(f["host_overhead_s"], f["host_overhead_samples"]))]  # fmt: skip
    return rows


IDLE_HEADER = ("rank", "measured idle (ms)", "= the bubble (ms)", "+ host overhead (ms)", "+ excess (ms)",
               "measured step (ms)", "simulated step (ms)", "step error")  # fmt: skip


def idle_rows(d: dict) -> list[list[str]]:
    """Per rank and in all: measured idle = the schedule's bubble + the fitted host overhead (together the
    simulated idle) + the excess; each rank's step (its last op or, later, its last send received), measured
    and simulated; in all, the longest."""
    sim = d["simulated"]
    cols = (d["measured"]["idle_s"], sim["bubble_s"], sim["host_overhead_s"], d["excess_idle_s"])
    steps = (d["measured"]["step_s"], d["simulated"]["step_s"])
    rows = [[str(r), ms(m), ms(b), ms(h), ms(e), ms(x), ms(y), step_error(x, y)]
            for r, (m, b, h, e, x, y) in enumerate(zip(*cols, *steps))]  # fmt: skip
    longest = [max(x) for x in steps]
    rows.append(["all", *(ms(sum(c)) for c in cols), *(ms(x) for x in longest), step_error(*longest)])
    return rows


LATE_HEADER = ("op", "stage", "microbatch", "kind", "rank", "measured start (ms)", "simulated start (ms)", "late (ms)")


def late_rows(d: dict) -> list[list[str]]:
    """The ops that start latest against the model, named."""
    rows = []
    for x in d["late_ops"]:
        a = parse_action(x["op"])
        rows.append([x["op"], str(a.stage), str(a.microbatch), a.kind.value, str(x["rank"]),
                     ms(x["measured_start_s"]), ms(x["simulated_start_s"]), "+" + ms(x["late_s"])])  # fmt: skip
    return rows


def what_if_text(d: dict) -> str:
    return "".join(
        f"the fitted costs under {w['schedule']}: makespan {ms(w['makespan_s'])} ms"
        + "".join(f" ({n})" for n in w["notes"])
        + f": {w['command']}"
        for w in d["what_if"]
    )
