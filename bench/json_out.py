"""The ``--json PATH`` output of the bench scripts: one table, with the command and the machine's load.

The handbook's performance page renders these files (docs/hooks.py), so its tables are measured,
not hand-kept.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import sys
from pathlib import Path


def write(path: str, columns: list[str], rows: list[list], loadavg: tuple[float, float, float]) -> None:
    """Write the table to ``path``; ``loadavg`` is ``os.getloadavg()`` taken before the bench ran."""
    data = {
        "command": "python " + " ".join(shlex.quote(a) for a in [f"bench/{Path(sys.argv[0]).name}", *sys.argv[1:]]),
        "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "loadavg": list(loadavg),
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
        "columns": columns,
        "rows": rows,
    }
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
