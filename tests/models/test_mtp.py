"""MTP draft heads: greedy output unchanged, trained heads guess the target's own tokens, the
files refuse a target they were not made for."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_speculative import CASES, _request

from hatkit.models.local import LocalModel
from hatkit.models.mtp import DraftHeadsMismatch, MTPHeads
from hatkit.train.draft import _labels, greedy_rows, segment_starts, train_heads
from tiny import tiny_llama, tiny_tokenizer

SYSTEM = "you are a shop host. " * 4


def _target(seed: int = 1) -> tuple[object, object]:
    tok = tiny_tokenizer()
    return tiny_llama(len(tok), seed=seed), tok


def _greedy_rows(model: LocalModel, n: int = 12, max_new: int = 48) -> list[tuple[list[int], list[int]]]:
    """Rows of the target's own greedy replies (prompt untrained, reply trained)."""
    rows = []
    for i in range(n):
        req = _request(model, SYSTEM, f"item {i} price and stock?", max_new_tokens=max_new)
        out = model.generate([req])[0]
        ids = list(req.prompt_ids or []) + list(out.token_ids or [])
        rows.append((ids, [0] * len(req.prompt_ids or []) + [1] * len(out.token_ids or [])))
    return rows


def test_mtp_decoding_equals_plain_greedy_with_random_heads() -> None:
    net, tok = _target(2)
    plain = LocalModel(net, tok, "tiny")
    heads = MTPHeads.for_target(net, range(len(tok)), num_heads=3)
    with torch.no_grad():  # random blocks: drafts mostly wrong, the output must not move
        for block in heads.blocks:
            block.weight.normal_(0, 0.5)
    spec = LocalModel(net, tok, "tiny", draft_heads=heads)
    assert spec.speculative == "mtp"
    for system, q in CASES:
        for max_new in (1, 24):
            req = _request(plain, system, q, max_new_tokens=max_new)
            a, b = plain.generate([req])[0], spec.generate([req])[0]
            assert a.token_ids == b.token_ids and a.finish_reason == b.finish_reason, (system, q, max_new)
    assert spec.stats["spec_drafted"] > 0


def test_labels_follow_only_the_targets_own_greedy_path() -> None:
    ids = [5, 6, 7, 8, 9, 10]
    mask = [0, 1, 1, 1, 1, 1]
    # the target's next-token choices: right at 0..2 (6, 7, 8), wrong at 3 (says 4, text has 9)
    greedy = torch.tensor([6, 7, 8, 4, 10, 11])
    got = _labels(ids, mask, greedy, k=3)
    # at t=0: head 0 guesses greedy[1]=7 (after 6 fed), head 1 greedy[2]=8, head 2 greedy[3]=4
    assert (0, 0, 7) in got and (0, 1, 8) in got and (0, 2, 4) in got
    # from t=2 on the path leaves the text at position 4 (greedy[3]=4 != ids[4]=9): head 1 stops
    assert (2, 0, 4) in got and not any(t == 2 and i == 1 for t, i, _ in got)
    assert not any(t == 5 for t, _, _ in got)  # nothing after the last token


def test_own_replies_are_the_targets_greedy_continuations_of_each_trained_segment() -> None:
    """A data row's text leaves the target's path; greedy_rows has the target write its own
    reply from the start of each trained segment, so every trained position is on its path."""
    net, tok = _target(5)
    plain = LocalModel(net, tok, "tiny")
    data = []
    for i in range(3):  # two trained segments per row, text the target would not write
        req = _request(plain, SYSTEM, f"item {i} colours?", max_new_tokens=4)
        p = list(req.prompt_ids or [])
        ids = [*p, 40, 41, 42, 2, 50, 51, 43, 44, 2]  # two segments, one tool turn between
        data.append((ids, [0] * len(p) + [1] * 4 + [0, 0] + [1] * 3))
    assert segment_starts(data[0][1]) == [len(data[0][0]) - 9, len(data[0][0]) - 3]
    seen: list[tuple[str, int, int]] = []
    own = greedy_rows(net, tok, data, segments=5, max_new_tokens=10, progress=lambda *a: seen.append(a))
    assert len(own) == 5 and seen[-1] == ("greedy", 5, 5)
    for ids, mask in own:
        n = sum(mask)
        context = ids[: len(ids) - n]
        req = _request(plain, SYSTEM, "x")
        again = plain.generate([type(req)([], prompt_ids=context, max_new_tokens=10)])[0]
        assert ids[len(context):] == again.token_ids and mask == [0] * len(context) + [1] * n
        with torch.inference_mode():
            greedy = net(torch.tensor([ids])).logits[0].argmax(-1)  # type: ignore[operator]
        on_path = _labels(ids, mask, greedy, k=1)
        assert len(on_path) >= n - 2  # every trained position but the last ones labels head 0


def test_trained_heads_guess_the_targets_tokens_and_speed_up_acceptance(tmp_path: Path) -> None:
    net, tok = _target(3)
    plain = LocalModel(net, tok, "tiny")
    rows = _greedy_rows(plain, n=8, max_new=32)
    seen: list[tuple[str, int, int]] = []
    heads, report = train_heads(net, rows, num_heads=3, kept=64, steps=150, lr=3e-3, heldout=0.25,
                                eos_id=tok.eos_token_id, target_hash="abc",
                                progress=lambda *a: seen.append(a))
    assert ("target", 8, 8) in seen and seen[-1] == ("heads", 150, 150)
    assert report.positions > 100 and report.loss_last < report.loss_first
    untrained = MTPHeads.for_target(net, heads.token_ids.tolist(), num_heads=3)

    def acceptance(h: MTPHeads) -> float:
        """On the prompts the heads were fitted on (a random tiny target's replies do not
        generalise to other prompts; bench/decode.py measures held-out replies of the real one)."""
        m = LocalModel(net, tok, "tiny", draft_heads=h, lookup_branch=0)  # the heads' own drafts
        for i in range(3):
            req = _request(plain, SYSTEM, f"item {i} price and stock?", max_new_tokens=32)
            assert m.generate([req])[0].token_ids == plain.generate([req])[0].token_ids
        return m.stats["spec_accepted"] / max(1, m.stats["spec_drafted"])

    trained, before = acceptance(heads), acceptance(untrained)
    assert trained > 0.25 and trained > 2 * before, (trained, before)
    assert report.heldout_accuracy[0] > 0.3
    folder = heads.save(tmp_path / "draft_heads")
    again = MTPHeads.load(folder, target=net, target_hash="abc")
    x = torch.randn(5, net.config.hidden_size)
    assert torch.equal(again.logits(x), heads.logits(x))
    with pytest.raises(DraftHeadsMismatch, match="trained for checkpoint"):
        MTPHeads.load(folder, target=net, target_hash="other")
    other = tiny_llama(len(tok) + 3)
    with pytest.raises(DraftHeadsMismatch, match="hidden size"):
        MTPHeads.load(folder, target=other)


def test_mtp_without_heads_is_refused() -> None:
    net, tok = _target()
    with pytest.raises(ValueError, match="draft_heads"):
        LocalModel(net, tok, "tiny", speculative="mtp")


def test_train_draft_cli_saves_heads_the_checkpoint_then_decodes_with(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hatkit.cli import app

    net, tok = _target(4)
    ckpt = tmp_path / "ckpt"
    net.save_pretrained(ckpt)  # type: ignore[attr-defined]
    tok.save_pretrained(ckpt)  # type: ignore[attr-defined]
    data = tmp_path / "data"
    r = CliRunner().invoke(app, ["data", "build", "--out", str(data), "--train", "4", "--dev", "1",
                                 "--variants", "1", "--tokenizer", str(ckpt), "--fault-rate", "0"])
    assert r.exit_code == 0, r.output
    bad = CliRunner().invoke(app, ["train", "draft", str(ckpt), "--data", str(tmp_path / "none")])
    assert bad.exit_code == 1 and "hatkit data build" in bad.output
    r = CliRunner().invoke(app, ["train", "draft", str(ckpt), "--data", str(data), "--steps", "5",
                                 "--kept", "32", "--heads", "2", "--own-replies", "12"])
    assert r.exit_code == 0, r.output
    assert "held-out accuracy" in r.output and (ckpt / "draft_heads" / "heads.json").is_file()
    assert "7 own replies written (the data has 7 trained segments); accuracy below on 1 of the " \
        "target's own replies" in " ".join(r.output.split())
    m = LocalModel.from_pretrained(ckpt, speculative="mtp")
    plain = LocalModel.from_pretrained(ckpt)
    req = _request(plain, SYSTEM, "price?", max_new_tokens=12)
    assert m.generate([req])[0].token_ids == plain.generate([req])[0].token_ids
    assert m.heads is not None and m.heads.meta.num_heads == 2
    # heads of another checkpoint (the weights changed after training) are refused
    with torch.no_grad():
        next(net.parameters()).add_(1.0)  # type: ignore[attr-defined]
    net.save_pretrained(ckpt)  # type: ignore[attr-defined]
    with pytest.raises(DraftHeadsMismatch):
        LocalModel.from_pretrained(ckpt, speculative="mtp")


def test_a_lookup_branch_beside_the_heads_keeps_greedy_output_and_wins_passes() -> None:
    net, tok = _target(2)
    plain = LocalModel(net, tok, "tiny")
    heads = MTPHeads.for_target(net, range(len(tok)), num_heads=3)
    with torch.no_grad():  # random blocks: the heads' drafts mostly wrong, lookup's often right
        for block in heads.blocks:
            block.weight.normal_(0, 0.5)
    spec = LocalModel(net, tok, "tiny", draft_heads=heads, lookup_branch=3)
    heads_only = LocalModel(net, tok, "tiny", draft_heads=heads, lookup_branch=0)
    for system, q in CASES:
        for max_new in (1, 2, 24, 40):
            req = _request(plain, system, q, max_new_tokens=max_new)
            want = plain.generate([req])[0]
            for m in (spec, heads_only):
                got = m.generate([req])[0]
                assert got.token_ids == want.token_ids and got.finish_reason == want.finish_reason, (
                    system, q, max_new)
    assert spec.stats["spec_branch_accepted"] > 0 and spec.stats["spec_branch_drafted"] > 0
    assert "spec_branch_drafted" not in heads_only.stats
    # a branch that wins saves passes: fewer verify passes for the same tokens
    assert spec.stats["spec_tokens"] == heads_only.stats["spec_tokens"]
    assert spec.stats["spec_steps"] < heads_only.stats["spec_steps"]


def test_verify_branches_keeps_the_longer_branch_and_moves_its_keys_and_values() -> None:
    from transformers import StaticCache

    from hatkit.models.speculative import SpecStats, branch_allowed

    net, _ = _target(1)
    cache = StaticCache(config=net.config, max_cache_len=16)
    kv = torch.zeros(1, net.config.num_key_value_heads, 1, 8)
    for layer in cache.layers:
        layer.update(kv, kv)  # lazily sized
        layer.keys.zero_()
        layer.keys[0, 0, :, 0] = torch.arange(16.0)  # slot numbers, to see what moved
        layer.cumulative_length.fill_(4 + 1 + 2 + 3)  # cur 4: pending, draft 2, branch 3
    st = SpecStats()
    # feed rows: 0 pending, 1-2 draft [7, 8], 3-5 branch [9, 10, 11]; greedy choice after each row
    greedy = [9, 7, 0, 10, 11, 5]
    tokens, last = st.verify_branches([7, 8], [9, 10, 11], greedy, cache, cur=4)
    assert (tokens, last) == ([9, 10, 11], 5) and greedy[last] == 5
    layer = cache.layers[0]
    assert layer.keys[0, 0, 4:8, 0].tolist() == [4.0, 7.0, 8.0, 9.0]  # branch slots moved up
    assert int(layer.cumulative_length) == 4 + 1 + 3
    assert (st.drafted, st.accepted, st.branch_drafted, st.branch_accepted, st.steps) == (2, 0, 3, 3, 1)
    # a tie keeps the heads' draft, in place
    for layer in cache.layers:
        layer.cumulative_length.fill_(4 + 1 + 1 + 1)
    tokens, last = SpecStats().verify_branches([7], [7], [7, 3, 4], cache, cur=4)
    assert (tokens, last) == ([7], 1) and int(cache.layers[0].cumulative_length) == 6
    allowed = branch_allowed(2, 2, 1)
    assert allowed.tolist() == [[True, True, True, False, False, False],
                                [True, True, True, True, False, False],
                                [True, True, True, True, True, False],
                                [True, True, True, False, False, True]]


def test_propose_cuts_the_draft_where_the_heads_joint_probability_falls_below_the_bar() -> None:
    net, tok = _target(4)
    heads = MTPHeads.for_target(net, range(len(tok)), num_heads=4)
    with torch.no_grad():
        for block in heads.blocks:
            block.weight.normal_(0, 0.5)
    for seed in range(5):
        h = torch.randn(net.config.hidden_size, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            conf, best = heads.logits(h[None])[0].softmax(-1).max(-1)
        joint = conf.cumprod(0)
        full = heads.propose(h, 4)
        assert full == [int(t) for t in heads.token_ids[best]]
        for bar in (0.0, float(joint[1]), float(joint[1]) + 1e-6, float(joint[3]), 1.0):
            want = sum(float(j) >= bar for j in joint) if bar > 0 else 4
            assert heads.propose(h, 4, bar) == full[:want], (seed, bar)
        assert heads.propose(h, 2, 0.0) == full[:2] and heads.propose(h, 0, 0.5) == []


def test_a_confidence_bar_keeps_greedy_output_and_drafts_fewer_tokens() -> None:
    net, tok = _target(2)
    plain = LocalModel(net, tok, "tiny")
    heads = MTPHeads.for_target(net, range(len(tok)), num_heads=3)
    drafted = []
    for bar in (0.0, 0.05, 0.5):
        spec = LocalModel(net, tok, "tiny", draft_heads=heads, lookup_branch=2, draft_confidence=bar)
        for system, q in CASES:
            req = _request(plain, system, q, max_new_tokens=24)
            want, got = plain.generate([req])[0], spec.generate([req])[0]
            assert got.token_ids == want.token_ids and got.finish_reason == want.finish_reason, (bar, q)
        drafted.append(spec.stats["spec_drafted"] / spec.stats["spec_steps"])
    assert drafted[0] > drafted[1] > drafted[2], drafted  # at 0: all 3 but near max_new_tokens
    with pytest.raises(ValueError, match="draft_confidence"):
        LocalModel(net, tok, "tiny", draft_heads=heads, draft_confidence=1.5)
