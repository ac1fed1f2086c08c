"""Tool schemas come from signatures and docstrings."""

from __future__ import annotations

from typing import Literal

import pytest

from hatkit.harness import ToolContext, tool
from hatkit.harness.tools import ToolSchemaError, tool_spec


@tool(kind="write", permission="orders.write")
def place_order(ctx: ToolContext, sku: str, quantity: int = 1, gift: bool = False,
                speed: Literal["standard", "express"] = "standard",
                note: str | None = None) -> dict[str, object]:
    """Place an order for a variant.

    Longer explanation for people.

    Args:
        sku: The variant SKU.
        quantity: Units to order.
        gift: Wrap as a gift.
        speed: Shipping speed.
        note: Note for the packer.
    """
    return {"sku": sku, "quantity": quantity, "speed": speed, "perm": sorted(ctx.permissions)}


def test_schema_from_signature_and_docstring() -> None:
    spec = tool_spec(place_order)
    schema = spec.openai_schema()
    fn = schema["function"]
    assert schema["type"] == "function" and fn["name"] == "place_order"
    assert fn["description"] == "Place an order for a variant. Longer explanation for people."
    params = fn["parameters"]
    assert params["required"] == ["sku"]
    assert params["additionalProperties"] is False
    assert "ctx" not in params["properties"]
    assert params["properties"]["quantity"] == {"default": 1, "description": "Units to order.",
                                                "type": "integer"}
    assert params["properties"]["speed"]["enum"] == ["standard", "express"]
    assert spec.kind == "write" and spec.permission == "orders.write"
    assert spec.context_param == "ctx"


def test_call_validates_and_coerces() -> None:
    spec = tool_spec(place_order)
    ctx = ToolContext(state=None, permissions=frozenset({"orders.write"}))
    out = spec.call({"sku": "A-1", "quantity": "2", "speed": "express"}, ctx)
    assert out == {"sku": "A-1", "quantity": 2, "speed": "express", "perm": ["orders.write"]}
    with pytest.raises(ValueError, match="speed"):
        spec.call({"sku": "A-1", "speed": "teleport"}, ctx)
    with pytest.raises(ValueError, match="sku"):
        spec.call({}, ctx)


def test_varargs_are_refused() -> None:
    def bad(*items: str) -> None:
        """Takes anything."""

    with pytest.raises(ToolSchemaError, match=r"\*args"):
        tool_spec(tool(bad))


def test_default_kind_is_read() -> None:
    def look(q: str) -> str:
        """Look."""
        return q

    spec = tool_spec(tool(look))
    assert spec.kind == "read" and spec.permission is None and spec.context_param is None
