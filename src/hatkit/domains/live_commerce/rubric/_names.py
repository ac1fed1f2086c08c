"""Which catalog products and variants a text names, beyond full names and their word runs
(`claims.find_products`): a viewer writes "the TechLite hoodie", "Cloudrun跑鞋" or "维C精华".

Three readers, all built from the catalog, none from any conversation:
- distinctive name words: a word of exactly one product's name that the catalog uses nowhere
  else and that is the name's first word or a coined CamelCase word (a brand-like handle);
- Chinese product-type nouns, mapped to the English words of catalog names (a glossary of
  kinds of goods, not of items), plus numbers the name carries ("20000" for "20K");
- variant values (sizes, colours) of one product, with Chinese pack counts and basic colours.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ._memo import per_object
from .claims import Lexicon, find_products

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")
_NUM = re.compile(r"\d+(?:\.\d+)?[kK]?")

_ZH_KINDS: dict[str, tuple[str, ...]] = {
    "充电宝": ("power bank",), "移动电源": ("power bank",), "咖啡": ("coffee",), "深烘": ("dark roast",),
    "中烘": ("medium roast",), "空气炸锅": ("air fryer",), "双篮": ("dual basket",), "精华": ("serum",),
    "维C": ("vitamin c",), "维生素C": ("vitamin c",), "水杨酸": ("salicylic",), "智能手表": ("smartwatch",),
    "手表": ("smartwatch",), "手环": ("tracker",), "口红": ("lipstick",), "唇膏": ("lipstick",),
    "浴巾": ("towel",), "毛巾": ("towel",), "羽绒服": ("puffer",), "羽绒": ("down",), "派克": ("parka",),
    "雨衣": ("rain",), "跑鞋": ("running shoe",), "越野": ("trail",), "面膜": ("mask",), "枕": ("pillow",),
    "凉感": ("cooling",), "凝胶": ("gel",), "记忆棉": ("memory foam",), "毛衣": ("sweater",),
    "美利奴": ("merino",), "卫衣": ("hoodie",), "防晒": ("sunscreen",), "面霜": ("cream", "moisturizer"),
    "晚霜": ("night cream",), "耳机": ("earbuds", "headphones"), "头戴": ("over-ear",),
    "音箱": ("speaker",), "被套": ("duvet",), "蜡烛": ("candle",), "毛毯": ("blanket", "throw"),
    "盖毯": ("throw",), "重力毯": ("weighted blanket",), "铸铁锅": ("cast iron",), "投影": ("projector",),
    "手机": ("smartphone",), "平板": ("tablet",), "蜂蜜": ("honey",), "三文鱼": ("salmon",),
    "抹茶": ("matcha",), "燕麦": ("granola",), "格兰诺拉": ("granola",), "辣酱": ("hot sauce",),
    "蛋白棒": ("protein bar",), "植物蛋白": ("plant protein",), "乳清": ("whey",), "洗发水": ("shampoo",),
    "护发素": ("conditioner",), "香水": ("parfum",), "粉底": ("foundation",), "身体油": ("body oil",),
    "打底裤": ("leggings",), "瑜伽裤": ("leggings",), "工装裤": ("work pants",), "T恤": ("tee",),
    "衬衫": ("shirt",), "毛线帽": ("beanie",), "针织帽": ("beanie",), "家居服": ("lounge set",),
    "收纳": ("storage",), "按摩": ("massage",), "香薰": ("diffuser",), "补光灯": ("ring light",),
    "奶酪": ("cheese",), "芝士": ("cheese",), "免洗": ("leave-in",), "喷雾": ("spray",),
    "意面": ("pasta",), "杏仁": ("almonds",), "无线充": ("wireless charging",),
    "音响": ("speaker",), "亚麻": ("linen",), "土耳其": ("turkish",), "有机棉": ("organic cotton",),
}
_ZH_COLOURS = {"黑": "black", "白": "white", "红": "red", "砖红": "brick red", "玫瑰": "rose", "灰": "grey",
               "蓝": "blue", "绿": "green", "棕": "brown", "紫": "plum", "藏青": "navy", "森林": "forest",
               "鼠尾草": "sage", "花生酱": "peanut butter", "巧克力": "chocolate", "布朗尼": "brownie",
               "香草": "vanilla", "焦糖": "caramel", "海盐": "salted", "卡其": "khaki", "橄榄": "olive",
               "芥末": "mustard", "酒红": "burgundy", "樱桃红": "cherry red", "天蓝": "sky blue",
               "海蓝": "ocean blue", "石板": "slate", "炭": "charcoal", "米色": "beige", "奶油": "cream",
               "铁锈": "rust", "核桃": "walnut", "橡木": "oak", "午夜": "midnight", "枫糖": "maple",
               "山核桃": "pecan", "腰果": "cashew", "柠檬": "lemon", "浆果": "berry", "杏仁": "almond"}
"""Colour and flavour words of the catalog's variants, as Chinese viewers write them."""
_PART = re.compile(r"[a-z]+|\d+(?:\.\d+)?|[^\sa-z\d\-/&]+")
_ZH_PACK = re.compile(r"(\d+)\s*(?:片|支|件|个|袋|盒)装")


@per_object
def _distinctive(lex: Lexicon) -> dict[str, str]:
    """Word -> product id, for brand-like words of one product's name only (cached per lexicon)."""
    owners: dict[str, set[str]] = {}
    for p in lex.products.values():
        words = _WORD.findall(p.name)
        for i, w in enumerate(words):
            if i == 0 or (any(c.isupper() for c in w[1:]) and w[0].isupper()):
                owners.setdefault(w.lower(), set()).add(p.id)
    text = " ".join(" ".join([p.description, *p.specs.values(), *p.materials,
                              *(v.color or "" for v in p.variants)]) for p in lex.products.values())
    used = {w.lower() for w in _WORD.findall(text)}
    names = [w.lower() for p in lex.products.values() for w in _WORD.findall(p.name)]
    return {w: next(iter(ids)) for w, ids in owners.items()
            if len(ids) == 1 and len(w) >= 4 and w not in used and names.count(w) == 1}


def _numbers(text: str) -> set[float]:
    out = set()
    for m in _NUM.finditer(text):
        s = m.group(0)
        out.add(float(s[:-1]) * 1000 if s[-1] in "kK" else float(s))
    return out


def _zh_products(text: str, lex: Lexicon) -> set[str]:
    """Products whose names hold the most Chinese product-type words of `text` (ties: all)."""
    kinds = [en for zh, en in _ZH_KINDS.items() if zh in text] if not text.isascii() else []
    if not kinds:
        return set()
    nums = _numbers(text)
    score: dict[str, int] = {}
    for p in lex.products.values():
        name = p.name.lower()
        hits = sum(any(e in name for e in alts) for alts in kinds)
        if hits:
            score[p.id] = hits + len(nums & _numbers(p.name))
    top = max(score.values(), default=0)
    return {pid for pid, s in score.items() if s == top}


def named_products(text: str, lex: Lexicon) -> set[str]:
    """Products `text` names: full names and word runs, brand-like words, Chinese kinds."""
    found = {c.product_id for c in find_products(text, lex) if c.product_id}
    if found:
        return found
    words = _distinctive(lex)
    found = {words[w.lower()] for w in _WORD.findall(text) if w.lower() in words}
    return found or _zh_products(text, lex) or _by_name_words(text, lex) or _by_variant(text, lex)


def _by_name_words(text: str, lex: Lexicon) -> set[str]:
    """The one product whose name holds the most words of `text` ("the vitamin C serum"), two at
    least, one of them the name's last (the kind of goods); numbers count ("10K"), so a tie
    between two sizes of a kind names neither."""
    said = {w.lower() for w in re.findall(r"[A-Za-z0-9]+", text) if len(w) >= 3 or w.isupper()}
    if len(said) < 2:
        return set()
    score: dict[str, int] = {}
    for p in lex.products.values():
        name = [w.lower() for w in re.findall(r"[A-Za-z0-9]+", p.name)]
        if name and name[-1] in said | {w + "s" for w in said} | {w[:-1] for w in said}:
            score[p.id] = len(said & set(name))
    top = max(score.values(), default=0)
    best = [pid for pid, n in score.items() if n == top]
    return set(best) if top >= 2 and len(best) == 1 else set()


def _by_variant(text: str, lex: Lexicon) -> set[str]:
    """The one product that has a variant value `text` names ("fig leaf candle")."""
    low = _normal(text)
    hits = {pid for pat, pid in _colours(lex) if pat.search(low)}
    return hits if len(hits) == 1 else set()


@per_object
def _colours(lex: Lexicon) -> list[tuple[re.Pattern[str], str]]:
    """(pattern, product id) for every colour name longer than three letters (cached per lexicon)."""
    pairs = {(v.color, p.id) for p in lex.products.values() for v in p.variants
             if v.color and len(v.color) > 3}
    return [(_value_pattern(c), pid) for c, pid in sorted(pairs)]


@lru_cache(maxsize=4096)
def _value_pattern(value: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in _PART.findall(value.lower())]  # "45mm" is also "45 mm"
    return re.compile(r"(?<![a-z0-9])" + r"[\s\-/&]*".join(parts) + r"(?![a-z0-9])")


@lru_cache(maxsize=4096)
def _normal(text: str) -> str:
    """Lower case, with Chinese pack counts and basic colours written as the catalog does
    (cached: the target checks ask for the same viewer message and reply several times)."""
    low = _ZH_PACK.sub(lambda m: f" {m.group(1)}-pack ", text.lower()).replace("毫米", "mm")
    for zh in sorted(_ZH_COLOURS, key=len, reverse=True):
        low = low.replace(zh, f" {_ZH_COLOURS[zh]} ")
    return low


def variant_values(text: str, values: Iterable[str]) -> set[str]:
    """The variant values (of one attribute) that `text` names; one-letter sizes are skipped."""
    low = _normal(text)
    return {v for v in values if len(v) > 1 and _value_pattern(v).search(low)}
