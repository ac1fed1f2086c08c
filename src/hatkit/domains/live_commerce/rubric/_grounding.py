"""Grounding: every number a reply states and every product attribute it names must come from
somewhere in the episode (a tool result, the viewer's words, the harness rules, the product's
own data). Two checks that need no list of known inventions: numbers are compared as numbers,
and "attribute" words are the store's own vocabulary (words of the catalog's materials
and hyphenated spec words that only a few products have), so "waterproof" said of a product whose data never
says it is unfounded.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from hatkit.judge.numbers import digits_for_words

from ._details import _DetailChecks
from ._episode import _Turn
from ._memo import per_object
from .claims import Claim, Lexicon

_NUMBER = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*)(?![\d])")
_WORD = re.compile(r"[a-z][a-z-]{4,}")
_COMMON = frozenset({
    "about", "after", "before", "under", "with", "without", "from", "into", "their", "there", "these",
    "those", "which", "while", "where", "other", "every", "never", "always", "maybe", "really", "super",
    "great", "extra", "light", "plain", "basic", "simple", "small", "large", "little", "standard",
    "regular", "classic", "original", "natural", "gentle", "daily", "everyday", "first", "second",
    "third", "times", "weeks", "months", "years", "minutes", "hours", "contains", "contain", "includes",
    "included", "inside", "outside", "layer", "blend"
})


@lru_cache(maxsize=8192)
def _numbers_in(text: str) -> frozenset[float]:
    """The numbers in `text` (cached: tool outputs and catalog text repeat across traces)."""
    out = set()
    for m in _NUMBER.finditer(text):
        raw = m.group(1).replace(",", "")
        try:
            out.add(round(float(raw), 2))
        except ValueError:
            continue
    return frozenset(out)


def _walk_numbers(x: Any, out: set[float], counts: bool = False) -> None:
    if isinstance(x, str):  # leaves first: `Mapping` is a slower abstract-class check
        out |= _numbers_in(x)
    elif isinstance(x, bool):
        return
    elif isinstance(x, int | float):
        out.add(round(float(x), 2))
    elif isinstance(x, Mapping | list | tuple):
        if counts and len(x) >= 2:
            out.add(float(len(x)))  # "six sizes": the count of a size guide or variant list a tool returned
        for v in x.values() if isinstance(x, Mapping) else x:
            _walk_numbers(v, out, counts)


@per_object
def _rule_numbers(rules: Mapping[str, Any]) -> frozenset[float]:
    """The numbers of a harness's rules, once per rules object (every trace of a harness
    shares it)."""
    found: set[float] = set()
    _walk_numbers(dict(rules), found)
    return frozenset(found)


def _product_numbers(lex: Lexicon, pid: str) -> frozenset[float]:
    """The numbers in a catalog product's name, description, specs and materials."""
    hit = lex.numbers.get(pid)
    if hit is None:
        p = lex.products.get(pid)
        found: set[float] = set()
        if p is not None:
            _walk_numbers([p.name, p.description, p.specs, p.materials], found)
        hit = lex.numbers[pid] = frozenset(found)
    return hit


@per_object
def _attribute_words(lex: Lexicon) -> frozenset[str]:
    """Words of the catalog's materials, and its hyphenated spec words ("bpa-free", "dishwasher-safe"),
    that at most three products use (per lexicon)."""
    seen: Counter[str] = Counter()
    for p in lex.products.values():
        seen.update({w for v in p.materials for w in _WORD.findall(v.lower())}
                    | {w for v in p.specs.values() for w in _WORD.findall(v.lower()) if "-" in w})
    return frozenset(w for w, n in seen.items() if n <= 3 and w not in _COMMON)


def _product_words(lex: Lexicon, ids: Iterable[str]) -> set[str]:
    words: set[str] = set()
    for pid in ids:
        p = lex.products.get(pid)
        if p is not None:
            text = " ".join([p.name, p.brand, p.description, *p.specs, *p.specs.values(), *p.materials])
            words |= set(_WORD.findall(text.lower()))
    return words


class _GroundingChecks(_DetailChecks):
    def _grounding(self, turn: _Turn, claims: list[Claim], focus: set[str]) -> None:
        reply = turn.reply
        self.invented = False
        checked = [(c.start, c.end) for c in claims]  # claims the other checks verify (or names, codes)
        loose = [m for m in _NUMBER.finditer(reply) if not any(s <= m.start() < e for s, e in checked)]
        if loose:  # only then gather what the episode established (most replies have none)
            known = self._known_numbers(focus)
            for m in loose:
                value = _numbers_in(m.group(0))
                if value and not value & known and not self._converted(reply, m.start()):
                    self.acc(m.group(0), False, "a number no tool result, rule or viewer message states",
                             "trace:grounding")
                    self.invented = True
                    break
        attrs = _attribute_words(self.lex)
        said = set(_WORD.findall(reply.lower())) & attrs
        if not said:
            return
        have = _product_words(self.lex, focus | self.scope.products())
        have |= {w for t in self.scope.texts for w in _WORD.findall(t)}
        have |= {w for u in self._users for w in _WORD.findall(u.lower())}
        unfounded = sorted(said - have)
        if unfounded and focus:
            self.acc(unfounded[0], False, "an attribute the product's data does not state", "trace:grounding")
            self.invented = True

    def _known_numbers(self, focus: set[str]) -> set[float]:
        known: set[float] = set()
        for r in self.t.tool_calls:
            for v in r.output.values() if isinstance(r.output, Mapping) else [r.output]:
                _walk_numbers(v, known, counts=True)  # counts below the top: sizes, variants
            _walk_numbers(r.arguments, known)
        for u in self._users:
            known |= _numbers_in(digits_for_words(u))
        known |= _rule_numbers(self.a.rules)
        for pid in focus | self.scope.products():
            known |= _product_numbers(self.lex, pid)
        return known
