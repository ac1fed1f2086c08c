"""The judges' independent labelled sets are frozen (live_commerce:
calibration/heldout_families.jsonl and the dev set dev_families.jsonl; food_delivery:
calibration/labelled.jsonl): written without
the judge's checks, they measure whether it generalises only as long as nobody edits them to
fit. A change needs a new file, never an edit in place."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import pytest

DOMAINS = Path(__file__).resolve().parents[2] / "src" / "hatkit" / "domains"
FOLDER = DOMAINS / "live_commerce" / "calibration"
FAMILIES = FOLDER / "heldout_families.jsonl"
FOOD = DOMAINS / "food_delivery" / "calibration" / "labelled.jsonl"
DEV = FOLDER / "dev_families.jsonl"
ROUND2 = FOLDER / "heldout_families_r2.jsonl"
ROUND3 = FOLDER / "heldout_families_r3.jsonl"
ROUND4 = FOLDER / "heldout_families_r4.jsonl"
ROUND5 = FOLDER / "heldout_families_r5.jsonl"


@pytest.mark.parametrize("path", [FAMILIES, FOOD], ids=["live_commerce", "food_delivery"])
def test_the_file_matches_the_hash_its_readme_froze(path: Path) -> None:
    frozen = re.search(r"sha256:\s*`?([0-9a-f]{64})", (path.parent / "README.md").read_text("utf-8"))
    assert frozen is not None
    assert hashlib.sha256(path.read_bytes()).hexdigest() == frozen.group(1)


def _matches_its_notes(labels: Path, notes: str) -> bool:
    """Whether `labels` hashes to the sha256 its notes (`notes` in FOLDER) froze it at."""
    frozen = re.search(rf"sha256 \(`{re.escape(labels.name)}`\):\s*`?([0-9a-f]{{64}})",
                       (FOLDER / notes).read_text("utf-8"))
    assert frozen is not None, f"{notes} gives no sha256 for {labels.name}"
    return hashlib.sha256(labels.read_bytes()).hexdigest() == frozen.group(1)


def test_the_dev_set_matches_the_hash_its_notes_froze() -> None:
    """dev_families.jsonl may be read while checks are fixed, but never edited to fit them."""
    assert _matches_its_notes(DEV, "dev_families.md")
    rows = [json.loads(line) for line in DEV.read_text("utf-8").splitlines()]
    per = Counter(r["family"] for r in rows)
    assert len(rows) == 199 and min(per.values()) >= 30 and per["clean"] >= 44


@pytest.mark.parametrize(("labels", "notes", "clean"), [
    (ROUND2, "heldout_families_r2.md", 60), (ROUND3, "heldout_families_r3.md", 90),
    (ROUND4, "heldout_families_r4.md", 90)],
    ids=["round2", "round3", "round4"])
def test_a_scored_round_matches_its_hash_and_is_dev_whole(labels: Path, notes: str,
                                                          clean: int) -> None:
    """A round's file measures its round's checks once (every family sealed then); the next
    round's checks are developed on it, so every family and clean conversation is dev after
    (a one-way step), and it stays frozen by the hash its notes give."""
    from hatkit.domains.live_commerce import DOMAIN as LC
    from hatkit.judge.conversations import load_conversations, load_split, split_file

    assert _matches_its_notes(labels, notes)
    convs = load_conversations(labels)
    split = load_split(split_file(labels), convs)
    assert not split.sealed and {split.group(c) for c in convs} == {"dev"}
    assert split.dev == {c.family for c in convs} - {"clean"}
    per = Counter(c.family for c in convs)
    assert min(per.values()) >= 30 and per["clean"] >= clean
    assert LC.independent_labels != labels


def test_the_round_five_set_matches_its_hash_and_is_sealed_whole() -> None:
    """Round 5 measures what comes after round 4: frozen by the hash its notes give, every
    family sealed (none read while anything was fixed), ten error families new to rounds 1-4,
    and the newest round is what calibrate uses."""
    from hatkit.domains.live_commerce import DOMAIN as LC
    from hatkit.judge.conversations import load_conversations, load_split, split_file

    assert _matches_its_notes(ROUND5, "heldout_families_r5.md")
    convs = load_conversations(ROUND5)
    split = load_split(split_file(ROUND5), convs)
    assert not split.dev and not split.clean_dev_ids
    assert split.sealed == {c.family for c in convs} - {"clean"}
    per = Counter(c.family for c in convs)
    assert len(per) == 11 and min(per.values()) >= 30 and per["clean"] >= 90
    earlier = {c.family for f in (FAMILIES, DEV, ROUND2, ROUND3, ROUND4) for c in load_conversations(f)}
    assert not (split.sealed & earlier)
    assert {(c.family, c.locale) for c in convs} == {(f, loc) for f in per for loc in ("en", "zh")}
    assert LC.independent_labels == ROUND5


def test_every_family_has_thirty_items_in_both_locales_and_clean_has_sixty() -> None:
    rows = [json.loads(line) for line in FAMILIES.read_text("utf-8").splitlines()]
    assert len({r["id"] for r in rows}) == len(rows)
    per = Counter(r["family"] for r in rows)
    assert len(per) >= 11 and min(per.values()) >= 30 and per["clean"] >= 60
    for family in per:
        assert {r["locale"] for r in rows if r["family"] == family} == {"en", "zh"}
    assert all(set(r["labels"]) == {"accuracy", "effectiveness"} for r in rows)


def test_the_food_set_has_every_kind_in_both_locales_and_sixty_traces() -> None:
    rows = [json.loads(line) for line in FOOD.read_text("utf-8").splitlines()]
    per = Counter(r["family"] for r in rows)
    assert len(rows) >= 60 and len(per) >= 10 and per["clean"] >= 25 and min(per.values()) >= 8
    assert all({r["locale"] for r in rows if r["family"] == f} == {"en", "zh"} for f in per)
