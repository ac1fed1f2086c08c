"""Chinese words for the catalog's field vocabulary (places, allergens, return classes, skin
types, firmness): a Chinese reply names a field value in Chinese, the tools give it in English.
A glossary of the kinds of values fields hold, not of any item; places come from `_features`.
"""

from __future__ import annotations

import re

from ._features import _ZH_PLACES

ZH_VALUES: dict[str, str] = {
    **_ZH_PLACES,
    "芝加哥": r"chicago", "洛杉矶": r"los angeles", "苏门答腊": r"sumatra", "危地马拉": r"guatemala",
    "牛奶": r"\bmilk", "乳制品": r"\bmilk", "奶": r"\bmilk", "花生": r"peanut", "坚果": r"nuts?\b",
    "大豆": r"\bsoy", "小麦": r"wheat", "麸质": r"gluten|wheat", "鸡蛋": r"\begg", "蛋": r"\begg",
    "鱼": r"\bfish",
    "卫生": r"hygiene", "普通退货": r"standard", "生鲜": r"perishable", "延长": r"extended",
    "不退不换": r"final", "干皮": r"\bdry", "干性": r"\bdry", "混合": r"combination", "油皮": r"oily",
    "中等偏硬": r"medium-firm", "偏硬": r"\bfirm", "偏软": r"\bsoft",
}
ZH_VALUE = re.compile("|".join(sorted(ZH_VALUES, key=len, reverse=True)))


def zh_values(text: str) -> list[tuple[str, int, int]]:
    """(English pattern, start, end) of each field word a Chinese text names."""
    if text.isascii():
        return []
    return [(ZH_VALUES[m.group(0)], m.start(), m.end()) for m in ZH_VALUE.finditer(text)]


ZH_NEEDS: dict[str, str] = {
    "笔记本": "laptop", "电脑": "laptop", "游泳": "swimming", "孩子": "children", "儿童": "children",
    "小孩": "children", "宝宝": "children", "退货": "returned", "退": "returned", "怀孕": "pregnancy",
    "孕": "pregnancy", "微波炉": "microwave", "洗碗机": "dishwasher", "烘干": "tumble",
}
"""What a Chinese viewer needs, in the English words product data uses for it."""


def zh_needs(text: str) -> str:
    """The English need words of a Chinese text (empty for English)."""
    return "" if text.isascii() else " ".join(en for zh, en in ZH_NEEDS.items() if zh in text)
