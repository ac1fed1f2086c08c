"""Every script in bench/ runs in its smoke mode (a tiny random-weight model or a scripted
backend) and measures real work: episodes, tokens, rows, none ending in a backend error. A
baseline or backend that raises makes the bench fail instead of printing a verdict. Nothing
here asserts a goal or a timing: speed is what the benches print, not what tests check."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load(name: str) -> ModuleType:
    """A bench script as a module (bench/ on sys.path, as when run as a script)."""
    if str(BENCH) not in sys.path:
        sys.path.append(str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"')]


def _latency(res: list[dict[str, Any]]) -> None:
    local, url = res  # in-process, then --url against an in-process server
    assert local["agent"] and all(r["episodes"] > 0 and r["tokens"] > 0 for r in local["agent"].values())
    assert {"greedy c=1", "greedy c=2", "prompt_lookup c=1", "draft c=1", "mtp c=1"} <= set(local["agent"])
    assert all(local["domain"][m]["tokens"] > 0 for m in ("greedy", "prompt_lookup", "draft", "mtp"))
    assert local["domain"]["mtp"]["identical"] == local["domain"]["prompts"]
    assert [(r["requests"], r["non_200"]) for r in url["by_concurrency"].values()] == [(2, 0), (2, 0)]


def _local_episodes(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert r["model"] == "tiny" and r["questions"] == 2
    assert r["generated_tokens_naive"] > 0 and r["generated_tokens_cached"] > 0
    assert r["model_calls_naive"] >= r["questions"]


def _runtime_overhead(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert {"hatkit (inline tools)", "hatkit (thread tools)"} <= set(r["results"])
    assert all(row["episodes"] == 3 for row in r["results"].values())


def _sft_throughput(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert r["model"] == "tiny" and r["tokens"] > 0
    assert r["hatkit_tokens_per_s"] > 0 and r["plain_trl_tokens_per_s"] > 0


def _sft_shared_prefix(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert r["model"] == "tiny" and r["tokens"] > 0
    assert r["plain_rows_per_s"] > 0 and r["share_prefix_rows_per_s"] > 0


def _sft_precision(res: list[dict[str, Any]]) -> None:
    [r] = res
    if "skipped" in r:  # a CPU without bf16 matrix instructions: nothing to compare
        return
    assert r["model"] == "tiny" and r["tokens"] > 0
    assert r["fp32_tokens_per_s"] > 0 and r["bf16_tokens_per_s"] > 0
    assert len(r["fp32_losses"]) == len(r["bf16_losses"]) == r["steps"]
    assert r["fp32_losses"] != r["bf16_losses"] and r["loss_rel_diff_max"] < 0.05  # autocast ran, close


def _sim_throughput(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert len(r["rows"]) == 4 and all(row["episodes"] > 0 for row in r["rows"].values())


def _judge_speed(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert r["traces"] == 24 and r["judge_errors"] == 0 and r["ms_per_trace"] > 0
    assert r["written_traces"] == 12 and r["written_cpu_ms_per_trace"] > 0 and r["verdicts_per_s_cpu"] > 0


def _variant_speed(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert set(r["seconds_per_variant"]) == {"train", "heldout"}


def _parse_speed(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert all(cells["current"][str(r["sizes"][-1])] > 0 for cells in r["ms"].values())
    assert r["calls"]["many_blocks"] > 0 and r["calls"]["ordinary_reply"] == 0


def _history_replay(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert {row["rendering"] for row in r["rows"]} == {"window", "full"}
    assert all(row["rendered"] > 0 and row["prompt_tokens"] > 0 for row in r["rows"])


def _decode(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert r["model"] == "tiny" and r["prefix_tokens"] > 0 and r["new_tokens"] > 0
    assert set(r["rows"]) == {f"{e} {p} b{b}" for e in ("generate", "unpacked", "hatkit")
                              for p in ("fp32", "bf16", "int8", "int8w") for b in (1, 8)} | {
        "compiled fp32 b1", "compiled fp32 b8"}  # the smoke compiles fp32 only
    assert r["compiled_speedup_fp32_bs8"] > 0 and r["compiled_fp32_bs8_share"] > 0
    assert r["compiled_leading_identical"]["fp32 b8"] == [r["new_tokens"]] * 8  # fp32: eager's tokens
    assert all(r[f"packing_speedup_{p}_bs{b}"] > 0 for p in ("fp32", "bf16", "int8", "int8w") for b in (1, 8))
    assert all(row["tokens_per_s"] > 0 and row["ceiling_tokens_per_s"] > 0 for row in r["rows"].values())
    assert r["int8_speedup_bs1"] > 0 and r["int8_speedup_bs8"] > 0 and 0 <= r["int8_agreement"] <= 1
    assert r["int8w_speedup_bs1"] > 0 and r["int8w_speedup_bs8"] > 0 and 0 <= r["int8w_agreement"] <= 1
    assert r["bf16_speedup_bs1"] > 0 and 0 <= r["bf16_agreement"] <= 1


def _eval_turns(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert r["model"] == "tiny" and r["cases"] == 2 and set(r["modes"]) == {"off", "on"}
    assert all(m["model_calls"] >= 2 for m in r["modes"].values())
    assert r["modes"]["off"]["row_hits"] == 0 and r["identical_replies"] is not None


def _precision_quality(res: list[dict[str, Any]]) -> None:
    [r] = res
    assert r["model"] == "tiny" and r["n"] == 2 and r["fp32"]["s_per_item"] > 0
    for prec in ("int8w", "int8", "bf16"):
        row = r[prec]
        assert row["lo"] <= row["diff"] <= row["hi"] and row["won"] + row["lost"] <= 2
        assert 0 <= row["identical_replies"] <= 1 and 0 <= row["leading_token_agreement"] <= 1
        assert row["speedup"] > 0 and row["not_worse"] == (row["lo"] >= r["bar"])


SMOKE: dict[str, Callable[[list[dict[str, Any]]], None]] = {
    "latency": _latency, "local_episodes": _local_episodes, "runtime_overhead": _runtime_overhead,
    "sft_throughput": _sft_throughput, "sft_shared_prefix": _sft_shared_prefix,
    "sft_precision": _sft_precision,
    "sim_throughput": _sim_throughput, "judge_speed": _judge_speed, "variant_speed": _variant_speed,
    "parse_speed": _parse_speed, "history_replay": _history_replay, "decode": _decode,
    "eval_turns": _eval_turns, "precision_quality": _precision_quality,
}


def test_every_bench_script_has_a_smoke_test() -> None:
    scripts = {p.stem for p in BENCH.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(SMOKE), "add a --smoke mode and an entry in SMOKE for each bench script"


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_bench_smoke_measures_real_work(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    load(name).main(["--smoke"])
    SMOKE[name](json_lines(capsys.readouterr().out))


def test_eval_turns_compares_stored_and_packed_weights(capsys: pytest.CaptureFixture[str]) -> None:
    load("eval_turns").main(["--smoke", "--compare", "packing"])
    [r] = json_lines(capsys.readouterr().out)
    assert r["compare"] == "packing" and set(r["modes"]) == {"off", "on"}
    assert r["identical_replies"] == 2  # packed weights give the tiny model's same replies


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise TypeError("a bug in the backend")


def _fail(self: Any, requests: list[Any], *args: Any) -> list[Any]:
    """A backend failure reported as data (one error output per request)."""
    from hatkit.models import ModelError, ModelOutput

    return [ModelOutput("", finish_reason="error", error=ModelError("backend down"))  # type: ignore[arg-type]
            for _ in requests]


def test_local_episodes_baseline_with_a_stale_signature_fails_the_bench(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The regression: the naive baseline lacked `sinks`, so each call raised TypeError, the
    episodes ended in fallbacks and the bench printed 'speed-up 0.00x' as a measurement."""
    bench = load("local_episodes")
    real = bench.GenerateModel._generate_batch
    monkeypatch.setattr(bench.GenerateModel, "_generate_batch", lambda self, reqs: real(self, reqs))
    with pytest.raises((SystemExit, TypeError)) as err:  # recorded as model errors, or raised
        bench.main(["--smoke"])
    assert err.type is TypeError or "naive" in str(err.value)
    assert "speed-up" not in capsys.readouterr().out


BACKENDS = {"latency": "hatkit.models.local.LocalModel._generate_batch",
            "local_episodes": "hatkit.models.local.LocalModel._generate_batch",
            "sim_throughput": "hatkit.sim.oracle.OraclePolicy.generate",
            "judge_speed": "hatkit.sim.oracle.OraclePolicy.generate",
            "runtime_overhead": "hatkit.models.scripted.ScriptedModel.generate"}


@pytest.mark.parametrize("how", [_raise, _fail], ids=["raises", "error_outputs"])
@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_failing_backend_fails_the_bench_before_any_verdict(
        name: str, how: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    bench = load(name)
    monkeypatch.setattr(BACKENDS[name], how)
    with pytest.raises((SystemExit, Exception)) as err:
        bench.main(["--smoke"])
    assert "a bug in the backend" in str(err.value) or "backend down" in str(err.value)
    out = capsys.readouterr().out
    assert not json_lines(out)
    assert not any(word in out.lower() for word in ("goal", "floor", "verdict", "speed-up"))


def test_a_trainer_that_raises_fails_the_bench(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bench = load("sft_throughput")
    monkeypatch.setattr(bench, "plain_trl_run", _raise)
    with pytest.raises(TypeError):
        bench.main(["--smoke"])
    assert "ratio" not in capsys.readouterr().out


def test_a_bench_that_measured_no_work_fails(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    bench = load("sft_throughput")
    monkeypatch.setattr(bench, "plain_trl_run", lambda *a: {"seconds": 1.0, "tokens": 0.0})
    with pytest.raises(SystemExit, match=r"no work measured .*plain_trl tokens=0"):
        bench.main(["--smoke"])
    assert "ratio" not in capsys.readouterr().out
