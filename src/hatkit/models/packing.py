"""Linear weights pre-packed for the CPU's matrix kernels, for inference.

Why: `F.linear` hands the weight matrix to MKL / oneDNN in its stored layout, and the kernel
re-packs it into its own blocked layout on every call. For a decode step of a few rows that
repacking costs more than the multiplication: measured on 2 Sapphire Rapids cores, one
1536x576 layer at 8 rows took 444 us in fp32 against 174 us with MKL's packed weights (the
bandwidth floor is 161 us), and bf16 took 138 us at 1 row and 140 us at 8 against 66 and 81 us
with oneDNN's packed weights. Packed weights are a copy, made once (about 1 s for the default
model) and reused while the weights do not change: resident memory grew by 780 MB in fp32
(MKL's blocked layout pads) and 270 MB in bf16 for the default model.

- bf16 (where the CPU multiplies bf16 in hardware): oneDNN's packed weight for up to
  MAX_PACKED_ROWS rows (decode steps, speculative verify passes); outputs are bit-identical to
  `F.linear` there (tested). Prefill widths keep `F.linear`: from about 300 rows oneDNN picks
  another kernel for the packed weight and the last bits differ (5 of 16 evaluation replies
  changed when prefill ran packed too).
- fp32: MKL's packed weight for 2..MAX_PACKED_ROWS rows, PACK_ROWS at a time, padded (a
  packed product is only valid at the row count it was packed for, and 8 padded rows cost
  about what 2 do); 1 row and prefill widths keep `F.linear`, which is as fast there. A row's output
  does not depend on the other rows of its batch (tested), but differs from `F.linear`'s in
  the last bits (another summation order).

`PackedLinears.active()` swaps the packed kernels in for the duration of a call only, so a
model that trains between calls (RL rollouts) never runs a stale copy in its training pass; a
weight that changed in place since it was packed (its version counter moved) is packed again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PACK_ROWS = 8
"""The row count fp32 weights are packed for (LocalModel's default batch)."""
MAX_PACKED_ROWS = 2 * PACK_ROWS
"""Inputs of up to this many rows run packed (fp32: PACK_ROWS at a time; two packed calls of
8 rows cost less than one `F.linear` of 16, at 24 rows the two were even); wider ones
(prefill) keep `F.linear`."""


def packing_kind(weight: Any) -> str | None:
    """"bf16", "fp32" or None (this weight is multiplied by `F.linear` as it is)."""
    import torch

    from .precision import cpu_has_bf16_matmul

    if weight.device.type != "cpu" or weight.dim() != 2:
        return None
    onednn = bool(torch.backends.mkldnn.is_available())  # type: ignore[no-untyped-call]
    if weight.dtype == torch.bfloat16 and onednn and cpu_has_bf16_matmul():
        return "bf16"
    mkl = torch.backends.mkl.is_available() and hasattr(torch.ops.mkl, "_mkl_linear")  # type: ignore[no-untyped-call]
    if weight.dtype == torch.float32 and mkl:
        return "fp32"
    return None


class _Packed:
    """One Linear layer's packed weight and the version of the weight it was made from."""

    def __init__(self, module: Any, kind: str) -> None:
        import torch

        self.kind = kind
        w = module.weight.detach()
        self.key = (w.data_ptr(), w._version, tuple(w.shape))
        with torch.no_grad():
            if kind == "bf16":
                self.weight = torch.ops.mkldnn._reorder_linear_weight(w, PACK_ROWS)
            else:
                self.weight = torch.ops.mkl._mkl_reorder_linear_weight(w, PACK_ROWS)

    def fresh(self, module: Any) -> bool:
        w = module.weight
        return self.key == (w.data_ptr(), w._version, tuple(w.shape))

    def forward(self, module: Any, x: Any) -> Any:
        import torch

        bias = module.bias
        rows = x.numel() // x.shape[-1]
        if self.kind == "bf16":
            if x.dtype != torch.bfloat16 or torch.is_grad_enabled() or rows > MAX_PACKED_ROWS:
                return torch.nn.functional.linear(x, module.weight, bias)
            return torch.ops.mkldnn._linear_pointwise(x, self.weight, bias, "none", [], "")
        if not 1 < rows <= MAX_PACKED_ROWS or x.dtype != torch.float32 or torch.is_grad_enabled():
            return torch.nn.functional.linear(x, module.weight, bias)
        flat = x.reshape(rows, x.shape[-1])
        chunks = -(-rows // PACK_ROWS)
        if rows < chunks * PACK_ROWS:
            flat = torch.nn.functional.pad(flat, (0, 0, 0, chunks * PACK_ROWS - rows))
        y = torch.cat([torch.ops.mkl._mkl_linear(part.contiguous(), self.weight, module.weight, bias,
                                                 PACK_ROWS) for part in flat.split(PACK_ROWS)])
        return y[:rows].reshape(*x.shape[:-1], y.shape[-1])


class PackedLinears:
    """The packed weights of a model's plain `nn.Linear` layers (made on first use)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._packs: dict[int, _Packed] = {}

    def _layers(self) -> list[tuple[Any, str]]:
        import torch

        out = []
        for m in self.model.modules():
            if type(m) is torch.nn.Linear:
                kind = packing_kind(m.weight)
                if kind is not None:
                    out.append((m, kind))
        return out

    def nbytes(self) -> int:
        """Bytes held by packed copies."""
        return sum(int(p.weight.nbytes) for p in self._packs.values())

    @contextmanager
    def active(self) -> Iterator[int]:
        """Run the model's eligible Linear layers on packed weights inside the block (yields
        how many layers run packed); their own forward comes back on exit, exceptions too."""
        patched: list[tuple[Any, Any]] = []
        try:
            for module, kind in self._layers():
                if "forward" in vars(module):  # already swapped (a nested block, or another
                    continue                    # LocalModel on the same weights): left as it is
                pack = self._packs.get(id(module))
                if pack is None or not pack.fresh(module) or pack.kind != kind:
                    pack = self._packs[id(module)] = _Packed(module, kind)
                module.forward = ours = _bound(pack, module)
                patched.append((module, ours))
            yield len(patched)
        finally:
            for module, ours in patched:
                if vars(module).get("forward") is ours:
                    del module.forward


def _bound(pack: _Packed, module: Any) -> Any:
    def forward(x: Any) -> Any:
        return pack.forward(module, x)

    return forward
