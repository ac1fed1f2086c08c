"""The real default model (slow tier): the packaged GGUF converts into a checkpoint that
reloads with the same weights and answers with the rendered harness."""

from __future__ import annotations

from pathlib import Path

import pytest

from hatkit.harness import load_harness
from hatkit.models import default_model as dm
from hatkit.models.generate import chat_generate

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dm.ensure_default_model(tmp_path_factory.mktemp("home"), log=lambda _: None)


def test_converted_weights_match_the_gguf(converted: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    gguf = dm.source_gguf()
    direct = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    cached = AutoModelForCausalLM.from_pretrained(converted, dtype=torch.float32)
    ids = torch.tensor([[1, 2210, 314, 253, 1378, 28]])
    with torch.no_grad():
        assert torch.allclose(direct(ids).logits, cached(ids).logits, atol=1e-5)
    assert cached.num_parameters() == pytest.approx(134.5e6, rel=0.01)


def test_default_model_answers_with_the_rendered_harness(converted: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(converted)
    model = AutoModelForCausalLM.from_pretrained(converted).eval()
    system = load_harness("live_commerce").render().system_prompt
    g = chat_generate(model, tok, [{"role": "system", "content": system},
                                   {"role": "user", "content": "Is shipping free over 100 dollars?"}],
                      max_new_tokens=24)
    assert g.prompt_tokens > 1500 and g.new_tokens > 0 and g.text
