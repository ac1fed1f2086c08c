"""YAML loading that keeps line numbers, so errors can point at the offending key."""

from __future__ import annotations

from typing import Any

import yaml

Loc = tuple[str | int, ...]


class YamlSyntaxError(ValueError):
    def __init__(self, line: int | None, message: str) -> None:
        self.line = line
        super().__init__(message)


class _LineLoader(yaml.SafeLoader):
    """SafeLoader that records the line of every mapping key and sequence item."""


def load_with_lines(text: str, first_line: int = 1) -> tuple[Any, dict[Loc, int]]:
    """Parse YAML safely; return the data and a map from key path to 1-based line.

    `first_line` offsets the numbers when the YAML is embedded (SKILL.md front matter).
    Duplicate keys are refused: YAML silently keeps the last one, which hides mistakes.
    Aliases are refused too: a few nested `*refs` in a small file expand to billions of values.
    """
    try:
        node = yaml.compose(text, Loader=_LineLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = None if mark is None else mark.line + first_line
        raise YamlSyntaxError(line, f"YAML syntax error: {exc.problem}") from None
    lines: dict[Loc, int] = {}
    if node is None:
        return None, lines
    _index(node, (), lines, first_line, set())
    return yaml.load(text, Loader=_LineLoader), lines


def _index(node: yaml.Node, path: Loc, lines: dict[Loc, int], offset: int,
           seen: set[int]) -> None:
    if id(node) in seen:  # composing resolves an alias to the very node it names
        raise YamlSyntaxError(line_for(lines, path), "YAML aliases (*name) are not supported in "
                              "harness files; write the value out")
    seen.add(id(node))
    lines[path] = node.start_mark.line + offset
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):  # `{{ x }}: y` or `[a]: b`
                raise YamlSyntaxError(key_node.start_mark.line + offset,
                                      "a key must be plain text, not a list or mapping "
                                      "(quote a value that starts with '{' or '[')")
            key = key_node.value
            if key in keys:
                raise YamlSyntaxError(key_node.start_mark.line + offset, f"duplicate key '{key}'")
            keys.add(key)
            lines[(*path, key)] = key_node.start_mark.line + offset
            _index(value_node, (*path, key), lines, offset, seen)
            lines[(*path, key)] = key_node.start_mark.line + offset
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(item, (*path, i), lines, offset, seen)


def line_for(lines: dict[Loc, int], loc: Loc) -> int | None:
    """The line of the deepest known prefix of `loc` (pydantic locations can go deeper)."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None
