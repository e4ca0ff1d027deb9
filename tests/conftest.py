"""Shared fixtures. Browser tests add their hooks (e.g. ``pytest_setup_options``) here too."""

from __future__ import annotations

import pytest
from hypothesis import settings

import ppviz

# Property tests stay modest on this 2-core machine and are never timed.
settings.register_profile("ppviz", max_examples=60, deadline=None)
settings.load_profile("ppviz")


@pytest.fixture
def tiny_1f1b() -> ppviz.Schedule:
    """1F1B on 2 devices with 2 microbatches: the smallest order with a warm-up and a steady state."""
    return ppviz.build("1f1b", 2, 2)
