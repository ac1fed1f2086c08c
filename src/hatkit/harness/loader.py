"""Load a harness folder into one immutable `Harness`, or fail with every problem found.

Nothing is half-loaded: all checks run first, and a `Harness` is built only when none failed.
The folder is untrusted input: every file is read once, within the folder and a size cap, and
the hash covers exactly the bytes that were parsed and run.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import importlib.util
import inspect
import os
import stat
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

from pydantic import ValidationError

from . import prompts as tpl
from .errors import HarnessError, Problem, Problems
from .harness import Harness, system_template
from .hashing import hash_files, is_harness_path, is_ignored_dir
from .hooks import Hook, HookFile, HookRule, MaxReplyLength
from .skills import Skill, SkillParseError, parse_skill
from .spec import HarnessSpec, describe_validation_error
from .tools import ToolSchemaError, ToolSpec, tool_spec
from .yaml_lines import YamlSyntaxError, line_for, load_with_lines

SPEC_FILE = "harness.yaml"
MAX_FILE_BYTES = 1 << 20
"""Default cap on one harness file: prompts and skills are kilobytes; a 50 MB skill took a
minute to validate and would fill every prompt."""
MAX_FILE_BYTES_ENV = "HATKIT_MAX_HARNESS_FILE_BYTES"


def resolve_harness_path(ref: str | Path) -> Path:
    """A folder path, or the name of a shipped reference harness (e.g. 'live_commerce')."""
    path = Path(ref)
    if path.is_dir():
        return path.resolve()
    if isinstance(ref, str) and ref.isidentifier():
        spec = importlib.util.find_spec(f"hatkit.domains.{ref}")
        if spec is not None and spec.submodule_search_locations:
            shipped = Path(spec.submodule_search_locations[0]) / "harness"
            if shipped.is_dir():
                return shipped.resolve()
    raise FileNotFoundError(f"no harness folder or shipped harness named '{ref}'")


def load_harness(ref: str | Path, *, max_file_bytes: int | None = None) -> Harness:
    """Load and validate a harness; raises HarnessError naming file, line and problem.

    A file over `max_file_bytes` (default: $HATKIT_MAX_HARNESS_FILE_BYTES, else 1 MiB) is
    refused before it is read.
    """
    root = resolve_harness_path(ref)
    problems = Problems()
    files = _read_folder(root, _max_file_bytes(root, max_file_bytes), problems)
    if SPEC_FILE not in files and not any(p.file == SPEC_FILE for p in problems.items):
        problems.add(SPEC_FILE, None, "missing harness.yaml")
    lines: dict[Any, int] = {}
    spec = None
    try:
        text = _text(files, SPEC_FILE, problems)
        if text is not None:
            data, lines = load_with_lines(text)
            spec = HarnessSpec.model_validate(data if data is not None else {})
    except YamlSyntaxError as exc:
        problems.add(SPEC_FILE, exc.line, str(exc))
    except ValidationError as exc:
        for line, msg in describe_validation_error(exc, lines):
            problems.add(SPEC_FILE, line, msg)
    if spec is None:  # nothing else can be checked without it
        problems.raise_if_any(root)
    assert spec is not None

    if spec.state is not None:
        _check_state(spec.state, line_for(lines, ("state",)), problems)
    templates = _load_templates(files, spec, lines, problems)
    skills, localized = _load_skills(files, spec, lines, problems)
    tools = _load_tools(root, files, spec, lines, problems)
    rules, classes = _load_hooks(root, files, spec, lines, tools, problems)
    problems.raise_if_any(root)

    ro = MappingProxyType
    harness = Harness(root=root, spec=spec, content_hash=hash_files(files.items()),
                      templates=ro(templates),
                      skills=ro(skills), localized_skills=ro(localized), tools=ro(tools),
                      hook_rules=ro(rules), hook_classes=ro(classes))
    _check_templates(harness, problems)
    problems.raise_if_any(root)
    return harness


def _check_state(ref: str, line: int | None, problems: Problems) -> None:
    from .harness import import_object

    try:
        obj = import_object(ref)
    except Exception as exc:  # noqa: BLE001 - a module that fails on import, not only a typo
        problems.add(SPEC_FILE, line, f"state '{ref}' cannot be imported: {exc}")
        return
    if not callable(obj):
        problems.add(SPEC_FILE, line, f"state '{ref}' is not a class or factory")


def _max_file_bytes(root: Path, given: int | None) -> int:
    raw = os.environ.get(MAX_FILE_BYTES_ENV) if given is None else str(given)
    try:
        value = MAX_FILE_BYTES if raw is None else int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise HarnessError(root, [Problem(MAX_FILE_BYTES_ENV if given is None else "max_file_bytes",
                                          None, f"must be a positive number of bytes, not {raw!r}")])
    return value


def _read_folder(root: Path, max_bytes: int, problems: Problems) -> dict[str, bytes]:
    """The bytes of every harness file (the files the hash covers), each read once.

    Refused, each with a problem: a link that leaves the folder (a commit would store only the
    link, not what was loaded), a link to a folder, anything but a regular file (a FIFO would
    block), a file over `max_bytes` (checked before reading), a file that cannot be read.
    """
    files: dict[str, bytes] = {}

    def unreadable(exc: OSError) -> None:
        rel = Path(exc.filename or root).relative_to(root).as_posix()
        problems.add(rel, None, f"cannot read this folder: {exc.strerror or exc}")

    for top, dirs, names in os.walk(root, onerror=unreadable):
        dirs[:] = [d for d in dirs if not is_ignored_dir(d)]
        for name in sorted(dirs + names):
            path = Path(top, name)
            rel = path.relative_to(root).as_posix()
            if name in names and not is_harness_path(rel):
                continue
            if path.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):  # missing target or a loop
                    problems.add(rel, None, f"is a link to {os.readlink(path)}, which does not exist")
                    continue
                if not target.is_relative_to(root):
                    problems.add(rel, None, f"is a link to {target}, outside the harness folder "
                                 "(a commit would store only the link); copy it in instead")
                    continue
                if target.is_dir():
                    problems.add(rel, None, "is a link to a folder, which is not followed; "
                                 "move or copy the folder in instead")
                    continue
            if name in names and (data := _read_file(path, rel, max_bytes, problems)) is not None:
                files[rel] = data
    return files


def _read_file(path: Path, rel: str, max_bytes: int, problems: Problems) -> bytes | None:
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            problems.add(rel, None, "is not a regular file")
            return None
        if st.st_size <= max_bytes:
            with path.open("rb") as fh:
                data = fh.read(max_bytes + 1)  # the file may have grown since stat
            if len(data) <= max_bytes:
                return data
    except OSError as exc:
        problems.add(rel, None, f"cannot be read: {exc.strerror or exc}")
        return None
    problems.add(rel, None, f"is over the {max_bytes:,}-byte limit for a harness file (raise it "
                 f"with {MAX_FILE_BYTES_ENV} or load_harness(max_file_bytes=...))")
    return None


def _text(files: Mapping[str, bytes], rel: str, problems: Problems) -> str | None:
    """The file as text with normalised line ends, or a problem at the first bad byte's line."""
    data = files.get(rel)
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.add(rel, data[:exc.start].count(b"\n") + 1,
                     f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8")
        return None
    return text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _in(files: Mapping[str, bytes], folder: str, pattern: str) -> list[str]:
    """Files directly in `folder` whose name matches `pattern`, in path order."""
    return sorted(rel for rel in files if rel.startswith(f"{folder}/")
                  and "/" not in (name := rel[len(folder) + 1:]) and fnmatch.fnmatchcase(name, pattern))


def _load_templates(files: Mapping[str, bytes], spec: HarnessSpec, lines: dict[Any, int],
                    problems: Problems) -> dict[str, str]:
    templates = {}
    for rel in sorted(r for r in files if r.startswith("prompts/") and r.endswith(".j2")):
        if (text := _text(files, rel, problems)) is not None:
            templates[rel.removeprefix("prompts/")] = text
    if spec.locale not in spec.locales:
        problems.add(SPEC_FILE, line_for(lines, ("locale",)),
                     f"locale '{spec.locale}' is not in locales {spec.locales}")
    for loc in spec.locales:
        name = system_template(loc, spec.locale)
        if name not in templates and not any(p.file == f"prompts/{name}" for p in problems.items):
            problems.add(f"prompts/{name}", None,
                         f"missing system prompt template for locale '{loc}'")
    return templates


def _load_skills(files: Mapping[str, bytes], spec: HarnessSpec, lines: dict[Any, int],
                 problems: Problems) -> tuple[dict[str, Skill], dict[tuple[str, str], Skill]]:
    skills: dict[str, Skill] = {}
    localized: dict[tuple[str, str], Skill] = {}
    folders = sorted({rel.split("/")[1] for rel in files
                      if rel.startswith("skills/") and rel.count("/") >= 2})
    for folder in (f for f in folders if not f.startswith("_")):
        for rel in _in(files, f"skills/{folder}", "SKILL*.md"):
            name = rel.rsplit("/", 1)[1]
            loc = name[len("SKILL."):-len(".md")] if name != "SKILL.md" else None
            if (text := _text(files, rel, problems)) is None:
                continue
            try:
                skill = parse_skill(text, rel, folder)
            except SkillParseError as exc:
                problems.add(rel, exc.line, str(exc))
                continue
            if loc is None:
                skills[skill.name] = skill
            elif loc not in spec.locales:
                problems.add(rel, None, f"locale '{loc}' is not in harness.yaml locales")
            else:
                localized[(skill.name, loc)] = skill
        if f"skills/{folder}/SKILL.md" not in files:
            problems.add(f"skills/{folder}", None, "skill folder has no SKILL.md")
    for i, name in enumerate(spec.enabled.skills):  # names are plain (spec.py): no '..' or '/'
        if name not in skills and not any(p.file == f"skills/{name}/SKILL.md" for p in problems.items):
            problems.add(SPEC_FILE, line_for(lines, ("enabled", "skills", i)),
                         f"skill '{name}' is enabled but skills/{name}/SKILL.md does not exist")
    return skills, localized


def _import_file(root: Path, rel: str, files: Mapping[str, bytes],
                 problems: Problems) -> ModuleType | None:
    """Run the text that was read (and hashed) as a module under a private name; report
    errors with lines. No bytecode is written (the folder stays clean)."""
    source = _text(files, rel, problems)
    if source is None:
        return None
    path = root / rel
    tag = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"_hatkit_harness_{tag}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        problems.add(rel, None, "cannot import this file")
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    no_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # for what it imports
    try:
        exec(compile(source, str(path), "exec", dont_inherit=True), module.__dict__)
    except SyntaxError as exc:
        problems.add(rel, exc.lineno, f"syntax error: {exc.msg}")
        return None
    except Exception as exc:  # noqa: BLE001 - any error in user code becomes a Problem
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
        problems.add(rel, frames[-1].lineno if frames else None,
                     f"importing failed: {type(exc).__name__}: {exc}")
        return None
    finally:
        sys.dont_write_bytecode = no_bytecode
    return module


def _load_tools(root: Path, files: Mapping[str, bytes], spec: HarnessSpec,
                lines: dict[Any, int], problems: Problems) -> dict[str, ToolSpec]:
    tools: dict[str, ToolSpec] = {}
    for rel in _in(files, "tools", "*.py"):
        module = _import_file(root, rel, files, problems)
        if module is None:
            continue
        for _, fn in inspect.getmembers(module, inspect.isfunction):
            if not hasattr(fn, "__hatkit_tool__") or fn.__module__ != module.__name__:
                continue
            line = fn.__code__.co_firstlineno
            try:
                ts = tool_spec(fn)
            except ToolSchemaError as exc:
                problems.add(rel, line, str(exc))
                continue
            if ts.name in tools:
                problems.add(rel, line, f"tool '{ts.name}' is defined more than once")
            tools[ts.name] = ts
    if any(p.file.startswith("tools/") for p in problems.items):
        return tools  # the enabled-but-absent check would only repeat the file's problem
    tools = _apply_overrides(tools, spec, lines, problems)
    for i, name in enumerate(spec.enabled.tools):
        if name not in tools:
            problems.add(SPEC_FILE, line_for(lines, ("enabled", "tools", i)),
                         f"tool '{name}' is enabled but no @tool named '{name}' exists in tools/")
    return tools


def _apply_overrides(tools: dict[str, ToolSpec], spec: HarnessSpec, lines: dict[Any, int],
                     problems: Problems) -> dict[str, ToolSpec]:
    """Rename / re-describe tools as harness.yaml says; keys become the visible names."""
    by_function = {t.canonical: t for t in tools.values()}
    out: dict[str, ToolSpec] = {}
    for canonical, t in by_function.items():
        o = spec.tool_overrides.get(canonical)
        new = dataclasses.replace(t, name=(o.name or t.name) if o else t.name,
                                  description=(o.description or t.description) if o else t.description)
        if new.name in out:
            problems.add(SPEC_FILE, line_for(lines, ("tool_overrides", canonical, "name")),
                         f"tool name '{new.name}' is used twice")
        out[new.name] = new
    for canonical in spec.tool_overrides:
        if canonical not in by_function and by_function:
            problems.add(SPEC_FILE, line_for(lines, ("tool_overrides", canonical)),
                         f"tool_overrides names '{canonical}', which is not a @tool function in tools/")
    return out


def _load_hooks(root: Path, files: Mapping[str, bytes], spec: HarnessSpec, lines: dict[Any, int],
                tools: dict[str, ToolSpec], problems: Problems,
                ) -> tuple[dict[str, HookRule], dict[str, type[Hook]]]:
    rules: dict[str, HookRule] = {}
    classes: dict[str, type[Hook]] = {}
    tools_failed = any(p.file.startswith("tools/") for p in problems.items)
    for rel in sorted(_in(files, "hooks", "*.yaml") + _in(files, "hooks", "*.yml")):
        if (text := _text(files, rel, problems)) is None:
            continue
        try:
            data, where = load_with_lines(text)
            parsed = HookFile.model_validate(data if data is not None else {})
        except YamlSyntaxError as exc:
            problems.add(rel, exc.line, str(exc))
            continue
        except ValidationError as exc:
            for line, msg in describe_validation_error(exc, where):
                problems.add(rel, line, msg)
            continue
        for i, rule in enumerate(parsed.rules):
            if isinstance(rule, MaxReplyLength) and isinstance(rule.max_chars, str):
                value = spec.rules.get(rule.max_chars)
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    problems.add(rel, line_for(where, ("rules", i, "max_chars")),
                                 f"max_chars names '{rule.max_chars}', which is not a positive "
                                 "integer rule in harness.yaml")
                    continue
                rule = rule.model_copy(update={"max_chars": value})
            if rule.name in rules:
                problems.add(rel, line_for(where, ("rules", i, "name")),
                             f"hook '{rule.name}' is defined more than once")
            visible = {t.canonical: t.name for t in tools.values()}
            resolved = []
            for j, tool_name in enumerate(rule.tools_referenced()):
                if tool_name in tools:
                    resolved.append(tool_name)
                elif tool_name in visible:  # a function name: follow the harness's rename
                    resolved.append(visible[tool_name])
                elif not tools_failed:
                    problems.add(rel, line_for(where, ("rules", i, "tools", j)),
                                 f"hook '{rule.name}' references unknown tool '{tool_name}'")
            if resolved != rule.tools_referenced():
                rule = rule.model_copy(update={"tools": resolved})
            rules[rule.name] = rule
    for rel in _in(files, "hooks", "*.py"):
        module = _import_file(root, rel, files, problems)
        for _, cls in inspect.getmembers(module or ModuleType("_"), inspect.isclass):
            if issubclass(cls, Hook) and cls is not Hook and cls.__module__ == module.__name__:  # type: ignore[union-attr]
                classes[cls.name or cls.__name__] = cls
    hooks_failed = any(p.file.startswith("hooks/") for p in problems.items)
    for i, name in enumerate(spec.enabled.hooks):
        if name not in rules and name not in classes and not hooks_failed:
            problems.add(SPEC_FILE, line_for(lines, ("enabled", "hooks", i)),
                         f"hook '{name}' is enabled but no rule or Hook class has that name")
    return rules, classes


def _check_templates(h: Harness, problems: Problems) -> None:
    """Undefined variables and render errors, reported at the template's file and line."""
    env = tpl.make_environment(h.templates)
    known = set(h.template_context())
    for name, source in h.templates.items():
        try:
            tpl.check_template(env, source, known | {"skills", "tools"})
        except tpl.TemplateProblem as exc:
            problems.add(f"prompts/{name}", exc.line, str(exc))
    for skill in [*h.skills.values(), *h.localized_skills.values()]:
        try:
            tpl.check_template(env, skill.body, known, line_offset=skill.body_line - 1)
        except tpl.TemplateProblem as exc:
            problems.add(skill.path, exc.line, str(exc))
    if problems.items:
        return
    for loc in h.spec.locales:
        try:
            h.render(loc)
        except tpl.TemplateProblem as exc:
            problems.add(f"prompts/{system_template(loc, h.spec.locale)}", exc.line, str(exc))
