"""The gradable vocabulary of comparative and superlative claims (softer, -est, most, out-lasts),
shared by the absolute-claim check and the comparison check (`_absolute`, `_compare`)."""

from __future__ import annotations

import re

_GRADABLE = ["soft", "light", "fine", "clean", "cheap", "strong", "gentle", "smooth", "plush", "warm",
             "cool", "bright", "quiet", "loud", "fast", "quick", "long", "thin", "slim", "thick", "rich",
             "deep", "fresh", "crisp", "sharp", "clear", "tough", "hard", "sturdy", "heavy", "easy",
             "comfy", "cozy", "cosy", "silky", "sweet", "mild", "hot", "spicy", "big", "small", "tight",
             "wide", "dry", "safe", "pure", "healthy", "tasty", "crunchy", "creamy", "dense", "low", "high",
             "great", "nice", "sleek", "bold", "rare", "cute", "pretty", "lovely", "handy", "tidy",
             "durable"]


def _forms(stem: str) -> set[str]:
    """Comparative and superlative forms of a gradable adjective (soft -> softer, softest)."""
    if stem.endswith("e"):
        return {stem + "r", stem + "st"}
    if stem.endswith("y"):
        return {stem[:-1] + "ier", stem[:-1] + "iest"}
    out = {stem + "er", stem + "est"}
    if len(stem) <= 4 and stem[-1] not in "aeiouwy" and stem[-2] in "aeiou" and stem[-3:-2] not in "aeiou":
        out |= {stem + stem[-1] + "er", stem + stem[-1] + "est"}  # big -> bigger, slim -> slimmest
    return out


_NOT_SUPERLATIVE = frozenset(["honest", "interest", "request", "harvest", "forest", "suggest", "digest",
                              "invest", "modest", "contest", "protest", "manifest", "arrest", "latest",
                              "earnest"])
_DEGREE = frozenset({w for s in _GRADABLE for w in _forms(s)} | {
    "better", "best", "worse", "worst", "more", "most", "less", "least", "fewer"})
_AMOUNT = frozenset({"more", "less", "fewer"})
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_DEGREE_RE = re.compile(r"\b(?=[a-z]*(?:er|st|ss)\b)[a-z]+", re.I)
"""Candidate words (-er, -est, most, less): _degree keeps the gradable ones."""
_OUT_VERB = re.compile(r"\bout(?:last|live|perform|shine|sell|class|run|play|do)\w*\b|"
                       r"\b(?:beats?|tops|trumps|surpass\w*)\b", re.I)

def degree(clause: str) -> re.Match[str] | None:
    """A comparative or superlative in `clause`: a gradable form, an -est word, an out- verb."""
    for m in _DEGREE_RE.finditer(clause):
        w = m.group(0).lower()
        if w not in _DEGREE and (len(w) < 6 or not w.endswith("est") or w in _NOT_SUPERLATIVE):
            continue
        if w in _AMOUNT and _quantity(clause, m):
            continue
        return m
    return _OUT_VERB.search(clause)


def _quantity(clause: str, m: re.Match[str]) -> bool:
    """"more"/"less" of an amount ("$150 or more", "5 more hours", "less than 2 kg"), not of a
    quality ("more even", "for less on any other site")."""
    before = clause[max(0, m.start() - 6):m.start()].lower()
    after = clause[m.end():m.end() + 12].lower()
    nxt = _WORD.match(after.lstrip())
    return (bool(re.search(r"\b(?:or|and|no|any)\s$", before)) or any(c.isdigit() for c in before)
            or nxt is None or nxt.group(0) == "of"
            or (nxt.group(0) == "than" and any(c.isdigit() for c in after)))
