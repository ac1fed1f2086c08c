"""The test tiers live in pyproject.toml, so a bare `pytest` (not only `make test`) runs the
default tier: slow and gpu tests are deselected unless asked for, and selected gpu tests skip
without CUDA (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = ("tests/slow/test_default_model.py", "tests/bench/test_bench_gpu.py")


def collect(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--collect-only", "-q", *args, *FILES],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr


def test_a_bare_pytest_deselects_slow_and_gpu_tests() -> None:
    out = collect()
    assert "no tests collected" in out and "deselected" in out, out


def test_asking_for_the_slow_tier_selects_it_alone() -> None:
    out = collect("-m", "slow")
    assert "tests/slow/" in out and "test_bench_gpu" not in out, out


class Item:
    def __init__(self, *marks: str) -> None:
        self.marks, self.added = marks, []  # type: ignore[var-annotated]

    def get_closest_marker(self, name: str) -> Any:
        return name if name in self.marks else None

    def add_marker(self, mark: Any) -> None:
        self.added.append(mark)


@pytest.mark.parametrize("cuda", [False, True])
def test_selected_gpu_tests_skip_without_cuda(cuda: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    import conftest

    monkeypatch.setattr(conftest, "_has_cuda", lambda: cuda)
    gpu, cpu = Item("gpu"), Item("slow")
    conftest.pytest_collection_modifyitems(None, [gpu, cpu])  # type: ignore[arg-type, list-item]
    assert cpu.added == []
    assert [m.kwargs["reason"] for m in gpu.added] == ([] if cuda else ["needs a CUDA device"])
