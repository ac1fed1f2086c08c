"""What a profile's sizes can decide: for each published claim, the smallest effect a paired
comparison at those sizes detects (two-sided alpha 0.05, power 0.8), beside the published
effect, printed before a run so that nobody spends hours on a run that cannot decide.

Assumptions, stated where they are used: a paired binary outcome (success, an IFEval prompt
passing) with a discordant share `DISCORDANT` of item pairs (McNemar's normal approximation:
the smallest detectable difference is (z_a + z_b) * sqrt(p_d / n)); think-block lengths whose
paired differences have a standard deviation of `LENGTH_SD` times the mean (a paired t test).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .config import PipelineConfig

Z = 1.959963984540054 + 0.8416212335729143
"""z for a two-sided alpha of 0.05 plus z for a power of 0.8."""
DISCORDANT = 0.3
"""Assumed share of items on which two paired models disagree (measured quick runs: 0.2-0.4)."""
LENGTH_SD = 0.5
"""Assumed spread of paired think-length differences, as a share of the mean length."""


@dataclass(frozen=True)
class Detectable:
    claim: str
    comparison: str
    n: int
    smallest: str
    published: str
    decidable: bool

    def row(self) -> list[str]:
        return [self.claim, self.comparison, str(self.n), self.smallest, self.published,
                "yes" if self.decidable else "no"]


def paired_rate_mde(n: int, discordant: float = DISCORDANT) -> float:
    """Smallest difference of two paired success rates detectable with n items."""
    return Z * math.sqrt(discordant / n) if n > 0 else 1.0


def relative_mean_mde(n: int, sd: float = LENGTH_SD) -> float:
    """Smallest relative change of a paired mean detectable with n items."""
    return Z * sd / math.sqrt(n) if n > 0 else 1.0


def detectable_effects(cfg: PipelineConfig) -> list[Detectable]:
    sizes = cfg.suite_sizes()
    variant, general = sizes.get("variant_qa", 0), sizes.get("general_if", 0)
    lengths = sizes.get("lengths", 0)
    mde_v = paired_rate_mde(variant)
    mde_if = paired_rate_mde(general)
    mde_len = relative_mean_mde(lengths)
    evolution = cfg.evolution_test_n
    mde_ev = paired_rate_mde(evolution) if evolution else 1.0
    return [
        Detectable("1. HSA keeps the variant drop small", "HSA-SFT vs Fixed-SFT on variant_qa success",
                   variant, f"{mde_v:.2f}", "fixed-SFT loses 'much more' than HAT's 0.002 (no figure)",
                   mde_v <= 0.15),
        Detectable("2. OPD recovers instruction following", "HAT vs Fixed-SFT on general_if",
                   general, f"{mde_if:.2f}", "0.097 (IFEval +2.0 vs -7.7 points)", mde_if <= 0.097),
        Detectable("3. RL shortens reasoning", "HAT vs +OPD think_tool / think_reply tokens",
                   lengths, f"{mde_len:.0%} of the mean", "-41% before calls, -60% before replies",
                   mde_len <= 0.41),
        Detectable("4. evolution helps HAT more", "difference of test-error reductions, HAT vs Fixed-SFT",
                   evolution, f"{mde_ev:.2f}" if evolution else "not run in this profile",
                   "about 3x the reduction (no absolute figure)", bool(evolution) and mde_ev <= 0.15),
    ]
