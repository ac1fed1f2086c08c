"""Evolution review, the Confirm gate: each pending edit with its diff, the diagnosis it
answers and its deltas after evaluation; approve, reject, or edit the text and approve.

Decisions go through `Journal.decide`, exactly as the CLI's do, so a running loop polling
the journal picks them up, and two concurrent approvals of one edit cannot both land.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ValidationError

from ...evolve.journal import Journal, PendingEdit
from ..files import JOURNAL_NAME, kind_of, list_runs, unpaired, why_invalid
from ..security import require_csrf
from ..web import config, render, restore, run_file

router = APIRouter()
EDIT_PREFIX = "edited::"
"""Form fields `edited::<path>` carry the annotator's own text of each file of the edit."""


@dataclass(frozen=True)
class EditView:
    """One pending edit, plus the proposed text of each file (for edit-and-approve)."""

    edit: PendingEdit
    texts: dict[str, str]
    """path -> proposed full text (files the edit deletes are not editable)."""
    examples: list[str]


class _Proposal(BaseModel):
    edit_id: str
    round: int
    files: dict[str, str | None] = {}
    diff: str = ""
    rationale: str = ""
    cluster: dict[str, Any] | None = None


class _Evaluation(BaseModel):
    edit_id: str
    dev_delta: float | None = None
    category_deltas: dict[str, float] = {}


class _Decision(BaseModel):
    edit_id: str
    decision: str = ""
    by: str = ""
    comment: str = ""


_RECORDS: dict[str, type[BaseModel]] = {"proposal": _Proposal, "evaluation": _Evaluation,
                                        "decision": _Decision}


class ReadableJournal(Journal):
    """The journal less the records this page cannot use (each named in `bad`): one bad
    record must not hide the edits waiting at the gate, nor break a decision."""

    @property
    def bad(self) -> list[str]:
        return self._check()[1]

    def _check(self) -> tuple[list[dict[str, Any]], list[str]]:
        good, bad = [], []
        for line, rec in enumerate(super().records(), 1):
            kind = rec.get("kind")
            model = _RECORDS.get(kind) if isinstance(kind, str) else None
            try:
                if not isinstance(kind, str):
                    raise ValueError("kind: missing or not a string")
                unpaired(rec)
                if model is not None:
                    model.model_validate(rec)
                good.append(rec)
            except ValidationError as exc:
                bad.append(f"{self.path.name} line {line}: {why_invalid(exc)}")
            except ValueError as exc:
                bad.append(f"{self.path.name} line {line}: {exc}")
        return good, bad

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self._check()[0] if kind is None or r.get("kind") == kind]


def _views(journal: Journal) -> list[EditView]:
    proposals = {r.get("edit_id"): r for r in journal.records("proposal")}
    out = []
    for p in journal.pending():
        files: dict[str, Any] = dict(proposals.get(p.edit_id, {}).get("files") or {})
        texts = {k: v for k, v in sorted(files.items()) if isinstance(v, str)}
        examples = [str(x) for x in (p.cluster.get("examples") or p.cluster.get("example_trace_ids") or [])]
        out.append(EditView(p, texts, examples))
    return out


def _decided(journal: Journal) -> list[dict[str, Any]]:
    return list(reversed(journal.records("decision")))[:20]


@router.get("/review", response_class=HTMLResponse)
def review_page(request: Request, journal: str | None = None, done: str = "",
                result: str = "") -> Response:
    cfg = config(request)
    journals = [f for run in list_runs(cfg.runs) for f in run.of("journal")]
    chosen = [journal] if journal else journals
    sections = []
    for rel in chosen:
        j = ReadableJournal(run_file(request, rel, "journal"))
        sections.append((rel, _views(j), _decided(j), _traces_beside(j.path, cfg.runs), j.bad))
    return render(request, "review.html.j2", sections=sections, journals=journals,
                  done=done, result=result, one=journal)


def _traces_beside(journal: Path, root: Path) -> str | None:
    """A traces file in the journal's run folder (or below), to link example traces to."""
    for p in sorted(journal.parent.rglob("*.jsonl")):
        if p.name != JOURNAL_NAME and kind_of(p) == "traces":
            return p.relative_to(root.resolve()).as_posix()
    return None


@router.post("/review/decide", dependencies=[Depends(require_csrf)])
async def decide(request: Request) -> Response:
    form = await request.form()
    rel = str(form.get("journal", ""))
    edit_id = str(form.get("edit_id", ""))
    decision = str(form.get("decision", ""))
    by = str(form.get("by", "")).strip()
    comment = str(form.get("comment", "")).strip()
    if decision not in ("approve", "reject", "approve_edited"):
        raise HTTPException(400, "decision must be approve, reject or approve_edited")
    if not by:
        raise HTTPException(400, "say who you are (annotator name) before deciding")
    journal = ReadableJournal(run_file(request, rel, "journal"))
    if bad := journal.bad:  # never write after records the loop itself cannot read
        raise HTTPException(409, "the journal has records that cannot be read; fix them before "
                                 "deciding:\n" + "\n".join(bad))
    edited: dict[str, str] | None = None
    if decision == "approve_edited":
        view = next((v for v in _views(journal) if v.edit.edit_id == edit_id), None)
        if view is None:
            return _already(request, journal, edit_id)
        # textareas submit CRLF line ends (harness files use LF), and show spoofing characters
        # as escapes: restore them, so an unchanged text is the proposal's exactly
        edited = {path: restore(str(form.get(EDIT_PREFIX + path, text)).replace("\r\n", "\n"))
                  for path, text in view.texts.items()}
    try:
        ok = journal.decide(edit_id, "reject" if decision == "reject" else "approve", by=f"ui:{by}",
                            comment=comment, edited=edited)
    except KeyError as exc:
        raise HTTPException(404, str(exc.args[0])) from None
    if not ok:
        return _already(request, journal, edit_id)
    word = "rejected" if decision == "reject" else "approved" + (" with edits" if edited else "")
    query = urlencode({"journal": rel, "done": edit_id, "result": word})
    return RedirectResponse(f"/review?{query}", status_code=303)


def _already(request: Request, journal: Journal, edit_id: str) -> Response:
    rec = journal.decision_for(edit_id) or {}
    return render(request, "error.html.j2", 409, status=409,
                  message=f"edit {edit_id} was already decided: {rec.get('decision', '?')} by "
                          f"{rec.get('by', '?')}; nothing was written")
