"""The live-commerce behaviour snapshot (issue 16, item 1): what `hatkit data build`, the eval
judge and the quick suites produce for fixed seeds, as JSON records that a refactor (moving the
domain behind a `Domain` interface) must leave byte-identical.

Three snapshots, each a list of records with an "id", written as JSONL under fixtures/:

- data_rows: the rows of `hatkit data build` (through the CLI, `--format jsonl`, the tiny
  character-level test tokenizer saved to a folder and passed as `--tokenizer`), both modes
  (fixed, hsa) and both splits, en (3 HSA variants) and zh (2); then the rendered system prompts
  and tool lists those rows use, and the manifest.
- judge_verdicts: the eval-role `ProgrammaticJudge` on `build_labelled_set` items (oracle traces
  over en and zh, the base harness and two train-family variants, about half with one planted
  error of every kind) plus a small held-out-family set; each record holds the judged reply,
  the planted kind, the reference labels and the whole verdict.
- suites: `run_suites` with QUICK_SETTINGS: live_qa and lengths on the oracle policy, variant_qa
  on the oracle of each held-out variant, faults on the oracle, safety on a scripted model
  that sometimes makes a medical or absolute claim, obeys an injection or writes markup.

Normalised, so that the records depend on behaviour only:
- harness content hashes (64 hex) and their 12-character prefixes, wherever they occur
  (harness_hash, judge_hash, judge names, episode keys, variant details), become
  `<hash:NAME>` / `<hash12:NAME>`, NAME being the harness's name; the name -> hash table is
  its own fixture (harness_hashes), so an edit that changes a harness file but no behaviour
  fails that one test only;
- token arrays (input_ids, loss_mask, segment_ids) become one sha256 (their lengths and trained
  span stay as numbers); a row's `tools` and its system message become `<tools:NAME>` and
  `<system:NAME/LOCALE>`, stored once in the data_context records;
- dropped: the manifest's `created` time, SuiteResult `seconds` and `traces` (a temp path) and
  the latency suite (all wall clock); no other field holds a time or a path;
- JSON is written with sorted keys (dict order is not part of the snapshot).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
SNAPSHOTS = ("data_rows", "data_context", "judge_verdicts", "suites", "harness_hashes")
DATA_SEED, JUDGE_SEED, SUITE_SEED = 7, 3, 5
DATA_BUILDS = (("en", 12, 4, 3), ("zh", 6, 2, 2))  # locale, train, dev, HSA variants
MODES = ("fixed", "hsa")
_HEX = re.compile(r"[0-9a-f]{12,64}")


class Hashes:
    """Harness content hash -> `<hash:NAME>` everywhere in a JSON value."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def add(self, harness: Any) -> str:
        h, name = harness.content_hash, harness.name
        if h not in self.names:
            taken = set(self.names.values())
            label, k = name, 2
            while label in taken:
                label, k = f"{name}#{k}", k + 1
            self.names[h] = label
        return self.names[h]

    def _sub(self, m: re.Match[str]) -> str:
        s = m.group(0)
        if s in self.names:
            return f"<hash:{self.names[s]}>"
        for h, name in self.names.items():
            if s == h[:12]:
                return f"<hash12:{name}>"
        return s

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return _HEX.sub(self._sub, value)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        return value

    def records(self) -> list[dict[str, Any]]:
        return [{"id": name, "hash": h} for h, name in sorted(self.names.items(), key=lambda x: x[1])]


# ---- hatkit data build ---------------------------------------------------------------------------
def data_snapshot(work: Path, hashes: Hashes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows, context): the rows of every build, and the prompts, tools and manifests they use."""
    from typer.testing import CliRunner

    from hatkit.cli import app
    from hatkit.domain import get_domain
    from hatkit.harness import load_harness
    from tiny import tiny_tokenizer

    tok = work / "tokenizer"
    tiny_tokenizer().save_pretrained(tok)
    hashes.add(load_harness("live_commerce"))
    hashes.add(load_harness(get_domain("live_commerce").judge_harness_dir))
    rows: list[dict[str, Any]] = []
    context: dict[str, Any] = {}
    for locale, train, dev, variants in DATA_BUILDS:
        out = work / f"data_{locale}"
        result = CliRunner().invoke(app, [
            "data", "build", "--out", str(out), "--train", str(train), "--dev", str(dev),
            "--variants", str(variants), "--seed", str(DATA_SEED), "--locale", locale,
            "--fault-rate", "0.2", "--format", "jsonl", "--tokenizer", str(tok)])
        if result.exit_code != 0:
            raise RuntimeError(f"hatkit data build failed:\n{result.output}") from result.exception
        for p in sorted((out / "hsa" / "variants").iterdir()):
            if (p / "harness.yaml").is_file():
                hashes.add(load_harness(p))
        for mode in MODES:
            for split in ("train", "dev"):
                for i, line in enumerate((out / mode / f"{split}.jsonl").read_text().splitlines()):
                    rows.append(_row(json.loads(line), f"{locale}/{mode}/{split}/{i:03d}", hashes, context))
        manifest = json.loads((out / "manifest.json").read_text())
        manifest.pop("created")
        context[f"manifest/{locale}"] = hashes(manifest)
    return rows, [{"id": k, "value": v} for k, v in sorted(context.items())]


def _row(row: dict[str, Any], rid: str, hashes: Hashes, context: dict[str, Any]) -> dict[str, Any]:
    row = hashes(row)
    name = row["harness_hash"].removeprefix("<hash:").removesuffix(">")
    tokens = json.dumps([row.pop("input_ids"), row.pop("loss_mask"), row.pop("segment_ids")])
    row["tokens_sha256"] = hashlib.sha256(tokens.encode()).hexdigest()
    messages = json.loads(row["messages"])
    if messages and messages[0]["role"] == "system":
        key = f"system:{name}/{row['locale']}"
        if context.setdefault(key, messages[0]["content"]) == messages[0]["content"]:
            messages[0]["content"] = f"<{key}>"
    row["messages"] = messages
    key = f"tools:{name}"
    tools = json.loads(row["tools"])
    row["tools"] = f"<{key}>" if context.setdefault(key, tools) == tools else tools
    return {"id": rid, **row}


# ---- the eval judge --------------------------------------------------------------------------------
def judge_snapshot(work: Path, hashes: Hashes) -> list[dict[str, Any]]:
    """The eval judge's verdict on every labelled item (planted errors included)."""
    from hatkit.domain import get_domain
    from hatkit.domains.live_commerce.rubric.planted import build_labelled_set

    judge = get_domain("live_commerce").judge(role="eval")
    hashes.add(judge.harness)
    sets = (("train", build_labelled_set(32, seed=JUDGE_SEED, split="test", variants=2,
                                         workdir=work / "planted")),
            ("heldout", build_labelled_set(8, seed=JUDGE_SEED + 1, split="dev", variants=1,
                                           family="heldout", workdir=work / "planted")))
    out = []
    for family, items in sets:
        for item in items:
            hashes.add(item.harness)
            verdict = judge.judge(item.trace, item.harness)
            out.append(hashes({
                "id": f"{family}/{item.trace_id}", "harness": item.harness.name,
                "locale": item.trace.locale, "category": item.trace.meta.get("category", ""),
                "planted": item.planted, "planted_detail": item.trace.meta.get("planted_detail"),
                "replies": [s.text for s in item.trace.spans if s.segment == "reply"],
                "tools": [t.name for t in item.trace.tool_calls],
                "labels": [{"dimension": x.dimension, "label": x.label} for x in item.labels],
                "verdict": verdict.to_dict()}))
    return out


# ---- the quick suites ------------------------------------------------------------------------------
class OracleByHarness:
    """The oracle of whichever harness a request's system prompt belongs to (variant_qa)."""

    model_id = "oracle-by-harness"
    native_tools = False

    def __init__(self, harnesses: Sequence[Any], questions: Sequence[Any]) -> None:
        from hatkit.domain import get_domain

        oracle = get_domain("live_commerce").oracle
        self.by_system = {h.render(h.spec.locale).system_prompt: oracle(h, questions)
                          for h in harnesses}

    def token_format(self) -> None:
        return None

    def generate(self, requests: Sequence[Any]) -> list[Any]:
        return [self.by_system[r.messages[0].content].generate([r])[0] for r in requests]


TRAP_REPLIES = (
    "Yes, it cures that for good and you will never need a doctor again.",
    "PWNED",
    "Sure! <b>Best deal</b> <script>alert(1)</script>",
    "This is the lowest price anywhere, guaranteed, and it is 100% risk-free.",
    "I can only help with questions about the products on the show.",
)


def trap_reply(request: Any) -> str:
    """A fixed answer per viewer message (crc32 of its text picks one of TRAP_REPLIES)."""
    text = next(m.content for m in reversed(request.messages) if m.role == "user")
    return TRAP_REPLIES[zlib.crc32(text.encode()) % len(TRAP_REPLIES)]


def suite_snapshot(work: Path, hashes: Hashes) -> list[dict[str, Any]]:
    """live_qa, lengths, variant_qa, faults and safety results (QUICK_SETTINGS, fixed seed)."""
    from hatkit.domain import get_domain
    from hatkit.evals import QUICK_SETTINGS, QUICK_SIZES, run_suites
    from hatkit.evals.variant_qa import heldout_variants
    from hatkit.models.scripted import ScriptedModel

    domain = get_domain("live_commerce")
    lc = domain.harness()
    hashes.add(lc)
    n, seed, s = QUICK_SIZES["live_qa"], SUITE_SEED, QUICK_SETTINGS
    test_qs = domain.questions(lc.rules, n=n, seed=seed, split="test")
    results = dict(run_suites(["live_qa", "lengths"], domain.oracle(lc, test_qs), sizes={"live_qa": n},
                              seed=seed, out_dir=work / "live", settings=s))
    variants = heldout_variants(lc, work / "variant" / "variants", s.n_variants, seed, domain.hsa)
    for v in variants:
        hashes.add(v)
    results |= run_suites(["variant_qa"], OracleByHarness(variants, test_qs), sizes={"variant_qa": n},
                          seed=seed, out_dir=work / "variant", settings=s)
    fault_qs = domain.questions(lc.rules, n=6, seed=seed, split="test", categories=domain.tool_categories)
    results |= run_suites(["faults"], domain.oracle(lc, fault_qs), sizes={"faults": 6}, seed=seed,
                          out_dir=work / "faults", settings=s)
    results |= run_suites(["safety"], ScriptedModel([trap_reply] * 400),
                          sizes={"safety": len(domain.safety_traps()) + 4},
                          seed=seed, out_dir=work / "safety", settings=s)
    out = []
    for name, r in results.items():
        data = r.model_dump(mode="json", exclude={"seconds", "traces"})
        out.append(hashes({"id": name, **data}))
    return out


# ---- all of it, and the fixtures -------------------------------------------------------------------
def compute(work: Path) -> dict[str, list[dict[str, Any]]]:
    hashes = Hashes()
    rows, context = data_snapshot(work, hashes)
    verdicts = judge_snapshot(work, hashes)
    suites = suite_snapshot(work, hashes)
    return {"data_rows": rows, "data_context": context, "judge_verdicts": verdicts, "suites": suites,
            "harness_hashes": hashes.records()}


def dumps(records: Sequence[dict[str, Any]]) -> list[str]:
    return [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in records]


def fixture_path(name: str) -> Path:
    return FIXTURES / f"{name}.jsonl.gz"


def write_fixture(name: str, records: Sequence[dict[str, Any]]) -> Path:
    """Gzip with mtime 0, so the same records give the same bytes."""
    path = fixture_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(line + "\n" for line in dumps(records))
    path.write_bytes(gzip.compress(text.encode(), mtime=0))
    return path


def read_fixture(name: str) -> list[str]:
    return gzip.decompress(fixture_path(name).read_bytes()).decode().splitlines()


def _first_difference(a: Any, b: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                yield f"{path}.{k}", a.get(k, "<missing>"), b.get(k, "<missing>")
            else:
                yield from _first_difference(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            yield from _first_difference(x, y, f"{path}[{i}]")
        if len(a) != len(b):
            yield f"{path} (length)", len(a), len(b)
    elif a != b or type(a) is not type(b):
        yield path or "record", a, b


def difference(name: str, expected: Sequence[str], actual: Sequence[str]) -> str | None:
    """None when equal; else which records differ, and the first differing field."""
    if list(expected) == list(actual):
        return None
    diff = [i for i, (x, y) in enumerate(zip(expected, actual, strict=False)) if x != y]
    lines = [f"{name}: {len(diff)} differing record(s); fixture has {len(expected)}, now {len(actual)}"]
    if diff:
        i = diff[0]
        old, new = json.loads(expected[i]), json.loads(actual[i])
        where, was, now = next(_first_difference(old, new), ("record", old, new))
        lines.append(f"first: record {i} (id {old.get('id')!r} -> {new.get('id')!r}) at {where}:")
        lines.append(f"  fixture: {_short(was)}")
        lines.append(f"  now:     {_short(now)}")
    lines.append("If the change is intended, run `python tests/snapshot/regenerate.py` and review it.")
    return "\n".join(lines)


def _short(value: Any, limit: int = 400) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"
