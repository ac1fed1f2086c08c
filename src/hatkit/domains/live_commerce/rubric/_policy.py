"""Store-policy semantics read from the episode's own tool results: what get_return_policy and
get_shipping_info said the store does, against what the reply promises.

- A return affirmed for a product whose window is 0 (final sale, perishable), or for a used
  item when the policy's conditions ask for unused or unopened ones.
- Express shipping offered for a product get_shipping_info said has none.
- A coupon code the episode's tools did not return, presented as usable: its negation must
  stand in its own part of the sentence ("it's expired, but I'll honour FALL30" honours it).
"""

from __future__ import annotations

import re

from .claims import NEGATION, clause_before

_CONTRAST_END = re.compile(r"\b(?:but|however|though|although|yet)\b|但是?|不过|可是|然而|"
                           r"[.!?;。！？；\n]", re.I)
_UNUSED = re.compile(r"\bun(?:used|opened|worn|washed)\b|original packaging|sealed|"
                     r"未(?:使用|拆封|开封)|原包装", re.I)
"""Return conditions that rule out a used item."""
_USED = re.compile(r"\b(?:opened|used|worn|tried (?:it )?on|slept on|washed|unsealed|tested)\b|"
                   r"拆(?:开|封)了|(?<!没)(?:用|穿|洗|睡)(?:过|了)", re.I)
_DAMAGE = re.compile(r"damag|broken|spoil|arriv\w* (?:bad|off)|defect|损|坏|破|变质", re.I)
_EXPRESS = re.compile(r"\bexpress\b|\bexpedit\w*|\bovernight\b|\brush (?:shipping|delivery)\b|"
                      r"加急|特快|次日达", re.I)
_INVALID = re.compile(r"expired|\bended\b|no longer|not (?:valid|active|working)|"
                      r"过期|失效|用不了|不能用", re.I)


def segment(text: str, start: int, end: int) -> str:
    """The part of the sentence holding text[start:end], between contrastive conjunctions
    ("but", "不过") and clause ends: where a negation of what stands there would be."""
    before = clause_before(text, start)
    after = _CONTRAST_END.search(text, end)
    return before + text[start:after.start() if after else len(text)]


def negated_here(text: str, start: int, end: int) -> bool:
    """A negation, or a word that says a code is void, in the segment of text[start:end]."""
    seg = segment(text, start, end)
    return bool(NEGATION.search(seg) or _INVALID.search(seg))


def said_used(users: list[str]) -> bool:
    """The viewer says the item was used, worn or opened (not "unopened", not "haven't used")."""
    for u in users:
        for m in _USED.finditer(u):
            if not NEGATION.search(clause_before(u, m.start())[-25:]):
                return True
    return False


def return_refused(reply: str, pos: int, windows: dict[str, int], conditions: dict[str, str],
                   used: bool) -> str:
    """Why the return affirmed at `pos` breaks the policy the tools returned, or ''."""
    seg = segment(reply, pos, pos)
    if _DAMAGE.search(seg):
        return ""  # a damaged delivery is reported, not returned: a separate path
    if windows and all(w == 0 for w in windows.values()):
        return "the return policy allows no returns (return window 0 days)"
    if (used or _USED.search(seg)) and any(_UNUSED.search(c) for c in conditions.values()):
        return "the return policy's conditions ask for unused or unopened items"
    return ""


def express_refused(reply: str, available: dict[str, bool]) -> str | None:
    """The express offer in `reply` when get_shipping_info said express is not available."""
    if not available or any(available.values()):
        return None
    for m in _EXPRESS.finditer(reply):
        if not NEGATION.search(segment(reply, m.start(), m.end())):
            return m.group(0)
    return None
