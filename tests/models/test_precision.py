"""Weight precision (issue 18.1) on a tiny random-weight model: int8 greedy decoding is
deterministic and independent of batching and prefix caching, streams, and mostly agrees with
fp32; `--model` specs carry a precision."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hatkit.models.local import LocalModel
from hatkit.models.precision import apply_precision, int8_linear, precision_of, resolve_precision
from hatkit.models.select import load_model, split_precision
from tiny import teacher_forced_agreement, tiny_llama, tiny_requests, tiny_tokenizer

QUESTIONS = ["price?", "is the red mug in stock in size m?", "hi", "when does it ship to chicago?",
             "what colours?", "can I return it if it does not fit?"]


def _model(precision: str | None = "int8", seed: int = 1, **kwargs: object) -> LocalModel:
    tok = tiny_tokenizer()
    return LocalModel(tiny_llama(len(tok), seed=seed), tok, "tiny", precision=precision,
                      **kwargs)  # type: ignore[arg-type]




def test_int8_replaces_every_linear_layer_and_keeps_the_embedding() -> None:
    m = _model()
    assert m.precision == "int8"
    linears = [n for n, mod in m.model.named_modules() if isinstance(mod, torch.nn.Linear)]
    assert linears == []
    assert isinstance(m.model.lm_head, int8_linear())
    assert m.model.model.embed_tokens.weight.dtype == torch.float32


def test_fused_q_k_v_give_each_layers_own_output_and_keep_nothing() -> None:
    """q/k/v (and gate/up) run as one int8 call on their shared input; each layer gets exactly
    what its own Int8Linear would give, and the group holds no tensor once all have read."""
    tok = tiny_tokenizer()
    ref = tiny_llama(len(tok), seed=1)
    attn = ref.model.layers[0].self_attn
    own = {n: int8_linear()(getattr(attn, n).weight, getattr(attn, n).bias)
           for n in ("q_proj", "k_proj", "v_proj")}
    fused = apply_precision(tiny_llama(len(tok), seed=1), "int8").model.layers[0].self_attn
    x = torch.randn(3, 5, 32)
    with torch.inference_mode():
        for name in ("q_proj", "k_proj", "v_proj"):
            assert torch.equal(getattr(fused, name)(x), own[name](x))
        assert fused.q_proj.group.x is None and fused.q_proj.group.y is None
        other = torch.randn(3, 5, 32)  # a new input recomputes, even after a partial read
        fused.q_proj(x)
        assert torch.equal(fused.k_proj(other), own["k_proj"](other))


def test_int8_rows_are_quantised_alone() -> None:
    """Stock dynamic quantisation scales a layer's whole input at once, so a row's output
    depends on its batch; here each token is quantised on its own (bit-identical)."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(32, 16)
    layer = int8_linear()(linear.weight, linear.bias)
    x = torch.randn(5, 32) * torch.tensor([1.0, 100.0, 0.01, 3.0, 0.0])[:, None]
    together = layer(x)
    alone = torch.cat([layer(x[i:i + 1]) for i in range(5)])
    assert torch.equal(together, alone)
    assert (together - torch.nn.functional.linear(x, layer_weight(layer), layer.bias)).abs().max() < 0.1 * (
        1 + x.abs().max())


def layer_weight(layer: torch.nn.Module) -> torch.Tensor:
    return layer.packed.unpack()[0].dequantize()  # type: ignore[operator, no-any-return]


def test_int8_greedy_is_deterministic_and_batching_and_prefix_cache_change_nothing() -> None:
    tok = tiny_tokenizer()
    weights = tiny_llama(len(tok), seed=1)
    single = LocalModel(weights, tok, "tiny", precision="int8", prefix_cache=False, max_batch=1)
    batched = LocalModel(weights, tok, "tiny", max_batch=8)  # same int8 weights
    assert batched.precision == "int8"
    reqs = tiny_requests(single, QUESTIONS, max_new_tokens=16)
    a = single.generate(reqs)
    b = batched.generate(reqs)
    c = batched.generate(reqs)  # prefix cache warm
    assert [o.token_ids for o in a] == [o.token_ids for o in b] == [o.token_ids for o in c]
    assert batched.stats["batches"] == 2 and batched.stats["prefix_hits"] == 1
    assert single.stats["batches"] == len(QUESTIONS)


def test_int8_streams_each_rows_text() -> None:
    m = _model(max_batch=8)
    reqs = tiny_requests(m, QUESTIONS[:4], max_new_tokens=12)
    got: list[list[str]] = [[] for _ in reqs]
    outs = m.generate(reqs, streams=[g.append for g in got])
    for out, pieces in zip(outs, got, strict=True):
        ids = [t for t in out.token_ids or [] if t != m.token_format().eos_id]
        assert "".join(pieces) == m.tok.decode(ids, skip_special_tokens=False)
    assert [o.token_ids for o in m.generate(reqs)] == [o.token_ids for o in outs]


def test_int8_greedy_tokens_mostly_agree_with_fp32() -> None:
    """Teacher-forced on fp32's greedy reply, the share of positions where int8 picks the same
    token (means 0.84-0.94 over seeds 1-6 on this tiny model; the real model: bench/decode.py)."""
    shares = []
    for seed in (1, 2):
        shares += teacher_forced_agreement(_model("fp32", seed=seed), _model("int8", seed=seed),
                                           QUESTIONS, max_new_tokens=24)
    assert sum(shares) / len(shares) >= 0.75, shares


def test_bf16_decodes_and_a_bad_precision_is_refused() -> None:
    m = _model("bf16")
    assert m.precision == "bf16" and m.model.dtype == torch.bfloat16
    out = m.generate(tiny_requests(m, ["hi"], max_new_tokens=4))[0]
    assert out.error is None and len(out.token_ids or []) >= 1
    with pytest.raises(ValueError, match="precision must be one of"):
        _model("int4")
    with pytest.raises(ValueError, match="already has int8"):
        apply_precision(_model("int8").model, "bf16")
    assert precision_of(tiny_llama(200)) == "fp32"


def test_model_specs_carry_a_precision(tmp_path: Path) -> None:
    assert split_precision("local@int8") == ("local", "int8")
    assert split_precision("/ckpt/run@2/final@bf16") == ("/ckpt/run@2/final", "bf16")
    assert split_precision("/ckpt/run@2") == ("/ckpt/run@2", None)
    assert split_precision("local") == ("local", None)
    with pytest.raises(ValueError, match="local model only"):
        load_model("openai:http://127.0.0.1:1/v1#m@int8")
    folder = tmp_path / "ckpt@v1"
    tok = tiny_tokenizer()
    tiny_llama(len(tok), seed=3).save_pretrained(folder)
    tok.save_pretrained(folder)
    m = load_model(f"{folder}@int8")
    assert isinstance(m, LocalModel) and m.precision == "int8"
    assert m.model_id == "local:ckpt@v1@int8"
    plain = load_model(str(folder))
    assert isinstance(plain, LocalModel) and plain.precision == "fp32" and plain.model_id == "local:ckpt@v1"


def test_int8h_keeps_the_output_layer_fp32_and_quantises_the_rest() -> None:
    m = _model("int8h")
    assert m.precision == "int8h"
    assert type(m.model.lm_head) is torch.nn.Linear and m.model.lm_head.weight.dtype == torch.float32
    plain = [n for n, mod in m.model.named_modules() if type(mod) is torch.nn.Linear]
    assert plain == ["lm_head"]
    out = m.generate(tiny_requests(m, ["hi"], max_new_tokens=4))[0]
    assert out.error is None and len(out.token_ids or []) >= 1
    with pytest.raises(ValueError, match="already has int8h"):
        apply_precision(m.model, "int8")


@pytest.mark.parametrize(("hardware", "expected"), [(True, "bf16"), (False, "fp32")])
def test_auto_is_bf16_only_where_the_cpu_multiplies_bf16(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         hardware: bool, expected: str) -> None:
    """Emulated bf16 is slower than fp32, so `auto` picks it only with AMX/AVX512-BF16; the
    model id and `precision` name what was chosen, not 'auto'."""
    from hatkit.models import precision as precision_module

    monkeypatch.setattr(precision_module, "cpu_has_bf16_matmul", lambda: hardware)
    assert resolve_precision("auto") == expected and resolve_precision("auto", "cuda") == "bf16"
    assert resolve_precision("int8") == "int8"
    assert split_precision("ckpt@auto") == ("ckpt", "auto")
    folder = tmp_path / "ckpt"
    tok = tiny_tokenizer()
    tiny_llama(len(tok), seed=3).save_pretrained(folder)
    tok.save_pretrained(folder)
    m = load_model(f"{folder}@auto")
    assert isinstance(m, LocalModel) and m.precision == expected
    assert m.model_id == ("local:ckpt@bf16" if hardware else "local:ckpt")


def test_smoothing_moves_an_outlier_channel_into_the_weights() -> None:
    """One input channel 100x the others sets each token's int8 scale and flattens the rest;
    with SmoothQuant factors from its measured range the layer is the same product in exact
    arithmetic and several times closer to fp32."""
    from hatkit.models.precision import _smooth

    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 32)
    x = torch.randn(16, 64)
    x[:, 3] *= 100
    ref = torch.nn.functional.linear(x, linear.weight, linear.bias)
    plain = int8_linear()(linear.weight, linear.bias)
    smooth = _smooth(x.abs().amax(0), [linear.weight])
    smoothed = int8_linear()(linear.weight, linear.bias, smooth)
    with torch.inference_mode():
        err_plain = (plain(x) - ref).abs().mean()
        err_smooth = (smoothed(x) - ref).abs().mean()
    assert err_smooth * 3 < err_plain, (err_smooth, err_plain)
    assert _smooth(None, [linear.weight]) is None


def test_the_output_layer_recomputes_its_best_logits_in_fp32() -> None:
    """The top EXACT_TOP outputs of each row are fp32 values, the others int8 estimates, so
    the greedy pick is fp32's whenever fp32's best is among int8's best few."""
    from hatkit.models.precision import EXACT_TOP

    torch.manual_seed(0)
    weight = torch.randn(500, 32)
    layer = int8_linear()(weight, None, None, weight, EXACT_TOP)
    x = torch.randn(2, 3, 32)
    with torch.inference_mode():
        y = layer(x)
    ref = x @ weight.T
    best = y.topk(EXACT_TOP, -1).indices
    assert torch.allclose(y.gather(-1, best), ref.gather(-1, best), atol=1e-5)
    assert torch.equal(y.argmax(-1), ref.argmax(-1))
    assert not torch.allclose(y, ref, atol=1e-5)  # the rest stay int8 estimates
    assert "top 8 exact" in repr(layer)


def test_local_model_int8_is_calibrated_and_keeps_the_fp32_output_rows() -> None:
    """LocalModel measures each layer's input range on plain shop text (no harness, no
    evaluation prompt) before quantising; the output layer's exact rows are its fp32 weights
    (for a tied model, the embedding it keeps anyway)."""
    m = _model("int8")
    layers = [mod for mod in m.model.modules() if isinstance(mod, int8_linear())]
    assert layers and all(layer.inv_smooth is not None for layer in layers)
    head = m.model.lm_head
    assert head.exact is not None and torch.equal(head.exact, _model("fp32").model.lm_head.weight)
    bare = apply_precision(tiny_llama(len(tiny_tokenizer()), seed=1), "int8")
    assert all(mod.inv_smooth is None for mod in bare.modules() if isinstance(mod, int8_linear()))
