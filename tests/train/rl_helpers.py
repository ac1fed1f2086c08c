"""Shared pieces of the HSA-RL tests: a saved tiny model, a toy reward, a scripted
token-level policy that calls a tool, and a small config."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from hatkit.agent.trace import Trace
from hatkit.harness import Harness
from hatkit.models.base import ModelOutput, ModelRequest
from hatkit.models.chat_format import ChatTemplateFormat
from hatkit.train.rl import HatRLConfig
from tiny import tiny_llama, tiny_tokenizer

LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")


def save_tiny(folder: Path, seed: int = 0) -> Path:
    """A tiny random-weight Llama + char tokenizer saved as a checkpoint folder."""
    tok = tiny_tokenizer()
    tiny_llama(len(tok), seed=seed).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


class LowercaseScore:
    """Toy task reward: the share of lowercase letters in the text the model generated
    (trained tokens only). A tiny model can move it within a few high-LR steps, and it is
    computed from the rollout itself, so a rise can only come from the policy changing."""

    def __init__(self) -> None:
        self.tok = tiny_tokenizer()

    def __call__(self, trace: Trace, harness: Harness) -> Mapping[str, float]:
        view = trace.training_view()
        text = self.tok.decode([i for i, m in zip(view.input_ids, view.loss_mask, strict=True) if m])
        return {"score": sum(c in LOWER for c in text) / max(1, len(text))}


class ToolThenReply:
    """A token-level policy: reasoning + a `lookup` tool call, then (after the tool result)
    reasoning + a reply. Its ids are the tiny tokenizer's, as a LocalModel's would be."""

    model_id = "scripted-tool-policy"
    native_tools = False

    def __init__(self, think_tool: str = "plan the lookup", think_reply: str = "ok",
                 reply: str = "It is in stock.") -> None:
        self.fmt = ChatTemplateFormat(tiny_tokenizer(), native_tools=False)
        self.think_tool, self.think_reply, self.reply = think_tool, think_reply, reply

    def token_format(self) -> ChatTemplateFormat:
        return self.fmt

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        outs = []
        for r in requests:
            if r.messages[-1].role == "tool":
                text = f"<think>{self.think_reply}</think>{self.reply}"
                ids = [*self.fmt.encode(text), self.fmt.eos_id]
            else:
                text = (f"<think>{self.think_tool}</think><tool_call>\n"
                        '{"name": "lookup", "arguments": {"item": "mug"}}\n</tool_call>')
                ids = self.fmt.encode(text)
            outs.append(ModelOutput(text, token_ids=ids))
        return outs


def tiny_config(tmp: Path, harness: Path, **overrides: Any) -> HatRLConfig:
    """A config for the tiny model on the minimal harness: one model call per message,
    12 new tokens, no saving unless asked, no loggers."""
    values: dict[str, Any] = dict(
        output_dir=str(tmp / "out"), model=str(save_tiny(tmp / "tiny")), harness=str(harness),
        n_variants=0, n_questions=4, categories=["chit_chat"], max_steps=3, num_generations=4,
        per_device_train_batch_size=4, max_new_tokens=12, max_turns=1, learning_rate=0.02,
        beta=0.0, save_strategy="no", use_cpu=True, report_to=[], seed=0, logging_steps=1,
        disable_tqdm=True, fault_rate=0.0)
    values.update(overrides)
    return HatRLConfig(**values)


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    """Tiny models gain nothing from intra-op threads, and on a machine shared with other jobs
    idle-spinning threads made the RL tests about 5x slower; restored afterwards."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
