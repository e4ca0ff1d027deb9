"""The README stays true: its schedule table is the code's output and names every schedule."""

from pathlib import Path

from ppviz import REGISTRY
from ppviz.report import schedule_table

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_readme_schedule_table_matches_the_code():
    start = README.index("<!-- schedule-table:start -->\n") + len("<!-- schedule-table:start -->\n")
    end = README.index("<!-- schedule-table:end -->")
    assert README[start:end] == schedule_table(), "run: python scripts/update_readme.py"


def test_readme_names_every_schedule():
    missing = [name for name in REGISTRY if f"`{name}`" not in README]
    assert not missing


def test_readme_front_matter_declares_a_docker_space_on_port_7860():
    head = README.split("---")[1]
    assert "sdk: docker" in head and "app_port: 7860" in head and "emoji:" in head and "title:" in head
