"""A model on a cluster as plain data, its link form (hash pairs) and its bounds.

Shared by the model page (which shows it) and the search page (whose rows open in the model page).
Every value is bounded here before any work, with ``common.validation``'s readers:
a value past its range is clamped and said so, an unreadable one falls back to its default.
The page converts page units (TFLOP/s, GiB, GB/s) to the estimate's (FLOP/s, bytes, bytes/s) and
back; the costs themselves are ``ppviz.estimate``'s, and so are the defaults (``estimate.defaults``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple
from urllib.parse import urlencode

import dash

from ppviz import REGISTRY
from ppviz.estimate import defaults, specs
from ppviz.estimate.command_line import command as estimate_command
from ppviz.estimate.specs import PRECISIONS, RECOMPUTE
from ppviz.units import GIB

from . import limits, url_hash, validation

MAX_COMPARE = limits.MAX_COMPARE


class Field(NamedTuple):
    """A number box of this view: label, range, whether whole, and (for GPU fields) the page unit's factor."""

    label: str
    low: float
    high: float
    integer: bool = True
    factor: float = 1.0  # estimate unit = page value × factor
    target: str = ""  # the Model / Gpu field it sets (default: its own name)


MODEL_FIELDS: dict[str, Field] = {
    "layers": Field("layers L", 1, 1024),
    "hidden": Field("hidden h", 1, 131_072),
    "heads": Field("attention heads a", 1, 1024),
    "kv_heads": Field("KV heads g", 1, 1024),
    "ffn": Field("FFN width", 1, 1_048_576),
    "vocab": Field("vocabulary V", 1, 4_194_304),
    "seq": Field("sequence length s", 1, 1_048_576),
    "head_dim": Field("head width (0: h / a)", 0, 65_536),
    "experts": Field("MoE experts (0: dense)", 0, 4096),
    "top_k": Field("MoE experts per token", 0, 4096),
    "expert_ffn": Field("MoE expert width", 0, 1_048_576),
    "shared_experts": Field("MoE shared experts", 0, 4096),
    "dense_layers": Field("MoE: leading dense layers", 0, 1024),
}
GPU_FIELDS: dict[str, Field] = {
    "tflops": Field("BF16 peak (TFLOP/s)", 1, 100_000, False, 1e12, "bf16_flops"),
    "fp8_tflops": Field("FP8 peak (TFLOP/s; 0: none)", 0, 100_000, False, 1e12, "fp8_flops"),
    "hbm_gib": Field("HBM capacity (GiB)", 1, 10_000, False, GIB, "hbm_bytes"),
    "reserve_gib": Field("reserve: HBM a run cannot use (GiB)", 0, 10_000, False, GIB, "reserve_bytes"),
    "hbm_tbs": Field("HBM bandwidth (TB/s)", 0.01, 1_000, False, 1e12, "hbm_bytes_per_s"),
    "nvlink_gbs": Field("NVLink per direction (GB/s)", 1, 100_000, False, 1e9, "nvlink_bytes_per_s"),
    "net_gbs": Field("network per GPU (GB/s)", 0.1, 100_000, False, 1e9, "network_bytes_per_s"),
    "domain": Field("NVLink domain (GPUs)", 1, 1024, True, 1.0, "nvlink_domain"),
    **{
        f"{part}_efficiency": Field(
            f"{what} efficiency (fraction of its peak)", 0.01, 1, False, 1.0, f"{part}_efficiency"
        )
        for part, what in (("matmul", "matmul"), ("hbm", "HBM"), ("nvlink", "NVLink"), ("network", "network"))
    },  # fmt: skip
}
LEGACY_GB = "hbm_gb"  # links from before GiB: HBM in GB (10⁹ bytes), converted on reading
LAYOUT_FIELDS: dict[str, Field] = {
    "tp": Field("tp (tensor parallel)", 1, 64),
    "pp": Field("pp (pipeline devices)", 1, limits.MAX_DEVICES),
    "dp": Field("dp (data parallel)", 1, 65_536),
    "cp": Field("cp (context parallel)", 1, 64),
    "ep": Field("ep (expert parallel, MoE; out of dp)", 1, 1024),
    "vpp": Field("vpp (chunks per device, interleaved)", 1, 16),
    "mbs": Field("micro-batch size", 1, 1024),
    "gbs": Field("global batch (sequences)", 1, 1_048_576),
    "iterations": Field("iterations (optimizer step between them)", 1, 64),
}
ITERATED = "gpipe, 1f1b, eager-1f1b and the 2BW schedules"  # the registry's schedules that take iterations
ZERO = (0, 1, 2, 3)
MAX_SPLIT = 1024  # stages in an explicit layer split (pp·vpp, or 2·pp for V shapes, at most)
NUMBER_FIELDS = {**MODEL_FIELDS, **GPU_FIELDS, **LAYOUT_FIELDS}


@dataclass(frozen=True)
class ModelState:
    """Everything the model & cluster view shows, as values a link can carry."""

    mode: str = "single"  # "single" or "compare"
    schedule: str = defaults.SCHEDULE
    compare: tuple[str, ...] = defaults.COMPARED
    model: str = "llama3-70b"
    gpu: str = "h100-sxm"
    model_over: dict[str, int] = field(default_factory=dict)  # MODEL_FIELDS name -> value, where it differs
    gpu_over: dict[str, float] = field(default_factory=dict)  # GPU_FIELDS name -> page value, where it differs
    tp: int = 8
    pp: int = 8
    dp: int = 1
    cp: int = 1
    ep: int = 1
    vpp: int = 1
    mbs: int = 1
    gbs: int = 64
    iterations: int = 1  # for schedules that take it (the others run one)
    sp: bool = defaults.SEQUENCE_PARALLEL  # applies when tp > 1, as everywhere (``defaults.sequence_parallel``)
    tpo: bool = False  # TP collectives overlapped with the GEMMs (applies with sequence parallel, tp > 1)
    recompute: str = defaults.RECOMPUTE
    zero: int = defaults.ZERO
    precision: str = "bf16"
    split: tuple[int, ...] | None = None  # layers of every stage (None: even)
    lines: tuple[int, ...] = ()  # devices drawn as lines over the memory band; () = highest and lowest peak
    baseline: str | None = None  # compare mode: the schedule the deltas are against (None: the first)
    compare_show: str = "charts"  # compare mode: "charts" (Gantt + memory per schedule) or "sweep"
    sweep_axis: str = "m"  # the sweep's axis: "m", "v" (vpp) or "p" (pp)
    # from a search row (no control of their own): 2D (SUMMA) tensor parallelism and the NVLink placement
    tp_mode: str = "1d"
    tp2d: tuple[int, int] | None = None
    summa_blocks: int = 0
    nvlink_dp_pp: tuple[int, int] | None = None

    @property
    def shown(self) -> tuple[str, ...]:
        return self.compare if self.mode == "compare" else (self.schedule,)

    @property
    def reference(self) -> str | None:
        """The compared schedule the ranking's deltas are against: the chosen one, else the first."""
        if self.baseline in self.compare:
            return self.baseline
        return self.compare[0] if self.compare else None

    @property
    def microbatches(self) -> int | None:
        """m = gbs / (dp·mbs), or None when it does not divide (the estimate says what to change)."""
        per = self.dp * self.mbs
        return self.gbs // per if self.gbs % per == 0 else None

    def field_value(self, name: str) -> float:
        """What a number box shows: the override, else the preset's value (in page units)."""
        if name in MODEL_FIELDS:
            return self.model_over.get(name, preset_value(self.model, name))
        if name in GPU_FIELDS:
            return self.gpu_over.get(name, preset_value(self.gpu, name))
        return getattr(self, name)


def preset_value(preset: str, name: str) -> float:
    """A preset's field in page units (llama3-70b's layers: 80; h100-sxm's hbm_gb: 80)."""
    if name in MODEL_FIELDS:
        return getattr(specs.model(preset), name)
    f = GPU_FIELDS[name]
    value = getattr(specs.gpu(preset), f.target) / f.factor
    return int(value) if f.integer else float(f"{value:.12g}")


def model_of(state: ModelState) -> specs.Model:
    return specs.model(state.model, **state.model_over)


def gpu_of(state: ModelState) -> specs.Gpu:
    values = {}
    for name, v in state.gpu_over.items():
        f = GPU_FIELDS[name]
        values[f.target] = int(v) if f.integer else v * f.factor
    return specs.gpu(state.gpu, **values)


def takes_iterations(schedule: str) -> bool:
    spec = REGISTRY.get(schedule)
    return spec is not None and spec.param("iterations") is not None


def iterations_of(state: ModelState, schedule: str) -> int:
    """The iterations one schedule of the view runs: the box's value where it takes them, else 1."""
    return state.iterations if takes_iterations(schedule) else 1


def layout_of(state: ModelState, schedule: str) -> specs.Layout:
    """The estimate's Layout for one schedule; vpp goes only to schedules that take chunks, and
    iterations to those that take them."""
    spec = REGISTRY.get(schedule)
    takes_chunks = spec is not None and spec.param("chunks") is not None
    k = iterations_of(state, schedule)
    return specs.Layout(
        tp=state.tp,
        pp=state.pp,
        dp=state.dp,
        cp=state.cp,
        ep=state.ep,
        vpp=state.vpp if takes_chunks else 1,
        mbs=state.mbs,
        gbs=state.gbs,
        sequence_parallel=state.sp and defaults.sequence_parallel(state.tp, state.tp_mode),
        tp_comm_overlap=state.tpo and state.sp and defaults.sequence_parallel(state.tp, state.tp_mode),
        recompute=state.recompute,
        zero=state.zero,
        precision=state.precision,
        schedule=schedule,
        schedule_params={"iterations": k} if k > 1 else {},
        layer_split=state.split,
        tp_mode=state.tp_mode,
        tp2d=state.tp2d,
        summa_blocks=state.summa_blocks,
        nvlink_dp_pp=state.nvlink_dp_pp,
    )


def cli_command(state: ModelState, schedule: str) -> str:
    """The ``ppviz estimate`` command of one schedule of the view: every input it used, so that it gives
    the page's numbers exactly (``estimate.command_line.command``)."""
    return estimate_command(model_of(state), gpu_of(state), layout_of(state, schedule))


# --- the link ---------------------------------------------------------------------------------


COMPARE_SHOWS = ("charts", "sweep")
SWEEP_AXES = ("m", "v", "p")
PLACEMENT_KEYS = ("tp_mode", "tp2d", "summa_blocks", "nvlink")  # set by a search row, kept while they fit

MODEL_PATH = "/model"  # the model & cluster page (ppviz.web.shell registers it there)


def link(state: ModelState) -> str:
    """The model page's address at ``state`` (the search page opens a row there)."""
    return dash.get_relative_path(MODEL_PATH) + key_of(state)


def encode(state: ModelState) -> dict[str, str]:
    """The hash pairs of this view (its overrides only where they differ from the presets)."""
    pairs = {"model": state.model, "gpu": state.gpu}
    if state.mode == "compare":
        pairs |= {"mode": "compare", "compare": ",".join(state.compare)}
        if state.baseline in state.compare and state.baseline != state.compare[0]:
            pairs["baseline"] = state.baseline
        if state.compare_show != "charts":
            pairs["show"] = state.compare_show
        if state.sweep_axis != "m":
            pairs["sweep"] = state.sweep_axis
    else:
        pairs["schedule"] = state.schedule
    for name in LAYOUT_FIELDS:
        if name != "iterations" or state.iterations != 1:  # links of one iteration stay as they were
            pairs[name] = str(getattr(state, name))
    pairs |= {"sp": str(int(state.sp)), "recompute": state.recompute, "zero": str(state.zero)}
    if state.tpo:  # links without the overlap stay as they were
        pairs["tpo"] = "1"
    if state.precision != "bf16":
        pairs["precision"] = state.precision
    if state.split:
        pairs["split"] = ",".join(map(str, state.split))
    if state.lines:
        pairs["lines"] = ",".join(map(str, state.lines))
    if state.tp_mode == "2d" and state.tp2d:
        pairs |= {"tp_mode": "2d", "tp2d": f"{state.tp2d[0]},{state.tp2d[1]}"}
        if state.summa_blocks:
            pairs["summa_blocks"] = str(state.summa_blocks)
    if state.nvlink_dp_pp:
        pairs["nvlink"] = f"{state.nvlink_dp_pp[0]},{state.nvlink_dp_pp[1]}"
    for name, value in sorted({**state.model_over, **state.gpu_over}.items()):
        pairs[name] = format(value, ".12g")  # as ``validation.num`` writes them, for values within the fields' ranges
    return pairs


class Parsed(NamedTuple):
    state: ModelState
    notes: list[str]


def parse(hash_: object) -> Parsed:
    """The bounded state of a link, with a note for everything not understood or clamped."""
    reading = read(hash_)
    return Parsed(reading.state, list(reading.notes))


CHOICES = ("mode", "schedule", "compare", "model", "gpu", "recompute", "precision", "sp", "tpo", "baseline")
FORM = {
    **NUMBER_FIELDS,
    "zero": Field("ZeRO stage", 0, 3),
    **{key: validation.Text() for key in (*CHOICES, "show", "sweep", "tp_mode")},
    "lines": validation.Lines(),
    "split": validation.Counts("layer split", MAX_SPLIT, MODEL_FIELDS["layers"].high),
    "tp2d": validation.Pair(),
    "nvlink": validation.Pair(),
    "summa_blocks": validation.Whole(),
}
LEGACY = {"hbm_gib": validation.Alias(LEGACY_GB, 1e9 / GIB)}  # links from before GiB: HBM in GB (10⁹ bytes)
PRESET_FIELDS = {"model": MODEL_FIELDS, "gpu": GPU_FIELDS}


@dataclass(frozen=True)
class Reading:
    """A request read once: the bounded state, what was said about it, and every value the view derives
    from it (computed here once and handed on: the render step asks nothing back)."""

    state: ModelState
    notes: tuple[str, ...]  # what was not understood or was clamped
    key: str  # the state as hash text: the page's hash, what it drew last, a job's request
    shown: tuple[str, ...]  # the schedules on screen
    reference: str | None  # the compared schedule the deltas are against
    microbatches: int | None  # gbs / (dp·mbs), None when it does not divide
    iterations: dict[str, int]  # each shown schedule's iterations (1 for those that take none)
    lines: tuple[int, ...]  # the chosen memory lines among the pipeline's devices
    model: specs.Model | None = None  # None with ``error``
    gpu: specs.Gpu | None = None
    layouts: dict[str, specs.Layout] = field(default_factory=dict)  # each shown schedule's
    commands: dict[str, str] = field(default_factory=dict)  # each shown schedule's `ppviz estimate`
    error: ValueError | None = None  # the model, GPU or a layout cannot be built from these values
    empty: dict[str, tuple[str, str]] = field(default_factory=dict)  # boxes holding no number: the error beside each
    controls: dict[str, object] | None = None  # what each control shows, when the page sets them


def read(hash_: object, controls: dict | None = None, reset: str | None = None, pathname: object = None) -> Reading:
    """The state in the hash (a link opened) or, with ``controls``, the state the controls show (a control
    moved; what they do not hold taken from the hash; ``reset``, "model" or "gpu", the preset picked, whose
    fields go back to its values), bounded in one call to ``validation.read_form``, with everything derived.
    Given the browser's ``pathname``: None when it is at another page (the hash is that page's)."""
    overlay = None if controls is None else _overlay(controls, reset)
    boxes = () if controls is None else [n for n in NUMBER_FIELDS if n not in PRESET_FIELDS.get(reset, {})]
    empty = tuple(n for n in boxes if controls.get(n) is None)
    at = None if pathname is None else (pathname, MODEL_PATH)
    form = validation.read_form(hash_, overlay, FORM, empty, LEGACY, at)
    if form is None:
        return None
    state, notes = _state(form)
    set_controls = controls is None or bool(notes) or reset is not None
    if form.empty:
        labels = ", ".join(NUMBER_FIELDS[n].label for n in form.empty)
        notes.append(f"these results are stale, for the last valid values: enter a valid {labels}")
    return derive(state, notes, form.empty, set_controls)


def _overlay(values: dict, reset: str | None) -> dict:
    """The controls' values by hash key (None: absent, the default); a key left out is the hash's."""
    out = {k: values.get(k) for k in ("mode", "schedule", "recompute", "zero", "precision", "baseline")}
    out |= {"show": values.get("compare_show"), "sweep": values.get("sweep_axis"), "lines": values.get("lines") or ()}
    compare = values.get("compare")
    out["compare"] = compare if isinstance(compare, (list, tuple)) else ()
    out |= {k: values[k] for k in ("sp", "tpo") if isinstance(values.get(k), list)}
    out |= {k: values[k] for k in ("model", "gpu") if isinstance(values.get(k), str) and values[k]}
    if values.get("split") is not None:
        out["split"] = values["split"]
    skip = PRESET_FIELDS.get(reset, {})
    out |= {n: None if n in skip else values[n] for n in NUMBER_FIELDS if n in skip or values.get(n) is not None}
    return out


def _state(form: validation.Form) -> tuple[ModelState, list[str]]:
    """The state of the read values, each checked against its options and the others; notes in the
    order of the controls."""
    base, v, shown = ModelState(), form.values, form.shown
    notes: list[str] = []
    for text, gb, gib in form.converted.values():
        notes.append(f"HBM {gb:g} GB (10⁹ bytes, an older link) read as {gib:g} GiB" if gb is not None
                     else f"HBM {text} GB is not a number; using the preset's")  # fmt: skip
    values: dict = {}
    mode = v.get("mode")
    if mode in ("single", "compare"):
        values["mode"] = mode
    elif mode is not None:
        notes.append(f"mode {shown['mode']} is not single or compare; showing one schedule")
    schedule = v.get("schedule")
    if schedule is not None:
        if isinstance(schedule, str) and schedule in REGISTRY:
            values["schedule"] = schedule
        else:
            notes.append(f"unknown schedule {shown['schedule']}; showing {base.schedule}")
    compare = v.get("compare")
    if compare is not None:
        given = tuple(n for n in compare.split(",") if n) if isinstance(compare, str) else compare
        names = [n for n in given if isinstance(n, str)] if isinstance(given, (list, tuple)) else []
        known = list(dict.fromkeys(n for n in names if n in REGISTRY))
        if len(known) != (len(given) if isinstance(given, (list, tuple)) else 1):
            notes.append("unknown schedules left out of the comparison")
        if len(known) > MAX_COMPARE:
            notes.append(f"compare takes at most {MAX_COMPARE} schedules; kept the first {MAX_COMPARE}")
        values["compare"] = tuple(known[:MAX_COMPARE])
    for key, names, what in (("model", specs.model_names(), "model"), ("gpu", specs.gpu_names(), "GPU")):
        _choice(v, shown, key, names, values, notes, f"unknown {what} preset {{}}; using {getattr(base, key)}")
    note = f"recompute {{}} is not one of {', '.join(RECOMPUTE)}; using {base.recompute}"
    _choice(v, shown, "recompute", RECOMPUTE, values, notes, note)
    _choice(v, shown, "precision", PRECISIONS, values, notes, f"precision {{}} is not one of {', '.join(PRECISIONS)}")
    notes += form.notes.get("zero", [])
    if "zero" in v:
        values["zero"] = v["zero"]
    for key in ("sp", "tpo"):
        on = v.get(key)
        if on is not None:
            values[key] = on in (True, 1, "1", "true", "on") or (isinstance(on, list) and "on" in on)
    for key in ("split", "lines"):
        notes += form.notes.get(key, [])
        if key in v:
            values[key] = v[key]
    baseline = v.get("baseline")
    if baseline is not None:
        if isinstance(baseline, str) and baseline in values.get("compare", base.compare):
            values["baseline"] = baseline
        elif not (isinstance(baseline, str) and (baseline in REGISTRY or baseline == "")):
            notes.append(f"baseline {shown['baseline']} is not a compared schedule; using the first")
    for name, key, allowed in (("compare_show", "show", COMPARE_SHOWS), ("sweep_axis", "sweep", SWEEP_AXES)):
        chosen = v.get(key)
        if chosen is not None and isinstance(chosen, str) and chosen in allowed:
            values[name] = chosen
        elif chosen is not None:
            notes.append(f"{name.replace('_', ' ')} {shown[key]} is not one of {', '.join(allowed)}")
    state = replace(base, **values)
    model_over, gpu_over, layout = {}, {}, {}
    for name in NUMBER_FIELDS:
        notes += form.notes.get(name, [])
        if name not in v:
            continue
        if name in LAYOUT_FIELDS:
            layout[name] = v[name]
        elif name in MODEL_FIELDS and v[name] != preset_value(state.model, name):
            model_over[name] = v[name]
        elif name in GPU_FIELDS and v[name] != preset_value(state.gpu, name):
            gpu_over[name] = v[name]
    state = _usable(replace(state, **layout, model_over=model_over, gpu_over=gpu_over), notes)
    return _placement(state, v, shown, notes), notes


def _choice(v: dict, shown: dict, key: str, allowed, values: dict, notes: list[str], note: str) -> None:
    """``v[key]`` into ``values`` when it is one of ``allowed``; otherwise ``note`` (its ``{}`` the value
    shown) goes to ``notes``. An absent key changes nothing."""
    chosen = v.get(key)
    if chosen is None:
        return
    if isinstance(chosen, str) and chosen in allowed:
        values[key] = chosen
    else:
        notes.append(note.format(shown[key]))


def read_presets(raw: dict, base, notes: list[str]) -> dict:
    """The model and GPU preset names in ``raw`` that exist; an unknown one gets a note and ``base``'s."""
    values: dict = {}
    shown = {k: validation.show(raw.get(k)) for k in ("model", "gpu")}
    for key, names, what in (("model", specs.model_names(), "model"), ("gpu", specs.gpu_names(), "GPU")):
        _choice(raw, shown, key, names, values, notes, f"unknown {what} preset {{}}; using {getattr(base, key)}")
    return values


def _usable(state: ModelState, notes: list[str]) -> ModelState:
    """A reserve that leaves none of the HBM is replaced by the preset's (or none, if that leaves
    nothing either), with a note."""
    hbm, reserve = state.field_value("hbm_gib"), state.field_value("reserve_gib")
    if reserve < hbm:
        return state
    preset = preset_value(state.gpu, "reserve_gib")
    keep = preset if preset < hbm else 0.0
    notes.append(f"reserve {reserve:g} GiB leaves nothing of the HBM ({hbm:g} GiB); using {keep:g} GiB")
    over = {k: v for k, v in state.gpu_over.items() if k != "reserve_gib"}
    return replace(state, gpu_over=over if keep == preset else {**over, "reserve_gib": keep})


def _placement(state: ModelState, v: dict, shown: dict, notes: list[str]) -> ModelState:
    """2D tensor parallelism and the NVLink placement a search row set, kept only while they fit the
    layout (a grid whose product is tp; dp and pp ranks that divide dp and pp and fit one domain)."""
    values: dict = {}
    if v.get("tp_mode") == "2d" or "tp2d" in v:
        pair = v.get("tp2d")
        nb = v.get("summa_blocks", 0)
        if pair is None or pair[0] * pair[1] != state.tp or state.sp or state.cp > 1:
            notes.append(f"2D tensor parallelism {shown.get('tp2d', 'None')} does not fit tp {state.tp} (with cp 1 "
                         "and no sequence parallel); showing 1D")  # fmt: skip
        elif nb is None or (nb and (nb % pair[0] or nb % pair[1] or nb > 65_536)):
            notes.append(f"SUMMA blocks {shown['summa_blocks']} must be a multiple of both grid sides; using their lcm")
            values |= {"tp_mode": "2d", "tp2d": pair}
        else:
            values |= {"tp_mode": "2d", "tp2d": pair, "summa_blocks": nb}
    if "nvlink" in v:
        pair = v["nvlink"]
        domain = gpu_of(state).nvlink_domain
        if (
            pair is None
            or state.dp % pair[0]
            or state.pp % pair[1]
            or (state.ep > 1 and pair[0] % state.ep)
            or (pair[0] * pair[1] > 1 and state.tp * state.cp * pair[0] * pair[1] > domain)
        ):
            notes.append(f"NVLink placement dp,pp {shown['nvlink']} does not fit this layout; using Megatron's "
                         "rank order")  # fmt: skip
        else:
            values["nvlink_dp_pp"] = pair
    return replace(state, **values)


def derive(state: ModelState, notes: list[str] = (), empty: dict | None = None, set_controls: bool = False) -> Reading:
    """The reading of ``state`` (a bounded one): its key and every value the view derives from it."""
    shown, per = state.shown, state.dp * state.mbs
    reading = Reading(
        state,
        tuple(notes),
        key_of(state),
        shown,
        state.reference,
        state.gbs // per if state.gbs % per == 0 else None,
        {name: iterations_of(state, name) for name in shown},
        tuple(d for d in state.lines if d < state.pp),
        empty=empty or {},
        controls=control_values(state) if set_controls else None,
    )
    try:
        model, gpu = model_of(state), gpu_of(state)
        layouts = {name: layout_of(state, name) for name in shown}
    except ValueError as e:
        return replace(reading, error=e)
    commands = {name: estimate_command(model, gpu, lay) for name, lay in layouts.items()}
    return replace(reading, model=model, gpu=gpu, layouts=layouts, commands=commands)


def key_of(state: ModelState) -> str:
    """The state as hash text (``url_hash.write_hash`` of ``encode``, written here in one step)."""
    return "#" + urlencode(encode(state), safe=url_hash.SAFE)


def control_values(state: ModelState) -> dict[str, object]:
    """What each control shows for a state (number boxes: the override, else the preset's value)."""
    values: dict[str, object] = {
        "mode": state.mode,
        "schedule": state.schedule,
        "compare": list(state.compare),
        "model": state.model,
        "gpu": state.gpu,
        "sp": ["on"] if state.sp else [],
        "tpo": ["on"] if state.tpo else [],
        "recompute": state.recompute,
        "zero": state.zero,
        "precision": state.precision,
        "split": ",".join(map(str, state.split)) if state.split else "",
        "lines": [d for d in state.lines if d < state.pp],  # the picker offers the pipeline's devices
        "baseline": state.reference,
        "compare_show": state.compare_show,
        "sweep_axis": state.sweep_axis,
    }
    for name in NUMBER_FIELDS:
        values[name] = state.field_value(name)
    return values
