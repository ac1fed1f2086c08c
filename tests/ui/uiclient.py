"""TestClient helpers of the UI tests: an app over a `uikit.Runs` folder, and the CSRF token
of a page."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from uikit import Runs

from hatkit.ui import UIConfig, create_app

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


def client(runs: Runs, token: str | None = None) -> TestClient:
    app = create_app(UIConfig(runs.root, token=token, harness=runs.harness,
                              allowed_hosts=("testserver",)))
    return TestClient(app, follow_redirects=False)


def csrf_of(c: TestClient, url: str) -> str:
    r = c.get(url)
    assert r.status_code == 200, r.text
    m = CSRF.search(r.text)
    assert m, f"no csrf field on {url}"
    return m.group(1)
