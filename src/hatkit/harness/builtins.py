"""Tools the runtime adds to every harness that needs them, built from the harness itself.

`load_skill` gives progressive disclosure: with `render.skills: index` the system prompt lists
only each skill's name and description, and the model fetches a body when it needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .tools import ToolSpec, tool, tool_spec


def load_skill_tool(bodies: Mapping[str, str]) -> ToolSpec:
    """A read-only tool returning the rendered body of an enabled skill."""

    def load_skill(name: str) -> dict[str, Any]:
        """Load the full instructions of a skill listed in the system prompt.

        Args:
            name: The skill name, exactly as listed.
        """
        if name not in bodies:
            raise LookupError(f"no skill named '{name}'; available: {', '.join(sorted(bodies))}")
        return {"skill": name, "instructions": bodies[name]}

    fn: Callable[..., Any] = tool(load_skill)
    return tool_spec(fn)
