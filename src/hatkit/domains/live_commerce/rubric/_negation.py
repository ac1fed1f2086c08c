"""Negation and its scope: what counts as a negation (en + zh, without the affirmative idioms
"no problem", "没问题"), and where a negation of a word would stand (its clause, after the last
contrastive conjunction: "it's expired, but I'll honour it" honours it)."""

from __future__ import annotations

import re

NEGATION = re.compile(r"\b(?:not?(?! (?:a )?(?:problem|worries|doubt|opened|used|worn|charge|cost|extra)\b)|"
                      r"never|cannot|can't|won't|isn't|doesn't|don't|aren't|invalid|unable|sorry|decline|"
                      r"refuse)\b|n't\b|不(?!客气|错|用(?:担心|谢))|没(?!问题|关系|拆|开封|用过|穿过|洗过)|"
                      r"无法|无效|抱歉", re.I)
"""A negation; "no problem", "没问题" and "没拆封的话" (a condition: if unopened) are none."""
_CONTRAST = re.compile(r"\b(?:but|however|though|although|yet)\b|但是?|不过|可是|然而", re.I)


def clause_before(text: str, pos: int) -> str:
    """The text from the start of the clause holding `pos` (after . ! ? ; or a newline, and
    their CJK forms) up to `pos`: where a negation of what stands at `pos` would be."""
    start = max(text.rfind(ch, 0, pos) for ch in ".!?。！？;；\n") + 1
    cuts = [m.end() for m in _CONTRAST.finditer(text, start, pos)]  # "it's expired, but I'll honour it"
    return text[cuts[-1] if cuts else start:pos]
