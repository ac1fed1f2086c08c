"""Skills follow the Agent Skills convention: `skills/<name>/SKILL.md` with YAML front matter
(name, description) and a Markdown body. Bodies are templates over the harness rules."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .spec import SKILL_NAME, describe_validation_error
from .yaml_lines import YamlSyntaxError, load_with_lines


class SkillFrontMatter(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(pattern=SKILL_NAME, description="Must match the folder name.")
    description: str = Field(min_length=1, description="When to use the skill; shown to the model.")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    """The Markdown body as written (a Jinja2 template over the harness rules)."""
    body_line: int
    """Line of SKILL.md where the body starts, so template errors point at the file's line."""
    path: str


class SkillParseError(ValueError):
    def __init__(self, line: int | None, message: str) -> None:
        self.line = line
        super().__init__(message)


def parse_skill(text: str, path: str, folder_name: str) -> Skill:
    """Parse one SKILL.md; raises SkillParseError with the file line on any problem."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise SkillParseError(1, "SKILL.md must start with '---' YAML front matter")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise SkillParseError(1, "front matter is not closed by a '---' line") from None
    try:
        data, where = load_with_lines("\n".join(lines[1:end]), first_line=2)
    except YamlSyntaxError as exc:
        raise SkillParseError(exc.line, str(exc)) from None
    if not isinstance(data, dict):
        raise SkillParseError(2, "front matter must be a mapping with name and description")
    try:
        fm = SkillFrontMatter.model_validate(data)
    except ValidationError as exc:
        line, msg = describe_validation_error(exc, where)[0]
        raise SkillParseError(line, msg) from None
    if fm.name != folder_name:
        raise SkillParseError(where.get(("name",)), f"name '{fm.name}' does not match its folder "
                              f"'{folder_name}'")
    body = "\n".join(lines[end + 1:]).strip("\n")
    return Skill(fm.name, fm.description, body, end + 2, path)
