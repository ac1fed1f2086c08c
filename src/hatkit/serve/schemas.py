"""Request bodies of the server's routes (strict: wrong types are 422, not coerced)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .runner import ApiError


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class TextPart(_Strict):
    type: Literal["text"]
    text: str


class ChatMessageIn(_Strict):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(p.text for p in self.content)
        return self.content or ""


class ChatRequest(_Strict):
    model: str | None = None
    messages: list[ChatMessageIn] = Field(min_length=1)
    stream: bool = False
    max_tokens: int | None = Field(default=None, ge=1, le=32768)
    harness: str | None = None


class LiveContext(_Strict):
    stream_title: str | None = None
    product_ids: list[str] | None = None


class LiveRequest(_Strict):
    message: str = Field(min_length=1, max_length=8000)
    viewer_id: str | None = Field(default=None, max_length=200)
    context: LiveContext | None = None
    harness: str | None = None


class SwapRequest(_Strict):
    harness: str


def parse_body(body: bytes, schema: type[_Strict]) -> Any:
    """The validated body, or ApiError 400 (not JSON, or nested past the parser's depth
    limit) / 422 (wrong shape, every problem named). One parse, by pydantic's own JSON
    parser, which refuses deep nesting cleanly (the stdlib's raises RecursionError)."""
    try:
        return schema.model_validate_json(body)
    except ValidationError as exc:
        errors = exc.errors()
        if errors and errors[0]["type"] == "json_invalid":
            raise ApiError(400, f"request body is not valid JSON: {errors[0]['msg']}",
                           "invalid_json") from None
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                             for e in errors[:10])
        raise ApiError(422, f"invalid request: {problems}", "invalid_request") from None
