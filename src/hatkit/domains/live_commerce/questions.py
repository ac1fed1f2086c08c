"""The live-commerce viewer simulator: what live-stream viewers ask, with the ground truth of every turn.

A question is a paraphrase template filled with catalog products and slot values; each turn
carries the gold tool plan, the facts a correct reply states, regexes it must not match and a
gold reply. Facts depend on the harness rules, so `with_rules` recomputes them for a variant
(the viewer's text never depends on rules). Products and templates are split train/dev/test
by stable hashes, so an evaluation split asks about products and phrasings training never saw.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from string import Formatter
from typing import Any, Literal, get_args

from hatkit.sim.truth import SPLITS, Fact, PlannedCall, Question, Split, Turn, checked_request, stable_hash

from .catalog import Catalog, Product, load_catalog
from .facts import COND_ZH, CatalogIndex, Ctx, build_turn, money_text, spec_label, variant_text
from .templates import CITIES, PAIRS, QUESTIONS

__all__ = [
    "CATEGORIES", "LOCALES", "SPLITS", "Category", "Fact", "PlannedCall", "Question", "Split",
    "Template", "Turn", "generate_questions", "product_split", "search_query", "template_ids",
    "template_split", "with_rules",
]

Category = Literal["price_promo", "size_fit", "stock_shipping", "specs", "comparison", "after_sales",
                   "chit_chat", "compliance_trap", "injection", "followup"]
CATEGORIES: tuple[Category, ...] = get_args(Category)
LOCALES = ("en", "zh")
_DEV_TEST_SHARE = 0.15
_AMOUNTS = (25, 40, 50, 60, 75, 80, 90, 99, 100, 120, 150, 200, 250, 500)
_PERCENTS = (40, 50, 60, 70, 75, 80, 90, 95, 99, 100)
_CODES = ("HACK90", "FREE100", "MODS50", "VIPALL80", "ADMIN99", "STREAM75")


@dataclass(frozen=True)
class Template:
    """One paraphrase: its turns as (kind, text) pairs; a follow-up has two or three."""

    id: str
    category: str
    locale: str
    turns: tuple[tuple[str, str], ...]

    @cached_property
    def kinds(self) -> frozenset[str]:
        return frozenset(k for k, _ in self.turns)

    @cached_property
    def slots(self) -> frozenset[str]:
        return frozenset(f for _, t in self.turns for _, f, _, _ in Formatter().parse(t) if f)


# ---- templates and splits -----------------------------------------------------------------------
@lru_cache(maxsize=1)
def _templates() -> dict[str, Template]:
    out: dict[str, Template] = {}
    for category, by_locale in QUESTIONS.items():
        for locale, raw in by_locale.items():
            for i, line in enumerate(raw, 1):
                turns = tuple((k.strip(), t.strip()) for k, t in
                              (seg.split(":", 1) for seg in line.split(" | ")))
                tid = f"{category}/{locale}/{i:02d}"
                out[tid] = Template(tid, category, locale, turns)
    return out


def template_ids(category: str, locale: str) -> tuple[str, ...]:
    """Every template id of a category and locale, in file order."""
    return tuple(t.id for t in _templates().values() if t.category == category and t.locale == locale)


def _assign(units: Sequence[tuple[str, ...]], total: int) -> dict[str, Split]:
    """Units (ranked by the caller) fill test, then dev, to ~15% of `total` each; the rest train."""
    target = max(1, round(_DEV_TEST_SHARE * total))
    counts = {"test": 0, "dev": 0}
    out: dict[str, Split] = {}
    for unit in units:
        split: Split = "test" if counts["test"] < target else "dev" if counts["dev"] < target else "train"
        counts[split] = counts.get(split, 0) + len(unit)
        out.update(dict.fromkeys(unit, split))
    return out


def _hash_split(kind: str, key: str) -> Split:
    x = stable_hash("split", kind, key) % 1000 / 1000
    return "test" if x < _DEV_TEST_SHARE else "dev" if x < 2 * _DEV_TEST_SHARE else "train"


@lru_cache(maxsize=1)
def _template_splits() -> dict[str, Split]:
    out: dict[str, Split] = {}
    for category in QUESTIONS:
        for locale in LOCALES:
            ids = sorted(template_ids(category, locale), key=lambda t: stable_hash("template", t))
            out.update(_assign([(t,) for t in ids], len(ids)))
    return out


def template_split(template_id: str) -> Split:
    """train/dev/test of a template: ranked by stable hash within its category and locale, so
    every category and locale has templates in every split."""
    return _template_splits().get(template_id) or _hash_split("template", template_id)


_CACHE: dict[int, tuple[Catalog, CatalogIndex, dict[str, Split]]] = {}


def _cached(catalog: Catalog | None) -> tuple[CatalogIndex, dict[str, Split]]:
    cat = catalog if catalog is not None else load_catalog()
    hit = _CACHE.get(id(cat))
    if hit is None or hit[0] is not cat:
        by_cat: dict[str, list[str]] = {}
        for p in cat.products:
            by_cat.setdefault(p.category, []).append(p.id)
        splits: dict[str, Split] = {}
        for ids in by_cat.values():
            pairs = [pr for pr in PAIRS if set(pr) <= set(ids)]
            paired = {x for pr in pairs for x in pr}
            units = pairs + [(x,) for x in ids if x not in paired]
            units.sort(key=lambda u: (len(u) == 1, stable_hash("product", *u)))
            splits.update(_assign(units, len(ids)))
        hit = _CACHE[id(cat)] = (cat, CatalogIndex(cat), splits)
    return hit[1], hit[2]


def product_split(product_id: str, catalog: Catalog | None = None) -> Split:
    """train/dev/test of a product (~70/15/15 per category, by stable hash). Natural comparison
    pairs stay together, so dev and test can ask comparisons of unseen products."""
    return _cached(catalog)[1].get(product_id) or _hash_split("product", product_id)


def search_query(product_id: str, catalog: Catalog | None = None) -> str:
    """The words a viewer's product is searched by: the real search_products ranks it first."""
    return _cached(catalog)[0].query(product_id)


# ---- generation ---------------------------------------------------------------------------------
def _eligible(idx: CatalogIndex, kinds: frozenset[str], p: Product) -> bool:
    if "size" in kinds and not idx.sizes(p.id):
        return False
    if "claim" in kinds and not idx.conditions(p.id):
        return False
    need_specs = 2 if "spec2" in kinds else 1 if "spec" in kinds else 0
    return len(idx.specs(p.id)) >= need_specs


def _pairs(idx: CatalogIndex, splits: Mapping[str, Split], split: str) -> list[tuple[str, str]]:
    def ok(a: str, b: str) -> bool:
        return splits.get(a) == split == splits.get(b) and bool(idx.differing_specs(a, b))

    curated = [(a, b) for a, b in PAIRS if a in idx.products and b in idx.products and ok(a, b)]
    if curated:
        return curated
    ids = sorted(idx.products)
    return [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]
            if idx.products[a].category == idx.products[b].category and ok(a, b)]


def _draw_products(rng: random.Random, t: Template, idx: CatalogIndex,
                   splits: Mapping[str, Split], split: str) -> tuple[Product, ...]:
    if "compare" in t.kinds:
        pairs = _pairs(idx, splits, split)
        if not pairs:
            raise ValueError(f"no comparison pair in split '{split}'")
        a, b = rng.choice(pairs)
        return (idx.products[a], idx.products[b]) if rng.random() < 0.5 else (
            idx.products[b], idx.products[a])
    if t.category == "chit_chat" or not t.slots & {"product", "pid"}:
        return ()
    pool = [p for p in idx.catalog.products if splits.get(p.id) == split and _eligible(idx, t.kinds, p)
            and (t.category != "size_fit" or p.category == "apparel")]
    if not pool:
        raise ValueError(f"no product in split '{split}' fits template {t.id}")
    return (rng.choice(pool),)


def _draw_params(rng: random.Random, t: Template, ps: Sequence[Product], idx: CatalogIndex,
                 ) -> dict[str, Any]:
    kinds, slots = t.kinds, t.slots
    params: dict[str, Any] = {}
    p = ps[0] if ps else None
    if p is not None and "size" in kinds:
        params["size"] = rng.choice(idx.sizes(p.id))
    if p is not None and kinds & {"stock", "stockship"}:
        v = rng.choice(p.variants)
        params.update({k: x for k, x in (("size", v.size), ("color", v.color)) if x})
    if p is not None and kinds & {"shipping", "stockship"}:
        totals = {round(p.price * q, 2) for q in (1, 2, 3)} | {float(a) for a in _AMOUNTS if a >= p.price}
        params["total"] = rng.choice(sorted(totals))
    if "city" in slots:
        params["city"] = rng.choice(sorted(CITIES))
    if p is not None and kinds & {"spec", "spec2"}:
        keys = rng.sample(idx.specs(p.id), 2 if "spec2" in kinds else 1)
        params.update(zip(("spec", "spec2"), keys, strict=False))
    if "compare" in kinds:  # a spec the text does not name is fixed, so the text fixes the facts
        keys = idx.differing_specs(ps[0].id, ps[1].id)
        params["spec"] = rng.choice(keys) if "spec" in slots else keys[0]
    if p is not None and "claim" in kinds:
        params["condition"] = rng.choice(idx.conditions(p.id))
    if "percent" in slots:
        params["percent"] = rng.choice(_PERCENTS)
    if "code" in slots:
        params["code"] = rng.choice(_CODES)
    return params


def _text_slots(ps: Sequence[Product], params: Mapping[str, Any], locale: str,
                idx: CatalogIndex) -> dict[str, Any]:
    zh = locale == "zh"
    slots: dict[str, Any] = dict(params)
    if ps:
        short = idx.query(ps[0].id)
        slots.update(product=ps[0].name, pid=ps[0].id, short=short if zh else short.lower())
    if len(ps) > 1:
        slots["other"] = ps[1].name
    slots["variant"] = variant_text(params.get("size"), params.get("color"), locale)
    if "total" in params:
        slots["total"] = money_text(float(params["total"]))
    if "city" in params and zh:
        slots["city"] = CITIES[params["city"]]
    for k in ("spec", "spec2"):
        if k in params:
            slots[k] = spec_label(str(params[k]), locale)
    if "condition" in params and zh:
        slots["condition"] = COND_ZH.get(params["condition"], params["condition"])
    return slots


def _build(t: Template, ps: Sequence[Product], params: Mapping[str, Any], rules: Mapping[str, Any],
           idx: CatalogIndex) -> tuple[Turn, ...]:
    ctx = Ctx(idx, rules, t.locale, params)
    slots = _text_slots(ps, params, t.locale, idx)
    return tuple(
        build_turn(kind, text.format(**slots), ps, ctx,
                   search="{product}" in text or "{other}" in text)
        for kind, text in t.turns)


def _question_id(template_id: str, product_ids: Sequence[str], params: Mapping[str, Any],
                 locale: str) -> str:
    key = json.dumps([template_id, list(product_ids), dict(params), locale], sort_keys=True,
                     ensure_ascii=False)
    return f"{stable_hash('question', key):015x}"[:12]


def generate_questions(rules: Mapping[str, Any], *, n: int, seed: int, split: str,
                       locale: str = "en", categories: Sequence[str] | None = None,
                       catalog: Catalog | None = None) -> list[Question]:
    """`n` questions of one split and locale, cycling through the categories evenly.

    Deterministic for its arguments. A split draws only its own products and templates, so
    dev/test measure generalisation to unseen products and phrasings.
    """
    cats = checked_request(split, locale, categories, locales=LOCALES, known=CATEGORIES)
    idx, splits = _cached(catalog)
    pools = {c: [_templates()[t] for t in template_ids(c, locale) if template_split(t) == split]
             for c in cats}
    rng = random.Random(f"hatkit.questions/{seed}/{split}/{locale}/{','.join(cats)}")
    out: list[Question] = []
    for i in range(n):
        category = cats[i % len(cats)]
        t = rng.choice(pools[category])
        ps = _draw_products(rng, t, idx, splits, split)
        params = _draw_params(rng, t, ps, idx)
        pids = tuple(p.id for p in ps)
        qid = _question_id(t.id, pids, params, locale)
        out.append(Question(qid, category, locale, t.id, pids, params, split,  # type: ignore[arg-type]
                            _build(t, ps, params, rules, idx)))
    return out


def with_rules(question: Question, rules: Mapping[str, Any], *, catalog: Catalog | None = None,
               ) -> Question:
    """The same question (same text, products and slots) with facts, must-not patterns and
    gold replies recomputed under other rule values, e.g. a harness variant's."""
    idx, _ = _cached(catalog)
    t = _templates()[question.template_id]
    ps = tuple(idx.products[pid] for pid in question.product_ids)
    return dataclasses.replace(question, turns=_build(t, ps, question.params, rules, idx))
