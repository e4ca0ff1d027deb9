"""One entry point for every measured file: find the format, call its reader."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InputError
from .files import detect_all, read_text
from .run import MeasuredRun


def read(paths: Sequence[str], *, iteration: int | None = None, pattern: str | None = None,
         naming: str = "auto", order: str | None = None, schedule: str | None = None,
         ignore_annotations: bool = False) -> tuple[str, object]:  # fmt: skip
    """``(format, what was read)``: a ``MeasuredRun`` for CSVs and traces, Megatron-LM's own run for logs.

    Traces without annotations are named by ``order`` (an order CSV's path) or ``schedule`` (a registry
    schedule with one stage per rank); ``ignore_annotations`` names annotated traces by them too."""
    paths = list(paths)
    fmt = detect_all(paths)
    by_order = _by_order(order, schedule)
    if (by_order is not None or ignore_annotations) and fmt != "kineto":
        raise InputError(f"--order, --schedule and --ignore-annotations name the compute of profiler traces; "
                         f"{paths[0]} is a {fmt} file", field="order")  # fmt: skip
    if fmt == "megatron":
        try:
            from .megatron import read_log  # the calibration part's reader
        except ImportError:
            raise InputError(f"{paths[0]} is a Megatron-LM timer log, and this ppviz has no reader for them",
                             field="files") from None  # fmt: skip
        return fmt, read_log(paths)
    if fmt == "kineto":
        from .kineto import read_traces

        return fmt, read_traces(paths, iteration=iteration, pattern=pattern, by_order=by_order,
                                ignore_annotations=ignore_annotations)  # fmt: skip
    if len(paths) != 1:
        raise InputError("an order CSV holds every rank: give one file", field="files")
    from ..simulator import validate
    from .torch_csv import read_order

    order = read_order(read_text(paths[0]), source=paths[0], naming=naming)
    try:
        validate(order.run().schedule())  # an order the simulator can run, as `simulate --order` asks
    except ValueError as e:
        raise InputError(f"{paths[0]}: {e} (read in {order.notes[0].removeprefix('naming: ')})",
                         field="files") from None  # fmt: skip
    return fmt, order.run()


def read_run(paths: Sequence[str], **kw) -> MeasuredRun:
    """A measured run (refusing a Megatron-LM log, which holds per-iteration totals, not ops)."""
    fmt, got = read(paths, **kw)
    if not isinstance(got, MeasuredRun):
        raise InputError(f"{', '.join(paths)}: a {fmt} log has per-iteration totals, not per-op times", field="files")
    return got


def _by_order(order: str | None, schedule: str | None):
    """What names unannotated compute: an order file, a registry schedule, or nothing."""
    if order is not None and schedule is not None:
        raise InputError("give the order the run ran once: --order FILE or --schedule NAME, not both", field="order")
    from .unannotated import from_csv, from_schedule

    if order is not None:
        return from_csv(read_text(order), order)
    return None if schedule is None else from_schedule(schedule)
