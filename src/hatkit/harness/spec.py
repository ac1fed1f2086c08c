"""The typed schema of `harness.yaml`. Every field says what it is for where it is declared."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
)

from .yaml_lines import Loc, line_for

RuleValue = bool | int | float | str | tuple[bool | int | float | str, ...]
IDENT = r"^[a-z][a-z0-9_]*$"


def _check_rule_name(name: str) -> str:
    if not re.match(IDENT, name):
        raise ValueError(f"rule name '{name}' must be a lower_snake_case identifier")
    return name


RuleName = Annotated[str, AfterValidator(_check_rule_name)]

SKILL_NAME = r"^[a-z0-9][a-z0-9_-]*$"
"""A skill's folder name under skills/ (and its front-matter name)."""
PART_NAME = r"^[A-Za-z_][A-Za-z0-9_-]*$"


def _plain_name(pattern: str, what: str) -> AfterValidator:
    """A name that cannot walk out of its folder ('../../x', 'a/b'): it is looked up as one."""

    def check(name: str) -> str:
        if not re.match(pattern, name):
            raise ValueError(f"'{name}' is not a {what} name: it must match {pattern} "
                             "(no '/', '..' or spaces)")
        return name

    return AfterValidator(check)


SkillName = Annotated[str, _plain_name(SKILL_NAME, "skill folder")]
ToolName = Annotated[str, _plain_name(PART_NAME, "tool")]
HookName = Annotated[str, _plain_name(PART_NAME, "hook")]
Locale = Annotated[str, Field(pattern=r"^[a-z]{2}(-[A-Z]{2})?$")]


def _freeze(rules: Mapping[str, RuleValue]) -> Mapping[str, RuleValue]:
    """A read-only view: a loaded harness must not change under the hash that names it."""
    return MappingProxyType(dict(rules))


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelSettings(_Strict):
    max_new_tokens: int = Field(default=256, ge=1, le=8192, description="Per model call.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="0 means greedy.")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    think: bool = Field(default=True, description="Allow <think> reasoning before acting.")


class Limits(_Strict):
    max_turns: int = Field(default=6, ge=1, le=64, description="Model calls per viewer message.")
    max_tool_calls: int = Field(default=8, ge=0, le=64, description="Tool calls per message.")
    tool_timeout_s: float = Field(default=5.0, gt=0, le=600, description="Per tool call.")
    max_parse_retries: int = Field(default=2, ge=0, le=10, description="Malformed-call retries.")
    max_repeated_errors: int = Field(
        default=3, ge=1, le=64, description="Tool failures of one kind the model caused (unknown "
        "tool, bad arguments, permission denied, ...; not timeouts, 5xx or injected faults) in "
        "one message before it ends with the fallback.")
    max_reply_retries: int = Field(
        default=1, ge=0, le=5, description="Regenerations after a hook vetoes a reply."
    )


class Enabled(_Strict):
    skills: tuple[SkillName, ...] = Field(default=(), description="Folder names under skills/.")
    tools: tuple[ToolName, ...] = Field(
        default=(), description="Tools by the name the model sees (the function name, or its "
        "tool_overrides name).")
    hooks: tuple[HookName, ...] = Field(default=(), description="Rule names or Python hook "
                                        "classes.")

    @field_validator("skills", "tools", "hooks")
    @classmethod
    def _no_duplicates(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"listed more than once: {', '.join(dupes)}")
        return names


class RenderSettings(_Strict):
    skills: Literal["full", "index"] = Field(
        default="full",
        description="'full' puts each skill's body in the system prompt; 'index' only its "
        "name and description (for models that load skills on demand).",
    )
    tools: Literal["full", "terse"] = Field(
        default="full",
        description="'full' lists each tool with its description and every argument's doc; "
        "'terse' only `name(arg: type, opt?: type) - description`, for small models whose "
        "prompt must stay short (the JSON schema is unchanged either way).",
    )
    tools_in_prompt: bool = Field(
        default=True,
        description="Describe tool schemas in the system prompt (for chat templates without a "
        "tools section, such as SmolLM2's).",
    )


class ToolOverride(_Strict):
    """Rename a tool or rewrite its description without touching its code."""

    name: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                             description="The name the model sees.")
    description: str | None = Field(default=None, min_length=1,
                                    description="Replaces the docstring's summary.")


class HarnessSpec(_Strict):
    """Everything in `harness.yaml`."""

    name: str = Field(pattern=IDENT, description="Short identifier of this harness.")
    description: str = Field(min_length=1, description="What this harness is for.")
    locale: Locale = Field(default="en", description="Default.")
    locales: tuple[Locale, ...] = Field(default=("en",), description="Locales it ships.")
    model: ModelSettings = Field(default_factory=ModelSettings)
    limits: Limits = Field(default_factory=Limits)
    enabled: Enabled = Field(default_factory=Enabled)
    permissions: tuple[str, ...] = Field(
        default=(), description="Permissions granted to the agent, e.g. coupon.apply."
    )
    rules: Annotated[Mapping[RuleName, RuleValue], AfterValidator(_freeze)] = Field(
        default_factory=lambda: MappingProxyType({}),
        description="Named business-rule parameters, usable in prompts and skills as template "
        "variables, e.g. free_shipping_threshold: 99.",
    )
    render: RenderSettings = Field(default_factory=RenderSettings)
    tool_overrides: dict[str, ToolOverride] = Field(
        default_factory=dict,
        description="Function name -> new visible name and/or description. Everything else "
        "(enabled.tools, hooks) uses the visible name; prompts and skills write "
        "{{ tool.<function name> }} so that renames reach them.",
    )
    domain: str | None = Field(
        default=None, pattern=IDENT,
        description="The domain this harness belongs to (its simulator, oracle and judge rubric; "
        "see `hatkit domains`); unset = the command's --domain, default live_commerce.",
    )
    state: str | None = Field(
        default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
        description="'module:Class' of the per-episode domain state the tools read and write; "
        "called with no arguments to start each episode.",
    )
    fallback_reply: str = Field(
        default="Sorry, I can't answer that right now. A human agent will follow up in the chat.",
        description="Sent when the agent cannot produce an acceptable reply (turn budget spent, "
        "every retry vetoed, model error).",
    )

    @field_serializer("rules")
    def _rules_as_dict(self, rules: Mapping[str, RuleValue]) -> dict[str, RuleValue]:
        return dict(rules)



def describe_validation_error(exc: ValidationError, lines: dict[Loc, int]) -> list[tuple[int | None, str]]:
    """Turn pydantic's errors into (line, message) pairs a person can act on."""
    out: list[tuple[int | None, str]] = []
    for err in exc.errors():
        loc = _file_loc(tuple(err["loc"]), lines)
        if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            loc = (*loc, "kind")
        dotted = ".".join(str(p) for p in loc if p != "[key]")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key '{dotted}'"
        elif err["type"] == "missing":
            msg = f"missing required field '{dotted}'"
        else:
            text = err["msg"].removeprefix("Value error, ")
            msg = f"'{dotted}': {text}" if dotted else text
        out.append((line_for(lines, loc), msg))
    return out


def _file_loc(loc: Loc, lines: dict[Loc, int]) -> Loc:
    """Drop the parts of a pydantic location that are not in the file (union tags such as
    'forbidden_phrases'), keeping a final missing or unknown key."""
    kept: list[str | int] = []
    for i, part in enumerate(loc):
        if (*kept, part) in lines or i == len(loc) - 1:
            kept.append(part)
    return tuple(kept)
