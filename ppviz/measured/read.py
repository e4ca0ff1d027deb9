"""One entry point for every measured file: find the format, call its reader."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InputError
from .files import detect_all, read_text
from .run import MeasuredRun


def read(paths: Sequence[str], *, iteration: int | None = None, pattern: str | None = None,
         naming: str = "auto") -> tuple[str, object]:  # fmt: skip
    """``(format, what was read)``: a ``MeasuredRun`` for CSVs and traces, Megatron-LM's own run for logs."""
    paths = list(paths)
    fmt = detect_all(paths)
    if fmt == "megatron":
        try:
            from .megatron import read_log  # the calibration part's reader
        except ImportError:
            raise InputError(f"{paths[0]} is a Megatron-LM timer log, and this ppviz has no reader for them",
                             field="files") from None  # fmt: skip
        return fmt, read_log(paths)
    if fmt == "kineto":
        from .kineto import read_traces

        return fmt, read_traces(paths, iteration=iteration, pattern=pattern)
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
