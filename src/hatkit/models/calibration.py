"""One forward pass of calibration text, folding each chosen layer's inputs into a statistic:
int8's SmoothQuant input ranges and int8w's GPTQ Hessians both come from it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

K = TypeVar("K")


def fold_inputs(model: Any, ids: Any, layers: dict[K, Any], fold: Callable[[Any, Any], Any]) -> dict[K, Any]:
    """key -> fold(previous or None, input) over the calls of `layers[key]` in one inference
    pass of `ids` ([1, n] token ids); each input comes as an fp32 [tokens, features] matrix."""
    import torch

    stats: dict[K, Any] = {}

    def hook(key: K) -> Any:
        def record(_module: Any, args: tuple[Any, ...], _out: Any) -> None:
            stats[key] = fold(stats.get(key), args[0].detach().reshape(-1, args[0].shape[-1]).float())
        return record

    hooks = [m.register_forward_hook(hook(k)) for k, m in layers.items()]
    try:
        with torch.inference_mode():
            model(input_ids=ids.to(model.device))
    finally:
        for h in hooks:
            h.remove()
    return stats
