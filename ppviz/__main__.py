"""The command line: ``ppviz list``, ``ppviz simulate``, ``ppviz render``.

Bad input prints one line to stderr and exits 2; nothing here prints a traceback for it. Every
number is checked against its bound (``cli_limits``) right after parsing, before any work.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import __version__
from .cli_types import NEGATIVE_NUMBER, NUMBER_TYPES, ascii_float, ascii_int
from .units import GIB, duration

if TYPE_CHECKING:
    from . import api

MAX_ORDER_BYTES = 5_000_000

# every command and its one-line help: `ppviz --help` lists them without importing any; a command's
# own parser (and the layers it runs) is built only when that command is given
COMMANDS = {
    "list": "list the schedules",
    "table": "print the schedule table (Markdown), measured at p=8, m=32",
    "presets": "list the model and GPU presets of `ppviz estimate`",
    "estimate": "estimate one training iteration in seconds and bytes",
    "calibrate": "fit the estimate's efficiencies to measured runs: a calibration profile",
    "search": "rank every parallel layout of a model on N GPUs by simulated iteration time",
    "measured": "fit a measured run's costs and compare it with its simulation",
    "simulate": "simulate a schedule and print its metrics",
    "render": "write a standalone HTML page with the Gantt and memory charts",
}


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # argparse's own matcher knows no exponent: '-1e308' would be taken for an option, not a value
        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message: str):  # one line, not usage + error
        raise UsageError(message)


def _all_params() -> dict[str, object]:
    """Every schedule-specific parameter across the registry, by name (first definition wins)."""
    from .schedules import REGISTRY

    out: dict[str, object] = {}
    for spec in REGISTRY.values():
        for p in spec.params:
            out.setdefault(p.name, p)
    return out


def _stage_time(text: str) -> tuple[int, tuple[float, float, float]]:
    try:
        share, times = text.split(":")
        f, b, w = (ascii_float(x) for x in times.split(","))
        return ascii_int(share), (f, b, w)
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(f"--stage-time wants SHARE:F,B,W such as 3:1.5,3,1.5 (got {text!r})") from None


def _host_overhead(text: str) -> tuple[float, ...]:
    try:
        return tuple(ascii_float(x) for x in text.split(","))
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(
            f"--host-overhead wants one time, or one per device such as 0.1,0.4,0.4,0.2 (got {text!r})"
        ) from None


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; given ``only`` (the command line's first word), only that command's
    subparser is built in full and the others are their help line."""
    ap = _Parser(prog="ppviz", description="Exact simulator of pipeline-parallel training schedules.")
    ap.add_argument("--version", action="version", version=f"ppviz {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_ in COMMANDS.items():
        if name in sub.choices:
            continue
        if only is None or name == only or {name, only} <= {"presets", "estimate"}:
            _add_command(sub, name)
        else:
            sub.add_parser(name, help=help_)
    return ap


def _add_command(sub, name: str) -> None:
    """The full subparser of command ``name``, importing the layer that defines it."""
    if name in ("presets", "estimate"):
        from .estimate import cli as estimate_cli

        estimate_cli.add_parsers(sub)  # both at once
    elif name == "calibrate":
        from .estimate import calibrate_cli

        calibrate_cli.add_parser(sub)
    elif name == "search":
        from .search import cli as search_cli

        search_cli.add_parser(sub)
    elif name == "measured":
        from .measured import cli as measured_cli

        measured_cli.add_parser(sub)
    elif name == "list":
        sub.add_parser(name, help=COMMANDS[name]).add_argument(
            "--json", action="store_true", help="print the registry as JSON"
        )
    elif name == "table":
        sub.add_parser(name, help=COMMANDS[name])
    else:
        p = sub.add_parser(name, help=COMMANDS[name], epilog=RENDER_EPILOG if name == "render" else None)
        _add_abstract_args(p)
        if name == "simulate":
            out = p.add_mutually_exclusive_group()
            out.add_argument("--json", action="store_true", help="print the result as one JSON object")
            out.add_argument("--csv", action="store_true", help="print the ops as CSV")
            out.add_argument("--torch-csv", action="store_true", help="print the order as PyTorch compute-only CSV")
        else:
            _add_page_args(p)


RENDER_EPILOG = "in real units: ppviz render SCHEDULE --model M --gpu G [layout flags] -o page.html (ms and GiB)"


def _render_units_parser() -> argparse.ArgumentParser:
    """`ppviz render` in real units: the schedule, the page's own flags and `ppviz estimate`'s model,
    GPU and layout flags (ms and GiB on the page)."""
    from .estimate import cli as estimate_cli

    p = _Parser(prog="ppviz render", description="Write a standalone HTML page of an estimate: Gantt in ms, "
                "memory in GiB against the HBM less its reserve.")  # fmt: skip
    _add_page_args(p)
    estimate_cli.add_layout_args(p, render=True)
    return p


def _add_page_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, help="HTML file to write")
    p.add_argument("--limit", type=ascii_float, help="memory limit line on the memory chart (GiB with --model)")


def _add_abstract_args(p: argparse.ArgumentParser) -> None:
    """The schedule and its costs in abstract units (`ppviz simulate` and `ppviz render`)."""
    from .ir import NAMINGS

    p.add_argument("schedule", nargs="?", help="schedule name (see `ppviz list`)")
    p.add_argument("--order", metavar="FILE.csv", help="simulate a PyTorch order CSV instead (any form torch writes)")
    p.add_argument("--naming", choices=NAMINGS,
                   help="with --order, its action naming (default: read from its tokens)")  # fmt: skip
    p.add_argument("--devices", "-p", type=ascii_int, help="pipeline devices p")
    p.add_argument("--microbatches", "-m", type=ascii_int, help="microbatches m")
    p.add_argument("--gbs", type=ascii_int, help="global batch size: with --mbs, gives microbatches = gbs / mbs")
    p.add_argument("--mbs", type=ascii_int, help="micro-batch size (with --gbs)")
    p.add_argument("--chunks", "-v", type=ascii_int, help="model chunks per device, for schedules that take it")
    for q in _all_params().values():
        if q.name == "chunks":
            continue
        flags = [f"--{name.replace('_', '-')}" for name in (q.name, *q.aliases)]
        p.add_argument(*flags, dest=q.name, type=NUMBER_TYPES.get(q.type, q.type), help=q.help)
    p.add_argument("--f", type=ascii_float, help="forward time per device share (default 1)")
    p.add_argument("--b", type=ascii_float, help="input-backward time per device share (default 1)")
    p.add_argument("--w", type=ascii_float, help="weight-backward time per device share (default 1)")
    p.add_argument("--p2p", type=ascii_float, help="latency added to cross-device dependencies (default 0)")
    p.add_argument(
        "--host-overhead",
        type=_host_overhead,
        metavar="T[,T…]",
        help="a device's host time between two consecutive ops (dispatch, posting sends and receives): "
        "one time for every device, or one per device (default 0; `ppviz measured` fits it)",
    )
    p.add_argument("--overlap", type=ascii_float, help="time factor of an overlapped F&B pair (default 1)")
    p.add_argument("--b-frees", type=ascii_float, help="fraction of activation that B frees (default 0)")
    p.add_argument("--stage-time", type=_stage_time, action="append", default=[], metavar="SHARE:F,B,W",
                   help="override the f,b,w of device share i (the i-th 1/p of the model); stage s of S "
                        "runs at share ⌊s·p/S⌋'s times × p/S (repeatable)")  # fmt: skip


def _run(args: argparse.Namespace) -> api.Run:
    run = _simulate(args)
    _check_applies(args, run)
    return run


def _check_applies(args: argparse.Namespace, run: api.Run) -> None:
    """An option given for something the schedule does not have is a mistake worth saying."""
    from .ir import KIND_INDEX, Kind

    if args.b_frees is not None and not (run.result.kind == KIND_INDEX[Kind.B]).any():
        raise UsageError(
            f"--b-frees does not apply: {run.schedule.name} runs a fused backward (BW) that frees everything at once; "
            "drop it, or pick a schedule with split backward (e.g. zb-h1)"
        )
    if args.overlap is not None and not run.result.paired.any():
        raise UsageError(
            f"--overlap does not apply: {run.schedule.name} has no overlapped F&B pairs here; drop it, "
            "or pick a schedule that overlaps them (e.g. dualpipe)"
        )


def _simulate(args: argparse.Namespace) -> api.Run:
    from . import api
    from .schedules import REGISTRY

    costs = dict(f=_or(args.f, 1.0), b=_or(args.b, 1.0), w=_or(args.w, 1.0), p2p=_or(args.p2p, 0.0),
                 overlap=1.0 if args.overlap is None else args.overlap,
                 b_frees=0.0 if args.b_frees is None else args.b_frees,
                 stage_times=dict(args.stage_time))  # fmt: skip
    if args.host_overhead:
        costs["host_overhead"] = args.host_overhead
    if args.order:
        if args.schedule:
            raise UsageError("give either a schedule name or --order FILE, not both")
        from . import formats
        from .files import read_capped

        data = read_capped(args.order, MAX_ORDER_BYTES, field="order")

        schedule = formats.read_torch_csv(data, max_bytes=MAX_ORDER_BYTES, name=os.path.basename(args.order),
                                          naming=args.naming or "auto")  # fmt: skip
        return api.evaluate(schedule, api.make_costs(**_per_device(costs, schedule.devices)))
    if args.naming:
        raise UsageError("--naming is the naming of an --order file: give --order FILE.csv, or drop it")
    if not args.schedule:
        raise UsageError("name a schedule (see `ppviz list`) or give --order FILE.csv")
    if args.gbs is not None or args.mbs is not None:
        if args.gbs is None or args.mbs is None or args.microbatches is not None:
            raise UsageError("give --microbatches, or --gbs with --mbs (microbatches = gbs / mbs), not both")
        from .iterations import microbatches_for_batch

        args.microbatches = microbatches_for_batch(args.gbs, args.mbs)
    missing = [f"--{n}" for n in ("devices", "microbatches") if getattr(args, n) is None]
    if missing:
        raise UsageError(f"{args.schedule} needs {' and '.join(missing)}")
    spec = REGISTRY.get(args.schedule)
    params = {}
    for name in _all_params():
        value = getattr(args, name, None)
        if value is None:
            continue
        if spec is not None and spec.param(name) is None and name != "chunks":
            raise UsageError(f"{args.schedule} does not take --{name.replace('_', '-')}")
        params[name] = value
    return api.simulate(args.schedule, args.devices, args.microbatches, **_per_device(costs, args.devices), **params)


def _per_device(costs: dict, devices: int) -> dict:
    """One --host-overhead time stands for every device's; a list must give one per device."""
    gaps = costs.get("host_overhead")
    if gaps is None:
        return costs
    if len(gaps) == 1:
        return {**costs, "host_overhead": gaps * devices}
    if len(gaps) != devices:
        raise UsageError(f"--host-overhead gives {len(gaps)} times for {devices} devices: give one time, or one "
                         "per device")  # fmt: skip
    return costs


def _or(value, default):
    return default if value is None else value


# what replaces each abstract-units flag of `ppviz render` in real units (for the error that names it)
IN_REAL_UNITS = {"order": "a schedule name", "naming": "a schedule name", "devices": "--pp",
                 "microbatches": "--gbs with --mbs", "chunks": "--vpp",
                 "f": "the model", "b": "the model", "w": "the model", "p2p": "the GPU's links",
                 "overlap": "--pair-overlap", "stage_time": "--layer-split",
                 "host_overhead": "a measured run's fit (`ppviz measured`)"}  # fmt: skip


def _in_real_units(render: argparse.ArgumentParser, units: argparse.ArgumentParser, argv: list[str]) -> bool:
    """Whether a `ppviz render` line is in real units: it gives a flag only the real-units command
    has (spelt out, or a prefix of only such flags, as argparse accepts)."""
    own, theirs = set(render._option_string_actions), set(units._option_string_actions)
    for token in argv:
        if token == "--":
            break
        name = token.split("=", 1)[0]
        if not name.startswith("--") or name in own:
            continue
        if name in theirs or not any(o.startswith(name) for o in own) and any(o.startswith(name) for o in theirs):
            return True
    return False


def _abstract_flags(render: argparse.ArgumentParser, units: argparse.ArgumentParser, argv: list[str]):
    """``argv`` without the abstract-units flags (and their values) the real-units command does not
    have, and the first of those flags' actions (None when there is none)."""
    only = {o: a for o, a in render._option_string_actions.items() if o not in units._option_string_actions}
    rest, first, skip = [], None, False
    for token in argv:
        if skip:
            skip = False
            continue
        name = token.split("=", 1)[0]
        attached = name[:2] if len(name) > 2 and name[1] != "-" else name  # -p4
        action = only.get(name) or only.get(attached)
        if action is None:
            rest.append(token)
            continue
        first = first or action
        skip = "=" not in token and name == attached and action.nargs != 0
    return rest, first


def _parse(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parser of the command ``argv`` gives (a subcommand's, or real-units render's) and its arguments."""
    parser = _parser(argv[0])
    if argv[0] == "render":
        render, units = _subparser(parser, "render"), _render_units_parser()
        if _in_real_units(render, units, argv[1:]):
            rest, abstract = _abstract_flags(render, units, argv[1:])
            args = units.parse_args(rest)
            args.command, args.abstract_flag = "render-units", abstract
            return units, args
    args = parser.parse_args(argv)
    return _subparser(parser, args.command), args


def _render_estimate(args: argparse.Namespace) -> int:
    """`ppviz render` in real units: the estimate's run drawn in ms, memory in GiB against the HBM."""
    from .estimate import cli as estimate_cli

    missing = [f"--{n}" for n in ("model", "gpu") if getattr(args, n) is None]
    if missing:
        raise UsageError(
            f"real units need {' and '.join(missing)} (given: {', '.join(estimate_cli.given_flags(args))})"
        )
    if args.abstract_flag is not None:
        action = args.abstract_flag
        flag = next(s for s in action.option_strings if s.startswith("--"))
        raise UsageError(f"{flag} is for abstract units; with --model use {IN_REAL_UNITS[action.dest]} instead")
    if not args.schedule:
        raise UsageError("name a schedule (see `ppviz list`), e.g. ppviz render 1f1b --model ... -o page.html")
    from . import figures

    est = estimate_cli.build(args)
    html = figures.to_html(est.run, limit=None if args.limit is None else args.limit * GIB,
                           gantt_kwargs=figures.gantt_kwargs(est), memory_kwargs=figures.memory_kwargs(est),
                           facts=estimate_cli.facts(est))  # fmt: skip
    _write(args.output, html)
    print(f"wrote {args.output} ({len(est.run.result):,} ops, iteration {duration(est.iteration_s)}; {est.verdict})")
    return 0


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from None


def _print_summary(run: api.Run) -> None:
    s = run.summary()
    print(f"{s['schedule']}: {s['devices']} devices, {s['stages']} stages, {s['microbatches']} microbatches, "
          f"{s['chunks']} chunk(s) per device")  # fmt: skip
    formula = "" if s["formula_makespan"] is None else f" (closed form {s['formula_makespan']:g})"
    print(f"makespan {s['makespan']:g}{formula}")
    fb = s["formula_bubble_fraction"]
    print(f"bubble   {s['bubble_fraction']:.4f}" + ("" if fb is None else f" (closed form {fb:.4f})"))
    print(f"{'device':>6} {'span':>10} {'busy':>10} {'peak act.':>10} {'params':>7}")
    for d in range(s["devices"]):
        print(f"{d:>6} {s['span'][d]:>10g} {s['busy'][d]:>10g} {s['peak_activation'][d]:>10g} "
              f"{s['parameters'][d]:>7g}")  # fmt: skip


def _list(as_json: bool) -> None:
    from .schedules import REGISTRY

    if as_json:
        rows = [
            {
                "name": s.name,
                "description": s.description,
                "reference": s.reference,
                "params": [
                    {
                        "name": p.name,
                        "type": p.type.__name__,
                        "default": p.default,
                        "low": p.low,
                        "high": p.high,
                        "help": p.help,
                        "aliases": list(p.aliases),
                    }
                    for p in s.params
                ],  # fmt: skip
                "chunks": s.chunks,
                "split_backward": s.split_backward,
                "formula": s.formula_text or None,
                "memory": s.memory_text or None,
            }
            for s in REGISTRY.values()
        ]
        print(json.dumps(rows, indent=1))
        return
    width = max(len(n) for n in REGISTRY)
    for s in REGISTRY.values():
        extra = ", ".join(p.name for p in s.params)
        print(f"{s.name:<{width}}  {s.description}" + (f" [params: {extra}]" if extra else ""))


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        _parser(only="").print_help()  # every command as its help line
        return 0
    try:
        sub, args = _parse(argv)
        from . import cli_limits

        cli_limits.check(sub, args)
        if args.command == "render-units":
            return _render_estimate(args)
        if args.command == "list":
            _list(args.json)
            return 0
        if args.command in ("estimate", "presets"):
            from .estimate import cli as estimate_cli

            return estimate_cli.main(args)
        if args.command == "search":
            from .search import cli as search_cli

            return search_cli.main(args)
        if args.command == "calibrate":
            from .estimate import calibrate_cli

            return calibrate_cli.main(args)
        if args.command == "measured":
            from .measured import cli as measured_cli

            return measured_cli.main(args)
        if args.command == "table":
            from .report import schedule_table

            print(schedule_table(), end="")
            return 0
        run = _run(args)
        if args.command == "render":
            from . import figures

            _write(args.output, figures.to_html(run, limit=args.limit))
            print(f"wrote {args.output} ({len(run.result):,} ops, makespan {run.metrics.makespan:g})")
        elif args.json:
            from . import formats

            if hasattr(sys.stdout, "buffer"):  # bytes, a chunk at a time, never the whole text
                sys.stdout.flush()
                formats.write_run_json(run, sys.stdout.buffer)
                sys.stdout.buffer.write(b"\n")
            else:  # a text stream that main's caller put there (e.g. a StringIO)
                sys.stdout.write(formats.run_json(run) + "\n")
        elif args.csv:
            from . import formats

            sys.stdout.write(formats.ops_csv(run))
        elif args.torch_csv:
            from .ir import to_torch_csv

            sys.stdout.write(to_torch_csv(run.schedule))
        else:
            _print_summary(run)
        return 0
    except (UsageError, ValueError) as e:
        print(f"ppviz: error: {e}".replace("\n", " "), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
