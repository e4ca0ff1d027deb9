"""Megatron-LM training logs: the per-iteration timers and iteration times a run printed.

Megatron's timers are per-iteration totals (summed over the microbatches and chunks, averaged over
``--log-interval``), not per-op times, so a log gives the iteration time, the forward and backward
compute totals and the p2p waits, never one op's start and end. Forms read (Megatron-LM's
``megatron/core/timers.py`` and ``megatron/training/training.py``; the old form from
``megatron/training.py`` before the 2022-08 "Timing levels" change):

- old, one line printed by the last rank: ``time (ms) | forward-compute: 416.32 | ...``;
- ``--timing-log-option minmax`` (the default): ``(min, max) time across ranks (ms):`` then one
  ``    <name> ....: (<min>, <max>)`` line per timer;
- ``--timing-log-option max``: ``max time across ranks (ms):`` then ``    <name> ....: <ms>``;
- ``--timing-log-option all``: ``times across ranks (ms):``, ``  <name>:`` and one
  ``     rank <r>: <ms>`` line per rank that recorded it.

The iteration line (``iteration N/ M | ... | elapsed time per iteration (ms): ... | global batch
size: ...``) comes before its timers. Timers printed before the first iteration are the setup's.
Every other line (shell trace, memory reports, arguments) is skipped; the arguments dump
(``  name ....... value``) is kept as text in ``MegatronRun.arguments``.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

MAX_LOG_BYTES = 2_000_000_000  # a training log of tens of millions of lines; refused past this
MAX_LINE_CHARS = 1_000_000  # a longer line is cut (Megatron's lines are under 10 kB)

_ITERATION = re.compile(r"^\s*(?:\[[^\]]*\]\s*)?iteration\s+(\d+)\s*/\s*(\d+)\s*\|(.*)$")
_ELAPSED = re.compile(r"elapsed time per iteration \(ms\):\s*([^|]*)")
_BATCH = re.compile(r"global batch size:\s*([^|]*)")
_OLD_TIMERS = re.compile(r"^\s*time \(ms\)\s*\|(.*)$")
_HEADERS = {
    "(min, max) time across ranks (ms):": "minmax",
    "max time across ranks (ms):": "max",
    "times across ranks (ms):": "all",
}
_DOTTED = re.compile(r"^\s+(\S+?)\s*\.*:\s*(.*)$")  # "    forward-compute .....: (1.0, 2.0)"
_RANK = re.compile(r"^\s+rank\s+(\d+):\s*(\S+)\s*$")
_NAME = re.compile(r"^\s+(\S+):\s*$")
_ARGUMENT = re.compile(r"^\s{2}(\w+) \.{3,} (.*?)\s*$")

FITTABLE = (
    "the iteration time (median of the iteration lines after the first): what `ppviz calibrate` fits the estimate's "
    "efficiencies to",
    "per-iteration totals per timer (forward-compute, backward-compute, p2p waits, optimizer)",
    "the backward/forward compute ratio of the rank(s) that printed",
)
NOT_FITTABLE = (
    "per-op times (one microbatch's F, B or W on one stage): the timers sum every microbatch",
    "op start and end times, so no measured Gantt and no idle time per device",
    "p2p latency per transfer: the recv/send timers include waiting for the other stage",
    "a split backward (B and W apart): Megatron times the whole backward",
)


@dataclass(frozen=True)
class Timer:
    """One timer in one iteration, in ms: ``per_rank`` (rank → ms) when the log names ranks, else
    ``low``/``high`` (min and max over the ranks; equal when one value is printed)."""

    low: float
    high: float
    per_rank: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Iteration:
    """One iteration line and the timers printed after it."""

    number: int
    total: int
    elapsed_ms: float | None
    global_batch: int | None
    timers: dict[str, Timer]
    where: str  # "file:line" of the iteration line


@dataclass
class MegatronRun:
    """What one or more Megatron-LM logs say about a run: iterations, timers, arguments, notes."""

    files: list[str]
    form: str | None = None  # "single-line", "minmax", "max" or "all"; None: no per-iteration timers
    iterations: list[Iteration] = field(default_factory=list)
    setup: dict[str, Timer] = field(default_factory=dict)
    arguments: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def iteration_ms(self) -> list[float]:
        return [it.elapsed_ms for it in self.iterations if it.elapsed_ms is not None]

    def steady_ms(self) -> list[float]:
        """The iteration times but the first line's when there are more: the first holds the warm-up
        (NCCL and CUDA set-up, and with fp16 the loss-scale search's skipped iterations)."""
        times = self.iteration_ms()
        return times[1:] if len(times) > 1 else times

    def median_iteration_s(self) -> float:
        """The median steady elapsed time per iteration (``steady_ms``), in seconds."""
        times = self.steady_ms()
        if not times:
            raise InputError(f"{', '.join(self.files)}: no 'elapsed time per iteration (ms)' line", field="log")
        return statistics.median(times) / 1e3

    def ranks(self) -> list[int]:
        return sorted({r for it in self.iterations for t in it.timers.values() for r in t.per_rank})

    def timer_medians(self) -> dict[str, dict]:
        """Per timer: the median over iterations of its value (the max over ranks), with the
        median min over ranks and each rank's median where the log names ranks."""
        names: dict[str, list[Timer]] = {}
        for it in self.iterations:
            for name, t in it.timers.items():
                names.setdefault(name, []).append(t)
        out = {}
        for name, ts in names.items():
            row = {"median_ms": statistics.median(t.high for t in ts), "samples": len(ts)}
            if self.form == "minmax":
                row["median_min_ms"] = statistics.median(t.low for t in ts)
            ranks = sorted({r for t in ts for r in t.per_rank})
            if ranks:
                row["per_rank_median_ms"] = {
                    str(r): statistics.median(t.per_rank[r] for t in ts if r in t.per_rank) for r in ranks
                }
            out[name] = row
        return out

    def summary(self) -> dict:
        """A JSON-able account of the run: what it measured and what can and cannot be fitted from it."""
        times, steady = self.iteration_ms(), self.steady_ms()
        timers = self.timer_medians()
        fwd, bwd = timers.get("forward-compute"), timers.get("backward-compute")
        batches = {it.global_batch for it in self.iterations if it.global_batch is not None}
        return {
            "format": "megatron",
            "files": list(self.files),
            "timer_form": self.form,
            "iterations": len(self.iterations),
            "iteration_numbers": [it.number for it in self.iterations],
            "iteration_ms": None
            if not times
            else {
                "median": statistics.median(steady),
                "first": times[0],
                "min": min(times),
                "max": max(times),
                "samples": len(steady),
            },  # fmt: skip
            "global_batch": sorted(batches)[0] if len(batches) == 1 else sorted(batches) or None,
            "ranks": self.ranks() or None,
            "timers": timers,
            "backward_forward_ratio": bwd["median_ms"] / fwd["median_ms"] if fwd and bwd and fwd["median_ms"] else None,
            "fittable": list(FITTABLE),
            "not_fittable": list(NOT_FITTABLE),
            "arguments": dict(self.arguments),
            "notes": list(self.notes),
        }


def read_log(paths: str | Path | list[str | Path]) -> MegatronRun:
    """Read Megatron-LM log files (in the order given) into one MegatronRun.

    Raises ``InputError`` (field ``log``) naming the file and line of anything it cannot read.
    """
    files = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    if not files:
        raise InputError("give at least one Megatron-LM log file", field="log")
    run = MegatronRun(files=[str(p) for p in files])
    for path in files:
        try:
            if path.stat().st_size > MAX_LOG_BYTES:
                raise InputError(f"{path} is larger than {MAX_LOG_BYTES:,} bytes", field="log")
            with open(path, encoding="utf-8", errors="replace", newline="") as fh:
                _Reader(run, str(path), fh).read()
        except OSError as e:
            raise InputError(f"cannot read {path}: {e.strerror}", field="log") from None
    if not run.iterations:
        raise InputError(
            f"{', '.join(run.files)}: no Megatron-LM iteration line ('iteration N/ M | ... | elapsed time per "
            "iteration (ms): ...'): is this a Megatron-LM training log?",
            field="log",
        )
    _add_notes(run)
    return run


def _add_notes(run: MegatronRun) -> None:
    if run.form is None:
        run.notes.append("no per-iteration timers: only the iteration times can be used")
    elif run.form == "single-line":
        run.notes.append(
            "only one rank printed its timers (the old single-line form is printed by the last rank): the "
            "timers are that rank's, with no spread across ranks"
        )
    elif run.form == "max":
        run.notes.append("--timing-log-option max: each timer is the maximum over the ranks, with no spread")
    elif run.form == "all" and len(run.ranks()) == 1:
        run.notes.append(f"only rank {run.ranks()[0]} printed its timers: no spread across ranks")
    numbers = [it.number for it in run.iterations]
    if numbers != sorted(set(numbers)):
        run.notes.append("iteration numbers repeat or go back (several runs or restarts in these files): all are kept")


class _Reader:
    """One file, streamed line by line (memory grows with the iterations kept, not the file):
    iteration lines, and timer blocks in whichever form they come."""

    def __init__(self, run: MegatronRun, name: str, fh):
        self.run, self.name, self.fh = run, name, fh
        self.no = 0  # the current line's number (1-based) and text
        self.line = ""
        self.current: dict[str, Timer] | None = None  # timers of the last iteration (None: setup)

    def next(self) -> str | None:
        """The next line (without its end; one longer than MAX_LINE_CHARS is cut there), or None."""
        text = self.fh.readline(MAX_LINE_CHARS)
        if not text:
            return None
        if len(text) == MAX_LINE_CHARS and not text.endswith("\n"):
            while (rest := self.fh.readline(MAX_LINE_CHARS)) and not rest.endswith("\n"):
                pass  # drop the rest of an overlong line
        self.no += 1
        self.line = text.rstrip("\r\n")
        return self.line

    def fail(self, what: str, no: int | None = None, line: str | None = None) -> None:
        text = (self.line if line is None else line).strip()
        raise InputError(f"{self.name}:{no or self.no}: {what} (line: {text[:120]!r})", field="log")

    def where(self) -> str:
        return f"{self.name}:{self.no}"

    def read(self) -> None:
        line = self.next()
        while line is not None:
            stripped = line.strip()
            if m := _ITERATION.match(line):
                self.iteration(m)
            elif m := _OLD_TIMERS.match(line):
                self.store("single-line", self.old_timers(m.group(1)))
            elif stripped in _HEADERS:
                form = _HEADERS[stripped]
                timers, line = self.block(form)
                self.store(form, timers)
                continue  # ``line`` is the first line after the block, not yet read
            elif m := _ARGUMENT.match(line):
                self.run.arguments.setdefault(m.group(1), m.group(2))
            line = self.next()

    def store(self, form: str, timers: dict[str, Timer]) -> None:
        if self.current is None:  # before the first iteration line: the setup's timers
            self.run.setup.update(timers)
            return
        if self.run.form not in (None, form):
            self.fail(f"timers in the {form} form after the {self.run.form} form: one run prints one form")
        self.run.form = form
        self.current.update(timers)

    def iteration(self, m: re.Match) -> None:
        rest = m.group(3)
        elapsed = _ELAPSED.search(rest)
        batch = _BATCH.search(rest)
        ms = self.number(elapsed.group(1), "the elapsed time per iteration") if elapsed else None
        gbs = None
        if batch:
            text = batch.group(1).strip()
            if not text.isdigit():
                self.fail(f"cannot read the global batch size {text!r}: expected a whole number")
            gbs = int(text)
        self.current = {}
        self.run.iterations.append(Iteration(int(m.group(1)), int(m.group(2)), ms, gbs, self.current, self.where()))

    def number(self, text: str, what: str) -> float:
        try:
            v = float(text.strip())
        except ValueError:
            self.fail(f"cannot read {what} {text.strip()!r}: expected a number of ms")
        if not v >= 0 or v == float("inf"):
            self.fail(f"{what} must be a finite number ≥ 0 (got {text.strip()})")
        return v

    def old_timers(self, text: str) -> dict[str, Timer]:
        out = {}
        for cell in text.split("|"):
            cell = cell.strip()
            if not cell:
                continue
            name, sep, value = cell.rpartition(":")
            if not sep or not name.strip():
                self.fail(f"cannot read the timer {cell!r}: expected 'name: ms'")
            v = self.number(value, f"timer {name.strip()!r}")
            out[name.strip()] = Timer(v, v)
        return out

    def block(self, form: str) -> tuple[dict[str, Timer], str | None]:
        """The timer lines under a header, and the first line after them (None at the end)."""
        header, header_no = self.line, self.no
        out: dict[str, Timer] = {}
        name = None
        line = self.next()
        while line is not None:
            if form == "all":
                if m := _RANK.match(line):
                    if name is None:
                        self.fail("a rank's time before any timer name")
                    v = self.number(m.group(2), f"timer {name!r} of rank {m.group(1)}")
                    ranks = {**out[name].per_rank, int(m.group(1)): v} if name in out else {int(m.group(1)): v}
                    out[name] = Timer(min(ranks.values()), max(ranks.values()), ranks)
                elif m := _NAME.match(line):
                    name = m.group(1)
                else:
                    break
            elif (m := _DOTTED.match(line)) and not _ITERATION.match(line):
                out[m.group(1)] = self.value(form, m.group(1), m.group(2))
            else:
                break
            line = self.next()
        if not out:
            self.fail(f"a '{form}' timer header with no timer under it", header_no, header)
        return out, line

    def value(self, form: str, name: str, text: str) -> Timer:
        text = text.strip()
        if form == "max":
            v = self.number(text, f"timer {name!r}")
            return Timer(v, v)
        if not (text.startswith("(") and text.endswith(")") and text.count(",") == 1):
            self.fail(f"cannot read timer {name!r}: expected '(min, max)' in ms")
        low, high = (self.number(x, f"timer {name!r}") for x in text[1:-1].split(","))
        return Timer(low, high)
