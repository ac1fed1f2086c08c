"""The reply's language against the viewer's: a reply the viewer cannot be expected to read does
not answer them, however right its facts (effectiveness).

A small language identifier, no model and no item wording:

- script first: Han ideographs (zh), kana (ja), hangul (ko) against Latin words;
- Latin text by a profile of each language's commonest function words (en, es, fr, de, pt,
  it), with the letters only one of them uses (ñ ¿ ¡, ç œ, ß, ã õ) as extra votes.

What is no language evidence is removed first: the store's own words (product names, brands,
colours, sizes and spec words, so "Tan 40 有货" stays Chinese), ids, codes, acronyms,
numbers with their units, and emoji. Chinese viewers often get an English name or a short mixed
term inside a Chinese reply; only a reply *mainly* in another language counts. The viewer's
language is that of their latest turn that shows one, else an earlier turn, else the trace's
locale; a turn too short to tell ("Tan 40?") tells nothing.
"""

from __future__ import annotations

import re

from hatkit.judge.verdict import Evidence

from ._episode import _Turn
from ._memo import per_object
from ._run import _RunBase
from .claims import Lexicon

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
_TOKEN = re.compile(r"[A-Za-z\u00c0-\u024f\d]+(?:[-'’.:/][A-Za-z\u00c0-\u024f\d]+)*")
"""A run of Latin letters and digits; one holding a digit, or in capitals, is no word: an id, a
code, an acronym or a number with its unit ("HM-009", "LIVE15", "SPF", "41mm")."""
_PART = re.compile(r"[-.:/]")
_DIGIT = re.compile(r"\d")
_SHOP_WORD = re.compile(r"[a-z]{2,}")

def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_PROFILES: dict[str, frozenset[str]] = {
    "en": _words("the and is are it it's you you're your to of in for with on that this can has have "
                    "be but not yes what how do does will so just at or my i i'm i'll we we're our they "
                    "there here if from about any only one which its an was were been would could should "
                    "up out get got all also too very don't doesn't can't isn't won't"),
    "es": _words("el la los las del en y es que un una por para con sí se su sus muy más está están son "
                    "lo al así pero ahora antes también tiene tienen hay puedes usted tu desde cuando "
                    "como"),
    "fr": _words("le la les des du en et est une pour avec pas oui il elle vous ce cette qui sur au aux à "
                    "ne sont c'est mais très aussi votre vos nous peut puis être avez"),
    "de": _words("der die das und ist ein eine nicht mit für auf den dem zu ja nein sie ich du sind "
                    "auch noch sehr kann wird bei nach oder aber"),
    "pt": _words("os as do da dos das um uma em não sim você está são mais também muito tem pode "
                    "para com isso essa esse"),
    "it": _words("il lo gli di della delle è una per con non sì che sono anche molto questo questa "
                    "può hai ha"),
}
_WORD_LANGS: dict[str, tuple[str, ...]] = {
    w: tuple(lang for lang, prof in _PROFILES.items() if w in prof) for p in _PROFILES.values() for w in p}
_MARKS = {"es": re.compile(r"[ñ¿¡]"), "fr": re.compile(r"[çœ]|[a-z][êëîôû]"),
          "de": re.compile(r"ß|[äöü][a-z]"), "pt": re.compile(r"[ãõ]")}
MIN_WORDS = 3
"""Latin words a text needs (after the noise is removed) to show its language."""
MIN_HAN = 2


@per_object
def _shop_words(lex: Lexicon) -> frozenset[str]:
    """The store's own words (names, brands, spec words and values, options): no language evidence."""
    words: set[str] = set()
    for p in lex.products.values():
        text = " ".join([p.name, p.brand, *p.specs.values(), *p.materials,
                         *(f"{v.size or ''} {v.color or ''}" for v in p.variants)])
        words.update(_SHOP_WORD.findall(text.lower()))
    return frozenset(w for w in words if not any(w in prof for prof in _PROFILES.values()))


def identify(text: str, lex: Lexicon | None = None) -> str | None:
    """The language `text` is mainly written in ("en", "es", "zh", "ja", "latin" for Latin text
    no profile claims), or None when it shows too little to tell."""
    han = kana = hangul = 0
    if not text.isascii():
        han, kana, hangul = len(_HAN.findall(text)), len(_KANA.findall(text)), len(_HANGUL.findall(text))
    shop = _shop_words(lex) if lex is not None else frozenset()
    words: list[str] = []  # product names need no removal: their words are the store's (`shop`)
    for tok in _TOKEN.findall(text):
        if len(tok) > 1 and tok.isupper():
            continue
        if tok.isalpha():
            if (w := tok.lower()) not in shop:
                words.append(w)
        elif not _DIGIT.search(tok):
            words += [w for w in _PART.split(tok.lower().replace("’", "'")) if w and w not in shop]
    cjk = han + kana + hangul
    if cjk >= MIN_HAN and cjk >= 1.5 * len(words):  # an ideograph carries about a word's weight
        if kana >= 2 and kana * 5 >= cjk:
            return "ja"
        return "ko" if hangul * 2 >= cjk else "zh"
    if len(words) < MIN_WORDS or cjk > len(words):
        return None
    votes = dict.fromkeys(_PROFILES, 0)
    for w in words:
        for lang in _WORD_LANGS.get(w, ()):
            votes[lang] += 1
    if not text.isascii():
        low = text.lower()
        for lang, mark in _MARKS.items():
            votes[lang] += 2 * len(mark.findall(low))
    ranked = sorted(votes.items(), key=lambda kv: -kv[1])
    (best, n), second = ranked[0], ranked[1][1]
    return best if n >= 2 and n >= 2 * second else "latin"


def compatible(viewer: str, reply: str) -> bool:
    """Whether a viewer writing `viewer` can be expected to read a reply in `reply`: the same
    language, or Latin text the profiles cannot place on either side."""
    if viewer == reply:
        return True
    latin = ("latin", *_PROFILES)
    if viewer in latin and reply in latin:
        return "latin" in (viewer, reply)
    return False


_LANG_CODE = {"english": "en", "chinese": "zh", "mandarin": "zh", "spanish": "es", "español": "es",
              "french": "fr", "français": "fr", "japanese": "ja", "英文": "en", "英语": "en", "中文": "zh",
              "汉语": "zh", "普通话": "zh", "日语": "ja", "日文": "ja", "西班牙语": "es", "法语": "fr"}
_LANG_HINTS = ("english", "chinese", "mandarin", "spanish", "espa", "french", "fran", "japanese",
               "英", "中文", "汉语", "普通话", "日", "西班牙", "法语")
"""Substrings a language's name holds: a turn with none names no language (no scan)."""
_EN_NAME = r"(?P<lang>english|chinese|mandarin|spanish|español|french|français|japanese)"
_ASKED_IN = re.compile(
    r"\b(?:speak|write|answer|reply|respond|talk|say (?:it|that)|tell me|explain)(?:\s+\w+){0,2}?\s+in\s+"
    + _EN_NAME + r"\b|\bin\s+" + _EN_NAME.replace("lang", "lang2") + r",?\s+(?:please|pls|plz)\b|"
    r"(?:用|说|讲|写|改成|换成)(?P<lang3>英文|英语|中文|汉语|普通话|日语|日文|西班牙语|法语)", re.I)
"""A viewer naming the language they want ("answer in English", "用英文") sets it."""


_SEEN: dict[tuple[int, str], tuple[Lexicon | None, str | None]] = {}
"""identify() per viewer turn: RL samples many replies to one viewer message (bounded)."""


def _viewer_turn(text: str, lex: Lexicon | None) -> str | None:
    hit = _SEEN.get((id(lex), text))
    if hit is None or hit[0] is not lex:
        if len(_SEEN) >= 4096:
            _SEEN.clear()
        hit = _SEEN[(id(lex), text)] = (lex, identify(text, lex))
    return hit[1]


def viewer_language(users: list[str], locale: str, lex: Lexicon | None) -> str:
    """The language the viewer asked for by name, else that of their latest turn that shows
    one, else the trace's locale."""
    for u in reversed(users):
        low = u.lower()
        if any(n in low for n in _LANG_HINTS) and (m := _ASKED_IN.search(u)) is not None:
            return _LANG_CODE[next(g for g in m.groups() if g).lower()]
    for u in reversed(users):
        lang = _viewer_turn(u, lex)
        if lang is not None:
            return lang
    return locale.split("-")[0].lower() if locale else "latin"


class _LanguageChecks(_RunBase):
    """A turn's reply mainly in a language other than the viewer's does not answer them."""

    def _wrong_language(self, turn: _Turn, tag: str) -> bool:
        said = identify(turn.raw, self.lex)
        if said is None:
            return False
        want = viewer_language(self._users, self.t.locale, self.lex)
        if compatible(want, said):
            return False
        self.ev.append(Evidence("effectiveness", f"{tag}reply in {said}", False,
                                f"a reply in the viewer's language ({want})", "rubric:viewer_language"))
        return True
