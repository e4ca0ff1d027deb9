"""The measured view's inputs as plain data, and their link form (the pairs of ``/measured#…``).

The uploaded files are not in the link (they can be megabytes): the server keeps them (``uploads``)
under a key made from their content, and the link carries that key with the reading options, so a
reload shows the same view while the server still holds the files. Every value is bounded here,
a bad one falling back to its default with a note, as the other views bound theirs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import NamedTuple

from ppviz import REGISTRY
from ppviz.errors import InputError
from ppviz.measured.shared_cores import MAX_CORES

from ...common import validation
from ...common.validation import read_hash

NAMINGS = ("auto", "torch", "torch-old")  # an order CSV's action naming, as `ppviz measured --naming`
MAX_ITERATION = 1_000_000_000
MAX_PATTERN_CHARS = 300
KEY = re.compile(r"[0-9a-f]{32}")  # uploads.key_of's form
# A repeated group holding a repeat ("(a+)+", "((\w*)x)*", "(a|b?){2,}"): a regex the server could spend
# exponential time matching against one event name. The page refuses it; the CLI runs any pattern locally.
_REPEAT = re.compile(r"[+*?]|\{\d*,\d*\}")


@dataclass(frozen=True)
class MeasuredState:
    run: str | None = None  # the uploaded files' key (None: nothing uploaded)
    iteration: int | None = None  # ProfilerStep#N (None: the last complete one)
    pattern: str | None = None  # a regex for other frameworks' annotations
    naming: str = "auto"
    cores: int | None = None  # the host's cores the ranks time-shared (None: a device per rank)
    schedule: str = "zb-v"  # the what-if schedule


class Parsed(NamedTuple):
    state: MeasuredState
    notes: list[str]


def encode(state: MeasuredState) -> dict[str, str]:
    pairs = {"run": state.run} if state.run else {}
    if state.iteration is not None:
        pairs["iteration"] = str(state.iteration)
    if state.pattern:
        pairs["pattern"] = state.pattern
    if state.naming != "auto":
        pairs["naming"] = state.naming
    if state.cores is not None:
        pairs["cores"] = str(state.cores)
    pairs["schedule"] = state.schedule
    return pairs


def parse(hash_: object) -> Parsed:
    state, notes = bounded(read_hash(hash_))
    return Parsed(state, notes)


def bounded(raw: dict) -> tuple[MeasuredState, list[str]]:
    """A state from raw values (text from a link, anything from a request), every field checked."""
    base = MeasuredState()
    notes: list[str] = []
    values: dict = {}
    run = raw.get("run")
    if run not in (None, ""):
        if isinstance(run, str) and KEY.fullmatch(run):
            values["run"] = run
        else:
            notes.append(f"run {validation.show(run)} is not an uploaded run's key; upload the files again")
    iteration = raw.get("iteration")
    if iteration not in (None, ""):
        v = validation.in_range("iteration", validation.number(iteration), 0, MAX_ITERATION, True, notes)
        if v is not None:
            values["iteration"] = v
    pattern = raw.get("pattern")
    if pattern not in (None, ""):
        if isinstance(pattern, str) and len(pattern) <= MAX_PATTERN_CHARS:
            values["pattern"] = pattern
        else:
            notes.append(f"the pattern is not text of at most {MAX_PATTERN_CHARS} characters; left out")
    naming = raw.get("naming")
    if naming not in (None, ""):
        if naming in NAMINGS:
            values["naming"] = naming
        else:
            notes.append(f"naming {validation.show(naming)} is not one of {', '.join(NAMINGS)}; using auto")
    cores = raw.get("cores")
    if cores not in (None, ""):
        v = validation.in_range("cores", validation.number(cores), 1, MAX_CORES, True, notes)
        if v is not None:
            values["cores"] = v
    schedule = raw.get("schedule")
    if schedule not in (None, ""):
        if isinstance(schedule, str) and schedule in REGISTRY:
            values["schedule"] = schedule
        else:
            notes.append(f"unknown schedule {validation.show(schedule)}; showing {base.schedule}")
    return replace(base, **values), notes


def check_pattern(pattern: str | None) -> None:
    """Refuse a pattern with a repeated group that holds a repeat (at any depth), naming the field."""
    if pattern and _nested_repeat(pattern):
        raise InputError(
            "the pattern repeats a group that holds a repeat (as (a+)+ does), which can take exponential time to "
            "match: the page refuses such patterns; write it without, or run `ppviz measured FILES --pattern …`",
            field="pattern",
        )


def _nested_repeat(pattern: str) -> bool:
    opened: list[bool] = []  # per open group: whether a repeat is inside it
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":  # a class: its characters repeat nothing
            close = pattern.find("]", i + 2)
            i = len(pattern) if close < 0 else close + 1
            continue
        if c == "(":
            opened.append(False)
            i += 2 if pattern.startswith("(?", i) else 1  # (?P<…>, (?:, (?=: the ? opens, it repeats nothing
            continue
        repeat = _REPEAT.match(pattern, i)
        if c == ")" and opened:
            inner = opened.pop()
            after = _REPEAT.match(pattern, i + 1)
            if inner and after and after.group(0) != "?":
                return True
            if opened:
                opened[-1] = opened[-1] or inner or bool(after)
        elif repeat and opened:
            opened[-1] = True
        i += 1
    return False


def cli_command(state: MeasuredState, names: list[str], order: str | None = None) -> str:
    """The ``ppviz measured`` command of the view, the uploaded files by their names (``order``: the one
    that names the traces' compute)."""
    parts = ["ppviz measured", *(_quoted(n) for n in [n for n in names if n != order] or ["FILES…"])]
    if order is not None:
        parts.append(f"--order {_quoted(order)}")
    if state.iteration is not None:
        parts.append(f"--iteration {state.iteration}")
    if state.pattern:
        parts.append(f"--pattern {_quoted(state.pattern)}")
    if state.naming != "auto":
        parts.append(f"--naming {state.naming}")
    if state.cores is not None:
        parts.append(f"--cores {state.cores}")
    parts.append(f"--what-if {state.schedule}")
    return " ".join(parts)


def _quoted(text: str) -> str:
    return text if re.fullmatch(r"[\w./:=,+-]+", text) else "'" + text.replace("'", "'\\''") + "'"
