"""A harness folder is untrusted input: links that leave it, names that walk out of it, files
that are not UTF-8, unreadable or huge all end in one HarnessError naming the file (and line),
never in a traceback or a silent import."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import IO, Any

import pytest
from typer.testing import CliRunner

from hatkit.cli import app
from hatkit.harness import HarnessError, load_harness
from hatkit.harness.hashing import canonical_bytes
from hatkit.harness.loader import MAX_FILE_BYTES_ENV

TOOL = ("from hatkit.harness import tool\n\n"
        "open({marker!r}, 'w').write('imported')\n\n"
        "@tool\ndef evil() -> str:\n    \"\"\"Run outside code.\"\"\"\n    return 'x'\n")


def _problems(folder: Path, **kwargs: int) -> list[str]:
    with pytest.raises(HarnessError) as info:
        load_harness(folder, **kwargs)
    return [str(p) for p in info.value.problems]


def test_a_tool_linked_from_outside_is_refused_not_imported(minimal_harness: Path,
                                                            tmp_path: Path) -> None:
    marker = tmp_path / "imported.txt"
    outside = tmp_path / "elsewhere" / "evil.py"
    outside.parent.mkdir()
    outside.write_text(TOOL.format(marker=str(marker)))
    (minimal_harness / "tools" / "evil.py").symlink_to(outside)
    found = _problems(minimal_harness)
    assert any(p.startswith("tools/evil.py: ") and "outside the harness folder" in p
               for p in found), found
    assert not marker.exists()


@pytest.mark.parametrize("rel", ["harness.yaml", "prompts/system.j2", "skills/greet/SKILL.md",
                                 "hooks/rules.yaml", "skills/greet", "tools", "notes.md"])
def test_every_file_or_folder_linked_from_outside_is_refused(rel: str, minimal_harness: Path,
                                                             tmp_path: Path) -> None:
    inside = minimal_harness / rel
    outside = tmp_path / "outside" / rel
    outside.parent.mkdir(parents=True)
    if inside.exists():
        shutil.move(inside, outside)
    else:
        outside.write_text("notes\n")
    inside.symlink_to(outside)
    found = _problems(minimal_harness)
    assert any(p.startswith(f"{rel}: ") and "outside the harness folder" in p for p in found), found


def test_links_inside_the_folder_are_allowed_and_folder_links_are_not(minimal_harness: Path) -> None:
    (minimal_harness / "notes.j2").symlink_to("prompts/system.j2")
    load_harness(minimal_harness)
    (minimal_harness / "prompts" / "more").symlink_to("../skills", target_is_directory=True)
    assert any(p.startswith("prompts/more: ") and "link to a folder" in p
               for p in _problems(minimal_harness))


def test_a_broken_link_is_reported(minimal_harness: Path) -> None:
    (minimal_harness / "hooks" / "gone.yaml").symlink_to("nowhere.yaml")
    assert any(p.startswith("hooks/gone.yaml: ") for p in _problems(minimal_harness))


@pytest.mark.parametrize("field,name", [("skills", "../../x"), ("skills", "a/b"),
                                        ("tools", "../lookup"), ("hooks", "..")])
def test_enabled_names_cannot_walk_out_of_their_folder(field: str, name: str,
                                                       minimal_harness: Path, tmp_path: Path) -> None:
    escaped = tmp_path / "x"  # skills/../../x/SKILL.md exists: it was loaded, then KeyError
    escaped.mkdir()
    (escaped / "SKILL.md").write_text("---\nname: x\ndescription: y\n---\nbody\n")
    spec = minimal_harness / "harness.yaml"
    line = {"skills": 8, "tools": 9, "hooks": 10}[field]
    spec.write_text(spec.read_text().replace(f"  {field}: [", f"  {field}: ['{name}', "))
    found = _problems(minimal_harness)
    assert any(p.startswith(f"harness.yaml:{line}: ") and name in p for p in found), found


@pytest.mark.parametrize("rel,line", [("harness.yaml", 3), ("prompts/system.j2", 2),
                                      ("skills/greet/SKILL.md", 5), ("hooks/rules.yaml", 2)])
def test_a_file_that_is_not_utf8_names_file_and_line(rel: str, line: int,
                                                     minimal_harness: Path) -> None:
    path = minimal_harness / rel
    lines = path.read_bytes().split(b"\n")
    lines[line - 1] += b" caf\xe9"  # Latin-1, as an editor on another system might save it
    path.write_bytes(b"\n".join(lines))
    found = _problems(minimal_harness)
    assert any(p.startswith(f"{rel}:{line}: ") and "UTF-8" in p for p in found), found


def test_a_binary_tool_file_names_the_file(minimal_harness: Path) -> None:
    (minimal_harness / "tools" / "blob.py").write_bytes(b"\x00\x01\xff\xfe" * 64)
    assert any(p.startswith("tools/blob.py") for p in _problems(minimal_harness))


def test_an_unreadable_file_names_the_file(minimal_harness: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests may run as root, where chmod 000 still reads: fail the read itself."""
    target = minimal_harness / "skills" / "greet" / "SKILL.md"
    real = Path.open

    def open_(self: Path, *args: Any, **kwargs: Any) -> IO[Any]:
        if self == target:
            raise PermissionError(13, "Permission denied", str(self))
        handle: IO[Any] = real(self, *args, **kwargs)
        return handle

    monkeypatch.setattr(Path, "open", open_)
    found = _problems(minimal_harness)
    assert any(p.startswith("skills/greet/SKILL.md: ") and "Permission denied" in p
               for p in found), found


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_on_disk_names_the_file(minimal_harness: Path) -> None:
    target = minimal_harness / "prompts" / "system.j2"
    target.chmod(0)
    try:
        assert any(p.startswith("prompts/system.j2: ") for p in _problems(minimal_harness))
    finally:
        target.chmod(0o644)


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
        minimal_harness: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = minimal_harness / "skills" / "greet" / "SKILL.md"
    with big.open("a") as fh:
        fh.write("padding " * 140_000)  # just over 1 MiB
    real = Path.open

    def open_(self: Path, *args: Any, **kwargs: Any) -> IO[Any]:
        assert self != big, "the oversized file was opened"
        handle: IO[Any] = real(self, *args, **kwargs)
        return handle

    monkeypatch.setattr(Path, "open", open_)
    found = _problems(minimal_harness)
    assert any(p.startswith("skills/greet/SKILL.md: ") and "limit" in p for p in found), found
    monkeypatch.undo()
    assert load_harness(minimal_harness, max_file_bytes=2 << 20).skills["greet"]


def test_the_size_limit_can_be_set_by_environment(minimal_harness: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_FILE_BYTES_ENV, "100")
    assert any(p.startswith("harness.yaml: ") and "100-byte limit" in p
               for p in _problems(minimal_harness))
    monkeypatch.setenv(MAX_FILE_BYTES_ENV, "lots")
    assert any(MAX_FILE_BYTES_ENV in p for p in _problems(minimal_harness))


def test_a_state_module_that_fails_on_import_is_a_problem(
        minimal_harness: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken_state_mod.py").write_text("raise RuntimeError('no database')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = minimal_harness / "harness.yaml"
    spec.write_text(spec.read_text() + "state: 'broken_state_mod:State'\n")
    assert any(p.startswith("harness.yaml:") and "no database" in p
               for p in _problems(minimal_harness))


def _yaml_bomb(levels: int) -> str:
    """A few lines whose aliases expand to 10**levels values."""
    out = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    out += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(out) + "\n"


def test_yaml_aliases_are_refused_and_never_expanded(minimal_harness: Path) -> None:
    spec = minimal_harness / "harness.yaml"
    spec.write_text(spec.read_text() + _yaml_bomb(5))
    assert any(p.startswith("harness.yaml:") and "aliases" in p for p in _problems(minimal_harness))
    spec.write_text(spec.read_text().split("a0:")[0])
    (minimal_harness / "data.yaml").write_text(_yaml_bomb(12))  # hashed, not loaded
    assert canonical_bytes("data.yaml", _yaml_bomb(12).encode()) == _yaml_bomb(12).encode()
    load_harness(minimal_harness)


def test_a_fifo_is_refused_not_waited_on(minimal_harness: Path) -> None:
    os.mkfifo(minimal_harness / "prompts" / "pipe.j2")
    assert any(p.startswith("prompts/pipe.j2: ") and "not a regular file" in p
               for p in _problems(minimal_harness))


def test_files_the_hash_ignores_are_not_loaded(minimal_harness: Path, tmp_path: Path) -> None:
    """A hidden tools/.x.py was imported though the content hash skips it."""
    marker = tmp_path / "imported.txt"
    before = load_harness(minimal_harness).content_hash
    (minimal_harness / "tools" / ".sneaky.py").write_text(TOOL.format(marker=str(marker)))
    (minimal_harness / "hooks" / ".extra.yaml").write_text("rules: [oops\n")
    h = load_harness(minimal_harness)
    assert not marker.exists() and "evil" not in h.tools
    assert h.content_hash == before


runner = CliRunner()


def test_cli_prints_problems_not_a_traceback(minimal_harness: Path) -> None:
    (minimal_harness / "prompts" / "system.j2").write_bytes(b"Hello\n\xff\xfe\n")
    (minimal_harness / "tools" / "link.py").symlink_to("/etc/hostname")
    for command in ("validate", "hash", "show", "render"):
        result = runner.invoke(app, ["harness", command, str(minimal_harness)])
        assert result.exit_code == 1, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert "Traceback" not in result.output
        assert "prompts/system.j2:2: " in result.output
        assert "tools/link.py: " in result.output
