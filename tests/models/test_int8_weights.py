"""int8w weights (issue 18.1): int8 weights rounded by GPTQ, bf16 inputs. On a tiny
random-weight model: every Linear becomes one, greedy decoding is deterministic and does not
depend on batching or prefix caching, GPTQ's output error on its calibration inputs is below
nearest rounding's, the output layer's best logits are exact, and `--model` specs select it."""

from __future__ import annotations

from pathlib import Path

import torch

from hatkit.models.gptq import gptq_int8
from hatkit.models.local import LocalModel
from hatkit.models.precision import EXACT_TOP, apply_precision, int8_weight_linear, precision_of
from hatkit.models.select import load_model
from tiny import teacher_forced_agreement, tiny_llama, tiny_requests, tiny_tokenizer

QUESTIONS = ["price?", "is the red mug in stock in size m?", "hi", "when does it ship to chicago?",
             "what colours?", "can I return it if it does not fit?"]


def _model(precision: str = "int8w", seed: int = 1, **kwargs: object) -> LocalModel:
    tok = tiny_tokenizer()
    return LocalModel(tiny_llama(len(tok), seed=seed), tok, "tiny", precision=precision,
                      **kwargs)  # type: ignore[arg-type]


def _dequantised(layer: torch.nn.Module) -> torch.Tensor:
    return layer.qweight.float() * layer.scales.float()[:, None]  # type: ignore[operator, index]


def test_int8w_replaces_every_linear_with_int8_weights_and_the_rest_is_bf16() -> None:
    m = _model()
    assert m.precision == "int8w" == precision_of(m.model)
    assert [n for n, mod in m.model.named_modules() if isinstance(mod, torch.nn.Linear)] == []
    layers = [mod for mod in m.model.modules() if isinstance(mod, int8_weight_linear())]
    # per decoder layer: q/k/v fused, o, gate/up fused, down; plus the output layer
    assert len(layers) == 4 * len(m.model.model.layers) + 1
    assert all(layer.qweight.dtype == torch.int8 and layer.scales.dtype == torch.bfloat16 for layer in layers)
    assert m.model.model.embed_tokens.weight.dtype == torch.bfloat16
    assert "int8 weights" in repr(m.model.lm_head)


def test_int8w_layer_is_its_dequantised_weight_times_bf16_input() -> None:
    """The kernel expands int8 * scale inside the product; a row's output does not depend on
    the other rows of its batch (nothing about the input is quantised)."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 48, bias=True)
    layer = int8_weight_linear()(linear.weight, linear.bias)
    x = torch.randn(5, 64)
    with torch.inference_mode():
        together = layer(x)
        alone = torch.cat([layer(x[i:i + 1]) for i in range(5)])
    assert together.dtype == torch.float32  # back in the input's dtype
    assert torch.equal(together, alone)
    ref = x.bfloat16().float() @ _dequantised(layer).T + linear.bias.bfloat16().float()
    assert (together - ref).abs().max() < 0.05
    # nearest rounding within half a level of the weight
    assert (_dequantised(layer) - linear.weight).abs().max() <= layer.scales.float().max() * 0.51


def test_gptq_beats_nearest_rounding_on_its_calibration_inputs() -> None:
    """GPTQ pushes each column's rounding error onto the columns still to round, so on inputs
    like those its Hessian came from the output error is smaller than nearest rounding's."""
    torch.manual_seed(0)
    mix = torch.randn(64, 64)
    x = torch.randn(400, 64) @ mix  # correlated input channels, as a layer's inputs are
    x[:, 3] *= 20  # and an outlier channel
    w = torch.randn(96, 64)
    ref = x @ w.T
    errors = {}
    for name, hessian in (("nearest", None), ("gptq", x.T @ x)):
        q, scale = gptq_int8(w, hessian)
        assert q.dtype == torch.int8 and q.abs().max() <= 127
        assert torch.allclose(scale, w.abs().amax(1) / 127, rtol=1 / 128)
        assert torch.equal(scale, scale.bfloat16().float())
        errors[name] = ((x @ (q.float() * scale[:, None]).T - ref) ** 2).mean().item()
    assert errors["gptq"] < 0.5 * errors["nearest"], errors
    nearest, scale = gptq_int8(w, None)
    assert torch.equal(nearest, (w / scale[:, None]).round().clamp(-127, 127).to(torch.int8))


def test_local_model_int8w_is_calibrated_with_gptq() -> None:
    """LocalModel rounds with GPTQ on CALIBRATION_TEXT: some weights differ from nearest
    rounding (a bare apply_precision, no calibration, rounds to nearest)."""
    calibrated = _model()
    bare = apply_precision(tiny_llama(len(tiny_tokenizer()), seed=1), "int8w")
    a = calibrated.model.model.layers[0].mlp.down_proj.qweight
    b = bare.model.layers[0].mlp.down_proj.qweight
    assert not torch.equal(a, b)
    assert (a.int() - b.int()).abs().max() <= 8  # still the same weights


def test_int8w_greedy_is_deterministic_and_batching_and_prefix_cache_change_nothing() -> None:
    tok = tiny_tokenizer()
    weights = tiny_llama(len(tok), seed=1)
    single = LocalModel(weights, tok, "tiny", precision="int8w", prefix_cache=False, max_batch=1)
    batched = LocalModel(weights, tok, "tiny", max_batch=8)  # the same int8w weights
    assert batched.precision == "int8w"
    reqs = tiny_requests(single, QUESTIONS, max_new_tokens=16)
    a = single.generate(reqs)
    b = batched.generate(reqs)
    c = batched.generate(reqs)  # prefix cache warm
    assert [o.token_ids for o in a] == [o.token_ids for o in b] == [o.token_ids for o in c]
    assert all(o.token_ids for o in a)
    assert batched.stats["prefix_hits"] == 1


def test_int8w_greedy_tokens_mostly_agree_with_fp32() -> None:
    """Teacher-forced on fp32's greedy reply, the share of positions where int8w picks the
    same token (the real model: 0.955 on the decode bench's prompts, bf16 0.987)."""
    shares = []
    for seed in (1, 2):
        shares += teacher_forced_agreement(_model("fp32", seed=seed), _model("int8w", seed=seed),
                                           QUESTIONS, max_new_tokens=24)
    assert sum(shares) / len(shares) >= 0.8, shares


def test_int8w_output_layer_recomputes_its_best_logits_from_the_tied_embedding() -> None:
    tok = tiny_tokenizer()
    tied = tiny_llama(len(tok), seed=1)
    tied.config.tie_word_embeddings = True
    tied.lm_head.weight = tied.model.embed_tokens.weight
    m = LocalModel(tied, tok, "tiny", precision="int8w")
    head, embed = m.model.lm_head, m.model.model.embed_tokens.weight
    assert head.top == EXACT_TOP and head._exact[0] is embed and embed.dtype == torch.bfloat16
    x = torch.randn(2, 3, embed.shape[1], dtype=torch.bfloat16)
    with torch.inference_mode():
        y = head(x).float()
    ref = (x.float() @ embed.float().T).bfloat16().float()  # exact, in the input's dtype
    best = y.topk(EXACT_TOP, -1).indices
    assert torch.equal(y.gather(-1, best), ref.gather(-1, best))
    assert torch.equal(y.argmax(-1), ref.argmax(-1))
    untied = _model().model.lm_head  # an untied output layer keeps a bf16 copy for its best rows
    assert untied.top == EXACT_TOP and untied._exact[0].dtype == torch.bfloat16


def test_model_spec_selects_int8w(tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    tok = tiny_tokenizer()
    tiny_llama(len(tok), seed=3).save_pretrained(folder)
    tok.save_pretrained(folder)
    m = load_model(f"{folder}@int8w")
    assert isinstance(m, LocalModel) and m.precision == "int8w" and m.model_id == "local:ckpt@int8w"


def test_gptq_rounds_layers_of_one_shape_together_as_it_rounds_each_alone() -> None:
    torch.manual_seed(1)
    xs = [torch.randn(200, 32) @ torch.randn(32, 32) for _ in range(3)]
    weights = torch.randn(3, 24, 32)
    q, scale = gptq_int8(weights, torch.stack([x.T @ x for x in xs]))
    for i, x in enumerate(xs):
        alone = gptq_int8(weights[i], x.T @ x)
        assert torch.equal(q[i], alone[0]) and torch.equal(scale[i], alone[1])
