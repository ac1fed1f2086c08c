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

One scale per token lets a few outlier channels flatten the rest, so `LocalModel` measures each
layer's input range on CALIBRATION_TEXT and moves the outliers into the weights (SmoothQuant);
the output layer, where a close pair among 49k logits decides each greedy token, recomputes its
best EXACT_TOP logits in fp32 from the weights it keeps anyway (the tied embedding). On the
cpu-sitting Fixed-SFT checkpoint's 40 live_qa cases: 0.525 -> 0.625 against fp32's 0.675.

int8w quantises the weights only: `Int8WeightLinear` holds int8 weights (one bf16 scale per
output row) and multiplies bf16 inputs with torch's weight-only kernel, so no input is rounded
to 8 bits and the error is the weights' alone, which GPTQ (gptq.py) rounds against the layer
inputs of CALIBRATION_TEXT. Decode bench, default model, one run (2026-12-06): greedy agreement
with fp32 96.5% (int8 94.5%, bf16 98.2%); tokens/s over hatkit's fp32 2.19x at batch 1 and
1.52x at batch 8 (int8 2.79x and 2.60x, bf16 1.96x and 2.72x): the weight-only kernel is fast
for one row and scales poorly with rows, so int8w suits single-stream serving and int8 batches.
On 300 live_qa cases of a Fixed-SFT checkpoint, paired with fp32: +0.007 [-0.023, +0.033],
11 won / 9 lost, not worse (int8 on the cpu-sitting checkpoint: -0.023 [-0.057, +0.010]).
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any

from .calibration import fold_inputs
from .siblings import SiblingOutputs

PRECISIONS = ("fp32", "bf16", "int8", "int8h", "int8w")
"""int8h: int8 Linear layers except the output layer, which stays fp32. The output layer is a
fifth of the weights but decides every greedy token among 49k logits, where a small rounding
error flips a close pair.
int8w: int8 weights only (one scale per output row, rounded by GPTQ on CALIBRATION_TEXT),
multiplied with bf16 inputs by torch's weight-only int8 kernel (`_weight_int8pack_mm`); the rest
of the model in bf16. Inputs are never quantised, so its error is the weights' alone. Needs a
CPU with bf16 instructions to be fast (elsewhere the kernel emulates bf16)."""
AUTO = "auto"
"""The fastest precision measured not to change answers (`resolve_precision`)."""


def cpu_has_bf16_matmul() -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware (AMX tiles or AVX512-BF16), where
    bf16 matmuls run several times faster than fp32; elsewhere torch emulates them, slower."""
    import torch

    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


def resolve_precision(precision: str, device: str = "cpu") -> str:
    """`auto` -> bf16 on a GPU or on a CPU with bf16 matrix instructions, else fp32; any other
    precision unchanged. Measured on a trained quick HSA-SFT checkpoint, the same 40 live_qa
    cases on 2 AVX512-BF16 cores: bf16 154 s against fp32 244 s, success 0.55 both (1 case won,
    1 lost, 27 of 38 replies identical); int8h 167 s (2 won, 2 lost, 18 identical); int8 about
    2.2x fp32 but 4 lost, 1 won. On 300 cases of the cpu-sitting Fixed-SFT checkpoint (bench/
    precision_quality.py): bf16 -0.007 [-0.027, +0.017] against fp32, not worse, 1.97x faster
    per item; int8 -0.023 [-0.057, +0.010], which misses the -0.05 bar, so `auto` never picks
    int8. On a CPU without them bf16 is emulated, slower than fp32."""
    if precision != AUTO:
        return precision
    if device != "cpu":
        return "bf16"
    return "bf16" if cpu_has_bf16_matmul() else "fp32"


@functools.cache
def _has_vnni() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


FUSED = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))
"""Sibling layers that read the same input (Llama-style attention and MLP): int8 computes each
group in one call, since per-call overhead was a third of an int8 step at batch 1."""


def _classes() -> tuple[type[Any], type[Any], type[Any]]:
    import torch

    class Int8Linear(torch.nn.Module):
        """A Linear layer with int8 weights (per output channel) and int8 inputs (per token).

        `smooth` (one factor per input channel, SmoothQuant): the weight's columns are
        multiplied and the input divided by it, the same product in exact arithmetic, with the
        input's outlier channels (which set each token's one scale and so flatten every other
        channel to a few levels) moved into the weights, which are quantised per output row.
        `exact` (the layer's fp32 weight, read not copied) and `top`: the `top` largest outputs
        of each row are recomputed in fp32, so the greedy choice of an output layer is the fp32
        choice among int8's best few."""

        def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None,
                     smooth: torch.Tensor | None = None, exact: torch.Tensor | None = None,
                     top: int = 0) -> None:
            super().__init__()
            w = weight.detach().float()
            if smooth is not None:
                w = w * smooth[None]
            self.in_features, self.out_features = w.shape[1], w.shape[0]
            scale = (w.abs().amax(1) / 127).clamp_min(1e-12).double()
            with warnings.catch_warnings():  # quantized tensors are deprecated in 2.13, still shipped
                warnings.simplefilter("ignore")
                qw = torch.quantize_per_channel(w, scale, torch.zeros_like(scale, dtype=torch.long),
                                                0, torch.qint8)
                self.packed = torch.ops.quantized.linear_prepack(qw, None)
            self.bias = None if bias is None else torch.nn.Parameter(bias.detach().float(),
                                                                     requires_grad=False)
            self.inv_smooth: torch.Tensor | None
            self.register_buffer("inv_smooth", None if smooth is None else 1.0 / smooth.float())
            self.exact: torch.Tensor | None = exact.detach() if exact is not None and top > 0 else None
            self.top = top if self.exact is not None else 0
            self.levels = 127 if _has_vnni() else 63  # 8-bit inputs, 7-bit without VNNI

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            flat = x.reshape(-1, self.in_features).float()
            q = flat if self.inv_smooth is None else flat * self.inv_smooth
            # the inf-norm as abs().amax(): the same numbers, 4-7x faster than vector_norm's
            s = q.abs().amax(-1, keepdim=True).clamp_min(1e-30)
            y: torch.Tensor = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32(
                q / s, 1.0 / self.levels, self.levels + 1, self.packed) * s
            if self.bias is not None:
                y = y + self.bias
            if self.exact is not None:
                best = y.topk(min(self.top, self.out_features), -1).indices
                redo = torch.einsum("rh,rkh->rk", flat, self.exact[best].float())
                if self.bias is not None:
                    redo = redo + self.bias[best]
                y = y.scatter(-1, best, redo)
            return y.reshape(*x.shape[:-1], self.out_features).to(x.dtype)

        def extra_repr(self) -> str:
            extra = (", smoothed" if self.inv_smooth is not None else "") + (
                f", top {self.top} exact" if self.top else "")
            return f"in_features={self.in_features}, out_features={self.out_features}, int8{extra}"

    class Int8Slice(torch.nn.Module):
        """One layer of a FUSED group: the group's one int8 call on an input serves every
        member, each taking its columns (siblings.SiblingOutputs)."""

        def __init__(self, group: SiblingOutputs, member: int, fused: torch.nn.Module) -> None:
            super().__init__()
            self.group, self.member = group, member
            if member == 0:
                self.fused = fused  # registered once, so modules() sees its weights

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y: torch.Tensor = self.group.take(self.member, x)
            return y

    class Int8WeightLinear(torch.nn.Module):
        """A Linear layer with int8 weights (one scale per output row) and bf16 inputs: the
        weights are expanded inside the product (torch's `_weight_int8pack_mm`), so a step reads
        a quarter of fp32's bytes and the inputs keep bf16's precision. `exact` (a Parameter
        holding the same weights in bf16, the tied embedding) and `top`: as Int8Linear's."""

        def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, hessian: Any = None,
                     exact: torch.nn.Parameter | None = None, top: int = 0, *,
                     rounded: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
            super().__init__()
            from .gptq import gptq_int8

            q, scale = rounded if rounded is not None else gptq_int8(weight, hessian)
            self.out_features: int = int(q.shape[0])
            self.in_features: int = int(q.shape[1])
            self.qweight: torch.Tensor
            self.scales: torch.Tensor
            self.register_buffer("qweight", q.contiguous())
            self.register_buffer("scales", scale.to(torch.bfloat16))
            self.bias = None if bias is None else torch.nn.Parameter(
                bias.detach().to(torch.bfloat16), requires_grad=False)
            self._exact = [exact] if exact is not None and top > 0 else []  # not registered twice
            self.top = top if self._exact else 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            flat = x.reshape(-1, self.in_features).to(self.scales.dtype)
            y: torch.Tensor = torch.ops.aten._weight_int8pack_mm(flat, self.qweight, self.scales)
            if self.bias is not None:
                y = y + self.bias
            if self.top:
                best = y.topk(min(self.top, self.out_features), -1).indices
                exact = self._exact[0].detach()
                redo = torch.einsum("rh,rkh->rk", flat.float(), exact[best].float())
                if self.bias is not None:
                    redo = redo + self.bias[best].float()
                y = y.float().scatter(-1, best, redo)
            return y.reshape(*x.shape[:-1], self.out_features).to(x.dtype)

        def extra_repr(self) -> str:
            top = f", top {self.top} exact" if self.top else ""
            return f"in_features={self.in_features}, out_features={self.out_features}, int8 weights{top}"

    return Int8Linear, Int8Slice, Int8WeightLinear


@functools.cache
def int8_linear() -> type[Any]:
    """The Int8Linear class (built on first use, so importing this module needs no torch)."""
    return _classes()[0]


@functools.cache
def int8_weight_linear() -> type[Any]:
    """The Int8WeightLinear class (int8w precision)."""
    return _classes()[2]


@functools.cache
def _int8_slice() -> type[Any]:
    return _classes()[1]


SMOOTH_ALPHA = 0.5
"""SmoothQuant's migration strength: each input channel's factor is amax(x)^a / amax(w)^(1-a)."""
EXACT_TOP = 8
"""Output-layer logits recomputed in fp32 per row (the greedy pick among int8's best 8)."""
CALIBRATION_TEXT = (
    "Welcome back to the live stream! Today we have skincare, snacks, kitchen tools and "
    "electronics. The serum is $24.99, 30 ml, and ships in 3-5 days; orders over $99 ship free. "
    "Is the hoodie in stock in size M? Yes, 12 left in navy. Can I return it if it does not fit? "
    "Within 30 days, unless it is final sale. 欢迎来到直播间！这款面霜现在打八折，库存还有12件，"
    "满99元包邮。请问这个适合敏感肌吗？可以七天无理由退货吗？")
"""What the int8 smoothing factors are measured on (`apply_precision`): plain shop talk in both
locales, no harness text, so no evaluation prompt is seen."""


def calibration_ids(tokenizer: Any) -> Any:
    """CALIBRATION_TEXT as a [1, n] id tensor for `apply_precision(..., calibration=)`."""
    return tokenizer(CALIBRATION_TEXT, return_tensors="pt").input_ids


def apply_precision(model: Any, precision: str, calibration: Any = None) -> Any:
    """Convert `model` in place to `precision` (see PRECISIONS) and return it. int8 runs on
    the CPU only (fbgemm); on a GPU use bf16. For int8, `calibration` ([1, n] token ids, see
    `calibration_ids`) gives each layer's input range for SmoothQuant factors (teacher-forced
    greedy-token agreement with fp32 on the decode bench's 8 prompts, default model: 88.5% with
    neither, 94.8% with both), and the output layer recomputes its best EXACT_TOP logits in fp32."""
    import torch

    precision = resolve_precision(precision, model.device.type)
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    now = precision_of(model)
    if now in ("int8", "int8h", "int8w"):
        if precision != now:
            raise ValueError(f"the model already has {now} weights; it cannot become {precision}")
        return model
    if precision == "fp32":
        return model.float()
    if precision == "bf16":
        return model.to(torch.bfloat16)
    if model.device.type != "cpu":
        raise ValueError(f"int8 weights run on the CPU (this model is on {model.device}); use bf16")
    model.float()
    if precision == "int8w":
        return _to_int8_weights(model, calibration)
    ranges = _input_ranges(model, calibration) if calibration is not None else {}
    out = model.get_output_embeddings()
    keep = {id(out)} if precision == "int8h" else set()
    for parent in list(model.modules()):
        for names, members in _linear_groups(parent, keep):
            smooth = _smooth(ranges.get(id(members[0])), [m.weight for m in members])
            if len(members) > 1:
                fused = int8_linear()(torch.cat([m.weight for m in members]), _fused_bias(members), smooth)
                _install(parent, names, members, fused)
                continue
            child = members[0]
            exact = (child.weight, EXACT_TOP) if child is out else (None, 0)
            setattr(parent, names[0], int8_linear()(child.weight, child.bias, smooth, *exact))
    return model


def _linear_groups(parent: Any, keep: set[int] | frozenset[int] = frozenset(),
                   ) -> list[tuple[list[str], list[Any]]]:
    """`parent`'s Linear children (those not in `keep`, by id) as (names, layers): each FUSED
    group of siblings with one input width first, then every other layer alone."""
    import torch

    children = {n: c for n, c in parent.named_children()
                if isinstance(c, torch.nn.Linear) and id(c) not in keep}
    groups = []
    for siblings in FUSED:
        if all(n in children for n in siblings) and len({children[n].in_features for n in siblings}) == 1:
            groups.append((list(siblings), [children.pop(n) for n in siblings]))
    return groups + [([n], [c]) for n, c in children.items()]


def _fused_bias(members: list[Any]) -> Any:
    """The members' biases end to end (zeros for a member without one), or None if none has one."""
    import torch

    if all(m.bias is None for m in members):
        return None
    return torch.cat([m.bias if m.bias is not None else m.weight.new_zeros(m.out_features) for m in members])


def _install(parent: Any, names: list[str], members: list[Any], layer: Any) -> None:
    """Put `layer` (computing the members' outputs end to end) in place of the members: itself
    for one, an Int8Slice per member reading one shared call for several."""
    if len(members) == 1:
        setattr(parent, names[0], layer)
        return
    group = SiblingOutputs([m.out_features for m in members], layer)
    for i, name in enumerate(names):
        setattr(parent, name, _int8_slice()(group, i, layer))


def _to_int8_weights(model: Any, calibration: Any) -> Any:
    """int8w in place: every Linear (fused siblings as one) becomes an Int8WeightLinear rounded
    by GPTQ on `calibration`'s inputs to it (nearest rounding without calibration; layers of
    one shape rounded together), the output layer recomputing its best EXACT_TOP logits from
    bf16 weights (the tied embedding, or a copy); the rest bf16."""
    import torch

    from .gptq import gptq_int8, input_hessians

    linears = {n: m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    hessians = input_hessians(model, calibration, linears) if calibration is not None else {}
    by_id = {id(m): n for n, m in linears.items()}
    out, inp = model.get_output_embeddings(), model.get_input_embeddings()
    tied = out is not None and inp is not None and out.weight is inp.weight
    jobs = [(parent, names, members) for parent in list(model.modules())
            for names, members in _linear_groups(parent)]
    weights = [torch.cat([m.weight.detach() for m in members]) for _p, _n, members in jobs]
    keys = [by_id[id(members[0])] for _p, _n, members in jobs]
    rounded: dict[int, tuple[Any, Any]] = {}
    groups: dict[tuple[Any, bool], list[int]] = {}
    for i, (w, key) in enumerate(zip(weights, keys, strict=True)):
        groups.setdefault((tuple(w.shape), key in hessians), []).append(i)
    for (_shape, calibrated), idx in groups.items():
        h = torch.stack([hessians[keys[i]] for i in idx]) if calibrated else None
        q, scale = gptq_int8(torch.stack([weights[i] for i in idx]), h)
        rounded.update({i: (q[j], scale[j]) for j, i in enumerate(idx)})
    layer = int8_weight_linear()
    for i, (parent, names, members) in enumerate(jobs):
        exact: tuple[Any, int] = (None, 0)
        if members[0] is out:  # the tied embedding, else a bf16 copy (read EXACT_TOP rows a token)
            exact = (inp.weight if tied else torch.nn.Parameter(
                out.weight.detach().to(torch.bfloat16), requires_grad=False), EXACT_TOP)
        _install(parent, names, members,
                 layer(weights[i], _fused_bias(members), None, *exact, rounded=rounded.pop(i)))
    return model.to(torch.bfloat16)


def _input_ranges(model: Any, ids: Any) -> dict[int, Any]:
    """id(Linear) -> the largest |input| of each input channel over one fp32 pass of `ids`."""
    import torch

    def widest(seen: Any, x: Any) -> Any:
        now = x.abs().amax(0)
        return now if seen is None else torch.maximum(seen, now)

    linears = {id(m): m for m in model.modules() if isinstance(m, torch.nn.Linear)}
    return fold_inputs(model, ids, linears, widest)


def _smooth(seen: Any, weights: list[Any]) -> Any:
    """SmoothQuant factors for layers sharing one input (None without a measured range)."""
    import torch

    if seen is None:
        return None
    w = torch.cat([x.detach().float() for x in weights]).abs().amax(0).clamp_min(1e-5)
    return (seen.clamp_min(1e-5) ** SMOOTH_ALPHA / w ** (1 - SMOOTH_ALPHA)).clamp(1e-3, 1e3)


def precision_of(model: Any) -> str:
    """The precision a model's weights are in now (int8, int8h, fp32, bf16, or the dtype's name)."""
    import torch

    if any(isinstance(m, int8_weight_linear()) for m in model.modules()):
        return "int8w"
    if any(isinstance(m, int8_linear()) for m in model.modules()):
        return "int8h" if isinstance(model.get_output_embeddings(), torch.nn.Linear) else "int8"
    dtype = model.dtype
    return {torch.float32: "fp32", torch.bfloat16: "bf16"}.get(dtype, str(dtype).removeprefix("torch."))
