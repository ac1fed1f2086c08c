"""Git versioning: commit -> edit -> commit -> rollback restores the folder byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import git
import pytest

from hatkit.harness import load_harness
from hatkit.harness.diff import diff_harnesses
from hatkit.harness.hashing import harness_files
from hatkit.harness.versioning import HarnessRepo, VersioningError


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def repo_harness(tmp_path: Path, reference_harness: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    repo = git.Repo.init(root)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Test")
        cw.set_value("user", "email", "test@example.invalid")
    (root / "README.md").write_text("unrelated\n")
    folder = root / "harnesses" / "live"
    shutil.copytree(reference_harness, folder)
    return folder


def test_commit_edit_commit_rollback_is_byte_exact(repo_harness: Path) -> None:
    repo = HarnessRepo(repo_harness)
    first = repo.commit("week 48 rules")
    v1 = _snapshot(repo_harness)
    assert first.harness_hash == load_harness(repo_harness).content_hash

    spec = repo_harness / "harness.yaml"
    spec.write_text(spec.read_text().replace("free_shipping_threshold: 99",
                                             "free_shipping_threshold: 79"))
    (repo_harness / "skills" / "after_sales" / "SKILL.md").unlink()
    (repo_harness / "skills" / "after_sales" / "SKILL.zh.md").unlink()
    (repo_harness / "skills" / "after_sales").rmdir()
    spec.write_text(spec.read_text().replace(", after_sales,", ","))
    (repo_harness / "skills" / "gift_wrap").mkdir()
    (repo_harness / "skills" / "gift_wrap" / "SKILL.md").write_text(
        "---\nname: gift_wrap\ndescription: Gift wrapping questions.\n---\nSay it costs $3.\r\n")
    second = repo.commit("week 49 rules")
    assert second.harness_hash != first.harness_hash
    assert _snapshot(repo_harness) != v1

    restored = repo.rollback(first.sha)
    assert _snapshot(repo_harness) == v1
    assert restored == first.harness_hash
    assert not repo.is_dirty()
    log = repo.log()
    assert [e.subject for e in log][:3] == [f"Roll back harness to {first.sha[:12]}",
                                            "week 49 rules", "week 48 rules"]


def test_commit_only_touches_the_harness_folder(repo_harness: Path) -> None:
    repo = HarnessRepo(repo_harness)
    repo.repo.git.add("README.md")  # staged by the user, not part of the harness
    repo.commit("initial")
    assert repo.repo.git.show("--name-only", "--format=", "HEAD").count("README.md") == 0
    (repo_harness / "prompts" / "system.j2").write_text(
        (repo_harness / "prompts" / "system.j2").read_text() + "\nBe kind.\n")
    repo.commit("prompt tweak")
    changed = repo.repo.git.show("--name-only", "--format=", "HEAD").split()
    assert changed == ["harnesses/live/prompts/system.j2"]
    assert "README.md" in repo.repo.git.diff("--cached", "--name-only")  # still staged


def test_invalid_harness_is_not_committed(repo_harness: Path) -> None:
    repo = HarnessRepo(repo_harness)
    (repo_harness / "prompts" / "system.j2").write_text("{{ undefined_thing }}\n")
    with pytest.raises(Exception, match="undefined template variable"):
        repo.commit("broken")
    assert not repo.repo.head.is_valid()


def test_nothing_to_commit_and_dirty_rollback_are_refused(repo_harness: Path) -> None:
    repo = HarnessRepo(repo_harness)
    first = repo.commit("initial")
    with pytest.raises(VersioningError, match="nothing to commit"):
        repo.commit("again")
    (repo_harness / "notes.txt").write_text("scratch\n")
    with pytest.raises(VersioningError, match="uncommitted changes"):
        repo.rollback(first.sha)
    repo.rollback(first.sha, force=True)
    assert not (repo_harness / "notes.txt").exists()


def test_tag_and_diff_between_versions(repo_harness: Path, tmp_path: Path) -> None:
    repo = HarnessRepo(repo_harness)
    repo.commit("v1")
    repo.tag("week-48", message="rules for week 48")
    spec = repo_harness / "harness.yaml"
    spec.write_text(spec.read_text().replace("return_window_days: 30", "return_window_days: 14")
                    .replace("max_turns: 8", "max_turns: 4"))
    hooks = repo_harness / "hooks" / "style.yaml"
    hooks.write_text(hooks.read_text().replace("action: truncate", "action: veto"))
    repo.commit("v2")
    assert repo.log()[1].tags == ("week-48",)
    a = load_harness(repo.materialize("week-48", tmp_path / "a"))
    b = load_harness(repo.materialize("HEAD", tmp_path / "b"))
    d = diff_harnesses(a, b)
    text = "\n".join(d.lines())
    assert "~ return_window_days: 30 -> 14" in text
    assert "~ limits.max_turns: 8 -> 4" in text
    assert "~ live_reply_length" in text
    assert '- "action": "truncate"' in text
    sections = {c.section for c in d.changes}
    assert sections == {"rules", "settings", "hooks"}
    assert diff_harnesses(a, a).empty


def test_outside_git_is_a_clear_error(reference_harness: Path) -> None:
    with pytest.raises(VersioningError, match="not inside a git repository"):
        HarnessRepo(reference_harness)


def test_unknown_revision(repo_harness: Path) -> None:
    repo = HarnessRepo(repo_harness)
    repo.commit("v1")
    with pytest.raises(VersioningError, match="unknown revision 'nope'"):
        repo.rollback("nope")


def test_diff_shows_tool_code_changes(reference_harness: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(reference_harness, other)
    shop = other / "tools" / "shop.py"
    shop.write_text(shop.read_text().replace('"ships_from": p.shipping.ships_from,',
                                             '"ships_from": p.shipping.ships_from.upper(),'))
    d = diff_harnesses(load_harness(reference_harness), load_harness(other))
    assert [(c.section, c.name) for c in d.changes] == [("tools", "get_shipping_info")]
    assert any(line.startswith("+") and ".upper()" in line for line in d.changes[0].detail)


LITTER = (".harness.yaml.tmp-4242", "skills/.SKILL.md.swp", "notes.txt~", "tools/x.pyc", "old.bak")


def _tree(repo: HarnessRepo, rev: str = "HEAD") -> list[str]:
    return sorted(repo.repo.git.ls_tree("-r", "--name-only", rev, "--", repo.rel).split())


def _hashed(repo: HarnessRepo) -> list[str]:
    return sorted(f"{repo.rel}/{p.relative_to(repo.folder).as_posix()}"
                  for p in harness_files(repo.folder))


def test_commit_stores_exactly_what_the_hash_covers(repo_harness: Path, tmp_path: Path) -> None:
    """A crashed atomic write leaves `.harness.yaml.tmp-<pid>`; `git add -A` committed it."""
    repo = HarnessRepo(repo_harness)
    for rel in LITTER:
        (repo_harness / rel).write_text("litter\n")
    entry = repo.commit("v1")
    assert _tree(repo) == _hashed(repo)
    assert load_harness(repo.materialize("HEAD", tmp_path / "m")).content_hash == entry.harness_hash
    assert not repo.is_dirty()  # litter is not a change to the harness
    with pytest.raises(VersioningError, match="nothing to commit"):
        repo.commit("again")


def test_tracked_files_that_are_not_harness_files_are_left_as_they_are(repo_harness: Path) -> None:
    """A `.gitattributes` in the folder belongs to git, not the harness: kept, not deleted."""
    repo = HarnessRepo(repo_harness)
    repo.commit("v1")
    (repo_harness / ".gitattributes").write_text("*.j2 text\n")
    repo.repo.git.add(str(repo_harness / ".gitattributes"))
    repo.repo.git.commit("-m", "by hand")
    (repo_harness / ".gitattributes").write_text("*.j2 text eol=lf\n")
    spec = repo_harness / "harness.yaml"
    spec.write_text(spec.read_text().replace("max_turns: 8", "max_turns: 7"))
    (repo_harness / "skills" / "after_sales" / "SKILL.zh.md").unlink()
    repo.commit("v2")
    assert _tree(repo) == sorted([*_hashed(repo), f"{repo.rel}/.gitattributes"])
    assert repo.repo.git.show(f"HEAD:{repo.rel}/.gitattributes") == "*.j2 text"


def test_rollback_commits_no_litter(repo_harness: Path) -> None:
    repo = HarnessRepo(repo_harness)
    first = repo.commit("v1")
    spec = repo_harness / "harness.yaml"
    spec.write_text(spec.read_text().replace("max_turns: 8", "max_turns: 7"))
    repo.commit("v2")
    (repo_harness / ".harness.yaml.tmp-4242").write_text("half a file\n")
    assert not repo.is_dirty()
    repo.rollback(first.sha)
    assert _tree(repo) == _hashed(repo) == _tree(repo, first.sha)


def test_a_link_inside_the_folder_round_trips_as_a_link(repo_harness: Path, tmp_path: Path) -> None:
    (repo_harness / "notes.j2").symlink_to("prompts/system.j2")
    repo = HarnessRepo(repo_harness)
    entry = repo.commit("v1")
    out = repo.materialize("HEAD", tmp_path / "m")
    assert (out / "notes.j2").is_symlink()
    assert load_harness(out).content_hash == entry.harness_hash


def test_git_refusals_are_versioning_errors(repo_harness: Path) -> None:
    repo = HarnessRepo(repo_harness)
    repo.commit("v1")
    with pytest.raises(VersioningError, match="not a valid tag name"):
        repo.tag("bad name")
