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

- bf16 sibling layers that read one input (`precision.FUSED`: q/k/v, gate/up) are packed as one
  weight and multiplied in one call, whose columns each member takes (`_PackedGroup`): oneDNN's
  per-call cost is most of a small bf16 layer's time (211 layers a step: 24.5 ms separate, 21.1
  fused at 8 rows, microbenchmark); outputs are bit-identical to the members' own (tested).

`PackedLinears.active()` swaps the packed kernels in for the duration of a call only, so a
model that trains between calls (RL rollouts) never runs a stale copy in its training pass; a
weight that changed in place since it was packed (its version counter moved) is packed again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .siblings import SiblingOutputs

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


class _PackedGroup:
    """Sibling bf16 layers reading one input, packed as one weight (see SiblingOutputs)."""

    def __init__(self, modules: list[Any]) -> None:
        import torch

        self.kind = "bf16"
        self.keys = [(m.weight.data_ptr(), m.weight._version, tuple(m.weight.shape)) for m in modules]
        with torch.no_grad():
            self.weight = torch.ops.mkldnn._reorder_linear_weight(
                torch.cat([m.weight.detach() for m in modules]), PACK_ROWS)
            self.bias = None if all(m.bias is None for m in modules) else torch.cat(
                [m.bias.detach() if m.bias is not None else m.weight.new_zeros(m.out_features)
                 for m in modules])
        self.outputs = SiblingOutputs([m.out_features for m in modules], self._multiply)

    def _multiply(self, x: Any) -> Any:
        import torch

        return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "none", [], "")

    def fresh(self, modules: list[Any]) -> bool:
        return self.keys == [(m.weight.data_ptr(), m.weight._version, tuple(m.weight.shape))
                             for m in modules]

    def forward(self, member: int, module: Any, x: Any) -> Any:
        import torch

        rows = x.numel() // x.shape[-1]
        if x.dtype != torch.bfloat16 or torch.is_grad_enabled() or rows > MAX_PACKED_ROWS:
            return torch.nn.functional.linear(x, module.weight, module.bias)
        return self.outputs.take(member, x)


class PackedLinears:
    """The packed weights of a model's plain `nn.Linear` layers (made on first use)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._packs: dict[int, _Packed] = {}
        self._fused: dict[tuple[int, ...], _PackedGroup] = {}

    def _layers(self) -> tuple[list[tuple[Any, str]], list[list[Any]]]:
        """One walk over the model: its plain `nn.Linear` layers that can run packed, with
        their kind, and the bf16 sibling groups among them (FUSED names under one parent, one
        input size)."""
        import torch

        from .precision import FUSED

        layers, groups = [], []
        for parent in self.model.modules():
            if type(parent) is torch.nn.Linear and (kind := packing_kind(parent.weight)) is not None:
                layers.append((parent, kind))
            children = dict(parent.named_children())
            for names in FUSED:
                members = [children.get(n) for n in names]
                if all(type(m) is torch.nn.Linear and packing_kind(m.weight) == "bf16" for m in members) \
                        and len({m.in_features for m in members}) == 1:  # type: ignore[union-attr]
                    groups.append(members)
        return layers, groups

    def nbytes(self) -> int:
        """Bytes held by packed copies."""
        return sum(int(p.weight.nbytes) for p in self._packs.values()) + sum(
            int(g.weight.nbytes) for g in self._fused.values())

    @contextmanager
    def active(self) -> Iterator[int]:
        """Run the model's eligible Linear layers on packed weights inside the block (yields
        how many layers run packed); their own forward comes back on exit, exceptions too."""
        patched: list[tuple[Any, Any]] = []
        try:
            layers, groups = self._layers()
            grouped: set[int] = set()
            for members in groups:
                if any("forward" in vars(m) for m in members):
                    continue
                key = tuple(id(m) for m in members)
                group = self._fused.get(key)
                if group is None or not group.fresh(members):
                    group = self._fused[key] = _PackedGroup(members)
                for i, module in enumerate(members):
                    module.forward = ours = _bound_member(group, i, module)
                    patched.append((module, ours))
                    grouped.add(id(module))
            for module, kind in layers:
                if "forward" in vars(module) or id(module) in grouped:  # already swapped (a nested
                    continue  # block, or another LocalModel on the same weights): left as it is
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


def _bound_member(group: _PackedGroup, member: int, module: Any) -> Any:
    def forward(x: Any) -> Any:
        return group.forward(member, module, x)

    return forward
