"""`hatkit data build`: the same questions on the fixed harness and across HSA variants, with
token views and a manifest that proves the splits are disjoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hatkit.agent.trace import SEGMENT_IDS
from hatkit.models.chat_format import ChatTemplateFormat
from hatkit.train.dataset import BuildSettings, build_datasets
from tiny import tiny_tokenizer


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[type-arg]
    out = tmp_path_factory.mktemp("data")
    fmt = ChatTemplateFormat(tiny_tokenizer(), native_tools=False)
    manifest = build_datasets(BuildSettings(out=out, train_episodes=30, dev_episodes=10, seed=1,
                                            n_variants=3, fault_rate=0.2), fmt)
    return out, manifest


def test_manifest_counts_hashes_and_disjoint_splits(built: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    out, manifest = built
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert manifest["disjoint"]["ok"] is True
    assert all(v == [] for k, v in manifest["disjoint"].items() if k != "ok")
    assert manifest["same_questions_in_both_modes"] is True
    fixed, hsa = manifest["modes"]["fixed"], manifest["modes"]["hsa"]
    assert fixed["train"]["rows"] == hsa["train"]["rows"] == 30
    assert len(fixed["train"]["harness_hashes"]) == 1
    assert len(hsa["train"]["harness_hashes"]) == 3
    assert hsa["train"]["with_faults"] > 0


def test_rows_carry_chat_and_token_views(built: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    from datasets import Dataset

    out, _ = built
    ds = Dataset.from_parquet(str(out / "hsa" / "train.parquet"))
    row = ds[0]
    messages = json.loads(row["messages"])
    assert messages[0]["role"] == "system" and messages[1]["role"] == "user"
    assert any(m["role"] == "assistant" for m in messages)
    assert len(row["input_ids"]) == len(row["loss_mask"]) == len(row["segment_ids"]) == row["n_tokens"]
    for mask, segs in zip(ds["loss_mask"], ds["segment_ids"], strict=True):
        trained = {s for s, m in zip(segs, mask, strict=True) if m}
        assert trained <= {SEGMENT_IDS[k] for k in ("think_tool", "tool_call", "think_reply", "reply")}
        assert SEGMENT_IDS["tool_output"] not in trained and SEGMENT_IDS["user"] not in trained
    tools = json.loads(row["tools"])
    assert tools and tools[0]["type"] == "function"


def test_rows_and_manifest_record_lengths_and_nothing_is_dropped(built: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    from datasets import Dataset

    out, manifest = built
    for mode in ("fixed", "hsa"):
        ds = Dataset.from_parquet(str(out / mode / "train.parquet"))
        assert len(ds) == 30  # every episode is a row: none dropped to meet a length limit
        for row in ds:
            mask = row["loss_mask"]
            trained = [i for i, m in enumerate(mask) if m]
            assert row["first_trained"] == trained[0] and row["last_trained"] == trained[-1] + 1
        entry = manifest["modes"][mode]["train"]
        assert entry["max_tokens"] == max(ds["n_tokens"])
        assert entry["max_last_trained"] == max(ds["last_trained"])
        by_category = entry["lengths_by_category"]
        assert sum(c["rows"] for c in by_category.values()) == 30
        assert {c: v["rows"] for c, v in by_category.items()} == entry["categories"]
        assert max(v["max_tokens"] for v in by_category.values()) == entry["max_tokens"]


def test_fixed_and_hsa_rows_see_different_tool_names(built: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    from datasets import Dataset

    out, _ = built
    fixed = Dataset.from_parquet(str(out / "fixed" / "train.parquet"))
    hsa = Dataset.from_parquet(str(out / "hsa" / "train.parquet"))
    names = lambda ds: {t["function"]["name"] for r in ds["tools"] for t in json.loads(r)}  # noqa: E731
    assert "get_promotions" in names(fixed)
    assert "get_promotions" not in names(hsa)
