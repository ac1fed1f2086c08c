"""Weight precision for inference: fp32, bf16 storage, or int8 Linear layers (CPU).

Decoding a small model on a CPU is bound by memory bandwidth: every step streams all the
weights (540 MB in fp32 for SmolLM2-135M), so fewer bytes per weight is the main lever.

int8 turns every `nn.Linear` into an `Int8Linear`: int8 weights with one scale per output
channel, multiplied by torch's fbgemm dynamic-quantisation kernel. The output layer is
quantised too (a fifth of the weights); when tied to the embedding, the embedding stays fp32
for the lookup, which reads one row per token. Stock `quantize_dynamic` is not used: it
quantises a layer's whole input with one 7-bit scale, so a row's output depended on the other
rows of its batch, on padding and on whether its prefix was cached, and its greedy tokens
agreed less with fp32 (78% against 90% teacher-forced on SmolLM2). Here each token is scaled
to [-1, 1] and quantised with fixed parameters, so every token is quantised alone, with 8 bits
where the CPU has VNNI (7 bits elsewhere: fbgemm's int16 sums could saturate).
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

PRECISIONS = ("fp32", "bf16", "int8")


@functools.cache
def _has_vnni() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


def _linear_class() -> type[Any]:
    import torch

    class Int8Linear(torch.nn.Module):
        """A Linear layer with int8 weights (per output channel) and int8 inputs (per token)."""

        def __init__(self, linear: torch.nn.Linear) -> None:
            super().__init__()
            w = linear.weight.detach().float()
            self.in_features, self.out_features = w.shape[1], w.shape[0]
            scale = (w.abs().amax(1) / 127).clamp_min(1e-12).double()
            with warnings.catch_warnings():  # quantized tensors are deprecated in 2.13, still shipped
                warnings.simplefilter("ignore")
                qw = torch.quantize_per_channel(w, scale, torch.zeros_like(scale, dtype=torch.long),
                                                0, torch.qint8)
                self.packed = torch.ops.quantized.linear_prepack(qw, None)
            self.bias = None if linear.bias is None else torch.nn.Parameter(
                linear.bias.detach().float(), requires_grad=False)
            self.levels = 127 if _has_vnni() else 63  # 8-bit inputs, 7-bit without VNNI

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            flat = x.reshape(-1, self.in_features).float()
            s = flat.abs().amax(-1, keepdim=True).clamp_min(1e-30)
            y: torch.Tensor = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32(
                flat / s, 1.0 / self.levels, self.levels + 1, self.packed) * s
            if self.bias is not None:
                y = y + self.bias
            return y.reshape(*x.shape[:-1], self.out_features).to(x.dtype)

        def extra_repr(self) -> str:
            return f"in_features={self.in_features}, out_features={self.out_features}, int8"

    return Int8Linear


@functools.cache
def int8_linear() -> type[Any]:
    """The Int8Linear class (built on first use, so importing this module needs no torch)."""
    return _linear_class()


def apply_precision(model: Any, precision: str) -> Any:
    """Convert `model` in place to `precision` (see PRECISIONS) and return it. int8 runs on
    the CPU only (fbgemm); on a GPU use bf16."""
    import torch

    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    if precision_of(model) == "int8":
        if precision != "int8":
            raise ValueError(f"the model already has int8 weights; it cannot become {precision}")
        return model
    if precision == "fp32":
        return model.float()
    if precision == "bf16":
        return model.to(torch.bfloat16)
    if model.device.type != "cpu":
        raise ValueError(f"int8 weights run on the CPU (this model is on {model.device}); use bf16")
    model.float()
    cls = int8_linear()
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(parent, name, cls(child))
    return model


def precision_of(model: Any) -> str:
    """The precision a model's weights are in now (int8, fp32, bf16, or the dtype's name)."""
    import torch

    if any(isinstance(m, int8_linear()) for m in model.modules()):
        return "int8"
    dtype = model.dtype
    return {torch.float32: "fp32", torch.bfloat16: "bf16"}.get(dtype, str(dtype).removeprefix("torch."))
