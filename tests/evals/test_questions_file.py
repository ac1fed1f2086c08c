"""The user questions file (good and bad lines) and SuiteResult files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.evals import SuiteResult
from hatkit.evals.cases import check_replies
from hatkit.evals.questions_file import QuestionsFileError, load_questions

EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "hatkit" / "evals" / "examples" / "questions.jsonl"


def test_example_file_loads_every_field() -> None:
    cases = load_questions(EXAMPLE)
    assert len(cases) == 8 and len({c.id for c in cases}) == 8
    follow = next(c for c in cases if c.id == "followup-projector")
    assert len(follow.turns) == 2 and not follow.turns[0].facts and follow.turns[1].facts
    assert {c.category for c in cases} >= {"price_promo", "injection", "compliance_trap"}


def test_facts_and_must_not_are_checked_on_replies(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"message": "price?", "facts": {"price": ["$7.99", "7.99"], "units": 3},
                                "must_not": ["free"]}) + "\n\n")
    [case] = load_questions(path)
    good = check_replies(case, ["It is $7.99 and 3 are left."])
    assert good.facts_recall == 1.0 and not good.must_not_hits
    bad = check_replies(case, ["It is FREE today!"])
    assert bad.facts_missed == ["price", "units"] and bad.must_not_hits == ["free"] and bad.facts_recall == 0


def test_every_bad_line_is_reported_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([
        json.dumps({"message": "fine", "id": "a"}),
        "{not json",
        json.dumps({"facts": {"x": "1"}}),
        json.dumps({"message": "m", "must_not": ["(unclosed"]}),
        json.dumps({"message": "m", "category": "weather"}),
        json.dumps({"message": "again", "id": "a"}),
        json.dumps(["a list"]),
        json.dumps({"message": "m", "colour": "red"}),
    ]) + "\n")
    with pytest.raises(QuestionsFileError) as exc:
        load_questions(path, LC.categories)
    lines = str(exc.value).splitlines()
    assert [ln.split(":")[1] for ln in lines] == ["2", "3", "4", "5", "6", "7", "8"]
    text = str(exc.value)
    assert "not JSON" in text and "message: Field required" in text
    assert "not a valid regular expression" in text
    assert "unknown category 'weather'" in text and "repeats line 1" in text and "colour" in text


def test_empty_or_missing_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(QuestionsFileError, match="no questions"):
        load_questions(tmp_path / "empty.jsonl")
    with pytest.raises(QuestionsFileError, match="cannot read"):
        load_questions(tmp_path / "missing.jsonl")


def test_suite_result_round_trips_and_bad_files_name_themselves(tmp_path: Path) -> None:
    r = SuiteResult(suite="live_qa", metrics={"accuracy": 0.5}, n=2, details={"x": [1, 2]})
    path = r.write(tmp_path / "deep" / "live_qa.json")
    assert SuiteResult.read(path) == r
    assert [p.name for p in path.parent.iterdir()] == ["live_qa.json"]  # no temp file left
    (tmp_path / "bad.json").write_text('{"suite": "x"}')
    with pytest.raises(ValueError, match=r"bad\.json: not a suite result: metrics"):
        SuiteResult.read(tmp_path / "bad.json")


def test_categories_are_checked_against_the_domains_own(tmp_path: Path) -> None:
    """A category is a domain's: one the domain does not have is refused; without a domain to
    check against (a plain call), any category string is kept as the judge's hint."""
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"message": "m", "category": "weather"}) + "\n")
    with pytest.raises(QuestionsFileError, match="unknown category 'weather'"):
        load_questions(path, LC.categories)
    assert load_questions(path)[0].category == "weather"
