"""The README stays a landing page that names every schedule (the schedule table itself is on the
handbook's Schedules page: tests/test_docs.py)."""

from pathlib import Path

from ppviz import REGISTRY

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_readme_names_every_schedule():
    missing = [name for name in REGISTRY if f"`{name}`" not in README]
    assert not missing


def test_readme_front_matter_declares_a_docker_space_on_port_7860():
    head = README.split("---")[1]
    assert "sdk: docker" in head and "app_port: 7860" in head and "emoji:" in head and "title:" in head
