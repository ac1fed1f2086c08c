"""Disrespect toward the viewer, read by what the words do to the viewer, not by which item
they came from (en + zh). The persona is warm; a reply that scolds or mocks the viewer drops it
even when every fact is right. Five structures:

- blame for asking: the answer said to be given already or in plain sight ("I literally just
  said this", "third time tonight", "it's right there in the chart", "read before asking",
  我刚说过, 都说第三遍了, 又问这个);
- belittling the question: the answer called obvious or easy ("obviously", "not rocket
  science", "was that so hard?", "Google exists", 想什么呢, 这还用问);
- imperatives at the viewer's attention or feelings ("pay attention", "try to keep up", "calm
  down", 能不能认真听, 上点心);
- mockery of the viewer's means, ability or character ("if $49.99 is a lot for you", "love that
  for you", "lol, you?", "I'd bet you tap out", "drama queen", "yes, genius", 没钱还, 就你？,
  我赌你, 嫌贵就别/多买点呗, 还想退？);
- a dismissive interjection or emoji (🙄, "ugh", "happy now?", "your call.", "seriously?").

Playful warmth ("No worries, it's a busy chat!", "a brave one 🔥", 弹幕太快啦) names no
fault of the viewer and is left alone; a host declining ("I can't", "no returns on opened
lipstick") is no mockery either.
"""

from __future__ import annotations

import re

from hatkit.judge.patterns import FastPattern

_EN = FastPattern(
    # blame for asking
    r"\b(?:i|we)(?:'ve)? (?:literally |already |just )+(?:said|told you|answered|mentioned|went over)\b|"
    r"\b(?:second|third|fourth|fifth|\d+(?:st|nd|rd|th)|how many) times?(?: tonight| today| now| i've)?\b"
    r"(?=[^.?!]{0,20}(?:🙄|[.?!]|\bask))|"
    r"\bsame answer as (?:always|before|last time)\b|"
    r"\b(?:it's|it is|it says it|it's all) right (?:there|on the|in the|here)\b|"
    r"\bbefore asking\b|\b(?:read|look)\b[^.?!]{0,20}\bnext time\b|\bmaybe (?:read|look|check|try)\b|"
    # belittling the question
    r"(?:^|[.!?]\s+)obviously\b|\bobviously[.!]|\bnot (?:exactly )?rocket science\b|\bnot that hard\b|"
    r"\bwas that so hard\b|\bhow hard is it\b|\bgoogle (?:exists|is free|it yourself)\b|\bcommon sense\b|"
    r"\bit'?s an? [\w ]{2,20}, not an? (?:miracle|rocket|magic)\b|"
    # imperatives at the viewer's attention or feelings
    r"\bpay attention\b|\b(?:try to )?keep up\b[,.!]?\s*(?:babe|hun|honey|sweetie|$|[.!?])|"
    r"\bcalm down\b|\bchill out\b|\bget a grip\b|\bsince you can'?t (?:decide|read|figure)\b|"
    # mockery of means, ability, character
    r"\bif [^.?!]{1,30} is (?:a lot|too much|too expensive|pricey) for you\b|"
    r"\b(?:isn't|is not|not) the (?:show|stream|place|shop|channel) for you\b|\blove that for you\b|"
    r"\blol,? you\b|\bi'?d bet you\b|\bbet you (?:can't|tap|give)\b|\bdrama queen\b|"
    r"\b(?:yes|no|sure|okay|ok|well),? (?:genius|einstein|smarty|sherlock|princess)\b|"
    r"\bbroke and\b|\bspend more if\b|\beveryone'?s [\w' ]{0,12}these days\b|"
    r"\byou haven'?t even\b|\byou want to return (?:used|opened)\b|"
    # dismissive interjections
    r"🙄|(?:^|[.!?]\s+)ugh\b(?![,.!]?\s+(?:i'?m|so|sorry|that))|\bhappy now\?|\byour call\.\s*$|"
    r"(?:^|[.!?]\s+)seriously\?|"
    r"\bbut fine\b|^\W*fine[,:]", re.I | re.M)
_ZH = FastPattern(
    r"我?刚(?:刚|才)+(?:才)?(?:说|讲|回答)过|都说了?第?[二三四五两几]遍|说了?(?:多少|几)遍|又问(?:这个|了)|"
    r"(?:自己|先)(?:去)?看(?:一下)?(?:详情|链接|尺码表|说明)|"
    r"想什么呢|这还用问|这都不知道|常识好吗|"
    r"能不能认真|上点心|用点心|长点心|别激动|冷静点|"
    r"没钱还|就你[？?]|我赌你|嫌[^，。！？]{0,4}贵的话|嫌[^，。！？]{0,4}贵就|多买点呗|别看直播|还想退[？?]|"
    r"笑死|🙄|呵呵")


def disrespect(reply: str) -> str | None:
    """The words that scold or mock the viewer, or None."""
    m = None if reply.isascii() else _ZH.search(reply)
    if m is None:
        m = _EN.search(reply)
    return m.group(0).strip() if m is not None else None
