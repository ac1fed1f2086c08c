"""`hatkit export gguf`: a checkpoint -> GGUF, read back with the `gguf` package and with
hatkit's own GGUF import (default_model.convert_gguf, transformers' loader), plus the harness
files written beside it. Tiny random-weight models; the real default model is `slow`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from hatkit.cli import app
from hatkit.export.companions import companion_paths, write_companions
from hatkit.export.gguf_export import ExportError, export_gguf, iter_tensors, permute_qk
from hatkit.harness import load_harness
from hatkit.models.default_model import convert_gguf
from tiny import CHAT_TEMPLATE, byte_bpe_tokenizer, save_checkpoint, tiny_llama

PROMPTS = ["Hello there, how much is the lamp?", "Is the blue scarf in stock?", "12 + 30 = "]
def tiny_qwen3(vocab_size: int) -> Any:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(1)
    config = Qwen3Config(vocab_size=vocab_size, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=8, max_position_embeddings=4096, tie_word_embeddings=True,
                         eos_token_id=2, bos_token_id=1, pad_token_id=2, initializer_range=0.5)
    return Qwen3ForCausalLM(config).eval()


@pytest.fixture(scope="module")
def llama_ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok = byte_bpe_tokenizer()
    return save_checkpoint(tmp_path_factory.mktemp("llama"), tiny_llama(len(tok)), tok)


def load(folder: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(folder)


def greedy(model: Any, tokenizer: Any, prompt: str) -> list[int]:
    ids = torch.tensor([tokenizer(prompt, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=12, do_sample=False, pad_token_id=2)
    return [int(t) for t in out[0, ids.shape[1]:]]


def reimport(gguf_file: Path, into: Path) -> tuple[Any, Any]:
    """The exported file through hatkit's own GGUF -> checkpoint import."""
    convert_gguf(gguf_file, into)
    return load(into)


def fields(path: Path) -> dict[str, Any]:
    return {k: f.contents() for k, f in gguf.GGUFReader(path).fields.items()
            if not k.startswith("GGUF.")}


def test_permute_is_the_inverse_of_transformers_gguf_import() -> None:
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    rows = np.arange(12 * 3 * 5, dtype=np.float32).reshape(12 * 3, 5)  # 3 heads of 12 rows
    back = LlamaTensorProcessor()._reverse_permute_weights(permute_qk(rows, 3), 3, 3)
    assert np.array_equal(back, rows) and not np.array_equal(permute_qk(rows, 3), rows)


def test_llama_round_trip_gives_the_same_tensors_tokenizer_and_greedy_output(
        llama_ckpt: Path, tmp_path: Path) -> None:
    out = tmp_path / "tiny.gguf"
    seen: list[tuple[int, int]] = []
    result = export_gguf(llama_ckpt, out, "f32", progress=lambda d, t: seen.append((d, t)))
    assert (result.arch, result.tensors, result.tokenizer_pre, result.warnings) == (
        "llama", 2 * 9 + 3, "gpt-2", [])
    assert seen[-1][0] == seen[-1][1] and len(seen) == result.tensors
    original, tok = load(llama_ckpt)
    meta = fields(out)
    assert meta["general.architecture"] == "llama" and meta["llama.block_count"] == 2
    assert (meta["llama.attention.head_count"], meta["llama.attention.head_count_kv"]) == (4, 2)
    by_id = sorted(tok.get_vocab().items(), key=lambda kv: kv[1])
    assert meta["tokenizer.ggml.tokens"] == [t for t, _ in by_id]
    assert meta["tokenizer.ggml.token_type"][:4] == [3, 3, 3, 1]  # specials are CONTROL
    assert meta["tokenizer.ggml.merges"] and meta["tokenizer.chat_template"] == CHAT_TEMPLATE
    assert (meta["tokenizer.ggml.bos_token_id"], meta["tokenizer.ggml.eos_token_id"]) == (1, 2)
    assert meta["tokenizer.ggml.add_bos_token"] is False

    back, back_tok = reimport(out, tmp_path / "back")
    sd, bsd = original.state_dict(), back.state_dict()
    assert set(sd) == set(bsd)
    assert all(torch.equal(sd[k], bsd[k]) for k in sd), "weights changed in the round trip"
    assert back_tok.chat_template == CHAT_TEMPLATE
    for prompt in PROMPTS:
        assert back_tok(prompt)["input_ids"] == tok(prompt)["input_ids"]
        assert greedy(back, back_tok, prompt) == greedy(original, tok, prompt)


def test_reexporting_the_reimported_checkpoint_reproduces_the_file(llama_ckpt: Path,
                                                                   tmp_path: Path) -> None:
    first = tmp_path / "a.gguf"
    export_gguf(llama_ckpt, first, "f32")
    convert_gguf(first, tmp_path / "back")
    second = export_gguf(tmp_path / "back", tmp_path / "b.gguf", "f32").path
    a, b = dict(iter_tensors(first)), dict(iter_tensors(second))
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    skip = {"general.name"}
    assert {k: v for k, v in fields(first).items() if k not in skip} == {
        k: v for k, v in fields(second).items() if k not in skip}


@pytest.mark.parametrize(("dtype", "matrix_type", "tol"), [
    ("f16", gguf.GGMLQuantizationType.F16, 1e-3), ("bf16", gguf.GGMLQuantizationType.BF16, 1e-2),
    ("q8_0", gguf.GGMLQuantizationType.Q8_0, 2e-2)])
def test_smaller_types_keep_norms_f32_and_weights_close(llama_ckpt: Path, tmp_path: Path,
                                                        dtype: str, matrix_type: Any,
                                                        tol: float) -> None:
    full = export_gguf(llama_ckpt, tmp_path / "f32.gguf", "f32")
    small = export_gguf(llama_ckpt, tmp_path / f"{dtype}.gguf", dtype)
    assert small.size < full.size
    types = {t.name: t.tensor_type for t in gguf.GGUFReader(small.path).tensors}
    assert types["blk.0.attn_norm.weight"] == gguf.GGMLQuantizationType.F32
    assert types["blk.0.attn_q.weight"] == matrix_type
    ref = dict(iter_tensors(full.path))
    for name, data in iter_tensors(small.path):
        scale = float(np.abs(ref[name]).max())
        assert np.abs(data - ref[name]).max() <= tol * scale, name
    back, tok = reimport(small.path, tmp_path / "back")  # hatkit loads it too
    assert len(greedy(back, tok, PROMPTS[0])) == 12


def test_qwen3_exports_every_weight_unpermuted(tmp_path: Path) -> None:
    """transformers' GGUF import drops Qwen3's head_dim, so no re-import here: every GGUF
    tensor is compared with the weight it came from."""
    tok = byte_bpe_tokenizer()
    model = tiny_qwen3(len(tok))
    ckpt = save_checkpoint(tmp_path / "qwen3", model, tok)
    result = export_gguf(ckpt, tmp_path / "q.gguf", "f32")
    tensors = dict(iter_tensors(result.path))
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN3, 2)
    weights = {names.get_name(k, try_suffixes=(".weight",)): v.numpy()
               for k, v in model.state_dict().items() if k != "lm_head.weight"}  # tied
    assert result.arch == "qwen3" and tensors.keys() == weights.keys()
    assert "blk.1.attn_k_norm.weight" in tensors
    assert all(np.array_equal(tensors[k], weights[k]) for k in tensors)


def test_head_dim_other_than_hidden_over_heads_is_written(tmp_path: Path) -> None:
    tok = byte_bpe_tokenizer()
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=16)
    ckpt = save_checkpoint(tmp_path / "q", Qwen3ForCausalLM(config), tok)
    meta = fields(export_gguf(ckpt, tmp_path / "q.gguf", "f32").path)
    assert (meta["qwen3.attention.key_length"], meta["qwen3.attention.value_length"]) == (16, 16)
    assert meta["qwen3.rope.dimension_count"] == 16


def test_refuses_what_it_cannot_export_and_leaves_no_file(llama_ckpt: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.gguf"
    with pytest.raises(ExportError, match=r"no config\.json"):
        export_gguf(tmp_path, out)
    lora = tmp_path / "lora"
    lora.mkdir()
    (lora / "adapter_config.json").write_text("{}")
    with pytest.raises(ExportError, match="LoRA adapter"):
        export_gguf(lora, out)
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    (gpt2 / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ExportError, match="model_type 'gpt2' is not exported"):
        export_gguf(gpt2, out)
    with pytest.raises(ExportError, match="dtype 'q4'"):
        export_gguf(llama_ckpt, out, "q4")
    # a tensor the architecture does not have
    from safetensors.torch import load_file, save_file

    odd = tmp_path / "odd"
    odd.mkdir()
    for f in llama_ckpt.iterdir():
        (odd / f.name).write_bytes(f.read_bytes())
    weights = load_file(odd / "model.safetensors")
    save_file({**weights, "model.layers.0.extra.weight": torch.ones(2, 2)},
              odd / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ExportError, match=r"extra\.weight"):
        export_gguf(odd, out)
    assert list(tmp_path.glob("*.gguf*")) == [] and list(tmp_path.glob(".*partial")) == []


def test_companions_hold_the_prompt_and_tools_the_agent_is_trained_with(llama_ckpt: Path,
                                                                        tmp_path: Path) -> None:
    harness = load_harness("live_commerce")
    out = tmp_path / "agent.gguf"
    side = write_companions(out, llama_ckpt, harness)
    rendered = harness.render()  # this template has no tools section: tools in the prompt
    assert (side.system_prompt, side.tools, side.modelfile) == companion_paths(out)
    assert side.system_prompt.read_text() == rendered.system_prompt
    assert json.loads(side.tools.read_text()) == rendered.tools
    assert side.modelfile is not None
    text = side.modelfile.read_text()
    assert "FROM ./agent.gguf\n" in text
    assert f'SYSTEM """{rendered.system_prompt}"""' in text
    for stop in ("<|im_end|>", "<|im_start|>", "</tool_call>"):
        assert f'PARAMETER stop "{stop}"' in text
    assert f"PARAMETER temperature {harness.spec.model.temperature:g}\n" in text
    assert f"PARAMETER num_predict {harness.spec.model.max_new_tokens}\n" in text


def test_a_native_tools_template_gets_its_tools_section_in_the_modelfile(tmp_path: Path) -> None:
    template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                "{% if m['role'] == 'system' and tools %}\n# Tools\n{% for t in tools %}"
                "{{ t['function']['name'] }}\n{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
                "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    tok = byte_bpe_tokenizer(template)
    ckpt = save_checkpoint(tmp_path / "native", tiny_llama(len(tok)), tok)
    harness = load_harness("live_commerce")
    side = write_companions(tmp_path / "n.gguf", ckpt, harness)
    rendered = harness.render(tools_in_prompt=False)
    assert side.system_prompt.read_text() == rendered.system_prompt
    assert side.modelfile is not None
    modelfile = side.modelfile.read_text()
    assert "# Tools\n" + "".join(t["function"]["name"] + "\n" for t in rendered.tools) in modelfile


def test_cli_exports_and_writes_the_files_beside(llama_ckpt: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "agent.gguf"
    done = runner.invoke(app, ["export", "gguf", str(llama_ckpt), str(out), "--dtype", "q8_0"])
    assert done.exit_code == 0, done.output
    assert out.is_file() and all(p.is_file() for p in companion_paths(out))
    assert "llama, q8_0" in done.output and "ollama create" in done.output
    bad = runner.invoke(app, ["export", "gguf", str(tmp_path), str(tmp_path / "y.gguf")])
    assert bad.exit_code == 1 and "no config.json" in bad.output
    wrong = runner.invoke(app, ["export", "gguf", str(llama_ckpt), str(tmp_path / "y.bin")])
    assert wrong.exit_code == 1 and "must end in .gguf" in wrong.output


@pytest.mark.slow
def test_default_model_round_trip_reproduces_the_packaged_gguf(tmp_path: Path) -> None:
    """Packaged GGUF (Q4_1/Q8_0) -> hatkit checkpoint -> GGUF: every tensor equals the
    packaged one dequantised; q8_0 gives the packaged token_embd bytes back exactly."""
    from hatkit.models.default_model import ensure_default_model, source_gguf

    packaged = source_gguf()
    folder = ensure_default_model()
    f32 = export_gguf(folder, tmp_path / "f32.gguf", "f32")
    assert f32.tokenizer_pre == "smollm"
    a, b = dict(iter_tensors(packaged)), dict(iter_tensors(f32.path))
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    want, got = fields(packaged), fields(f32.path)
    for key in want:
        if key.startswith(("tokenizer.", "llama.")):
            assert got.get(key) == want[key], key
    q8 = export_gguf(folder, tmp_path / "q8.gguf", "q8_0")
    emb = {p: next(t for t in gguf.GGUFReader(p).tensors if t.name == "token_embd.weight")
           for p in (packaged, q8.path)}
    assert bytes(emb[packaged].data) == bytes(emb[q8.path].data)
