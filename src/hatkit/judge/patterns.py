"""Case-insensitive patterns that match ASCII text in ASCII mode, behind a literal prefilter.

Python's `re` folds case per character by Unicode tables under `re.I`; in ASCII mode it folds
ASCII only, and on ASCII text the two find the same matches (`\\w`, `\\b`, `\\d`, `\\s` and case
agree there). The judge runs dozens of case-insensitive patterns over every reply, most of
them English and pure ASCII, where the ASCII-mode pattern costs about 40% less. Other text
(Chinese, accents, emoji) goes to the Unicode pattern, so no verdict changes.

Most searches find nothing, and `re` finds nothing slowly: it tries every alternative at every
position. So each pattern also carries the literal text any match must contain, read off the
parsed pattern ("cur(?:e|ed)\\b.{0,40}\\b(?:acne|flu)" needs "cure" and one of "acne", "flu"),
per top-level alternative. A text (lowercased once, `folded`) that holds none of it is not
searched; a pattern of many alternatives runs only those the text does not rule out, in their
order, so the first match is the same. The test is a necessary condition only: no result
changes. On ASCII text a Chinese alternative drops out, and an all-Chinese pattern never runs
on an English reply. Few strings are tested with `in` in one generated function; many are looked
up by the text's 3-grams (built once per text, shared by every pattern).
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

_parser: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")

_SPECIAL_FOLDS = frozenset("\u0130\u0131\u017f")
"""The characters `re.I` matches with an ASCII letter that `str.lower` does not fold to it
(İ and ı with i, ſ with s; the Kelvin sign lowercases to k). A text holding one skips the
prefilter (see tests/judge/test_patterns.py, which checks this list against every code point)."""

_MAX_SET = 64
"""Exact sets of more strings than this stop extending (the run so far becomes a requirement)."""


class _Op(NamedTuple):
    """Every part holds (`every`) or one of them does."""

    every: bool
    parts: tuple[_Filter, ...]


_Filter = tuple[str, ...] | _Op | None
"""A requirement on folded text: None (none), a tuple of strings (one of them occurs; empty: no
text can match) or an _Op over requirements."""

_FOLDED: dict[str, str | None] = {}
_GRAMS: dict[str, set[str]] = {}


def folded(text: str) -> str | None:
    """`text` lowercased as `re.I` folds it; None where `str.lower` would not agree. Memoised:
    every pattern of a check reads the same reply."""
    low = _FOLDED.get(text, _FOLDED)
    if low is not _FOLDED:
        return low  # type: ignore[return-value]
    low = text.lower() if text.isascii() or not any(c in text for c in _SPECIAL_FOLDS) else None
    if len(_FOLDED) >= 256:
        _FOLDED.clear()
    _FOLDED[text] = low
    return low


def _grams(low: str) -> set[str]:
    """The characters and 3-character runs of folded text, memoised."""
    grams = _GRAMS.get(low)
    if grams is None:
        grams = {low[i:i + 3] for i in range(len(low) - 2)}
        grams.update(low)
        if len(_GRAMS) >= 256:
            _GRAMS.clear()
        _GRAMS[low] = grams
    return grams


def _char(code: int) -> str | None:
    """A literal as folded text holds it, or None where case could fold it to other characters."""
    ch = chr(code)
    if ch.isascii() or ch.lower() == ch == ch.upper() == ch.casefold():
        return ch.lower()
    return None


def _minimal(strings: set[str]) -> tuple[str, ...]:
    """The strings none of which contains another (one that does is implied by it)."""
    out: list[str] = []
    for s in sorted(strings, key=lambda s: (len(s), s)):
        if not any(o in s for o in out):
            out.append(s)
    return tuple(out)


def _all(parts: list[_Filter]) -> _Filter:
    kept = [p for p in parts if p is not None]
    if any(p == () for p in kept):
        return ()
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else _Op(True, tuple(kept))


def _any(parts: list[_Filter]) -> _Filter:
    strings: set[str] = set()
    rest: list[_Filter] = []
    for p in parts:
        if p is None:
            return None
        if isinstance(p, _Op):
            rest.append(p)
        else:
            strings.update(p)
    if strings:
        rest.insert(0, _minimal(strings))
    if not rest:
        return ()
    return rest[0] if len(rest) == 1 else _Op(False, tuple(rest))


def _node(op: Any, av: Any) -> tuple[set[str] | None, _Filter]:
    """(every string the node matches, when few and literal; the requirement it puts on text)."""
    if op is _c.LITERAL:
        ch = _char(av)
        return ({ch}, (ch,)) if ch is not None else (None, None)
    if op is _c.IN:
        chars = [_char(a) if o is _c.LITERAL else None for o, a in av]
        if len(chars) <= 16 and all(ch is not None for ch in chars):
            exact = {ch for ch in chars if ch is not None}
            return exact, _minimal(exact)
        return None, None
    if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
        return {""}, None  # consumes nothing
    if op is _c.SUBPATTERN:
        return _sequence(av[-1])
    if op is _c.ATOMIC_GROUP:
        return _sequence(av)
    if op is _c.BRANCH:
        inner = [_sequence(b) for b in av[1]]
        union: set[str] | None = set()
        for e, _ in inner:
            if e is None or union is None or len(union) + len(e) > _MAX_SET:
                union = None
            else:
                union |= e
        return union, _any([f for _, f in inner])
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
        lo, hi, sub = av
        e, f = _sequence(sub)
        if lo == 0:
            return (e | {""} if e is not None and hi == 1 else None), None
        if e is not None and lo == hi and len(e) ** lo <= _MAX_SET:
            out = {""}
            for _ in range(lo):
                out = {a + b for a in out for b in e}
            return out, f
        return None, f
    return None, None  # any character, a class, a back reference: no literal


def _sequence(items: Any) -> tuple[set[str] | None, _Filter]:
    """A concatenation: runs of exact parts join into longer strings."""
    run: set[str] = {""}
    parts: list[_Filter] = []
    whole = True
    for op, av in items:
        e, f = _node(op, av)
        if e is not None and len(run) * len(e) <= _MAX_SET:
            run = {a + b for a in run for b in e}
            continue
        whole = False
        parts.append(None if "" in run else _minimal(run))
        if e is None:
            parts.append(f)
            run = {""}
        else:
            run = e
    parts.append(None if "" in run else _minimal(run))
    return (run if whole else None), _all(parts)


def _ascii_only(f: _Filter) -> _Filter:
    """The requirement on ASCII text: a string with other characters cannot occur there."""
    if f is None:
        return None
    if isinstance(f, _Op):
        parts = [_ascii_only(p) for p in f.parts]
        return _all(parts) if f.every else _any(parts)
    return tuple(s for s in f if s.isascii())


def _code(f: _Filter) -> str:
    """`f` as a Python expression over the folded text `t` (a chain of `in` tests)."""
    if f is None:
        return "True"
    if isinstance(f, _Op):
        parts = sorted(f.parts, key=_cost) if f.every else list(f.parts)
        return "(" + (" and " if f.every else " or ").join(_code(p) for p in parts) + ")"
    return "(" + " or ".join(f"{s!r} in t" for s in f) + ")" if f else "False"


def _cost(f: _Filter) -> int:
    """The number of `in` tests a requirement makes (the fewest go first in a conjunction)."""
    if f is None:
        return 0
    if isinstance(f, _Op):
        return sum(_cost(p) for p in f.parts)
    return len(f)


def _predicate(f: _Filter) -> Callable[[str], bool] | None:
    if f is None:
        return None
    test: Callable[[str], bool] = eval("lambda t: " + _code(f))  # only literals, quoted by repr
    return test


def _branches(source: str, flags: int) -> list[str]:
    """`source` cut at its top-level `|` (one piece where it cannot be cut safely)."""
    if flags & re.X or "(?#" in source or re.search(r"\(\?[aiLmsu-]*x", source):
        return [source]  # comments could hold an unbalanced "(" or a "|"
    pieces, depth, start, i, klass = [], 0, 0, 0, -1
    while i < len(source):
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if klass >= 0:
            if c == "]" and i > klass:
                klass = -1
        elif c == "[":
            klass = i + 1 + (source[i + 1:i + 2] == "^")  # a "]" first in a class is a literal
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            pieces.append(source[start:i])
            start = i + 1
        i += 1
    pieces.append(source[start:])
    whole = re.compile(source, flags)
    try:
        if re.compile("", flags).flags != whole.flags or any(
                re.compile(p, flags).flags != whole.flags for p in pieces):
            return [source]  # a global inline flag ("(?i)" in one piece) reaches every piece
    except re.error:
        return [source]
    return pieces


def _anchor(f: _Filter) -> tuple[str, ...] | None:
    """One set of strings a text must hold one of (weaker than `f`, cheap to look up), or None."""
    if f is None or not isinstance(f, _Op):
        return f
    subs = [_anchor(p) for p in f.parts]
    if not f.every:
        if any(a is None for a in subs):
            return None
        return _minimal({x for a in subs if a is not None for x in a})
    known = [a for a in subs if a is not None]
    if not known:
        return None
    # the most telling part: its shortest string longest, then the fewest strings
    return max(known, key=lambda a: (min((len(x) for x in a), default=99), -len(a)))


_COMMON = frozenset({
    "the", "and", "ing", "ion", "tio", "ent", "ati", "for", "her", "ter", "hat", "tha", "ere", "ate",
    "his", "con", "res", "ver", "all", "ons", "nce", "men", "ith", "ted", "ers", "pro", "thi", "wit",
    "are", "ess", "not", "ive", "was", "ect", "rea", "com", "eve", "per", "int", "est", "sta", "cti",
    "ica", "ist", "ear", "ain", "one", "our", "iti", "rat", "you"})


def _key(lit: str) -> str:
    """What a text must hold for `lit` to occur in it: a character, or a telling 3-gram."""
    if len(lit) < 3:
        return lit[0]
    grams = [lit[i:i + 3] for i in range(len(lit) - 2)]
    return next((g for g in grams if g.isalpha() and g not in _COMMON), grams[0])


_FEW = 12
"""A pattern with at most this many anchor strings tests them directly (no 3-gram index)."""


_Live = Callable[[str], tuple[int, ...]]
"""Folded text -> the alternatives of a pattern that may match it, in order."""


def _live(filters: list[_Filter]) -> _Live | None:
    """The alternatives' test (None where every alternative may match any text). Few anchor
    strings are tested directly, in one generated function; many are looked up by 3-gram."""
    if all(f is None for f in filters):
        return None
    anchors = [_anchor(f) for f in filters]
    strings = {s for a in anchors if a is not None for s in a}
    if len(strings) <= _FEW:
        lines = ["def live(t):", "    r = ()"]
        for i, (f, a) in enumerate(zip(filters, anchors, strict=True)):
            cond = _code(f) if a is None or a == f else f"{_code(a)} and {_code(f)}"
            lines.append(f"    if {cond}: r += ({i},)")
        namespace: dict[str, Any] = {}
        exec("\n".join([*lines, "    return r"]), namespace)  # only literals, quoted by repr
        few: _Live = namespace["live"]
        return few

    tests = [_predicate(f) for f in filters]
    always = tuple(i for i, a in enumerate(anchors) if a is None)
    by_key: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    for lit in strings:
        by_key.setdefault(_key(lit), []).append(
            (lit, tuple(i for i, a in enumerate(anchors) if a is not None and lit in a)))
    index = {k: tuple(v) for k, v in by_key.items()}
    keys = frozenset(index)

    def many(low: str) -> tuple[int, ...]:
        hits = keys.intersection(_GRAMS.get(low) or _grams(low))
        if not hits and not always:
            return ()
        found = set(always)
        for key in hits:
            for lit, branches in index[key]:
                if lit in low:
                    found.update(branches)
        return tuple(i for i in sorted(found) if (t := tests[i]) is None or t(low))

    return many


class FastPattern:
    """A pattern compiled twice, used like `re.Pattern` (search, match, finditer, findall, sub).

    Behind the literal prefilter (see the module): a text is searched by the top-level
    alternatives it does not rule out, in their order (a pattern compiled once per such subset);
    the others match nowhere in it, so every match is the same. Where the pattern has groups, an
    alternative ruled out stays as a failing stub, so group numbers and names stay."""

    __slots__ = ("_ascii", "_flags", "_live", "_n", "_pieces", "_subsets", "_unicode", "flags",
                 "pattern")

    def __init__(self, source: str, flags: int = re.I) -> None:
        self._unicode = re.compile(source, flags)
        self._ascii = re.compile(source, flags | re.A)
        self.pattern = source
        self.flags = self._unicode.flags
        self._flags = flags
        self._pieces = _branches(source, flags)
        self._n = len(self._pieces)
        filters = [_sequence(_parser.parse(p, flags & ~re.A))[1] for p in self._pieces]
        self._live = (_live(filters), _live([_ascii_only(f) for f in filters]))
        self._subsets: dict[tuple[bool, tuple[int, ...]], re.Pattern[str] | None] = {}

    def _for(self, text: str) -> re.Pattern[str] | None:
        """The pattern to run, or None where the prefilter rules any match out."""
        ascii_ = text.isascii()
        live = self._live[ascii_]
        if live is None or ((low := _FOLDED.get(text)) is None and (low := folded(text)) is None):
            return self._ascii if ascii_ else self._unicode
        found = live(low)
        if not found:
            return None
        if len(found) == self._n:
            return self._ascii if ascii_ else self._unicode
        key = (ascii_, found)
        hit = self._subsets.get(key, self)
        if hit is self:
            hit = self._subset(ascii_, found)
            if len(self._subsets) >= 64:
                self._subsets.clear()
            self._subsets[key] = hit
        return hit  # type: ignore[return-value]

    def _subset(self, ascii_: bool, live: tuple[int, ...]) -> re.Pattern[str] | None:
        if not live:
            return None
        if self._unicode.groups:
            parts = [p if i in live else f"(?!)(?:{p})" for i, p in enumerate(self._pieces)]
        else:
            parts = [self._pieces[i] for i in live]
        return re.compile("|".join(parts), self._flags | re.A if ascii_ else self._flags)

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        p = self._for(text)
        return p.search(text, pos, endpos) if p is not None else None

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        p = self._for(text)
        return p.match(text, pos, endpos) if p is not None else None

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        p = self._for(text)
        return p.finditer(text, pos, endpos) if p is not None else iter(())

    def findall(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> list[str]:
        p = self._for(text)
        return p.findall(text, pos, endpos) if p is not None else []

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str, count: int = 0) -> str:
        p = self._for(text)
        return p.sub(repl, text, count) if p is not None else text

    def __repr__(self) -> str:
        return f"FastPattern({self.pattern!r})"
