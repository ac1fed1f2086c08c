"""Tiny random-weight models for the default test tier (built from a config, no download)."""

from __future__ import annotations

from typing import Any

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["<unk>", "<|im_start|>", "<|im_end|>", "\n"]
    words += [chr(c) for c in range(32, 127)]  # one token per printable ASCII character
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tok.decoder = decoders.Fuse()  # characters join back without spaces
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<|im_end|>",
                                   bos_token="<|im_start|>", pad_token="<|im_end|>")
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_llama(vocab_size: int, seed: int = 0) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=4096, tie_word_embeddings=False,
                         eos_token_id=2, bos_token_id=1, pad_token_id=2, initializer_range=0.5)
    return LlamaForCausalLM(config).eval()


def tiny_requests(model: Any, questions: list[str], **kw: Any) -> list[Any]:
    """One ModelRequest per question, each a shared system prompt (the cached prefix) plus the
    question, with exact prompt ids from `model`'s token format."""
    from hatkit.models.base import ChatMessage, ModelRequest

    fmt = model.token_format()
    system = ChatMessage("system", "you are a shop host. " * 8)
    prefix = fmt.prefix_ids(system, [])
    reqs = []
    for q in questions:
        user = ChatMessage("user", q)
        ids = prefix + fmt.message_ids([system], user, []) + fmt.generation_prompt_ids([system, user], [])
        reqs.append(ModelRequest([system, user], prompt_ids=ids, prefix_len=len(prefix), **kw))
    return reqs


def teacher_forced_agreement(reference: Any, other: Any, questions: list[str],
                             max_new_tokens: int) -> list[float]:
    """Per question: the share of `reference`'s greedy reply tokens that `other` (a LocalModel
    of the same tokenizer) picks at each position, given the reference's history."""
    import torch

    shares = []
    for req in tiny_requests(reference, questions, max_new_tokens=max_new_tokens):
        ref = reference.generate([req])[0].token_ids or []
        ids = torch.tensor([list(req.prompt_ids or []) + ref[:-1]])
        with torch.inference_mode():
            picks = other.model(ids).logits[0, -len(ref):].argmax(-1).tolist()
        shares.append(sum(a == b for a, b in zip(picks, ref, strict=True)) / len(ref))
    return shares


CORPUS = [
    "Hello there, how much is the lamp? The lamp costs $49.90 today.",
    "Is the blue scarf in stock? Yes, 12 are left and shipping is free over $99.",
    "Returns are accepted within 30 days; electronics within 15 days.",
] * 20


def byte_bpe_tokenizer(chat_template: str = CHAT_TEMPLATE) -> Any:
    """A small GPT-2 style (byte-level BPE) tokenizer, trained here, with ChatML specials."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=320, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<|endoftext|>",
                                   bos_token="<|im_start|>", eos_token="<|im_end|>",
                                   pad_token="<|im_end|>")
    fast.chat_template = chat_template
    return fast


def save_checkpoint(folder: Any, model: Any, tokenizer: Any) -> Any:
    """A checkpoint folder as the pipeline writes one (weights and tokenizer)."""
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
