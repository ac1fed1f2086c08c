"""Load a harness folder into one immutable `Harness`, or fail with every problem found.

Nothing is half-loaded: all checks run first, and a `Harness` is built only when none failed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import inspect
import sys
import traceback
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

from pydantic import ValidationError

from . import prompts as tpl
from ._yaml import YamlSyntaxError, line_for, load_with_lines
from .errors import HarnessError, Problem, Problems
from .harness import Harness, system_template
from .hashing import content_hash
from .hooks import Hook, HookFile, HookRule, MaxReplyLength
from .skills import Skill, SkillParseError, parse_skill
from .spec import HarnessSpec, describe_validation_error
from .tools import ToolSchemaError, ToolSpec, tool_spec

SPEC_FILE = "harness.yaml"


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
                return shipped
    raise FileNotFoundError(f"no harness folder or shipped harness named '{ref}'")


def load_harness(ref: str | Path) -> Harness:
    """Load and validate a harness; raises HarnessError naming file, line and problem."""
    root = resolve_harness_path(ref)
    problems = Problems()
    spec_path = root / SPEC_FILE
    if not spec_path.is_file():
        raise HarnessError(root, [Problem(SPEC_FILE, None, "missing harness.yaml")])
    lines: dict[Any, int] = {}
    spec = None
    try:
        data, lines = load_with_lines(_read(spec_path))
        spec = HarnessSpec.model_validate(data if data is not None else {})
    except YamlSyntaxError as exc:
        problems.add(SPEC_FILE, exc.line, str(exc))
    except ValidationError as exc:
        for line, msg in describe_validation_error(exc, lines):
            problems.add(SPEC_FILE, line, msg)
    problems.raise_if_any(root)
    assert spec is not None

    if spec.state is not None:
        _check_state(spec.state, line_for(lines, ("state",)), problems)
    templates = _load_templates(root, spec, lines, problems)
    skills, localized = _load_skills(root, spec, lines, problems)
    tools = _load_tools(root, spec, lines, problems)
    rules, classes = _load_hooks(root, spec, lines, tools, problems)
    problems.raise_if_any(root)

    ro = MappingProxyType
    harness = Harness(root=root, spec=spec, content_hash=content_hash(root), templates=ro(templates),
                      skills=ro(skills), localized_skills=ro(localized), tools=ro(tools),
                      hook_rules=ro(rules), hook_classes=ro(classes))
    _check_templates(harness, problems)
    problems.raise_if_any(root)
    return harness


def _check_state(ref: str, line: int | None, problems: Problems) -> None:
    from .harness import import_object

    try:
        obj = import_object(ref)
    except (ImportError, AttributeError) as exc:
        problems.add(SPEC_FILE, line, f"state '{ref}' cannot be imported: {exc}")
        return
    if not callable(obj):
        problems.add(SPEC_FILE, line, f"state '{ref}' is not a class or factory")


def _read(path: Path) -> str:
    return path.read_text("utf-8").lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _load_templates(root: Path, spec: HarnessSpec, lines: dict[Any, int],
                    problems: Problems) -> dict[str, str]:
    folder = root / "prompts"
    templates = {p.relative_to(folder).as_posix(): _read(p)
                 for p in sorted(folder.rglob("*.j2"))} if folder.is_dir() else {}
    if spec.locale not in spec.locales:
        problems.add(SPEC_FILE, line_for(lines, ("locale",)),
                     f"locale '{spec.locale}' is not in locales {spec.locales}")
    for loc in spec.locales:
        name = system_template(loc, spec.locale)
        if name not in templates:
            problems.add(f"prompts/{name}", None,
                         f"missing system prompt template for locale '{loc}'")
    return templates


def _load_skills(root: Path, spec: HarnessSpec, lines: dict[Any, int], problems: Problems,
                 ) -> tuple[dict[str, Skill], dict[tuple[str, str], Skill]]:
    skills: dict[str, Skill] = {}
    localized: dict[tuple[str, str], Skill] = {}
    folder = root / "skills"
    for skill_dir in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
        if skill_dir.name.startswith((".", "_")):
            continue
        for md in sorted(skill_dir.glob("SKILL*.md")):
            rel = md.relative_to(root).as_posix()
            loc = md.name[len("SKILL."):-len(".md")] if md.name != "SKILL.md" else None
            try:
                skill = parse_skill(_read(md), rel, skill_dir.name)
            except SkillParseError as exc:
                problems.add(rel, exc.line, str(exc))
                continue
            if loc is None:
                skills[skill.name] = skill
            elif loc not in spec.locales:
                problems.add(rel, None, f"locale '{loc}' is not in harness.yaml locales")
            else:
                localized[(skill.name, loc)] = skill
        if not (skill_dir / "SKILL.md").is_file():
            problems.add(f"skills/{skill_dir.name}", None, "skill folder has no SKILL.md")
    for i, name in enumerate(spec.enabled.skills):
        if name not in skills and not (folder / name / "SKILL.md").is_file():
            problems.add(SPEC_FILE, line_for(lines, ("enabled", "skills", i)),
                         f"skill '{name}' is enabled but skills/{name}/SKILL.md does not exist")
    return skills, localized


def _import_file(root: Path, path: Path, problems: Problems) -> ModuleType | None:
    """Import a harness Python file under a private module name; report errors with lines."""
    rel = path.relative_to(root).as_posix()
    tag = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"_hatkit_harness_{tag}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        problems.add(rel, None, "cannot import this file")
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    no_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # keep the folder clean
    try:
        spec.loader.exec_module(module)
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


def _load_tools(root: Path, spec: HarnessSpec, lines: dict[Any, int],
                problems: Problems) -> dict[str, ToolSpec]:
    tools: dict[str, ToolSpec] = {}
    folder = root / "tools"
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        module = _import_file(root, path, problems)
        if module is None:
            continue
        rel = path.relative_to(root).as_posix()
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


def _load_hooks(root: Path, spec: HarnessSpec, lines: dict[Any, int], tools: dict[str, ToolSpec],
                problems: Problems) -> tuple[dict[str, HookRule], dict[str, type[Hook]]]:
    rules: dict[str, HookRule] = {}
    classes: dict[str, type[Hook]] = {}
    tools_failed = any(p.file.startswith("tools/") for p in problems.items)
    folder = root / "hooks"
    files = sorted(folder.iterdir()) if folder.is_dir() else []
    for path in (p for p in files if p.suffix in (".yaml", ".yml")):
        rel = path.relative_to(root).as_posix()
        try:
            data, where = load_with_lines(_read(path))
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
    for path in (p for p in files if p.suffix == ".py"):
        module = _import_file(root, path, problems)
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
