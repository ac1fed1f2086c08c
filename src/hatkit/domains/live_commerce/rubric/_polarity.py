"""Yes/no attributes said the wrong way round: the reply's polarity about a feature against the
polarity the product's own data gives it.

A negated feature is no value, so the value checks (`_swapped`, `_fields`) cannot see "it isn't
machine washable" when the care field says "machine wash cold". This reads polarity instead:

- the data side: the clauses of the product's description, specs, materials and notes, each
  positive or negated ("no GPS", "not water resistant", a spec value "none"/"no"); a spec key
  counts with its value ("rock plate: yes", "auto shut-off: when water runs out"), and an
  "X-free" word is the absence of X ("fragrance-free" says no fragrance);
- the reply side (en): the content words right after a negation ("doesn't do wireless
  charging", "not certified gluten-free", "no zipped pocket") are a denied feature, and those
  after "has/with/contains" an affirmed one; (zh) a feature word of the glossary below, or a
  Latin term, after 不/没/无/非 (denied) or after 有/含/带/支持 (affirmed).

A denied feature is wrong when all its words stand, in order, in one positive clause of the
product the segment speaks of; an affirmed one when the data only ever negates it. Degree
words ("not fully waterproof", "不是完全防水") are no flip and are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hatkit.judge.patterns import FastPattern

from ._fields import ProductData, bound_segments

_KEYS = ("description", "specs", "materials", "compliance_notes")
_CLAUSE = re.compile(r"[^.;,()\n]+(?:\.\d[^.;,()\n]*)*")
_CONTRAST = re.compile(r"\b(?:but|except|however|while)\b")
_DATA_NEG = re.compile(r"\b(?:no|not|never|without|none|non|don't|do not|cannot|can't|won't|isn't|doesn't)\b")
_NONE = frozenset({"no", "none", "false", "n/a", "not included", "not available"})
_YES = frozenset({"yes", "true", "included"})
_TOKEN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_ABSENT = re.compile(r"\b(?:no|without|contains no|free of)\s+((?:[a-z0-9-]+ ?){1,2})")

_EN_DENY = FastPattern(
    r"\b(?:not|no|never|lacks?|isn't|aren't|doesn't|don't|didn't|won't|wasn't|hasn't|haven't|"
    r"can't|cannot)\b", re.I)
_EN_HAS = FastPattern(r"\b(?:has|have|does have|contains?|comes with|includes?|with)\s+"
                      r"(?:a |an |some |built-in )?", re.I)
_LEAD = frozenset({"a", "an", "the", "any", "have", "has", "had", "do", "does", "did", "be", "been", "is",
                   "are", "come", "comes", "with", "got", "get", "gets", "actually", "really", "include",
                   "includes", "feature", "features", "offer", "offers", "support", "supports", "built-in",
                   "built", "for", "work", "works", "go", "goes", "currently", "labelled", "labeled",
                   "listed", "rated", "as", "it", "it's", "its", "they", "their", "one"})
_DEGREE = frozenset({"fully", "completely", "totally", "entirely", "100%", "very", "so", "too", "that",
                     "quite", "exactly", "just", "only", "always", "all", "both", "every", "much", "more",
                     "less", "sure", "worry", "worries", "problem", "need", "recommended", "officially",
                     "technically", "necessarily", "super", "extra", "as", "the", "intended", "meant",
                     "designed", "made", "promise", "guarantee", "claim", "say", "recommend"})
_GENERIC = frozenset({"compatible", "compatibility", "friendly", "function", "functions", "feature",
                      "features", "option", "options", "mode", "support", "ready", "capable", "version",
                      "built-in", "included", "either", "at", "here", "on", "thing", "one"})
_SUFFIX = re.compile(r"(?:able|ible|ing|ed|es|s)$")

_ZH_FEATURES: dict[str, str] = {
    "机洗": r"machine[- ]wash", "机器洗": r"machine[- ]wash", "手洗": r"hand[- ]wash",
    "烘干": r"tumble[- ]dr|dryer", "无线充电": r"wireless charg", "无线充": r"wireless charg",
    "快充": r"fast[- ]charg|quick[- ]charg", "无香精": r"fragrance-free|unscented",
    "无香": r"fragrance-free|unscented",
    "香精": r"fragrance(?!-free)", "香料": r"fragrance(?!-free)", "无硫酸盐": r"sulfate-free|sulphate-free",
    "电磁炉": r"induction", "纯素": r"\bvegan", "无麸质": r"gluten-free", "可拆": r"removable|detachable",
    "拉链口袋": r"zip(?:ped)?(?: \w+)? pocket", "拉链袋": r"zip(?:ped)?(?: \w+)? pocket",
    "防水": r"waterproof",
    "洗碗机": r"dishwasher", "防晒": r"\bspf\b|sun protection", "自动断电": r"auto(?:matic)? shut|shuts? off",
    "自动关机": r"auto(?:matic)? shut|shuts? off", "自动关闭": r"auto(?:matic)? shut|shuts? off",
    "漂浮": r"float", "浮在水": r"float", "防蹲透": r"squat-proof", "降噪": r"noise[- ]cancel|\banc\b",
    "蓝牙": r"bluetooth", "解锁": r"unlocked", "无锁": r"unlocked", "透气": r"breathable",
    "速干": r"quick[- ]dry", "可调节": r"adjustable", "可折叠": r"fold", "有机": r"organic",
    "无糖": r"sugar-free", "微波炉": r"microwave", "烤箱": r"\boven", "岩板": r"rock plate",
    "防石板": r"rock plate", "反光": r"reflective", "兜帽": r"\bhood", "帽子": r"\bhood",
}
_ZH_TERM = re.compile("|".join(sorted(map(re.escape, _ZH_FEATURES), key=len, reverse=True))
                      + r"|[A-Za-z][A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
_ZH_DENY = re.compile(r"(?:不|没|沒|无|非)[有是能会可以支持带含放进用内置自配具备适合了]{0,4}$")
"""A negation that governs the word after it: only auxiliaries and verbs between ("没有内置", "不能放")."""
_ZH_HAS = re.compile(r"(?:含有?|带有?|自带|有|支持)[^，。！？；,.!?;不没无]{0,3}$")
_ZH_DEGREE = re.compile(r"完全|太|很|特别|那么|一定|百分百|绝对")


def _stem(w: str) -> str:
    return w if "-" in w or len(w) <= 4 else _SUFFIX.sub("", w) or w


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    if "-" in a or "-" in b or len(a) < 4 or len(b) < 4:
        return False
    sa, sb = _stem(a), _stem(b)
    return sa == sb or (min(len(sa), len(sb)) >= 4 and abs(len(sa) - len(sb)) <= 2
                        and (sa.startswith(sb) or sb.startswith(sa)))


def _tokens(text: str) -> list[str]:
    """Words of a clause; a compound splits into its parts too, unless it is an "X-free" word
    (which says the opposite of X)."""
    out: list[str] = []
    for t in _TOKEN.findall(text):
        out.append(t)
        if "-" in t and not t.endswith("-free"):
            out += t.split("-")
    return out


def _features(d: ProductData) -> tuple[list[list[str]], set[str], str]:
    """(token lists of its positive clauses, words its data states the absence of, positive text)."""
    hit = d.memo.get("polarity")
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    pos: list[str] = []
    absent: set[str] = set()
    for out in d.outputs:
        for key in _KEYS:
            for text in _texts(out.get(key), key == "specs"):
                for part in _CONTRAST.split(text.lower()):
                    for c in _CLAUSE.findall(part):
                        c = c.strip()
                        if not c:
                            continue
                        if _DATA_NEG.search(c):
                            absent.update(w for m in _ABSENT.finditer(c) for w in m.group(1).split()
                                          if w not in _GENERIC)
                        else:
                            pos.append(c)
                        absent.update(t[:-5] for t in _TOKEN.findall(c) if t.endswith("-free"))
    d.memo["polarity"] = hit = ([_tokens(c) for c in pos], absent, " | ".join(pos))
    return hit


def _texts(v: Any, specs: bool) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, list | tuple):
        return [str(x) for x in v]
    if isinstance(v, Mapping) and specs:
        out = []
        for k, x in v.items():
            val, key = str(x).strip().lower(), str(k).lower()
            if val in _YES:
                out.append(key)
            elif val in _NONE:
                out.append(f"no {key}")
            else:  # "auto shut-off when water runs out"; "fragrance: fragrance-free" says it itself
                out += [p if key.split()[0][:5] in p else f"{key} {p}" for p in val.split(",")]
        return out
    return []


def _in_order(words: list[str], clause: list[str]) -> bool:
    """All of `words` in `clause`, in order, at most two words apart."""
    at = -1
    for w in words:
        nxt = next((i for i in range(at + 1, len(clause)) if _same(w, clause[i])), None)
        if nxt is None or (at >= 0 and nxt - at > 3):
            return False
        at = nxt
    return True


def _head(text: str) -> list[str]:
    """The content words a negation or "has" governs: after leading function words, up to the
    first function word or punctuation, at most three; [] for degree and idiom phrases."""
    words: list[str] = []
    for m in re.finditer(r"[a-z0-9%]+(?:[-'][a-z0-9]+)*|[^\sa-z0-9]", text.lower()):
        w = m.group(0)
        if not words:
            if w in _DEGREE:
                return []
            if w in _LEAD:
                continue
        if not w[0].isalnum() or w in _LEAD or w in _STOP:
            break
        words.append(w)
        if len(words) == 3:
            break
    while words and words[-1] in _GENERIC:
        words.pop()
    return [t for w in words for t in ([w] if "-" not in w or w.endswith("-free") else w.split("-"))]


_STOP = frozenset({"so", "but", "and", "or", "though", "once", "when", "because", "since", "if", "on", "in",
                   "to", "at", "from", "than", "like", "while", "which", "that", "this", "these", "you",
                   "your", "yet", "there", "sorry", "either", "anymore", "here", "by", "of", "just",
                   "unfortunately", "i", "we"})


def _denied(words: list[str], d: ProductData) -> bool:
    pos, _, _ = _features(d)
    return bool(words) and any(_in_order(words, c) for c in pos)


def _affirmed_absent(words: list[str], d: ProductData) -> bool:
    pos, absent, _ = _features(d)
    if len(words) != 1 or words[0] not in absent:
        return False
    return not any(_same(words[0], t) for c in pos for t in c)


def _product_at(pos: int, reply: str, data: Mapping[str, ProductData],
                segs: list[tuple[int, int, str]]) -> ProductData | None:
    if len(data) == 1:
        return next(iter(data.values()))
    pid = next((p for s, e, p in segs if s <= pos < e), None)
    return data.get(pid) if pid else None


def flipped_attribute(reply: str, data: Mapping[str, ProductData]) -> tuple[str, str] | None:
    """(claim, expected) for the first feature the reply states with the polarity opposite to the
    data of the product it speaks of, or None."""
    if not data or not reply:
        return None
    segs = bound_segments(reply, data) if len(data) > 1 else []
    if reply.isascii():
        return _english(reply, data, segs)
    return _chinese(reply, data, segs)


def _english(reply: str, data: Mapping[str, ProductData], segs: list[tuple[int, int, str]]
             ) -> tuple[str, str] | None:
    low = reply.replace("’", "'")
    for m in _EN_DENY.finditer(low):
        words = _head(low[m.end():m.end() + 60])
        d = _product_at(m.start(), reply, data, segs) if words else None
        if d is not None and _denied(words, d):
            return (reply[m.start():m.end() + 40].split(".")[0],
                    f"{d.pid}: the data states {' '.join(words)} ({_where(words, d)})")
    for m in _EN_HAS.finditer(low):
        before = low[max(0, m.start() - 12):m.start()]
        if re.search(r"\b(?:no|not|n't|never)\b|n't\s*$", before):
            continue
        words = _head(low[m.end():m.end() + 40])[:1]
        d = _product_at(m.start(), reply, data, segs) if words else None
        if d is not None and _affirmed_absent(words, d):
            return reply[m.start():m.end() + 20].split(".")[0], f"{d.pid}: the data says no {words[0]}"
    return None


def _chinese(reply: str, data: Mapping[str, ProductData], segs: list[tuple[int, int, str]]
             ) -> tuple[str, str] | None:
    for m in _ZH_TERM.finditer(reply):
        term = m.group(0)
        start = max(reply.rfind(ch, 0, m.start()) for ch in "，。！？；,!?;、\n") + 1
        before = reply[start:m.start()]
        d = _product_at(m.start(), reply, data, segs)
        if d is None or _ZH_DEGREE.search(before[-6:]):
            continue
        rx = _ZH_FEATURES.get(term)
        _, absent, text = _features(d)
        if _ZH_DENY.search(before):
            hit = re.search(rx, text) is not None if rx else _denied(_tokens(term.lower()), d)
            if hit:
                return before[-4:] + term, f"{d.pid}: the data states {term} (positive clause)"
        elif _ZH_HAS.search(before):
            if rx and re.search(rx, text) is None and any(re.search(rx, a) for a in absent):
                return before[-2:] + term, f"{d.pid}: the data says no {term}"
            if not rx and _affirmed_absent([term.lower()], d):
                return before[-2:] + term, f"{d.pid}: the data says no {term}"
    return None


def _where(words: list[str], d: ProductData) -> str:
    pos, _, _ = _features(d)
    c = next((c for c in pos if _in_order(words, c)), [])
    return " ".join(c[:12])
