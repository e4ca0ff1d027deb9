"""Rewrite the README's generated schedule table from the code (`ppviz table`)."""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ppviz.report import schedule_table  # noqa: E402

START, END = "<!-- schedule-table:start -->", "<!-- schedule-table:end -->"


def main() -> None:
    path = Path(__file__).resolve().parents[1] / "README.md"
    text = path.read_text(encoding="utf-8")
    block = f"{START}\n{schedule_table()}{END}"
    new = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    path.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    main()
