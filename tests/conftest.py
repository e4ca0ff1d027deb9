"""Shared fixtures. Browser tests add their hooks (e.g. ``pytest_setup_options``) here too."""

from __future__ import annotations

import pytest
from hypothesis import settings

import ppviz

# Property tests are never timed. A developer's loop draws 20 examples per property; scripts/test.sh (and so
# CI) selects `--hypothesis-profile=full`, 60 each. The web fuzz tests keep their own counts and are `slow`.
settings.register_profile("ppviz", max_examples=20, deadline=None)
settings.register_profile("full", max_examples=60, deadline=None)
settings.load_profile("ppviz")


@pytest.fixture
def tiny_1f1b() -> ppviz.Schedule:
    """1F1B on 2 devices with 2 microbatches: the smallest order with a warm-up and a steady state."""
    return ppviz.build("1f1b", 2, 2)
