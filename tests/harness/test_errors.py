"""Each broken fixture harness fails with the expected file, line and message, and nothing
is half-loaded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from conftest import FIXTURES
from hatkit.harness import HarnessError, load_harness

BROKEN = sorted(p for p in (FIXTURES / "broken").iterdir() if p.is_dir())


def _overlay(case: Path, dest: Path) -> None:
    for src in case.rglob("*"):
        if src.is_file() and src.name != "expect.yaml":
            target = dest / src.relative_to(case)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)


@pytest.mark.parametrize("case", BROKEN, ids=[p.name for p in BROKEN])
def test_broken_fixture_reports_file_line_message(case: Path, minimal_harness: Path) -> None:
    expect = yaml.safe_load((case / "expect.yaml").read_text())
    _overlay(case, minimal_harness)
    with pytest.raises(HarnessError) as info:
        load_harness(minimal_harness)
    found = [(p.file, p.line, p.message) for p in info.value.problems]
    assert any(f == expect["file"] and line == expect["line"] and expect["message"] in m
               for f, line, m in found), found
    assert f"{expect['file']}:{expect['line']}" in str(info.value)


def test_fixture_set_covers_every_kind_of_error() -> None:
    names = {p.name for p in BROKEN}
    for needed in ("unknown_key", "missing_field", "skill_enabled_absent", "tool_enabled_absent",
                   "undefined_prompt_variable", "tool_unschemable_type", "hook_unknown_tool"):
        assert needed in names


def test_all_problems_are_reported_together(minimal_harness: Path) -> None:
    (minimal_harness / "prompts" / "system.j2").write_text("{{ nope }}\n")
    rules = (minimal_harness / "hooks" / "rules.yaml").read_text()
    (minimal_harness / "hooks" / "rules.yaml").write_text(rules.replace("[reserve]", "[refund]"))
    with pytest.raises(HarnessError) as info:
        load_harness(minimal_harness)
    files = {p.file for p in info.value.problems}
    assert files == {"prompts/system.j2", "hooks/rules.yaml"} or "hooks/rules.yaml" in files


def test_missing_harness_yaml(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"missing harness\.yaml"):
        load_harness(tmp_path)


def test_unknown_name_or_path() -> None:
    with pytest.raises(FileNotFoundError, match="no harness folder"):
        load_harness("no_such_harness_anywhere")


def test_render_unknown_locale_is_refused() -> None:
    harness = load_harness("live_commerce")
    with pytest.raises(ValueError, match="has no locale 'fr'"):
        harness.render("fr")


def test_a_template_in_skill_front_matter_is_a_clear_error_not_a_crash(minimal_harness: Path) -> None:
    """`{{ tool.x }}` at the start of a front-matter line is a YAML mapping key (was TypeError)."""
    skill = next((minimal_harness / "skills").glob("*/SKILL.md"))
    text = skill.read_text()
    skill.write_text(text.replace("---\n", "---\n{{ tool.lookup }}: x\n", 1))
    with pytest.raises(HarnessError) as info:
        load_harness(minimal_harness)
    assert "SKILL.md:2" in str(info.value) and "a key must be plain text" in str(info.value)
