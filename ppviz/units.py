"""How every surface shows memory and time: GiB (2³⁰ bytes, what ``nvidia-smi`` counts in), ms below
10 s and s from 10 s on, thousands separators everywhere, differences signed with a true minus. Data
(JSON) stays in bytes and seconds."""

from __future__ import annotations

from collections.abc import Iterable

GIB = 2**30
MIB = 2**20
SECONDS_FROM = 10.0  # a time of this many seconds or more is shown in s, below it in ms


def gib(n_bytes: float, digits: int = 2) -> str:
    """ "76.07 GiB" (bytes in)."""
    return f"{n_bytes / GIB:,.{digits}f} GiB"


def time_unit(seconds: Iterable[float]) -> tuple[float, str]:
    """(scale, unit) that shows every value of one column in one unit: s when the largest is ≥ 10 s, else ms."""
    top = max((abs(s) for s in seconds), default=0.0)
    return (1.0, "s") if top >= SECONDS_FROM else (1e3, "ms")


def duration(seconds: float, digits: int = 1) -> str:
    """ "10,439.4 ms" below 10 s, "11.64 s" from 10 s on."""
    scale, unit = time_unit([seconds])
    return f"{seconds * scale:,.{digits if unit == 'ms' else 2}f} {unit}"


def percent_change(value: float, base: float) -> str:
    """``value`` against ``base`` in percent, signed with a true minus: "−12.0%" (n/a against 0)."""
    if base == 0:
        return "±0%" if value == 0 else "n/a %"
    return signed(100 * (value - base) / base, ".1f") + "%"


def signed(delta: float, fmt: str = "g") -> str:
    """A difference with its sign and a true minus, ± for none: "+3.1", "−0.5", "±0"."""
    if abs(delta) < 1e-12:
        return "±0"
    return ("+" if delta > 0 else "−") + format(abs(delta), fmt)


__all__ = ["GIB", "MIB", "SECONDS_FROM", "duration", "gib", "percent_change", "signed", "time_unit"]
