"""A trained draft on the target's own last hidden state: multi-token prediction (MTP) heads.

Speculative decoding needs a draft that is right often and costs little. A separate small
model costs a pass of its own per drafted token, and SmolLM2's output layer alone is 28M of its
135M parameters. These heads cost almost nothing: head i reads the hidden state the target
already computed for its next token and guesses the token i + 1 places after that one, through
one residual block (hidden x hidden) and an output layer over a reduced vocabulary (the tokens
the target actually writes in the domain, initialised from the target's own output rows). One
verify pass of the target checks all guesses; the output stays the target's greedy output.

Trained by `hatkit train draft` (hatkit.train.draft). Saved beside the checkpoint they belong
to (`draft_heads/`, with the hash of its weights, so heads of another checkpoint are refused).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

HEADS_DIR = "draft_heads"
DRAFT_CONFIDENCE = 0.3
"""Default `min_confidence` of a draft (LocalModel's `draft_confidence`): a guess is drafted
while the product of the heads' probabilities up to it stays at or above this. Chosen on dev
questions (cpu-sitting Fixed-SFT, 4 heads, 24 of its replies after a tool result, heads-only
decoding replayed): the heads draft 2.0 tokens a pass instead of 4 and 62% of them are
accepted instead of 32%, for 2% fewer tokens a pass (2.24 against 2.29). Most misses are words
copied from the tool result (89% of the first head's), which the lookup branch drafts."""
_WEIGHTS, _META = "heads.safetensors", "heads.json"


class DraftHeadsMismatch(ValueError):
    """Heads that do not belong to this target (another hidden size, vocabulary or checkpoint)."""


@dataclass(frozen=True)
class HeadsMeta:
    """What the heads were made for, checked when they are loaded."""

    num_heads: int
    hidden_size: int
    vocab_size: int
    """The target's full vocabulary size."""
    kept: int
    """Tokens of the reduced output vocabulary."""
    target: str = ""
    """Hash of the target's weights file(s), so heads of another checkpoint are refused."""


class MTPHeads(nn.Module):
    """`num_heads` heads over a reduced vocabulary `token_ids` (ids of the full vocabulary)."""

    def __init__(self, hidden_size: int, token_ids: Sequence[int], num_heads: int = 4,
                 vocab_size: int | None = None, target: str = "") -> None:
        super().__init__()
        if num_heads < 1 or not token_ids:
            raise ValueError("MTP heads need at least one head and one kept token")
        ids = torch.tensor(sorted(set(int(t) for t in token_ids)), dtype=torch.long)
        self.token_ids: torch.Tensor
        self.register_buffer("token_ids", ids)
        blocks = [nn.Linear(hidden_size, hidden_size) for _ in range(num_heads)]
        for block in blocks:  # a zero block starts each head as the target's own next-token guess
            nn.init.zeros_(block.weight)
            nn.init.zeros_(block.bias)
        self.blocks = nn.ModuleList(blocks)
        self.out = nn.Linear(hidden_size, len(ids), bias=False)
        self.meta = HeadsMeta(num_heads, hidden_size, int(vocab_size or int(ids.max()) + 1), len(ids), target)

    @classmethod
    def for_target(cls, target: Any, token_ids: Sequence[int], num_heads: int = 4,
                   target_hash: str = "") -> MTPHeads:
        """Heads sized for `target`, the output rows copied from its output layer."""
        emb = target.get_output_embeddings().weight
        heads = cls(emb.shape[1], token_ids, num_heads, vocab_size=emb.shape[0], target=target_hash)
        with torch.no_grad():
            heads.out.weight.copy_(emb.detach().float()[heads.token_ids])
        return heads

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., hidden) -> (..., num_heads, kept) scores of each head."""
        h = hidden.float()
        stacked = torch.stack([h + nn.functional.silu(block(h)) for block in self.blocks], dim=-2)
        scores: torch.Tensor = self.out(stacked)
        return scores

    @torch.no_grad()
    def propose(self, hidden: torch.Tensor, n: int, min_confidence: float = 0.0) -> list[int]:
        """Up to `n` drafted ids from one position's hidden state (1-D): the heads' guesses in
        order, cut before the first one where the product of the heads' probabilities so far
        (each head's softmax over the kept vocabulary) falls below `min_confidence`."""
        if n <= 0:
            return []
        conf, best = self.logits(hidden[None])[0, :n].softmax(-1).max(-1)
        keep = int((conf.cumprod(0) >= min_confidence).sum()) if min_confidence > 0 else n
        return [int(t) for t in self.token_ids[best[:keep]]]

    # ---- files ----
    def save(self, folder: Path) -> Path:
        from safetensors.torch import save_file

        folder.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()}
        save_file(state, str(folder / _WEIGHTS))
        (folder / _META).write_text(json.dumps(asdict(self.meta), indent=2) + "\n", "utf-8")
        return folder

    @classmethod
    def load(cls, folder: Path, target: Any | None = None, target_hash: str | None = None) -> MTPHeads:
        """Heads from `folder`; with a target, refused unless they were made for it."""
        from safetensors.torch import load_file

        meta_path = folder / _META
        if not meta_path.is_file():
            raise FileNotFoundError(f"{folder}: no {_META} (train heads with `hatkit train draft`)")
        meta = HeadsMeta(**json.loads(meta_path.read_text("utf-8")))
        state = load_file(str(folder / _WEIGHTS))
        heads = cls(meta.hidden_size, state["token_ids"].tolist(), meta.num_heads, meta.vocab_size,
                    meta.target)
        heads.load_state_dict(state)
        if target is not None:
            emb = target.get_output_embeddings().weight
            if (emb.shape[1], emb.shape[0]) != (meta.hidden_size, meta.vocab_size):
                raise DraftHeadsMismatch(
                    f"{folder}: heads for hidden size {meta.hidden_size} and {meta.vocab_size} tokens; "
                    f"the target has {emb.shape[1]} and {emb.shape[0]}")
        if target_hash and meta.target and target_hash != meta.target:
            raise DraftHeadsMismatch(f"{folder}: heads were trained for checkpoint {meta.target[:12]}, "
                                     f"not {target_hash[:12]}; retrain them with `hatkit train draft`")
        return heads.eval()

    @classmethod
    def for_checkpoint(cls, checkpoint: Path, target: Any) -> MTPHeads:
        """The heads `hatkit train draft` saved in `checkpoint`, refused unless made for its weights."""
        return cls.load(checkpoint / HEADS_DIR, target=target, target_hash=weights_hash(checkpoint))


def has_heads(folder: Path) -> bool:
    """Whether `folder` holds saved heads."""
    return (folder / _META).is_file()


def weights_hash(checkpoint: Path) -> str:
    """sha256 over a checkpoint's weight files (names and bytes), the heads' link to it."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted(checkpoint.glob("*.safetensors")) + sorted(checkpoint.glob("*.bin")):
        h.update(f.name.encode())
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def forward_hidden(model: Any, *, last: bool = False, **inputs: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits, last hidden state) of one causal-LM pass: the base model, then its output layer
    (the hidden state the heads read is the one the output layer reads); `last` computes the
    logits of the final position only (a prefill)."""
    hidden = model.base_model(**inputs).last_hidden_state
    return model.get_output_embeddings()(hidden[:, -1:] if last else hidden), hidden
