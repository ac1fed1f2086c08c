"""Which parts of a reply may be streamed to the client while the model is still writing it.

The loop decides a reply only after the whole message is generated: it parses it (a message
with a tool call is not a reply and is never shown), then runs the harness's `pre_reply`
hooks, which may rewrite it (superlatives, length) or veto it (medical claims, prices without
a tool result) — a vetoed reply is regenerated. Text sent over SSE cannot be taken back, so
`ReplyGate` releases text under one of three policies (`StreamPolicy`):

- `hold`: nothing is sent before the turn ends; then the final reply. Exact, but the time to
  first token equals the turn time.
- `sentences` (the default when the harness has pre_reply hooks): a sentence is released once
  it is complete and the pre_reply hooks, run on all reply text so far, neither veto it nor
  rewrite what was already sent; what is sent is the hooks' (rewritten) text. No text a hook
  rejects is ever sent. The trade-off: a hook that fires only on a *later* sentence (a veto,
  or a rewrite reaching back) cannot unsend the earlier, clean sentences. The stream then
  ends with finish_reason `content_filter` and the final, hook-approved reply in the last
  chunk's `hatkit.reply` (`hatkit.stream.withdrawn` is true).
- `tokens` (the default without pre_reply hooks, where nothing can change the reply): text
  is released as it is decoded, holding back only a trailing partial `<think>`/`<tool_call>`
  tag.

In every policy a model message is held until its first visible characters rule out a tool
call (`<`, `{`, `[` or a code fence start one), text from a brace or code fence still open is
held (the parser finds bare calls there), and a message that turns out to carry a tool call
sends nothing more. Reasoning in `<think>` is never sent. Hooks run here without side effects
on the trace (the loop runs them again, and records them, on the final text).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ..agent.hook_runner import run_hooks
from ..agent.parsing import parse_output, pending_call_start
from ..harness import Hook, PreReplyEvent

StreamPolicy = Literal["auto", "hold", "sentences", "tokens"]
STREAM_POLICIES: tuple[str, ...] = ("auto", "hold", "sentences", "tokens")
_SENTENCE_END = re.compile(r"[.!?…]+[\"')\]]*(?=\s)|[。！？\n]")
_TAGS = ("<think>", "</think>", "<tool_call>", "</tool_call>")


def has_reply_hooks(hooks: Sequence[Any]) -> bool:
    """Whether any hook can rewrite or veto a reply (declarative pre_reply rules, or a Python
    Hook overriding pre_reply)."""
    for h in hooks:
        if isinstance(h, Hook):
            if type(h).pre_reply is not Hook.pre_reply:
                return True
        elif getattr(h, "event", None) == "pre_reply":
            return True
    return False


def resolve_policy(policy: StreamPolicy, hooks: Sequence[Any]) -> StreamPolicy:
    if policy != "auto":
        return policy
    return "sentences" if has_reply_hooks(hooks) else "tokens"


def _partial_tag_start(text: str) -> int:
    """Index where a trailing, unfinished tag (e.g. '<tool_c') starts; len(text) if none."""
    cut = text.rfind("<", max(0, len(text) - 12))
    if cut >= 0 and any(t.startswith(text[cut:]) for t in _TAGS):
        return cut
    return len(text)


class ReplyGate:
    """Fed the text of each model call as it is generated; calls `emit` with releasable text.

    One gate serves one agent turn: `begin_call()` before each model call, `feed(delta)` while
    it decodes (from the decoding thread), `finish(final_reply)` when the turn has ended.
    """

    def __init__(self, policy: StreamPolicy, hooks: Sequence[Any],
                 tools_ok: Callable[[], Sequence[str]], emit: Callable[[str], None]) -> None:
        self.policy = resolve_policy(policy, hooks)
        self.hooks = list(hooks)
        self.tools_ok = tools_ok
        self.emit = emit
        self.released = ""
        """Everything sent to the client so far."""
        self.withdrawn = False
        self._text = ""
        self._blocked = False

    def begin_call(self) -> None:
        self._text, self._blocked = "", False

    def feed(self, delta: str) -> None:
        self._text += delta
        if self._blocked or self.policy == "hold":
            return
        parsed = parse_output(self._text)
        if parsed.wants_tools:
            self._blocked = True  # a tool-call message: never shown
            return
        reply = parsed.reply
        reply = reply[:pending_call_start(reply)]  # an open '{' or fence may yet be a bare call
        if not reply or reply[0] in "<{[`":
            return  # could still become a tool call
        if self.policy == "tokens":
            stable = reply[:_partial_tag_start(reply)].rstrip()
        else:
            ends = [m.end() for m in _SENTENCE_END.finditer(reply)]
            stable = reply[:ends[-1]] if ends else ""
        if len(stable) <= len(self.released):
            return
        candidate = stable
        if self.policy == "sentences":
            outcome = run_hooks(self.hooks, PreReplyEvent(stable, tuple(self.tools_ok())))
            if outcome.veto is not None:
                return  # held; the loop will veto or regenerate
            if outcome.text is not None:
                candidate = outcome.text
        self._release(candidate)

    def _release(self, candidate: str) -> None:
        if not candidate.startswith(self.released):
            self._blocked = True  # diverged from what was sent: send nothing more this call
            return
        delta = candidate[len(self.released):]
        if delta:
            self.released = candidate
            self.emit(delta)

    def finish(self, final_reply: str) -> None:
        """Send the rest of the final reply, or mark the stream withdrawn if it diverged."""
        if final_reply.startswith(self.released):
            rest = final_reply[len(self.released):]
            if rest:
                self.released = final_reply
                self.emit(rest)
        else:
            self.withdrawn = True
