"""Malformed run files and spoofing characters: a bad line is named on the page and the rest
of the file is shown (never a 500), and direction-changing or invisible characters in
untrusted text are shown as visible escapes on every page."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from uiclient import client, csrf_of
from uikit import SKILL, Runs, make_runs

from hatkit.evolve.journal import Journal
from hatkit.harness.versioning import HarnessRepo
from hatkit.ui.web import neutralise

RLO = "\u202e"
SPOOF = f"Refund {RLO}gnp.exe{chr(0x2066)} ok\u200b{chr(0xE0041)}"
"""Text that reads differently than it is: a right-to-left override, an isolate, a zero-width
space and an invisible tag character."""
CONTROLS = (RLO, "\u2066", "\u200b", chr(0xE0041))


@pytest.fixture
def runs(tmp_path: Path, minimal_harness: Path) -> Runs:
    return make_runs(tmp_path, minimal_harness)


@pytest.fixture
def c(runs: Runs) -> TestClient:
    return client(runs)


def _good(runs: Runs) -> dict[str, object]:
    line = (runs.root / runs.traces).read_text(encoding="utf-8").splitlines()[1]
    record: dict[str, object] = json.loads(line)
    return record


def _append(path: Path, *lines: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in lines)


def _bad_traces(runs: Runs) -> list[str]:
    """Lines 6-12 of the traces file: each malformed in its own way."""
    good = _good(runs)

    def variant(eid: str, **change: object) -> str:
        return json.dumps({**good, "episode_id": eid, **change})

    spans = [dict(s) for s in good["spans"]]  # type: ignore[attr-defined]
    spans[1]["text"] = None
    return [
        variant("bad-hash", harness_hash=None),
        variant("bad-time", timings={"total_s": "fast", "model_calls": "two"}),
        variant("bad-span", spans=spans),
        variant("bad-event", events=[{"kind": "hook_veto", "turn": 1, "data": ["not", "an", "object"]}]),
        "{not json",
        "[1, 2, 3]",
        "[" * 5000 + "]" * 5000,
        variant("bad-text", final_reply="x").replace('"final_reply": "x"', '"final_reply": "\\ud800"'),
    ]


def test_a_malformed_trace_line_is_named_and_the_rest_of_the_file_renders(c: TestClient, runs: Runs) -> None:
    path = runs.root / runs.traces
    _append(path, *_bad_traces(runs))
    r = c.get(f"/traces?file={runs.traces}")
    assert r.status_code == 200, r.text[:300]
    for eid in runs.trace_ids:
        assert f"id={eid}" in r.text
    for line, why in ((6, "harness_hash"), (7, "timings.total_s"), (8, "spans.1.text"),
                      (9, "events.0.data"), (10, "not JSON"), (11, "not a JSON object"),
                      (12, "nested too deeply"), (13, "surrogate")):
        assert f"line {line}" in r.text and why in r.text, (line, why)
    for url in (f"/trace?file={runs.traces}&id=ep-1", f"/label?file={runs.traces}&annotator=ann"):
        r = c.get(url)
        assert r.status_code == 200, (url, r.text[:300])
        assert "line 6" in r.text
    r = c.get(f"/trace?file={runs.traces}&id=bad-span")
    assert r.status_code == 422 and "line 8" in r.text and "spans.1.text" in r.text


def test_a_file_name_that_is_not_utf8_is_listed_not_fatal(c: TestClient, runs: Runs) -> None:
    folder = os.fsencode(runs.root / "demo-1")
    Path(os.fsdecode(folder + b"/notes-\xff.jsonl")).write_text("{}\n")
    (Path(os.fsdecode(os.fsencode(runs.root) + b"/run-\xfe")) / "report.md").parent.mkdir()
    Path(os.fsdecode(os.fsencode(runs.root) + b"/run-\xfe/report.md")).write_text("# r\n")
    for url in ("/", "/run?name=demo-1"):
        r = c.get(url)
        assert r.status_code == 200 and "⟦U+DC" in r.text, url


def test_a_traces_file_whose_first_line_is_bad_is_still_a_traces_file(c: TestClient, runs: Runs) -> None:
    path = runs.root / runs.traces
    path.write_text("{broken\n" + "[" * 5000 + "\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    assert c.get("/").status_code == 200
    r = c.get(f"/traces?file={runs.traces}")
    assert r.status_code == 200 and "line 1" in r.text and "id=ep-3" in r.text


def test_a_trace_line_that_is_not_utf8_is_named(c: TestClient, runs: Runs) -> None:
    path = runs.root / runs.traces
    path.write_bytes(path.read_bytes() + b'{"episode_id": "\xff\xfe"}\n')
    r = c.get(f"/traces?file={runs.traces}")
    assert r.status_code == 200 and "line 6" in r.text and "UTF-8" in r.text


def test_malformed_verdict_lines_are_named_and_the_good_ones_shown(c: TestClient, runs: Runs) -> None:
    path = runs.root / "demo-1" / "verdicts.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    v = json.loads(lines[1])
    lines[1] = json.dumps({**v, "accuracy": "high"})
    lines[2] = json.dumps({**v, "trace_id": "ep-2", "items": ["compliance"]})
    lines.append("[]")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = c.get(f"/traces?file={runs.traces}")
    assert r.status_code == 200
    assert "verdicts.jsonl" in r.text and "line 2" in r.text and "accuracy" in r.text
    assert "line 6" in r.text
    assert c.get(f"/trace?file={runs.traces}&id=ep-1").status_code == 200
    assert "programmatic:test" in c.get(f"/trace?file={runs.traces}&id=ep-3").text


def test_a_labels_file_with_bad_rows_is_shown_with_them(c: TestClient, runs: Runs) -> None:
    labels = runs.root / "labels.jsonl"
    row = {"trace_id": "ep-1", "dimension": "accuracy", "label": 1, "annotator": "ann"}
    labels.write_text(json.dumps(row) + "\n" + json.dumps({**row, "label": "maybe"}) + "\n[\n",
                      encoding="utf-8")
    r = c.get("/labels")
    assert r.status_code == 200, r.text[:300]
    assert "labels.jsonl:2" in r.text and "labels.jsonl:3" in r.text
    assert "<td>ann</td><td>1</td>" in r.text  # the good row still counts
    assert c.get(f"/label?file={runs.traces}&annotator=ann").status_code == 200


def test_a_malformed_journal_record_is_named_and_the_rest_renders(c: TestClient, runs: Runs) -> None:
    j = Journal(runs.journal)
    j.append("evaluation", 1, edit_id=runs.edits[1], dev_delta="a lot",
             category_deltas={"greet": "up"})
    _append(runs.journal, json.dumps({"no_kind": True}),
            json.dumps({"kind": "decision", "edit_id": "x", "comment": "c"}).replace('"c"', '"\\udfff"'))
    r = c.get("/review")
    assert r.status_code == 200, r.text[:300]
    assert runs.edits[0] in r.text
    assert "dev_delta" in r.text and "kind: missing" in r.text and "surrogate" in r.text
    token = csrf_of(c, "/review")
    r = c.post("/review/decide", data={"csrf": token, "journal": "demo-1/journal.jsonl",
                                       "edit_id": runs.edits[0], "decision": "approve", "by": "ana"})
    assert r.status_code == 409 and "cannot be read" in r.text


def test_spoofing_characters_are_shown_as_escapes_on_every_page(c: TestClient, runs: Runs) -> None:
    path = runs.root / runs.traces
    good = _good(runs)
    good["episode_id"] = "ep-spoof"
    good["spans"][1]["text"] = SPOOF  # type: ignore[index]
    good["events"][0]["data"] = {"reason": SPOOF}  # type: ignore[index]
    _append(path, json.dumps(good, ensure_ascii=False), json.dumps({"episode_id": SPOOF}, ensure_ascii=False))
    (runs.root / "labels.jsonl").write_text(json.dumps(
        {"trace_id": "ep-1", "dimension": "accuracy", "label": 1, "annotator": SPOOF},
        ensure_ascii=False) + "\n", encoding="utf-8")
    (runs.harness / SKILL).write_text((runs.harness / SKILL).read_text() + SPOOF + "\n")
    HarnessRepo(runs.harness).commit("spoof")
    (runs.root / "demo-1" / f"notes{RLO}lmth.jsonl").write_text("{}\n")
    Journal(runs.journal).append("proposal", 2, edit_id="e-spoof", files={SKILL: SPOOF}, rationale=SPOOF,
                                 diff=f"+{SPOOF}", cluster={"key": SPOOF})
    pages = ["/", "/run?name=demo-1", f"/traces?file={runs.traces}", f"/trace?file={runs.traces}&id=ep-spoof",
             f"/label?file={runs.traces}&annotator=ann&id=ep-spoof", "/labels", "/review",
             f"/file?path={runs.traces}", "/releases"]
    from hatkit.harness.hashing import content_hash

    pages.append(f"/harness/{content_hash(runs.harness)}")
    for url in pages:
        r = c.get(url)
        assert r.status_code == 200, (url, r.text[:300])
        assert not any(ch in r.text for ch in CONTROLS), url
    for url in (f"/trace?file={runs.traces}&id=ep-spoof", "/review", "/labels", pages[-1]):
        assert neutralise(SPOOF) in c.get(url).text, url
    assert "⟦U+202E⟧" in neutralise(SPOOF)


def test_an_edited_text_keeps_its_characters_through_the_escapes(c: TestClient, runs: Runs) -> None:
    """The editor shows escapes; approving it unchanged writes the proposal's characters."""
    Journal(runs.journal).append("proposal", 2, edit_id="e-spoof", files={SKILL: SPOOF + "\n"},
                                 rationale="x", diff="+x", cluster={})
    html = c.get("/review").text
    assert f"{neutralise(SPOOF)}\n</textarea>" in html
    token = csrf_of(c, "/review")
    r = c.post("/review/decide", data={
        "csrf": token, "journal": "demo-1/journal.jsonl", "edit_id": "e-spoof",
        "decision": "approve_edited", "by": "ana", f"edited::{SKILL}": neutralise(SPOOF) + "\n"})
    assert r.status_code == 303, r.text[:300]
    decision = Journal(runs.journal).decision_for("e-spoof")
    assert decision is not None and decision["edited"] == {SKILL: SPOOF + "\n"}


def test_neutralise_leaves_ordinary_text_alone() -> None:
    text = "Grüße 你好 👩‍💻 ❤️ مرحبا\ttab\nnew line"
    assert neutralise(text) == text
    assert neutralise("a\u202eb\x1bc") == "a⟦U+202E⟧b⟦U+001B⟧c"
