"""Confirm: the human gate between a proposed edit and the harness.

Policies (`--approve`), written into the journal's `start` record and the report:

* `ask`  - show the diagnosis cluster, the dev delta and the diff on the terminal; approve,
  reject or edit (the human's edited files replace the proposal's and are validated again);
* `wait` - record nothing and poll the journal until someone decides (the web UI, or
  `hatkit evolve decide` from another shell);
* `auto` - approve unattended, EXCEPT edits to Python hook or tool code, which are never
  approved automatically: under `auto` they are rejected with that reason.

A decision already in the journal (a resumed run, or a UI that was faster) always wins, and
`Journal.decide` is atomic, so a human and the loop can never both decide one edit.
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console
from rich.syntax import Syntax

from .journal import Decision, Journal, PendingEdit

ApprovePolicy = Literal["auto", "ask", "wait"]
APPROVE_POLICIES: tuple[ApprovePolicy, ...] = ("auto", "ask", "wait")
Asker = Callable[[PendingEdit], tuple[Decision, dict[str, str] | None, str]]
"""Shows an edit to a human; returns (decision, edited files or None, comment)."""


@dataclass(frozen=True)
class Outcome:
    decision: Decision
    by: str
    edited: dict[str, str] | None
    comment: str


def _outcome(rec: dict[str, Any]) -> Outcome:
    return Outcome(rec["decision"], str(rec.get("by", "")), rec.get("edited"), str(rec.get("comment", "")))


def show_edit(edit: PendingEdit, console: Console) -> None:
    """Print the cluster and the diff; all of it is untrusted text, never markup."""
    c = edit.cluster
    console.rule(f"edit {edit.edit_id} (round {edit.round})", style="cyan")
    console.print(f"answers {c.get('key', '?')}: {c.get('count', '?')} failure(s); "
                  f"causes {c.get('details', {})}; examples {c.get('examples', [])}",
                  markup=False, highlight=False)
    console.print(f"why: {edit.rationale}", markup=False, highlight=False)
    if edit.dev_delta is not None:
        console.print(f"dev pass-rate delta: {edit.dev_delta:+.3f}; per category: "
                      f"{edit.category_deltas}", markup=False, highlight=False)
    if edit.needs_human:
        console.print("this edit changes Python hook/tool code: explicit human approval required",
                      style="bold yellow", markup=False)
    console.print(Syntax(edit.diff or "(no textual change)", "diff", theme="ansi_dark"))


def terminal_asker(console: Console) -> Asker:
    """Interactive approve / reject / edit on the terminal (edit opens $EDITOR per file)."""
    import click

    def ask(edit: PendingEdit) -> tuple[Decision, dict[str, str] | None, str]:
        show_edit(edit, console)
        choice = click.prompt("approve, reject or edit?", type=click.Choice(["a", "r", "e"]),
                              default="r")
        if choice == "e":
            edited: dict[str, str] = {}
            for rel in edit.files:
                new = click.edit(f"# edit {rel}; save and quit to apply\n", extension=rel.rsplit(".", 1)[-1])
                if new is not None:
                    edited[rel] = new.split("\n", 1)[1] if new.startswith("# edit ") else new
            return "approve", edited or None, "edited at the terminal"
        return ("approve" if choice == "a" else "reject"), None, click.prompt(
            "comment (optional)", default="", show_default=False)

    return ask


class ConfirmGate:
    def __init__(self, journal: Journal, policy: ApprovePolicy, *, asker: Asker | None = None,
                 poll_s: float = 1.0, timeout_s: float | None = None,
                 on_wait: Callable[[PendingEdit], None] | None = None) -> None:
        if policy not in APPROVE_POLICIES:
            raise ValueError(f"--approve must be one of {', '.join(APPROVE_POLICIES)}, not {policy!r}")
        self.journal, self.policy, self.asker = journal, policy, asker
        self.poll_s, self.timeout_s, self.on_wait = poll_s, timeout_s, on_wait

    def confirm(self, edit: PendingEdit) -> Outcome:
        done = self.journal.decision_for(edit.edit_id)
        if done is not None:
            return _outcome(done)
        if self.policy == "auto":
            if edit.needs_human:
                self.journal.decide(edit.edit_id, "reject", by="policy:auto",
                                    comment="Python hook/tool code needs explicit human approval; "
                                            "rerun with --approve ask or wait")
            else:
                self.journal.decide(edit.edit_id, "approve", by="policy:auto")
        elif self.policy == "ask":
            if self.asker is None:
                raise RuntimeError("--approve ask needs an interactive terminal")
            decision, edited, comment = self.asker(edit)
            self.journal.decide(edit.edit_id, decision, by=f"cli:{_user()}", comment=comment,
                                edited=edited)
        else:
            if self.on_wait:
                self.on_wait(edit)
            start = time.monotonic()
            while self.journal.decision_for(edit.edit_id) is None:
                if self.timeout_s is not None and time.monotonic() - start > self.timeout_s:
                    raise TimeoutError(f"no decision on edit {edit.edit_id} after {self.timeout_s} s")
                time.sleep(self.poll_s)
        rec = self.journal.decision_for(edit.edit_id)
        assert rec is not None
        return _outcome(rec)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
