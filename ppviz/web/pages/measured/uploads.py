"""Uploaded files of a measured run, kept by the server under a key made from their content.

The files never travel in the link: the link carries the key (``state.run``). They are kept in a
sized diskcache in the server's private jobs folder, which every gunicorn worker of the server
shares (any worker answers the request after an upload, or a reload), the least recently used
going first past CACHE_BYTES; when they are gone the page says to upload them again. The readers of
``ppviz.measured`` take paths, so a run is written to a private temporary folder while it is read.
Plain functions, no Dash.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import gzip
import hashlib
import io
import os
import re
import tempfile
from collections.abc import Iterator

from ppviz.errors import InputError
from ppviz.web.protocol import MAX_UPLOAD_BYTES

from ...common import jobs
from ...common.limits import MAX_DEVICES

# Every file of one upload travels in one request, base64 (4/3 of the bytes), under the server's body
# cap: what is left of it for the files. A file's decompressed size is then capped by its reader
# (``ppviz.measured.files``: an order CSV or a log 5 MB, a trace streamed).
# What the files hold once gunzipped, in all: a request reads them (ijson, in C) in a few seconds at most.
MAX_READ_BYTES = 64 * 2**20
MAX_FILES = MAX_DEVICES  # one trace per rank
CACHE_BYTES = int(float(os.environ.get("PPVIZ_MEASURED_CACHE_MB", "64")) * 2**20)
WHAT = (
    "upload the files of one run: a PyTorch profiler trace per rank (.json or .json.gz), with the order CSV "
    "the run ran when the traces do not annotate their actions; or one PyTorch order CSV, or Megatron-LM timer logs"
)

Files = tuple[tuple[str, bytes], ...]  # (name, content) per file, in upload order


def decoded(contents: object, filenames: object) -> Files:
    """The files of a ``dcc.Upload(multiple=True)`` as sent (base64 data URLs), refused past the caps
    before they are decoded; an InputError (field ``files``) says why."""
    contents = contents if isinstance(contents, list) else [contents] if isinstance(contents, str) else []
    names = filenames if isinstance(filenames, list) else [filenames] if isinstance(filenames, str) else []
    if not contents:
        raise InputError(f"the upload holds no file: {WHAT}", field="files")
    if len(contents) > MAX_FILES:
        raise InputError(f"{len(contents)} files: the page takes at most {MAX_FILES} (one per rank)", field="files")
    sizes = [_size(c) for c in contents]
    if sum(sizes) > MAX_UPLOAD_BYTES:
        raise InputError(
            f"the files hold {sum(sizes):,} bytes; the page takes up to {MAX_UPLOAD_BYTES:,} bytes in all "
            "(gzip the traces, or run `ppviz measured FILES…`, which has no such cap)",
            field="files",
        )
    out = []
    for i, text in enumerate(contents):
        name = _name(names[i] if i < len(names) else None, i)
        header, _, data = text.partition(",") if isinstance(text, str) else ("", "", "")
        if ";base64" not in header:
            raise InputError(f"{name} did not arrive as a file upload: {WHAT}", field="files")
        try:
            out.append((name, base64.b64decode(data, validate=True)))
        except binascii.Error:
            raise InputError(f"{name} did not arrive whole (damaged base64): upload it again", field="files") from None
    empty = [name for name, data in out if not data]
    if empty:
        raise InputError(f"{', '.join(empty)} is empty: {WHAT}", field="files")
    unpacked = 0
    for _, data in out:  # counted against what is left, so the check itself stops past the cap
        unpacked += _unpacked_size(data, MAX_READ_BYTES - unpacked)
        if unpacked > MAX_READ_BYTES:
            break
    if unpacked > MAX_READ_BYTES:
        raise InputError(
            f"the files hold more than {MAX_READ_BYTES:,} bytes once decompressed; the page reads up to that "
            "(run `ppviz measured FILES…`, which streams a trace of any size)",
            field="files",
        )
    seen = [name for name, _ in out]
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if twice:
        raise InputError(f"two files are named {twice[0]}: give each rank's file its own name", field="files")
    return tuple(out)


def order_in(files: Files) -> str | None:
    """The name of the order CSV uploaded with profiler traces (it names their compute when they carry no
    annotations), or None; more than one file beside the traces is refused."""
    others = [name for name, data in files if not _is_trace(data)]
    if len(others) == len(files) or not others:
        return None
    if len(others) > 1:
        raise InputError(f"the upload holds profiler traces and {len(others)} other files ({', '.join(others)}): "
                         "add at most one, the order CSV the run ran", field="files")  # fmt: skip
    return others[0]


def _is_trace(data: bytes) -> bool:
    """Whether the file is JSON (gzipped or not), as ``ppviz.measured.files.detect`` tells a trace."""
    head = data[:4096]
    if data[:2] == b"\x1f\x8b":
        with contextlib.suppress(OSError, EOFError), gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            head = fh.read(4096)
    return head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n").startswith(("{", "["))


def _unpacked_size(data: bytes, cap: int) -> int:
    """The bytes a gzipped file decompresses to, counted up to ``cap`` (a damaged one is left to its reader)."""
    if data[:2] != b"\x1f\x8b":
        return len(data)
    count = 0
    with contextlib.suppress(OSError, EOFError), gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
        while count <= cap and (chunk := fh.read(1 << 20)):
            count += len(chunk)
    return count


def _size(content: object) -> int:
    data = content.partition(",")[2] if isinstance(content, str) else ""
    return len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))


def _name(name: object, i: int) -> str:
    """The file's own name (its last path part), with characters a file name may hold."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1] if isinstance(name, str) else ""
    base = re.sub(r"[^\w.+-]", "_", base)[:120].lstrip(".")
    return base or f"file{i}"


def key_of(files: Files) -> str:
    digest = hashlib.sha256()
    for name, data in files:
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()[:32]


def store():
    """The server's store of uploaded runs (one per jobs folder: tests start servers under others)."""
    return _store(os.path.join(jobs.jobs_dir(), "measured"))


@functools.cache
def _store(folder: str):
    import diskcache

    return diskcache.Cache(folder, size_limit=CACHE_BYTES, eviction_policy="least-recently-used")


def keep(files: Files) -> str:
    """Hold the files (the least recently used go first past CACHE_BYTES); their key."""
    key = key_of(files)
    store().set(key, files)
    return key


def held(key: str | None) -> Files | None:
    return None if key is None else store().get(key)


@contextlib.contextmanager
def on_disk(files: Files) -> Iterator[tuple[str, list[str]]]:
    """The files written to a private temporary folder: (the folder, their paths), removed after."""
    with tempfile.TemporaryDirectory(prefix="ppviz-measured-") as folder:
        paths = []
        for name, data in files:
            path = os.path.join(folder, name)
            with open(path, "wb") as fh:
                fh.write(data)
            paths.append(path)
        yield folder, paths
