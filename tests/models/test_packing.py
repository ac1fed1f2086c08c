"""Pre-packed Linear weights (issue 18.2, models/packing.py): bf16 outputs bit-identical to
F.linear, fp32 rows independent of their batch, the packed kernels only inside the block, a
weight changed in place packed again, and LocalModel's greedy tokens unchanged."""

from __future__ import annotations

import pytest
import torch

from hatkit.models.local import LocalModel
from hatkit.models.packing import PACK_ROWS, PackedLinears, packing_kind
from hatkit.models.precision import cpu_has_bf16_matmul
from tiny import tiny_llama, tiny_requests, tiny_tokenizer

needs_mkl = pytest.mark.skipif(packing_kind(torch.zeros(2, 2)) is None, reason="no MKL packed GEMM")
needs_bf16 = pytest.mark.skipif(not cpu_has_bf16_matmul(), reason="no bf16 matrix instructions")


def _layer(dtype: torch.dtype, seed: int = 0) -> torch.nn.Sequential:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(96, 160)).to(dtype).eval()


@needs_bf16
@pytest.mark.parametrize("rows", [1, 3, PACK_ROWS, 2 * PACK_ROWS, 600])
def test_bf16_packed_outputs_equal_f_linear_bit_for_bit(rows: int) -> None:
    net = _layer(torch.bfloat16)
    x = torch.randn(rows, 96).to(torch.bfloat16)
    with torch.inference_mode():
        plain = net(x)
        with PackedLinears(net).active() as n:
            packed = net(x)
    assert n == 1 and torch.equal(plain, packed)


@needs_mkl
def test_fp32_packed_rows_do_not_depend_on_their_batch() -> None:
    """Rows are padded to PACK_ROWS, so row 0 is the same number in a batch of 2 or of 8, and
    it agrees with F.linear up to summation order."""
    net = _layer(torch.float32)
    x = torch.randn(PACK_ROWS, 4, 96)[:, 0]
    with torch.inference_mode():
        plain, plain_one = net(x), net(x[:1])
        with PackedLinears(net).active():
            two, full = net(x[:2]), net(x)
            one, wide = net(x[:1]), net(torch.randn(3 * PACK_ROWS, 96))
            chunked = net(torch.cat([x, x[:3]]))  # 11 rows: two packed calls
    assert torch.equal(two, full[:2]) and torch.equal(chunked[PACK_ROWS:], full[:3])
    assert torch.allclose(full, plain, atol=1e-4, rtol=1e-4)
    assert torch.equal(one, plain_one)  # one row (and prefill widths) keep F.linear
    assert wide.shape == (3 * PACK_ROWS, 160)


@needs_mkl
def test_the_packed_kernels_leave_with_the_block_even_on_an_exception() -> None:
    net = _layer(torch.float32)
    packing = PackedLinears(net)
    with pytest.raises(RuntimeError), packing.active():
        assert "forward" in vars(net[0])
        raise RuntimeError("boom")
    assert "forward" not in vars(net[0])
    assert packing.nbytes() > 0


@needs_mkl
def test_nested_blocks_and_two_packings_of_one_model_leave_it_as_it_was() -> None:
    """A block inside a block (or a second LocalModel on the same weights) keeps the outer
    swap and does not undo it on exit."""
    net = _layer(torch.float32)
    outer, other = PackedLinears(net), PackedLinears(net)
    with outer.active() as n:
        swapped = vars(net[0])["forward"]
        with outer.active() as inner, other.active() as again:
            assert inner == again == 0 and vars(net[0])["forward"] is swapped
        assert vars(net[0])["forward"] is swapped and n == 1
    assert "forward" not in vars(net[0])


@needs_mkl
def test_a_weight_changed_in_place_is_packed_again() -> None:
    """An RL step updates the weights in place between rollouts: the next block must not
    multiply by the stale copy."""
    net = _layer(torch.float32)
    packing = PackedLinears(net)
    x = torch.randn(4, 96)
    with torch.inference_mode(), packing.active():
        before = net(x)
    with torch.no_grad():
        net[0].weight.mul_(-1.0)
    with torch.inference_mode():
        expected = net(x)
        with packing.active():
            after = net(x)
    assert torch.allclose(after, expected, atol=1e-4) and not torch.allclose(after, before)


@needs_mkl
def test_a_training_pass_inside_the_block_uses_the_live_weights_with_gradients() -> None:
    net = _layer(torch.float32)
    x = torch.randn(4, 96)
    with PackedLinears(net).active():
        net(x).sum().backward()
    assert net[0].weight.grad is not None and float(net[0].weight.grad.abs().sum()) > 0


@needs_mkl
def test_local_model_greedy_tokens_are_the_same_with_and_without_packing() -> None:
    tok = tiny_tokenizer()
    questions = ["price?", "is the red mug in stock?", "hi", "ship to chicago?", "colours?"]
    outs = []
    for pack in (False, True):
        m = LocalModel(tiny_llama(len(tok), seed=3), tok, "tiny", max_batch=8, pack_weights=pack)
        outs.append([o.token_ids for o in m.generate(tiny_requests(m, questions, max_new_tokens=12))])
    assert outs[0] == outs[1]


@needs_bf16
def test_bf16_sibling_layers_run_as_one_packed_weight_with_the_same_logits() -> None:
    """q/k/v and gate/up read one input: packed as one weight each (one call instead of three
    and two), the logits of a decode-sized pass are bit-identical to the unpacked model's."""
    model = tiny_llama(64, seed=4).to(torch.bfloat16)
    ids = torch.randint(3, 64, (1, 5))
    packing = PackedLinears(model)
    with torch.inference_mode():
        plain = model(input_ids=ids).logits
        with packing.active() as n:
            packed = model(input_ids=ids).logits
            again = model(input_ids=ids).logits
    layers = model.config.num_hidden_layers
    assert len(packing._fused) == 2 * layers and n == 7 * layers + 1  # 7 Linear a layer + lm_head
    assert torch.equal(plain, packed) and torch.equal(packed, again)
    # nothing held after
    assert all(g.outputs.x is None and g.outputs.y is None for g in packing._fused.values())
