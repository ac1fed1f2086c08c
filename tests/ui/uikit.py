"""Shared test helpers of the UI tests: a runs folder with traces (one carrying a script
payload), verdicts, a harness in git with two releases, and an evolution journal with two
pending edits; plus the part of the evolution loop that waits at the Confirm gate and applies
an approved edit (built from hatkit.evolve's own functions)."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import git

from hatkit.agent.trace import Event, Span, ToolRecord, Trace, write_traces
from hatkit.evolve.confirm import ConfirmGate, Outcome
from hatkit.evolve.edits import Edit, build_candidate, unified_diff
from hatkit.evolve.journal import Journal
from hatkit.evolve.release import make_release
from hatkit.harness import load_harness
from hatkit.harness.versioning import HarnessRepo
from hatkit.judge.verdict import Evidence, ItemScore, Verdict

PAYLOAD = "<script>window.__pwned = 1; alert('xss')</script><img src=x onerror=\"window.__pwned=2\">"
"""What a hostile viewer types into the chat."""
SKILL = "skills/greet/SKILL.md"


@dataclass(frozen=True)
class Runs:
    root: Path
    harness: Path
    traces: str
    """Traces file, relative to root."""
    journal: Path
    edits: tuple[str, str]
    """Ids of the two pending edits (the first changes SKILL, the second the harness.yaml)."""
    trace_ids: tuple[str, ...]
    hostile_id: str


def _trace(i: int, harness_hash: str, viewer: str) -> Trace:
    t = Trace("minimal", harness_hash, "scripted", episode_id=f"ep-{i}")
    t.spans = [
        Span("system", "You are the host of Tiny Shop.", source="harness"),
        Span("user", viewer, source="viewer"),
        Span("think_tool", "I should look the product up.", turn=0, source="model"),
        Span("tool_call", '{"name": "lookup", "arguments": {"sku": "A-1"}}', turn=0, source="model"),
        Span("tool_output", '{"price": 12.5, "note": "<b>not bold</b>"}', turn=1, source="tool"),
        Span("think_reply", "The price is 12.5.", turn=1, source="model"),
        Span("reply", f"It costs $12.50 at Tiny Shop! ({i})", turn=1, source="model"),
    ]
    t.events = [Event("fault_injected", 0, {"fault": "timeout", "tool": "lookup"}),
                Event("hook_veto", 1, {"hook": "no_shouting", "reason": "ALL CAPS <em>x</em>"})]
    t.tool_calls = [ToolRecord("lookup", {"sku": "A-1"}, {"price": 12.5})]
    t.final_reply = t.spans[-1].text
    return t


def _verdict(t: Trace, good: bool) -> Verdict:
    return Verdict(t.episode_id, "programmatic:test", "f" * 64, "eval", 1.0 if good else 0.0, 1.0,
                   {"compliance": ItemScore(1.0, True)},
                   [Evidence("accuracy", "$12.50 <i>claim</i>", good, "12.5", "catalog:A-1.price")])


def _git_harness(src: Path, folder: Path) -> HarnessRepo:
    shutil.copytree(src, folder)
    repo = git.Repo.init(folder)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Test")
        cw.set_value("user", "email", "test@example.invalid")
    hr = HarnessRepo(folder)
    hr.commit("initial harness")
    return hr


def _release(hr: HarnessRepo, work: Path, name: str, threshold: int) -> None:
    text = re.sub(r"free_shipping_threshold: \d+", f"free_shipping_threshold: {threshold}",
                  (hr.folder / "harness.yaml").read_text())
    edit = Edit({"harness.yaml": text}, f"threshold {threshold}")
    cand = work / f"cand-{name}"
    build_candidate(hr.folder, edit, cand)
    make_release(hr, cand, name=name, edit_id=edit.edit_id, model="scripted",
                 report={"dev": 0.9}, report_path=work / f"{name}.report.json", message=name)


def make_runs(tmp: Path, minimal: Path) -> Runs:
    """The runs folder every UI test starts from (see the module docstring)."""
    root = tmp / "runs"
    run = root / "demo-1"
    run.mkdir(parents=True)
    hr = _git_harness(minimal, root / "harness")
    work = tmp / "work"
    work.mkdir()
    _release(hr, work, "r1", 60)
    _release(hr, work, "r2", 70)
    h = load_harness(hr.folder).content_hash
    traces = [_trace(0, h, PAYLOAD)] + [_trace(i, h, f"How much is A-{i}?") for i in range(1, 5)]
    write_traces(run / "traces.jsonl", traces)
    (run / "verdicts.jsonl").write_text("".join(_verdict(t, i % 2 == 0).to_json() + "\n"
                                                for i, t in enumerate(traces)))
    (run / "report.md").write_text("# Report\n\npass rate 0.9 <script>x</script>\n")
    (run / "report.html").write_text("<h1>Report</h1><p>pass rate 0.9</p>")
    journal = Journal(run / "journal.jsonl")
    skill = (hr.folder / SKILL).read_text()
    yaml_text = (hr.folder / "harness.yaml").read_text()
    edits = (Edit({SKILL: skill + "Always say the price with its currency.\n"}, "say the currency",
                  {"key": "greet/invented_fact", "category": "greet", "error_type": "invented_fact",
                   "count": 3, "examples": ["ep-1", "ep-2"]}),
             Edit({"harness.yaml": yaml_text.replace("reply_chars: 120", "reply_chars: 90")},
                  "shorter replies <b>now</b>", {"key": "x/too_long", "count": 1, "examples": []}))
    for e in edits:
        journal.append("proposal", 1, **e.to_record(), diff=unified_diff(hr.folder, e))
    journal.append("evaluation", 1, edit_id=edits[0].edit_id, dev_delta=0.05,
                   category_deltas={"greet": 0.1, "shipping": -0.02})
    return Runs(root, hr.folder, "demo-1/traces.jsonl", run / "journal.jsonl",
                (edits[0].edit_id, edits[1].edit_id), tuple(t.episode_id for t in traces), "ep-0")


def confirm_and_apply(journal: Journal, harness: Path, edit_id: str, work: Path) -> Outcome:
    """The loop's Confirm -> Edit step: wait for the decision in the journal (policy `wait`);
    on approval apply the (possibly human-edited) edit and release it into the harness."""
    pending = next(p for p in journal.pending() if p.edit_id == edit_id)
    outcome = ConfirmGate(journal, "wait", poll_s=0.05, timeout_s=60).confirm(pending)
    if outcome.decision == "approve":
        rec = next(r for r in journal.records("proposal") if r["edit_id"] == edit_id)
        # as hatkit.evolve.loop does: the human's files replace the proposal's, file by file
        edit = Edit({**rec["files"], **(outcome.edited or {})}, rec.get("rationale", ""))
        cand = work / f"cand-{edit_id}"
        build_candidate(harness, edit, cand)
        make_release(HarnessRepo(harness), cand, name=f"evolve-{edit_id}", edit_id=edit_id,
                     model="scripted", report={"edit": edit_id}, report_path=work / f"{edit_id}.json",
                     message=f"evolve: {edit_id}")
    return outcome
