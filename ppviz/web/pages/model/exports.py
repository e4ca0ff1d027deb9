"""What the model page hands off: CSV and JSON of the estimates on screen, their ``ppviz`` commands and
the launch settings of Megatron-LM or torchtitan. Plain functions, no Dash.

The JSON keeps the estimate's own units (seconds, bytes), as ``ppviz estimate --json`` writes them;
the CSV is for reading, in ms and GiB (2³⁰ bytes), each header saying its unit.
"""

from __future__ import annotations

import csv
import io
import json

from ppviz import handoff
from ppviz.units import GIB

from ...common import cluster
from ...common.cluster import ModelState
from . import render

MS = 1e3
# (header, value of an Estimate): the unit in every header that has one
CSV_COLUMNS = (
    ("schedule", lambda e: e.layout.schedule),
    ("model", lambda e: e.model.name),
    ("gpu", lambda e: e.gpu.name),
    ("GPUs", lambda e: e.layout.gpus),
    *((k, lambda e, k=k: getattr(e.layout, k)) for k in ("tp", "pp", "dp", "cp", "ep", "vpp", "mbs")),
    ("global batch (sequences)", lambda e: e.global_batch),
    ("microbatches", lambda e: e.microbatches),
    ("sequence parallel", lambda e: e.layout.sequence_parallel),
    ("TP overlap", lambda e: e.layout.tp_comm_overlap),
    ("recompute", lambda e: e.layout.recompute),
    ("ZeRO", lambda e: e.layout.zero),
    ("iteration (ms)", lambda e: round(e.iteration_s * MS, 3)),
    ("makespan (ms)", lambda e: round(e.makespan_s * MS, 3)),
    ("DP sync (ms)", lambda e: round(e.dp_sync_s * MS, 3)),
    ("optimizer (ms)", lambda e: round(e.optimizer_s * MS, 3)),
    ("tokens/s", lambda e: round(e.tokens_per_s)),
    ("MFU (%)", lambda e: round(100 * e.mfu, 2)),
    ("TFLOP/s per GPU", lambda e: round(e.tflops_per_gpu, 1)),
    ("peak memory (GiB)", lambda e: round(float(e.peak_bytes.max()) / GIB, 3)),
    ("capacity (GiB)", lambda e: round(e.capacity_bytes / GIB, 3)),
    ("fits", lambda e: e.fits),
)
FORMATS = ("csv", "json", "megatron", "torchtitan")


def estimates(state: ModelState) -> list:
    """The estimates on screen (cached); a view the page estimates in the background is refused
    with the command that gives the same numbers."""
    reading = cluster.derive(state)
    if reading.error is not None:
        raise reading.error
    render.check(reading)
    if render.in_background(reading):
        raise ValueError(
            "this view is estimated in the background: export it with the CLI: "
            f"{reading.commands[reading.shown[0]]} --json"
        )
    return [render.estimate_of(reading, name) for name in reading.shown]


def commands(state: ModelState) -> str:
    """The ``ppviz estimate`` command of every schedule on screen, one a line."""
    return "\n".join(cluster.cli_command(state, name) for name in state.shown)


def csv_text(state: ModelState, ests: list) -> str:
    """One row per schedule on screen, with its command."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([h for h, _ in CSV_COLUMNS] + ["command"])
    for e in ests:
        w.writerow([get(e) for _, get in CSV_COLUMNS] + [cluster.cli_command(state, e.layout.schedule)])
    return out.getvalue()


def json_text(state: ModelState, ests: list) -> str:
    """Each estimate as ``ppviz estimate --json --no-ops`` writes it, with its command."""
    items = [{**e.to_dict(ops=False), "command": cluster.cli_command(state, e.layout.schedule)} for e in ests]
    return json.dumps({"estimates": items}, indent=1)


def launch_schedule(state: ModelState) -> str:
    """The schedule whose launch settings are handed off: the one shown, or compare mode's baseline."""
    return (state.reference if state.mode == "compare" else state.schedule) or state.schedule


def launch(state: ModelState, framework: str) -> handoff.Launch:
    name = launch_schedule(state)
    return handoff.launch(framework, cluster.model_of(state), cluster.layout_of(state, name))


def download(state: ModelState, what: str) -> dict:
    """``dcc.Download``'s data for one export (``FORMATS``); a ValueError says why there is none."""
    if what == "megatron":
        return {"content": launch(state, what).text, "filename": f"megatron-{launch_schedule(state)}.sh"}
    if what == "torchtitan":
        return {"content": launch(state, what).text, "filename": f"torchtitan-{launch_schedule(state)}.toml"}
    ests = estimates(state)
    name = f"ppviz-{state.model}-{'-'.join(state.shown)}"
    if what == "csv":
        return {"content": csv_text(state, ests), "filename": f"{name}.csv", "type": "text/csv"}
    return {"content": json_text(state, ests), "filename": f"{name}.json", "type": "application/json"}
