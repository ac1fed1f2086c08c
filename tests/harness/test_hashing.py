"""The content hash means "same harness": stable across copies, key order and line endings;
different when anything the model or runtime sees changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from hatkit.harness import load_harness
from hatkit.harness.hashing import content_hash


def _hash(path: Path) -> str:
    return load_harness(path).content_hash


def test_stable_across_a_copy(reference_harness: Path, tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere" / "deeper"
    shutil.copytree(reference_harness, copy)
    assert _hash(copy) == _hash(reference_harness)
    assert len(_hash(copy)) == 64


def test_stable_across_yaml_key_reorder(reference_harness: Path) -> None:
    before = _hash(reference_harness)
    spec = reference_harness / "harness.yaml"
    data = yaml.safe_load(spec.read_text())
    reordered = {k: data[k] for k in reversed(list(data))}
    reordered["rules"] = {k: data["rules"][k] for k in reversed(list(data["rules"]))}
    spec.write_text(yaml.safe_dump(reordered, sort_keys=False, allow_unicode=True))
    assert spec.read_text().splitlines()[0].startswith("render:")
    assert _hash(reference_harness) == before


def test_stable_across_crlf_line_endings(reference_harness: Path) -> None:
    before = _hash(reference_harness)
    for path in reference_harness.rglob("*"):
        if path.is_file():
            path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert b"\r\n" in (reference_harness / "prompts" / "system.j2").read_bytes()
    assert _hash(reference_harness) == before


def test_stable_across_file_creation_order(minimal_harness: Path, tmp_path: Path) -> None:
    files = sorted(p for p in minimal_harness.rglob("*") if p.is_file())
    rebuilt = tmp_path / "rebuilt"
    for src in reversed(files):  # create in the opposite order
        dest = rebuilt / src.relative_to(minimal_harness)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(src.read_bytes())
    assert content_hash(rebuilt) == content_hash(minimal_harness)


def test_ignores_caches_and_dotfiles(minimal_harness: Path) -> None:
    before = content_hash(minimal_harness)
    (minimal_harness / "tools" / "__pycache__").mkdir()
    (minimal_harness / "tools" / "__pycache__" / "basic.cpython-311.pyc").write_bytes(b"\0\1")
    (minimal_harness / ".DS_Store").write_bytes(b"junk")
    assert content_hash(minimal_harness) == before


def test_changes_when_any_rule_value_changes(reference_harness: Path) -> None:
    before = _hash(reference_harness)
    spec = reference_harness / "harness.yaml"
    original = spec.read_text()
    seen = {before}
    for old, new in [("free_shipping_threshold: 99", "free_shipping_threshold: 98"),
                     ("host_name: Mia", "host_name: Max"),
                     ("standard_shipping_fee: 6.99", "standard_shipping_fee: 7.99"),
                     ("max_coupon_percent: 30", "max_coupon_percent: 25")]:
        spec.write_text(original.replace(old, new))
        h = _hash(reference_harness)
        assert h not in seen, f"hash did not change for {new}"
        seen.add(h)
    spec.write_text(original)
    assert _hash(reference_harness) == before


def test_changes_with_prompt_skill_tool_and_hook_edits(reference_harness: Path) -> None:
    seen = {_hash(reference_harness)}
    edits = [
        ("prompts/system.j2", "warm, concrete", "warm, exact"),
        ("skills/after_sales/SKILL.md", "one-sentence", "short"),
        ("tools/shop.py", "sorted(scored)[:max_results]", "sorted(scored)[:3]"),
        ("hooks/style.yaml", "action: truncate", "action: veto"),
    ]
    for rel, old, new in edits:
        path = reference_harness / rel
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new))
        h = _hash(reference_harness)
        assert h not in seen, rel
        seen.add(h)
