"""Prompt templates: Jinja2 in a sandbox, strict about undefined variables.

Templates come from harness files only; viewer messages, model outputs and tool outputs are
never rendered as templates. The sandbox still matters: a harness edit proposed by a program
is untrusted until a person approves it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class TemplateProblem(ValueError):
    def __init__(self, line: int | None, message: str) -> None:
        self.line = line
        super().__init__(message)


def make_environment(templates: Mapping[str, str]) -> jinja2.Environment:
    """A sandboxed environment whose loader sees only the harness's own templates."""
    return ImmutableSandboxedEnvironment(
        loader=jinja2.DictLoader(dict(templates)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def check_template(env: jinja2.Environment, source: str, known: Iterable[str],
                   line_offset: int = 0) -> None:
    """Raise TemplateProblem for a syntax error or a variable the context will not define."""
    try:
        ast = env.parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(exc.lineno + line_offset, f"template syntax error: {exc.message}") from None
    undefined = sorted(meta.find_undeclared_variables(ast) - set(known))
    if undefined:
        name = undefined[0]
        line = next((n.lineno for n in ast.find_all(nodes.Name) if n.name == name), None)
        hint = " (rule parameters are declared under 'rules:' in harness.yaml)"
        raise TemplateProblem(None if line is None else line + line_offset,
                              f"undefined template variable '{name}'{hint}")


def render(env: jinja2.Environment, source: str, context: Mapping[str, Any],
           line_offset: int = 0, name: str = "<template>") -> str:
    """Render, turning Jinja's errors into TemplateProblem with the template line."""
    try:
        return env.from_string(source).render(**context)
    except jinja2.TemplateError as exc:
        line = getattr(exc, "lineno", None) or _template_line(exc)
        raise TemplateProblem(None if line is None else line + line_offset,
                              f"template error: {exc}") from None


def _template_line(exc: BaseException) -> int | None:
    """Jinja rewrites tracebacks so template frames carry template line numbers."""
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
