"""The quick-start generation path on a tiny random-weight model."""

from __future__ import annotations

from hatkit.models.generate import chat_generate
from tiny import tiny_llama, tiny_tokenizer


def test_greedy_generation_is_deterministic_and_timed() -> None:
    tok = tiny_tokenizer()
    model = tiny_llama(len(tok))
    messages = [{"role": "system", "content": "you are mia"}, {"role": "user", "content": "price?"}]
    a = chat_generate(model, tok, messages, max_new_tokens=12)
    b = chat_generate(model, tok, messages, max_new_tokens=12)
    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, return_dict=False)
    assert a.text == b.text
    assert a.prompt_tokens == len(prompt) > 20
    assert 1 <= a.new_tokens <= 12
    assert 0 < a.first_token_s <= a.seconds
