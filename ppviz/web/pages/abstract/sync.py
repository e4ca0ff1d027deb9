"""Keep the controls and the URL in step, in both directions (plain functions, no Dash).

The URL is the single source of truth: a control change writes a new hash, and the charts are
drawn from the hash alone. Opening a link sets every control from it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ppviz import REGISTRY

from ...common import limits
from . import controls
from .state import BATCH_FIELDS, CUSTOM, SLIDERS, Parsed, ViewState, bounded, encode, parse

CONTROLS = (
    "mode",
    "schedule",
    "compare",
    *SLIDERS,
    "limit",
    *BATCH_FIELDS,
    "lines",
    "baseline",
    "compare_show",
    "sweep_axis",
)
TABLE_TRIGGERS = {"url", "devices", "f", "b", "w", "stage-reset", None}
HOST = "host_overhead"  # the stage table's column of each row's device's host overhead
MAX_COMPARE = limits.MAX_COMPARE


@dataclass
class Synced:
    """What the sync callback sends back; None means "leave as it is"."""

    state: ViewState
    previous: ViewState | None = None  # the state in the URL before (for a control change)
    hash: str | None = None
    controls: dict | None = None
    params: list | None = None
    rows: list[dict] | None = None
    options: list[dict] | None = None
    notes: list[str] | None = None


def control_values(state: ViewState) -> dict:
    values = {name: getattr(state, name) for name in CONTROLS}
    values["compare"] = list(state.compare)
    values["lines"] = [d for d in state.lines if d < state.devices]  # the picker offers the view's devices
    values["baseline"] = state.reference
    return values


def param_values(state: ViewState, ids: list[dict]) -> list:
    """Values for the parameter widgets with these ids (defaults where the state sets none)."""
    out = []
    for pid in ids:
        spec = REGISTRY.get(pid.get("schedule")) if _named(pid) else None
        param = spec.param(pid["name"]) if spec is not None else None
        if param is None:
            out.append(None)  # an id the page does not have (a crafted request): nothing to set
            continue
        out.append(state.params.get(spec.name, {}).get(pid["name"], param.default))
    return out


def read(hash_: object) -> Parsed:
    """The URL's hash as a bounded view state, with notes on what was changed (any input type)."""
    text = hash_ if isinstance(hash_, str) else ""
    notes = [] if isinstance(hash_, (str, type(None))) else ["the link is not text; showing the default view"]
    if len(text) > limits.MAX_SEARCH_CHARS:
        notes.append(f"the link is longer than {limits.MAX_SEARCH_CHARS:,} characters; showing the default view")
        text = ""
    parsed = parse(text)
    state, more = bounded(parsed.state)
    return Parsed(state, notes + parsed.notes + more)


def table_rows(state: ViewState) -> list[dict]:
    """One row per device share: its override, or the sliders' times; and device i's host overhead (0: none)."""
    uniform = (state.f, state.b, state.w)
    return [
        {**dict(zip(("stage", "f", "b", "w"), (i, *state.stage_times.get(i, uniform)))), HOST: host}
        for i, host in enumerate(host_overheads(state.host_overhead, state.devices))
    ]


def host_overheads(times: tuple[float, ...], devices: int) -> tuple[float, ...]:
    """One host overhead per device: the devices that remain keep theirs, new ones get 0. A count past
    the slider (a crafted request) is taken as ``bounded`` will clamp it."""
    devices = min(max(devices, 1), limits.MAX_DEVICES)
    return tuple(times[:devices]) + (0.0,) * (devices - len(times[:devices]))


def state_from_controls(
    values: dict,
    params: list[tuple[dict, object]],
    rows: list[dict] | None,
    previous: ViewState,
    trigger: str | None,
    upload: str | None,
) -> ViewState:
    """The view the controls show. ``previous`` (from the current URL) supplies what controls do not hold."""
    chosen: dict[str, dict] = {}
    for pid, value in params:
        if value is not None and _named(pid):
            chosen.setdefault(pid["schedule"], {})[pid["name"]] = value
    compare = values.get("compare")
    schedule = values.get("schedule")
    state = replace(
        previous,
        mode=values.get("mode") if values.get("mode") in ("single", "compare") else "single",
        schedule=schedule if isinstance(schedule, str) and schedule else previous.schedule,
        compare=tuple(compare) if isinstance(compare, (list, tuple)) else (),
        limit=values.get("limit"),
        gbs=None if trigger == "microbatches" else _count(values.get("gbs")),  # the slider gives m itself
        mbs=_count(values.get("mbs")),
        params=chosen,
        lines=values.get("lines") or (),  # bounded keeps devices only
        baseline=values.get("baseline") if isinstance(values.get("baseline"), str) else None,
        compare_show=values.get("compare_show") if isinstance(values.get("compare_show"), str) else "charts",
        sweep_axis=values.get("sweep_axis") if isinstance(values.get("sweep_axis"), str) else "m",
        **{name: _number(values.get(name), getattr(previous, name), name) for name in SLIDERS},
    )
    upload = upload if isinstance(upload, str) else None
    order = upload if state.schedule == CUSTOM and upload else None
    if state.schedule == CUSTOM and order is None:
        order = previous.order
    if state.schedule == CUSTOM and order is None:
        state = replace(state, schedule=ViewState().schedule)
    state = replace(state, order=order)
    if trigger == "stage-reset":
        return replace(state, stage_times={}, host_overhead=())
    if trigger == "stage-table" and isinstance(rows, list):
        return replace(state, stage_times=_overrides(rows, state), host_overhead=_host_column(rows, previous, state))
    kept = {s: fbw for s, fbw in previous.stage_times.items() if s < state.devices}
    host = host_overheads(previous.host_overhead, state.devices)
    return replace(state, stage_times=kept, host_overhead=host if any(host) else ())


def sync(
    trigger: str | None,
    hash_: str | None,
    values: dict,
    params: list[tuple[dict, object]],
    rows: list[dict] | None,
    upload: str | None,
) -> Synced:
    """Both directions: a URL change sets the controls; a control change writes the URL.

    Either way the state passes ``bounded``: a value past its range is clamped, said so in
    the notes, and the control is set to what is used.
    """
    parsed = read(hash_)
    upload = upload if isinstance(upload, str) else None
    if trigger in (None, "url"):
        state = parsed.state
        return Synced(
            state,
            controls=control_values(state),
            params=param_values(state, [pid for pid, _ in params]),
            rows=table_rows(state),
            options=controls.schedule_options(with_custom=state.order is not None or bool(upload)),
            notes=parsed.notes,
        )
    if trigger == "upload-store" and upload:
        values = {**values, "mode": "single", "schedule": CUSTOM}
    raw = state_from_controls(values, params, rows, parsed.state, trigger, upload)
    state, notes = bounded(raw)
    out = Synced(state, parsed.state, hash=encode(state), notes=notes)
    if notes:  # show what is used instead of what was sent
        out.controls = {name: value for name, value in control_values(state).items() if name != "compare"}
        out.params = param_values(state, [pid for pid, _ in params])
    if trigger in BATCH_FIELDS or (trigger == "microbatches" and values.get("gbs") is not None):
        # the slider shows the count a global batch gives; moving the slider clears the global batch
        out.controls = {**(out.controls or {}), "microbatches": state.microbatches, "gbs": state.gbs}
    if trigger == "upload-store" and upload:
        out.controls = {**(out.controls or {}), "mode": "single", "schedule": CUSTOM}
        out.options = controls.schedule_options(with_custom=True)
    sent = values.get("compare")
    if not isinstance(sent, (list, tuple)) or list(sent) != list(state.compare):
        out.controls = {**(out.controls or {}), "compare": list(state.compare)}
    if values.get("baseline") != state.reference:  # the baseline left the comparison: the first is used
        out.controls = {**(out.controls or {}), "baseline": state.reference}
    if trigger in TABLE_TRIGGERS or (notes and trigger == "stage-table"):  # an edit left out: show what is used
        out.rows = table_rows(state)
    if out.hash.lstrip("#") == (hash_ if isinstance(hash_, str) else "").lstrip("#"):
        out.hash = None
    return out


def _overrides(rows: list[dict], state: ViewState) -> dict[int, tuple[float, float, float]]:
    """Rows whose times differ from the sliders' (a cell left unreadable keeps the slider's value)."""
    uniform = (state.f, state.b, state.w)
    out = {}
    for row in rows[: state.devices]:
        if not isinstance(row, dict):
            continue
        stage = row.get("stage")
        if isinstance(stage, bool) or not isinstance(stage, int) or not 0 <= stage < state.devices:
            continue
        fbw = tuple(_number(row.get(k), u, k) for k, u in zip("fbw", uniform))
        if fbw != uniform and stage < state.devices:
            out[stage] = fbw
    return out


def _host_column(rows: list[dict], previous: ViewState, state: ViewState) -> tuple[float, ...]:
    """The table's host overheads, one per device (a cell left unreadable keeps the link's value)."""
    times = list(host_overheads(previous.host_overhead, state.devices))
    for row in rows[: state.devices]:
        stage = row.get("stage") if isinstance(row, dict) else None
        if isinstance(stage, bool) or not isinstance(stage, int) or not 0 <= stage < state.devices:
            continue
        times[stage] = _number(row.get(HOST), times[stage], HOST)
    return tuple(times) if any(times) else ()


def _number(value: object, default: float, name: str) -> float:
    """A control's number, or ``default`` when the box is empty or unreadable (never a crash)."""
    if isinstance(value, bool) or value is None:
        return default
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        return default
    if name in ("devices", "microbatches"):
        return int(v) if v.is_integer() else default
    return v


def _count(value: object) -> int | float | None:
    """A batch box's number (range checks are ``bounded``'s), None when empty or unreadable."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _named(pid: object) -> bool:
    """A parameter id as the page makes them: a dict naming a schedule and a parameter by strings."""
    return isinstance(pid, dict) and isinstance(pid.get("schedule"), str) and isinstance(pid.get("name"), str)
