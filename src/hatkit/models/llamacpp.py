"""A GGUF file run by llama.cpp (llama-cpp-python) behind the ChatModel protocol.

For users who deploy the trained model the way most small on-device models are deployed:
`hatkit export gguf CKPT OUT.gguf`, then `--model llamacpp:OUT.gguf` runs the agent, its
evaluations or `hatkit serve` on the file llama.cpp will run in production.

Prompts are built by hatkit, not by llama.cpp: the tokenizer and its chat template are read
from the GGUF file (transformers' GGUF reader), so the loop's `ChatTemplateFormat` renders
every turn exactly as it does for `LocalModel`, special-token strings in viewer messages and
tool outputs broken up, and llama.cpp receives token ids. It never tokenizes text with special
tokens enabled, so no message can smuggle in chat markup.

llama.cpp keeps one context, and a prompt that continues the context's tokens evaluates only
its new ones. An evaluation interleaves episodes (each call of a batch is another
conversation), so after each request the context's keys and values are kept (`STATE_BYTES` at
most, oldest out first), and a prompt that continues a kept conversation further than the
live context does starts from it: the next turn of an episode evaluates its new tokens only.
Requests are decoded one after another; greedy requests (temperature 0) take the argmax, as
hatkit's own decoder does, so an f32 file gives the checkpoint's fp32 tokens.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .base import ModelOutput, ModelRequest
from .chat_format import ChatTemplateFormat
from .decoding import common_prefix_len
from .errors import BadModelRequest, ContextTooLong
from .streaming import StreamDetokenizer, TextSink, stop_reached

INSTALL_HINT = ("llama-cpp-python is not installed: pip install 'hatkit[llamacpp]' (it builds "
                "llama.cpp from source; in a VM whose CPU flags differ from the host, build with "
                "CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON')")
DEFAULT_CONTEXT = 8192
"""Tokens of context to allocate when the file's own training context is larger."""
STATE_BYTES = 1 << 30
"""Memory for kept conversation states (keys and values of evaluated tokens)."""
MIN_REUSE = 16
"""A kept state is restored only when it saves at least this many tokens of evaluation."""


class LlamaSession:
    """The few llama_cpp.Llama operations the backend uses, including its sequence state
    (llama.cpp's C API; the wheel is pinned in the llamacpp extra)."""

    def __init__(self, llama: Any) -> None:
        self.llama = llama

    def n_ctx(self) -> int:
        return int(self.llama.n_ctx())

    def generate(self, tokens: Sequence[int], **sampling: Any) -> Any:
        return self.llama.generate(tokens, **sampling)

    def evaluated(self) -> list[int]:
        """The tokens whose keys and values the context holds."""
        return [int(t) for t in self.llama.input_ids[: self.llama.n_tokens]]

    def snapshot(self) -> bytes:
        """The context's keys and values (sequence 0)."""
        import ctypes

        import llama_cpp

        ctx = self.llama._ctx.ctx
        size = int(llama_cpp.llama_state_seq_get_size(ctx, 0))
        buf = (ctypes.c_uint8 * size)()
        got = int(llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0))
        return bytes(buf)[:got]

    def restore(self, tokens: Sequence[int], data: bytes) -> bool:
        """Put a snapshot of `tokens` back as the context; False if llama.cpp refused it."""
        import ctypes

        import llama_cpp

        llama = self.llama
        ctx = llama._ctx.ctx
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
        src = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if int(llama_cpp.llama_state_seq_set_data(ctx, src, len(data), 0)) != len(data):
            llama.reset()
            return False
        llama.input_ids[: len(tokens)] = tokens
        llama.n_tokens = len(tokens)
        llama._requires_eval = True  # the next generate evaluates at least one token
        return True


def load_llama(path: Path, n_ctx: int, n_threads: int | None) -> Any:
    """llama_cpp.Llama for `path` (raises ValueError with the install hint without it)."""
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise ValueError(INSTALL_HINT) from exc
    threads = n_threads or len(os.sched_getaffinity(0))  # every usable core, as torch takes
    return Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_batch=512,
                 logits_all=False, verbose=False)


def gguf_tokenizer(path: Path) -> Any:
    """The HF tokenizer (with its chat template) stored in the GGUF file itself."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def gguf_context_length(path: Path) -> int:
    """The model's trained context length from the file's metadata (DEFAULT_CONTEXT if none)."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    for name, field in reader.fields.items():
        if name.endswith(".context_length"):
            return int(field.parts[field.data[0]][0])
    return DEFAULT_CONTEXT


class LlamaCppModel:
    """A GGUF model decoded by llama.cpp; hatkit renders the prompts (see the module doc)."""

    def __init__(self, path: str | Path, *, n_ctx: int | None = None, n_threads: int | None = None,
                 llama: Any = None, tokenizer: Any = None, native_tools: bool | None = None) -> None:
        """`path`: the .gguf file. `n_ctx`: tokens of context (default: the file's trained
        length, at most DEFAULT_CONTEXT). `llama` (a LlamaSession, or an object with its
        methods) and `tokenizer` replace what the file would give (tests; a loaded model)."""
        self.path = Path(path)
        if llama is None and not self.path.is_file():
            raise ValueError(f"llamacpp:{path}: no such file (write one with `hatkit export gguf "
                             "CKPT OUT.gguf`)")
        if llama is None and self.path.suffix.lower() != ".gguf":
            raise ValueError(f"llamacpp:{path}: expected a .gguf file")
        self.tok = tokenizer if tokenizer is not None else gguf_tokenizer(self.path)
        if n_ctx is None:
            n_ctx = min(gguf_context_length(self.path), DEFAULT_CONTEXT) if llama is None else None
        self.llama = llama if llama is not None else LlamaSession(
            load_llama(self.path, int(n_ctx or 0), n_threads))
        self.context_tokens = int(self.llama.n_ctx())
        """A prompt plus its reply must fit in this many tokens."""
        self.model_id = f"llamacpp:{self.path.name}"
        template = str(getattr(self.tok, "chat_template", "") or "")
        self.native_tools = ("tools" in template) if native_tools is None else native_tools
        self._format = ChatTemplateFormat(self.tok, self.native_tools)
        self._lock = threading.Lock()  # one llama.cpp context: one request at a time
        self._states: OrderedDict[tuple[int, ...], bytes] = OrderedDict()
        self.stats: dict[str, float] = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                        "state_hits": 0, "tokens_reused": 0}

    @classmethod
    def from_spec(cls, spec: str) -> LlamaCppModel:
        """'llamacpp:FILE.gguf' -> the backend."""
        return cls(spec.removeprefix("llamacpp:"))

    def token_format(self) -> ChatTemplateFormat:
        return self._format

    def generate(self, requests: Sequence[ModelRequest],
                 streams: Sequence[TextSink | None] | None = None) -> list[ModelOutput]:
        """One output per request, decoded in order; `streams[i]` gets request i's text as it
        is decided. A prompt that leaves no room for a reply is a ContextTooLong output."""
        if streams is not None and len(streams) != len(requests):
            raise ValueError(f"{len(streams)} streams for {len(requests)} requests")
        outputs = []
        for i, request in enumerate(requests):
            sink = streams[i] if streams is not None else None
            with self._lock:
                outputs.append(self._one(request, sink))
        return outputs

    def _one(self, r: ModelRequest, sink: TextSink | None) -> ModelOutput:
        if r.prompt_ids is None:
            raise ValueError("LlamaCppModel needs prompt_ids (the agent loop provides them)")
        if r.logprobs:
            return ModelOutput.failed(BadModelRequest(
                "the llamacpp backend returns no log-probs; RL rollouts need a local checkpoint"))
        prompt = [int(t) for t in r.prompt_ids]
        if len(prompt) >= self.context_tokens:
            return ModelOutput.failed(ContextTooLong(
                f"the prompt has {len(prompt)} tokens; {self.model_id}'s context holds "
                f"{self.context_tokens}"))
        budget = min(r.max_new_tokens, self.context_tokens - len(prompt))
        greedy = r.temperature <= 0
        stream = StreamDetokenizer(self.tok, self._format.eos_id, sink) if sink else None
        eos = self._format.eos_id
        self._resume(prompt)
        ids: list[int] = []
        text = ""
        finish = "length"
        start = time.perf_counter()
        ttft = 0.0
        tokens = self.llama.generate(
            prompt, temp=0.0 if greedy else r.temperature, top_k=1 if greedy else 0,
            top_p=1.0 if greedy else r.top_p, min_p=0.0, typical_p=1.0, repeat_penalty=1.0)
        for token in tokens:
            token = int(token)
            if not ids:
                ttft = time.perf_counter() - start
            ids.append(token)
            if token == eos:
                finish = "stop"
                break
            if stream is not None:
                stream.push(token)
            text += self.tok.decode([token], skip_special_tokens=False)
            if stop_reached(text, r.stop):
                finish = "stop"
                break
            if len(ids) >= budget:
                break
        tokens.close()  # leaves llama.cpp's context at the tokens it evaluated
        self._keep()
        total = time.perf_counter() - start
        self.stats["requests"] += 1
        self.stats["prompt_tokens"] += len(prompt)
        self.stats["completion_tokens"] += len(ids)
        return ModelOutput(text=self.tok.decode(ids, skip_special_tokens=True), token_ids=ids,
                           finish_reason="stop" if finish == "stop" else "length",
                           prompt_tokens=len(prompt), completion_tokens=len(ids), ttft_s=ttft,
                           total_s=total)

    # -- kept conversations --
    def _resume(self, prompt: list[int]) -> None:
        """Restore the kept state that `prompt` continues furthest, when it beats the context."""
        live = common_prefix_len(self.llama.evaluated(), prompt)
        best, best_n = None, live + MIN_REUSE
        for key in self._states:
            n = common_prefix_len(key, prompt)
            if n == len(key) and n >= best_n:  # a state is used whole (its tokens all match)
                best, best_n = key, n
        if best is None:
            return
        if self.llama.restore(best, self._states[best]):
            self._states.move_to_end(best)
            self.stats["state_hits"] += 1
            self.stats["tokens_reused"] += len(best)

    def _keep(self) -> None:
        tokens = tuple(self.llama.evaluated())
        if not tokens:
            return
        for key in [k for k in self._states if len(k) < len(tokens) and tokens[:len(k)] == k]:
            del self._states[key]  # superseded: this conversation went on
        self._states[tokens] = self.llama.snapshot()
        self._states.move_to_end(tokens)
        total = sum(len(v) for v in self._states.values())
        while len(self._states) > 1 and total > STATE_BYTES:
            total -= len(self._states.popitem(last=False)[1])

