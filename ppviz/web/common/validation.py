"""The one validation layer: every value that enters the server (link, control, upload) is read here.

Lenient readers (``in_range``, ``read_lines``; ``read_form`` for a whole request against a page's form,
in one call) bound a value and add a note for each change, so no link breaks a page; strict checks
(``check_order``) raise ``InputError`` naming the field, so the page shows the message beside that control.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import NamedTuple
from urllib.parse import parse_qsl

import dash

from ppviz.errors import InputError
from ppviz.ir import torch_lines

from .limits import MAX_MICROBATCHES, MAX_ORDER_BYTES, MAX_ORDER_RANKS, MAX_SEARCH_CHARS

MAX_LINES = 8  # devices drawn as lines over the memory band (more could not be told apart)
MAX_DEVICE_ID = 1023  # a chosen device past the view's devices is not drawn; past this it is junk


def finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def in_range(name: str, value: object, low: float, high: float, integer: bool, notes: list[str]):
    """``value`` as a number in [low, high] (clamped, with a note), or None when it is not a number."""
    v = finite(value)
    if v is None or (integer and not v.is_integer()):
        notes.append(f"{name} {show(value)} is not a {'whole number' if integer else 'number'}; using its default")
        return None
    if not low <= v <= high:
        clamped = min(max(v, low), high)
        notes.append(f"{name} {v:g} is outside {low:g}–{high:g}; using {clamped:g}")
        v = clamped
    return int(v) if integer else v


def read_hash(hash_: object) -> dict[str, str]:
    """A URL hash's key/value pairs (any input type; junk, or text past MAX_SEARCH_CHARS, gives {})."""
    if not isinstance(hash_, str) or len(hash_) > MAX_SEARCH_CHARS:
        return {}
    return dict(parse_qsl(hash_.lstrip("#"), keep_blank_values=True))


def bad_numbers(values: dict, fields: dict, then: str = "the results use the last valid value") -> dict:
    """The error beside each number box of ``fields`` that holds no number (the browser sends an empty
    box, or one outside its min–max, as no value), ending with ``then``: {name: ("error", text)}."""
    out = {}
    for name, f in fields.items():
        if values.get(name) is None:
            whole = "a whole number" if f.integer else "a number"
            text = f"{f.label}: enter {whole} in {f.low:,g}–{f.high:,g}; {then}"
            out[name] = ("error", text)
    return out


class Lines(NamedTuple):
    """A form entry read by ``read_lines``: devices drawn as lines."""


class Counts(NamedTuple):
    """A form entry holding up to ``most`` whole numbers in 0–``high`` ("9,10,10,9" or a list); ``label``
    names it in notes. Empty reads as None."""

    label: str
    most: int
    high: float


class Pair(NamedTuple):
    """A form entry holding two whole numbers in 1–65,536 ("4,2" or a list); None when it is not one
    (the caller says why, as only it knows what the pair must fit)."""


class Whole(NamedTuple):
    """A form entry holding a whole number; None when it is not one (the caller says why)."""


class Text(NamedTuple):
    """A form entry passed on as it came (a choice its page checks against its options)."""


class Alias(NamedTuple):
    """An older link's key for a number field, and the factor to the field's unit."""

    key: str
    factor: float


class Form(NamedTuple):
    values: dict[str, object]  # every entry given, read; numbers bounded (an unreadable number is left out)
    notes: dict[str, list[str]]  # per entry, what was not understood or was clamped
    shown: dict[str, str]  # each given entry as it came, short (``show``), for the caller's own notes
    empty: dict[str, tuple[str, str]]  # number boxes holding no number: the error beside each
    converted: dict[str, tuple]  # fields read from an older key: (its text, its number or None, the field's value)


def elsewhere(pathname: object, path: str) -> bool:
    """Whether the browser is at another page than ``path`` (the app's path of a page, e.g. ``/model``).

    A link between pages changes the path and the hash at once, while the page left is still drawn:
    its callbacks then see the next page's hash, and must leave it alone. An unknown path is not elsewhere.
    """
    if not isinstance(pathname, str):
        return False
    return pathname.rstrip("/") != dash.get_relative_path(path).rstrip("/")


def read_form(
    hash_: object,
    overlay: dict | None,
    form: dict[str, object],
    empty: tuple[str, ...] = (),
    aliases: dict[str, Alias] | None = None,
    at: tuple[object, str] | None = None,
) -> Form | None:
    """One request read in one call: the hash's pairs with ``overlay`` over them (the controls' values: a
    key there wins, None meaning absent), each entry read by its reader in ``form`` (a number field,
    ``Lines``, ``Counts``, ``Pair``, ``Whole`` or ``Text``); ``empty`` names the number boxes that hold no number.
    With ``at`` (the browser's path, the page's path): None when the browser is at another page, whose
    hash this is not (``elsewhere``)."""
    if at is not None and elsewhere(*at):
        return None
    pairs = read_hash(hash_)
    raw = {k: v for k, v in pairs.items() if k in form}
    converted = {}
    for name, alias in (aliases or {}).items():
        if name not in raw and alias.key in pairs and name not in (overlay or {}):
            v = finite(number(pairs[alias.key]))
            converted[name] = (show(pairs[alias.key]), v, None if v is None else float(f"{v * alias.factor:.12g}"))
            if v is not None:
                raw[name] = converted[name][2]
    for key, value in (overlay or {}).items():
        if key not in form:
            continue
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    values: dict[str, object] = {}
    notes: dict[str, list[str]] = {}
    for key, value in raw.items():
        reader, said = form[key], notes.setdefault(key, [])
        if isinstance(reader, Lines):
            values[key] = read_lines(value, said)
        elif isinstance(reader, Counts):
            values[key] = _counts(value, reader, said)
        elif isinstance(reader, Pair):
            values[key] = _pair(value)
        elif isinstance(reader, Whole) and value not in (None, ""):
            v = finite(number(value))
            values[key] = int(v) if v is not None and v.is_integer() else None
        elif isinstance(reader, Text):
            values[key] = value
        elif not isinstance(reader, Whole) and value not in (None, ""):
            v = in_range(key, number(value), reader.low, reader.high, reader.integer, said)
            if v is not None:
                values[key] = v
    boxes = {n: form[n] for n in empty if n in form}
    shown = {k: show(v) for k, v in raw.items()}
    return Form(values, notes, shown, bad_numbers(dict.fromkeys(boxes), boxes), converted)


def _counts(value: object, reader: Counts, notes: list[str]) -> tuple[int, ...] | None:
    """Up to ``reader.most`` whole numbers in 0–``reader.high`` from text ("9,10,10,9") or a list; empty is None."""
    if value is None or value == "" or value == []:
        return None
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple)) else None
    what = reader.label
    if items is None or len(items) > reader.most:
        notes.append(f"{what} {show(value)} is not a list of up to {reader.most} layer counts; splitting evenly")
        return None
    out = []
    for item in items:
        v = number(item.strip() if isinstance(item, str) else item)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or not float(v).is_integer():
            notes.append(f"{what} {show(value)} needs whole numbers (e.g. 9,10,10,9); splitting evenly")
            return None
        if not 0 <= v <= reader.high:
            notes.append(f"{what} entry {v:g} is outside 0–{reader.high:g}; splitting evenly")
            return None
        out.append(int(v))
    return tuple(out)


def _pair(value: object) -> tuple[int, int] | None:
    """Two whole numbers ≥ 1 from "4,2" or a list; None otherwise."""
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple)) else None
    if items is None or len(items) != 2:
        return None
    out = []
    for item in items:
        v = number(item.strip() if isinstance(item, str) else item)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or not float(v).is_integer():
            return None
        if not 1 <= v <= 65_536:
            return None
        out.append(int(v))
    return out[0], out[1]


def show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def order_tokens(text: str) -> int:
    """Actions in an order's text, counted without parsing it (an overlapped pair counts twice)."""
    return sum(1 for cell in re.split(r"[,;\r\n]", text) if cell.strip())


def check_order(text: str) -> None:
    """An imported order's bounds, checked on its text before it is parsed."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_ORDER_BYTES:
        raise InputError(
            f"the order is {size:,} bytes; the page takes up to {MAX_ORDER_BYTES // 1024} KB", field="order"
        )
    ranks = len(torch_lines(text))  # the rows the parser will read, counted the parser's way
    if ranks > MAX_ORDER_RANKS:
        raise InputError(
            f"the order has {ranks:,} rows (ranks, blank rows included); the page takes at most {MAX_ORDER_RANKS}: "
            f"remove the blank rows, or use the CLI: ppviz simulate --order order.csv",
            field="order",
        )


def check_order_size(devices: int, microbatches: int) -> None:
    """A parsed order's sizes, bounded like the sliders."""
    if microbatches > MAX_MICROBATCHES:
        raise InputError(
            f"the order has {microbatches:,} microbatches; the page takes at most {MAX_MICROBATCHES}: "
            "use the CLI: ppviz simulate --order order.csv",
            field="order",
        )
    if devices > MAX_ORDER_RANKS:
        raise InputError(f"the order has {devices} devices; the page takes at most {MAX_ORDER_RANKS}", field="order")


def read_lines(value: object, notes: list[str]) -> tuple[int, ...]:
    """Devices to draw as lines over the memory band, from a link ("3,17") or a dropdown ([3, 17]):
    whole numbers 0–1023, each once, in order, at most MAX_LINES; anything else is left out with a note."""
    if value is None or value == "":
        return ()
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple)) else None
    if items is None or len(items) > 4 * MAX_LINES:
        notes.append(f"memory lines {str(value)[:40]!r} is not a list of devices; drawing the highest and lowest peak")
        return ()
    out: set[int] = set()
    for item in items:
        v = to_float(item) if isinstance(item, str) else item
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v).is_integer():
            notes.append(f"memory lines: {str(item)[:20]!r} is not a device number; left out")
        elif not 0 <= v <= MAX_DEVICE_ID:
            notes.append(f"memory lines: device {v:g} is outside 0–{MAX_DEVICE_ID}; left out")
        else:
            out.add(int(v))
    if len(out) > MAX_LINES:
        notes.append(f"memory lines: at most {MAX_LINES} devices are drawn as lines; kept the first {MAX_LINES}")
    return tuple(sorted(out)[:MAX_LINES])


def num(v: float | int) -> str:
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return str(int(v))
    return f"{v:.12g}"


def to_float(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def number(value: object) -> object:
    """A link's text as a number (other types are left for the range check to judge)."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


ORDER_FILE = ("a PyTorch-format order CSV", "order")


def uploaded_text(contents: object, name: str, max_bytes: int, field: str, what: tuple[str, str] = ORDER_FILE) -> str:
    """The text of an upload as dcc.Upload sends it (a base64 data URL), refused past ``max_bytes``
    before it is decoded, and when it is not UTF-8. ``what``: the file asked for, and its short name."""
    header, _, data = (contents if isinstance(contents, str) else "").partition(",")
    if not data or ";base64" not in header:
        raise InputError(f"the upload is empty: choose {what[0]}", field=field)
    padding = len(data) - len(data.rstrip("="))  # base64 pads to 4 characters: 1 or 2 of them decode to nothing
    if len(data) * 3 // 4 - padding > max_bytes:
        raise InputError(f"{name} is larger than {max_bytes // 1024} KB: upload a smaller {what[1]}", field=field)
    try:
        return base64.b64decode(data, validate=True).decode("utf-8-sig")
    except (binascii.Error, UnicodeDecodeError):
        raise InputError(f"{name} is not UTF-8 text: upload {what[0]}", field=field) from None
