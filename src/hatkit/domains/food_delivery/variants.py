"""What makes a food-delivery harness variant: the augmentation data in `hsa/` and the rule
values a variant may hold together."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hatkit.sim.augment import HsaData

ROOT = Path(__file__).resolve().parent
HARNESS_DIR = ROOT / "harness"


def rules_valid(rules: Mapping[str, Any]) -> bool:
    """Delays ordered (small < large), vouchers ordered and under their cap, fees positive."""
    def num(k: str, default: float) -> float:
        return float(rules.get(k, default))
    return (0 < num("late_minutes_small", 15) < num("late_minutes_large", 40)
            and 0 < num("voucher_small", 5) <= num("voucher_large", 10) <= num("voucher_cap", 15)
            and num("refund_cap", 30) > 0 and num("refund_window_hours", 24) >= 1
            and num("base_delivery_fee", 2.99) > 0 and num("zone_b_surcharge", 1.5) >= 0
            and num("free_delivery_threshold", 35) > 0 and num("reply_max_chars", 320) >= 160)


HSA = HsaData(ROOT / "hsa", rules_valid=rules_valid)
