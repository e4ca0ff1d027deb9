"""The handbook builds strict and offline, shows the code's own tables, its walkthrough works when
followed word for word, and the README stays a short landing page whose examples run."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ppviz import REGISTRY
from ppviz.estimate import calibration, calibration_sc21, calibration_v100
from ppviz.report import schedule_table

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
CONSOLE = re.compile(r"^```console\n(.*?)^```$", re.M | re.S)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The handbook built with ``mkdocs build --strict``: any warning (a broken link or anchor, a
    docstring mkdocstrings cannot read, a generated part that fails) fails the build."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def page_text(site: Path, page: str) -> str:
    return (site / page / "index.html").read_text(encoding="utf-8")


def _plain(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def html_rows(page: str) -> list[list[str]]:
    """Every table row of a built page, as the text of its cells."""
    return [[_plain(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", page, re.S)]  # fmt: skip


def markdown_rows(table: str) -> list[list[str]]:
    """The rows of the Markdown tables in ``table`` (headers included), as the text their cells render to."""
    lines = [line.strip().strip("|") for line in table.splitlines() if line.startswith("|")]
    rows = [line.split("|") for line in lines if not set(line) <= set("-:|")]
    return [[c.strip().replace("`", "").replace("**", "") for c in r] for r in rows]


def code_blocks(page: str) -> list[str]:
    return [_plain(b) for b in re.findall(r"<pre[^>]*>(.*?)</pre>", page, re.S)]


def ppviz_cli(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """A ``ppviz ...`` command line as the user types it, run as ``python -m ppviz ...``."""
    args = shlex.split(command)
    assert args[0] == "ppviz"
    return subprocess.run([sys.executable, "-m", "ppviz", *args[1:]], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def without_timing(text: str) -> str:
    return re.sub(r"simulated in [\d.]+ s", "simulated in … s", text)


def test_handbook_has_every_section(site):
    """Each section of the issue is a page of the built site, the API reference included."""
    pages = ["getting-started", "views", "cli", "python-api", "concepts", "schedules", "real-units", "search",
             "real-units/presets", "real-units/formulas", "real-units/validation", "serving", "performance",
             "development", "reference/ppviz", "reference/estimate", "reference/search"]  # fmt: skip
    for page in pages:
        assert (site / page / "index.html").is_file(), page
    reference = page_text(site, "reference/estimate")
    assert "Layout" in reference and "doc-heading" in reference  # generated from the docstrings


class _External(HTMLParser):
    """Every script, stylesheet, font, image or frame a page would fetch from another host."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        url = a.get("src") if tag in ("script", "img", "iframe", "source", "audio", "video", "embed") else None
        if tag == "link" and a.get("rel", "") != "canonical":
            url = a.get("href")
        if url and re.match(r"^(https?:)?//", url):
            self.found.append(f"<{tag}> {url}")


def test_handbook_is_offline(site):
    """No page loads anything from another host (no CDN, no web fonts, no external scripts), and no
    stylesheet imports any."""
    external = []
    for path in site.rglob("*.html"):
        parser = _External()
        parser.feed(path.read_text(encoding="utf-8"))
        external += [f"{path.relative_to(site)}: {x}" for x in parser.found]
    for path in site.rglob("*.css"):
        text = path.read_text(encoding="utf-8")
        found = re.findall(r"(?:@import|url\()\s*['\"]?(?:https?:)?//[^)'\"]+", text)
        external += [f"{path.relative_to(site)}: {m}" for m in found]
    assert not external, external
    assert "fonts.googleapis" not in page_text(site, "getting-started")


def test_schedules_page_shows_the_registry_table(site):
    """The schedule table is generated at build time: every schedule's name, formulas and numbers at
    p = 8, m = 32, exactly as ``schedule_table()`` gives them."""
    shown = html_rows(page_text(site, "schedules"))
    expected = markdown_rows(schedule_table())
    assert [row[0] for row in expected[1:]] == list(REGISTRY)
    for row in expected:
        assert row in shown, row[0]


@pytest.mark.parametrize("table", [calibration.readme_tables, calibration.h100_table, calibration_sc21.table],
                         ids=["a100", "h100", "sc21"])  # fmt: skip
def test_validation_page_shows_the_calibration_tables(site, table):
    """The tables against published figures are the calibration modules' output, row for row."""
    shown = html_rows(page_text(site, "real-units/validation"))
    expected = markdown_rows(table())
    assert expected
    for row in expected:
        assert row in shown, row[0]


def test_calibration_page_shows_the_v100_table(site):
    """The fit on one Jean Zay run and its predictions of the others are calibration_v100's output."""
    shown = html_rows(page_text(site, "real-units/calibration"))
    for table in (calibration_v100.table, calibration_v100.each_fit_table):
        expected = markdown_rows(table())
        assert len(expected) == 1 + len(calibration_v100.RUNS)
        for row in expected:
            assert row in shown, row[0]


def test_performance_page_shows_each_bench_json(site):
    """Each committed bench JSON (written by a bench script's --json) is a table on the performance
    page, with the command that made it."""
    page = page_text(site, "performance")
    shown = html_rows(page)
    for path in sorted((DOCS / "bench").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["columns"] in shown, path.name
        assert len(data["loadavg"]) == 3 and html.escape(data["command"], quote=False) in page, path.name
        assert len(shown[shown.index(data["columns"]) + 1 :]) >= len(data["rows"])


def walkthrough_commands() -> list[str]:
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    return [line[2:] for block in CONSOLE.findall(text) for line in block.splitlines() if line.startswith("$ ")]


def test_walkthrough_runs_word_for_word_and_prints_what_the_page_shows(site, tmp_path):
    """Each ``$ ppviz ...`` command of Getting started exits 0 and prints exactly the output under it
    on the built page (the search's own timing aside); ``ppviz render`` writes its page."""
    commands = walkthrough_commands()
    assert [c.split()[1] for c in commands] == ["presets", "search", "estimate", "render", "simulate"]
    blocks = [without_timing(b) for b in code_blocks(page_text(site, "getting-started"))]
    for command in commands:
        done = ppviz_cli(command, tmp_path)
        assert done.returncode == 0, f"{command}: {done.stderr}"
        printed = f"$ {command}\n{without_timing(done.stdout).rstrip()}"
        assert any(printed in b for b in blocks), command
    assert (tmp_path / "layout.html").stat().st_size > 10_000


def test_walkthrough_estimates_the_layout_the_search_ranks_first(tmp_path):
    """Step 3 is the top row of step 2: its ``ppviz estimate`` command is the row's own ``command``."""
    search = next(c for c in walkthrough_commands() if c.startswith("ppviz search"))
    done = ppviz_cli(f"{search} --json", tmp_path)
    top = json.loads(done.stdout)["layouts"][0]
    assert top["command"] in walkthrough_commands()


def test_readme_is_a_landing_page_of_at_most_150_lines():
    assert len(README.splitlines()) <= 150
    for page in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / page).is_file(), page


def test_readme_keeps_the_two_commands():
    """The set-up-and-run commands of the app and of every test, as they always were."""
    assert "```bash\nbash scripts/run.sh\n```" in README
    assert "```bash\nbash scripts/test.sh\n```" in README


def test_readme_cli_example_runs(tmp_path):
    """The README's ``ppviz`` commands run as written."""
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    commands = [line for block in blocks for line in block.splitlines() if line.startswith("ppviz ")]
    assert commands
    for command in commands:
        done = ppviz_cli(command, tmp_path)
        assert done.returncode == 0, f"{command}: {done.stderr}"
        assert done.stdout.strip()


@pytest.mark.parametrize("source", ["README.md", "docs/python-api.md"])
def test_python_examples_run(source, tmp_path):
    """The Python examples of the README and of the Python API page run as written, in order."""
    text = (ROOT / source).read_text(encoding="utf-8")
    code = "\n".join(re.findall(r"```python\n(.*?)```", text, re.S))
    assert code
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
