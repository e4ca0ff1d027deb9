"""Keep the controls and the URL in step, in both directions (plain functions, no Dash).

The URL is the single source of truth: a control change writes a new query string, and the
charts are drawn from the query string alone. Opening a link sets every control from it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ppviz import REGISTRY

from . import controls
from .url_state import CUSTOM, SLIDERS, ViewState, encode, parse

CONTROLS = ("mode", "schedule", "compare", *SLIDERS, "limit")
TABLE_TRIGGERS = {"url", "devices", "f", "b", "w", "stage-reset", None}
MAX_COMPARE = 4


@dataclass
class Synced:
    """What the sync callback sends back; None means "leave as it is"."""

    state: ViewState
    search: str | None = None
    controls: dict | None = None
    params: list | None = None
    rows: list[dict] | None = None
    options: list[dict] | None = None
    notes: list[str] | None = None


def control_values(state: ViewState) -> dict:
    values = {name: getattr(state, name) for name in CONTROLS}
    values["compare"] = list(state.compare)
    return values


def param_values(state: ViewState, ids: list[dict]) -> list:
    """Values for the parameter widgets with these ids (defaults where the state sets none)."""
    out = []
    for pid in ids:
        spec = REGISTRY[pid["schedule"]]
        param = spec.param(pid["name"])
        out.append(state.params.get(spec.name, {}).get(pid["name"], param.default if param else None))
    return out


def table_rows(state: ViewState) -> list[dict]:
    """One row per device share: its override, or the sliders' times."""
    uniform = (state.f, state.b, state.w)
    return [dict(zip(("stage", "f", "b", "w"), (i, *state.stage_times.get(i, uniform)))) for i in range(state.devices)]


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
        if value is not None:
            chosen.setdefault(pid["schedule"], {})[pid["name"]] = value
    state = replace(
        previous,
        mode=values.get("mode") or "single",
        schedule=values.get("schedule") or previous.schedule,
        compare=tuple(values.get("compare") or ())[:MAX_COMPARE],
        limit=values.get("limit"),
        params=chosen,
        **{name: _number(values.get(name), getattr(previous, name), name) for name in SLIDERS},
    )
    order = upload if state.schedule == CUSTOM and upload else None
    if state.schedule == CUSTOM and order is None:
        order = previous.order
    if state.schedule == CUSTOM and order is None:
        state = replace(state, schedule=ViewState().schedule)
    state = replace(state, order=order)
    if trigger == "stage-reset":
        return replace(state, stage_times={})
    if trigger == "stage-table" and rows is not None:
        return replace(state, stage_times=_overrides(rows, state))
    kept = {s: fbw for s, fbw in previous.stage_times.items() if s < state.devices}
    return replace(state, stage_times=kept)


def sync(
    trigger: str | None,
    search: str | None,
    values: dict,
    params: list[tuple[dict, object]],
    rows: list[dict] | None,
    upload: str | None,
) -> Synced:
    """Both directions: a URL change sets the controls; a control change writes the URL."""
    parsed = parse(search)
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
    state = state_from_controls(values, params, rows, parsed.state, trigger, upload)
    out = Synced(state, search=encode(state), notes=[])
    if trigger == "upload-store" and upload:
        out.controls = {"mode": "single", "schedule": CUSTOM}
        out.options = controls.schedule_options(with_custom=True)
    if len(values.get("compare") or ()) > MAX_COMPARE:
        out.controls = {**(out.controls or {}), "compare": list(state.compare)}
        out.notes = [f"compare takes at most {MAX_COMPARE} schedules; kept the first {MAX_COMPARE}"]
    if trigger in TABLE_TRIGGERS:
        out.rows = table_rows(state)
    if out.search.lstrip("?") == (search or "").lstrip("?"):
        out.search = None
    return out


def _overrides(rows: list[dict], state: ViewState) -> dict[int, tuple[float, float, float]]:
    """Rows whose times differ from the sliders' (a cell left unreadable keeps the slider's value)."""
    uniform = (state.f, state.b, state.w)
    out = {}
    for row in rows:
        try:
            stage = int(row["stage"])
        except (KeyError, TypeError, ValueError):
            continue
        fbw = tuple(_number(row.get(k), u, k) for k, u in zip("fbw", uniform))
        if fbw != uniform and stage < state.devices:
            out[stage] = fbw
    return out


def _number(value: object, default: float, name: str) -> float:
    """A control's number, or ``default`` when the box is empty or unreadable (never a crash)."""
    if isinstance(value, bool) or value is None:
        return default
    try:
        v = float(value)
    except (TypeError, ValueError):
        return default
    if name in ("devices", "microbatches"):
        return int(v) if v.is_integer() else default
    return v
