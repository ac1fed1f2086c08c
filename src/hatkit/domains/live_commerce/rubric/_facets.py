"""Facets: the separate facts a viewer's turn asks for ("price and shipping time?", "尺寸和颜色？")
and whether the reply states each one, so a reply that answers only some of them is seen.

A facet is asked by question vocabulary (en + zh) with product names blanked; it is answered by
a value of its kind (a number with the facet's unit, a catalog value of the product: colour,
size, material, spec), or by an honest negative ("sold out", "final sale", "不退不换"). Whether
the value is right is accuracy's question, not this one's. This cross-checks `_ask`, which
reads one aspect per turn and falls back on the tools called when the words say nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hatkit.judge.patterns import FastPattern

from ..catalog import Product
from ._names import variant_values
from ._run import _RunBase

_ASKED = {k: FastPattern(v) for k, v in {
    "price": r"how much|\bprices?\b|(?<!shipping )\bcost\b|多少钱|价格|什么价|几块|便宜|贵",
    "discount": r"discount|\bdeals?\b|coupon|promo|on sale|% off|打折|几折|折扣|优惠|券|满减",
    "stock": r"\bstock\b|any left|still (?:have|got)|availab|sold out|还有吗|还有货|有货|"
             r"有现货|库存|还剩|卖完",
    "delivery": r"how (?:long|fast|soon)\b.{0,30}(?:ship|deliver|arriv|get here)|shipping time|deliver|"
                r"when (?:would|will|can|does)\b.{0,30}(?:arriv|come|get)|多久能到|几天|到货|送达|多久到",
    "fee": r"shipping (?:cost|fee)|cost to ship|free shipping|\bfee\b|运费|包邮|免邮",
    "gift": r"\bfree gifts?\b|\bfreebies?\b|gift with|\bbonus (?:item|gift)|comes? with (?:a |any )?gifts?|"
            r"赠品|送什么|送不送|有送|有没有送|礼品",
    "express": r"\bexpress\b|expedit|overnight|加急|特快|加快",
    "colour": r"colou?rs?\b|shades?\b|颜色|色号|什么色|哪些色|几种色",
    "sizes": r"what sizes|which sizes|sizes (?:do|does|are|come)|size range|哪些尺码|什么尺码|"
             r"几个码|有哪些尺寸|尺寸有哪些|有哪几种(?:尺寸|规格)",
    "material": r"made (?:of|from)|material|fabric|\bfill\b|材质|面料|什么做的|成分|什么料",
    "care": r"\bwash|\bcare\b|clean it|dry ?clean|怎么洗|机洗|手洗|清洗|保养",
    "weight": r"how heavy|\bweigh|重量|多重|几斤|几克",
    "battery": r"battery|how long does (?:it|the \w+) last|charge last|续航|电池|充一次",
    "capacity": r"capacity|how much does it hold|容量|多少升|能装",
    "dimensions": r"dimensions|how (?:big|tall|wide|small) (?:is|are|does)|how long (?:is|are)\b|"
                  r"pack (?:down|small)|\bheight\b|多高|多大|多长|多宽|尺寸是",
    "returns": r"\breturn(?:able|s)?\b|refund|exchange|能退|退货|退换|可以退",
    "warranty": r"warranty|guarantee|保修|质保",
    "power": r"wattage|\bwatts?\b|\bpower (?:rating|draw|output)|功率|瓦数",
    "minimum": r"minimum|min(?:imum)? spend|threshold|最低消费|门槛|满多少|消费多少",
    "conditions": r"\bconditions?\b|requirements?|条件|要求",
    "origin": r"where (?:is|are|was|were|does|do)\b.{0,30}(?:from|made|grown|sourced)|\borigin|"
              r"产地|哪里产|哪产|产自",
}.items()}
_NUM = r"\d+(?:\.\d+)?(?:\s?[-–~到至]\s?\d+(?:\.\d+)?)?\s?"
_UNITS = {
    "weight": r"(?:(?:g|kg|oz|lbs?|grams?)\b|克|公斤|千克|斤)",
    "battery": r"(?:h|hrs?|hours?|days?|小时|天)",
    "capacity": r"(?:(?:l|ml|litres?|liters?|mah)\b|升|毫升|毫安)",
    "dimensions": r"(?:(?:cm|mm|inch(?:es)?|in(?![\s-]*(?:stock|size|the|a)\b)|m)\b|厘米|毫米|米|寸)",
    "delivery": r"(?:(?:business |working )?days?|个?工作日|天)",
    "power": r"(?:(?:w|kw|watts?)\b|瓦|千瓦)",
}
_FIRST_NUM = re.compile(r"\d+(?:\.\d+)?")
_VALUE = {k: FastPattern(v) for k, v in {
    "price": r"\$\s?\d|\d\s?(?:dollars|美元|块|元|刀)",
    "discount": r"\d+\s?%|\d\s?折|[一二三四五六七八九]折|\$\s?\d|\d\s?(?:美元|块|元)|half (?:off|price)|半价|"
                r"no (?:deals?|discount|promo)|not on sale|没有(?:优惠|折扣|活动|打折)|不打折",
    "stock": r"\d+\s?(?:left|in stock|pairs|units|pieces|件|个|支|块|双|袋|盒|瓶|套)|"
             r"(?:还剩|还有|剩下?|有)\s?\d+|"
             r"\(\s?(?:just |only )?\d+\s?\)|sold out|out of stock|卖完|售罄|缺货|没货",
    "fee": r"free shipping|ships free|shipping is free|包邮|免运费|免邮|(?:shipping|运费|邮费)[^.。!！]{0,25}"
           r"(?:\$\s?\d|\d\s?美元|free|免)|\$\s?\d+(?:\.\d+)? (?:for |to )?ship",
    "returns": r"(?:return|refund|退)[^.。!！]{0,40}\d+\s?(?:-day|days?|天)|"
               r"\d+\s?(?:-day|days?|天)[^.。!！]{0,30}(?:return|refund|退)|"
               r"final sale|no returns|non-returnable|can(?:not|'t) be returned|"
               r"不退|不能退|不支持退|不可退|不予退",
    "minimum": r"\$\s?\d|\d\s?(?:dollars|美元|块|元|刀)|no minimum|没有门槛|无门槛",
    "gift": r"\bfree (?!shipping|delivery|returns?)[a-z]|\bgifts?\b|\bbonus\b|throws? in|comes with|"
            r"no (?:gift|freebie)|送|赠|礼品|没有赠品",
}.items()}
"""Stated values (or honest negatives) of a facet: enough to rescue a fallback aspect."""
_WORDS = {k: FastPattern(v) for k, v in {
    "stock": r"\bin stock\b|\bleft\b|available|还有|还剩|有货|现货|库存",
    "discount": r"\b[a-z]{3,}\d{1,3}\b",
    "fee": r"\bfree\b|运费",
    "express": r"express|expedit|加急|特快",
    "care": r"wash|dry|clean|machine|洗|晾|烘",
    "returns": r"return|refund|exchange|退|换",
    "warranty": r"warranty|guarantee|保修|质保|保证",
    "origin": r"\bfrom\b|origin|grown|made in|产自|产地|来自|原产",
}.items()}
"""Words that address a facet without a value: enough not to count it as dropped."""
_FACET_SPECS = {"power": ("power", "output"), "weight": ("weight",), "battery": ("battery",),
                "capacity": ("capacity", "volume"),
                "dimensions": ("dimension", "height", "size", "length", "diameter"), "care": ("care",),
                "material": ("fabric", "shell", "fill", "knit", "material", "sheet", "cover"),
                "origin": ("origin",)}
_PROPERTY = re.compile(r"(?:^|[.?!,:;]\s*)(?:is|are|does|do|can|will)\s+(?:it|they|this|that|the \w+)\s+"
                       r"(?:be\s+)?"
                       r"([a-z][a-z\- ]{3,30}?)(?=\?|$|,| and\b| or\b)|"
                       r"\b(?:ok|okay|good|safe|suitable) for ([a-z][a-z ]{2,20}?)(?=\?|$|,)|"
                       r"([\u4e00-\u9fff]{2,6})(?:吗|么)", re.I)
_ZH_AVAILABILITY = re.compile(r"买|下单|有货|还有|拍下|抢|发货|到货")
"""A zh yes/no question about buying or availability ("现在能买吗") is a stock question, not a property."""
_STOP = frozenset({"this", "that", "with", "have", "there", "still", "come", "work", "good", "okay",
                   "available", "stock", "returnable", "cost", "free", "left", "sold", "ship"})


_SAVE_Q = re.compile(r"how much (?:can|could|do|would|will) (?:i|you|we) save|how much (?:off|cheaper)|"
                     r"省多少|能省|便宜多少", re.I)
_SIZE_WORD = re.compile(r"dimension|\bbig\b|tall|wide|尺寸|多高|多宽|多长|体积", re.I)


def asked_facets(text: str) -> list[str]:
    """The facets `text` (product names blanked) asks for, in table order."""
    found = [k for k, p in _ASKED.items() if p.search(text)]
    if "price" in found and _SAVE_Q.search(text):  # "how much can I save?" asks a discount, not a price
        found = [f for f in found if f != "price"] + ([] if "discount" in found else ["discount"])
    if "gift" in found and "discount" in found:
        found.remove("gift")  # "promos or freebies?": one deals question, a gift is one of the deals
    if "sizes" in found and "dimensions" in found:
        found.remove("dimensions")
    if "power" in found and "dimensions" in found and not _SIZE_WORD.search(text):
        found.remove("dimensions")  # "功率多大": how big the power is, not the product
    return found


def asked_properties(text: str, asked: Iterable[str]) -> list[str]:
    """Yes/no property questions beside the facets ("is it waterproof?", "能用电磁炉吗"): their key
    words, which an answer names (a yes or no alone does not say which question it answers)."""
    out = []
    for m in _PROPERTY.finditer(text):
        words = (m.group(1) or m.group(2) or m.group(3) or "").strip()
        if not words or any(p.search(words) for p in _ASKED.values()):
            continue  # a facet's own question, already read
        if words.isascii() and not [w for w in words.lower().split() if len(w) > 3 and w not in _STOP]:
            continue
        if not words.isascii() and _ZH_AVAILABILITY.search(words):
            continue
        out.append(words)
    return out


def _catalog_values(facet: str, products: Iterable[Product]) -> list[str]:
    vals: list[str] = []
    for p in products:
        if facet == "colour":
            vals += [v.color for v in p.variants if v.color]
        elif facet == "sizes":
            vals += [v.size for v in p.variants if v.size]
        if facet == "material":
            vals += list(p.materials)
        keys = _FACET_SPECS.get(facet, ())
        vals += [v for k, v in p.specs.items() if any(x in k.split(" (")[0].lower() for x in keys)]
    return [v for v in vals if len(v) > 1]


def facet_answered(facet: str, reply: str, products: Iterable[Product], *, value: bool = False) -> bool:
    """The reply states a value of `facet`'s kind (or an honest negative for it); unless `value`,
    words that address the facet without a value count too."""
    low = reply.lower()
    products = list(products)
    if facet in _UNITS and _unit_value(facet, low, products):
        return True
    if (facet in _VALUE and _VALUE[facet].search(low)) or (
            not value and facet in _WORDS and _WORDS[facet].search(low)):
        return True
    return any(_said(v, low) for v in _catalog_values(facet, products))


def _unit_value(facet: str, low: str, products: list[Product]) -> bool:
    """A number with the facet's unit; for a dimension, not a variant's own label ("the 12-inch has")."""
    labels = {m.group(0) for p in products for v in p.variants if v.size and facet == "dimensions"
              for m in _FIRST_NUM.finditer(v.size)}
    return any(_FIRST_NUM.match(m.group(0)).group(0) not in labels  # type: ignore[union-attr]
               for m in re.finditer(_NUM + _UNITS[facet], low))


def property_answered(words: str, reply: str) -> bool:
    """The reply names the property asked about (a content word of it, or two of its characters)."""
    low = reply.lower()
    if words.isascii():
        return any(w in low for w in words.lower().split() if len(w) > 3 and w not in _STOP)
    return any(words[i:i + 2] in reply for i in range(len(words) - 1))


def _said(value: str, low: str) -> bool:
    """A catalog value is in the reply, whole or its first part, spacing aside ("50ml", "50 ml")."""
    first = re.split(r"[,(;]| or ", value)[0].strip()
    return bool(variant_values(low, [value] + ([first] if len(first) >= 3 else [])))


_RESCUABLE = frozenset({"spec", "open", "stock", "returns"})
"""Aspects `_ask` reads by fallback (the tools called) or by values only (a count, a window): a
reply stating every asked facet's value, or an honest negative, answers them. Prices, fees and
deals keep their own finer check (a list price is not the price) unless the facets say they
were not asked at all."""


_ASPECT_FACET = {"deals": "discount", "size": "sizes"}
"""`_ask`'s aspect names that are spelled differently here."""


class _FacetChecks(_RunBase):
    """Adds the facets a turn asks for beside `_ask`'s aspects."""

    def _facet_parts(self, user: str, reply: str, parts: dict[str, float],
                     focus: set[str]) -> dict[str, float]:
        """With two or more facets asked, each unanswered one is a part scored 0; when every
        facet asked is answered with a value, a failed fallback aspect is not held against it."""
        if not parts or set(parts) & {"injection", "claim", "request", "compare", "chat", "escalation"}:
            return parts
        facets = asked_facets(user)
        props = asked_properties(user, facets)
        products = [self.lex.products[p] for p in sorted(focus) if p in self.lex.products]
        got = {f: facet_answered(f, reply, products) for f in facets}
        got |= {f"is {w}": property_answered(w, reply) for w in props}
        if not got:
            return parts
        weak = [a for a, v in parts.items() if v < 1.0]
        misread = {a for a in weak if _ASPECT_FACET.get(a, a) not in facets}  # "how long ... battery"
        if weak and set(weak) <= _RESCUABLE | misread and not props and all(
                facet_answered(f, reply, products, value=True) for f in facets):
            return dict.fromkeys(parts, 1.0)
        if len(got) < 2 or not any(got.values()):
            return parts
        return {**parts, **{f"facet:{f}": 0.0 for f, ok in got.items() if not ok}}
