"""Tools are typed Python functions; the decorator records how they touch the world.

The JSON schema (OpenAI function-calling format) is derived from the signature and the
docstring, so a tool's description lives next to its code and cannot drift from it.
A parameter annotated `ToolContext` is injected by the runtime and hidden from the model.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_type_hints

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

ToolKind = Literal["read", "write"]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ToolMeta:
    """What the decorator records on a function."""

    kind: ToolKind
    permission: str | None
    name: str | None


@dataclass(frozen=True)
class ToolContext:
    """Injected into a tool call: the episode's domain state and the harness it runs under."""

    state: Any
    """The per-episode domain state (for live_commerce: a ShopState)."""
    rules: Mapping[str, Any] = field(default_factory=dict)
    """The harness's rule parameters (e.g. free_shipping_threshold)."""
    permissions: frozenset[str] = frozenset()
    """Permissions granted for this episode."""


def tool(
    fn: F | None = None, *, kind: ToolKind = "read", permission: str | None = None,
    name: str | None = None,
) -> Any:
    """Mark a function as a tool. `kind="write"` tools change state; `permission` gates them."""

    def mark(f: F) -> F:
        f.__hatkit_tool__ = ToolMeta(kind=kind, permission=permission, name=name)  # type: ignore[attr-defined]
        return f

    return mark(fn) if fn is not None else mark


class ToolSchemaError(ValueError):
    """A function whose signature or docstring cannot become a tool schema."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class ToolSpec:
    """A loaded tool: its schema for the model and what the runtime needs to call it."""

    name: str
    description: str
    parameters: dict[str, Any]
    kind: ToolKind
    permission: str | None
    fn: Callable[..., Any] = field(compare=False, repr=False)
    args_model: type[BaseModel] = field(compare=False, repr=False)
    context_param: str | None = None
    canonical: str = ""
    """The function's own name; stays the same when the harness renames the tool."""

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI function-calling `tools` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description,
                         "parameters": self.parameters},
        }

    def validate_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check model-supplied arguments against the signature; raises ValueError if wrong."""
        try:
            parsed = self.args_model.model_validate(dict(arguments))
        except ValidationError as exc:
            parts = [f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()]
            raise ValueError("; ".join(parts)) from None
        return {k: getattr(parsed, k) for k in type(parsed).model_fields}

    def call(self, arguments: Mapping[str, Any], context: ToolContext | None = None) -> Any:
        kwargs = self.validate_arguments(arguments)
        if self.context_param is not None:
            kwargs[self.context_param] = context
        return self.fn(**kwargs)


def tool_spec(fn: Callable[..., Any]) -> ToolSpec:
    """Build the spec of a decorated function, or raise ToolSchemaError saying why not."""
    meta: ToolMeta = getattr(fn, "__hatkit_tool__", None) or ToolMeta("read", None, None)
    name = meta.name or fn.__name__
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    summary = " ".join(p for p in (doc.short_description, doc.long_description) if p).strip()
    if not summary:
        raise ToolSchemaError(f"tool '{name}' has no docstring; the model needs a description")
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:  # noqa: BLE001 - any failure to resolve annotations
        raise ToolSchemaError(f"tool '{name}': cannot resolve type hints ({exc})") from None
    arg_docs = {p.arg_name: (p.description or "").strip() for p in doc.params}
    fields: dict[str, Any] = {}
    context_param = None
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolSchemaError(f"tool '{name}': *args/**kwargs cannot become a schema")
        if pname not in hints:
            raise ToolSchemaError(f"tool '{name}': parameter '{pname}' has no type annotation")
        if hints[pname] is ToolContext:
            context_param = pname
            continue
        default = ... if param.default is param.empty else param.default
        try:
            TypeAdapter(hints[pname]).json_schema()
        except Exception:  # noqa: BLE001 - pydantic raises several kinds here
            shown = getattr(hints[pname], "__name__", repr(hints[pname]))
            raise ToolSchemaError(f"tool '{name}': parameter '{pname}' has type {shown}, which "
                                  "cannot become a JSON schema") from None
        fields[pname] = (hints[pname], Field(default, description=arg_docs.get(pname) or None))
    try:
        model = create_model(f"{name}_args", __base__=_Args, **fields)
        schema = model.model_json_schema()
    except Exception as exc:  # noqa: BLE001 - pydantic raises several kinds here
        raise ToolSchemaError(f"tool '{name}': signature cannot become a JSON schema ({exc})") from None
    return ToolSpec(
        name=name, description=summary, parameters=_clean(schema), kind=meta.kind,
        permission=meta.permission, fn=fn, args_model=model, context_param=context_param,
        canonical=fn.__name__,
    )


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's cosmetic titles; keep the schema small for a small model's prompt."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    cleaned = walk(schema)
    cleaned.setdefault("properties", {})
    cleaned["additionalProperties"] = False
    return dict(cleaned)
