"""`hatkit ui`: a small web app for the human steps of the system (confirming harness edits,
labelling traces for judge calibration, reading traces, reports and releases)."""

from __future__ import annotations

from .app import create_app
from .config import UIConfig, is_loopback

__all__ = ["UIConfig", "create_app", "is_loopback"]
