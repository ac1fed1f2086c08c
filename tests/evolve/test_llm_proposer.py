"""The LLM proposer through the OpenAI-compatible backend, against a loopback fake server
that plays a reflective model: it reads the failing traces in the prompt and answers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import disable, make_loop, make_repo

from hatkit.evolve.journal import Journal
from hatkit.evolve.llm_proposer import LLMProposer, parse_edits
from hatkit.models.base import ModelOutput
from hatkit.models.errors import BackendUnavailable
from hatkit.models.openai_compat import OpenAICompatibleModel
from hatkit.models.scripted import ScriptedModel


def _reflect(prompt: dict[str, Any]) -> str:
    """What a good model would answer: enable the tool the failing traces called in vain."""
    missing = {c["name"] for t in prompt["failing_traces"] for c in t["tool_calls"]
               if c["error"] == "unknown_tool"}
    yaml = prompt["harness_files"]["harness.yaml"]
    for tool in sorted(missing):
        yaml = yaml.replace("get_shipping_info, ", f"{tool}, get_shipping_info, ", 1)
    edits = [{"rationale": f"enable {sorted(missing)}", "cluster": prompt["clusters"][0]["key"],
              "files": {"harness.yaml": yaml}},
             {"rationale": "escape attempt", "files": {"../../etc/x": "pwned"}}]
    return "Here you go:\n```json\n" + json.dumps({"edits": edits}) + "\n```"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    for var in ("OPENAI_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            bodies.append(body)
            prompt = json.loads(body["messages"][-1]["content"])
            payload = json.dumps({"choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": _reflect(prompt)}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", bodies
    httpd.shutdown()
    httpd.server_close()


def test_llm_proposer_fixes_a_missing_tool_in_the_loop(
        tmp_path: Path, server: tuple[str, list[dict[str, Any]]]) -> None:
    url, bodies = server
    harness = make_repo(tmp_path, disable("get_promotions"))
    model = OpenAICompatibleModel(base_url=url, model="fake")
    result = make_loop(harness, tmp_path / "run", LLMProposer(model)).run()
    assert len(result.releases) == 1
    props = Journal(tmp_path / "run" / "journal.jsonl").records("proposal")
    assert [p["proposer"] for p in props] == ["llm"]  # the escaping edit never got in
    assert props[0]["cluster"]["error_type"] == "wrong_or_missing_tool"
    prompt = json.loads(bodies[0]["messages"][-1]["content"])
    assert prompt["failing_traces"] and "unknown_tool" in json.dumps(prompt["failing_traces"])


def test_parse_edits_drops_malformed_and_unsafe_answers() -> None:
    assert parse_edits("no json here", {}, 3) == []
    assert parse_edits('{"edits": [{"files": {"/abs": "x"}}, {"files": "nope"}]}', {}, 3) == []
    ok = parse_edits('{"edits": [{"files": {"skills/a/SKILL.md": "x"}, "rationale": "r"}]}', {}, 3)
    assert len(ok) == 1 and ok[0].proposer == "llm"


def test_a_failing_proposer_backend_stops_the_run_instead_of_proposing_nothing(tmp_path: Path) -> None:
    harness = make_repo(tmp_path, disable("get_promotions"))
    down = ScriptedModel([ModelOutput.failed(BackendUnavailable("HTTP 503 after 4 attempts"))])
    with pytest.raises(BackendUnavailable, match="HTTP 503"):
        make_loop(harness, tmp_path / "run", LLMProposer(down)).run()
