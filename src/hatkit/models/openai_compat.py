"""A ChatModel backend for any OpenAI-compatible chat-completions server (vLLM, SGLang,
llama.cpp server, OpenAI itself).

Server and network failures are returned as typed data (ModelOutput.error holding a
`ModelError` subclass: rate limited, unavailable, timeout, bad request, context too long),
never raised: the agent loop records their kind and ends the episode cleanly, so a flaky server
costs one episode, not a whole run. Transient failures (429, 5xx, connection errors and
timeouts) are retried with exponential backoff first. A bug in this code still raises.
"""

from __future__ import annotations

import email.utils
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import httpx

from .base import ChatMessage, FinishReason, ModelOutput, ModelRequest, TokenFormat, ToolCall
from .chat_format import ZWSP
from .errors import (
    BackendTimeout,
    BackendUnavailable,
    BadModelRequest,
    ContextTooLong,
    ModelError,
    RateLimited,
)

MAX_BACKOFF_S = 30.0
"""No single wait between attempts is longer than this, whatever Retry-After says."""
ERROR_BODY_CHARS = 300
RAW_ARGUMENTS_KEY = "__raw__"
"""Tool-call arguments that are not a JSON object are kept under this key, unparsed, so the
agent's parser can repair or reject them instead of the backend crashing."""


# ----------------------------------------------------------------------------- messages


def _hermes_tool_call_text(call: ToolCall) -> str:
    payload = json.dumps({"name": call.name, "arguments": dict(call.arguments)}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>"


_MARKUP = re.compile(r"<\|[^|<>\s]{1,48}\|>|</?(?:start_of_turn|end_of_turn|s|bos|eos)>"
                     r"|\[/?INST\]|<</?SYS>>")
"""Special-token spellings of the common chat-template families (ChatML/Llama-3/Phi `<|...|>`,
Gemma, Llama-2/Mistral). The server's tokenizer is unknown here, and vLLM and SGLang turn such
strings in a rendered prompt into real special tokens."""


def neutralise_markup(text: str) -> str:
    """`text` with every special-token spelling broken by a zero-width space (shown the same,
    tokenised as plain text): no message but the harness's system prompt can open a turn."""
    return _MARKUP.sub(lambda m: m.group(0)[0] + ZWSP + m.group(0)[1:], text)


def to_openai_messages(messages: Sequence[ChatMessage], native_tools: bool) -> list[dict[str, Any]]:
    """Convert hatkit messages to the OpenAI chat shape.

    Native tool calls travel as structured `tool_calls` and their results as role "tool"
    messages. Everything else uses the Hermes text convention (<tool_call> in assistant
    text, <tool_response> in a user turn), which any chat template can render, so a server
    without a tool parser still sees a coherent history. Consecutive text tool responses
    are merged into one user turn, as the Hermes/Qwen templates do, because several chat
    templates reject two user turns in a row.
    """
    out: list[dict[str, Any]] = []
    last_assistant_native = False
    merge_index: int | None = None  # index in `out` of the open <tool_response> user turn
    for msg in messages:
        if msg.role != "system":  # untrusted: viewer text, tool output, replayed history
            msg = replace(msg, content=neutralise_markup(msg.content))
        if msg.role == "assistant":
            merge_index = None
            has_native_calls = msg.native_tool_calls and bool(msg.tool_calls)
            last_assistant_native = native_tools and has_native_calls
            if last_assistant_native:
                out.append({"role": "assistant", "content": msg.content or None,
                            "tool_calls": [tc.to_openai() for tc in msg.tool_calls]})
            elif has_native_calls:
                # Structured calls, but this server gets no tools: write them as text.
                calls = "\n".join(_hermes_tool_call_text(tc) for tc in msg.tool_calls)
                content = f"{msg.content}\n{calls}" if msg.content else calls
                out.append({"role": "assistant", "content": content})
            else:
                out.append({"role": "assistant", "content": msg.content})
        elif msg.role == "tool":
            if last_assistant_native and msg.tool_call_id:
                merge_index = None
                out.append({"role": "tool", "tool_call_id": msg.tool_call_id, "content": msg.content})
                continue
            block = f"<tool_response>\n{msg.content}\n</tool_response>"
            if merge_index is not None:
                out[merge_index]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block})
                merge_index = len(out) - 1
        else:
            merge_index = None
            out.append({"role": msg.role, "content": msg.content})
    return out


# ----------------------------------------------------------------------------- parsing


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _parse_arguments(raw: Any) -> dict[str, Any]:
    """A JSON object string -> dict; anything else is kept raw (never raises)."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}  # some servers send "" for a call without arguments
    if not isinstance(raw, str):
        return {RAW_ARGUMENTS_KEY: raw}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {RAW_ARGUMENTS_KEY: raw}
    return parsed if isinstance(parsed, dict) else {RAW_ARGUMENTS_KEY: raw}


def _call_id(raw_id: Any, index: int) -> str:
    """The server's id, or a stable stand-in so the tool result can still be matched."""
    return raw_id if isinstance(raw_id, str) and raw_id else f"call_{index}"


def _finish_reason(raw: Any, has_tool_calls: bool) -> FinishReason:
    if raw == "length":
        return "length"
    # Some servers say "stop" even when they returned tool calls; the calls are what matter.
    return "tool_calls" if has_tool_calls else "stop"


def _logprobs(raw: Any) -> list[float]:
    return [float(item["logprob"]) for item in _as_list(_as_dict(raw).get("content"))
            if isinstance(item, dict) and isinstance(item.get("logprob"), int | float)]


def _restore_stop(text: str, choice: Mapping[str, Any], stop: Sequence[str]) -> str:
    """Put back the stop string the server stripped: hatkit keeps stop strings in the output
    (e.g. a closing </tool_call>). Only possible when the server says which one matched
    (vLLM: stop_reason, SGLang: matched_stop); OpenAI and llama.cpp do not."""
    if not stop:
        return text
    for key in ("stop_reason", "matched_stop"):
        matched = choice.get(key)
        if isinstance(matched, str) and matched in stop and not text.endswith(matched):
            return text + matched
    return text


def _server_message(text: str) -> str:
    """The server's own error message from a JSON body, else the body text, truncated."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])[:ERROR_BODY_CHARS]
        if isinstance(err, str):
            return err[:ERROR_BODY_CHARS]
        if isinstance(data.get("message"), str):  # e.g. {"object": "error", "message": ...}
            return str(data["message"])[:ERROR_BODY_CHARS]
    return text.strip()[:ERROR_BODY_CHARS]


def _retry_after_s(value: str | None) -> float | None:
    """Retry-After as seconds (a number or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _parse_completion(data: Any, stop: Sequence[str], total_s: float) -> ModelOutput:
    """A non-streamed chat.completion body -> ModelOutput."""
    choices = _as_list(_as_dict(data).get("choices"))
    if not choices or not isinstance(choices[0], dict):
        return ModelOutput.failed(BackendUnavailable(
            f"response has no choices: {json.dumps(data)[:ERROR_BODY_CHARS]}"), total_s)
    choice = choices[0]
    message = _as_dict(choice.get("message"))
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    calls: list[ToolCall] = []
    for i, raw in enumerate(_as_list(message.get("tool_calls"))):
        fn = _as_dict(_as_dict(raw).get("function"))
        name = fn.get("name")
        calls.append(ToolCall(name=name if isinstance(name, str) else "",
                              arguments=_parse_arguments(fn.get("arguments")),
                              id=_call_id(_as_dict(raw).get("id"), i)))
    usage = _as_dict(_as_dict(data).get("usage"))
    logprobs = _logprobs(choice.get("logprobs")) if choice.get("logprobs") else None
    return ModelOutput(
        text=_restore_stop(text, choice, stop), tool_calls=calls, logprobs=logprobs,
        finish_reason=_finish_reason(choice.get("finish_reason"), bool(calls)),
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        ttft_s=total_s, total_s=total_s,
    )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


_CONTEXT_PHRASES = ("context length", "context window", "maximum context", "too many tokens",
                    "prompt is too long")


def _client_error(status: int, message: str) -> ModelError:
    """The typed error for a 4xx answer that retrying will not fix."""
    if status == 413 or any(p in message.lower() for p in _CONTEXT_PHRASES):
        return ContextTooLong(message)  # vLLM and OpenAI say so in a 400's message
    return BadModelRequest(message)


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class _StreamState:
    """What the chunks of one streamed completion add up to."""

    started: float
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish: Any = None
    choice_meta: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    logprobs: list[float] | None = None
    ttft_s: float | None = None

    def add(self, chunk: Mapping[str, Any]) -> None:
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]  # the final chunk's usage wins
        for choice in _as_list(chunk.get("choices")):
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = _as_dict(choice.get("delta"))
            carried = False
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text.append(content)
                carried = True
            for pos, frag in enumerate(_as_list(delta.get("tool_calls"))):
                frag = _as_dict(frag)
                index = frag.get("index")
                part = self.calls.setdefault(index if isinstance(index, int) else pos, _PartialCall())
                if isinstance(frag.get("id"), str) and frag["id"] and not part.id:
                    part.id = frag["id"]  # ids arrive whole; some servers repeat them
                fn = _as_dict(frag.get("function"))
                if isinstance(fn.get("name"), str):
                    part.name += fn["name"]
                if isinstance(fn.get("arguments"), str):
                    part.arguments += fn["arguments"]
                carried = True
            if carried and self.ttft_s is None:
                self.ttft_s = time.perf_counter() - self.started
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
            for key in ("stop_reason", "matched_stop"):
                if choice.get(key) is not None:
                    self.choice_meta[key] = choice[key]
            if choice.get("logprobs"):
                self.logprobs = (self.logprobs or []) + _logprobs(choice["logprobs"])

    def output(self, stop: Sequence[str]) -> ModelOutput:
        total_s = time.perf_counter() - self.started
        calls = [ToolCall(name=p.name, arguments=_parse_arguments(p.arguments), id=_call_id(p.id, i))
                 for i, (_, p) in enumerate(sorted(self.calls.items()))]
        return ModelOutput(
            text=_restore_stop("".join(self.text), self.choice_meta, stop), tool_calls=calls,
            logprobs=self.logprobs, finish_reason=_finish_reason(self.finish, bool(calls)),
            prompt_tokens=_int(self.usage.get("prompt_tokens")),
            completion_tokens=_int(self.usage.get("completion_tokens")),
            ttft_s=total_s if self.ttft_s is None else self.ttft_s, total_s=total_s,
        )


def _sse_data(lines: Iterator[str]) -> Iterator[str]:
    """The payloads of SSE `data:` lines, up to `data: [DONE]`; comments and other fields
    (event:, id:, keep-alive lines) are skipped."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        if payload:
            yield payload


# ----------------------------------------------------------------------------- backend


@dataclass(frozen=True)
class _Retryable:
    """A failed attempt worth repeating (429, 5xx, transport error)."""

    reason: str
    retry_after_s: float | None = None
    error: type[ModelError] = BackendUnavailable
    """What the failure is, should the retries run out."""


class OpenAICompatibleModel:
    """ChatModel over HTTP for any OpenAI-compatible chat-completions endpoint.

    Requests in a batch are sent one after another: the server does its own batching, and
    sequential calls keep retries and timing per request simple. Timings (ttft_s, total_s)
    cover the attempt that produced the output, not earlier failed attempts or backoff, so
    they describe the server, not the retry policy.
    """

    native_tools: bool

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 60,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        stream: bool = True,
        native_tools: bool = True,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.model_id = f"openai:{model}"
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.stream = stream
        self.native_tools = native_tools
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=timeout_s)
        self._sleep = sleep

    def token_format(self) -> TokenFormat | None:
        """None: the server tokenizes, so exact prompt ids are not available here."""
        return None

    def close(self) -> None:
        """Close the HTTP client if this model created it (an injected one is the caller's)."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAICompatibleModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        """One output per request; server and network problems come back as typed errors."""
        return [self._generate_one(request) for request in requests]

    # -- one request

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for `request` (public so callers can log or inspect it)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(request.messages, self.native_tools),
            "max_tokens": request.max_new_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if self.native_tools and request.tools:
            body["tools"] = [dict(tool) for tool in request.tools]
            body["tool_choice"] = "auto"
        if request.logprobs:
            body["logprobs"] = True
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream" if self.stream else "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _delay(self, attempt: int, retry_after_s: float | None) -> float:
        delay = retry_after_s if retry_after_s is not None else self.backoff_s * 2 ** attempt
        return max(0.0, min(delay, MAX_BACKOFF_S))

    def _generate_one(self, request: ModelRequest) -> ModelOutput:
        body = self.request_body(request)
        attempts = self.max_retries + 1
        last = _Retryable("")
        for attempt in range(attempts):
            started = time.perf_counter()
            try:
                result = self._attempt(body, request.stop, started)
            except httpx.TransportError as exc:  # connect/read errors and timeouts
                result = _Retryable(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
                                    error=BackendTimeout if isinstance(exc, httpx.TimeoutException)
                                    else BackendUnavailable)
            except httpx.HTTPError as exc:  # e.g. undecodable body: retrying will not help
                return ModelOutput.failed(BackendUnavailable(f"{type(exc).__name__} from {self.url}: {exc}"),
                                     time.perf_counter() - started)
            if isinstance(result, ModelOutput):
                return result
            last = result
            if attempt + 1 < attempts:
                self._sleep(self._delay(attempt, result.retry_after_s))
        return ModelOutput.failed(last.error(
            f"gave up on {self.url} after {attempts} attempt{'s' if attempts != 1 else ''}; "
            f"last error: {last.reason}", retry_after_s=last.retry_after_s))

    def _attempt(self, body: Mapping[str, Any], stop: Sequence[str],
                 started: float) -> ModelOutput | _Retryable:
        with self._client.stream("POST", self.url, json=body, headers=self._headers(),
                                 timeout=self.timeout_s) as response:
            status = response.status_code
            if status == 429 or status >= 500:
                response.read()
                return _Retryable(f"HTTP {status}: {_server_message(response.text)}",
                                  _retry_after_s(response.headers.get("retry-after")),
                                  RateLimited if status == 429 else
                                  BackendTimeout if status == 504 else BackendUnavailable)
            if status >= 300:
                response.read()
                message = _server_message(response.text)
                return ModelOutput.failed(_client_error(status, f"HTTP {status} from {self.url}: {message}"),
                                     time.perf_counter() - started)
            if "text/event-stream" in response.headers.get("content-type", ""):
                return self._read_stream(response, stop, started)
            # Not a stream (stream=False, or a server that ignores "stream"): one JSON body.
            response.read()
            total_s = time.perf_counter() - started
            try:
                data = json.loads(response.text)
            except ValueError:
                return ModelOutput.failed(BackendUnavailable(
                    f"invalid JSON from {self.url}: {response.text[:ERROR_BODY_CHARS]}"), total_s)
            return _parse_completion(data, stop, total_s)

    def _read_stream(self, response: httpx.Response, stop: Sequence[str],
                     started: float) -> ModelOutput:
        state = _StreamState(started=started)
        for payload in _sse_data(response.iter_lines()):
            try:
                chunk = json.loads(payload)
            except ValueError:
                return ModelOutput.failed(BackendUnavailable(
                    f"invalid stream chunk from {self.url}: {payload[:ERROR_BODY_CHARS]}"),
                    time.perf_counter() - started)
            if not isinstance(chunk, dict):
                continue
            if chunk.get("error"):  # vLLM reports failures inside the stream
                return ModelOutput.failed(BackendUnavailable(
                    f"error in stream from {self.url}: {_server_message(json.dumps(chunk))}"),
                    time.perf_counter() - started)
            state.add(chunk)
        return state.output(stop)
