"""Answers that state no value: a lookup that failed, explained; a yes or no; an option refused.

Effectiveness asks whether the reply addresses what the viewer asked. Besides a value of the
asked kind, three shapes of reply do:

- the lookup failed (a tool error, an id the catalog does not hold, an empty search) and the
  reply says so ("I couldn't find AP-021", "没有查到"), usually offering the next step: the
  calibration README labels a well-handled tool error effective;
- a yes/no question answered by a yes or a no opening the reply ("Not fully waterproof: 40
  minutes", "不可以哦，12个月以下…"): the answer is the yes or no, not a spec value;
- (accuracy's side) a reply that states values about an id whose lookup failed, and does not
  say so, glosses over the error: nothing supports those values;
- (accuracy's side) agreeing to sell more units than check_stock holds ("我要买6瓶" "没问题" with
  4 left) promises stock that is not there;
- a yes/no question about an option ("can I pay for express?") answered by the option being
  unavailable: its price or terms are moot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hatkit.agent.trace import ToolRecord, ok_record

_EXPLAINED = re.compile(
    r"\b(?:couldn'?t|could not|can'?t|cannot|wasn'?t able to|was unable to|unable to|am not able to)\s+"
    r"(?:\w+\s+){0,2}?(?:find|locate|look (?:it |that |this )?up|pull (?:it |that )?up|check|get|see|"
    r"access)\b|"
    r"\b(?:didn'?t|did not|doesn'?t|does not)\s+(?:come up|show up|exist|match)\b|"
    r"\bno (?:product|item|listing|match(?:es)?|results?)\b|\b(?:there'?s|there is|it has|has) no\b|"
    r"\b(?:doesn'?t|does not) have (?:a|an|any)\b|\bnot (?:in|on) (?:our|the) (?:catalog|shop|store)\b|"
    r"\b(?:isn'?t|is not|wasn'?t|was not) (?:in|on) (?:our|the) (?:catalog|shop|store)\b|"
    r"\b(?:system|lookup|tool) (?:is |was )?(?:down|erroring|not responding)\b|"
    r"没(?:有)?查到|查不到|找不到|没(?:有)?找到|没有这个|不存在|暂时(?:无法|查不了|没法)|系统(?:出错|故障|繁忙)",
    re.I)
_YES_NO_Q = re.compile(r"^\W*(?:is|are|does|do|can|could|will|would|has|have|should)\b|"
                       r"(?:吗|么|能不能|可不可以|会不会|是不是|有没有)\s*[？?]?\s*$", re.I)
_SECOND_Q = re.compile(r"\b(?:and|or|also|plus)\s+(?:is|are|does|do|can|will|what|how|which|when)\b|"
                       r"[?？].*\S.*[?？]|[，,]\s*(?:还|那|另外|以及)", re.I)
_YES_NO_A = re.compile(
    r"^\W*(?:yes|yep|yeah|yup|no|nope|not\b|sadly not|afraid not|it (?:is|does|can|will|won'?t|isn'?t|"
    r"doesn'?t|can'?t)\b|they (?:are|do|can|aren'?t|don'?t|can'?t)\b)|"
    r"^\W*(?:可以|能|会|是的?|有的?|对|不(?:可以|能|会|是|行|建议)|没有?|不太)", re.I)
_UNAVAILABLE = re.compile(
    r"\b(?:isn'?t|is not|aren'?t|are not|not) (?:available|offered|possible|an option|supported)\b|"
    r"\bno (?:express|expedited|option)\b|\bdoesn'?t (?:offer|support|come with)\b|"
    r"不支持|不提供|没有(?:加急|这个选项)|无法(?:加急|选择)", re.I)


_UNITS_WANTED = re.compile(r"(?<![\d.$])(\d{1,3})\s?(?:瓶|件|个|双|套|盒|支|份|包|条|台|顶|罐|袋|"
                           r"units?\b|pieces?\b|bottles?\b|jars?\b|pairs?\b|bags?\b|packs?\b|"
                           r"of (?:them|these)\b)", re.I)
_GRANTED = re.compile(r"^\W*(?:yes|yep|sure|no problem|of course|absolutely|go for it|grab)\b|"
                      r"^\W*(?:没问题|可以|好的|放心|随便拍|有的)", re.I)


def units_wanted(user: str) -> int:
    """The most units a viewer's turn asks to buy ("我要买6瓶", "I'll take 6 jars"), 0 if none."""
    return max((int(m.group(1)) for m in _UNITS_WANTED.finditer(user)), default=0)


def granted(reply: str) -> bool:
    """The reply opens by agreeing ("No problem", "没问题")."""
    return bool(_GRANTED.search(reply))


def lookup_failed(records: Iterable[ToolRecord]) -> bool:
    """A tool call of the turn failed or found nothing (an error payload, an empty search)."""
    for r in records:
        if not ok_record(r):
            return True
        out = r.output
        if out in ([], {}, None) or (isinstance(out, dict) and ("error" in out or out.get("found") is False)):
            return True
    return False


def failed_ids(records: Iterable[ToolRecord]) -> set[str]:
    """The product ids of lookups that failed."""
    return {str(r.arguments.get("product_id", "")).strip().upper() for r in records
            if not ok_record(r) and r.arguments.get("product_id")}


def explained(reply: str) -> bool:
    """The reply says it could not find or check something."""
    return bool(_EXPLAINED.search(reply))


def explained_failure(reply: str, records: Iterable[ToolRecord]) -> bool:
    """The turn's lookup failed and the reply says it could not find or check it."""
    return lookup_failed(records) and bool(_EXPLAINED.search(reply))


def yes_no_question(user: str) -> bool:
    """One yes/no question ("does it ship free?"), not two ("does it come in slate, and is it in stock?")."""
    return bool(_YES_NO_Q.search(user.strip())) and not _SECOND_Q.search(user)


def yes_no_answer(reply: str) -> bool:
    """The reply opens with a yes or a no (en + zh), not with a hedge."""
    return bool(_YES_NO_A.search(reply))


def refused_option(reply: str) -> bool:
    """The reply says the asked option is not available ("express isn't available on it")."""
    return bool(_UNAVAILABLE.search(reply))
