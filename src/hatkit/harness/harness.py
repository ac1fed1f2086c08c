"""The Harness: one immutable, typed object loaded from a folder, and what the model sees."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from . import prompts as tpl
from .builtins import load_skill_tool
from .hooks import Hook, HookRule
from .signature import compact_signature
from .skills import Skill
from .spec import HarnessSpec
from .tools import ToolSpec


@dataclass(frozen=True)
class RenderedHarness:
    """The harness state exactly as the model receives it."""

    harness_name: str
    harness_hash: str
    locale: str
    system_prompt: str
    tools: list[dict[str, Any]]
    """OpenAI function-calling schemas of the runtime tools (for backends with native tools)."""
    skills: list[tuple[str, str]]
    """(name, description) of the enabled skills."""


@dataclass(frozen=True)
class Harness:
    """A loaded harness folder. Build it with `load_harness`; never half-built."""

    root: Path
    spec: HarnessSpec
    content_hash: str
    templates: Mapping[str, str]
    """prompts/ files by name relative to prompts/ (e.g. 'system.j2', 'system.zh.j2')."""
    skills: Mapping[str, Skill]
    """Every skill in skills/, enabled or not."""
    localized_skills: Mapping[tuple[str, str], Skill]
    """(skill name, locale) -> SKILL.<locale>.md, where a translation exists."""
    tools: Mapping[str, ToolSpec]
    """Every @tool found in tools/, enabled or not."""
    hook_rules: Mapping[str, HookRule]
    hook_classes: Mapping[str, type[Hook]] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def short_hash(self) -> str:
        return self.content_hash[:12]

    @property
    def rules(self) -> Mapping[str, Any]:
        return MappingProxyType(dict(self.spec.rules))

    def new_state(self) -> Any:
        """A fresh per-episode domain state (None when the harness declares none)."""
        return import_object(self.spec.state)() if self.spec.state else None

    def enabled_tools(self) -> list[ToolSpec]:
        return [self.tools[n] for n in self.spec.enabled.tools]

    def runtime_tools(self, locale: str | None = None) -> list[ToolSpec]:
        """Enabled tools plus the built-ins the settings call for (load_skill in index mode)."""
        tools = self.enabled_tools()
        if self.spec.render.skills == "index" and self.spec.enabled.skills:
            env = tpl.make_environment(self.templates)
            ctx = self.template_context(locale)
            bodies = {s.name: tpl.render(env, s.body, ctx) for s in self.enabled_skills(locale)}
            tools.append(load_skill_tool(bodies))
        return tools

    def enabled_skills(self, locale: str | None = None) -> list[Skill]:
        loc = locale or self.spec.locale
        return [self.localized_skills.get((n, loc), self.skills[n]) for n in self.spec.enabled.skills]

    def enabled_hooks(self) -> list[HookRule | Hook]:
        """Rules and fresh Python hook instances, in the order harness.yaml lists them."""
        out: list[HookRule | Hook] = []
        for name in self.spec.enabled.hooks:
            out.append(self.hook_rules[name] if name in self.hook_rules else self.hook_classes[name]())
        return out

    def template_context(self, locale: str | None = None) -> dict[str, Any]:
        """Variables a prompt or skill template may use."""
        loc = locale or self.spec.locale
        ctx: dict[str, Any] = dict(self.spec.rules)
        ctx.update(rules=dict(self.spec.rules), locale=loc,
                   harness={"name": self.spec.name, "description": self.spec.description},
                   tool={t.canonical: t.name for t in self.tools.values()})
        return ctx

    def render(self, locale: str | None = None, tools_in_prompt: bool | None = None,
               ) -> RenderedHarness:
        """Render the system prompt (persona, skills, tools) for `locale` (default: the spec's).

        `tools_in_prompt=False` leaves tool descriptions out of the prompt, for backends that
        pass tool schemas natively (chat templates with a tools section, HTTP APIs).
        """
        loc = locale or self.spec.locale
        if loc not in self.spec.locales:
            raise ValueError(f"harness '{self.name}' has no locale '{loc}' "
                             f"(it ships: {', '.join(self.spec.locales)})")
        env = tpl.make_environment(self.templates)
        ctx = self.template_context(loc)
        skills = [
            {"name": s.name, "description": s.description,
             "body": tpl.render(env, s.body, ctx) if self.spec.render.skills == "full" else ""}
            for s in self.enabled_skills(loc)
        ]
        runtime = self.runtime_tools(loc)
        tools = [t.openai_schema() for t in runtime]
        in_prompt = self.spec.render.tools_in_prompt if tools_in_prompt is None else tools_in_prompt
        prompt_tools = [
            {"name": t.name, "description": t.description,
             "json": json.dumps(t.openai_schema()["function"], ensure_ascii=False),
             "signature": compact_signature(t.openai_schema()["function"],
                                             terse=self.spec.render.tools == "terse")}
            for t in runtime
        ] if in_prompt else []
        system = tpl.render(env, self.templates[system_template(loc, self.spec.locale)],
                            {**ctx, "skills": skills, "tools": prompt_tools})
        return RenderedHarness(
            harness_name=self.name, harness_hash=self.content_hash, locale=loc,
            system_prompt=system.strip() + "\n", tools=tools,
            skills=[(s.name, s.description) for s in self.enabled_skills(loc)],
        )


def import_object(ref: str) -> Any:
    """'package.module:Name' -> the object."""
    import importlib

    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def system_template(locale: str, default_locale: str) -> str:
    """`system.j2` is the default locale's prompt; other locales use `system.<locale>.j2`."""
    return "system.j2" if locale == default_locale else f"system.{locale}.j2"
