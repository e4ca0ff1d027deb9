"""A user's file read whole under a size cap: a clear error for an unreadable or oversized file, and never
more than the cap (plus one byte, to tell) held in memory."""

from __future__ import annotations

from pathlib import Path

from .errors import InputError


def read_capped(
    path: str | Path, cap: int, *, field: str, what: str = "", error: type[InputError] = InputError
) -> bytes:
    """The file's bytes; an ``error`` (an InputError) on ``field`` names ``what`` and the path when it cannot
    be read or holds more than ``cap`` bytes."""
    name = f"{what} {path}" if what else str(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(cap + 1)
    except OSError as e:
        raise error(f"cannot read {name}: {e.strerror}", field=field) from None
    if len(data) > cap:
        raise error(f"{name} is larger than {cap:,} bytes", field=field)
    return data
