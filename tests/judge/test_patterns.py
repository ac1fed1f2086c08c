"""FastPattern: ASCII text in ASCII mode, other text by the Unicode pattern, the same matches."""

from __future__ import annotations

import re

import pytest

from hatkit.domains.live_commerce.rubric.programmatic import ProgrammaticJudge
from hatkit.judge.patterns import FastPattern

TEXTS = [
    "It CURES acne for good, the BEST cream ever!",
    "Helps ease my rosacea? I'll knock 20% off for you.",
    "No, it does not treat eczema; ask a doctor.",
    "Café crème: il soulage l'ACNÉ",  # accents: the Unicode pattern
    "这款面霜能治好痘痘吗？best seller",  # Chinese beside English
    "straße STRASSE ſtrasse",  # Unicode case folding that ASCII mode lacks
    "",
]


def _matches(p: re.Pattern[str] | FastPattern, text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group(0)) for m in p.finditer(text)]


@pytest.mark.parametrize("source", [
    r"\b(?:cur(?:e|es|ed)|treat(?:s|ed)?|heal)\b", r"\bbest\b[^.!?]{0,20}\bever\b",
    r"(?<!\w)(?:ease|soothe)s?\b", r"治好|治疗|best", r"\bstrasse\b", r"\w+",
])
def test_fast_pattern_finds_what_the_unicode_pattern_finds(source: str) -> None:
    ref, fast = re.compile(source, re.I | re.M), FastPattern(source, re.I | re.M)
    for text in TEXTS:
        assert _matches(fast, text) == _matches(ref, text), text
        found = fast.search(text)
        assert (found and found.span()) == ((m := ref.search(text)) and m.span())
        assert fast.findall(text) == ref.findall(text)
        assert fast.sub("#", text) == ref.sub("#", text)


def test_non_ascii_text_keeps_unicode_case_folding() -> None:
    # the long s folds to 's' only under Unicode rules: an ASCII-mode pattern would miss it
    fast = FastPattern(r"\bstrasse\b")
    assert fast.search("ſtrasse") is not None
    assert fast.search("Strasse") is not None


def test_the_judge_config_compiles_harness_patterns_as_fast_patterns() -> None:
    cfg = ProgrammaticJudge().config
    assert cfg.compliance and all(isinstance(p, FastPattern) for _, ps in cfg.compliance for p in ps)
    reply = "The Daily Barrier Moisturizer can help alleviate rosacea symptoms."
    assert cfg.compliance_any.search(reply) is not None
    assert cfg.compliance_any.search("It ships in two days.") is None


def test_per_object_computes_once_per_object_by_identity() -> None:
    from hatkit.domains.live_commerce.rubric._memo import per_object

    calls: list[int] = []

    @per_object
    def size(d: dict[str, int]) -> int:
        calls.append(len(d))
        return len(d)

    a, b = {"x": 1}, {"x": 1}  # equal, not the same object
    assert size(a) == size(a) == 1 and calls == [1]
    assert size(b) == 1 and calls == [1, 1]
