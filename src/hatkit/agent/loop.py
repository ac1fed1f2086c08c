"""The turn loop: model <-> tools <-> hooks, recorded as a token-accurate Trace.

An episode is a generator that yields model requests and receives model outputs, so many
episodes can wait on the model together and a backend can decode them in one batch
(`Agent.run_many`). What an episode is expected to meet (bad model output, a failing tool, a
raising hook, a typed backend failure, `ModelError`) becomes an event and the episode ends with
a reply; this loop is the one place backend failures become trace events. Anything else is a
bug and propagates, with a note naming the episode, so it is never scored as a model's answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Any

from ..harness import Harness, PostToolEvent, PreReplyEvent, PreToolEvent, ToolContext
from ..harness.hooks import OnErrorEvent, ToolPermission
from ..models.base import ChatMessage, ChatModel, ModelOutput, ModelRequest, ToolCall
from ..models.chat_format import tool_result_text
from ..models.errors import ModelError
from .errors import (
    AgentError,
    HookVeto,
    InjectedOutput,
    MalformedToolCall,
    PermissionDenied,
    ServerError,
    ToolBudgetExceeded,
    ToolTimeout,
    UnknownTool,
)
from .hook_runner import run_hooks
from .parsing import ParsedOutput, parse_native_calls, parse_output
from .tool_runner import ThreadToolRunner, ToolRunner, check_call
from .trace import Event, Span, ToolRecord, Trace

Step = Generator[ModelRequest, ModelOutput, str]
STOP_AFTER_CALL = ("</tool_call>",)


class Agent:
    """A harness + a model: makes episodes and runs them (one, or many batched)."""

    def __init__(self, harness: Harness, model: ChatModel, *, locale: str | None = None,
                 permissions: Iterable[str] | None = None,
                 state_factory: Callable[[], Any] | None = None,
                 tool_runner: ToolRunner | None = None, temperature: float | None = None,
                 logprobs: bool = False) -> None:
        self.harness = harness
        self.model = model
        self.locale = locale or harness.spec.locale
        self.rendered = harness.render(self.locale,
                                       tools_in_prompt=False if model.native_tools else None)
        self.tools = {t.name: t for t in harness.runtime_tools(self.locale)}
        self.hooks = harness.enabled_hooks()
        self.permissions = frozenset(harness.spec.permissions if permissions is None else permissions)
        self.state_factory = state_factory or harness.new_state
        self.tool_runner = tool_runner or ThreadToolRunner()
        self.temperature = harness.spec.model.temperature if temperature is None else temperature
        self.logprobs = logprobs
        self.system = ChatMessage("system", self.rendered.system_prompt)
        self.schemas = list(self.rendered.tools) if model.native_tools else []
        self.format = model.token_format()
        self.prefix_ids = self.format.prefix_ids(self.system, self.schemas) if self.format else None

    def episode(self, state: Any = None, episode_id: str | None = None) -> Episode:
        return Episode(self, self.state_factory() if state is None else state, episode_id)

    def run(self, message: str, state: Any = None) -> Trace:
        """One viewer message -> one finished trace."""
        return self.run_many([message], [state])[0]

    def run_many(self, messages: Sequence[str], states: Sequence[Any] | None = None) -> list[Trace]:
        """Run episodes concurrently; their model calls are batched step by step."""
        episodes = [self.episode(states[i] if states else None) for i in range(len(messages))]
        drive(self.model, [e.ask(m) for e, m in zip(episodes, messages, strict=True)],
              labels=[e.trace.episode_id for e in episodes])
        return [e.trace for e in episodes]


def drive(model: ChatModel, steps: Sequence[Step], labels: Sequence[str] | None = None) -> list[str]:
    """Advance generators together: collect their pending requests, generate them in one
    call, send each output back. Returns each generator's final reply.

    An exception that is not a `ModelError` (a bug in a backend, a tool runner, the loop)
    propagates with a note naming the episode(s) it hit (`labels[i]`, else the index)."""
    results: list[str] = [""] * len(steps)
    pending: dict[int, ModelRequest] = {}
    name = (lambda i: labels[i]) if labels is not None else (lambda i: f"#{i}")
    for i, step in enumerate(steps):
        try:
            pending[i] = next(step)
        except StopIteration as done:
            results[i] = done.value
        except Exception as exc:
            exc.add_note(f"in episode {name(i)}")
            raise
    while pending:
        order = list(pending)
        try:
            outputs = generate_safely(model, [pending[i] for i in order])
        except Exception as exc:
            shown = ", ".join(name(i) for i in order[:8]) + (" ..." if len(order) > 8 else "")
            exc.add_note(f"backend {model.model_id} raised on a batch of {len(order)} "
                         f"request(s) for episode(s) {shown}")
            raise
        for i, out in zip(order, outputs, strict=True):
            try:
                pending[i] = steps[i].send(out)
            except StopIteration as done:
                results[i] = done.value
                del pending[i]
            except Exception as exc:
                exc.add_note(f"in episode {name(i)}")
                raise
    return results


def generate_safely(model: ChatModel, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
    """model.generate, with a raised `ModelError` (the backend failed the whole call) turned
    into one error output per request. Any other exception is a bug and propagates."""
    try:
        outputs = model.generate(requests)
    except ModelError as exc:
        return [ModelOutput.failed(exc) for _ in requests]
    if len(outputs) != len(requests):
        raise RuntimeError(f"backend {model.model_id} returned {len(outputs)} outputs for "
                           f"{len(requests)} requests")
    return outputs


class Episode:
    """One conversation under one harness; `ask` handles one viewer message."""

    def __init__(self, agent: Agent, state: Any, episode_id: str | None = None) -> None:
        self.agent = agent
        self.state = state
        h = agent.harness
        self.trace = Trace(h.name, h.content_hash, agent.model.model_id, agent.locale,
                           permissions=sorted(agent.permissions))
        if episode_id:
            self.trace.episode_id = episode_id
        self.messages: list[ChatMessage] = [agent.system]
        self.ids: list[int] | None = list(agent.prefix_ids) if agent.prefix_ids is not None else None
        self.trace.spans.append(Span("system", agent.system.content,
                                     list(agent.prefix_ids) if agent.prefix_ids is not None else None,
                                     source="harness"))
        self._glue: list[int] = []
        self._failures: dict[str, int] = {}
        """Tool failures by kind in the current message (repeats end it: max_repeated_errors)."""
        self._prompt_tail = 0
        """Generation-prompt ids fed for a request whose answer has not been recorded yet."""
        self.turn = 0
        self.tools_ok: list[str] = []

    # -- token bookkeeping --
    def _feed(self, message: ChatMessage, segment: str, source: str) -> None:
        ids = None
        fmt = self.agent.format
        if fmt is not None and self.ids is not None:
            ids = self._glue + fmt.message_ids(self.messages, message, self.agent.schemas)
            self._glue = []
            self.ids.extend(ids)
        self.messages.append(message)
        self.trace.spans.append(Span(segment, message.content, ids, turn=self.turn, source=source))

    def _request(self) -> ModelRequest:
        fmt = self.agent.format
        if fmt is not None and self.ids is not None:
            gp = fmt.generation_prompt_ids(self.messages, self.agent.schemas)
            last = self.trace.spans[-1]
            if last.token_ids is not None:
                last.token_ids.extend(gp)
            self.ids.extend(gp)
            self._prompt_tail = len(gp)
        spec = self.agent.harness.spec
        return ModelRequest(
            messages=list(self.messages), tools=self.agent.schemas,
            prompt_ids=list(self.ids) if self.ids is not None else None,
            prefix_len=len(self.agent.prefix_ids or []), max_new_tokens=spec.model.max_new_tokens,
            temperature=self.agent.temperature, top_p=spec.model.top_p,
            stop=STOP_AFTER_CALL if not self.agent.model.native_tools else (),
            logprobs=self.agent.logprobs)

    def _record_generation(self, out: ModelOutput, parsed: ParsedOutput) -> list[Span]:
        """Spans of what the model wrote, split by segment on token boundaries."""
        fmt = self.agent.format
        spans: list[Span] = []
        self._prompt_tail = 0
        if fmt is not None and out.token_ids is not None and self.ids is not None:
            pieces = fmt.decode_pieces(out.token_ids)
            pos = 0
            for k, (tok, piece) in enumerate(zip(out.token_ids, pieces, strict=True)):
                seg = parsed.segment_at(pos) if piece and tok != fmt.eos_id else (
                    spans[-1].segment if spans else parsed.segment_at(pos))
                lp = out.logprobs[k] if out.logprobs else None
                if spans and spans[-1].segment == seg:
                    spans[-1].text += piece
                    assert spans[-1].token_ids is not None
                    spans[-1].token_ids.append(tok)
                    if lp is not None and spans[-1].logprobs is not None:
                        spans[-1].logprobs.append(lp)
                else:
                    spans.append(Span(seg, piece, [tok], [lp] if lp is not None else None,
                                      turn=self.turn, source="model"))
                pos += len(piece)
            self.ids.extend(out.token_ids)
            ended = bool(out.token_ids) and out.token_ids[-1] == fmt.eos_id
            self._glue = ([] if ended else [fmt.eos_id]) + fmt.after_generation_ids()
        else:
            for seg, s, e in parsed.spans:
                if spans and spans[-1].segment == seg:
                    spans[-1].text += parsed.text[s:e]
                else:
                    spans.append(Span(seg, parsed.text[s:e], turn=self.turn, source="model"))
            if out.tool_calls:
                spans.append(Span("tool_call", tool_result_text(
                    [{"name": c.name, "arguments": dict(c.arguments)} for c in out.tool_calls]),
                    turn=self.turn, source="model"))
        self.trace.spans.extend(spans)
        return spans

    def _event(self, kind: str, **data: Any) -> None:
        self.trace.events.append(Event(kind, self.turn, data))

    # -- the loop --
    def ask(self, text: str) -> Step:
        """Handle one viewer message; yields model requests; returns the final reply."""
        started = time.perf_counter()
        spec = self.agent.harness.spec
        self._feed(ChatMessage("user", text), "user", "viewer")
        calls_made = parse_failures = reply_retries = model_calls = 0
        self._failures = {}
        first_call = True
        reply = ""
        while True:
            if model_calls >= spec.limits.max_turns:
                reply = self._fallback("max_turns", f"no reply after {model_calls} model calls")
                break
            request = self._request()
            out = yield request
            model_calls += 1
            self.trace.timings.model_calls += 1
            self.trace.timings.model_s += out.total_s
            if first_call:
                self.trace.timings.ttft_s = out.ttft_s
                first_call = False
            if out.error is not None:
                if not isinstance(out.error, ModelError):  # a third-party backend's bug
                    raise TypeError(f"{self.agent.model.model_id} reported a failure as "
                                    f"{type(out.error).__name__}, not a ModelError: {out.error!r}")
                self._event("model_error", **out.error.event_data())
                reply = self._fallback("model_error", f"{out.error.kind}: {out.error}")
                break
            parsed = self._parse(out)
            generated = self._record_generation(out, parsed)
            self.turn += 1
            if parsed.wants_tools:
                native = bool(out.tool_calls)
                answered = list(parsed.tool_calls)
                if native:  # every native call needs an answer under its own id
                    answered += [ToolCall(b.name, {}, b.id) for b in parsed.bad_calls]
                self.messages.append(ChatMessage("assistant", parsed.text, tuple(answered),
                                                 native_tool_calls=native))
                parse_failures += len(parsed.bad_calls)
                for bad in parsed.bad_calls:
                    err = MalformedToolCall(f"{bad.reason}: {bad.raw[:200]}")
                    self._tool_error(ToolCall(bad.name or "?", {}, bad.id), err)
                for call in parsed.tool_calls:
                    calls_made += 1
                    self._handle_call(call, over_budget=calls_made > spec.limits.max_tool_calls)
                if parse_failures > spec.limits.max_parse_retries:
                    reply = self._fallback("max_parse_retries",
                                           f"{parse_failures} malformed tool calls")
                    break
                kind, times = max(self._failures.items(), key=lambda kv: kv[1], default=("", 0))
                if times >= spec.limits.max_repeated_errors:
                    reply = self._fallback("repeated_tool_errors", f"{times} tool calls failed "
                                           f"with {kind} in one message")
                    break
                continue
            reply = parsed.reply
            self.messages.append(ChatMessage("assistant", parsed.text))
            verdict = self._check_reply(reply)
            if verdict is None:
                for s in generated:
                    s.vetoed = True
                reply_retries += 1
                if reply_retries > spec.limits.max_reply_retries:
                    reply = self._fallback("reply_vetoed", "every reply attempt was blocked")
                    break
                continue
            reply = verdict
            break
        self.trace.final_reply = reply
        self.trace.timings.total_s += time.perf_counter() - started
        return reply

    def _parse(self, out: ModelOutput) -> ParsedOutput:
        fmt = self.agent.format
        text = out.text
        if fmt is not None and out.token_ids is not None:
            ids = out.token_ids[:-1] if out.token_ids and out.token_ids[-1] == fmt.eos_id else out.token_ids
            text = fmt.decode(ids)
        if "<tool_call>" in text and out.finish_reason == "stop" and not text.rstrip().endswith(
                "</tool_call>") and text.rstrip().endswith(("}", "]")):
            text = text.rstrip() + "\n</tool_call>"  # HTTP servers strip the stop string
        parsed = parse_output(text, call_prefix=f"call_{self.turn}")
        if out.tool_calls:  # a backend with native tools: its calls are authoritative
            parsed.tool_calls, parsed.bad_calls, repairs = parse_native_calls(
                out.tool_calls, call_prefix=f"call_{self.turn}")
            parsed.repairs += repairs
            parsed.reply = ""
        for r in parsed.repairs:
            self._event("repair", repair=r.kind, detail=r.detail)
        return parsed

    def _handle_call(self, call: ToolCall, over_budget: bool) -> None:
        agent = self.agent
        spec = agent.tools.get(call.name)
        t0 = time.perf_counter()
        try:
            if over_budget:
                raise ToolBudgetExceeded(
                    f"tool-call budget of {agent.harness.spec.limits.max_tool_calls} is spent; answer now")
            if spec is None:
                raise UnknownTool(f"no tool named '{call.name}'; available: {', '.join(agent.tools)}")
            args = check_call(spec, call.arguments, agent.permissions)
            h0 = time.perf_counter()
            pre = run_hooks(agent.hooks, PreToolEvent(call.name, args, agent.permissions, spec.permission))
            self._hook_bookkeeping(pre.errors, time.perf_counter() - h0)
            if pre.veto is not None:
                self._event("hook_veto", hook=pre.veto.hook, reason=pre.veto.reason, tool=call.name)
                is_perm = isinstance(next((h for h in agent.hooks if getattr(h, "name", "") == pre.veto.hook),
                                          None), ToolPermission)
                raise (PermissionDenied if is_perm else HookVeto)(pre.veto.reason)
            ctx = ToolContext(self.state, agent.harness.rules, agent.permissions)
            result = agent.tool_runner.run(spec, args, ctx, agent.harness.spec.limits.tool_timeout_s)
        except AgentError as err:
            self.trace.timings.tools_s += time.perf_counter() - t0
            if err.injected:
                self._event("fault_injected", fault=err.kind, tool=call.name)
            self._tool_error(call, err, time.perf_counter() - t0)
            return
        seconds = time.perf_counter() - t0
        self.trace.timings.tools_s += seconds
        if isinstance(result, InjectedOutput):
            self._event("fault_injected", fault=result.kind, tool=call.name)
            text = result.text
            result = {"injected_fault": result.kind, "text": result.text}
        else:
            text = tool_result_text(result)
        h0 = time.perf_counter()
        post = run_hooks(agent.hooks, PostToolEvent(call.name, args, text))
        self._hook_bookkeeping(post.errors, time.perf_counter() - h0)
        if post.veto is not None:
            self._event("hook_veto", hook=post.veto.hook, reason=post.veto.reason, tool=call.name)
            self._tool_error(call, HookVeto(post.veto.reason), seconds)
            return
        if post.text is not None:
            self._event("hook_rewrite", hook=post.rewrites[-1].hook, tool=call.name)
            text = post.text
        if not isinstance(result, dict) or "injected_fault" not in result:
            self.tools_ok.append(call.name)  # a broken answer is no basis for a claim
        self.trace.tool_calls.append(ToolRecord(call.name, dict(args), result, seconds=seconds,
                                                turn=self.turn))
        self._feed(ChatMessage("tool", text, tool_call_id=call.id, name=call.name), "tool_output", "tool")

    def _tool_error(self, call: ToolCall, err: AgentError, seconds: float = 0.0) -> None:
        self._event("tool_error", error_type=err.kind, tool=call.name, message=str(err))
        if not (err.injected or isinstance(err, ToolTimeout | ServerError | MalformedToolCall
                                           | ToolBudgetExceeded)):  # transient, or own limits
            self._failures[err.kind] = self._failures.get(err.kind, 0) + 1
        self.trace.tool_calls.append(ToolRecord(call.name, dict(call.arguments), None, err.kind,
                                                str(err), seconds, self.turn))
        outcome = run_hooks(self.agent.hooks, OnErrorEvent(err.kind, str(err), call.name))
        self._hook_bookkeeping(outcome.errors, 0.0)
        self._feed(ChatMessage("tool", tool_result_text(err.as_payload()), tool_call_id=call.id,
                               name=call.name), "tool_output", "runtime")

    def _check_reply(self, reply: str) -> str | None:
        """The reply after pre_reply hooks, or None when vetoed (feedback is fed)."""
        if not reply.strip():
            self._event("empty_reply")
            self._feed(ChatMessage("user", "[runtime] Your message had no reply for the viewer. "
                                   "Answer the viewer now."), "user", "runtime")
            return None
        h0 = time.perf_counter()
        outcome = run_hooks(self.agent.hooks, PreReplyEvent(reply, tuple(self.tools_ok)))
        self._hook_bookkeeping(outcome.errors, time.perf_counter() - h0)
        if outcome.veto is not None:
            v = outcome.veto
            self._event("hook_veto", hook=v.hook, reason=v.reason, reply=reply)
            self._feed(ChatMessage("user", f"[hook {v.hook}] Your reply was blocked: {v.reason}. "
                                   "Write the reply again without that."), "user", "hook")
            return None
        for d in outcome.rewrites:
            self._event("hook_rewrite", hook=d.hook, reason=d.reason)
        return outcome.text if outcome.text is not None else reply

    def _hook_bookkeeping(self, errors: list[tuple[str, str]], seconds: float) -> None:
        self.trace.timings.hooks_s += seconds
        for name, error in errors:
            self._event("hook_error", hook=name, error=error)

    def _fallback(self, reason: str, detail: str) -> str:
        text = self.agent.harness.spec.fallback_reply
        self._event("fallback", reason=reason, detail=detail)
        if self._prompt_tail and self.ids is not None:  # a request went out but its answer
            last = self.trace.spans[-1].token_ids  # was an error: take back the generation
            if last is not None:  # prompt it added, the fed reply brings its own header
                del last[-self._prompt_tail:]
            del self.ids[-self._prompt_tail:]
            self._prompt_tail = 0
        self._feed(ChatMessage("assistant", text), "reply", "runtime")
        return text
