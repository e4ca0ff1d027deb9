"""The ``ppviz …`` command a page names when a view is past its bounds: one builder for every page."""

from __future__ import annotations


def command(verb: str, *args: object, **flags: object) -> str:
    """``ppviz VERB ARGS --flag value …`` in the order given: a flag's underscores become dashes, True
    gives a bare flag, None and False leave it out; floats print as ``:g``."""
    parts = ["ppviz", verb, *map(str, args)]
    for name, value in flags.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        parts.append(flag if value is True else f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}")
    return " ".join(parts)
