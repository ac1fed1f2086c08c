"""Settings of the `hatkit ui` web app, and the loopback rule that guards its bind address."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the app reachable from this machine only."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class UIConfig:
    """What the app serves and how it guards it. Paths are resolved once, at start."""

    runs: Path
    """The runs folder: every run, trace file, verdict file, journal and report under it."""
    token: str | None = None
    """When set, every request must carry it (cookie from `?token=`, or `Authorization:
    Bearer`). Required by the CLI for any non-loopback bind."""
    labels: Path | None = None
    """The labels file (JSONL) the labelling page appends to; default `<runs>/labels.jsonl`,
    the format `hatkit.judge.labels.load_labels` reads."""
    harness: Path | None = None
    """A harness folder inside a git repository: harness versions are rendered from it and
    releases are listed and rolled back there. None: found under the runs folder if any."""
    allowed_hosts: tuple[str, ...] = field(default=LOOPBACK_NAMES)
    """Host header values accepted (a guard against DNS rebinding); "*" accepts any. The CLI
    widens it to the bind address; tokens protect non-loopback binds."""
    secret: bytes = b""
    """Key of the CSRF tokens; random per process when empty (sessions end with the app)."""

    @property
    def labels_path(self) -> Path:
        return self.labels if self.labels is not None else self.runs / "labels.jsonl"
