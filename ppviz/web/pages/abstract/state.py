"""The whole view as plain data, and its link form (the hash of the page at ``/``).

A shared link restores the view exactly because the page is a function of this state: the URL is
parsed into a ``ViewState``, the controls show it and the charts are drawn from it. Parsing is
lenient (a bad value falls back to its default with a note) so that no link can break the page.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode

from ppviz import REGISTRY
from ppviz.errors import InputError
from ppviz.iterations import microbatches_for_batch
from ppviz.schedules.registry import Param

from ...common import validation
from ...common.limits import (
    MAX_COMPARE,
    MAX_DEVICES,
    MAX_LIMIT,
    MAX_MICRO_BATCH,
    MAX_MICROBATCHES,
    MAX_PARAM,
    MAX_STAGE_TIME,
)
from ...common.validation import num, read_lines, to_float

CUSTOM = "custom"  # the schedule name of an uploaded order
MAX_ORDER_CHARS = 6000  # an uploaded order travels in the link, compressed, up to this many characters


class Slider(NamedTuple):
    """A numeric view field: its range on the page, its step and what it means."""

    label: str
    low: float
    high: float
    step: float
    help: str


SLIDERS: dict[str, Slider] = {
    "devices": Slider(
        "devices (pipeline ranks)", 1, MAX_DEVICES, 1, "devices p; stages follow the schedule's placement"
    ),
    "microbatches": Slider("microbatches", 1, MAX_MICROBATCHES, 1, "microbatches m per training step"),
    "f": Slider("F time", 0, 4, 0.05, "forward of one microbatch through one device's share of the model"),
    "b": Slider("B time", 0, 4, 0.05, "backward for inputs (a full backward BW takes B + W)"),
    "w": Slider("W time", 0, 4, 0.05, "backward for weights"),
    "p2p": Slider("p2p latency", 0, 2, 0.05, "added to every dependency that crosses devices"),
    "overlap": Slider("overlap factor", 0.5, 1, 0.05, "an overlapped F&B pair takes (F + B) × this factor"),
    "b_frees": Slider("B frees", 0, 1, 0.05, "fraction of a chunk's activation freed by B (W frees the rest)"),
}
INT_FIELDS = ("devices", "microbatches")
BATCH_FIELDS = ("gbs", "mbs")  # global batch and micro-batch size: microbatches = gbs / mbs when both are set
BATCH_LABELS = {"gbs": "global batch", "mbs": "micro-batch size"}
COMPARE_SHOWS = ("charts", "sweep")  # compare mode shows Gantt + memory per schedule, or the sweep chart
SWEEP_AXES = ("m", "v", "p")  # the sweep runs along microbatches, chunks per device or devices


def _default_compare() -> tuple[str, ...]:
    preferred = [n for n in ("1f1b", "interleaved-1f1b", "zb-h1", "zb-v") if n in REGISTRY]
    return tuple((preferred or list(REGISTRY))[:3])


@dataclass(frozen=True)
class ViewState:
    """Everything the page shows, as values a link can carry."""

    mode: str = "single"  # "single" or "compare"
    schedule: str = "1f1b"
    compare: tuple[str, ...] = field(default_factory=_default_compare)
    devices: int = 4
    microbatches: int = 8
    f: float = 1.0
    b: float = 1.0
    w: float = 1.0
    p2p: float = 0.0
    overlap: float = 1.0
    b_frees: float = 0.0
    limit: float | None = None  # memory-limit line, in activation units
    gbs: int | None = None  # global batch: with mbs, another way to give microbatches (= gbs / mbs)
    mbs: int | None = None  # micro-batch size
    params: dict[str, dict[str, float | int]] = field(default_factory=dict)  # schedule -> param -> value
    stage_times: dict[int, tuple[float, float, float]] = field(default_factory=dict)  # model share -> f, b, w
    host_overhead: tuple[float, ...] = ()  # per device, its host's time between two consecutive ops; () = none
    order: str | None = None  # an uploaded PyTorch-format order (schedule == CUSTOM)
    lines: tuple[int, ...] = ()  # devices drawn as lines over the memory band; () = highest and lowest peak
    baseline: str | None = None  # compare mode: the schedule the deltas are against (None: the first compared)
    compare_show: str = "charts"  # compare mode: "charts" or "sweep"
    sweep_axis: str = "m"  # the sweep's axis: "m", "v" or "p"

    @property
    def shown(self) -> tuple[str, ...]:
        """The schedules on screen."""
        return self.compare if self.mode == "compare" else (self.schedule,)

    def params_of(self, name: str) -> dict[str, float | int]:
        """The schedule's parameters as set, defaults filled in (None = derived by the schedule)."""
        spec = REGISTRY.get(name)
        if spec is None:
            return {}
        chosen = self.params.get(name, {})
        return {p.name: chosen.get(p.name, p.default) for p in spec.params if chosen.get(p.name, p.default) is not None}

    @property
    def reference(self) -> str | None:
        """The compared schedule the ranking's deltas are against: the chosen one, else the first."""
        if self.baseline in self.compare:
            return self.baseline
        return self.compare[0] if self.compare else None


class Parsed(NamedTuple):
    state: ViewState
    notes: list[str]  # what in the link was not understood and what was used instead


def encode(state: ViewState) -> str:
    """The hash (with its leading ``#``) that restores ``state``: ``#schedule=zb-v&devices=8…``."""
    pairs: list[tuple[str, str]] = []
    if state.mode == "compare":
        pairs += [("mode", "compare"), ("compare", ",".join(state.compare))]
        if state.baseline in state.compare and state.baseline != state.compare[0]:
            pairs.append(("baseline", state.baseline))
        if state.compare_show != "charts":
            pairs.append(("show", state.compare_show))
        if state.sweep_axis != "m":
            pairs.append(("sweep", state.sweep_axis))
    else:
        pairs.append(("schedule", state.schedule))
    for name in SLIDERS:
        pairs.append((name, num(getattr(state, name))))
    if state.limit is not None:
        pairs.append(("limit", num(state.limit)))
    for name in BATCH_FIELDS:
        if getattr(state, name) is not None:
            pairs.append((name, num(getattr(state, name))))
    for sched in state.shown:
        for key, value in sorted(state.params.get(sched, {}).items()):
            if value is not None:
                pairs.append((f"{sched}.{key}", num(value)))
    if state.stage_times:
        cells = (":".join([str(s), *map(num, fbw)]) for s, fbw in sorted(state.stage_times.items()))
        pairs.append(("stage_times", ",".join(cells)))
    if state.host_overhead:
        pairs.append(("host_overhead", ",".join(map(num, state.host_overhead))))
    if state.order is not None and state.mode != "compare":
        pairs.append(("order", pack_order(state.order)))
    if state.lines:
        pairs.append(("lines", ",".join(map(str, state.lines))))
    return "#" + urlencode(pairs, safe=",:")


def parse(link: str | None) -> Parsed:
    """Read a hash (the pairs after ``#``); anything unreadable falls back to its default and is noted."""
    base = ViewState()
    notes: list[str] = []
    query = dict(parse_qsl((link or "").lstrip("#"), keep_blank_values=True))
    values: dict = {}
    known = set(SLIDERS) | {"mode", "schedule", "compare", "limit", "stage_times", "order", "lines", *BATCH_FIELDS}
    known |= {"host_overhead"}
    known |= {"baseline", "show", "sweep"}

    if query.get("mode") in ("single", "compare"):
        values["mode"] = query["mode"]
    elif "mode" in query:
        notes.append(f"mode {query['mode']!r} is not single or compare; showing one schedule")
    if "schedule" in query:
        name = query["schedule"]
        if name in REGISTRY or (name == CUSTOM and "order" in query):
            values["schedule"] = name
        else:
            notes.append(f"unknown schedule {name!r}; showing {base.schedule}")
    if "compare" in query:
        names = [n for n in query["compare"].split(",") if n]
        unknown = [n for n in names if n not in REGISTRY]
        if unknown:
            notes.append(f"unknown schedule(s) {', '.join(unknown)} left out of the comparison")
        names = list(dict.fromkeys(n for n in names if n in REGISTRY))[:4]
        if names:
            values["compare"] = tuple(names)
    if "baseline" in query:
        if query["baseline"] in values.get("compare", base.compare):
            values["baseline"] = query["baseline"]
        else:
            notes.append(f"baseline {query['baseline']!r} is not a compared schedule; using the first")
    for key, name, allowed in (("show", "compare_show", COMPARE_SHOWS), ("sweep", "sweep_axis", SWEEP_AXES)):
        if key in query:
            if query[key] in allowed:
                values[name] = query[key]
            else:
                notes.append(f"{key}={query[key]!r} is not one of {', '.join(allowed)}; using {allowed[0]}")
    for name, spec in SLIDERS.items():
        if name in query:
            value = _read_number(name, query[name], spec, name in INT_FIELDS, notes)
            if value is not None:
                values[name] = value
    if query.get("limit"):
        limit = to_float(query["limit"])
        if limit is None or limit < 0:
            notes.append(f"memory limit {query['limit']!r} is not a number ≥ 0; no limit line")
        else:
            values["limit"] = limit
    for name in BATCH_FIELDS:
        if query.get(name):
            v = to_float(query[name])
            if v is None or not v.is_integer() or v < 1:
                notes.append(f"{BATCH_LABELS[name]} {query[name]!r} is not a whole number ≥ 1; left out")
            else:
                values[name] = int(v)
    if query.get("stage_times"):
        values["stage_times"] = _read_stage_times(query["stage_times"], notes)
    if query.get("host_overhead"):
        values["host_overhead"] = _read_host_overhead(query["host_overhead"], notes)
    if "lines" in query:
        values["lines"] = read_lines(query["lines"], notes)
    if "order" in query:
        try:
            values["order"] = unpack_order(query["order"])
        except ValueError as e:
            notes.append(str(e))
            if values.get("schedule") == CUSTOM:
                del values["schedule"]

    params: dict[str, dict] = {}
    for key, raw in query.items():
        if key in known:
            continue
        sched, _, pname = key.partition(".")
        spec = REGISTRY.get(sched)
        param = spec.param(pname) if spec is not None else None
        if param is None:
            notes.append(f"ignored {key}={raw} (no such schedule parameter)")
            continue
        value = _read_param(param, raw)
        if value is None:
            notes.append(f"{key}={raw!r} is not a valid {param.type.__name__}; using its default")
        else:
            params.setdefault(sched, {})[pname] = value
    values["params"] = params
    state = replace(base, **values)
    if state.schedule == CUSTOM and state.order is None:
        state = replace(state, schedule=base.schedule)
    return Parsed(state, notes)


def pack_order(text: str) -> str:
    """An order CSV as compact link-safe text (zlib, then URL-safe base64)."""
    return base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii").rstrip("=")


def unpack_order(packed: str, max_chars: int = 256 * 1024) -> str:  # the upload limit: no bigger order inflates
    """The inverse of ``pack_order``; refuses damaged text and anything that inflates past ``max_chars``."""
    try:
        raw = base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, max_chars + 1)
        if len(data) > max_chars or inflater.unconsumed_tail:
            raise InputError("the order in the link is too large", field="order")
        if not inflater.eof:
            raise zlib.error("truncated")
        return data.decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError):
        raise InputError("the order in the link is damaged; upload it again", field="order") from None


def field_names() -> list[str]:
    return [f.name for f in fields(ViewState)]


def _read_number(name: str, raw: str, spec: Slider, integer: bool, notes: list[str]) -> float | int | None:
    """A slider's value from the link, bounded by ``validation.in_range`` like every other number."""
    v = to_float(raw)
    return validation.in_range(name, raw if v is None else v, spec.low, spec.high, integer, notes)


def _read_param(param: Param, raw: str) -> float | int | None:
    v = to_float(raw)
    if v is None:
        return None
    if param.type is int:
        return int(v) if v.is_integer() else None
    return v


def _read_stage_times(raw: str, notes: list[str]) -> dict[int, tuple[float, float, float]]:
    out: dict[int, tuple[float, float, float]] = {}
    for cell in raw.split(","):
        parts = cell.split(":")
        nums = [to_float(x) for x in parts[1:]]
        if len(parts) != 4 or not parts[0].isdigit() or None in nums:
            notes.append(f"stage time {cell!r} is not stage:f:b:w; left out")
            continue
        out[int(parts[0])] = tuple(nums)  # type: ignore[assignment]
    return out


def _read_host_overhead(raw: str, notes: list[str]) -> tuple[float, ...]:
    """``t0,t1,…`` from the link; their count and range are ``bounded``'s to check."""
    times = [to_float(t) for t in raw.split(",")]
    if None in times:
        notes.append(f"host overhead {raw[:60]!r} is not a list of times, one per device; left out")
        return ()
    return tuple(times)  # type: ignore[arg-type]


def bounded(state: ViewState) -> tuple[ViewState, list[str]]:
    """``state`` with every field of a known type and within its range; a note for each change."""
    notes: list[str] = []
    default = ViewState()
    values: dict = {}
    if state.mode not in ("single", "compare"):
        values["mode"] = "single"
    if not isinstance(state.schedule, str) or (state.schedule not in REGISTRY and state.schedule != CUSTOM):
        notes.append(f"unknown schedule {validation.show(state.schedule)}; showing {default.schedule}")
        values["schedule"] = default.schedule
    compare = state.compare if isinstance(state.compare, (list, tuple)) else ()
    known = [n for n in compare if isinstance(n, str) and n in REGISTRY]
    if len(known) != len(compare):
        notes.append("unknown schedules left out of the comparison")
    known = list(dict.fromkeys(known))
    if len(known) > MAX_COMPARE:
        notes.append(f"compare takes at most {MAX_COMPARE} schedules; kept the first {MAX_COMPARE}")
    if tuple(known[:MAX_COMPARE]) != tuple(compare):
        values["compare"] = tuple(known[:MAX_COMPARE])
    for name, spec in SLIDERS.items():
        value = getattr(state, name)
        clean = validation.in_range(name, value, spec.low, spec.high, name in ("devices", "microbatches"), notes)
        if clean is None:
            clean = getattr(default, name)
        if clean != value or type(clean) is not type(value):
            values[name] = clean
    if state.limit is not None:
        limit = validation.in_range("memory limit", state.limit, 0, MAX_LIMIT, False, notes)
        if limit != state.limit:
            values["limit"] = limit
    values.update(_bounded_batch(state, notes))
    params = _bounded_params(state.params, notes)
    if params != state.params:
        values["params"] = params
    devices = values.get("devices", state.devices)
    stage_times = _bounded_stage_times(state.stage_times, devices, notes)
    if stage_times != state.stage_times:
        values["stage_times"] = stage_times
    host_overhead = _bounded_host_overhead(state.host_overhead, devices, notes)
    if host_overhead != state.host_overhead:
        values["host_overhead"] = host_overhead
    if state.order is not None and not isinstance(state.order, str):
        values["order"] = None
    lines = read_lines(state.lines, notes)
    if lines != state.lines:
        values["lines"] = lines
    compared = values.get("compare", state.compare)
    if state.baseline is not None and state.baseline not in compared:
        values["baseline"] = None  # the first compared schedule is the baseline
    if state.compare_show not in COMPARE_SHOWS:
        values["compare_show"] = default.compare_show
    if state.sweep_axis not in SWEEP_AXES:
        values["sweep_axis"] = default.sweep_axis
    state = replace(state, **values) if values else state
    if state.schedule == CUSTOM and state.order is None:
        state = replace(state, schedule=default.schedule)
    return state, notes


def _bounded_batch(state: ViewState, notes: list[str]) -> dict:
    """Global batch and micro-batch size as whole numbers in range; when both are set and divide,
    the microbatch count they give (a pair that does not divide is left for ``batch_error`` to say)."""
    out: dict = {}
    mbs = state.mbs
    for name, high in (("mbs", MAX_MICRO_BATCH), ("gbs", MAX_MICROBATCHES * MAX_MICRO_BATCH)):
        value = getattr(state, name)
        if value is None:
            continue
        if name == "gbs" and isinstance(mbs, int):
            high = MAX_MICROBATCHES * mbs
        clean = validation.in_range(BATCH_LABELS[name], value, 1, high, True, notes)
        if clean != value or type(clean) is not type(value):
            out[name] = clean
        if name == "mbs":
            mbs = clean
    gbs = out.get("gbs", state.gbs)
    if gbs is not None and mbs is not None and batch_error(gbs, mbs) is None:
        out["microbatches"] = gbs // mbs
    return out


def batch_error(gbs: int | None, mbs: int | None) -> str | None:
    """Why a global batch and a micro-batch size give no microbatch count (None when they do, or are unset)."""
    if gbs is None or mbs is None:
        return None
    try:
        microbatches_for_batch(gbs, mbs)
    except ValueError as e:
        return str(e)
    return None


def _bounded_params(params: object, notes: list[str]) -> dict:
    out: dict[str, dict] = {}
    if not isinstance(params, dict):
        return out
    for sched, chosen in params.items():
        spec = REGISTRY.get(sched) if isinstance(sched, str) else None
        if spec is None or not isinstance(chosen, dict):
            continue
        for pname, value in chosen.items():
            param = spec.param(pname) if isinstance(pname, str) else None
            if param is None or value is None:
                continue
            high = param.high if param.high is not None else MAX_PARAM[param.type]
            clean = validation.in_range(f"{sched} {pname}", value, param.low, high, param.type is int, notes)
            if clean is not None:
                out.setdefault(sched, {})[pname] = clean
    return out


def _bounded_stage_times(stage_times: object, devices: int, notes: list[str]) -> dict:
    out: dict[int, tuple[float, float, float]] = {}
    if not isinstance(stage_times, dict):
        return out
    for share, fbw in stage_times.items():
        if isinstance(share, bool) or not isinstance(share, int) or not 0 <= share < devices:
            continue
        if not isinstance(fbw, (list, tuple)) or len(fbw) != 3:
            continue
        times = [validation.finite(t) for t in fbw]
        if None in times:
            notes.append(f"per-stage times of share {share} are not numbers; left out")
            continue
        if any(abs(t) > MAX_STAGE_TIME for t in times):
            notes.append(f"per-stage times of share {share} are past ±{MAX_STAGE_TIME:g}; left out")
            continue
        out[share] = tuple(times)
    return out


def _bounded_host_overhead(times: object, devices: int, notes: list[str]) -> tuple[float, ...]:
    """One time per device in [0, MAX_STAGE_TIME], or () (none) with a note; all zeros are none too,
    so a view without an overhead keeps its link."""
    if not isinstance(times, (list, tuple)) or not times:
        return ()
    if len(times) != devices:
        notes.append(f"host overhead gives {len(times)} times for {devices} devices; left out")
        return ()
    clean = [validation.finite(t) for t in times]
    if None in clean:
        notes.append("host overhead: not every time is a number; left out")
        return ()
    bad = next((d for d, t in enumerate(clean) if not 0 <= t <= MAX_STAGE_TIME), None)
    if bad is not None:
        notes.append(f"host overhead {clean[bad]:g} of device {bad} is outside 0–{MAX_STAGE_TIME:g}; left out")
        return ()
    return tuple(clean) if any(clean) else ()  # type: ignore[arg-type]
