"""Opening measured files: size caps, gzip, and which reader a file needs.

A trace is streamed, so its cap only bounds the time spent on it (memory stays small whatever its
size); an order CSV or a log is read whole, so its cap is what a real one needs with a wide margin.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Sequence

from ..errors import InputError

MAX_TRACE_BYTES = 4_000_000_000  # a trace (decompressed): 40× the 100 MB of a busy rank's step
MAX_TEXT_BYTES = 5_000_000  # an order CSV or a timer log
GZIP_MAGIC = b"\x1f\x8b"
MEGATRON_MARKS = ("time (ms) |", "time across ranks (ms):", "times across ranks (ms):")


class CappedReader(io.RawIOBase):
    """A binary stream that refuses to give more than ``cap`` bytes, and counts what it gave."""

    def __init__(self, raw, cap: int, source: str):
        self.raw, self.cap, self.source, self.count = raw, cap, source, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.raw.read(len(buffer))
        self.count += len(data)
        if self.count > self.cap:
            raise InputError(f"{self.source} is larger than {self.cap:,} bytes (decompressed)", field="files")
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.count += len(data)
        if self.count > self.cap:
            raise InputError(f"{self.source} is larger than {self.cap:,} bytes (decompressed)", field="files")
        return data


def open_binary(path: str, cap: int = MAX_TRACE_BYTES) -> CappedReader:
    """The file's bytes, gunzipped when gzipped, capped at ``cap``."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 (the returned reader owns it)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}", field="files") from None
    head = fh.read(2)
    fh.seek(0)
    return CappedReader(gzip.GzipFile(fileobj=fh) if head == GZIP_MAGIC else fh, cap, path)


def read_text(path: str, cap: int = MAX_TEXT_BYTES) -> str:
    with open_binary(path, cap) as fh:
        try:
            data = fh.read(cap + 1)  # past the cap, the reader refuses before holding more
        except (OSError, EOFError) as e:
            raise InputError(f"{path}: cannot decompress: {e}", field="files") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{path} is not UTF-8 text (byte {e.start})", field="files") from None


def detect(path: str) -> str:
    """``kineto`` (JSON, gzipped or not), ``megatron`` (a log with timer lines) or ``torch-csv``."""
    with open_binary(path) as fh:
        try:
            head = fh.read(1 << 20)
        except (OSError, EOFError) as e:
            raise InputError(f"{path}: cannot decompress: {e}", field="files") from None
    text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if text.startswith(("{", "[")):
        return "kineto"
    if any(mark in text for mark in MEGATRON_MARKS):
        return "megatron"
    return "torch-csv"


def detect_all(paths: Sequence[str]) -> str:
    """The one format of all ``paths``; mixed formats are refused."""
    if not paths:
        raise InputError("give at least one file", field="files")
    kinds = {p: detect(p) for p in paths}
    if len(set(kinds.values())) > 1:
        listed = ", ".join(f"{p} ({k})" for p, k in kinds.items())
        raise InputError(f"the files are of different formats: {listed}; give the files of one run", field="files")
    return next(iter(kinds.values()))
