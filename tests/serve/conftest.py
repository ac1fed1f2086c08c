"""Fixtures of the server tests."""

from __future__ import annotations

import pytest

from hatkit.harness import Harness, load_harness


@pytest.fixture(scope="session")
def lc() -> Harness:
    return load_harness("live_commerce")
