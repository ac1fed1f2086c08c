"""The simulator's paraphrase templates and gold-reply phrasing, read from `data/templates.yaml`.

Data only (the file's header says what a template and its slots are): `questions.py` draws
from it and `facts.py` fills it. Sequences are tuples, so the tables cannot be changed by
accident at run time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

TEMPLATES_FILE = Path(__file__).parent / "data" / "templates.yaml"


def _tuples(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _tuples(v) for k, v in x.items()}
    if isinstance(x, list):
        return tuple(_tuples(v) for v in x)
    return x


_DATA: dict[str, Any] = _tuples(yaml.safe_load(TEMPLATES_FILE.read_text("utf-8")))

QUESTIONS: dict[str, dict[str, tuple[str, ...]]] = _DATA["questions"]
PAIRS: tuple[tuple[str, str], ...] = _DATA["pairs"]
CITIES: dict[str, str] = _DATA["cities"]
WAREHOUSES_ZH: dict[str, str] = {**_DATA["warehouses_zh"], **CITIES}
CONDITIONS: dict[str, tuple[str, str]] = _DATA["conditions"]
SPEC_ZH: dict[str, str] = _DATA["spec_zh"]
OPENERS: dict[str, tuple[str, ...]] = _DATA["openers"]
CLOSERS: dict[str, tuple[str, ...]] = _DATA["closers"]
PHRASES: dict[str, dict[str, str]] = _DATA["phrases"]
