"""IF prompts (disjoint splits), the offline checkers, IFBench filtering and the IFEval loader."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import nltk
import pytest

from hatkit.evals.if_check import (
    OfflineUnavailable,
    aggregate,
    check_answer,
    offline_nltk,
    registry,
    strip_think,
)
from hatkit.evals.if_data import load_ifbench, load_ifeval_prompts
from hatkit.evals.if_prompts import _ARGS, argument_pool, base_tasks, synthesize_if_prompts


def _values(split: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in synthesize_if_prompts(split, 400, seed=1):  # type: ignore[arg-type]
        for iid, kw in zip(p.instruction_id_list, p.kwargs, strict=True):
            for name, value in kw.items():
                if name not in ("relation", "let_relation", "capital_relation", "prompt_to_repeat",
                                "nth_paragraph"):
                    out.setdefault(f"{iid}/{name}", set()).add(json.dumps(value))
    return out


def test_train_and_eval_splits_share_no_base_task_and_no_argument_value() -> None:
    assert not set(base_tasks("train")) & set(base_tasks("eval"))
    for iid in _ARGS:
        train, ev = argument_pool(iid, "train"), argument_pool(iid, "eval")
        for name in train:
            assert not set(train[name]) & set(ev[name]), (iid, name)
    train_vals, eval_vals = _values("train"), _values("eval")
    assert set(train_vals) == set(eval_vals)  # both splits exercise the same instructions
    for key in train_vals:
        assert not train_vals[key] & eval_vals[key], key
    train_tasks = {p.prompt.split(".")[0] for p in synthesize_if_prompts("train", 200)}
    eval_tasks = {p.prompt.split(".")[0] for p in synthesize_if_prompts("eval", 200)}
    assert not train_tasks & eval_tasks


def test_prompts_are_deterministic_valid_and_conflict_free() -> None:
    a = synthesize_if_prompts("eval", 50, seed=3)
    assert a == synthesize_if_prompts("eval", 50, seed=3)
    assert a != synthesize_if_prompts("eval", 50, seed=4)
    reg = registry("ifeval")
    for p in a:
        assert 1 <= len(p.instruction_id_list) == len(p.kwargs) <= 2
        assert len(set(p.instruction_id_list)) == len(p.instruction_id_list)
        for iid in p.instruction_id_list:
            assert iid in reg
        check_answer("ifeval", p.key, p.prompt, p.instruction_id_list, p.kwargs, "Some answer. Fine.")
    covered: set[str] = set()
    for p in synthesize_if_prompts("eval", 300, seed=5):  # every instruction checks offline
        if set(p.instruction_id_list) - covered:
            covered |= set(p.instruction_id_list)
            check_answer("ifeval", p.key, p.prompt, p.instruction_id_list, p.kwargs,
                         "First sentence here. SECOND one, LOUD!\n\n* a\n* b\n\nP.S. done")
    assert covered == set(_ARGS)
    with pytest.raises(ValueError, match="split"):
        synthesize_if_prompts("test", 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(("ids", "kwargs", "good", "bad"), [
    (["punctuation:no_comma"], [{}], "No commas at all here.", "One, two."),
    (["length_constraints:number_sentences"], [{"num_sentences": 3, "relation": "less than"}],
     "One. Two.", "One. Two. Three. Four."),
    (["change_case:capital_word_frequency"], [{"capital_frequency": 2, "capital_relation": "at least"}],
     "THIS is VERY loud.", "Only one LOUD word."),
    (["change_case:english_lowercase"], [{}], "this is a calm answer written in plain english words",
     "This Is Not Lowercase At All"),
    (["detectable_content:postscript"], [{"postscript_marker": "P.P.S"}], "Hi.\n\nP.P.S see you", "Hi."),
    (["detectable_format:json_format"], [{}], '{"a": 1}', "not json"),
    (["length_constraints:number_words"], [{"num_words": 5, "relation": "less than"}], "three words only",
     "this answer clearly has more than five words"),
])
def test_checkers_score_known_texts_offline(ids: list[str], kwargs: list[dict[str, object]], good: str,
                                            bad: str) -> None:
    ok = check_answer("ifeval", "k", "prompt", ids, kwargs, f"<think>a, b, c. D.</think>{good}")
    no = check_answer("ifeval", "k", "prompt", ids, kwargs, bad)
    assert ok.strict == (True,) and ok.prompt_strict
    assert no.strict == (False,)


def test_offline_patch_is_scoped_and_needs_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real = nltk.word_tokenize
    with offline_nltk():
        assert nltk.word_tokenize("Hello, world. Bye!") == ["Hello", ",", "world", ".", "Bye", "!"]
        with pytest.raises(OfflineUnavailable):
            nltk.pos_tag(["run"])
    assert nltk.word_tokenize is real
    def no_socket(*_: object, **__: object) -> None:
        raise AssertionError("network used")
    monkeypatch.setattr(socket, "create_connection", no_socket)
    check_answer("ifeval", "k", "p", ["length_constraints:number_sentences"],
                 [{"num_sentences": 2, "relation": "at least"}], "A. B. C.")


def test_think_blocks_are_stripped_and_aggregate_follows_ifeval() -> None:
    assert strip_think("<think>plan</think>\nanswer") == "answer"
    assert strip_think("<think>never closed") == ""
    a = check_answer("ifeval", "a", "p", ["punctuation:no_comma", "change_case:english_lowercase"],
                     [{}, {}], "this answer is written in plain english words")
    b = check_answer("ifeval", "b", "p", ["punctuation:no_comma", "change_case:english_lowercase"],
                     [{}, {}], "Bad, this answer is Written in plain english")
    m = aggregate([a, b])
    assert m == {"prompt_strict": 0.5, "instruction_strict": 0.5, "prompt_loose": 0.5,
                 "instruction_loose": 0.5}


def test_ifbench_keeps_only_offline_checkers() -> None:
    load = load_ifbench()
    assert load.total == 294 and 200 < len(load.prompts) < load.total
    assert "words:start_verb" in load.dropped_instructions  # needs the NLTK POS tagger
    assert "ratio:stop_words" in load.dropped_instructions  # needs the stop-word corpus
    kept = {i for p in load.prompts for i in p.instruction_id_list}
    assert not kept & set(load.dropped_instructions)
    p = load.prompts[0]
    assert p.source == "ifbench" and all(v is not None for kw in p.kwargs for v in kw.values())


def test_official_ifeval_loader_reads_a_local_copy(tmp_path: Path) -> None:
    rows = [{"key": 1000, "prompt": "Write without commas.", "instruction_id_list": ["punctuation:no_comma"],
             "kwargs": [{"num_words": None}]},
            {"key": 1001, "prompt": "Say hi. Use lowercase.", "instruction_id_list":
             ["change_case:english_lowercase"], "kwargs": [{"num_words": None}]}]
    path = tmp_path / "ifeval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    prompts = load_ifeval_prompts(path)
    assert [p.key for p in prompts] == ["1000", "1001"]
    assert prompts[0].kwargs == [{}] and prompts[0].source == "ifeval"
    assert len(load_ifeval_prompts(path, limit=1)) == 1
