"""``ppviz calibrate``: fit the estimate's efficiencies to measured runs and write a profile file.

One run from the command line (``--model``, ``--gpu``, the layout flags of ``ppviz estimate``, and
its Megatron-LM logs or ``--iteration-ms``), and/or more from ``--runs FILE.toml``::

    [[run]]
    label = "tp 4, pp 4"
    log = "logs/pp4.out"            # or a list of files, or: iteration_ms = 1380.6
    model = { layers = 40, hidden = 6144, ffn = 24576 }   # fields over the command line's model
    layout = { tp = 4, pp = 4, mbs = 1, gbs = 4, recompute = "full", precision = "fp16" }

A log's figure is the median of its iteration lines after the first (``MegatronRun.median_iteration_s``).
Bad input raises ValueError, which the main CLI prints as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

from ..cli_limits import BOUNDS
from ..cli_types import ascii_float
from ..files import read_capped
from ..measured.megatron import read_log
from . import cli as estimate_cli
from . import profile_fit
from .iteration import layout_from
from .profile import FIELDS, Profile
from .specs import Model, SpecError, override

MAX_RUNS = 64
MAX_RUNS_BYTES = 1_000_000


def _fields(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [n for n in names if n not in FIELDS]
    if bad or not names:
        raise ValueError(f"--fit takes names among {', '.join(FIELDS)} (got {text!r})")
    return names


def add_parser(sub) -> None:
    p = sub.add_parser("calibrate", help="fit the estimate's efficiencies to measured runs: a calibration profile")
    estimate_cli.add_layout_args(p)
    p.add_argument(
        "logs",
        nargs="*",
        metavar="LOG",
        help="Megatron-LM logs of the run the flags describe (its median iteration time is fitted)",
    )
    p.add_argument("--iteration-ms", type=ascii_float, help="that run's measured iteration time, instead of logs")
    p.add_argument("--label", help="that run's name in the profile (default: its logs' file names)")
    p.add_argument(
        "--runs",
        metavar="FILE.toml",
        help="more runs, each with its model fields, layout and log or "
        "iteration_ms (see docs/real-units/calibration.md)",
    )
    p.add_argument(
        "--fit",
        default="matmul_efficiency",
        metavar="NAME,NAME",
        help=f"efficiencies to fit, among {', '.join(FIELDS)} (default matmul_efficiency; at most one per run)",
    )
    p.add_argument("-o", "--output", required=True, help="the profile file to write (JSON)")
    p.add_argument("--json", action="store_true", help="print the profile as JSON instead of a table")  # fmt: skip


def main(args: argparse.Namespace) -> int:
    fields = _fields(args.fit)
    est = estimate_cli.build(args)  # the command line's model, GPU and layout, checked as `ppviz estimate` does
    runs = []
    if args.logs and args.iteration_ms is not None:
        raise ValueError("give the run's logs or --iteration-ms, not both")
    if args.logs or args.iteration_ms is not None:
        seconds, source = _measured(args.logs, args.iteration_ms, Path.cwd())
        label = args.label or ", ".join(Path(x).name for x in args.logs) or source
        runs.append(profile_fit.Measured(label, est.model, est.layout, seconds, source))
    if args.runs:
        runs += runs_file(args.runs, est.model)
    if not runs:
        raise ValueError("nothing measured: give the run's Megatron-LM logs (or --iteration-ms), or --runs FILE.toml")
    prof = profile_fit.fit(runs, est.gpu, fields)
    prof.save(args.output)
    sys.stdout.write(json.dumps(prof.to_dict()) + "\n" if args.json else table(prof) + f"wrote {args.output}\n")
    return 0


def _measured(logs: list[str], iteration_ms: float | None, base: Path) -> tuple[float, str]:
    """The run's measured seconds and where they come from."""
    if iteration_ms is not None:
        if not iteration_ms > 0:
            raise SpecError(f"the measured iteration time must be > 0 ms (got {iteration_ms:g})", field="iteration_ms")
        return iteration_ms / 1e3, f"{iteration_ms:g} ms as given"
    paths = [p if Path(p).is_absolute() else str(base / p) for p in logs]
    return read_log(paths).median_iteration_s(), ", ".join(logs)


def runs_file(path: str, model: Model) -> list[profile_fit.Measured]:
    """The runs a ``--runs`` TOML file lists (model fields over ``model``); log paths are relative to the file."""
    data = read_capped(path, MAX_RUNS_BYTES, field="runs", error=SpecError)
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise SpecError(f"{path} is not TOML: {e}", field="runs") from None
    rows = doc.get("run")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise SpecError(f"{path}: expected one [[run]] table or more", field="runs")
    if len(rows) > MAX_RUNS:
        raise SpecError(f"{path}: {len(rows)} runs; the bound is {MAX_RUNS}", field="runs")
    return [_run(r, i, path, model) for i, r in enumerate(rows, 1)]


def _run(row: dict, i: int, path: str, model: Model) -> profile_fit.Measured:
    where = f"{path}, run {i}"
    unknown = sorted(set(row) - {"label", "log", "iteration_ms", "model", "layout"})
    if unknown:
        raise SpecError(f"{where}: unknown key {', '.join(unknown)} (keys: label, log, iteration_ms, model, layout)",
                        field="runs")  # fmt: skip
    fields, lay = row.get("model", {}), row.get("layout")
    if not isinstance(fields, dict) or not isinstance(lay, dict):
        raise SpecError(f"{where}: model must be a table of model fields and layout a table of layout fields",
                        field="runs")  # fmt: skip
    for what, table in (("model", fields), ("layout", lay)):
        for key, v in table.items():
            bound = BOUNDS.get("--" + key.replace("_", "-"))
            if bound is not None and isinstance(v, (int, float)) and not isinstance(v, bool) and not bound.holds(v):
                raise SpecError(f"{where}: {what} {key} {v} is out of range: it takes {bound.text()}", field="runs")
    logs = row.get("log", [])
    logs = [logs] if isinstance(logs, str) else logs
    ms = row.get("iteration_ms")
    if not isinstance(logs, list) or not all(isinstance(x, str) for x in logs) or bool(logs) == (ms is not None):
        raise SpecError(f"{where}: give log (a path or a list of paths) or iteration_ms, one of them", field="runs")
    if ms is not None and (isinstance(ms, bool) or not isinstance(ms, (int, float))):
        raise SpecError(f"{where}: iteration_ms must be a number (got {ms!r})", field="runs")
    try:
        seconds, source = _measured(logs, ms, Path(path).parent)
        m = override(model, **fields)
        layout = layout_from(lay)
    except ValueError as e:
        raise SpecError(f"{where}: {e}", field="runs") from None
    return profile_fit.Measured(str(row.get("label", f"run {i}")), m, layout, seconds, source)


def table(prof: Profile) -> str:
    """The fit as text: every run's measured, default and calibrated time, and the residual."""
    eff = dict(prof.efficiencies)
    lines = [
        f"calibration of {prof.gpu}: fitted {', '.join(f'{k} {eff[k]:.2f}' for k in prof.fitted)}",
        f"{'run':<40} {'measured':>10} {'default':>10} {'error':>8} {'calibrated':>10} {'error':>8}",
    ]
    for r in prof.runs:
        m, d, c = r["measured_s"], r["default_s"], r["calibrated_s"]
        lines.append(f"{r['label'][:40]:<40} {m * 1e3:>9.1f}ms {d * 1e3:>9.1f}ms {(d / m - 1) * 100:>+7.1f}% "
                     f"{c * 1e3:>9.1f}ms {(c / m - 1) * 100:>+7.1f}%")  # fmt: skip
    lines.append(f"residual: mean |error| {prof.mean_abs_error * 100:.2f}%, max {prof.max_abs_error * 100:.2f}%")
    return "\n".join(lines) + "\n"
