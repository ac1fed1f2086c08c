"""Comparisons with what lies outside the shop, read by structure (en + zh).

No tool says how a product stands against a rival brand, a kind of shop, or every member of a
class, so a reply that compares with one states something unfounded. Three constructions:

- a named rival: a capitalised name that is no word of the catalog (checked by the caller
  against the episode's tool outputs too) in a clause, or the clause after it, that compares:
  a comparative, an out- verb, an equivalence ("same sound as", "every bit as good") or a
  comparison idiom ("runs circles around", "holds a candle to", "next to this");
- a comparison idiom whose other side is no catalog product ("supermarket matcha is dust next to
  this", "I've yet to taste an espresso that holds a candle to it");
- a negated existential over a class: "there isn't a storm out there that'll get through",
  "nobody else sells ...", "no other X can", "you won't find one anywhere";
- Chinese comparison idioms (不输, 甩…几条街, 吊打, 碾压, 不是一个档次, 比不上) and "用了就回不去".

Product names are replaced by "the product" before this runs, so a clause comparing two of
the shop's own items is told apart by naming them.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hatkit.judge.patterns import FastPattern

from ..catalog import Catalog, load_catalog
from ._degree import degree

_CAP = re.compile(r"\b[A-Z][A-Za-z]*[a-z][A-Za-z]*\b")
"""A capitalised name with a lower-case letter (Anker, AirPods; not SPF, LIVE15)."""
_WORD = re.compile(r"[a-z0-9]+")
_NOT_RIVAL = frozenset(["mia", "i", "ok", "okay", "usd", "us", "monday", "tuesday", "wednesday", "thursday",
                        "friday", "saturday", "sunday", "black", "cyber"])
_EQUAL = FastPattern(
    r"\bsame\b[^.;!?]{0,30}\bas\b|\b(?:every bit|just|fully|at least|twice|half) as\b|\bas \w+ as\b|"
    r"\bon par\b|\bmatch(?:es)?\b|\brivals?\b|\bequal(?:s|ly)?\b|\bthe same\b|\bcompared (?:to|with)\b|"
    r"\bversus\b|\bvs\b|\b(?:on|at) (?:another|a different|a whole (?:other|new)) level\b|"
    r"\b(?:in a different|leagues?) (?:league|ahead|above)\b")
"""An equivalence or a comparison that needs a named other side ("same sound as AirPods")."""
_IDIOM = FastPattern(
    r"\b(?:runs?|running) (?:rings|circles) (?:a)?round\b|\bholds? a candle\b|"
    r"\bcan(?:'t|not) (?:touch|compete)\b|\bno match for\b|\bcomes? (?:anywhere )?close to\b|"
    r"\bblows? \w+(?: \w+)? (?:away|out of the water)\b|\bputs? \w+(?: \w+)? to shame\b|\bin the dust\b|"
    r"\b(?:next to|compared (?:to|with)|versus|vs\.?) (?:this|it|ours|these|them|that one|this one|"
    r"the product)\b|\bon par with\b|\bmiles (?:ahead|better)\b|\bnot even close\b|\bblows? away\b")
"""A comparison in an idiom; its other side is outside the shop unless the clause names a product."""
_EXISTS = FastPattern(
    r"\b(?:nobody|no one|no-one|nowhere|nothing) else\b|"
    r"\bno other \w+(?: \w+)? (?:can|could|will|does|do|has|have|is|are|comes?|offers?|sells?|gives?|"
    r"gets?|matches|beats)\b|"
    r"\bthere(?:(?:'s| is| are)\s+(?:no|not an?|not one|not a single|nothing|none)|"
    r"(?: isn't| is not| aren't| are not| ain't)\s+(?:an?|any|one|a single))\b[^.;!?]{0,40}"
    r"\b(?:out there|in the world|on the market|anywhere|that(?:'ll| will| can| could| would)(?: \w+)? "
    r"(?:beat|match|touch|top|rival|get through|compare|come close|outlast|outperform))\b|"
    r"\b(?:i(?:'ve| have)|we(?:'ve| have)) (?:yet|never) (?:to )?(?:\w+ )?(?:an?|any|one) \w+(?: \w+)? "
    r"(?:that|which)\b|"
    r"\b(?:haven't|have not|never|yet to)\b[^.;!?]{0,20}\b(?:a single|anyone|anybody|"
    r"one (?:person|customer|buyer|viewer))\b[^.;!?]{0,25}\bwho\b|"
    r"\b(?:won't|will not|can't|cannot|never) (?:ever )?find (?:an?|any|one|another|anything)\b"
    r"[^.;!?]{0,40}\b(?:anywhere|elsewhere|out there|on the market|that|which|like (?:it|this))\b")
"""A negated existential over a class: nothing, nobody or no other member of it does as well."""
_DECLINE = FastPattern(
    r"\b(?:can(?:no|')t|cannot|won't|don't|do not|not able to|unable to|hard to)\s+(?:\w+ ){0,2}?"
    r"(?:promise|guarantee|say|claim|compare|know|confirm|verify|vouch|speak for|comment on)\b|"
    r"\bno (?:data|info\w*|way to (?:compare|know|say))\b|\bnot sure\b|\bif\b|\bwhether\b|\?")
_CLAUSE = re.compile(r"(?:[^.!?;:\n]|\.(?=\d))+")
_OURS = FastPattern(r"\b(?:of|in|between|among) (?:our|the two|these|both)\b|\bour (?:two|three|\w+ line)\b")
_CJK = re.compile(r"[\u4e00-\u9fff]")

_ZH_IDIOM = re.compile(
    r"不输(?:给)?|甩(?:出)?[^，。！？；,]{0,8}?(?:几|一|好几|[0-9]+)条街|吊打|碾压|完爆|完胜|"
    r"(?:不是|不在)(?:[一1]个|同[一1]个?)(?:档次|级别|量级|水平)|比不上|比不了|没法比|没得比|望尘莫及|"
    r"相形见绌|(?:用|吃|穿|试|喝)(?:过|了)?就回不去|再也回不去|头号|榜首|名列前茅")
_ZH_DECLINE = re.compile(r"(?:不|没|无法|没法|不能|不敢|难以|别|不好)[\u4e00-\u9fff]{0,3}$|"
                         r"如果|要是|想要|是否")

_TEXT_WORDS: dict[int, tuple[Catalog, frozenset[str]]] = {}


def catalog_text_words(catalog: Catalog | None = None) -> frozenset[str]:
    """Lower-case words of the catalog's names, brands, descriptions, specs and materials: a
    capitalised word among them ("Uji", "Wi-Fi") is the shop's own, no rival."""
    cat = catalog if catalog is not None else load_catalog()
    hit = _TEXT_WORDS.get(id(cat))
    if hit is None or hit[0] is not cat:
        text = " ".join(" ".join([p.name, p.brand, p.description, *p.specs, *p.specs.values(), *p.materials])
                        for p in cat.products)
        hit = _TEXT_WORDS[id(cat)] = (cat, frozenset(_WORD.findall(text.lower())))
    return hit[1]


def _rivals(reply: str, known: frozenset[str]) -> list[tuple[int, str]]:
    """(offset, name) of each capitalised name in `reply` that does not open a sentence and is
    no word of the catalog."""
    out = []
    for m in _CAP.finditer(reply):
        w = m.group(0).lower()
        if w in known or w in _NOT_RIVAL or w.removesuffix("s") in known or "product" in w:
            continue
        before = reply[:m.start()].rstrip(" \"'“‘(")
        if not before or before[-1] in ".!?:;\n":
            continue  # a sentence opens with it: a capital says nothing
        out.append((m.start(), m.group(0)))
    return out


def _compares(clause: str) -> re.Match[str] | None:
    """A comparative, superlative, out- verb or equivalence in `clause`."""

    return degree(clause) or _EQUAL.search(clause)


@lru_cache(maxsize=4096)
def comparisons(reply: str, known: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """(claim text, rival name or "") of each comparison with something outside the shop; the
    caller drops those whose rival a tool output of the episode names. Cached."""
    out: list[tuple[str, str]] = []
    reply = reply.replace("’", "'")
    if _CJK.search(reply):
        for z in _ZH_IDIOM.finditer(reply):
            start = max(reply.rfind(ch, 0, z.start()) for ch in "，。！？；,!?;\n") + 1
            if not _ZH_DECLINE.search(reply[start:z.start()]):
                out.append((z.group(0), ""))
    names = _rivals(reply, known)
    if not names and _IDIOM.search(reply) is None and _EXISTS.search(reply) is None:
        return tuple(out)  # most replies: one pass each, no clause walk
    clauses = [(m.start(), m.group(0)) for m in _CLAUSE.finditer(reply)]
    rival_at: dict[int, str] = {}
    for k, (at, cl) in enumerate(clauses):
        here = " ".join(n for pos, n in names if at <= pos < at + len(cl))
        if here and not _OURS.search(cl):
            rival_at.setdefault(k, here)
            rival_at.setdefault(k + 1, here)
    for k, (_, cl) in enumerate(clauses):
        if _DECLINE.search(cl):
            continue
        rival = rival_at.get(k, "")
        idiom = _IDIOM.search(cl)
        if rival and (m := idiom or _compares(cl)) is not None:
            out.append((m.group(0), rival))
        elif idiom is not None and "the product" not in cl.lower():
            out.append((idiom.group(0), ""))
        elif (e := _EXISTS.search(cl)) is not None:
            out.append((e.group(0), ""))
    return tuple(out)
