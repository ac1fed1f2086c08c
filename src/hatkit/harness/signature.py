"""A compact, human-style signature of a tool for the system prompt.

Small models read `check_stock(product_id: string, size?: string)` as well as a JSON schema
and it costs a third of the tokens, which every episode pays in prefill.
"""

from __future__ import annotations

import json
from typing import Any


def _type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    if "anyOf" in schema:
        parts = [_type(s) for s in schema["anyOf"] if s.get("type") != "null"]
        return "|".join(parts) or "null"
    if schema.get("type") == "array":
        return f"list[{_type(schema.get('items', {}))}]"
    return str(schema.get("type", "any"))


def compact_signature(function: dict[str, Any], terse: bool = False) -> str:
    """`name(arg: type, opt?: type = default) - description Args: ...` on one line; `terse`
    leaves out the per-argument docs (about half the tokens of the tool list)."""
    params = function.get("parameters", {})
    required = set(params.get("required", []))
    args, docs = [], []
    for name, schema in params.get("properties", {}).items():
        opt = "" if name in required else "?"
        has_default = schema.get("default") is not None
        default = f" = {json.dumps(schema['default'])}" if has_default else ""
        args.append(f"{name}{opt}: {_type(schema)}{default}")
        if schema.get("description"):
            docs.append(f"{name}: {schema['description'].rstrip('.')}")
    doc = f" Args: {'; '.join(docs)}." if docs and not terse else ""
    return f"{function['name']}({', '.join(args)}) - {function.get('description', '')}{doc}"
