"""What makes a live-commerce harness variant: the augmentation data in `hsa/` and the rule
values a variant may hold together."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hatkit.sim.augment import HsaData

ROOT = Path(__file__).resolve().parent
HARNESS_DIR = ROOT / "harness"
"""The default agent harness."""


def rules_valid(rules: Mapping[str, Any]) -> bool:
    """Fees positive, express above standard, return windows of at least a week."""
    def num(k: str, default: float) -> float:
        return float(rules.get(k, default))
    return (num("standard_shipping_fee", 1) > 0 and num("free_shipping_threshold", 1) > 0
            and num("express_shipping_fee", 1e9) > num("standard_shipping_fee", 0)
            and 7 <= num("return_window_days", 7) <= num("extended_return_days", 1e9)
            and num("electronics_return_days", 7) >= 7 and num("reply_max_chars", 160) >= 160
            and 0 < num("max_coupon_percent", 1) <= 100)


HSA = HsaData(ROOT / "hsa", rules_valid=rules_valid)
"""The train and heldout families of harness-state augmentation."""
