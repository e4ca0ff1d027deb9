"""What the search page hands off: CSV and JSON of the ranked table on screen, the ``ppviz search``
command, and the launch settings of its best layout. Plain functions, no Dash.

The JSON keeps the search's own units (seconds, bytes), as ``ppviz search --json`` writes them; the
CSV is for reading, in ms and GiB (2³⁰ bytes), each header saying its unit.
"""

from __future__ import annotations

import csv
import io
import json

from ppviz import handoff
from ppviz.units import GIB

from ...common import cluster
from . import state as search_state
from .state import SearchState

LAYOUT_KEYS = ("rank", "schedule", "tp", "pp", "dp", "cp", "ep", "vpp", "mbs", "gbs", "microbatches", "recompute",
               "sequence_parallel", "zero", "tp_mode", "tp2d", "nvlink_dp_pp", "layer_split")  # fmt: skip
CSV_COLUMNS = (
    *((k, lambda r, k=k: r.get(k)) for k in ("rank", "schedule", "tp", "pp", "dp", "cp", "ep", "vpp", "mbs")),
    ("recompute", lambda r: r["recompute"]),
    ("sequence parallel", lambda r: r["sequence_parallel"]),
    ("ZeRO", lambda r: r["zero"]),
    ("TP mode", lambda r: r["tp_text"]),
    ("NVLink dp×pp", lambda r: r["nvlink_text"]),
    ("iteration (ms)", lambda r: round(r["exact"]["iteration_s"] * 1e3, 3)),
    ("tokens/s", lambda r: round(r["exact"]["tokens_per_s"])),
    ("MFU (%)", lambda r: round(100 * r["exact"]["mfu"], 2)),
    ("peak memory (GiB)", lambda r: round(r["exact"]["peak_bytes"] / GIB, 3)),
    ("capacity (GiB)", lambda r: round(r["exact"]["capacity_bytes"] / GIB, 3)),
    ("bubble (%)", lambda r: round(100 * r["exact"]["bubble_fraction"], 2)),
    ("command", lambda r: r["command"]),
)
FORMATS = ("csv", "json", "megatron", "torchtitan")


def csv_text(rows: list[dict]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([h for h, _ in CSV_COLUMNS])
    w.writerows([get(r) for _, get in CSV_COLUMNS] for r in rows)
    return out.getvalue()


def json_text(state: SearchState, rows: list[dict]) -> str:
    """The search's inputs and command, and each ranked layout in seconds and bytes."""
    layouts = [{**{k: r.get(k) for k in LAYOUT_KEYS}, **r["exact"], "command": r["command"]} for r in rows]
    inputs = {"model": state.model, "gpu": state.gpu, "gpus": state.gpus, "gbs": state.gbs, "seq": state.seq,
              "schedules": list(state.schedules), "headroom": state.headroom / 100, "tp_mode": list(state.tp_modes),
              "top": state.top, "efficiencies": state.efficiencies}  # fmt: skip
    return json.dumps({"search": inputs, "command": search_state.cli_command(state), "layouts": layouts}, indent=1)


def launch(state: SearchState, row: dict, framework: str) -> handoff.Launch:
    """The launch settings of one ranked layout (as the model page would open it)."""
    target = search_state.model_link(state, row)
    return handoff.launch(framework, cluster.model_of(target), cluster.layout_of(target, target.schedule))


def download(state: SearchState, rows: object, what: str) -> dict:
    """``dcc.Download``'s data for one export; a ValueError says why there is none."""
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) and "exact" in r for r in rows):
        raise ValueError("nothing to export yet: run a search first")
    name = f"ppviz-search-{state.model}-{state.gpus}"
    if what == "csv":
        return {"content": csv_text(rows), "filename": f"{name}.csv", "type": "text/csv"}
    if what == "json":
        return {"content": json_text(state, rows), "filename": f"{name}.json", "type": "application/json"}
    best = min(rows, key=lambda r: r.get("rank", 0))
    suffix = "sh" if what == "megatron" else "toml"
    return {"content": launch(state, best, what).text, "filename": f"{what}-{name}-rank-{best['rank']}.{suffix}"}
