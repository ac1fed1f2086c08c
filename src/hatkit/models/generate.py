"""Plain chat generation with timings, for the quick start (the agent runtime will wrap
models behind one protocol; this is the smallest real path through transformers)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Generation:
    text: str
    prompt_tokens: int
    new_tokens: int
    seconds: float
    first_token_s: float

    @property
    def tokens_per_s(self) -> float:
        decode = self.seconds - self.first_token_s
        return (self.new_tokens - 1) / decode if self.new_tokens > 1 and decode > 0 else 0.0


def chat_generate(model: Any, tokenizer: Any, messages: list[dict[str, str]],
                  max_new_tokens: int = 128) -> Generation:
    """Greedy generation of one assistant message; measures time to first token too."""
    import torch
    from transformers import TextIteratorStreamer

    inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                           return_tensors="pt", return_dict=True)
    prompt_len = int(inputs["input_ids"].shape[1])
    streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
    first: list[float] = []

    class _Timer:  # records the moment the first new token arrives
        def put(self, value: Any) -> None:
            if value.shape[-1] == 1 and not first:
                first.append(time.perf_counter())

        def end(self) -> None:
            pass

    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False,
                             streamer=_Timer(), pad_token_id=tokenizer.eos_token_id)
    seconds = time.perf_counter() - start
    del streamer
    new = out[0, prompt_len:]
    text = tokenizer.decode(new, skip_special_tokens=True).strip()
    return Generation(text, prompt_len, int(new.shape[0]), seconds,
                      (first[0] - start) if first else seconds)
