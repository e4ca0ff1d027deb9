"""What ``import ppviz`` and each command load: only what they use (issue 22 §5). Behaviour, not
timing: each case runs in a fresh interpreter and reads its ``sys.modules``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ppviz
from ppviz.__main__ import COMMANDS, _parser, _subparser

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("ppviz.estimate", "ppviz.search", "ppviz.measured", "ppviz.figures", "ppviz.web", "plotly", "numba", "dash")

LOADED = """
import json, runpy, sys
sys.argv = ["ppviz", *json.loads(sys.argv[1])]
try:
    runpy.run_module("ppviz", run_name="__main__") if len(sys.argv) > 1 else __import__("ppviz")
except SystemExit:
    pass
sys.stdout.flush()
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""


def loaded(*argv: str) -> set[str]:
    """The modules a fresh interpreter holds after ``ppviz ARGV`` (after ``import ppviz`` alone with no ARGV)."""
    r = subprocess.run([sys.executable, "-c", LOADED, json.dumps(argv)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    return set(json.loads(r.stderr.rpartition("MODULES ")[2]))


def loaded_by_bare_ppviz() -> set[str]:
    """The modules after ``ppviz`` with no arguments (it prints the help)."""
    code = "import contextlib, io, json, sys\nimport ppviz.__main__ as cli\n"
    code += "with contextlib.redirect_stdout(io.StringIO()): cli.main([])\nprint(json.dumps(sorted(sys.modules)))"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return set(json.loads(r.stdout))


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.startswith(HEAVY)}


def test_import_ppviz_loads_neither_numpy_nor_any_layer():
    modules = loaded()
    assert "ppviz" in modules and "numpy" not in modules and heavy(modules) == set()


@pytest.mark.parametrize("argv", [["--help"], []])
def test_the_help_loads_no_command(argv):
    modules = loaded(*argv) if argv else loaded_by_bare_ppviz()
    assert "numpy" not in modules and heavy(modules) == set()
    assert not {m for m in modules if m.startswith(("ppviz.schedules", "ppviz.simulator", "ppviz.api"))}


CORE_COMMANDS = [["simulate", "1f1b", "-p", "4", "-m", "8"], ["simulate", "zb-v", "-p", "4", "-m", "8", "--json"],
                 ["list", "--json"]]  # fmt: skip


@pytest.mark.parametrize("argv", CORE_COMMANDS)
def test_simulate_and_list_load_only_the_core(argv):
    modules = loaded(*argv)
    assert "ppviz.simulator" in modules and heavy(modules) == set()


def test_a_command_loads_its_own_layer():
    measured, presets = loaded("measured", "--help"), loaded("presets")
    assert "ppviz.measured.cli" in measured and not {
        m for m in measured if m.startswith(("ppviz.estimate", "ppviz.search"))
    }
    assert "ppviz.estimate.cli" in presets and not {m for m in presets if m.startswith(("ppviz.measured", "plotly"))}


def test_every_public_name_imports_and_the_functions_keep_their_names():
    for name in ppviz.__all__:
        assert getattr(ppviz, name) is not None
    from ppviz.estimate import Layout  # the subpackages load: the names stay the functions
    from ppviz.search import engine

    assert callable(ppviz.estimate) and callable(ppviz.search) and Layout and engine
    from ppviz import estimate, search

    assert estimate.__module__ == "ppviz.estimate.iteration" and search.__module__ == "ppviz.search.engine"
    assert set(ppviz.__all__) <= set(dir(ppviz))
    with pytest.raises(AttributeError):
        _ = ppviz.no_such_name


def test_a_stand_in_for_a_shadowed_function_is_kept(monkeypatch):
    monkeypatch.setattr(ppviz, "estimate", len)
    assert ppviz.estimate is len
    monkeypatch.undo()
    assert ppviz.estimate.__module__ == "ppviz.estimate.iteration"


def _helps(parser) -> dict[str, str]:
    action = next(a for a in parser._actions if a.dest == "command")
    return {a.dest: a.help for a in action._choices_actions}


def test_the_help_lines_without_a_command_are_each_command_own():
    full, light = _helps(_parser()), _helps(_parser("--help"))
    assert list(light) == list(COMMANDS) and light == {name: full[name] for name in light}
    for name in COMMANDS:  # each command's own parser is the one the whole CLI builds
        assert _subparser(_parser(name), name).format_help() == _subparser(_parser(), name).format_help()
