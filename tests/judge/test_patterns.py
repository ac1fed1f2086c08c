"""FastPattern: ASCII text in ASCII mode, other text by the Unicode pattern, the same matches."""

from __future__ import annotations

import re
from typing import Any

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


# ---- the literal prefilter: a necessary condition only, so no search finds anything different ----

def _all_fast_patterns() -> list[FastPattern]:
    """Every FastPattern the programmatic judge builds (module constants, configs, numbers)."""
    import gc

    import hatkit.judge.numbers  # noqa: F401

    ProgrammaticJudge()
    return [o for o in gc.get_objects() if isinstance(o, FastPattern)]


def _corpus() -> list[str]:
    """The calibration conversations' viewer and host text, whole and cut into clauses, and
    the texts above."""
    from hatkit.domains.live_commerce import DOMAIN as LC
    from hatkit.judge.conversations import load_conversations

    texts = set(TEXTS)
    for conv in load_conversations(LC.root / "calibration" / "dev_families.jsonl"):
        for m in conv.messages:
            if isinstance(m.get("content"), str) and m["role"] in ("user", "assistant"):
                texts.add(m["content"])
                texts.update(re.split(r"(?<=[.!?;。！？；,，])", m["content"]))
    return sorted(texts)


def _full(p: FastPattern, text: str) -> list[tuple[Any, ...]]:
    return [(m.span(), m.groups(), m.lastgroup) for m in p.finditer(text)]


def test_prefiltered_patterns_find_what_plain_patterns_find() -> None:
    patterns = {p.pattern: p for p in _all_fast_patterns()}
    assert len(patterns) > 100
    texts = _corpus()
    skipped = 0
    for p in patterns.values():
        plain = FastPattern.__new__(FastPattern)
        for slot in ("_ascii", "_unicode", "_flags", "_n", "_pieces", "_subsets", "flags", "pattern"):
            setattr(plain, slot, getattr(p, slot))
        plain._live = (None, None)  # the same patterns, never prefiltered
        for text in texts:
            got = _full(p, text)
            assert got == _full(plain, text), (p.pattern, text)
            skipped += not got and p._for(text) is None
    assert skipped > len(texts) * len(patterns) // 2  # most searches are ruled out


def test_prefilter_reads_the_literals_a_match_needs() -> None:
    p = FastPattern(r"\bcur(?:e|es|ed)\b.{0,40}\b(?:acne|flu)|治好")
    assert p._for("it CURES the flu") is not None and p._for("it helps the flu") is None
    assert p._for("能治好吗") is not None and p._for("能治吗") is None
    zh = FastPattern(r"治愈|根治")
    assert zh._for("it cures") is None  # a Chinese pattern never runs on English text
    assert FastPattern(r"\w+\d")._live == (None, None)  # nothing literal: no prefilter


@pytest.mark.parametrize("source", [
    r"(?P<a>\bfree gifts?\b)|(?P<b>\bbonus\b)|(?P<c>包邮)",  # groups keep their numbers
    r"[|]x|y\|z|(?:p|q)r",  # "|" in a class, escaped, inside a group: no cut there
    r"[]|]a|b",  # a "]" first in a class is a literal
    r"(?i)abc|DEF",  # a global flag: not cut
    r"a(?=b|c)|(d)\1",  # a look-ahead, a back reference
])
def test_alternatives_ruled_out_change_no_match(source: str) -> None:
    ref, fast = re.compile(source, re.I), FastPattern(source, re.I)
    for text in ["BONUS, free gift, 包邮", "a free gift", "x|y|z y|z pr qr", "]a b |a", "ABC def",
                 "ab ac dd", "nothing here", *TEXTS]:
        assert [(m.span(), m.groups(), m.lastgroup) for m in fast.finditer(text)] == [
            (m.span(), m.groups(), m.lastgroup) for m in ref.finditer(text)], text
        assert fast.sub("#", text) == ref.sub("#", text)


def test_special_folds_are_every_character_case_folds_to_ascii_unlike_lower() -> None:
    """A character `re.I` matches with an ASCII letter, where `str.lower` does not give that
    letter, makes folded() decline the text; the list must hold every such character."""
    from hatkit.judge.patterns import _SPECIAL_FOLDS

    others = "".join(map(chr, range(128, 0x110000)))
    folds = set(re.compile("[a-z]", re.I).findall(others))
    assert {c for c in folds if not (len(c.lower()) == 1 and c.lower().isascii())} == _SPECIAL_FOLDS
    assert [c for c in others if len(c.lower()) != 1] == ["\u0130"]  # lower() keeps lengths otherwise
    assert FastPattern(r"\bstrasse\b").search("ſtrasse") is not None


@pytest.mark.parametrize("many", [False, True], ids=["few-literals", "many-literals"])
def test_a_hostile_hook_pattern_is_only_ever_text(many: bool, tmp_path: Any) -> None:
    """The prefilter writes its tests as Python source from a pattern's literals, each quoted by
    repr; a harness hook's pattern (a program may propose one) is untrusted, so literals that
    look like code stay strings: nothing runs, and the pattern matches what `re` matches."""
    marker = tmp_path / "ran"
    hostile = f"') or __import__('pathlib').Path({str(marker)!r}).touch() or ('"
    others = [f"word{i}" for i in range(40)] if many else ["b\"\\n'"]
    source = "|".join(re.escape(x) for x in [hostile, *others])
    fast, plain = FastPattern(source), re.compile(source, re.I)
    for text in [f"say {hostile} now", "nothing here", f"and {others[-1]}"]:
        got, want = fast.search(text), plain.search(text)
        assert (got and got.group(0)) == (want and want.group(0))
    assert not marker.exists()
