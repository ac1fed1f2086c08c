"""Shared fixtures. No test may reach the network: any non-loopback connect fails loudly.
Tiers (pyproject.toml): slow and gpu tests are deselected by default; gpu tests that are
selected skip when there is no CUDA device."""

from __future__ import annotations

import ipaddress
import shutil
import socket
from pathlib import Path

import pytest

from hatkit.harness import Harness

FIXTURES = Path(__file__).parent / "fixtures"
MINIMAL = FIXTURES / "harnesses" / "minimal"


def _is_loopback(address: object) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return isinstance(address, str | bytes)  # unix sockets are local


@pytest.hookimpl(trylast=True)  # after -m deselection: torch is imported only for gpu tests
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if gpu and not _has_cuda():
        for item in gpu:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA device"))


def _has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> object:
        if not _is_loopback(address):
            raise RuntimeError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def minimal_harness(tmp_path: Path) -> Path:
    """A private copy of the minimal valid fixture harness."""
    dest = tmp_path / "minimal"
    shutil.copytree(MINIMAL, dest)
    return dest


@pytest.fixture
def full_render_harness(reference_harness: Path) -> Path:
    """The shipped harness rendered the long way: every skill body and every argument doc in
    the system prompt (the shipped harness renders an index and terse signatures)."""
    spec = reference_harness / "harness.yaml"
    spec.write_text(spec.read_text().replace("  skills: index\n  tools: terse\n",
                                             "  skills: full\n  tools: full\n"))
    return reference_harness


@pytest.fixture
def reference_harness(tmp_path: Path) -> Path:
    """A private copy of the shipped live_commerce harness."""
    from hatkit.harness import resolve_harness_path

    dest = tmp_path / "live_commerce"
    shutil.copytree(resolve_harness_path("live_commerce"), dest,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return dest


@pytest.fixture(scope="session")
def lc() -> Harness:
    """The shipped live_commerce harness (read-only: copy it before changing anything)."""
    from hatkit.harness import load_harness

    return load_harness("live_commerce")
